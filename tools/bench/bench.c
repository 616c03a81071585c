#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "output_file.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

double bench_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

double bench_time_us(bench_ctx *b, bench_fn fn, void *ud, int batch)
{
    const ft_cuda *cu = b->cu;
    CUevent start, stop;
    if (cu->cuEventCreate(&start, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
        cu->cuEventCreate(&stop, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
        return -1;
    int total = b->warmup + b->samples;
    double *t = calloc((size_t)b->samples, sizeof *t);
    int iter = 0, ok = 1;
    for (int s = 0; s < total && ok; s++) {
        cu->cuEventRecord(start, b->stream);
        for (int i = 0; i < batch && ok; i++)
            ok = fn(b, ud, iter++) == 0;
        cu->cuEventRecord(stop, b->stream);
        if (cu->cuEventSynchronize(stop) != CUDA_SUCCESS) {
            fprintf(stderr, "bench: the timed work failed on the GPU\n");
            ok = 0;
        }
        float ms = 0;
        cu->cuEventElapsedTime(&ms, start, stop);
        if (s >= b->warmup)
            t[s - b->warmup] = (double)ms * 1000.0 / batch;
    }
    cu->cuEventDestroy(start);
    cu->cuEventDestroy(stop);
    double median = -1;
    if (ok)
        median = bench_median(t, b->samples);
    free(t);
    return median;
}

double bench_time_graph_us(bench_ctx *b, bench_fn fn, void *ud, int batch)
{
    const ft_cuda *cu = b->cu;
    CUgraph graph;
    CUgraphExec exec;
    if (cu->cuStreamBeginCapture(b->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
        return -1;
    int ok = 1;
    for (int i = 0; i < batch && ok; i++)
        ok = fn(b, ud, i) == 0;
    if (cu->cuStreamEndCapture(b->stream, &graph) != CUDA_SUCCESS || !ok)
        return -1;
    if (cu->cuGraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS) {
        cu->cuGraphDestroy(graph);
        return -1;
    }
    CUevent start, stop;
    cu->cuEventCreate(&start, CU_EVENT_DEFAULT);
    cu->cuEventCreate(&stop, CU_EVENT_DEFAULT);
    double *t = calloc((size_t)b->samples, sizeof *t);
    for (int s = 0; s < b->warmup + b->samples && ok; s++) {
        cu->cuEventRecord(start, b->stream);
        ok = cu->cuGraphLaunch(exec, b->stream) == CUDA_SUCCESS;
        cu->cuEventRecord(stop, b->stream);
        ok = ok && cu->cuEventSynchronize(stop) == CUDA_SUCCESS;
        float ms = 0;
        cu->cuEventElapsedTime(&ms, start, stop);
        if (s >= b->warmup)
            t[s - b->warmup] = (double)ms * 1000.0 / batch;
    }
    cu->cuEventDestroy(start);
    cu->cuEventDestroy(stop);
    cu->cuGraphExecDestroy(exec);
    cu->cuGraphDestroy(graph);
    double median = -1;
    if (ok)
        median = bench_median(t, b->samples);
    free(t);
    return median;
}

int bench_rotation(const bench_ctx *b, size_t bytes, int max_copies)
{
    size_t want = 2 * (b->l2_bytes ? b->l2_bytes : (64u << 20));
    size_t n = bytes ? (want + bytes - 1) / bytes : 1;
    if (n < 2)
        n = 2;
    if (n > (size_t)max_copies)
        n = (size_t)max_copies;
    return (int)n;
}

typedef struct copy_state {
    CUdeviceptr src[64], dst[64];
    int n;
    size_t bytes;
} copy_state;

static int copy_once(bench_ctx *b, void *ud, int iter)
{
    copy_state *c = ud;
    int i = iter % c->n;
    return b->cu->cuMemcpyDtoDAsync(c->dst[i], c->src[i], c->bytes, b->stream) != CUDA_SUCCESS;
}

void bench_copy_us(bench_ctx *b, size_t bytes, double *eager_us, double *graph_us)
{
    copy_state c = {.bytes = bytes};
    c.n = bench_rotation(b, 2 * bytes, 64);
    for (int i = 0; i < c.n; i++) {
        c.src[i] = bench_alloc(b, bytes);
        c.dst[i] = bench_alloc(b, bytes);
    }
    *eager_us = bench_time_us(b, copy_once, &c, 20);
    *graph_us = bench_time_graph_us(b, copy_once, &c, 20);
    for (int i = 0; i < c.n; i++) {
        bench_free(b, c.src[i]);
        bench_free(b, c.dst[i]);
    }
}

CUdeviceptr bench_alloc(bench_ctx *b, size_t bytes)
{
    CUdeviceptr p = 0;
    CUresult r = b->cu->cuMemAlloc(&p, bytes ? bytes : 4);
    if (r != CUDA_SUCCESS) {
        char buf[200];
        fprintf(stderr, "bench: cuMemAlloc(%zu) failed: %s\n", bytes,
                ft_cuda_error(b->cu, r, buf, sizeof buf));
        exit(1);
    }
    return p;
}

void bench_free(bench_ctx *b, CUdeviceptr p)
{
    if (p)
        b->cu->cuMemFree(p);
}

void bench_fill_random(bench_ctx *b, CUdeviceptr p, size_t n, unsigned seed)
{
    float *h = malloc(n * sizeof *h);
    if (!h) {
        fprintf(stderr, "bench: out of host memory\n");
        exit(1);
    }
    uint64_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        h[i] = (float)((double)(s >> 40) / 16777216.0 * 2.0 - 1.0);
    }
    b->cu->cuMemcpyHtoD(p, h, n * sizeof *h);
    free(h);
}

void bench_print_header(const char *title)
{
    printf("\n%s\n", title);
    printf("%-22s %-11s %9s %9s %7s %8s  %-26s %-26s\n", "op", "shape", "eager us", "graph us",
           "GB/s", "vs copy", "baseline 1: x faster e/g", "baseline 2: x faster e/g");
}

static void ratio_text(char *buf, size_t len, const char *name, double base, double base_g,
                       double us, double g)
{
    buf[0] = '\0';
    if (!name || base <= 0)
        return;
    if (base_g > 0 && g > 0)
        snprintf(buf, len, "%s %.1fx / %.1fx", name, base / us, base_g / g);
    else
        snprintf(buf, len, "%s %.1fx", name, base / us);
}

static void json_pair(FILE *f, const char *key, double v)
{
    if (v > 0)
        fprintf(f, ", \"%s\": %.4f", key, v);
}

FILE *bench_json_open(const char *path)
{
    out_file out;
    char why[600];
    if (out_file_open(&out, path, "--json", OUT_FILE_VISIBLE, why, sizeof why)) {
        int err = errno;
        fprintf(stderr, "fox-jit bench: %s\n", why);
        errno = err;
        return NULL;
    }
    return out_file_take(&out);
}

void bench_emit(bench_ctx *b, const bench_row *r)
{
    char b1[80], b2[80], roof[32] = "-", gbs[32] = "-", graph[32] = "-";
    ratio_text(b1, sizeof b1, r->base1_name, r->base1_us, r->base1_graph_us, r->us, r->graph_us);
    ratio_text(b2, sizeof b2, r->base2_name, r->base2_us, r->base2_graph_us, r->us, r->graph_us);
    /* GPU-side figures where a graph time exists: no CPU launch cost. */
    double gpu_us = r->graph_us > 0 ? r->graph_us : r->us;
    double copy = r->graph_us > 0 && r->copy_graph_us > 0 ? r->copy_graph_us : r->copy_us;
    if (copy > 0)
        snprintf(roof, sizeof roof, "%.2fx", gpu_us / copy);
    if (r->bytes > 0)
        snprintf(gbs, sizeof gbs, "%.0f", r->bytes / (gpu_us * 1e3));
    if (r->graph_us > 0)
        snprintf(graph, sizeof graph, "%.2f", r->graph_us);
    printf("%-22s %-11s %9.2f %9s %7s %8s  %-26s %-26s%s%s%s%s%s\n", r->name, r->shape, r->us,
           graph, gbs, roof, b1, b2, r->note ? "  " : "", r->note ? r->note : "",
           b->plan_overridden ? "  [" : "", b->plan_overridden ? b->plan : "",
           b->plan_overridden ? "]" : "");
    fflush(stdout);
    if (!b->json)
        return;
    fprintf(b->json, "%s\n  {\"group\": \"%s\", \"op\": \"%s\", \"shape\": \"%s\"",
            b->json_rows++ ? "," : "", r->group, r->name, r->shape);
    json_pair(b->json, "eager_us", r->us);
    json_pair(b->json, "graph_us", r->graph_us);
    json_pair(b->json, "bytes", r->bytes);
    json_pair(b->json, "copy_eager_us", r->copy_us);
    json_pair(b->json, "copy_graph_us", r->copy_graph_us);
    if (copy > 0)
        json_pair(b->json, "time_vs_copy", gpu_us / copy);
    if (r->base1_name) {
        fprintf(b->json, ", \"baseline1\": \"%s\"", r->base1_name);
        json_pair(b->json, "baseline1_eager_us", r->base1_us);
        json_pair(b->json, "baseline1_graph_us", r->base1_graph_us);
    }
    if (r->base2_name) {
        fprintf(b->json, ", \"baseline2\": \"%s\"", r->base2_name);
        json_pair(b->json, "baseline2_eager_us", r->base2_us);
        json_pair(b->json, "baseline2_graph_us", r->base2_graph_us);
    }
    if (r->note)
        fprintf(b->json, ", \"note\": \"%s\"", r->note);
    if (b->plan[0])
        fprintf(b->json, ", \"plan\": \"%s\"", b->plan);
    fprintf(b->json, "}");
}
