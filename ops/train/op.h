/* Training-step ops (kernels.md section 7): BCE with logits, AdamW, the
 * device step counter. Public entry points are in include/foxjit/foxjit.h;
 * this is what prepare, `fox-jit warm` and the tests need besides. */
#ifndef FJ_OPS_TRAIN_H
#define FJ_OPS_TRAIN_H

#include <stdint.h>

#include "registry.h"
#include "runtime.h"

#define FJ_BCE_MAX_N 2147483647ll
#define FJ_ADAMW_MAX_N (1ll << 40)

/* The one variant every training op uses (no shape specialization). */
extern const fj_variant fj_train_variant;

/* Blocks of the BCE launch for n values on compute capability cc: one
 * cluster of that many blocks (1 below sm_90, or for small n). */
unsigned fj_bce_blocks(int64_t n, int cc);

/* Blocks of the wide form's first kernel for n values (1 to 1024; it
 * depends on n alone). Its workspace is that many doubles. */
unsigned fj_bce_wide_blocks(int64_t n);

/* Up to this n the wide form launches foxjit_bce_with_logits's one block
 * instead (one launch, one load a thread; one block on every arch there),
 * and leaves its workspace alone. */
#define FJ_BCE_WIDE_ONE_BLOCK_MAX 8192

/* The training-step kernels' program. */
extern const fj_program fj_program_train;

#endif
