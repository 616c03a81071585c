/* The C side of `python3 -m foxjit.overhead`: host microseconds per call of
 * the same ops at the same shapes, called from C through the library, and
 * GPU microseconds per call (events around N calls back to back). Prints
 * JSON {"op": {"c_host_us": .., "c_gpu_us": ..}}. Exits 77 without a GPU. */
#include <stdio.h>
#include <time.h>

#include <foxjit/foxjit.h>

#define CALLS 2000
#define CU(call) do { if ((call) != CUDA_SUCCESS) { fprintf(stderr, "%s failed\n", #call); \
    return 1; } } while (0)

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

typedef foxjit_status (*op_fn)(void *);
typedef struct { foxjit_runtime *rt; CUdeviceptr a, b, c, d; size_t n; foxjit_cfc_args cfc; } bufs;

static foxjit_status colsum(void *p)
{
    bufs *b = p;
    return foxjit_column_sum(b->rt, b->a, 8192, 42, b->b, 0, NULL);
}
static foxjit_status rank(void *p)
{
    bufs *b = p;
    return foxjit_rank_normalize(b->rt, b->a, 4096000, 1.0f, 0.0f, FOXJIT_TIES_MAX, b->c, b->d,
                                 b->n, NULL);
}
static foxjit_status cfc(void *p)
{
    bufs *b = p;
    return foxjit_cfc_forward(b->rt, &b->cfc, NULL);
}

static int time_op(const char *name, op_fn fn, bufs *b, int first)
{
    if (fn(b) != FOXJIT_OK) {
        fprintf(stderr, "%s: %s\n", name, foxjit_last_error());
        return 1;
    }
    CU(cuCtxSynchronize());
    double t = now_us();
    for (int i = 0; i < CALLS; i++)
        fn(b);
    double host = (now_us() - t) / CALLS;
    CU(cuCtxSynchronize());
    CUevent e0, e1;
    CU(cuEventCreate(&e0, 0));
    CU(cuEventCreate(&e1, 0));
    CU(cuEventRecord(e0, NULL));
    for (int i = 0; i < CALLS / 4; i++)
        fn(b);
    CU(cuEventRecord(e1, NULL));
    CU(cuEventSynchronize(e1));
    float ms = 0;
    CU(cuEventElapsedTime(&ms, e0, e1));
    printf("%s\"%s\": {\"c_host_us\": %.3f, \"c_gpu_us\": %.3f}", first ? "" : ",\n ", name,
           host, ms * 1e3 / (CALLS / 4));
    return 0;
}

int main(void)
{
    int n = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1) {
        printf("SKIP: no CUDA GPU\n");
        return 77;
    }
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CU(cuCtxSetCurrent(ctx));
    bufs b = {0};
    if (foxjit_runtime_create(NULL, &b.rt) != FOXJIT_OK) {
        fprintf(stderr, "runtime: %s\n", foxjit_last_error());
        return 1;
    }
    size_t big = 4096000 * 4;
    CU(cuMemAlloc(&b.a, big));
    CU(cuMemAlloc(&b.b, big));
    CU(cuMemAlloc(&b.c, big));
    CU(cuMemsetD32(b.a, 0x3f000000, 4096000));
    foxjit_rank_normalize_workspace_size(b.rt, 4096000, FOXJIT_TIES_MAX, &b.n);
    CU(cuMemAlloc(&b.d, b.n));
    /* CfC 32 x 128 x 128: the parameters and activations in one buffer */
    CUdeviceptr f;
    CU(cuMemAlloc(&f, 1 << 22));
    CU(cuMemsetD32(f, 0x3dcccccd, (1 << 22) / 4));   /* 0.1f everywhere: tau 0.1 > 0 */
    b.cfc = (foxjit_cfc_args){.batch = 32, .n_in = 128, .n_hid = 128,
        .w_in = f, .w_rec = f + 65536, .bias = f + 131072, .tau = f + 131584,
        .x = f + 132096, .h = f + 148480, .dt = f + 164864, .u = f + 196608,
        .h_out = f + 262144};
    printf("{");
    int bad = time_op("column_sum 8192x42", colsum, &b, 1) ||
              time_op("rank_normalize 4096000", rank, &b, 0) ||
              time_op("cfc_forward 32x128x128", cfc, &b, 0);
    printf("}\n");
    foxjit_runtime_destroy(&b.rt);
    return bad;
}
