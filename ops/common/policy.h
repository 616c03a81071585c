/* What makes an op's policy.h (ops/<op>/policy.h: its launch shape, tile
 * sizes and limits) one text for both of its compilers: the C11 host side
 * (op.c, the test, the bench) and the kernel under NVRTC. Both include it
 * by the same name, "<op>/policy.h": ops/ is on the host's include path,
 * and the library embeds the file under that name, so every key hashes it
 * (runtime/cache_key.c) and a change to a policy is a new key.
 *
 * A policy holds plain macros, plain structs of int members and
 * FJ_POLICY_FN functions of int (or long long) arguments. NVRTC has no
 * <stdint.h>; C++17 has no compound literals or designated initializers;
 * a constexpr function initializes every local. */
#ifndef FJ_OPS_COMMON_POLICY_H
#define FJ_OPS_COMMON_POLICY_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
/* constexpr: a kernel sizes its arrays and templates with them. */
#define FJ_POLICY_FN static constexpr __host__ __device__ inline
#else
#define FJ_POLICY_FN static inline
#endif

FJ_POLICY_FN int fj_policy_cdiv(int a, int b) { return (a + b - 1) / b; }

FJ_POLICY_FN int fj_policy_min(int a, int b) { return a < b ? a : b; }

FJ_POLICY_FN int fj_policy_max(int a, int b) { return a > b ? a : b; }

/* Tensor-core products an MMA step of the tile GEMM takes
 * (kernel_src/tile_gemm.cuh) at a precision: 3 in float32 (3xTF32, the
 * default), 1 in TF32 (tf32 = 1: foxjit_set_precision's
 * FOXJIT_PRECISION_TF32, compiled with -DFJ_TF32=1). */
FJ_POLICY_FN int fj_tf32_products(int tf32) { return tf32 ? 1 : 3; }

/* Whether the tile GEMM's tensor-core tile (kernel_src/tile_gemm.cuh,
 * tg_use_tc) covers a tm x np output tile of a block of `threads`
 * threads: its warps' 32 x 16 pieces. On sm_80 and newer such a product
 * runs on tensor cores (3xTF32, or TF32 by foxjit_set_precision); any
 * other runs as register-tiled FMA, float32 at both precisions. */
FJ_POLICY_FN int fj_tc_tile_fits(int tm, int np, int threads)
{
    return tm % 32 == 0 && np % 16 == 0 && (tm / 32) * (np / 16) <= threads / 32;
}

/* n rounded up to 4 x a power of two: the columns of the sequence ops'
 * row-tile products (E of the heads, F of the variable selection). */
FJ_POLICY_FN int fj_np4(int n)
{
    int p = 1;
    while (4 * p < n)
        p *= 2;
    return 4 * p;
}

#endif
