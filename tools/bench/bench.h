/* `fox-jit bench`: CUDA-event timing with warm-up and medians, rotating
 * input buffers, and rows that put each figure next to its baselines and
 * the bandwidth roofline (a device-to-device copy of the same bytes,
 * measured in the same run). Speed claims come from here, never from tests. */
#ifndef FJ_BENCH_H
#define FJ_BENCH_H

#include <stddef.h>
#include <stdio.h>

#include "driver.h"
#include "foxjit/foxjit.h"

typedef struct bench_ctx {
    const ft_cuda *cu;   /* the tools' driver table (tools/common/driver.h) */
    CUdevice device;
    CUcontext ctx;
    CUstream stream;
    foxjit_runtime *rt;
    int samples;         /* timed samples; the median is reported */
    int warmup;          /* untimed samples first */
    int quick;           /* fewer samples and sizes (smoke runs) */
    FILE *json;          /* NULL: no JSON */
    int json_rows;
    char device_name[128];
    int sm_count;
    size_t l2_bytes;
    /* "sm_90 on NVIDIA H200", or "sm_89 plan on NVIDIA H200" under a target
     * override (FOXJIT_TARGET, --target): then every row says so. */
    char plan[192];
    int plan_overridden;
} bench_ctx;

/* Enqueues one call of the thing measured on ctx->stream; `iter` picks the
 * rotating buffer. Returns 0, or nonzero after printing why. */
typedef int (*bench_fn)(bench_ctx *b, void *ud, int iter);

/* Median time of one call in microseconds: each sample records an event,
 * enqueues `batch` calls back to back, records an event; the per-call time
 * is the sample / batch. Negative on failure. */
double bench_time_us(bench_ctx *b, bench_fn fn, void *ud, int batch);

/* The same, with the batch captured once into a CUDA graph and the graph
 * replayed: GPU time without the CPU's launch cost. */
double bench_time_graph_us(bench_ctx *b, bench_fn fn, void *ud, int batch);

/* The median of v[0 .. n) (sorts v), and a monotonic CPU clock in
 * microseconds (host-side timings). */
double bench_median(double *v, int n);
double bench_now_us(void);

/* Time of a device-to-device copy of `bytes` (the roofline), rotating over
 * buffers larger than L2 together; eager and graph-replayed. */
void bench_copy_us(bench_ctx *b, size_t bytes, double *eager_us, double *graph_us);

/* How many rotating copies of an input of `bytes` to allocate so that the
 * set is at least twice L2 (capped at max_copies). */
int bench_rotation(const bench_ctx *b, size_t bytes, int max_copies);

/* One result row. baseline_us <= 0 omits a ratio; copy_us <= 0 omits the
 * roofline ratio. bytes = bytes the op must move (for GB/s). */
typedef struct bench_row {
    const char *group;    /* "colsum" */
    const char *name;     /* "bias_grad_reduce" */
    char shape[64];       /* "8192x42" */
    double us, graph_us;  /* per call: launched eagerly / replayed from a graph */
    double bytes;
    double copy_us, copy_graph_us; /* copy of the same input bytes */
    const char *base1_name;
    double base1_us, base1_graph_us;
    const char *base2_name;
    double base2_us, base2_graph_us;
    const char *note;
} bench_row;

void bench_print_header(const char *title);
void bench_emit(bench_ctx *b, const bench_row *row);

/* The --json file, opened the one way every tool opens its outputs
 * (tools/common/output_file.h): a new file in the path's place, never
 * written through a link planted there. NULL after saying why (errno is
 * set); the caller ends it with fclose. */
FILE *bench_json_open(const char *path);

/* Device buffer helpers for benches (abort with a message on failure). */
CUdeviceptr bench_alloc(bench_ctx *b, size_t bytes);
void bench_free(bench_ctx *b, CUdeviceptr p);
void bench_fill_random(bench_ctx *b, CUdeviceptr p, size_t n_floats, unsigned seed);

/* ---- bench groups ----------------------------------------------------------
 * A group is a name `fox-jit bench GROUP` selects, a line of --help, and
 * the function that prints its rows. Groups named "*sweep*" run only when
 * asked for by name (developer sweeps, not in "all"). */
typedef struct bench_group {
    const char *name;
    const char *help;
    int (*run)(bench_ctx *b);
} bench_group;

/* An op's group: ops/<op>/bench.c, for an op of the op list
 * (ops/op_list.h), defines
 *     const bench_group bench_group_<op> = {"name", "help", run};
 * Meson builds every such file that exists and lists those ops, in op list
 * order, in the generated bench_ops.h as BENCH_OPS (BENCH_OP(op) each), so a
 * new op's bench is its one file. The group's name may differ from the op's
 * (rank_normalize's group is "rank"). */
#include "bench_ops.h"
#define BENCH_OP_DECLARE(op) extern const bench_group bench_group_##op;
BENCH_OPS(BENCH_OP_DECLARE)
#undef BENCH_OP_DECLARE

/* The groups that are no op's, with where each goes among the op groups:
 * `after` is the op whose group it follows, or BENCH_FIRST / BENCH_LAST
 * (before or after every op group). The order, which --help and "all"
 * follow: jit, colsum, launch, colsum_sweep, rank, rank_sweep, rank_profile, ...,
 * kloop,
 * kloop_seq. */
#define BENCH_FIRST "(first)"
#define BENCH_LAST "(last)"
#define BENCH_OTHER_GROUPS(X) \
    X(jit, BENCH_FIRST, "JIT cost: runtime creation to all column-sum kernels loaded from a warm cache") \
    X(launch, "colsum", "host cost of one call: raw cuLaunchKernel vs the fox-jit op, and the driver calls it makes") \
    X(colsum_sweep, "colsum", "developer sweep of column-sum block sizes and cluster splits, and of the split form's tunables (not in all)") \
    X(rank_sweep, "rank_normalize", "developer sweep of onesweep tile shapes for the sort and the rank op (not in all)") \
    X(rank_profile, "rank_normalize", "developer target for a profiler: each sort and rank form called once at 4096000 and 2^24, untimed (not in all)") \
    X(kloop, BENCH_LAST, "perception K-loop training step: legacy vs block-per-batch eager vs CUDA graph, B = 32, 128, 512") \
    X(kloop_seq, BENCH_LAST, "developer run of kloop's sequence path alone: its step and per-op rows at B = 32, 128, 512, without the per-step and legacy paths (not in all)")

#define BENCH_DECLARE(name, after, help) int bench_##name(bench_ctx *b);
BENCH_OTHER_GROUPS(BENCH_DECLARE)
#undef BENCH_DECLARE

#endif
