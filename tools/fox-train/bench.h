/* `fox-train --bench`: milliseconds per training step, eager and replayed
 * from one captured CUDA graph, for a list of batch sizes at the run's K.
 * A step here is what the training loop enqueues: the batch copy, the
 * whole step (forward to AdamW) and the loss copy to the host. Timed with
 * CUDA events over --bench-steps steps after a warm-up, median of 5; and
 * the graph-replayed step as a run takes it (the loop figure: through
 * epochs packed ahead, with the reporting points' waits). */
#ifndef FT_BENCH_H
#define FT_BENCH_H

#include <stdint.h>

#include "args.h"
#include "env.h"
#include "feed.h"
#include "pacer.h"
#include "stepper.h"

/* The longest epoch a loop figure goes through, in batches: at B = 1
 * that is 4096 + 5 x 8192 steps, some 6 s on an H200. */
#define FT_BENCH_LOOP_BATCHES 4096

int ft_bench(ft_env *e, const ft_options *o);

/* The sequences a loop figure at (global) batch B goes through: the run's
 * --train-size, but at least 2 batches and at most FT_BENCH_LOOP_BATCHES
 * (the figure goes through 3 to 11 epochs, so its time grows with the
 * epoch's length). Shared with --bench --gpus N (dp_bench.c). */
int ft_bench_sequences(const ft_options *o, int batch);

/* The loop figure's sample, both benches': enqueues n graph-replayed steps
 * as a run takes them, from *index (advanced) through the units the feed
 * packs ahead, each step's loss copied to loss_host, with a reporting
 * point every progress_every steps that waits (through pacer) for the
 * steps up to the previous one, and a wait for everything whenever half a
 * loss ring would be unwritten. The caller times it and waits for the
 * rest. Returns 0, or -1 after the failing call said why (or a wait gave
 * up silently). */
int ft_bench_loop_steps(ft_feed *feed, ft_stepper *st, float *loss_host, ft_pacer *pacer,
                        int progress_every, int n, int64_t *index, CUstream s);

#endif
