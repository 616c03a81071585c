/* The ranks of a data-parallel run are threads of one process, one per
 * GPU. They meet at barriers (the step loop's reporting points, set-up and
 * tear-down), and a rank that fails breaks the team instead of leaving the
 * others to wait forever at the next barrier or inside an all-reduce that
 * will never complete. */
#ifndef FT_TEAM_H
#define FT_TEAM_H

#include <pthread.h>
#include <stddef.h>

typedef struct ft_team {
    int size;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    unsigned generation;
    int broken;
    int exit_status;   /* of the first rank that broke the team (enum ft_exit) */
} ft_team;

int ft_team_init(ft_team *t, int size);
void ft_team_destroy(ft_team *t);

/* Waits until every rank has arrived. Returns 0, or -1 at once when the
 * team is (or becomes, while waiting) broken. */
int ft_team_sync(ft_team *t);

/* Marks the team broken with the exit status to report (the first one
 * wins) and wakes every rank waiting in ft_team_sync. */
void ft_team_break(ft_team *t, int exit_status);
int ft_team_broken(ft_team *t);

/* Runs fn(arg + i * arg_size) for i in [0, size) on `size` threads and
 * joins them all. Returns 0, or -1 when a thread could not be started
 * (the team is broken then, so the started ones stop). */
int ft_team_run(ft_team *t, void *(*fn)(void *), void *args, size_t arg_size);

#endif
