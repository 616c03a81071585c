/* Host cost of one call (fox-jit bench launch): how long the CPU spends
 * enqueueing a column sum through fox-jit, next to a raw cuLaunchKernel of
 * the same kernel and the driver calls fox-jit makes on every call. An eager
 * op cannot run faster than this, whatever its kernel. */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "colsum_kernel.h"

#define CALLS 200 /* calls per timed sample */

typedef struct launch_bench {
    CUdeviceptr x, out;
    long long rows, cols;
    int acc;
    colsum_kernel kernel;  /* the op's plan for the shape */
} launch_bench;

typedef int (*host_fn)(bench_ctx *b, launch_bench *l);

static int get_current(bench_ctx *b, launch_bench *l)
{
    (void)l;
    CUcontext c;
    return b->cu->cuCtxGetCurrent(&c) != CUDA_SUCCESS;
}

static int stream_ctx(bench_ctx *b, launch_bench *l)
{
    (void)l;
    CUcontext c;
    return b->cu->cuStreamGetCtx(b->stream, &c) != CUDA_SUCCESS;
}

static int raw_launch(bench_ctx *b, launch_bench *l)
{
    return colsum_kernel_launch(b, &l->kernel, l->x, l->rows, l->cols, l->out, l->acc) !=
           FOXJIT_OK;
}

static int op_call(bench_ctx *b, launch_bench *l)
{
    return foxjit_bias_grad_reduce(b->rt, l->x, l->rows, l->cols, l->out, b->stream) != FOXJIT_OK;
}

static int op_call_timed(bench_ctx *b, void *ud, int iter)
{
    (void)iter;
    return op_call(b, ud);
}

/* Median host microseconds per call over samples of CALLS calls, the
 * stream drained before each sample so the launch queue never fills. */
static double host_us(bench_ctx *b, host_fn fn, launch_bench *l)
{
    int n = b->samples;
    double *t = calloc((size_t)n, sizeof *t);
    if (!t)
        return -1;
    for (int s = -b->warmup; s < n; s++) {
        if (b->cu->cuStreamSynchronize(b->stream) != CUDA_SUCCESS) {
            free(t);
            return -1;
        }
        double t0 = bench_now_us();
        for (int i = 0; i < CALLS; i++)
            if (fn(b, l)) {
                fprintf(stderr, "bench launch: %s\n", foxjit_last_error());
                free(t);
                return -1;
            }
        double dt = bench_now_us() - t0;
        if (s >= 0)
            t[s] = dt / CALLS;
    }
    b->cu->cuStreamSynchronize(b->stream);
    double median = bench_median(t, n);
    free(t);
    return median;
}

int bench_launch(bench_ctx *b)
{
    static const long long shapes[][2] = {{32, 128}, {8192, 3}, {8192, 42}, {8192, 256}};
    printf("\nhost cost of one call, us (median of %d samples of %d calls; CPU clock)\n",
           b->samples, CALLS);
    printf("(driver launch: the op's kernel through cuLaunchKernelEx on sm_90+ plans (programmatic"
           " serialization, a cluster where there is one), else cuLaunchKernel;"
           " eager GPU us: fox-jit bench timing, one input buffer)\n");
    printf("%-11s %-16s %10s %10s %10s %12s\n", "shape", "kernel", "driver", "fox-jit op",
           "op - drv", "eager GPU us");
    launch_bench l = {.acc = 1};
    double cur = host_us(b, get_current, &l), sctx = host_us(b, stream_ctx, &l);
    int failed = cur < 0 || sctx < 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && !failed; i++) {
        l.rows = shapes[i][0];
        l.cols = shapes[i][1];
        size_t n = (size_t)(l.rows * l.cols);
        l.x = bench_alloc(b, n * sizeof(float));
        l.out = bench_alloc(b, (size_t)l.cols * sizeof(float));
        bench_fill_random(b, l.x, n, 7);
        if (colsum_kernel_plan(b, l.rows, l.cols, &l.kernel) != FOXJIT_OK) {
            fprintf(stderr, "bench launch: %s\n", foxjit_last_error());
            failed = 1;
        } else {
            double raw = host_us(b, raw_launch, &l), op = host_us(b, op_call, &l);
            double eager = bench_time_us(b, op_call_timed, &l, 20);
            char shape[32], kern[32];
            const fj_colsum_geometry g = l.kernel.g;
            colsum_kernel_free(&l.kernel);
            snprintf(shape, sizeof shape, "%lldx%lld", l.rows, l.cols);
            snprintf(kern, sizeof kern, "%s %dx%d%s", g.rows_mode ? "rows" : "tiles", g.grid_x,
                     g.split, g.split > 1 ? " clu" : "");
            printf("%-11s %-16s %10.2f %10.2f %10.2f %12.2f\n", shape, kern, raw, op, op - raw,
                   eager);
            failed |= raw < 0 || op < 0 || eager < 0;
        }
        bench_free(b, l.x);
        bench_free(b, l.out);
    }
    if (cur >= 0 && sctx >= 0)
        printf("driver calls each op makes: cuCtxGetCurrent %.3f us, cuStreamGetCtx %.3f us\n",
               cur, sctx);
    return failed;
}
