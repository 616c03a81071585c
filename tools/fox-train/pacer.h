/* The host's waits at a training loop's reporting points. A point waits
 * only for the steps up to the previous point (an event recorded there),
 * so the GPU keeps the steps queued since while the host writes the curve;
 * a wait for everything at every point let the GPU run dry each time (4%
 * of the step at B = 512 on an H200, every 10 steps). A point that needs
 * every step done (a checkpoint, the end, a half-full loss ring) asks for
 * all. Used by the one-GPU loop (train.c), --gpus N (dp_train.c, whose
 * ranks wait by polling) and the bench's loop figure (bench.c); --dist
 * (dist_train.c) waits the same way for the previous point's exchange of
 * the losses (dist_xchg.h), which follows that point's steps. */
#ifndef FT_PACER_H
#define FT_PACER_H

#include <stdint.h>

#include "driver.h"

typedef struct ft_pacer {
    const ft_cuda *cu;
    CUstream stream;
    CUevent mark;                 /* recorded at the last point */
    int64_t marked;               /* steps done at the last point */
    int pending;                  /* mark not waited for since */
    /* How to wait for an event recorded on the stream: 0, or -1 (after
     * saying why, or silently when another rank's failure ended the
     * wait) (NULL: cuEventSynchronize). */
    int (*wait)(void *arg, CUevent ev);
    void *wait_arg;
} ft_pacer;

/* Returns 0, or -1 after printing why. */
int ft_pacer_open(ft_pacer *p, const ft_cuda *cu, CUstream stream);
/* A reporting point after `done` steps of this loop: with `all`, waits for
 * every step queued, else for those up to the previous point. *upto gets
 * the steps known done (never fewer than at the last point). Returns 0,
 * or -1 after the wait said why. */
int ft_pacer_point(ft_pacer *p, int64_t done, int all, int64_t *upto);
/* The caller waited for everything queued: the next point counts steps
 * from 0 again and has nothing to wait for. */
void ft_pacer_restart(ft_pacer *p);
void ft_pacer_close(ft_pacer *p);

#endif
