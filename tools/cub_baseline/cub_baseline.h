/* The peers fox-jit's sort and rank normalization are measured against,
 * built by nvcc around the host-side cub::DeviceRadixSort (only with
 * meson -Dnvcc_baselines=true; `fox-jit bench` reports them when present).
 * Bench-only: these use the CUDA runtime on the current context and
 * return a cudaError_t value (0 = success). */
#ifndef FJ_CUB_BASELINE_H
#define FJ_CUB_BASELINE_H

#include <stddef.h>

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cub::DeviceRadixSort::SortPairs<uint32_t, uint32_t> on bits
 * [begin_bit, end_bit). Call with workspace 0 to get *workspace_bytes. */
int fj_cub_sort_pairs(CUdeviceptr workspace, size_t *workspace_bytes, CUdeviceptr keys_in,
                      CUdeviceptr keys_out, CUdeviceptr values_in, CUdeviceptr values_out, int n,
                      int begin_bit, int end_bit, CUstream stream);

/* The original trainer's rank pipeline (ordinal ties): a kernel writing keys |s| and
 * values 0..n-1, cub::DeviceRadixSort::SortPairs<float, uint32_t> on all
 * 32 bits, and a kernel scattering out[index] = trade ? sign(s) * (p + 1) / n
 * : 0. Call with workspace 0 to get *workspace_bytes. */
int fj_cub_rank_pipeline(CUdeviceptr workspace, size_t *workspace_bytes, CUdeviceptr rewards,
                         int n, float std_ema, float mean_ema, CUdeviceptr out,
                         CUstream stream);

/* "CUB 3.0.1" */
const char *fj_cub_version(void);

#ifdef __cplusplus
}
#endif

#endif
