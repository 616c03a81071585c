/* The model's state on the device, to a checkpoint and from a checkpoint
 * or the seed. Synchronous on the given stream. */
#ifndef FT_STATE_H
#define FT_STATE_H

#include <stdint.h>

#include "checkpoint.h"
#include "model.h"

/* Writes parameters, AdamW moments and the device step counter to path
 * with the run's configuration `cfg` (its step is replaced by the
 * counter's). Returns 0, or -1 after printing why. */
int ft_state_save(ft_model *m, CUstream s, const ft_ckpt_meta *cfg, const char *path);

/* Uploads the checkpoint's arrays (params, m, v), or when params is NULL
 * the seeded initial parameters with zero moments, and sets the step
 * counter to `step`. Returns 0, or -1 after printing why. */
int ft_state_load(ft_model *m, CUstream s, uint64_t seed, int64_t step, const float *params,
                  const float *mom1, const float *mom2);

#endif
