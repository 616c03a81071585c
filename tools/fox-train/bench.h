/* `fox-train --bench`: milliseconds per training step, eager and replayed
 * from one captured CUDA graph, for a list of batch sizes at the run's K.
 * A step here is what the training loop enqueues: the batch copy, the
 * whole step (forward to AdamW) and the loss copy to the host. Timed with
 * CUDA events over --bench-steps steps after a warm-up, median of 5. */
#ifndef FT_BENCH_H
#define FT_BENCH_H

#include "args.h"
#include "env.h"

int ft_bench(ft_env *e, const ft_options *o);

#endif
