/* A training run: data from the seed, a model initialized from the seed
 * or resumed from a checkpoint, the step loop (eager or graph-replayed)
 * with a status line, the loss curve CSV, checkpoints, and the held-out
 * loss and AUC at the end. */
#ifndef FT_TRAIN_H
#define FT_TRAIN_H

#include "args.h"
#include "env.h"

/* Returns the process exit status (enum ft_exit) after printing why on
 * failure. */
int ft_train(ft_env *e, const ft_options *o);

#endif
