/* Training-step ops (kernels.md section 7): BCE with logits, AdamW, the
 * device step counter. The API functions are in include/foxjit/foxjit.h;
 * this is what the tests need besides (the variant, the cluster plan),
 * against the runtime's types; the constants are train/policy.h. */
#ifndef FJ_OPS_TRAIN_H
#define FJ_OPS_TRAIN_H

#include <stdint.h>

#include "foxjit/foxjit.h"
#include "registry.h"
#include "train/policy.h"

/* The one variant every training op uses (no shape specialization). */
extern const fj_variant fj_train_variant;

/* Blocks of the BCE launch for n values on compute capability cc: one
 * cluster of that many blocks (1 below sm_90, or for small n). */
unsigned fj_bce_blocks(int64_t n, int cc);

/* The training-step kernels' program. */
extern const fj_program fj_program_train;

#endif
