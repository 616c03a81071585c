/* The perception ops (kernels.md sections 3-6): limits, kernel variants for
 * prepare and `fox-jit warm`, and shared argument checks. The original
 * trainer's single-block backwards are baselines outside the library
 * (tools/baselines/), which reuse the backward checks declared here.
 * The API functions are in include/foxjit/foxjit.h. */
#ifndef FJ_OPS_PERCEPTION_H
#define FJ_OPS_PERCEPTION_H

#include <stddef.h>
#include <stdint.h>

#include "foxjit/foxjit.h"
#include "registry.h"

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
int fj_heads_variant(int d, int e, int h, int cc, fj_variant *v, char *why, size_t why_len);
int fj_vsn_variant(int f, fj_variant *v, char *why, size_t why_len);
int fj_attn_pool_variant(int d, fj_variant *v, char *why, size_t why_len);
/* The whole-sequence ops (ops/heads_seq, ops/vsn_seq): one program each,
 * holding every kernel of both directions, for any batch and k. */
int fj_heads_seq_variant(int d, int e, int h, int cc, fj_variant *v, char *why, size_t why_len);
int fj_vsn_seq_variant(int f, int cc, fj_variant *v, char *why, size_t why_len);

/* ---- backward argument checks ----------------------------------------------
 * Everything a backward checks before it loads a kernel: NULL runtime or
 * args, dims, pointers, strides, aliasing (not the heads' workspace). The
 * baselines run the same checks. */
typedef struct fj_cfc_strides {  /* effective strides, in floats */
    long long x, h, dt, u, h_out, dh_out, dh, dx;
} fj_cfc_strides;
foxjit_status fj_cfc_check_backward(const char *op, const foxjit_runtime *rt,
                                    const foxjit_cfc_args *a, fj_cfc_strides *s);
typedef struct fj_heads_strides {
    int steps;
    long long x, dlogits, dx, x_step, dlogits_step, dx_step;
} fj_heads_strides;
foxjit_status fj_heads_check_backward(const char *op, const foxjit_runtime *rt,
                                      const foxjit_heads_args *a, fj_heads_strides *s);
foxjit_status fj_vsn_check_backward(const char *op, const foxjit_runtime *rt,
                                    const foxjit_vsn_args *a);
foxjit_status fj_attn_pool_check_backward(const char *op, const foxjit_runtime *rt,
                                          const foxjit_attn_pool_args *a);

/* ---- shared argument checks (ops/common/perception.c) ------------------- */

/* NULL runtime / NULL args; clears the thread's message first. */
foxjit_status fj_perc_begin(const char *op, const foxjit_runtime *rt, const void *args);
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

/* The perception ops' programs (their kernels and declared arguments). */
extern const fj_program fj_program_cfc, fj_program_heads, fj_program_vsn, fj_program_attn_pool,
    fj_program_cfc_seq, fj_program_heads_seq, fj_program_vsn_seq;

#endif
