/* gpu suite: one runtime per CUcontext, one thread per context, all running
 * ops at once on a shared cache. With several GPUs each thread drives its own
 * device; with one GPU the extra threads get contexts of their own on it.
 * Every op runs: column sums, radix sort, rank normalization, BCE, and the
 * perception ops (VSN, CfC step, GRN heads, attention pooling, each forward
 * and backward) with the step counter and AdamW, at the trainer's dims.
 * Every thread's results must equal, bit for bit, the single-threaded results
 * on the primary context, and a variant no one has compiled yet, asked for by
 * every thread at the same moment, must be compiled exactly once. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_harness.h"
#include "colsum/op.h"

/* Full sizes (the arrays below hold them); quick mode (FOXJIT_TEST_QUICK=1)
 * runs fewer rows, pairs and repeats on fewer threads (see the variables
 * after the arrays). */
#define N_SORT 100003
#define ROWS 8192
#define COLS 42
#define N_BCE 10240
#define REPEATS 20
#define MAX_THREADS 8
/* Quick: 20011 pairs are still 4 onesweep tiles (the last partial) and 2
 * histogram blocks (as test_rank.c checks for its quick sizes); 1024 x 42
 * takes the column-sum plan of 8192 x 42 (checked in make_inputs). */
#define QUICK_N_SORT 20011
#define QUICK_ROWS 1024
#define QUICK_REPEATS 2
#define QUICK_THREADS 2

/* Perception ops at the trainer's dims (kernels.md), a small batch. */
#define PB 4
#define PT 8
#define PF 40
#define PD 128
#define PE 64
#define PH 5
#define NADAM 1000

/* Every perception input, then every output, back to back in one buffer
 * each (offsets in floats, from pc_layout). */
typedef struct pc_layout {
    size_t in_floats, out_floats;
    /* inputs */
    size_t vx, vw, vb, vdy;
    size_t cw_in, cw_rec, cb, ctau, cx, ch, cdt, cdh_out;
    size_t hw1, hb1, hw2, hb2, hwg, hbg, hwm, hbm, hws, hbs, hx, hdlog;
    size_t aq, ahs, adp;
    size_t ap, ag, am, av;
    /* outputs */
    size_t vy, vdx, vdw, vdb;
    size_t ch_out, cu, cdh, cdx, cdw_in, cdw_rec, cdb, cdtau;
    size_t hlog, hdx, hdw1, hdb1, hdw2, hdb2, hdwg, hdbg, hdwm, hdbm, hdws, hdbs;
    size_t apooled, adhs, adq;
    size_t op, om, ov, ostep;
} pc_layout;

static size_t pc_take(size_t *used, size_t n)
{
    size_t at = *used;
    *used += (n + 63) & ~(size_t)63;  /* 256-byte aligned */
    return at;
}

static pc_layout pc_layout_make(void)
{
    pc_layout l;
    size_t u = 0;
    l.vx = pc_take(&u, PB * PT * PF), l.vw = pc_take(&u, PF * PF), l.vb = pc_take(&u, PF);
    l.vdy = pc_take(&u, PB * PT * PF);
    l.cw_in = pc_take(&u, PD * PF), l.cw_rec = pc_take(&u, PD * PD), l.cb = pc_take(&u, PD);
    l.ctau = pc_take(&u, PD), l.cx = pc_take(&u, PB * PF), l.ch = pc_take(&u, PB * PD);
    l.cdt = pc_take(&u, PB), l.cdh_out = pc_take(&u, PB * PD);
    l.hw1 = pc_take(&u, PH * PE * PD), l.hb1 = pc_take(&u, PH * PE);
    l.hw2 = pc_take(&u, PH * PE * PE), l.hb2 = pc_take(&u, PH * PE);
    l.hwg = pc_take(&u, PH * PE), l.hbg = pc_take(&u, PH), l.hwm = pc_take(&u, PH * PE);
    l.hbm = pc_take(&u, PH), l.hws = pc_take(&u, PH * PD), l.hbs = pc_take(&u, PH);
    l.hx = pc_take(&u, PB * PD), l.hdlog = pc_take(&u, PB * PH);
    l.aq = pc_take(&u, PD), l.ahs = pc_take(&u, PB * PT * PD), l.adp = pc_take(&u, PB * PD);
    l.ap = pc_take(&u, NADAM), l.ag = pc_take(&u, NADAM), l.am = pc_take(&u, NADAM);
    l.av = pc_take(&u, NADAM);
    l.in_floats = u;
    u = 0;
    l.vy = pc_take(&u, PB * PT * PF), l.vdx = pc_take(&u, PB * PT * PF);
    l.vdw = pc_take(&u, PB * PF * PF), l.vdb = pc_take(&u, PB * PF);
    l.ch_out = pc_take(&u, PB * PD), l.cu = pc_take(&u, PB * PD), l.cdh = pc_take(&u, PB * PD);
    l.cdx = pc_take(&u, PB * PF), l.cdw_in = pc_take(&u, PB * PD * PF);
    l.cdw_rec = pc_take(&u, PB * PD * PD), l.cdb = pc_take(&u, PB * PD);
    l.cdtau = pc_take(&u, PB * PD);
    l.hlog = pc_take(&u, PB * PH), l.hdx = pc_take(&u, PB * PD);
    l.hdw1 = pc_take(&u, PB * PH * PE * PD), l.hdb1 = pc_take(&u, PB * PH * PE);
    l.hdw2 = pc_take(&u, PB * PH * PE * PE), l.hdb2 = pc_take(&u, PB * PH * PE);
    l.hdwg = pc_take(&u, PB * PH * PE), l.hdbg = pc_take(&u, PB * PH);
    l.hdwm = pc_take(&u, PB * PH * PE), l.hdbm = pc_take(&u, PB * PH);
    l.hdws = pc_take(&u, PB * PH * PD), l.hdbs = pc_take(&u, PB * PH);
    l.apooled = pc_take(&u, PB * PD), l.adhs = pc_take(&u, PB * PT * PD);
    l.adq = pc_take(&u, PB * PD);
    l.op = pc_take(&u, NADAM), l.om = pc_take(&u, NADAM), l.ov = pc_take(&u, NADAM);
    l.ostep = pc_take(&u, 1);
    l.out_floats = u;
    return l;
}

/* Enough for pc_layout_make's outputs (checked at run time). */
#define PC_OUT_MAX 420000

typedef struct inputs {
    float x[ROWS * COLS];
    uint32_t keys[N_SORT], vals[N_SORT];
    float rewards[N_SORT];
    float z[N_BCE], y[N_BCE];
    float *percep;   /* pc_layout's inputs */
} inputs;

typedef struct outputs {
    float colsum[COLS];
    float fresh[13];
    uint32_t keys[N_SORT], vals[N_SORT];
    float rank[N_SORT];
    float loss;
    float dz[N_BCE];
    float percep[PC_OUT_MAX];   /* pc_layout's outputs */
} outputs;

static pc_layout pl;

static inputs in;
static outputs want;
/* The sizes of this run: the full ones, or quick mode's (set by make_inputs). */
static int n_sort = N_SORT, rows = ROWS, n_repeats = REPEATS;

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

/* The perception ops, the step counter and AdamW, `repeats` times on
 * rt/stream into o->percep; each repeat starts from zeroed outputs (the
 * backwards add into their scratch) and the same AdamW state. Sets
 * w->error on failure. */
static void run_perception(worker *w, foxjit_runtime *rt, CUstream stream, outputs *o,
                           int repeats)
{
    const fj_cuda *cu = gh.cu;
    CUdeviceptr pin = 0, pout = 0;
    W_CU(w, cu->cuMemAlloc(&pin, pl.in_floats * 4));
    W_CU(w, cu->cuMemAlloc(&pout, pl.out_floats * 4));
    W_CU(w, cu->cuMemcpyHtoDAsync(pin, in.percep, pl.in_floats * 4, stream));
#define I(f) (pin + (CUdeviceptr)pl.f * 4)
#define O(f) (pout + (CUdeviceptr)pl.f * 4)
    const foxjit_vsn_args vsn = {.batch = PB, .t = PT, .f = PF, .w = I(vw), .bias = I(vb),
                                 .x = I(vx), .y = O(vy), .dy = I(vdy), .dx = O(vdx),
                                 .dx_accumulate = 0, .dw = O(vdw), .dbias = O(vdb)};
    const foxjit_cfc_args cfc = {.batch = PB, .n_in = PF, .n_hid = PD, .w_in = I(cw_in),
                                 .w_rec = I(cw_rec), .bias = I(cb), .tau = I(ctau),
                                 .x = I(cx), .h = I(ch), .dt = I(cdt), .u = O(cu),
                                 .h_out = O(ch_out), .dh_out = I(cdh_out), .dh = O(cdh),
                                 .dh_accumulate = 0, .dx = O(cdx), .dx_accumulate = 0,
                                 .dw_in = O(cdw_in), .dw_rec = O(cdw_rec), .dbias = O(cdb),
                                 .dtau = O(cdtau)};
    const foxjit_heads_args heads = {
        .batch = PB, .d = PD, .e = PE, .h = PH, .w1 = I(hw1), .b1 = I(hb1), .w2 = I(hw2),
        .b2 = I(hb2), .w_gate = I(hwg), .b_gate = I(hbg), .w_main = I(hwm), .b_main = I(hbm),
        .w_skip = I(hws), .b_skip = I(hbs), .x = I(hx), .logits = O(hlog),
        .dlogits = I(hdlog), .dx = O(hdx), .dx_accumulate = 0, .dw1 = O(hdw1),
        .db1 = O(hdb1), .dw2 = O(hdw2), .db2 = O(hdb2), .dw_gate = O(hdwg),
        .db_gate = O(hdbg), .dw_main = O(hdwm), .db_main = O(hdbm), .dw_skip = O(hdws),
        .db_skip = O(hdbs)};
    const foxjit_attn_pool_args attn = {.batch = PB, .t = PT, .d = PD, .q = I(aq),
                                        .hs = I(ahs), .pooled = O(apooled), .dpooled = I(adp),
                                        .dhs = O(adhs), .dhs_accumulate = 0, .dq = O(adq)};
    const foxjit_adamw_args adamw = {.n = NADAM, .param = O(op), .grad = I(ag), .m = O(om),
                                     .v = O(ov), .step = O(ostep), .lr = 1e-2f, .beta1 = 0.9f,
                                     .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f};
    for (int i = 0; i < repeats; i++) {
        W_CU(w, cu->cuMemsetD32Async(pout, 0, pl.out_floats, stream));
        W_CU(w, cu->cuMemcpyDtoDAsync(O(op), I(ap), NADAM * 4, stream));
        W_CU(w, cu->cuMemcpyDtoDAsync(O(om), I(am), NADAM * 4, stream));
        W_CU(w, cu->cuMemcpyDtoDAsync(O(ov), I(av), NADAM * 4, stream));
        W_CHECK(w, foxjit_vsn_forward(rt, &vsn, stream));
        W_CHECK(w, foxjit_vsn_backward(rt, &vsn, stream));
        W_CHECK(w, foxjit_cfc_forward(rt, &cfc, stream));
        W_CHECK(w, foxjit_cfc_backward(rt, &cfc, stream));
        W_CHECK(w, foxjit_heads_forward(rt, &heads, stream));
        W_CHECK(w, foxjit_heads_backward(rt, &heads, stream));
        W_CHECK(w, foxjit_attn_pool_forward(rt, &attn, stream));
        W_CHECK(w, foxjit_attn_pool_backward(rt, &attn, stream));
        /* Two AdamW updates: step 1, then step 2 from the device counter. */
        for (int k = 0; k < 2; k++) {
            W_CHECK(w, foxjit_increment_step(rt, O(ostep), stream));
            W_CHECK(w, foxjit_adamw(rt, &adamw, stream));
        }
    }
#undef I
#undef O
    W_CU(w, cu->cuMemcpyDtoHAsync(o->percep, pout, pl.out_floats * 4, stream));
    W_CU(w, cu->cuStreamSynchronize(stream));
done:
    if (pin)
        cu->cuMemFree(pin);
    if (pout)
        cu->cuMemFree(pout);
}

/* Runs every op once on rt/stream into o; buffers allocated in the current
 * context. Returns 0, or -1 with the error in w. */
static void run_ops(worker *w, foxjit_runtime *rt, CUstream stream, outputs *o, int repeats,
                    int do_fresh, pthread_barrier_t *before_fresh)
{
    const fj_cuda *cu = gh.cu;
    CUdeviceptr x = 0, out = 0, fresh_x = 0, fresh_out = 0, k = 0, v = 0, ko = 0, vo = 0,
                ws = 0, r = 0, rank = 0, rws = 0, z = 0, y = 0, loss = 0, dz = 0;
    size_t sort_ws = 0, rank_ws = 0;
    const size_t sort_bytes = (size_t)n_sort * 4, x_bytes = (size_t)rows * COLS * 4;
    W_CHECK(w, foxjit_radix_sort_pairs_workspace_size(rt, n_sort, 0, 32, &sort_ws));
    W_CHECK(w, foxjit_rank_normalize_workspace_size(rt, n_sort, FOXJIT_TIES_MAX, &rank_ws));
    W_CU(w, cu->cuMemAlloc(&x, x_bytes));
    W_CU(w, cu->cuMemAlloc(&out, COLS * 4));
    W_CU(w, cu->cuMemAlloc(&fresh_x, 777 * 13 * 4));
    W_CU(w, cu->cuMemAlloc(&fresh_out, 13 * 4));
    W_CU(w, cu->cuMemAlloc(&k, sort_bytes));
    W_CU(w, cu->cuMemAlloc(&v, sort_bytes));
    W_CU(w, cu->cuMemAlloc(&ko, sort_bytes));
    W_CU(w, cu->cuMemAlloc(&vo, sort_bytes));
    W_CU(w, cu->cuMemAlloc(&ws, sort_ws));
    W_CU(w, cu->cuMemAlloc(&r, sort_bytes));
    W_CU(w, cu->cuMemAlloc(&rank, sort_bytes));
    W_CU(w, cu->cuMemAlloc(&rws, rank_ws));
    W_CU(w, cu->cuMemAlloc(&z, N_BCE * 4));
    W_CU(w, cu->cuMemAlloc(&y, N_BCE * 4));
    W_CU(w, cu->cuMemAlloc(&loss, 4));
    W_CU(w, cu->cuMemAlloc(&dz, N_BCE * 4));
    W_CU(w, cu->cuMemcpyHtoD(x, in.x, x_bytes));
    W_CU(w, cu->cuMemcpyHtoD(fresh_x, in.x, 777 * 13 * 4));
    W_CU(w, cu->cuMemcpyHtoD(k, in.keys, sort_bytes));
    W_CU(w, cu->cuMemcpyHtoD(v, in.vals, sort_bytes));
    W_CU(w, cu->cuMemcpyHtoD(r, in.rewards, sort_bytes));
    W_CU(w, cu->cuMemcpyHtoD(z, in.z, sizeof in.z));
    W_CU(w, cu->cuMemcpyHtoD(y, in.y, sizeof in.y));
    W_CU(w, cu->cuCtxSynchronize());
    if (before_fresh)
        pthread_barrier_wait(before_fresh); /* everyone asks for the new variant at once */
    if (do_fresh)
        W_CHECK(w, foxjit_column_sum(rt, fresh_x, 777, 13, fresh_out, 0, stream));
    for (int i = 0; i < repeats; i++) {
        W_CHECK(w, foxjit_reduce_axis0(rt, x, rows, COLS, out, stream));
        W_CHECK(w, foxjit_radix_sort_pairs(rt, k, v, ko, vo, n_sort, 0, 32, ws, sort_ws, stream));
        W_CHECK(w, foxjit_rank_normalize(rt, r, n_sort, 1.5f, 0.25f, FOXJIT_TIES_MAX, rank, rws,
                                         rank_ws, stream));
        W_CHECK(w, foxjit_bce_with_logits(rt, z, y, N_BCE, loss, 0, dz, stream));
    }
    W_CU(w, cu->cuStreamSynchronize(stream));
    W_CU(w, cu->cuMemcpyDtoH(o->colsum, out, sizeof o->colsum));
    if (do_fresh)
        W_CU(w, cu->cuMemcpyDtoH(o->fresh, fresh_out, sizeof o->fresh));
    W_CU(w, cu->cuMemcpyDtoH(o->keys, ko, sort_bytes));
    W_CU(w, cu->cuMemcpyDtoH(o->vals, vo, sort_bytes));
    W_CU(w, cu->cuMemcpyDtoH(o->rank, rank, sort_bytes));
    W_CU(w, cu->cuMemcpyDtoH(&o->loss, loss, 4));
    W_CU(w, cu->cuMemcpyDtoH(o->dz, dz, sizeof o->dz));
    run_perception(w, rt, stream, o, repeats);
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
    run_ops(w, rt, stream, &w->got, n_repeats, 1, w->start);
    foxjit_runtime_get_counters(rt, &w->counters);
    foxjit_runtime_destroy(&rt);
    cu->cuStreamDestroy(stream);
    return NULL;
}

static void make_perception_inputs(uint64_t *s)
{
    pl = pc_layout_make();
    if (pl.out_floats > PC_OUT_MAX)
        fail_msg("perception outputs need %zu floats; raise PC_OUT_MAX", pl.out_floats);
    float *p = in.percep = calloc(pl.in_floats, sizeof(float));
    assert_non_null(p);
    gh_fill_uniform(p, pl.in_floats, s, -1, 1);
    /* The ranges the ops document: tau > 0, dt > 0, AdamW's v >= 0. */
    gh_fill_uniform(p + pl.ctau, PD, s, 0.5f, 4.0f);
    gh_fill_uniform(p + pl.cdt, PB, s, 0.25f, 1.75f);
    gh_fill_uniform(p + pl.av, NADAM, s, 0.0f, 1e-2f);
    /* Matrices at 1/sqrt(fan_in) keep the activations of order 1. */
    for (size_t i = 0; i < PD * PF; i++)
        p[pl.cw_in + i] *= 0.3f;
    for (size_t i = 0; i < PD * PD; i++)
        p[pl.cw_rec + i] *= 0.09f;
    for (size_t i = 0; i < PH * PE * PD; i++)
        p[pl.hw1 + i] *= 0.09f;
    for (size_t i = 0; i < PH * PE * PE; i++)
        p[pl.hw2 + i] *= 0.125f;
}

/* Quick mode's sizes, once their column-sum plan is known to be the full
 * size's (the buffers are cuMemAlloc'd: 16-byte aligned). */
static void choose_sizes(void)
{
    if (!gh_quick())
        return;
    fj_colsum_plan pf, pq;
    fj_colsum_plan_for(ROWS, COLS, fj_colsum_runtime_split_limit(gh.rt), 16, &pf);
    fj_colsum_plan_for(QUICK_ROWS, COLS, fj_colsum_runtime_split_limit(gh.rt), 16, &pq);
    if (!fj_variant_equal(&pf.variant, &pq.variant) || pf.split != pq.split ||
        pf.block != pq.block || pf.rows_mode != pq.rows_mode)
        fail_msg("quick mode: %d x %d does not take the column-sum plan of %d x %d (split %u "
                 "vs %u, block %u vs %u)", QUICK_ROWS, COLS, ROWS, COLS, pq.split, pf.split,
                 pq.block, pf.block);
    n_sort = QUICK_N_SORT, rows = QUICK_ROWS, n_repeats = QUICK_REPEATS;
}

static void make_inputs(void)
{
    uint64_t s = gh_seed() * 31 + 5;
    choose_sizes();
    make_perception_inputs(&s);
    gh_fill_uniform(in.x, (size_t)rows * COLS, &s, -1, 1);
    for (int i = 0; i < n_sort; i++) {
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
    const size_t sort_bytes = (size_t)n_sort * 4;
    return memcmp(a->colsum, b->colsum, sizeof a->colsum) ||
           memcmp(a->fresh, b->fresh, sizeof a->fresh) ||
           memcmp(a->keys, b->keys, sort_bytes) || memcmp(a->vals, b->vals, sort_bytes) ||
           memcmp(a->rank, b->rank, sort_bytes) || memcmp(&a->loss, &b->loss, 4) ||
           memcmp(a->dz, b->dz, sizeof a->dz) ||
           memcmp(a->percep, b->percep, pl.out_floats * sizeof(float));
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
    /* Bitwise equality of garbage would prove little: the perception
     * outputs are numbers (padding between them is zero). */
    for (size_t i = 0; i < pl.out_floats; i++)
        if (!isfinite(want.percep[i]))
            fail_msg("reference run: perception output float %zu is %g", i,
                     (double)want.percep[i]);

    int ndev = 0;
    GH_CU(gh.cu->cuDeviceGetCount(&ndev));
    /* Quick: 2 threads, on 2 GPUs when there are several. */
    const int most = gh_quick() ? QUICK_THREADS : MAX_THREADS;
    int nthreads = ndev >= 2 ? (ndev > most ? most : ndev) : GH_QUICK(4, QUICK_THREADS);
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
            CUcontext popped; /* cuCtxCreate pushed it on this thread's stack */
            GH_CU(gh.cu->cuCtxPopCurrent(&popped));
            GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx));
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
