/* Inside the baselines library. Each baseline is an op the way
 * ops/<op>/op.c makes one: its programs, an fj_op descriptor (keys,
 * limits, the variants a shape uses), and API functions that check their
 * arguments, load their kernels through the op-call layer (fj_op_load,
 * fj_op_prepare) and launch them. They differ from the library's ops only
 * in their source set, embedded here and never shipped, and in their
 * list (list.c: the ops, their programs, their manifest). */
#ifndef FJ_BASELINES_INTERNAL_H
#define FJ_BASELINES_INTERNAL_H

#include "baselines.h"
#include "op_call.h"
#include "status.h"

/* Generated from kernel_src/baselines/ (tools/embed_sources.py). */
extern const fj_source_set fj_baseline_sources;

/* Block size of every baseline kernel (the original trainer's). */
#define FJ_LEGACY_BLOCK 256

extern const fj_program fj_program_colsum_legacy, fj_program_rank_legacy, fj_program_cfc_legacy,
    fj_program_heads_legacy, fj_program_vsn_legacy, fj_program_attn_pool_legacy;
extern const fj_op fj_op_colsum_legacy, fj_op_rank_legacy, fj_op_cfc_legacy,
    fj_op_heads_legacy, fj_op_vsn_legacy, fj_op_attn_pool_legacy;

/* Each op's lines of the baselines' manifest (the trainer shapes). */
#define FJ_COLSUM_LEGACY_SHAPES "column_sum_legacy\n"
#define FJ_RANK_LEGACY_SHAPES "rank_legacy\n"
#define FJ_CFC_LEGACY_SHAPES "cfc_legacy n_in=40 n_hid=128\ncfc_legacy n_in=128 n_hid=128\n"
#define FJ_HEADS_LEGACY_SHAPES "heads_legacy d=128 e=64 h=5\n"
#define FJ_VSN_LEGACY_SHAPES "vsn_legacy f=40\n"
#define FJ_ATTN_POOL_LEGACY_SHAPES "attn_pool_legacy d=128\n"

/* The variants function of an op of one variant that takes no shape. */
int fj_legacy_one_variant(const fj_program *p, fj_variant *out, int max);

#endif
