/* The training-step kernels' limits and launch shapes: BCE with logits
 * (one block or one cluster, or the wide form's blocks and finish), AdamW. */
#ifndef FJ_TRAIN_POLICY_H
#define FJ_TRAIN_POLICY_H

#include "common/policy.h"

#define FJ_BCE_MAX_N 2147483647ll
#define FJ_ADAMW_MAX_N (1ll << 40)

/* Threads of a BCE block and of an AdamW block (the program's BCE_BLOCK
 * and ADAM_BLOCK). */
#define FJ_BCE_BLOCK 1024
#define FJ_ADAM_BLOCK 256
/* Values per BCE block before another block of the cluster is worth its
 * cluster barrier; the trainer's per-step logits at B = 32 (10240) stay in
 * one plain block. */
#define FJ_BCE_PER_BLOCK 16384
/* Elements a BCE thread loads before their terms (one batch). */
#define FJ_BCE_BATCH 8
/* The wide form: blocks of FJ_BCE_WIDE_BLOCK threads with at most one batch
 * of loads a thread (FJ_BCE_WIDE_PER_BLOCK values), up to
 * FJ_BCE_WIDE_MAX_BLOCKS of them (8 blocks an SM on a 128-SM GPU; more
 * values a block past that). */
#define FJ_BCE_WIDE_BLOCK 256
#define FJ_BCE_WIDE_PER_BLOCK (FJ_BCE_BATCH * FJ_BCE_WIDE_BLOCK)
#define FJ_BCE_WIDE_MAX_BLOCKS 1024
/* Up to this n the wide form launches foxjit_bce_with_logits's one block
 * instead (one launch, one load a thread; one block on every arch there),
 * and leaves its workspace alone. */
#define FJ_BCE_WIDE_ONE_BLOCK_MAX 8192
/* AdamW grid cap in blocks per SM: enough to hide latency, and a grid
 * stride loop covers the rest. */
#define FJ_ADAM_BLOCKS_PER_SM 8

/* Blocks of the wide form's first kernel for n values (1 to
 * FJ_BCE_WIDE_MAX_BLOCKS; it depends on n alone). Its workspace is that
 * many doubles. */
FJ_POLICY_FN unsigned fj_bce_wide_blocks(long long n)
{
    long long want = (n + FJ_BCE_WIDE_PER_BLOCK - 1) / FJ_BCE_WIDE_PER_BLOCK;
    return want < 1 ? 1u : want > FJ_BCE_WIDE_MAX_BLOCKS ? FJ_BCE_WIDE_MAX_BLOCKS : (unsigned)want;
}

#endif
