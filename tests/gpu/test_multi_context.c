/* gpu suite: one runtime per CUcontext, one thread per context, all running
 * ops at once on a shared cache. With several GPUs each thread drives its own
 * device; with one GPU the extra threads get contexts of their own on it.
 * Every thread's results must equal, bit for bit, the single-threaded results
 * on the primary context, and a variant no one has compiled yet, asked for by
 * every thread at the same moment, must be compiled exactly once. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"

#define N_SORT 100003
#define ROWS 8192
#define COLS 42
#define N_BCE 10240
#define REPEATS 20
#define MAX_THREADS 8

typedef struct inputs {
    float x[ROWS * COLS];
    uint32_t keys[N_SORT], vals[N_SORT];
    float rewards[N_SORT];
    float z[N_BCE], y[N_BCE];
} inputs;

typedef struct outputs {
    float colsum[COLS];
    float fresh[13];
    uint32_t keys[N_SORT], vals[N_SORT];
    float rank[N_SORT];
    float loss;
    float dz[N_BCE];
} outputs;

static inputs in;
static outputs want;

typedef struct worker {
    int index;
    CUdevice device;
    CUcontext ctx;
    int own_ctx;
    pthread_barrier_t *start;
    outputs got;
    foxjit_counters counters;
    char error[1024];
    int mismatches;
} worker;

#define W_CHECK(w, call)                                                               \
    do {                                                                               \
        foxjit_status st_ = (call);                                                    \
        if (st_ != FOXJIT_OK) {                                                        \
            snprintf((w)->error, sizeof (w)->error, "%s: %s", #call, foxjit_last_error()); \
            goto done;                                                                 \
        }                                                                              \
    } while (0)

#define W_CU(w, call)                                                                  \
    do {                                                                               \
        if ((call) != CUDA_SUCCESS) {                                                  \
            snprintf((w)->error, sizeof (w)->error, "%s failed", #call);              \
            goto done;                                                                 \
        }                                                                              \
    } while (0)

/* Runs every op once on rt/stream into o; buffers allocated in the current
 * context. Returns 0, or -1 with the error in w. */
static void run_ops(worker *w, foxjit_runtime *rt, CUstream stream, outputs *o, int repeats,
                    int do_fresh, pthread_barrier_t *before_fresh)
{
    const fj_cuda *cu = gh.cu;
    CUdeviceptr x = 0, out = 0, fresh_x = 0, fresh_out = 0, k = 0, v = 0, ko = 0, vo = 0,
                ws = 0, r = 0, rank = 0, rws = 0, z = 0, y = 0, loss = 0, dz = 0;
    size_t sort_ws = 0, rank_ws = 0;
    W_CHECK(w, foxjit_radix_sort_pairs_workspace_size(rt, N_SORT, 0, 32, &sort_ws));
    W_CHECK(w, foxjit_rank_normalize_workspace_size(rt, N_SORT, FOXJIT_TIES_MAX, &rank_ws));
    W_CU(w, cu->cuMemAlloc(&x, sizeof in.x));
    W_CU(w, cu->cuMemAlloc(&out, COLS * 4));
    W_CU(w, cu->cuMemAlloc(&fresh_x, 777 * 13 * 4));
    W_CU(w, cu->cuMemAlloc(&fresh_out, 13 * 4));
    W_CU(w, cu->cuMemAlloc(&k, N_SORT * 4));
    W_CU(w, cu->cuMemAlloc(&v, N_SORT * 4));
    W_CU(w, cu->cuMemAlloc(&ko, N_SORT * 4));
    W_CU(w, cu->cuMemAlloc(&vo, N_SORT * 4));
    W_CU(w, cu->cuMemAlloc(&ws, sort_ws));
    W_CU(w, cu->cuMemAlloc(&r, N_SORT * 4));
    W_CU(w, cu->cuMemAlloc(&rank, N_SORT * 4));
    W_CU(w, cu->cuMemAlloc(&rws, rank_ws));
    W_CU(w, cu->cuMemAlloc(&z, N_BCE * 4));
    W_CU(w, cu->cuMemAlloc(&y, N_BCE * 4));
    W_CU(w, cu->cuMemAlloc(&loss, 4));
    W_CU(w, cu->cuMemAlloc(&dz, N_BCE * 4));
    W_CU(w, cu->cuMemcpyHtoD(x, in.x, sizeof in.x));
    W_CU(w, cu->cuMemcpyHtoD(fresh_x, in.x, 777 * 13 * 4));
    W_CU(w, cu->cuMemcpyHtoD(k, in.keys, sizeof in.keys));
    W_CU(w, cu->cuMemcpyHtoD(v, in.vals, sizeof in.vals));
    W_CU(w, cu->cuMemcpyHtoD(r, in.rewards, sizeof in.rewards));
    W_CU(w, cu->cuMemcpyHtoD(z, in.z, sizeof in.z));
    W_CU(w, cu->cuMemcpyHtoD(y, in.y, sizeof in.y));
    W_CU(w, cu->cuCtxSynchronize());
    if (before_fresh)
        pthread_barrier_wait(before_fresh); /* everyone asks for the new variant at once */
    if (do_fresh)
        W_CHECK(w, foxjit_column_sum(rt, fresh_x, 777, 13, fresh_out, 0, stream));
    for (int i = 0; i < repeats; i++) {
        W_CHECK(w, foxjit_reduce_axis0(rt, x, ROWS, COLS, out, stream));
        W_CHECK(w, foxjit_radix_sort_pairs(rt, k, v, ko, vo, N_SORT, 0, 32, ws, sort_ws, stream));
        W_CHECK(w, foxjit_rank_normalize(rt, r, N_SORT, 1.5f, 0.25f, FOXJIT_TIES_MAX, rank, rws,
                                         rank_ws, stream));
        W_CHECK(w, foxjit_bce_with_logits(rt, z, y, N_BCE, loss, 0, dz, stream));
    }
    W_CU(w, cu->cuStreamSynchronize(stream));
    W_CU(w, cu->cuMemcpyDtoH(o->colsum, out, sizeof o->colsum));
    if (do_fresh)
        W_CU(w, cu->cuMemcpyDtoH(o->fresh, fresh_out, sizeof o->fresh));
    W_CU(w, cu->cuMemcpyDtoH(o->keys, ko, sizeof o->keys));
    W_CU(w, cu->cuMemcpyDtoH(o->vals, vo, sizeof o->vals));
    W_CU(w, cu->cuMemcpyDtoH(o->rank, rank, sizeof o->rank));
    W_CU(w, cu->cuMemcpyDtoH(&o->loss, loss, 4));
    W_CU(w, cu->cuMemcpyDtoH(o->dz, dz, sizeof o->dz));
done:;
    CUdeviceptr all[] = {x, out, fresh_x, fresh_out, k, v, ko, vo, ws, r, rank, rws, z, y, loss, dz};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i])
            cu->cuMemFree(all[i]);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    const fj_cuda *cu = gh.cu;
    foxjit_runtime *rt = NULL;
    CUstream stream = NULL;
    if (cu->cuCtxSetCurrent(w->ctx) != CUDA_SUCCESS ||
        cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        snprintf(w->error, sizeof w->error, "thread %d: no context or stream", w->index);
        pthread_barrier_wait(w->start);
        return NULL;
    }
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.cache_dir = gh.cache_dir;
    if (foxjit_runtime_create(&p, &rt) != FOXJIT_OK) {
        snprintf(w->error, sizeof w->error, "thread %d: %s", w->index, foxjit_last_error());
        pthread_barrier_wait(w->start);
        return NULL;
    }
    run_ops(w, rt, stream, &w->got, REPEATS, 1, w->start);
    foxjit_runtime_get_counters(rt, &w->counters);
    foxjit_runtime_destroy(&rt);
    cu->cuStreamDestroy(stream);
    return NULL;
}

static void make_inputs(void)
{
    uint64_t s = gh_seed() * 31 + 5;
    gh_fill_uniform(in.x, ROWS * COLS, &s, -1, 1);
    for (int i = 0; i < N_SORT; i++) {
        in.keys[i] = (uint32_t)gh_next(&s);
        in.vals[i] = (uint32_t)i;
        in.rewards[i] = gh_uniform(&s, -3, 3);
    }
    gh_fill_uniform(in.z, N_BCE, &s, -8, 8);
    for (int i = 0; i < N_BCE; i++)
        in.y[i] = gh_next(&s) % 2 ? 1.0f : 0.0f;
}

static int differs(const outputs *a, const outputs *b)
{
    return memcmp(a->colsum, b->colsum, sizeof a->colsum) ||
           memcmp(a->fresh, b->fresh, sizeof a->fresh) ||
           memcmp(a->keys, b->keys, sizeof a->keys) || memcmp(a->vals, b->vals, sizeof a->vals) ||
           memcmp(a->rank, b->rank, sizeof a->rank) || memcmp(&a->loss, &b->loss, 4) ||
           memcmp(a->dz, b->dz, sizeof a->dz);
}

static void test_threads_per_context_match_single_thread(void **state)
{
    (void)state;
    make_inputs();
    /* The reference: the harness's runtime on device 0's primary context,
     * which also compiles every variant but the 777x13 column sum. */
    worker ref = {.index = -1};
    run_ops(&ref, gh.rt, gh.stream, &want, 1, 0, NULL);
    if (ref.error[0])
        fail_msg("reference run: %s", ref.error);

    int ndev = 0;
    GH_CU(gh.cu->cuDeviceGetCount(&ndev));
    int nthreads = ndev >= 2 ? (ndev > MAX_THREADS ? MAX_THREADS : ndev) : 4;
    static worker w[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)nthreads);
    for (int i = 0; i < nthreads; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].index = i;
        w[i].start = &start;
        GH_CU(gh.cu->cuDeviceGet(&w[i].device, i % ndev));
        if (ndev >= 2) {
            GH_CU(gh.cu->cuDevicePrimaryCtxRetain(&w[i].ctx, w[i].device));
        } else {
            GH_CU(gh.cu->cuCtxCreate(&w[i].ctx, NULL, 0, w[i].device));
            w[i].own_ctx = 1;
            GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx)); /* cuCtxCreate made it current */
        }
    }
    printf("  %d threads on %d GPU(s), %s\n", nthreads, ndev,
           ndev >= 2 ? "one primary context per GPU" : "one context each on GPU 0");
    pthread_t tid[MAX_THREADS];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&tid[i], NULL, worker_main, &w[i]);
    uint64_t compiles = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(tid[i], NULL);
        compiles += w[i].counters.compiles;
    }
    pthread_barrier_destroy(&start);
    GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx));
    for (int i = 0; i < nthreads; i++) {
        if (w[i].own_ctx)
            gh.cu->cuCtxDestroy(w[i].ctx);
        else
            gh.cu->cuDevicePrimaryCtxRelease(w[i].device);
    }
    /* The new variant's reference result, now from the shared image. */
    outputs *again = calloc(1, sizeof *again);
    run_ops(&ref, gh.rt, gh.stream, again, 1, 1, NULL);
    if (ref.error[0])
        fail_msg("reference run: %s", ref.error);
    memcpy(want.fresh, again->fresh, sizeof want.fresh);
    free(again);
    for (int i = 0; i < nthreads; i++) {
        if (w[i].error[0])
            fail_msg("thread %d: %s", i, w[i].error);
        if (differs(&w[i].got, &want))
            fail_msg("thread %d (device %d) differs from the single-threaded run", i,
                     i % ndev);
    }
    /* The 777x13 column sum was new to every runtime: one compile in all. */
    if (compiles != 1)
        fail_msg("%llu compiles across %d runtimes for one new variant; single flight wants 1",
                 (unsigned long long)compiles, nthreads);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_per_context_match_single_thread),
    };
    return gh_main("gpu/multi_context", tests, sizeof tests / sizeof tests[0]);
}
