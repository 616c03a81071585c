/* A minimal fox-jit program (README "Use from C"): a CUDA context, a
 * runtime, a bias gradient and a rank normalization, each checked against
 * the CPU. It links libfoxjit and libcuda:
 *
 *   cc colsum_rank.c $(pkg-config --cflags --libs foxjit) \
 *      -L/usr/local/cuda/lib64/stubs -lcuda -lm -o colsum_rank
 *
 * Exit status: 0 done; 1 an error, said on stderr; 77 no CUDA driver or
 * GPU (said on stdout, after printing the library's version). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <foxjit/foxjit.h>

enum { EXIT_NO_GPU = 77 };
enum { BATCH = 8192, OUT_DIM = 42, N = 10000 };

static const char *cu_name(CUresult r)
{
    const char *name = NULL;
    if (r == CUDA_ERROR_STUB_LIBRARY)   /* the stub cannot name its own error */
        return "CUDA_ERROR_STUB_LIBRARY: the toolkit's stub libcuda, not a driver";
    return cuGetErrorName(r, &name) == CUDA_SUCCESS && name ? name : "an unnamed error";
}

#define CU(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { \
    fprintf(stderr, "%s: %s (CUresult %d)\n", #call, cu_name(r_), (int)r_); return 1; } \
    } while (0)
#define FJ(call) do { foxjit_status s_ = (call); if (s_ != FOXJIT_OK) { \
    fprintf(stderr, "%s: %s: %s\n", #call, foxjit_status_string(s_), foxjit_last_error()); \
    return 1; } } while (0)

static float dy_host[BATCH * OUT_DIM], db_init[OUT_DIM];

/* db against db_init + the column sums of dy_host: the count of bad values. */
static int check_bias_grad(CUdeviceptr db)
{
    float got[OUT_DIM];
    if (cuMemcpyDtoH(got, db, sizeof got) != CUDA_SUCCESS) {
        fprintf(stderr, "cuMemcpyDtoH of db failed\n");
        return 1;
    }
    int bad = 0;
    for (int j = 0; j < OUT_DIM; j++) {
        double want = db_init[j];
        for (int i = 0; i < BATCH; i++)
            want += dy_host[i * OUT_DIM + j];
        if (fabs(got[j] - want) > 1e-3)
            bad++, fprintf(stderr, "db[%d]: %g, expected %g\n", j, got[j], want);
    }
    return bad;
}

/* Rewards to signed ranks in [-1, 1] on the GPU, checked on the CPU: 0 or
 * the count of bad values (1 for an error). */
static int rank_normalize_checked(foxjit_runtime *rt, CUstream stream)
{
    static float rewards[N], normed[N];
    for (int i = 0; i < N; i++)
        rewards[i] = (float)((i * 104729) % 20011) / 10000.0f - 1.0f;
    size_t work_bytes = 0;
    FJ(foxjit_rank_normalize_prepare(rt, FOXJIT_TIES_MAX));
    FJ(foxjit_rank_normalize_workspace_size(rt, N, FOXJIT_TIES_MAX, &work_bytes));
    CUdeviceptr drew, dout, dwork;
    CU(cuMemAlloc(&drew, sizeof rewards));
    CU(cuMemAlloc(&dout, sizeof normed));
    CU(cuMemAlloc(&dwork, work_bytes));
    CU(cuMemcpyHtoD(drew, rewards, sizeof rewards));
    FJ(foxjit_rank_normalize(rt, drew, N, 1.0f, 0.0f, FOXJIT_TIES_MAX, dout, dwork, work_bytes,
                             stream));
    CU(cuStreamSynchronize(stream));
    CU(cuMemcpyDtoH(normed, dout, sizeof normed));
    cuMemFree(drew), cuMemFree(dout), cuMemFree(dwork);

    int bad = 0;
    /* rank_i = #{j : |s_j| <= |s_i|}; O(N^2) is fine for a check */
    for (int i = 0; i < N; i += 37) {
        float si = fabsf(rewards[i]);
        long rank = 0;
        for (int j = 0; j < N; j++)
            rank += fabsf(rewards[j]) <= si;
        float want = si > 0.001f ? (rewards[i] > 0 ? 1.0f : -1.0f) * (float)rank / N : 0.0f;
        if (fabsf(normed[i] - want) > 1e-6f)
            bad++, fprintf(stderr, "rank %d: %g, expected %g\n", i, normed[i], want);
    }
    return bad;
}

int main(void)
{
    printf("fox-jit %s\n", foxjit_version());
    int count = 0;
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count < 1) {
        if (r != CUDA_SUCCESS)
            printf("SKIP: no CUDA GPU (cuInit: %s, CUresult %d)\n", cu_name(r), (int)r);
        else
            printf("SKIP: no CUDA GPU (the driver sees no device)\n");
        return EXIT_NO_GPU;
    }
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    CU(cuDeviceGet(&dev, 0));
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

    for (int i = 0; i < BATCH * OUT_DIM; i++)
        dy_host[i] = (float)((i * 7919L) % 1000) / 1000.0f - 0.5f;
    for (int j = 0; j < OUT_DIM; j++)
        db_init[j] = 0.01f * (float)j;
    CUdeviceptr dy, db;
    CU(cuMemAlloc(&dy, sizeof dy_host));
    CU(cuMemAlloc(&db, sizeof db_init));
    CU(cuMemcpyHtoD(dy, dy_host, sizeof dy_host));
    CU(cuMemcpyHtoD(db, db_init, sizeof db_init));

    /* A CUDA context must be current (cuCtxSetCurrent, or any CUDA runtime call). */
    foxjit_runtime *rt;
    if (foxjit_runtime_create(NULL, &rt) != FOXJIT_OK) {
        fprintf(stderr, "fox-jit: %s\n", foxjit_last_error());
        return 1;
    }
    /* Before CUDA Graph capture: compile and load what the step will use. */
    FJ(foxjit_column_sum_prepare(rt, BATCH, OUT_DIM));
    /* db[OUT_DIM] += sum over the batch of dy[BATCH, OUT_DIM], on the caller's stream. */
    foxjit_status st = foxjit_bias_grad_reduce(rt, dy, BATCH, OUT_DIM, db, stream);
    if (st != FOXJIT_OK) {
        fprintf(stderr, "%s: %s\n", foxjit_status_string(st), foxjit_last_error());
        return 1;
    }
    CU(cuStreamSynchronize(stream));
    int bad = check_bias_grad(db) + rank_normalize_checked(rt, stream);
    foxjit_runtime_destroy(&rt);

    cuMemFree(dy), cuMemFree(db);
    cuStreamDestroy(stream);
    cuDevicePrimaryCtxRelease(dev);
    if (bad) {
        fprintf(stderr, "FAILED: %d values differ from the CPU's (or a call failed)\n", bad);
        return 1;
    }
    printf("ok: bias gradient of %dx%d and rank normalization of %d on the GPU\n", BATCH,
           OUT_DIM, N);
    return 0;
}
