#include "team.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"

int ft_team_init(ft_team *t, int size)
{
    memset(t, 0, sizeof *t);
    t->size = size;
    if (pthread_mutex_init(&t->mu, NULL))
        return -1;
    if (pthread_cond_init(&t->cv, NULL)) {
        pthread_mutex_destroy(&t->mu);
        return -1;
    }
    return 0;
}

void ft_team_destroy(ft_team *t)
{
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
}

int ft_team_sync(ft_team *t)
{
    pthread_mutex_lock(&t->mu);
    if (t->broken) {
        pthread_mutex_unlock(&t->mu);
        return -1;
    }
    unsigned gen = t->generation;
    if (++t->arrived == t->size) {
        t->arrived = 0;
        t->generation++;
        pthread_cond_broadcast(&t->cv);
    } else {
        while (gen == t->generation && !t->broken)
            pthread_cond_wait(&t->cv, &t->mu);
    }
    /* A barrier that completed counts even if the team broke right after:
     * the caller finds out at the next one. */
    int rc = gen == t->generation ? -1 : 0;
    pthread_mutex_unlock(&t->mu);
    return rc;
}

void ft_team_break(ft_team *t, int exit_status)
{
    pthread_mutex_lock(&t->mu);
    if (!t->broken)
        t->exit_status = exit_status;
    t->broken = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

int ft_team_broken(ft_team *t)
{
    pthread_mutex_lock(&t->mu);
    int b = t->broken;
    pthread_mutex_unlock(&t->mu);
    return b;
}

int ft_team_run(ft_team *t, void *(*fn)(void *), void *args, size_t arg_size)
{
    pthread_t *tid = calloc((size_t)t->size, sizeof *tid);
    if (!tid) {
        fprintf(stderr, "fox-train: out of memory for the rank threads\n");
        return -1;
    }
    int started = 0, rc = 0;
    for (; started < t->size; started++)
        if (pthread_create(&tid[started], NULL, fn, (char *)args + (size_t)started * arg_size)) {
            fprintf(stderr, "fox-train: could not start the thread of rank %d\n", started);
            ft_team_break(t, FT_EXIT_FAILED);
            rc = -1;
            break;
        }
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    free(tid);
    return rc;
}
