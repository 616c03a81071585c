/* Inside the baselines library: its programs and source set. It builds on
 * the runtime's internals the way an op does (runtime.h, module_cache.h,
 * the ops' argument checks); it is a library, not a tool. */
#ifndef FJ_BASELINES_INTERNAL_H
#define FJ_BASELINES_INTERNAL_H

#include "baselines.h"
#include "manifest.h"
#include "module_cache.h"
#include "op_call.h"
#include "common/perception.h"
#include "registry.h"
#include "runtime.h"
#include "status.h"

/* Generated from kernel_src/baselines/ (tools/embed_sources.py). */
extern const fj_source_set fj_baseline_sources;

extern const fj_program fj_program_colsum_legacy, fj_program_rank_legacy, fj_program_cfc_legacy,
    fj_program_heads_legacy, fj_program_vsn_legacy, fj_program_attn_pool_legacy;

/* Block size of every baseline kernel (the original trainer's). */
#define FJ_LEGACY_BLOCK 256

/* Variants: 0, or -1 with why (dims out of range). */
int fj_cfc_legacy_variant(int n_in, int n_hid, fj_variant *v, char *why, size_t why_len);
int fj_heads_legacy_variant(int d, int e, int h, fj_variant *v, char *why, size_t why_len);
int fj_vsn_legacy_variant(int f, fj_variant *v, char *why, size_t why_len);
int fj_attn_pool_legacy_variant(int d, fj_variant *v, char *why, size_t why_len);
extern const fj_variant fj_colsum_legacy_variant, fj_rank_legacy_variant;

#endif
