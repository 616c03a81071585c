/* A minimal fox-jit program: a CUDA context, a runtime, a column sum and a
 * rank normalization, each checked against the CPU. Links libfoxjit and
 * libcuda (pkg-config foxjit). Exits 77 when there is no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <foxjit/foxjit.h>

#define CU(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { \
    fprintf(stderr, "%s failed: %d\n", #call, (int)r_); return 1; } } while (0)
#define FJ(call) do { foxjit_status s_ = (call); if (s_ != FOXJIT_OK) { \
    fprintf(stderr, "%s: %s: %s\n", #call, foxjit_status_string(s_), foxjit_last_error()); \
    return 1; } } while (0)

enum { ROWS = 4096, COLS = 42, N = 10000 };

int main(void)
{
    int count = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) {
        printf("SKIP: no CUDA GPU\n");
        return 77;
    }
    CUdevice dev;
    CUcontext ctx;
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));

    foxjit_runtime *rt = NULL;
    FJ(foxjit_runtime_create(NULL, &rt));   /* default params: disk cache on */

    static float x[ROWS * COLS], sums[COLS], rewards[N], out[N];
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (int i = 0; i < N; i++)
        rewards[i] = (float)((i * 104729) % 20011) / 10000.0f - 1.0f;

    CUdeviceptr dx, dsums, drew, dout, dwork;
    size_t work_bytes = 0;
    FJ(foxjit_rank_normalize_workspace_size(rt, N, FOXJIT_TIES_MAX, &work_bytes));
    CU(cuMemAlloc(&dx, sizeof x));
    CU(cuMemAlloc(&dsums, sizeof sums));
    CU(cuMemAlloc(&drew, sizeof rewards));
    CU(cuMemAlloc(&dout, sizeof out));
    CU(cuMemAlloc(&dwork, work_bytes));
    CU(cuMemcpyHtoD(dx, x, sizeof x));
    CU(cuMemcpyHtoD(drew, rewards, sizeof rewards));

    FJ(foxjit_column_sum(rt, dx, ROWS, COLS, dsums, 0, NULL));
    FJ(foxjit_rank_normalize(rt, drew, N, 1.0f, 0.0f, FOXJIT_TIES_MAX, dout, dwork, work_bytes,
                             NULL));
    CU(cuMemcpyDtoH(sums, dsums, sizeof sums));
    CU(cuMemcpyDtoH(out, dout, sizeof out));

    int bad = 0;
    for (int j = 0; j < COLS; j++) {
        double want = 0;
        for (int i = 0; i < ROWS; i++)
            want += x[i * COLS + j];
        if (fabs(sums[j] - want) > 1e-3)
            bad++, fprintf(stderr, "column %d: %g, expected %g\n", j, sums[j], want);
    }
    /* rank_i = #{j : |s_j| <= |s_i|}; O(N^2) is fine for a check */
    for (int i = 0; i < N; i += 37) {
        float si = fabsf(rewards[i]);
        long rank = 0;
        for (int j = 0; j < N; j++)
            rank += fabsf(rewards[j]) <= si;
        float want = si > 0.001f ? (rewards[i] > 0 ? 1.0f : -1.0f) * (float)rank / N : 0.0f;
        if (fabsf(out[i] - want) > 1e-6f)
            bad++, fprintf(stderr, "rank %d: %g, expected %g\n", i, out[i], want);
    }
    cuMemFree(dx), cuMemFree(dsums), cuMemFree(drew), cuMemFree(dout), cuMemFree(dwork);
    foxjit_runtime_destroy(&rt);
    cuDevicePrimaryCtxRelease(dev);
    printf("%s: column sum of %dx%d and rank normalization of %d on the GPU\n",
           bad ? "FAILED" : "ok", ROWS, COLS, N);
    return bad ? 1 : 0;
}
