/* fox-train --dist: this process is one rank of a job that a cluster
 * launcher (torchrun, mpirun, srun) or --dist-local started, one process
 * per GPU, on one host or many. It is the data-parallel step of dp_train.h
 * with the ranks in separate processes: the same slice of every global
 * batch (ft_feed_open_slice), the same one all-reduce of the gradients per
 * step (rank.c's hook, captured in the graph with --graph), so two
 * processes compute the bits of --gpus 2 in one process.
 *
 * What the threads of --gpus N share in memory goes through NCCL here
 * (dist_xchg.h): the losses, so that rank 0 writes the curve of the global
 * batch; the statuses, so that a rank that fails stops the others; a hash
 * of the parameters at the end (the replica check). Rank 0 alone prints
 * the run, writes the CSV and the checkpoints (atomically, as ever) and
 * evaluates; the checkpoint is the global run's, so it resumes under any
 * world size that divides its batch, or on one GPU.
 *
 * The ranks meet through NCCL's own bootstrap: every rank calls
 * ncclGetUniqueId with NCCL_COMM_ID=host:port set, which then names that
 * address instead of making a random id, and rank 0's ncclCommInitRank
 * listens there. No id is passed around and no MPI is linked. Every wait
 * for the other ranks is under a watchdog (watchdog.h, --dist-timeout). */
#ifndef FT_DIST_TRAIN_H
#define FT_DIST_TRAIN_H

#include "args.h"
#include "dist_env.h"
#include "env.h"
#include "nccl.h"
#include "watchdog.h"

/* Ending the run (the captured step, NCCL's communicator, whose destroy
 * waits for the host's other ranks) gets --dist-timeout and this many
 * seconds more. */
#define FT_DIST_END_EXTRA_S 60

/* The process's entry point for --dist: reads the launcher's environment,
 * loads NCCL and the plugin, picks the GPU, trains. Returns the exit
 * status after printing why on failure. */
int ft_dist_main(const ft_options *o);

/* The global batch against the launcher's world: it must split evenly,
 * into shares one GPU takes (a resumed run's batch is its checkpoint's,
 * checked by config.c). Prints why and returns -1, else 0. */
int ft_dist_check_batch(const ft_options *o, const ft_dist_env *de);

/* The training itself, for a loaded env `base` and NCCL and a read
 * environment `de` (the host tests run it with emulated ones); dog: a
 * started watchdog. */
int ft_dist_train(const ft_env *base, const ft_options *o, const ft_nccl *nccl,
                  const ft_dist_env *de, ft_watchdog *dog);

#endif
