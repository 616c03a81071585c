/* One data-parallel replica's model: the set-up every rank does the same way
 * whether the ranks are threads of one process (--gpus N, dp_train.c) or
 * processes (--dist, dist_train.c). */
#ifndef FT_REPLICA_H
#define FT_REPLICA_H

#include "config.h"
#include "data.h"
#include "feed.h"
#include "model.h"
#include "rank.h"
#include "stepper.h"

/* What preparing the kernels took, for the banner. */
typedef struct ft_prepare_stats {
    foxjit_counters before, after;  /* the runtime's counters around it */
    double seconds;
} ft_prepare_stats;

/* On the rank's thread, its env bound: allocates the model for
 * batch_per_rank rows (the sequence or the per-step path), prepares its
 * kernels (every rank at once on its own runtime: the library compiles each
 * kernel once and the others load it), loads the state from the seed or the
 * checkpoint of rc (the same on every rank, so the replicas start equal) and
 * opens a feed of the rank's slice of every global batch of train.
 * Returns 0; -1 when the model could not be made or prepared (reported with
 * ft_rank_fail, which breaks the team); -2 when the state or the feed
 * failed (they printed why; the caller ends the run its own way). */
int ft_replica_open(ft_rank *r, ft_model *model, ft_feed *feed, const ft_run_config *rc,
                    const ft_dataset *train, int batch_per_rank, int per_step,
                    ft_prepare_stats *stats);

/* Enqueues global step g of a replica on its stream: the rank's slice of
 * batch g, the step (stepper), and the loss copied to *loss_slot (pinned).
 * Returns 0, or -1 after ft_rank_fail. */
int ft_replica_enqueue_step(ft_rank *r, ft_model *model, ft_feed *feed, ft_stepper *stepper,
                            int64_t g, float *loss_slot);

#endif
