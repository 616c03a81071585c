/* One rank of data-parallel training: a thread that drives one GPU with
 * its own primary context (current on that thread only), stream, fox-jit
 * runtime and buffers, and its own NCCL communicator. A runtime belongs to
 * one context, so every rank has one; the kernel cache on disk is shared
 * and the library compiles a kernel once however many runtimes ask for it
 * at the same moment.
 *
 * The ranks' models are replicas: each runs the step on its slice of the
 * global batch, then the hook below replaces the 17 reduced gradients (one
 * span of the model, model.h) with their average over the ranks, in place,
 * with one ncclAllReduce (ncclAvg: the sum times 1/N, computed by NCCL),
 * before AdamW. Every rank then applies the same update to the same
 * parameters, so the replicas stay identical without ever exchanging
 * parameters. */
#ifndef FT_RANK_H
#define FT_RANK_H

#include "env.h"
#include "model.h"
#include "nccl.h"
#include "stepper.h"
#include "team.h"
#include "watchdog.h"

typedef struct ft_rank {
    int index, count;       /* rank, ranks */
    int ordinal;            /* its CUDA device */
    ft_env env;             /* the loaded env, bound to this rank's device on its thread */
    ft_team *team;
    const ft_nccl *nccl;    /* NULL: no NCCL */
    ft_nccl_comm_t comm;
    CUevent marker;         /* for waits that can give up (ft_rank_wait) */
    int own_process;        /* 1: a --dist rank, the only one of its process: another may
                             * share its GPU unseen (NCCL's invalid usage then) */
    char why[1024];
} ft_rank;

/* On the rank's own thread: binds a copy of the loaded env `base` to the
 * rank's device (context current on this thread, stream, runtime).
 * Returns FT_EXIT_OK or the exit status, after printing why. */
int ft_rank_bind(ft_rank *r, const ft_env *base, const ft_options *o);

/* Creates this rank's communicator of r->count ranks; every rank calls it
 * at the same time (ncclCommInitRank waits for all). Returns 0, or -1
 * after printing why. */
int ft_rank_comm_init(ft_rank *r, const ft_nccl_unique_id *id);

/* Zeroes the model's gradient span (its padding is all-reduced too and
 * must hold numbers). With all_reduce (the rank needs a communicator):
 * installs the all-reduce hook and runs it once eagerly, so NCCL connects
 * its peers before any step is captured into a graph; collective then.
 * Without: removes the hook (the one-GPU step). Returns 0, or -1 after
 * printing why. */
int ft_rank_attach(ft_rank *r, ft_model *m, int all_reduce);

/* Waits for the work enqueued so far on the rank's stream, polling, so it
 * gives up when another rank broke the team (its all-reduce would never
 * complete) or NCCL reports an asynchronous error. Returns 0, or -1 (after
 * printing why, unless the team was already broken). */
int ft_rank_wait(ft_rank *r);
/* The same wait for an event already recorded on the rank's stream (the
 * work before it, not everything queued). */
int ft_rank_wait_event(ft_rank *r, CUevent ev);
/* What those waits poll: 1 when the team is broken, or (after saying so
 * and breaking it) when NCCL reports an asynchronous error; else 0. */
int ft_rank_should_stop(ft_rank *r);

/* Ends the communicator: destroyed after a good run, aborted when the
 * team is broken (that also cancels an all-reduce stuck waiting for a
 * peer, so the rank's buffers can be freed). Call it before freeing the
 * buffers the steps use. */
void ft_rank_end_comm(ft_rank *r);

/* Ends the rank's run on the GPU: the captured step (if any), then the
 * communicator (ft_rank_end_comm), then, when the team is broken, waits for
 * the stream. In that order because NCCL's ncclCommDestroy and
 * ncclCommAbort both wait until no CUDA graph holds a collective of the
 * communicator (NCCL 2.28, init.cc: commDestroySync), so ending the
 * communicator first would wait forever on the step's graph. Freeing the
 * graph first cannot wait: an executable graph still running is freed when
 * its launches end, and abort sets its flag before it waits, so an
 * all-reduce stuck on a peer that stopped quits and those launches end.
 * The wait for the stream then covers the steps still queued: they read
 * the model's and the feed's buffers, which the caller frees next. */
void ft_rank_end_run(ft_rank *r, ft_stepper *st);

/* Arms `dog` (started with ft_watchdog_start) over the end of a --gpus N run
 * or bench, for `seconds` from now (which flushes stdout). The ranks are
 * threads of one process and share the one watchdog: each arms it as it
 * starts to end, so the deadline runs from the last one's start, and the
 * caller disarms it once every thread has returned. Ending takes seconds at
 * most (after a failure, the wait for the steps still queued); what this
 * guards against is a rank that never gets there or never finishes: stuck
 * in NCCL's teardown, in a stream a broken GPU never finishes, or in
 * ncclCommInitRank, which a peer that failed before it leaves the others
 * in. Any of those would hang the process for good. */
void ft_rank_arm_for_the_end(ft_rank *r, ft_watchdog *dog, double seconds);

/* Ends the communicator if still there, then frees the marker and the
 * env's device part (runtime, stream, context). */
void ft_rank_release(ft_rank *r);

/* Prints "fox-train: rank <i> (GPU <ordinal>): <msg>" and breaks the team
 * with FT_EXIT_FAILED. */
void ft_rank_fail(ft_rank *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
