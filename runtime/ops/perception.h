/* The perception ops (kernels.md sections 3-6): limits, kernel variants for
 * prepare and `fox-jit warm`, shared argument checks, and the legacy
 * single-block backwards (benchmark baselines and test cross-checks).
 * Public entry points are in include/foxjit/foxjit.h. */
#ifndef FJ_OPS_PERCEPTION_H
#define FJ_OPS_PERCEPTION_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"
#include "runtime.h"

/* Supported dims (docs/dims.md). Every dim below is compiled into its
 * kernels; batch and T are runtime values. */
#define FJ_PERC_MAX_BATCH 1024
#define FJ_PERC_MAX_T 4096
#define FJ_PERC_MAX_N_HID 256
#define FJ_PERC_MAX_N_IN 256
#define FJ_PERC_MAX_D 256   /* heads D and attention D */
#define FJ_PERC_MAX_E 256
#define FJ_PERC_MAX_H 8     /* heads form one thread-block cluster (portable size 8) */
#define FJ_PERC_MAX_F 256
/* Largest stride accepted, in floats (far past any real tensor). */
#define FJ_PERC_MAX_STRIDE (1ll << 40)

/* ---- kernel variants -----------------------------------------------------
 * Each returns 0 and the variant, or -1 with a message in why (dims out of
 * range). cc is the compute capability the variant is for. */
int fj_cfc_variant(int n_in, int n_hid, fj_variant *v, char *why, size_t why_len);
int fj_cfc_legacy_variant(int n_in, int n_hid, fj_variant *v, char *why, size_t why_len);
int fj_heads_variant(int d, int e, int h, int cc, fj_variant *v, char *why, size_t why_len);
int fj_heads_legacy_variant(int d, int e, int h, fj_variant *v, char *why, size_t why_len);
int fj_vsn_variant(int f, fj_variant *v, char *why, size_t why_len);
int fj_vsn_legacy_variant(int f, fj_variant *v, char *why, size_t why_len);
int fj_attn_pool_variant(int d, fj_variant *v, char *why, size_t why_len);
/* The whole-sequence ops (runtime/ops/cfc_seq.c, heads_seq.c): one program
 * each, holding every kernel of both directions, for any batch and k. */
int fj_cfc_seq_variant(int n_in, int n_hid, int cc, fj_variant *v, char *why, size_t why_len);
int fj_heads_seq_variant(int d, int e, int h, int cc, fj_variant *v, char *why, size_t why_len);
/* Kernels one call launches (a captured step's node count). */
int fj_vsn_seq_variant(int f, int cc, fj_variant *v, char *why, size_t why_len);
int fj_cfc_seq_kernels(int backward);
int fj_heads_seq_kernels(int backward);
int fj_vsn_seq_kernels(void);
int fj_attn_pool_legacy_variant(int d, fj_variant *v, char *why, size_t why_len);

/* Launch shape details the tests and benches report. */
int fj_cfc_split(int n_hid);       /* blocks per batch row */
int fj_vsn_bwd_blocks(int f);      /* backward blocks per batch row */

/* ---- legacy baselines ------------------------------------------------------
 * grid = 1 block that loops over the batch; the parameter-gradient pointers
 * of the args (dw_in, dw1, dw, dq, ...) are the FINAL gradients, without the
 * leading batch dimension, and are added to (+=). Input gradients follow the
 * accumulate flags as in the block-per-batch ops. Same argument checks. */
foxjit_status fj_cfc_backward_legacy(foxjit_runtime *rt, const foxjit_cfc_args *a,
                                     CUstream stream);
foxjit_status fj_heads_backward_legacy(foxjit_runtime *rt, const foxjit_heads_args *a,
                                       CUstream stream);
foxjit_status fj_vsn_backward_legacy(foxjit_runtime *rt, const foxjit_vsn_args *a,
                                     CUstream stream);
foxjit_status fj_attn_pool_backward_legacy(foxjit_runtime *rt, const foxjit_attn_pool_args *a,
                                           CUstream stream);
/* Compiles and loads the legacy kernels of these dims (before graph capture). */
foxjit_status fj_perception_legacy_prepare(foxjit_runtime *rt, int n_in, int n_hid, int d,
                                           int e, int h, int f);

/* ---- shared argument checks (runtime/ops/perception.c) ------------------- */

/* NULL runtime / NULL args; clears the thread's message first. */
foxjit_status fj_perc_begin(const char *op, const foxjit_runtime *rt, const void *args);
/* A dim in [1, max] (INVALID_ARGUMENT below, UNSUPPORTED above). */
foxjit_status fj_perc_dim(const char *op, const char *name, int64_t v, int64_t max);
/* A stride of a tensor whose rows are `width` floats: 0 = dense (width),
 * else >= width. Writes the effective stride. */
foxjit_status fj_perc_stride(const char *op, const char *name, int64_t stride, int64_t width,
                             long long *out);
/* A pointer that may be 0 ("not needed"); else 4-byte aligned. */
foxjit_status fj_perc_optional_ptr(const char *op, const char *name, CUdeviceptr p);
/* Output `out` must not be the same tensor as `in` (blocks read all of an
 * input row while others write the output: in place would race). */
foxjit_status fj_perc_distinct(const char *op, const char *out_name, CUdeviceptr out,
                               const char *in_name, CUdeviceptr in);
/* A named device pointer, for fj_perc_distinct_all. */
typedef struct fj_perc_named {
    const char *name;
    CUdeviceptr p;
} fj_perc_named;
/* Every output differs from every input and from the other outputs (the
 * kernels read inputs while other blocks write outputs; 0 pointers are
 * "not given" and never collide). */
foxjit_status fj_perc_distinct_all(const char *op, const fj_perc_named *outs, int n_outs,
                                   const fj_perc_named *ins, int n_ins);
/* Fills why with "<name> = v is outside [1, max]" and returns -1 when v is
 * out of range (for the variant functions), else 0. */
int fj_perc_dim_why(const char *name, int v, int max, char *why, size_t why_len);

#endif
