#include "bench.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_time_us(bench_ctx *b, bench_fn fn, void *ud, int batch)
{
    const fj_cuda *cu = b->cu;
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
    if (ok) {
        qsort(t, (size_t)b->samples, sizeof *t, cmp_double);
        median = t[b->samples / 2];
    }
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

double bench_copy_us(bench_ctx *b, size_t bytes)
{
    copy_state c = {.bytes = bytes};
    c.n = bench_rotation(b, 2 * bytes, 64);
    for (int i = 0; i < c.n; i++) {
        c.src[i] = bench_alloc(b, bytes);
        c.dst[i] = bench_alloc(b, bytes);
    }
    double us = bench_time_us(b, copy_once, &c, 20);
    for (int i = 0; i < c.n; i++) {
        bench_free(b, c.src[i]);
        bench_free(b, c.dst[i]);
    }
    return us;
}

CUdeviceptr bench_alloc(bench_ctx *b, size_t bytes)
{
    CUdeviceptr p = 0;
    CUresult r = b->cu->cuMemAlloc(&p, bytes ? bytes : 4);
    if (r != CUDA_SUCCESS) {
        char buf[200];
        fprintf(stderr, "bench: cuMemAlloc(%zu) failed: %s\n", bytes,
                fj_cuda_error_text(r, buf, sizeof buf));
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
    printf("%-28s %-12s %10s %9s %11s %-22s %-22s\n", "op", "shape", "us", "GB/s", "vs copy",
           "baseline 1 (x faster)", "baseline 2 (x faster)");
}

void bench_emit(bench_ctx *b, const bench_row *r)
{
    char b1[64] = "", b2[64] = "", roof[32] = "", gbs[32] = "";
    if (r->base1_name && r->base1_us > 0)
        snprintf(b1, sizeof b1, "%s %.1fx", r->base1_name, r->base1_us / r->us);
    if (r->base2_name && r->base2_us > 0)
        snprintf(b2, sizeof b2, "%s %.1fx", r->base2_name, r->base2_us / r->us);
    if (r->copy_us > 0)
        snprintf(roof, sizeof roof, "%.2fx", r->us / r->copy_us);
    if (r->bytes > 0)
        snprintf(gbs, sizeof gbs, "%.0f", r->bytes / (r->us * 1e3));
    printf("%-28s %-12s %10.2f %9s %11s %-22s %-22s%s%s\n", r->name, r->shape, r->us, gbs, roof,
           b1, b2, r->note ? "  " : "", r->note ? r->note : "");
    fflush(stdout);
    if (!b->json)
        return;
    fprintf(b->json, "%s\n  {\"group\": \"%s\", \"op\": \"%s\", \"shape\": \"%s\", \"us\": %.4f",
            b->json_rows++ ? "," : "", r->group, r->name, r->shape, r->us);
    if (r->bytes > 0)
        fprintf(b->json, ", \"bytes\": %.0f, \"gb_per_s\": %.2f", r->bytes,
                r->bytes / (r->us * 1e3));
    if (r->copy_us > 0)
        fprintf(b->json, ", \"copy_us\": %.4f, \"time_vs_copy\": %.4f", r->copy_us,
                r->us / r->copy_us);
    if (r->base1_name && r->base1_us > 0)
        fprintf(b->json, ", \"baseline1\": \"%s\", \"baseline1_us\": %.4f, \"speedup1\": %.3f",
                r->base1_name, r->base1_us, r->base1_us / r->us);
    if (r->base2_name && r->base2_us > 0)
        fprintf(b->json, ", \"baseline2\": \"%s\", \"baseline2_us\": %.4f, \"speedup2\": %.3f",
                r->base2_name, r->base2_us, r->base2_us / r->us);
    if (r->note)
        fprintf(b->json, ", \"note\": \"%s\"", r->note);
    fprintf(b->json, "}");
}
