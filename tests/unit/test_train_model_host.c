/* unit: fox-train's step driver (tools/fox-train/model.c) against a host
 * emulation of the foxjit_api table and the driver, no GPU.
 *
 * The emulated ops keep float32 tensors in host memory ("device pointers"
 * are host addresses) and compute each op of kernels.md with the float64
 * reference (tests/ref/perception_ref.c), honouring strides, the
 * accumulate flags, per-batch scratch and the reducers exactly as the
 * public API documents them. So this checks the call sequence of a step
 * (views, strides, flags, the order of kernels.md, the loss, AdamW's
 * arguments) independently of the kernels: the gradient the driver
 * produces must be the reference model's, and one update must be AdamW's.
 * Copies to host memory arrive only when the host waits for them (an
 * event, the stream), so the training loops' reads of their losses are
 * checked against their waits too. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/fd_capture.h"
#include "args.h"
#include "data.h"
#include "dump.h"
#include "env.h"
#include "feed.h"
#include "model.h"
#include "pacer.h"
#include "params.h"
#include "perception_ref.h"
#include "train.h"

/* ---- host "device" memory and driver ------------------------------------ */

#define HP(p) ((float *)(uintptr_t)(p))

static void trace_add(const char *what, CUstream s, CUevent e, CUdeviceptr work,
                      CUdeviceptr grad);

static CUresult h_alloc(CUdeviceptr *p, size_t n)
{
    void *m = aligned_alloc(256, (n + 255) & ~(size_t)255);
    /* NaN fill: anything read before it is written shows up. */
    for (size_t i = 0; m && i < n / 4; i++)
        ((uint32_t *)m)[i] = 0x7fc00000u;
    *p = (CUdeviceptr)(uintptr_t)m;
    return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
/* ---- copies between the host and the "device" ----------------------------------
 * The emulated ops run at once, in the order they are queued, but the
 * copies to and from host memory run when the real ones could be seen to
 * have run, so that a missing wait shows:
 *  - a copy to the host (cuMemcpyDtoHAsync) takes its bytes when queued
 *    (what its stream computed up to there) and writes them to the host
 *    only when the host waits for it: an event recorded after it on its
 *    stream (cuEventSynchronize, or cuEventQuery saying done), or its
 *    stream (cuStreamSynchronize); into pageable memory it is done when
 *    the call returns, as the driver's is;
 *  - a copy from pinned host memory (cuMemAllocHost) reads it when it
 *    runs: before the next op, copy or collective of its stream, when
 *    another stream waits for an event recorded after it
 *    (cuStreamWaitEvent), or when the host waits as above. A copy from
 *    other host memory takes its bytes when queued (as the driver stages
 *    pageable memory) and writes them then too.
 * Copies of a stream run in the order they were queued. So a loop that
 * reads its losses or an exchange's result before waiting for them, a
 * stream that reads an upload it did not wait for, or a host that
 * rewrites a staging buffer an upload still reads, gets other bytes
 * (allocations start as NaN), and its test sees it. Copies still pending
 * into or out of memory that is freed are dropped and counted in
 * pending_dropped (a GPU would use freed memory). Not modelled: a copy to
 * the host that the host waits for only through another stream (an event
 * of a stream that waited for its stream); fox-train waits for a copy on
 * its own stream. */
typedef struct pending_copy {
    void *dst;
    const void *src;     /* pinned host memory read when the copy runs, or NULL: data */
    void *data;          /* the bytes taken when queued */
    size_t n;
    CUstream s;
    uint64_t seq;
    int to_device;
    struct pending_copy *next;
} pending_copy;
static pthread_mutex_t pending_mu = PTHREAD_MUTEX_INITIALIZER;
static pending_copy *pending;       /* oldest first */
static uint64_t pending_seq;
static long pending_dropped;

/* Pinned allocations (cuMemAllocHost), by range. */
typedef struct pinned_block {
    const char *lo, *hi;
    struct pinned_block *next;
} pinned_block;
static pinned_block *pinned;

static int is_pinned(const void *p)
{
    int yes = 0;
    pthread_mutex_lock(&pending_mu);
    for (const pinned_block *b = pinned; b && !yes; b = b->next)
        yes = (const char *)p >= b->lo && (const char *)p < b->hi;
    pthread_mutex_unlock(&pending_mu);
    return yes;
}

static void free_copy(pending_copy *c)
{
    free(c->data);
    free(c);
}

/* Runs the copies of stream s (every stream when all) up to sequence upto. */
static void deliver(CUstream s, int all, uint64_t upto)
{
    pthread_mutex_lock(&pending_mu);
    for (pending_copy **pp = &pending; *pp;) {
        pending_copy *c = *pp;
        if ((all || c->s == s) && c->seq <= upto) {
            memcpy(c->dst, c->src ? c->src : c->data, c->n);
            *pp = c->next;
            free_copy(c);
        } else {
            pp = &c->next;
        }
    }
    pthread_mutex_unlock(&pending_mu);
}

/* What stream s does next sees its copies to the device queued up to
 * upto: they run (and the copies to the host queued before them). */
static void run_to_device(CUstream s, uint64_t upto)
{
    uint64_t last = 0;
    pthread_mutex_lock(&pending_mu);
    for (const pending_copy *c = pending; c; c = c->next)
        if (c->to_device && c->s == s && c->seq <= upto)
            last = c->seq;
    pthread_mutex_unlock(&pending_mu);
    if (last)
        deliver(s, 0, last);
}
/* Before an op, copy or collective of stream s reads device memory. */
static void stream_runs(CUstream s)
{
    run_to_device(s, UINT64_MAX);
}

/* Queues a copy: from pinned host memory src (read when it runs), or of
 * `data` (a malloc'ed copy of the bytes, taken now). */
static CUresult queue_copy(void *dst, const void *src, void *data, size_t n, CUstream st,
                           int to_device)
{
    pending_copy *c = malloc(sizeof *c);
    if (!c) {
        free(data);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *c = (pending_copy){dst, src, data, n, st, 0, to_device, NULL};
    pthread_mutex_lock(&pending_mu);
    c->seq = ++pending_seq;
    pending_copy **pp = &pending;
    while (*pp)
        pp = &(*pp)->next;
    *pp = c;
    pthread_mutex_unlock(&pending_mu);
    return CUDA_SUCCESS;
}

/* Drops the pending copies into or out of [lo, hi) (freed memory). */
static void drop_copies(const char *lo, const char *hi)
{
    pthread_mutex_lock(&pending_mu);
    for (pending_copy **pp = &pending; *pp;) {
        pending_copy *c = *pp;
        const char *d = c->dst, *sp = c->src;
        if ((d >= lo && d < hi) || (sp && sp >= lo && sp < hi)) {
            *pp = c->next;
            free_copy(c);
            pending_dropped++;
        } else {
            pp = &c->next;
        }
    }
    pthread_mutex_unlock(&pending_mu);
}

static CUresult h_free(CUdeviceptr p)
{
    void *m = (void *)(uintptr_t)p;
    if (m)
        drop_copies(m, (const char *)m + malloc_usable_size(m));
    free(m);
    return CUDA_SUCCESS;
}

static CUresult h_htod(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
    void *dst = (void *)(uintptr_t)d;
    if (is_pinned(s))
        return queue_copy(dst, s, NULL, n, st, 1);
    /* Pageable: staged when queued, and written now, after the stream's
     * earlier copies. */
    stream_runs(st);
    memcpy(dst, s, n);
    return CUDA_SUCCESS;
}
static CUresult h_dtoh(void *d, CUdeviceptr s, size_t n, CUstream st)
{
    stream_runs(st);
    if (!is_pinned(d)) {
        /* Into pageable memory the driver returns once the copy is done:
         * after the stream's earlier work (all of it here, at once). */
        deliver(st, 0, UINT64_MAX);
        memcpy(d, (const void *)(uintptr_t)s, n);
        return CUDA_SUCCESS;
    }
    void *data = malloc(n ? n : 1);
    if (!data)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(data, (const void *)(uintptr_t)s, n);
    return queue_copy(d, NULL, data, n, st, 0);
}
static CUresult h_memset32(CUdeviceptr d, unsigned v, size_t n, CUstream st)
{
    trace_add("memset", st, NULL, 0, 0);
    for (size_t i = 0; i < n; i++)
        ((uint32_t *)(uintptr_t)d)[i] = v;
    return CUDA_SUCCESS;
}
static CUresult h_sync(CUstream s)
{
    /* The stream's own copies: fox-train's streams are non-blocking, so
     * even the NULL stream's synchronize does not wait for theirs. */
    deliver(s, 0, UINT64_MAX);
    return CUDA_SUCCESS;
}
static CUresult h_dtod(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream st)
{
    stream_runs(st);
    memcpy((void *)(uintptr_t)d, (const void *)(uintptr_t)src, n);
    return CUDA_SUCCESS;
}
static CUresult h_alloc_host(void **p, size_t n)
{
    *p = aligned_alloc(256, (n + 255) & ~(size_t)255);
    pinned_block *b = malloc(sizeof *b);
    if (!*p || !b) {
        free(*p), free(b);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    /* NaN fill, as h_alloc: a copy read before it arrived shows up. */
    for (size_t i = 0; i < n / 4; i++)
        ((uint32_t *)*p)[i] = 0x7fc00000u;
    b->lo = *p, b->hi = (const char *)*p + n;
    pthread_mutex_lock(&pending_mu);
    b->next = pinned, pinned = b;
    pthread_mutex_unlock(&pending_mu);
    return CUDA_SUCCESS;
}
static CUresult h_free_host(void *p)
{
    if (p) {
        drop_copies(p, (const char *)p + malloc_usable_size(p));
        pthread_mutex_lock(&pending_mu);
        for (pinned_block **pp = &pinned; *pp; pp = &(*pp)->next)
            if ((*pp)->lo == p) {
                pinned_block *b = *pp;
                *pp = b->next;
                free(b);
                break;
            }
        pthread_mutex_unlock(&pending_mu);
    }
    free(p);
    return CUDA_SUCCESS;
}
/* ---- what a step enqueues on which stream -------------------------------------- */

/* While `tracing`, every emulated op, memset, event record and stream wait
 * appends what it was, its stream and its event (the ops: the workspace
 * and the first gradient they were given), so a test can check the step's
 * streams, forks and joins. */
#define TRACE_MAX 64
typedef struct trace_entry {
    char what[32];
    CUstream s;
    CUevent e;
    CUdeviceptr work, grad;
} trace_entry;
static trace_entry trace[TRACE_MAX];
static int trace_n, tracing;

static void trace_add(const char *what, CUstream s, CUevent e, CUdeviceptr work, CUdeviceptr grad)
{
    /* An op or memset reads what its stream's earlier copies wrote. */
    if (strcmp(what, "record") && strcmp(what, "wait"))
        stream_runs(s);
    if (!tracing)
        return;
    assert_true(trace_n < TRACE_MAX);
    trace_entry *t = &trace[trace_n++];
    snprintf(t->what, sizeof t->what, "%s", what);
    t->s = s, t->e = e, t->work = work, t->grad = grad;
}

/* An event: where it was last recorded (its stream, and the last copy to
 * the host queued before it). Distinct handles (a trace tells fork from
 * join); the multi-GPU tests create them on several threads at once. */
typedef struct h_event_state {
    CUstream s;
    uint64_t seq;
} h_event_state;
static CUresult h_event_create(CUevent *e, unsigned flags)
{
    (void)flags;
    h_event_state *st = calloc(1, sizeof *st);
    *e = (CUevent)st;
    return st ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult h_event_destroy(CUevent e)
{
    free(e);
    return CUDA_SUCCESS;
}
static CUresult h_event_sync(CUevent e)
{
    const h_event_state *st = (const h_event_state *)e;
    deliver(st->s, 0, st->seq);
    return CUDA_SUCCESS;
}
/* Everything ran: an event is always done, once its copies are delivered. */
static CUresult h_event_query_done(CUevent e)
{
    return h_event_sync(e);
}
static CUresult h_event_record(CUevent e, CUstream s)
{
    trace_add("record", s, e, 0, 0);
    h_event_state *st = (h_event_state *)e;
    pthread_mutex_lock(&pending_mu);
    st->s = s, st->seq = pending_seq;
    pthread_mutex_unlock(&pending_mu);
    return CUDA_SUCCESS;
}
/* Streams: every emulated op runs at once on the host, so the sequence
 * path's second stream and its waits only have to exist (a stream only
 * decides which copies to the host an event delivers, above). */
static CUresult m_stream_create(CUstream *s, unsigned flags)
{
    (void)flags;
    /* Distinct streams (a copy's delivery goes by its stream), clear of
     * the handles the tests use themselves (0x77). */
    static uintptr_t next = 0x1000;
    *s = (CUstream)__atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
}
/* The priority the second stream was made with (a GPU's range: 0 the
 * least, -5 the greatest, as on an H200). */
static int side_priority = 99;
static CUresult m_priority_range(int *least, int *greatest)
{
    *least = 0, *greatest = -5;
    return CUDA_SUCCESS;
}
static CUresult m_stream_create_priority(CUstream *s, unsigned flags, int priority)
{
    __atomic_store_n(&side_priority, priority, __ATOMIC_RELAXED);   /* ranks are threads */
    return m_stream_create(s, flags);
}
static CUresult m_stream_destroy(CUstream s) { (void)s; return CUDA_SUCCESS; }
static CUresult m_stream_wait_event(CUstream s, CUevent e, unsigned flags)
{
    (void)flags;
    trace_add("wait", s, e, 0, 0);
    /* What s does next sees the copies to the device queued before e. */
    const h_event_state *st = (const h_event_state *)e;
    run_to_device(st->s, st->seq);
    return CUDA_SUCCESS;
}

/* ---- emulated ops ----------------------------------------------------------- */

static double *dup_d(CUdeviceptr p, size_t n)
{
    double *d = malloc((n ? n : 1) * sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = HP(p)[i];
    return d;
}

static long long eff(int64_t stride, long long width) { return stride ? stride : width; }

/* out (+)= (float)v, the accumulate-or-overwrite rule of the API. */
static void store(float *out, const double *v, size_t n, int accumulate)
{
    for (size_t i = 0; i < n; i++)
        out[i] = accumulate ? out[i] + (float)v[i] : (float)v[i];
}

static void row_to_d(const float *src, double *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
}

static int calls;

static foxjit_status e_cfc_forward(foxjit_runtime *rt, const foxjit_cfc_args *a, CUstream s)
{
    stream_runs(s);
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);   /* ranks are threads */
    int I = a->n_in, Hd = a->n_hid;
    double *w_in = dup_d(a->w_in, (size_t)Hd * I), *w_rec = dup_d(a->w_rec, (size_t)Hd * Hd);
    double *bias = dup_d(a->bias, Hd), *tau = dup_d(a->tau, Hd);
    pr_cfc p = {I, Hd, w_in, w_rec, bias, tau};
    double x[512], h[512], ho[512], u[512];
    for (int b = 0; b < a->batch; b++) {
        row_to_d(HP(a->x) + b * eff(a->x_stride, I), x, I);
        if (a->h)
            row_to_d(HP(a->h) + b * eff(a->h_stride, Hd), h, Hd);
        double dt = HP(a->dt)[b * eff(a->dt_stride, 1)];
        pr_cfc_forward(&p, x, a->h ? h : NULL, dt, ho, u);
        store(HP(a->h_out) + b * eff(a->h_out_stride, Hd), ho, Hd, 0);
        store(HP(a->u) + b * eff(a->u_stride, Hd), u, Hd, 0);
    }
    free(w_in), free(w_rec), free(bias), free(tau);
    return FOXJIT_OK;
}

static foxjit_status e_cfc_backward(foxjit_runtime *rt, const foxjit_cfc_args *a, CUstream s)
{
    stream_runs(s);
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    int I = a->n_in, Hd = a->n_hid;
    double *w_in = dup_d(a->w_in, (size_t)Hd * I), *w_rec = dup_d(a->w_rec, (size_t)Hd * Hd);
    double *tau = dup_d(a->tau, Hd), *bias = dup_d(a->bias, Hd);
    pr_cfc p = {I, Hd, w_in, w_rec, bias, tau};
    double x[512], h[512], dho[512], dh[512], dx[512];
    double *gw_in = malloc((size_t)Hd * I * 8), *gw_rec = malloc((size_t)Hd * Hd * 8);
    double gb[512], gt[512];
    for (int b = 0; b < a->batch; b++) {
        row_to_d(HP(a->x) + b * eff(a->x_stride, I), x, I);
        if (a->h)
            row_to_d(HP(a->h) + b * eff(a->h_stride, Hd), h, Hd);
        row_to_d(HP(a->dh_out) + b * eff(a->dh_out_stride, Hd), dho, Hd);
        double dt = HP(a->dt)[b * eff(a->dt_stride, 1)];
        /* The kernel reads the forward's u: it must be this bar's. */
        double ho[512], u[512];
        pr_cfc_forward(&p, x, a->h ? h : NULL, dt, ho, u);
        const float *saved = HP(a->u) + b * eff(a->u_stride, Hd);
        for (int i = 0; i < Hd; i++)
            if (!(fabs(saved[i] - u[i]) <= 1e-5))
                fail_msg("cfc_backward row %d: u[%d] = %.9g is not this bar's tanh(pre) "
                         "%.9g", b, i, (double)saved[i], u[i]);
        memset(dh, 0, sizeof dh), memset(dx, 0, sizeof dx);
        memset(gw_in, 0, (size_t)Hd * I * 8), memset(gw_rec, 0, (size_t)Hd * Hd * 8);
        memset(gb, 0, sizeof gb), memset(gt, 0, sizeof gt);
        pr_cfc_grads g = {gw_in, gw_rec, gb, gt};
        pr_cfc_backward(&p, x, a->h ? h : NULL, dt, dho, dh, dx, &g);
        if (a->dh)
            store(HP(a->dh) + b * eff(a->dh_stride, Hd), dh, Hd, a->dh_accumulate);
        if (a->dx)
            store(HP(a->dx) + b * eff(a->dx_stride, I), dx, I, a->dx_accumulate);
        store(HP(a->dw_in) + (size_t)b * Hd * I, gw_in, (size_t)Hd * I, 1);
        store(HP(a->dw_rec) + (size_t)b * Hd * Hd, gw_rec, (size_t)Hd * Hd, 1);
        store(HP(a->dbias) + (size_t)b * Hd, gb, Hd, 1);
        store(HP(a->dtau) + (size_t)b * Hd, gt, Hd, 1);
    }
    free(w_in), free(w_rec), free(tau), free(bias), free(gw_in), free(gw_rec);
    return FOXJIT_OK;
}

typedef struct heads_d {
    pr_heads p;
    double *t[10];
} heads_d;

static void heads_load(const foxjit_heads_args *a, heads_d *h)
{
    size_t D = a->d, E = a->e, H = a->h;
    const CUdeviceptr src[10] = {a->w1, a->b1, a->w2, a->b2, a->w_gate,
                                 a->b_gate, a->w_main, a->b_main, a->w_skip, a->b_skip};
    const size_t n[10] = {H * E * D, H * E, H * E * E, H * E, H * E, H, H * E, H, H * D, H};
    for (int i = 0; i < 10; i++)
        h->t[i] = dup_d(src[i], n[i]);
    h->p = (pr_heads){a->d, a->e, a->h, h->t[0], h->t[1], h->t[2], h->t[3], h->t[4],
                      h->t[5], h->t[6], h->t[7], h->t[8], h->t[9]};
}

static void heads_unload(heads_d *h)
{
    for (int i = 0; i < 10; i++)
        free(h->t[i]);
}

static int heads_steps(const foxjit_heads_args *a) { return a->steps > 1 ? a->steps : 1; }

/* A step stride in floats: 0 = packed after the batch rows. */
static int64_t step_of(int64_t given, int batch, int64_t row_stride, int width)
{
    return given ? given : batch * eff(row_stride, width);
}

static size_t e_heads_ws(int batch, int steps, int e, int h)
{
    return steps > 1 ? (size_t)steps * batch * h * (4 * (size_t)e + 4) * 4 : 0;
}

static foxjit_status e_heads_forward(foxjit_runtime *rt, const foxjit_heads_args *a,
                                     CUstream s)
{
    stream_runs(s);
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    heads_d h;
    heads_load(a, &h);
    double x[512], z[16];
    for (int st = 0; st < heads_steps(a); st++)
        for (int b = 0; b < a->batch; b++) {
            row_to_d(HP(a->x) + st * step_of(a->x_step_stride, a->batch, a->x_stride, a->d) +
                         b * eff(a->x_stride, a->d), x, a->d);
            pr_heads_forward(&h.p, x, z);
            store(HP(a->logits) +
                      st * step_of(a->logits_step_stride, a->batch, a->logits_stride, a->h) +
                      b * eff(a->logits_stride, a->h), z, a->h, 0);
        }
    heads_unload(&h);
    return FOXJIT_OK;
}

static foxjit_status e_heads_backward(foxjit_runtime *rt, const foxjit_heads_args *a,
                                      CUstream s)
{
    stream_runs(s);
    (void)rt, (void)s;
    calls += a->steps > 1 && a->work ? 2 : 1;  /* the library's launches */
    heads_d h;
    heads_load(a, &h);
    size_t D = a->d, E = a->e, H = a->h;
    const size_t n[10] = {H * E * D, H * E, H * E * E, H * E, H * E, H, H * E, H, H * D, H};
    const CUdeviceptr dst[10] = {a->dw1, a->db1, a->dw2, a->db2, a->dw_gate,
                                 a->db_gate, a->dw_main, a->db_main, a->dw_skip, a->db_skip};
    double *g[10];
    for (int i = 0; i < 10; i++)
        g[i] = malloc(n[i] * 8);
    double x[512], dz[16], dx[512];
    /* The steps from the last, as the library runs them. */
    for (int st = heads_steps(a) - 1; st >= 0; st--)
    for (int b = 0; b < a->batch; b++) {
        row_to_d(HP(a->x) + st * step_of(a->x_step_stride, a->batch, a->x_stride, a->d) +
                     b * eff(a->x_stride, a->d), x, a->d);
        row_to_d(HP(a->dlogits) +
                     st * step_of(a->dlogits_step_stride, a->batch, a->dlogits_stride, a->h) +
                     b * eff(a->dlogits_stride, a->h), dz, a->h);
        for (int i = 0; i < 10; i++)
            memset(g[i], 0, n[i] * 8);
        memset(dx, 0, sizeof dx);
        pr_heads_grads gr = {g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9]};
        pr_heads_backward(&h.p, x, dz, dx, &gr);
        if (a->dx)
            store(HP(a->dx) + st * step_of(a->dx_step_stride, a->batch, a->dx_stride, a->d) +
                      b * eff(a->dx_stride, a->d), dx, a->d, a->dx_accumulate);
        for (int i = 0; i < 10; i++)
            store(HP(dst[i]) + b * n[i], g[i], n[i], 1);
    }
    for (int i = 0; i < 10; i++)
        free(g[i]);
    heads_unload(&h);
    return FOXJIT_OK;
}

/* ---- the whole-sequence ops, emulated as the header documents them ----- */

static size_t cfc_seq_ws(int batch, int k, int n_hid)
{
    return (size_t)batch * k * n_hid * 4;
}

static foxjit_status e_cfc_seq_ws(foxjit_runtime *rt, int batch, int k, int n_in, int n_hid,
                                  size_t *bytes)
{
    (void)rt, (void)n_in;
    *bytes = cfc_seq_ws(batch, k, n_hid);
    return FOXJIT_OK;
}

static void cfc_seq_load(const foxjit_cfc_seq_args *a, pr_cfc *p)
{
    int I = a->n_in, Hd = a->n_hid;
    *p = (pr_cfc){I, Hd, dup_d(a->w_in, (size_t)Hd * I), dup_d(a->w_rec, (size_t)Hd * Hd),
                  dup_d(a->bias, Hd), dup_d(a->tau, Hd)};
}

static void cfc_seq_unload(pr_cfc *p)
{
    free((void *)p->w_in), free((void *)p->w_rec), free((void *)p->bias), free((void *)p->tau);
}

/* h_{t-1} of row b as doubles into h; returns h, or NULL for zeros. */
static double *cfc_seq_prev(const foxjit_cfc_seq_args *a, int b, int t, double *h)
{
    const int Hd = a->n_hid;
    if (t == 0 && !a->h_init)
        return NULL;
    row_to_d(t ? HP(a->h) + ((size_t)b * a->k + t - 1) * Hd : HP(a->h_init) + (size_t)b * Hd,
             h, Hd);
    return h;
}

static foxjit_status e_cfc_seq_forward(foxjit_runtime *rt, const foxjit_cfc_seq_args *a,
                                       CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("cfc_seq_forward", s, NULL, 0, 0);
    pr_cfc p;
    cfc_seq_load(a, &p);
    const int I = a->n_in, Hd = a->n_hid;
    double x[512], h[512], ho[512], u[512];
    for (int b = 0; b < a->batch; b++)
        for (int t = 0; t < a->k; t++) {
            size_t r = (size_t)b * a->k + t;
            row_to_d(HP(a->x) + r * I, x, I);
            pr_cfc_forward(&p, x, cfc_seq_prev(a, b, t, h), HP(a->dt)[r], ho, u);
            store(HP(a->h) + r * Hd, ho, Hd, 0);
            store(HP(a->u) + r * Hd, u, Hd, 0);
        }
    cfc_seq_unload(&p);
    return FOXJIT_OK;
}

static foxjit_status e_cfc_seq_backward(foxjit_runtime *rt, const foxjit_cfc_seq_args *a,
                                        CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("cfc_seq_backward", s, NULL, 0, 0);
    const int I = a->n_in, Hd = a->n_hid;
    if (!a->work || a->work_bytes < cfc_seq_ws(a->batch, a->k, Hd))
        fail_msg("cfc_seq_backward: no workspace or too small (%zu bytes)", a->work_bytes);
    pr_cfc p;
    cfc_seq_load(a, &p);
    double *gw_in = calloc((size_t)Hd * I, 8), *gw_rec = calloc((size_t)Hd * Hd, 8);
    double gb[512] = {0}, gt[512] = {0}, carry[512] = {0}, x[512], h[512], g[512], dx[512];
    pr_cfc_grads gr = {gw_in, gw_rec, gb, gt};
    for (int b = 0; b < a->batch; b++) {
        memset(carry, 0, sizeof carry);
        for (int t = a->k - 1; t >= 0; t--) {
            size_t r = (size_t)b * a->k + t;
            row_to_d(HP(a->x) + r * I, x, I);
            for (int i = 0; i < Hd; i++)
                g[i] = HP(a->dh)[r * Hd + i] + carry[i];
            memset(carry, 0, sizeof carry), memset(dx, 0, sizeof dx);
            pr_cfc_backward(&p, x, cfc_seq_prev(a, b, t, h), HP(a->dt)[r], g, carry, dx, &gr);
            if (a->dx)
                store(HP(a->dx) + r * I, dx, I, a->dx_accumulate);
        }
        if (a->dh_init)
            store(HP(a->dh_init) + (size_t)b * Hd, carry, Hd, a->dh_init_accumulate);
    }
    store(HP(a->dw_in), gw_in, (size_t)Hd * I, a->grad_accumulate);
    store(HP(a->dw_rec), gw_rec, (size_t)Hd * Hd, a->grad_accumulate);
    store(HP(a->dbias), gb, Hd, a->grad_accumulate);
    store(HP(a->dtau), gt, Hd, a->grad_accumulate);
    free(gw_in), free(gw_rec);
    cfc_seq_unload(&p);
    return FOXJIT_OK;
}

static size_t heads_seq_ws(int batch, int steps, int e, int h)
{
    return (size_t)batch * steps * e * h * 4;
}

static foxjit_status e_heads_seq_ws(foxjit_runtime *rt, int batch, int steps, int d, int e,
                                    int h, size_t *bytes)
{
    (void)rt, (void)d;
    *bytes = heads_seq_ws(batch, steps, e, h);
    return FOXJIT_OK;
}

/* Row (b, s) of a heads-seq tensor of `width` floats a row. */
static float *seq_row(CUdeviceptr p, int64_t stride, int64_t step_stride, int steps, int width,
                      int b, int st)
{
    return HP(p) + b * eff(stride, (long long)steps * width) + st * eff(step_stride, width);
}

static void heads_seq_load(const foxjit_heads_seq_args *a, heads_d *h)
{
    foxjit_heads_args x = {.d = a->d, .e = a->e, .h = a->h, .w1 = a->w1, .b1 = a->b1,
                           .w2 = a->w2, .b2 = a->b2, .w_gate = a->w_gate, .b_gate = a->b_gate,
                           .w_main = a->w_main, .b_main = a->b_main, .w_skip = a->w_skip,
                           .b_skip = a->b_skip};
    heads_load(&x, h);
}

static foxjit_status e_heads_seq_forward(foxjit_runtime *rt, const foxjit_heads_seq_args *a,
                                         CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add(a->steps > 1 ? "heads_seq_forward" : "heads_seq_forward (pooled)", s, NULL, 0, 0);
    heads_d h;
    heads_seq_load(a, &h);
    double x[512], z[16];
    for (int b = 0; b < a->batch; b++)
        for (int st = 0; st < a->steps; st++) {
            row_to_d(seq_row(a->x, a->x_stride, a->x_step_stride, a->steps, a->d, b, st), x,
                     a->d);
            pr_heads_forward(&h.p, x, z);
            store(seq_row(a->logits, a->logits_stride, a->logits_step_stride, a->steps, a->h,
                          b, st), z, a->h, 0);
        }
    heads_unload(&h);
    return FOXJIT_OK;
}

static foxjit_status e_heads_seq_backward(foxjit_runtime *rt, const foxjit_heads_seq_args *a,
                                          CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add(a->steps > 1 ? "heads_seq_backward" : "heads_seq_backward (pooled)", s, NULL, a->work, a->dw1);
    if (!a->work || a->work_bytes < heads_seq_ws(a->batch, a->steps, a->e, a->h))
        fail_msg("heads_seq_backward: no workspace or too small (%zu bytes)", a->work_bytes);
    heads_d h;
    heads_seq_load(a, &h);
    size_t D = a->d, E = a->e, H = a->h;
    const size_t n[10] = {H * E * D, H * E, H * E * E, H * E, H * E, H, H * E, H, H * D, H};
    const CUdeviceptr dst[10] = {a->dw1, a->db1, a->dw2, a->db2, a->dw_gate,
                                 a->db_gate, a->dw_main, a->db_main, a->dw_skip, a->db_skip};
    double *g[10];
    for (int i = 0; i < 10; i++)
        g[i] = calloc(n[i], 8);
    pr_heads_grads gr = {g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9]};
    double x[512], dz[16], dx[512];
    for (int b = 0; b < a->batch; b++)
        for (int st = 0; st < a->steps; st++) {
            row_to_d(seq_row(a->x, a->x_stride, a->x_step_stride, a->steps, a->d, b, st), x,
                     a->d);
            row_to_d(seq_row(a->dlogits, a->dlogits_stride, a->dlogits_step_stride, a->steps,
                             a->h, b, st), dz, a->h);
            memset(dx, 0, sizeof dx);
            pr_heads_backward(&h.p, x, dz, dx, &gr);
            if (a->dx)
                store(seq_row(a->dx, a->dx_stride, a->dx_step_stride, a->steps, a->d, b, st),
                      dx, a->d, a->dx_accumulate);
        }
    for (int i = 0; i < 10; i++)
        store(HP(dst[i]), g[i], n[i], a->grad_accumulate), free(g[i]);
    heads_unload(&h);
    return FOXJIT_OK;
}

/* The save: the emulation keeps a fingerprint of the forward's x there (the
 * exact sum of its rows' bits, and the row count), and the backward checks it
 * against x as it is then: the trainer must hand the backward the save of the
 * same rows' forward, untouched in between. */
static size_t heads_seq_saved(int batch, int steps, int e, int h)
{
    return (size_t)batch * steps * (((size_t)e * h + 3) / 4 * 4) * 4;
}

static foxjit_status e_heads_seq_saved_size(foxjit_runtime *rt, int batch, int steps, int d,
                                            int e, int h, size_t *bytes)
{
    (void)rt, (void)d;
    *bytes = heads_seq_saved(batch, steps, e, h);
    return FOXJIT_OK;
}

static uint64_t heads_seq_fingerprint(const foxjit_heads_seq_args *a)
{
    uint64_t v = 0;
    for (int b = 0; b < a->batch; b++)
        for (int st = 0; st < a->steps; st++) {
            const float *x = seq_row(a->x, a->x_stride, a->x_step_stride, a->steps, a->d, b, st);
            for (int i = 0; i < a->d; i++) {
                uint32_t u;
                memcpy(&u, &x[i], 4);
                v = v * 1000003u + u;
            }
        }
    return v;
}

static void heads_seq_check_saved(const char *op, const foxjit_heads_seq_args *a,
                                  CUdeviceptr saved, size_t saved_bytes)
{
    if (!saved || saved_bytes < heads_seq_saved(a->batch, a->steps, a->e, a->h))
        fail_msg("%s: no save or too small (%zu bytes)", op, saved_bytes);
}

static foxjit_status e_heads_seq_forward_save(foxjit_runtime *rt, const foxjit_heads_seq_args *a,
                                              CUdeviceptr saved, size_t saved_bytes, CUstream s)
{
    stream_runs(s);
    heads_seq_check_saved("heads_seq_forward_save", a, saved, saved_bytes);
    uint64_t *fp = (uint64_t *)HP(saved);
    fp[0] = heads_seq_fingerprint(a);
    fp[1] = (uint64_t)a->batch * (uint64_t)a->steps;
    return e_heads_seq_forward(rt, a, s);
}

static foxjit_status e_heads_seq_backward_saved(foxjit_runtime *rt,
                                                const foxjit_heads_seq_args *a,
                                                CUdeviceptr saved, size_t saved_bytes,
                                                CUstream s)
{
    heads_seq_check_saved("heads_seq_backward_saved", a, saved, saved_bytes);
    const uint64_t *fp = (const uint64_t *)HP(saved);
    if (fp[0] != heads_seq_fingerprint(a) || fp[1] != (uint64_t)a->batch * (uint64_t)a->steps)
        fail_msg("heads_seq_backward_saved (%s): the save is not that of this x's forward",
                 a->steps > 1 ? "bars" : "pooled");
    return e_heads_seq_backward(rt, a, s);
}

static foxjit_status e_vsn_forward(foxjit_runtime *rt, const foxjit_vsn_args *a, CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("vsn_forward", s, NULL, 0, 0);
    int F = a->f;
    double *w = dup_d(a->w, (size_t)F * F), *bias = dup_d(a->bias, F);
    pr_vsn p = {F, w, bias};
    double x[512], y[512];
    for (size_t r = 0; r < (size_t)a->batch * a->t; r++) {
        row_to_d(HP(a->x) + r * F, x, F);
        pr_vsn_forward(&p, x, y);
        store(HP(a->y) + r * F, y, F, 0);
    }
    free(w), free(bias);
    return FOXJIT_OK;
}

static foxjit_status e_vsn_backward(foxjit_runtime *rt, const foxjit_vsn_args *a, CUstream s)
{
    stream_runs(s);
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    int F = a->f;
    double *w = dup_d(a->w, (size_t)F * F), *bias = dup_d(a->bias, F);
    pr_vsn p = {F, w, bias};
    double x[512], dy[512], dx[512], *gw = malloc((size_t)F * F * 8), gb[512];
    for (int b = 0; b < a->batch; b++) {
        memset(gw, 0, (size_t)F * F * 8), memset(gb, 0, sizeof gb);
        for (int t = 0; t < a->t; t++) {
            size_t r = (size_t)b * a->t + t;
            row_to_d(HP(a->x) + r * F, x, F);
            row_to_d(HP(a->dy) + r * F, dy, F);
            memset(dx, 0, sizeof dx);
            pr_vsn_grads g = {gw, gb};
            pr_vsn_backward(&p, x, dy, dx, &g);
            if (a->dx)
                store(HP(a->dx) + r * F, dx, F, a->dx_accumulate);
        }
        store(HP(a->dw) + (size_t)b * F * F, gw, (size_t)F * F, 1);
        store(HP(a->dbias) + (size_t)b * F, gb, F, 1);
    }
    free(w), free(bias), free(gw);
    return FOXJIT_OK;
}

static size_t vsn_seq_ws(int batch, int t, int f) { return (size_t)batch * t * f * 4; }

static foxjit_status e_vsn_seq_ws(foxjit_runtime *rt, int batch, int t, int f, size_t *bytes)
{
    (void)rt;
    *bytes = vsn_seq_ws(batch, t, f);
    return FOXJIT_OK;
}

static foxjit_status e_vsn_seq_backward(foxjit_runtime *rt, const foxjit_vsn_seq_args *a,
                                        CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("vsn_seq_backward", s, NULL, 0, 0);
    if (!a->work || a->work_bytes < vsn_seq_ws(a->batch, a->t, a->f))
        fail_msg("vsn_seq_backward: no workspace or too small (%zu bytes)", a->work_bytes);
    int F = a->f;
    double *w = dup_d(a->w, (size_t)F * F), *bias = dup_d(a->bias, F);
    pr_vsn p = {F, w, bias};
    double x[512], dy[512], dx[512], *gw = calloc((size_t)F * F, 8), gb[512] = {0};
    pr_vsn_grads g = {gw, gb};
    for (size_t r = 0; r < (size_t)a->batch * a->t; r++) {
        row_to_d(HP(a->x) + r * F, x, F);
        row_to_d(HP(a->dy) + r * F, dy, F);
        memset(dx, 0, sizeof dx);
        pr_vsn_backward(&p, x, dy, dx, &g);
        if (a->dx)
            store(HP(a->dx) + r * F, dx, F, a->dx_accumulate);
    }
    store(HP(a->dw), gw, (size_t)F * F, a->grad_accumulate);
    store(HP(a->dbias), gb, F, a->grad_accumulate);
    free(w), free(bias), free(gw);
    return FOXJIT_OK;
}

static foxjit_status e_attn_forward(foxjit_runtime *rt, const foxjit_attn_pool_args *a,
                                    CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("attn_pool_forward", s, NULL, 0, 0);
    size_t T = a->t, D = a->d;
    double *q = dup_d(a->q, D), pooled[512];
    for (int b = 0; b < a->batch; b++) {
        double *hs = dup_d(a->hs + (CUdeviceptr)(b * T * D * 4), T * D);
        pr_attn_forward(a->t, a->d, q, hs, pooled);
        store(HP(a->pooled) + b * D, pooled, D, 0);
        free(hs);
    }
    free(q);
    return FOXJIT_OK;
}

static foxjit_status e_attn_backward(foxjit_runtime *rt, const foxjit_attn_pool_args *a,
                                     CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("attn_pool_backward", s, NULL, 0, 0);
    size_t T = a->t, D = a->d;
    double *q = dup_d(a->q, D), dp[512], dq[512];
    double *dhs = malloc(T * D * 8);
    for (int b = 0; b < a->batch; b++) {
        double *hs = dup_d(a->hs + (CUdeviceptr)(b * T * D * 4), T * D);
        row_to_d(HP(a->dpooled) + b * D, dp, D);
        memset(dhs, 0, T * D * 8), memset(dq, 0, sizeof dq);
        pr_attn_backward(a->t, a->d, q, hs, dp, dhs, dq);
        store(HP(a->dhs) + b * T * D, dhs, T * D, a->dhs_accumulate);
        store(HP(a->dq) + b * D, dq, D, 1);
        free(hs);
    }
    free(q), free(dhs);
    return FOXJIT_OK;
}

static foxjit_status e_reduce(foxjit_runtime *rt, CUdeviceptr x, int64_t rows, int64_t cols,
                              CUdeviceptr out, CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("reduce_axis0", s, NULL, 0, 0);
    for (int64_t c = 0; c < cols; c++) {
        double sum = 0;
        for (int64_t r = 0; r < rows; r++)
            sum += HP(x)[r * cols + c];
        HP(out)[c] = (float)sum;
    }
    return FOXJIT_OK;
}

/* The split column sums' workspace: 512 bytes of block counters, then
 * made-up room for the blocks' nodes (so that each shape asks its own
 * size, and a trainer that sizes one for another shape fails here). */
#define E_COLSUM_COUNTER_BYTES 512
static size_t e_colsum_bytes(int64_t rows, int64_t cols)
{
    return E_COLSUM_COUNTER_BYTES + (size_t)(((rows + 1) / 2 * cols * 4 + 15) / 16 * 16);
}

static foxjit_status e_colsum_ws(foxjit_runtime *rt, int64_t rows, int64_t cols, size_t *bytes)
{
    (void)rt;
    *bytes = e_colsum_bytes(rows, cols);
    return FOXJIT_OK;
}

static int overlaps(CUdeviceptr a, size_t a_bytes, CUdeviceptr b, size_t b_bytes)
{
    return a < b + b_bytes && b < a + a_bytes;
}

/* foxjit_column_sum_split as the header documents it: a workspace that is
 * missing, misaligned, too small or overlapping x or out is refused; one
 * whose counters are not zero (not zeroed after allocating, or in use by
 * another call) gives NaN sums. The nodes' part of the workspace is
 * scribbled over, as the blocks' nodes would be: a buffer that overlaps
 * it loses its contents. The counters are left at zero. */
static foxjit_status e_colsum_split(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                    int64_t cols, CUdeviceptr out, int accumulate,
                                    CUdeviceptr work, size_t work_bytes, CUstream s)
{
    (void)rt;
    const size_t need = e_colsum_bytes(rows, cols), xb = (size_t)(rows * cols) * 4,
                 ob = (size_t)cols * 4;
    if (!work || work % 16 || overlaps(work, work_bytes, x, xb) ||
        overlaps(work, work_bytes, out, ob))
        return FOXJIT_ERROR_INVALID_ARGUMENT;
    if (work_bytes < need)
        return FOXJIT_ERROR_WORKSPACE_TOO_SMALL;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("column_sum_split", s, NULL, work, 0);
    const unsigned char *counters = (const unsigned char *)(uintptr_t)work;
    int dirty = 0;
    for (int i = 0; i < E_COLSUM_COUNTER_BYTES; i++)
        dirty |= counters[i];
    for (size_t i = E_COLSUM_COUNTER_BYTES / 4; i < need / 4; i++)
        ((uint32_t *)(uintptr_t)work)[i] = 0x7fc00000u;
    for (int64_t c = 0; c < cols; c++) {
        double sum = 0;
        for (int64_t r = 0; r < rows; r++)
            sum += HP(x)[r * cols + c];
        const float v = dirty ? NAN : (float)sum;
        HP(out)[c] = accumulate ? HP(out)[c] + v : v;
    }
    return FOXJIT_OK;
}

/* The BCE both forms compute (the wide one's float64 reference is the
 * narrow one's result). */
static void bce_compute(CUdeviceptr z, CUdeviceptr y, int64_t n, CUdeviceptr loss, int acc,
                        CUdeviceptr dz)
{
    double *zd = dup_d(z, (size_t)n), *yd = dup_d(y, (size_t)n), *g = malloc((size_t)n * 8);
    double mean = pr_bce(zd, yd, (size_t)n, g);
    HP(loss)[0] = acc ? HP(loss)[0] + (float)mean : (float)mean;
    if (dz)
        store(HP(dz), g, (size_t)n, 0);
    free(zd), free(yd), free(g);
}

static foxjit_status e_bce(foxjit_runtime *rt, CUdeviceptr z, CUdeviceptr y, int64_t n,
                           CUdeviceptr loss, int acc, CUdeviceptr dz, CUstream s)
{
    (void)rt;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("bce_with_logits", s, NULL, 0, 0);
    bce_compute(z, y, n, loss, acc, dz);
    return FOXJIT_OK;
}

/* The wide form's workspace: a double per 2048 values, 1 to 1024 of them
 * (the library's rule, so a trainer that sizes it wrongly fails here). */
static size_t e_bce_wide_bytes(int64_t n)
{
    int64_t blocks = (n + 2047) / 2048;
    return (size_t)(blocks > 1024 ? 1024 : blocks) * 8;
}

static foxjit_status e_bce_ws(foxjit_runtime *rt, int64_t n, size_t *bytes)
{
    (void)rt;
    *bytes = e_bce_wide_bytes(n);
    return FOXJIT_OK;
}

static foxjit_status e_bce_wide(foxjit_runtime *rt, CUdeviceptr z, CUdeviceptr y, int64_t n,
                                CUdeviceptr loss, int acc, CUdeviceptr dz, CUdeviceptr ws,
                                size_t ws_bytes, CUstream s)
{
    if (ws % 8)
        return FOXJIT_ERROR_INVALID_ARGUMENT;
    if (!ws || ws_bytes < e_bce_wide_bytes(n))
        return FOXJIT_ERROR_WORKSPACE_TOO_SMALL;
    /* The emulated ops are float64 references: the same result as the
     * narrow form, which the reference-model tests compare against. */
    (void)rt;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("bce_with_logits_wide", s, NULL, ws, 0);
    bce_compute(z, y, n, loss, acc, dz);
    return FOXJIT_OK;
}

static foxjit_status e_adamw(foxjit_runtime *rt, const foxjit_adamw_args *a, CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("adamw", s, NULL, 0, 0);
    int t = *(int *)(uintptr_t)a->step;
    double bc1 = 1 - pow(a->beta1, t), bc2 = 1 - pow(a->beta2, t);
    float *p = HP(a->param), *g = HP(a->grad), *m = HP(a->m), *v = HP(a->v);
    for (int64_t i = 0; i < a->n; i++) {
        double mi = a->beta1 * (double)m[i] + (1 - (double)a->beta1) * g[i];
        double vi = a->beta2 * (double)v[i] + (1 - (double)a->beta2) * (double)g[i] * g[i];
        double upd = mi / bc1 / (sqrt(vi / bc2) + a->eps) + a->weight_decay * (double)p[i];
        m[i] = (float)mi, v[i] = (float)vi;
        p[i] = (float)(p[i] - a->lr * upd);
    }
    return FOXJIT_OK;
}

static foxjit_status e_increment(foxjit_runtime *rt, CUdeviceptr step, CUstream s)
{
    (void)rt, (void)s;
    __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED);
    trace_add("increment_step", s, NULL, 0, 0);
    (*(int *)(uintptr_t)step)++;
    return FOXJIT_OK;
}

static const char *e_status_string(foxjit_status st) { (void)st; return "status"; }
static foxjit_status e_counters(const foxjit_runtime *rt, foxjit_counters *c)
{
    (void)rt;
    memset(c, 0, sizeof *c);
    return FOXJIT_OK;
}
static const char *e_arch(const foxjit_runtime *rt) { (void)rt; return "host"; }
static foxjit_status e_prep0(foxjit_runtime *rt) { (void)rt; return FOXJIT_OK; }
static foxjit_status e_prep1(foxjit_runtime *rt, int a) { (void)rt, (void)a; return FOXJIT_OK; }
static foxjit_status e_prep2(foxjit_runtime *rt, int a, int b)
{
    (void)rt, (void)a, (void)b;
    return FOXJIT_OK;
}
static foxjit_status e_prep3(foxjit_runtime *rt, int a, int b, int c)
{
    (void)rt, (void)a, (void)b, (void)c;
    return FOXJIT_OK;
}
static foxjit_status e_prep_colsum(foxjit_runtime *rt, int64_t a, int64_t b)
{
    (void)rt, (void)a, (void)b;
    return FOXJIT_OK;
}
static const char *e_last_error(void) { return "emulated"; }

/* ---- the test ------------------------------------------------------------------ */

static ft_cuda cu;
static foxjit_api api;

static int setup(void **state)
{
    (void)state;
    cu.cuMemAlloc = h_alloc;
    cu.cuMemFree = h_free;
    cu.cuMemcpyHtoDAsync = h_htod;
    cu.cuMemcpyDtoHAsync = h_dtoh;
    cu.cuMemsetD32Async = h_memset32;
    cu.cuStreamSynchronize = h_sync;
    cu.cuMemcpyDtoDAsync = h_dtod;
    cu.cuMemAllocHost = h_alloc_host;
    cu.cuMemFreeHost = h_free_host;
    cu.cuEventCreate = h_event_create;
    cu.cuEventDestroy = h_event_destroy;
    cu.cuEventSynchronize = h_event_sync;
    cu.cuEventQuery = h_event_query_done;
    cu.cuEventRecord = h_event_record;
    cu.cuStreamCreate = m_stream_create;
    cu.cuStreamCreateWithPriority = m_stream_create_priority;
    cu.cuCtxGetStreamPriorityRange = m_priority_range;
    cu.cuStreamDestroy = m_stream_destroy;
    cu.cuStreamWaitEvent = m_stream_wait_event;
    api.runtime_get_counters = e_counters;
    api.runtime_arch = e_arch;
    api.training_prepare = e_prep0;
    api.vsn_prepare = e_prep1;
    api.attn_pool_prepare = e_prep1;
    api.cfc_prepare = e_prep2;
    api.heads_prepare = e_prep3;
    api.cfc_seq_prepare = e_prep2;
    api.heads_seq_prepare = e_prep3;
    api.cfc_seq_workspace_size = e_cfc_seq_ws;
    api.cfc_seq_forward = e_cfc_seq_forward;
    api.cfc_seq_backward = e_cfc_seq_backward;
    api.heads_seq_workspace_size = e_heads_seq_ws;
    api.heads_seq_forward = e_heads_seq_forward;
    api.heads_seq_backward = e_heads_seq_backward;
    api.heads_seq_saved_size = e_heads_seq_saved_size;
    api.heads_seq_forward_save = e_heads_seq_forward_save;
    api.heads_seq_backward_saved = e_heads_seq_backward_saved;
    api.vsn_seq_prepare = e_prep1;
    api.vsn_seq_workspace_size = e_vsn_seq_ws;
    api.vsn_seq_backward = e_vsn_seq_backward;
    api.column_sum_prepare = e_prep_colsum;
    api.struct_size = sizeof api;
    api.status_string = e_status_string;
    api.last_error = e_last_error;
    api.cfc_forward = e_cfc_forward;
    api.cfc_backward = e_cfc_backward;
    api.heads_forward = e_heads_forward;
    api.heads_backward = e_heads_backward;
    api.heads_workspace_size = e_heads_ws;
    api.vsn_forward = e_vsn_forward;
    api.vsn_backward = e_vsn_backward;
    api.attn_pool_forward = e_attn_forward;
    api.attn_pool_backward = e_attn_backward;
    api.reduce_axis0 = e_reduce;
    api.bce_with_logits = e_bce;
    api.bce_with_logits_workspace_size = e_bce_ws;
    api.bce_with_logits_wide = e_bce_wide;
    api.column_sum_workspace_size = e_colsum_ws;
    api.column_sum_split = e_colsum_split;
    api.column_sum_split_prepare = e_prep_colsum;
    api.adamw = e_adamw;
    api.increment_step = e_increment;
    return 0;
}

static void step_matches_reference_model(ft_path path)
{
    const ft_dims d = {3, 5, 6, 8, 4, 3};
    foxjit_runtime *rt = (foxjit_runtime *)(uintptr_t)0x1000;
    ft_model m;
    assert_int_equal(ft_model_alloc(&m, &api, rt, &cu, &d, path), 0);
    size_t total = ft_param_total(&d);
    float *p = malloc(total * 4);
    ft_params_init(&d, 11, p);
    /* Nonzero biases so every path is exercised. */
    for (int i = 0; i < FT_PARAM_COUNT; i++)
        if (!ft_param_decays(i) && i != FT_CFC_TAU)
            for (size_t j = 0; j < ft_param_size(&d, i); j++)
                p[ft_param_offset(&d, i) + j] = 0.1f * (float)((int)(j % 5) - 2);
    ft_dataset data;
    assert_int_equal(ft_data_generate(&data, 3, d.k, d.f, d.h, FT_SIGNAL_RULE, 11,
                                      FT_STREAM_TRAIN), 0);
    const int idx[3] = {2, 0, 1};
    float *packed = malloc(m.in_layout.floats * 4);
    ft_data_pack(&data, idx, 3, &m.in_layout, packed);
    assert_int_equal(ft_model_set_state(&m, p, NULL, NULL, 7, NULL), 0);
    memcpy(HP(m.batch_in), packed, m.in_layout.floats * 4);

    calls = 0;
    const ft_hparams hp = {1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f};
    assert_int_equal(ft_model_zero(&m, NULL), FOXJIT_OK);
    assert_int_equal(ft_model_forward(&m, NULL), FOXJIT_OK);
    assert_int_equal(ft_model_loss(&m, 1, NULL), FOXJIT_OK);
    assert_int_equal(ft_model_backward(&m, NULL), FOXJIT_OK);
    assert_int_equal(ft_model_reduce(&m, NULL), FOXJIT_OK);
    float *grad = malloc(total * 4);
    assert_int_equal(ft_model_get_grads(&m, grad, NULL), 0);
    float loss = HP(m.loss)[0];
    assert_int_equal(ft_model_update(&m, &hp, NULL), FOXJIT_OK);
    /* Every launch ft_model_launches_per_step counts, less the memset. */
    assert_int_equal(calls + 1, ft_model_launches_per_step(&d, path));

    /* The reference model on the same numbers. */
    pr_model_dims rd = {d.batch, d.k, d.f, d.d, d.e, d.h};
    double *P[PR_PARAM_COUNT], *G[PR_PARAM_COUNT];
    for (int i = 0; i < PR_PARAM_COUNT; i++) {
        size_t n = ft_param_size(&d, i);
        P[i] = malloc(n * 8), G[i] = malloc(n * 8);
        for (size_t j = 0; j < n; j++)
            P[i][j] = p[ft_param_offset(&d, i) + j];
    }
    size_t nx = (size_t)d.batch * d.k * d.f, nt = (size_t)d.batch * d.k;
    size_t nz = (size_t)(d.k + 1) * d.batch * d.h;
    double *x = malloc(nx * 8), *dt = malloc(nt * 8), *lab = malloc(nz * 8),
           *dz = malloc(nz * 8);
    for (size_t i = 0; i < nx; i++)
        x[i] = packed[m.in_layout.x + i];
    for (size_t i = 0; i < nt; i++)
        dt[i] = packed[m.in_layout.dt + i];
    for (size_t i = 0; i < nz; i++)
        lab[i] = packed[m.in_layout.labels + i];
    pr_model_acts acts;
    assert_int_equal(pr_model_acts_alloc(&rd, &acts), 1);
    pr_model_forward(&rd, P, x, dt, &acts);
    double want = pr_model_loss(&rd, acts.z, lab, dz);
    pr_model_backward(&rd, P, x, dt, &acts, dz, G, NULL);
    printf("  loss %.9g, reference %.12g\n", (double)loss, want);
    assert_true(fabs(loss - want) <= 1e-5 * fabs(want));
    for (int i = 0; i < PR_PARAM_COUNT; i++) {
        size_t n = ft_param_size(&d, i);
        double scale = 0;
        for (size_t j = 0; j < n; j++)
            scale = fmax(scale, fabs(G[i][j]));
        for (size_t j = 0; j < n; j++) {
            double got = grad[ft_param_offset(&d, i) + j];
            if (!(fabs(got - G[i][j]) <= 1e-4 * scale + 1e-7))
                fail_msg("%s[%zu]: step driver gradient %.9g, reference %.9g (max %.3g)",
                         ft_param_name(i), j, got, G[i][j], scale);
        }
        printf("  %-13s gradient matches (max |g| %.3g)\n", ft_param_name(i), scale);
    }

    /* One AdamW update at step 8 (the counter started at 7), with weight
     * decay only where params.h says. */
    float *after = malloc(total * 4);
    int step = 0;
    assert_int_equal(ft_model_get_state(&m, after, NULL, NULL, &step, NULL), 0);
    assert_int_equal(step, 8);
    for (int i = 0; i < PR_PARAM_COUNT; i++) {
        double wd = ft_param_decays(i) ? hp.weight_decay : 0;
        double bc1 = 1 - pow(hp.beta1, 8), bc2 = 1 - pow(hp.beta2, 8);
        for (size_t j = 0; j < ft_param_size(&d, i); j++) {
            size_t o = ft_param_offset(&d, i) + j;
            double g = grad[o];
            double mh = (1 - (double)hp.beta1) * g / bc1;
            double vh = (1 - (double)hp.beta2) * g * g / bc2;
            double want_p = p[o] - hp.lr * (mh / (sqrt(vh) + hp.eps) + wd * p[o]);
            if (!(fabs(after[o] - want_p) <= 1e-6 + 1e-6 * fabs(want_p)))
                fail_msg("%s[%zu] after AdamW: %.9g, want %.9g", ft_param_name(i), j,
                         (double)after[o], want_p);
        }
    }

    for (int i = 0; i < PR_PARAM_COUNT; i++)
        free(P[i]), free(G[i]);
    free(x), free(dt), free(lab), free(dz), free(p), free(grad), free(after), free(packed);
    pr_model_acts_free(&acts);
    ft_data_free(&data);
    ft_model_free(&m);
}

/* The step of each path gives the reference model's gradient and update. */
static void test_step_matches_reference_model(void **state)
{
    (void)state;
    printf("  sequence path\n");
    step_matches_reference_model(FT_PATH_SEQUENCE);
}

static void test_per_step_path_matches_reference_model(void **state)
{
    (void)state;
    printf("  per-step path\n");
    step_matches_reference_model(FT_PATH_PER_STEP);
}

/* The sequence path's step: what runs on the step's stream, what runs on the
 * second stream, and where they fork and join. The two heads backward
 * calls, which run at once, get their own workspaces and gradient rows; the
 * pooling's backward, which adds into dhs after the bars' heads overwrote
 * it, waits for the join. (The emulation runs every op at once on the host,
 * so only the order of the calls and their streams and events can be
 * checked here; the GPU tests check the bits.) */
static void test_sequence_step_streams(void **state)
{
    (void)state;
    const ft_dims d = {3, 5, 6, 8, 4, 3};
    foxjit_runtime *rt = (foxjit_runtime *)(uintptr_t)0x1000;
    ft_model m;
    side_priority = 99;
    assert_int_equal(ft_model_alloc(&m, &api, rt, &cu, &d, FT_PATH_SEQUENCE), 0);
    assert_non_null(m.side);
    assert_ptr_not_equal(m.fork, m.join);
    /* The second stream's short kernels go before the main stream's
     * pending blocks: the GPU's greatest priority. */
    assert_int_equal(side_priority, -5);
    size_t total = ft_param_total(&d);
    float *p = malloc(total * 4);
    ft_params_init(&d, 11, p);
    assert_int_equal(ft_model_set_state(&m, p, NULL, NULL, 0, NULL), 0);
    memset(HP(m.batch_in), 0, m.in_layout.floats * 4);

    const CUstream S = (CUstream)(uintptr_t)0x77, X = m.side;
    const CUevent F = m.fork, J = m.join;
    const ft_hparams hp = {1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f};
    trace_n = 0, tracing = 1;
    assert_int_equal(ft_model_step(&m, &hp, S), FOXJIT_OK);
    tracing = 0;

    static const struct {
        const char *what;
        int side;  /* 1: on the second stream */
        int event; /* 1: the fork event, 2: the join event */
    } want[] = {
        {"memset", 0, 0},
        {"vsn_forward", 0, 0},
        {"cfc_seq_forward", 0, 0},
        {"record", 0, 1},
        {"wait", 1, 1},
        {"heads_seq_forward", 0, 0},
        {"attn_pool_forward", 1, 0},
        {"heads_seq_forward (pooled)", 1, 0},
        {"record", 1, 2},
        {"wait", 0, 2},
        {"bce_with_logits_wide", 0, 0},
        {"bce_with_logits_wide", 0, 0},
        {"record", 0, 1},
        {"wait", 1, 1},
        {"heads_seq_backward", 0, 0},
        {"heads_seq_backward (pooled)", 1, 0},
        {"record", 1, 2},
        {"wait", 0, 2},
        {"attn_pool_backward", 0, 0},
        {"column_sum_split", 0, 0},
        {"cfc_seq_backward", 0, 0},
        {"vsn_seq_backward", 0, 0},
        {"column_sum_split", 0, 0},
        {"increment_step", 0, 0},
        {"adamw", 0, 0},
        {"adamw", 0, 0},
    };
    const int n = (int)(sizeof want / sizeof want[0]);
    for (int i = 0; i < n && i < trace_n; i++) {
        const trace_entry *t = &trace[i];
        const CUstream ws = want[i].side ? X : S;
        const CUevent we = want[i].event == 1 ? F : want[i].event == 2 ? J : NULL;
        if (strcmp(t->what, want[i].what) || t->s != ws || t->e != we)
            fail_msg("call %d of the step: %s on stream %p (event %p); want %s on the %s stream"
                     " (event %p)", i, t->what, (void *)t->s, (void *)t->e, want[i].what,
                     want[i].side ? "second" : "step's", (void *)we);
    }
    assert_int_equal(trace_n, n);
    /* The heads backward calls that run at once share nothing they write. */
    assert_true(trace[14].work != trace[15].work);
    assert_true(trace[14].grad != trace[15].grad);
    assert_true(trace[14].grad != m.grad[FT_HEADS_W1] && trace[15].grad != m.grad[FT_HEADS_W1]);
    /* Both BCE calls on the one workspace, sized for the bars' K B H logits. */
    assert_true(m.bce_work != 0);
    assert_int_equal(m.bce_work_bytes, e_bce_wide_bytes((int64_t)d.k * d.batch * d.h));
    assert_true(trace[10].work == m.bce_work && trace[11].work == m.bce_work);
    /* The two column sums (the heads' stack, the attention query's
     * reducer), each on its own workspace. */
    assert_true(m.colsum_split);
    assert_true(trace[19].work == m.heads_sum_work && m.heads_sum_work != 0);
    assert_true(trace[22].work == m.colsum_work[FT_ATTN_Q] && m.colsum_work[FT_ATTN_Q] != 0);
    assert_true(m.heads_sum_work != m.colsum_work[FT_ATTN_Q]);
    free(p);
    ft_model_free(&m);
}

/* The split column sums' workspaces (ABI 2.7): one per call site, of the
 * size the library asks for its shape, lying in the model's allocation
 * apart from each other and from every other buffer a step writes (the
 * step's memset of the scratch included), and zero after allocation (the
 * emulated allocation fills memory with NaN bits). On every path, and on
 * the model of all paths `fox-jit bench kloop` opens. */
static void check_colsum_workspaces(const ft_model *m)
{
    const ft_dims *d = &m->dims;
    CUdeviceptr w[FT_PARAM_COUNT + 1];
    size_t wb[FT_PARAM_COUNT + 1];
    int n = 0;
    for (int i = 0; i < FT_PARAM_COUNT; i++) {
        if (!m->scratch[i]) {
            assert_true(m->colsum_work[i] == 0 && m->colsum_work_bytes[i] == 0);
            continue;
        }
        assert_int_equal(m->colsum_work_bytes[i],
                         e_colsum_bytes(d->batch, (int64_t)ft_param_size(d, i)));
        w[n] = m->colsum_work[i], wb[n++] = m->colsum_work_bytes[i];
    }
    if (m->heads_stack) {
        assert_int_equal(m->heads_sum_work_bytes,
                         e_colsum_bytes(2, (int64_t)m->heads_span_floats));
        w[n] = m->heads_sum_work, wb[n++] = m->heads_sum_work_bytes;
    } else {
        assert_true(m->heads_sum_work == 0 && m->heads_sum_work_bytes == 0);
    }
    assert_true(n > 0);
    const size_t f4 = sizeof(float), B = (size_t)d->batch, K = (size_t)d->k;
    const struct {
        CUdeviceptr p;
        size_t bytes;
    } others[] = {
        {m->grad_base, m->grad_floats * f4},
        {m->scratch_base, m->scratch_floats * f4},
        {m->batch_in, m->in_layout.floats * f4},
        {m->y, B * K * (size_t)d->f * f4},
        {m->hs, B * K * (size_t)d->d * f4},
        {m->dhs, B * K * (size_t)d->d * f4},
        {m->z, (K + 1) * B * (size_t)d->h * f4},
        {m->dz, (K + 1) * B * (size_t)d->h * f4},
        {m->heads_stack, m->heads_stack ? 2 * m->heads_span_floats * f4 : 0},
        {m->heads_work, m->heads_work_bytes},
        {m->heads_pooled_work, m->heads_pooled_work_bytes},
        {m->cfc_work, m->cfc_work_bytes},
        {m->vsn_work, m->vsn_work_bytes},
        {m->bce_work, m->bce_work_bytes},
        {m->loss, f4},
        {m->step, f4},
    };
    for (int i = 0; i < n; i++) {
        assert_true(w[i] != 0 && w[i] % 16 == 0);
        assert_true(w[i] >= m->base && w[i] + wb[i] <= m->base + m->bytes);
        for (int j = 0; j < n; j++)
            assert_true(i == j || !overlaps(w[i], wb[i], w[j], wb[j]));
        for (size_t j = 0; j < sizeof others / sizeof others[0]; j++)
            assert_true(!overlaps(w[i], wb[i], others[j].p, others[j].bytes));
        for (size_t b = 0; b < E_COLSUM_COUNTER_BYTES; b++)
            assert_int_equal(((const unsigned char *)(uintptr_t)w[i])[b], 0);
    }
}

static void test_colsum_workspaces(void **state)
{
    (void)state;
    const ft_dims d = {3, 5, 6, 8, 4, 3};
    foxjit_runtime *rt = (foxjit_runtime *)(uintptr_t)0x1000;
    static const unsigned masks[] = {1u << FT_PATH_SEQUENCE, 1u << FT_PATH_PER_STEP,
                                     (1u << FT_PATH_COUNT) - 1};
    for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
        ft_model m;
        assert_int_equal(ft_model_alloc_paths(&m, &api, rt, &cu, &d, masks[k]), 0);
        assert_true(m.colsum_split);
        check_colsum_workspaces(&m);
        ft_model_free(&m);
    }
}

/* A library older than ABI 2.7 (a table that ends before the split column
 * sums): the trainer calls reduce_axis0, allocates no workspace for it,
 * and says so in the run's header; the step's gradients are those of the
 * split form (both emulations are the float64 sums), on both paths. And
 * a workspace whose counters are not zero gives NaN sums in the
 * emulation, as on a GPU: the zeroing at allocation is what the step
 * relies on. */
static void test_older_library_uses_reduce_axis0(void **state)
{
    (void)state;
    const ft_dims d = {3, 5, 6, 8, 4, 3};
    foxjit_runtime *rt = (foxjit_runtime *)(uintptr_t)0x1000;
    const size_t total = ft_param_total(&d);
    float *p = malloc(total * 4), *g[2] = {malloc(total * 4), malloc(total * 4)};
    assert_true(p && g[0] && g[1]);
    ft_params_init(&d, 11, p);
    assert_string_equal(ft_model_colsum_form(&api), "split");
    static const ft_path paths[] = {FT_PATH_SEQUENCE, FT_PATH_PER_STEP};
    for (size_t pi = 0; pi < 2; pi++) {
        for (int older = 0; older < 2; older++) {
            foxjit_api a = api;
            if (older) {
                a.struct_size = offsetof(foxjit_api, column_sum_workspace_size);
                a.abi_minor = 6;
                /* Past the table's end: a trainer that reads them crashes. */
                a.column_sum_workspace_size = NULL;
                a.column_sum_split = NULL;
                a.column_sum_split_prepare = NULL;
                assert_string_equal(ft_model_colsum_form(&a),
                                    "reduce_axis0 (library before ABI 2.7)");
            }
            ft_model m;
            assert_int_equal(ft_model_alloc(&m, &a, rt, &cu, &d, paths[pi]), 0);
            assert_int_equal(m.colsum_split, !older);
            for (int i = 0; older && i < FT_PARAM_COUNT; i++)
                assert_true(m.colsum_work[i] == 0 && m.colsum_work_bytes[i] == 0);
            assert_true(!older || (m.heads_sum_work == 0 && m.heads_sum_work_bytes == 0));
            assert_int_equal(ft_model_prepare(&m), FOXJIT_OK);
            assert_int_equal(ft_model_set_state(&m, p, NULL, NULL, 0, NULL), 0);
            for (size_t i = 0; i < m.in_layout.floats; i++)
                HP(m.batch_in)[i] = 0.25f * (float)(i % 4);
            trace_n = 0, tracing = 1;
            assert_int_equal(ft_model_zero(&m, NULL), FOXJIT_OK);
            assert_int_equal(ft_model_forward(&m, NULL), FOXJIT_OK);
            assert_int_equal(ft_model_loss(&m, 1, NULL), FOXJIT_OK);
            assert_int_equal(ft_model_backward(&m, NULL), FOXJIT_OK);
            assert_int_equal(ft_model_reduce(&m, NULL), FOXJIT_OK);
            tracing = 0;
            int axis0 = 0, split = 0;
            for (int i = 0; i < trace_n; i++) {
                axis0 += !strcmp(trace[i].what, "reduce_axis0");
                split += !strcmp(trace[i].what, "column_sum_split");
            }
            const int sums = paths[pi] == FT_PATH_SEQUENCE ? 2 : FT_PARAM_COUNT;
            assert_int_equal(axis0, older ? sums : 0);
            assert_int_equal(split, older ? 0 : sums);
            assert_int_equal(ft_model_get_grads(&m, g[older], NULL), 0);
            if (!older) {
                /* A second step on the same workspaces: the counters were
                 * left at zero. Then one with a counter not zero. */
                assert_int_equal(ft_model_reduce(&m, NULL), FOXJIT_OK);
                float *again = malloc(total * 4);
                assert_non_null(again);
                assert_int_equal(ft_model_get_grads(&m, again, NULL), 0);
                assert_memory_equal(again, g[0], total * 4);
                const int t = paths[pi] == FT_PATH_SEQUENCE ? FT_ATTN_Q : FT_CFC_BIAS;
                ((unsigned char *)(uintptr_t)m.colsum_work[t])[8] = 1;
                assert_int_equal(ft_model_reduce(&m, NULL), FOXJIT_OK);
                assert_int_equal(ft_model_get_grads(&m, again, NULL), 0);
                assert_true(isnan(again[ft_param_offset(&d, t)]));
                free(again);
            }
            ft_model_free(&m);
        }
        for (size_t i = 0; i < total; i++)
            assert_true(isfinite(g[0][i]));
        assert_memory_equal(g[0], g[1], total * 4);
    }
    free(p), free(g[0]), free(g[1]);
}

/* A library older than ABI 2.4 (a table that ends before the wide BCE):
 * the trainer takes foxjit_bce_with_logits and allocates no workspace for
 * it, and the step's loss is the same. */
static void test_older_library_uses_narrow_bce(void **state)
{
    (void)state;
    const ft_dims d = {3, 5, 6, 8, 4, 3};
    foxjit_runtime *rt = (foxjit_runtime *)(uintptr_t)0x1000;
    float loss[2];
    for (int older = 0; older < 2; older++) {
        foxjit_api a = api;
        if (older) {
            a.struct_size = offsetof(foxjit_api, bce_with_logits_workspace_size);
            /* Past the table's end: a trainer that reads them crashes. */
            a.bce_with_logits_workspace_size = NULL;
            a.bce_with_logits_wide = NULL;
        }
        ft_model m;
        assert_int_equal(ft_model_alloc(&m, &a, rt, &cu, &d, FT_PATH_SEQUENCE), 0);
        assert_true(older ? m.bce_work == 0 && m.bce_work_bytes == 0 : m.bce_work != 0);
        size_t total = ft_param_total(&d);
        float *p = malloc(total * 4);
        ft_params_init(&d, 11, p);
        assert_int_equal(ft_model_set_state(&m, p, NULL, NULL, 0, NULL), 0);
        for (size_t i = 0; i < m.in_layout.floats; i++)
            HP(m.batch_in)[i] = 0.25f * (float)(i % 4);
        const ft_hparams hp = {1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f};
        trace_n = 0, tracing = 1;
        assert_int_equal(ft_model_step(&m, &hp, (CUstream)(uintptr_t)0x77), FOXJIT_OK);
        tracing = 0;
        int narrow = 0, wide = 0;
        for (int i = 0; i < trace_n; i++) {
            narrow += !strcmp(trace[i].what, "bce_with_logits");
            wide += !strcmp(trace[i].what, "bce_with_logits_wide");
        }
        assert_int_equal(narrow, older ? 2 : 0);
        assert_int_equal(wide, older ? 0 : 2);
        loss[older] = HP(m.loss)[0];
        free(p);
        ft_model_free(&m);
    }
    /* Both emulated forms are the same float64 reference, so this checks
     * only that either path runs the whole step to a loss. */
    assert_true(isfinite(loss[0]) && loss[0] > 0);
    assert_memory_equal(&loss[0], &loss[1], sizeof loss[0]);
}

/* ---- the training loop (tools/fox-train/train.c) on the emulation -------------- */

static char dir[] = "/tmp/fox-train-loop-XXXXXX";

/* Runs ft_train with the arguments (NULL-terminated) on the emulated
 * environment; returns its exit status. */
static int train(const char *first, ...)
{
    char *argv[40] = {"fox-train", (char *)first};
    int argc = 2;
    va_list ap;
    va_start(ap, first);
    for (char *a; (a = va_arg(ap, char *)) && argc < 39;)
        argv[argc++] = a;
    va_end(ap);
    ft_options o;
    char why[512];
    if (ft_parse_args(argc, argv, &o, why, sizeof why) != FT_PARSE_OK)
        fail_msg("%s", why);
    ft_env e;
    memset(&e, 0, sizeof e);
    e.api = &api;
    e.cu = cu;
    e.rt = (foxjit_runtime *)(uintptr_t)0x1000;
    snprintf(e.device_name, sizeof e.device_name, "host emulation");
    return ft_train(&e, &o);
}

static char *in_dir(const char *name)
{
    static char buf[8][300];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 300, "%s/%s", dir, name);
    return p;
}

/* The loss_bits column of a CSV, rows in order. */
static int read_bits(const char *path, unsigned *bits, float *loss, int max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("no %s", path);
    char line[200];
    int n = 0, step;
    if (!fgets(line, sizeof line, f))
        fail_msg("%s is empty", path);
    while (n < max && fgets(line, sizeof line, f))
        if (sscanf(line, "%d,%g,%x", &step, &loss[n], &bits[n]) == 3)
            n++;
    fclose(f);
    return n;
}

static int same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    for (int ca = 0, cb = 0; same && ca != EOF;) {
        ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* Resume continues bit for bit, across an epoch boundary (12 sequences in
 * batches of 4: 3 steps per epoch), and a contradicting option is refused. */
static void test_loop_resume_is_exact(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    const char *common[] = {"--batch", "4", "--k", "3", "--train-size", "12",
                            "--heldout-size", "8", "--quiet"};
    assert_int_equal(train(common[0], common[1], common[2], common[3], common[4], common[5],
                           common[6], common[7], common[8], "--steps", "8", "--csv",
                           in_dir("whole.csv"), "--checkpoint", in_dir("whole.ckpt"), NULL),
                     0);
    assert_int_equal(train(common[0], common[1], common[2], common[3], common[4], common[5],
                           common[6], common[7], common[8], "--steps", "4",
                           "--checkpoint", in_dir("first.ckpt"), "--checkpoint-every", "2",
                           NULL), 0);
    assert_int_equal(train("--resume", in_dir("first.ckpt"), "--steps", "8", "--quiet",
                           "--csv", in_dir("resumed.csv"), "--checkpoint",
                           in_dir("resumed.ckpt"), NULL), 0);
    unsigned wb[16], rb[16];
    float wl[16], rl[16];
    assert_int_equal(read_bits(in_dir("whole.csv"), wb, wl, 16), 8);
    assert_int_equal(read_bits(in_dir("resumed.csv"), rb, rl, 16), 4);
    for (int i = 0; i < 4; i++)
        if (wb[4 + i] != rb[i])
            fail_msg("step %d: resumed loss %.9g, uninterrupted %.9g", 5 + i, (double)rl[i],
                     (double)wl[4 + i]);
    assert_true(same_file(in_dir("whole.ckpt"), in_dir("resumed.ckpt")));
    assert_int_equal(train("--resume", in_dir("first.ckpt"), "--lr", "0.5", NULL),
                     FT_EXIT_USAGE);
    assert_int_equal(train("--resume", in_dir("first.ckpt"), "--batch", "4", "--steps", "5",
                           "--quiet", NULL), 0);
    assert_int_equal(train("--resume", in_dir("nothing.ckpt"), NULL), FT_EXIT_USAGE);
    /* Reporting every 3 steps (each point writes the losses up to the
     * previous one, the end all of them) writes the curve of a run that
     * reports only at its end. */
    assert_int_equal(train(common[0], common[1], common[2], common[3], common[4], common[5],
                           common[6], common[7], common[8], "--steps", "8", "--progress", "3",
                           "--csv", in_dir("p3.csv"), NULL), 0);
    assert_true(same_file(in_dir("whole.csv"), in_dir("p3.csv")));
    /* A lagged point right after a checkpoint's full wait: no row twice,
     * and the status lines go on, each step once. Every 2 steps, a
     * checkpoint every 3: lines at the points' lagged steps 3, 6 and 8. */
    char out[4096];
    fd_capture cap;
    fd_capture_begin(&cap, 2);
    int rc = train(common[0], common[1], common[2], common[3], common[4], common[5], common[6],
                   common[7], "--steps", "8", "--progress", "2", "--checkpoint-every", "3",
                   "--checkpoint", in_dir("pc.ckpt"), "--csv", in_dir("pc.csv"), NULL);
    fd_capture_end(&cap, out, sizeof out);
    assert_int_equal(rc, 0);
    assert_true(same_file(in_dir("whole.csv"), in_dir("pc.csv")));
    int steps[8], lines = 0;
    for (const char *p = out; (p = strstr(p, "step ")) && lines < 8; p += 5)
        if (sscanf(p, "step %d/8", &steps[lines]) == 1)
            lines++;
    if (lines != 3 || steps[0] != 3 || steps[1] != 6 || steps[2] != 8)
        fail_msg("status lines: want steps 3, 6, 8; got %d line(s):\n%s", lines, out);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* On the constant-direction signal the loss falls fast. */
static void test_loop_learns_constant_signal(void **state)
{
    (void)state;
    char path[] = "/tmp/fox-train-loop-csv-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(train("--batch", "4", "--k", "4", "--train-size", "64", "--heldout-size",
                           "16", "--signal", "constant", "--lr", "3e-3", "--steps", "40",
                           "--csv", path, NULL), 0);
    unsigned bits[64];
    float loss[64];
    assert_int_equal(read_bits(path, bits, loss, 64), 40);
    printf("  constant signal: loss %.4f at step 1, %.4f at step 40\n", (double)loss[0],
           (double)loss[39]);
    assert_true(loss[39] < 0.25f * loss[0]);
    unlink(path);
}

/* `--dump-step`: the file holds what its header comment says, and its
 * parameters and batch give its loss and gradients through the float64
 * reference model (what tools/torch_peer.py relies on). */
static void dump_matches_reference(const char *path_flag)
{
    char path[] = "/tmp/fox-train-dump-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char *argv[] = {"fox-train", "--dump-step", path, "--batch", "3", "--k", "4",
                    "--train-size", "8", "--quiet", (char *)path_flag, NULL};
    ft_options o;
    char why[512];
    assert_int_equal(ft_parse_args(path_flag ? 11 : 10, argv, &o, why, sizeof why),
                     FT_PARSE_OK);
    ft_env e;
    memset(&e, 0, sizeof e);
    e.api = &api, e.cu = cu, e.rt = (foxjit_runtime *)(uintptr_t)0x1000;
    assert_int_equal(ft_dump_step(&e, &o), FT_EXIT_OK);

    const ft_dims d = {3, 4, FT_DEFAULT_F, FT_DEFAULT_D, FT_DEFAULT_E, FT_DEFAULT_H};
    size_t total = ft_param_total(&d), B = 3, K = 4;
    size_t nx = B * K * d.f, nt = B * K, nz = (K + 1) * B * d.h;
    size_t floats = 2 * total + nx + nt + nz + 1;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char magic[8];
    int32_t dims[6];
    float *v = malloc(floats * 4 + 4);
    assert_int_equal(fread(magic, 1, 8, f), 8);
    assert_memory_equal(magic, "FJSTEP1\n", 8);
    assert_int_equal(fread(dims, sizeof dims, 1, f), 1);
    assert_int_equal(fread(v, 4, floats + 1, f), floats);  /* and nothing after */
    fclose(f);
    unlink(path);
    const int32_t want_dims[6] = {d.batch, d.k, d.f, d.d, d.e, d.h};
    assert_memory_equal(dims, want_dims, sizeof dims);
    float *init = malloc(total * 4);
    ft_params_init(&d, o.seed, init);
    assert_memory_equal(v, init, total * 4);

    pr_model_dims rd = {d.batch, d.k, d.f, d.d, d.e, d.h};
    double *P[PR_PARAM_COUNT], *G[PR_PARAM_COUNT];
    for (int i = 0; i < PR_PARAM_COUNT; i++) {
        size_t n = ft_param_size(&d, i);
        P[i] = malloc(n * 8), G[i] = malloc(n * 8);
        for (size_t j = 0; j < n; j++)
            P[i][j] = v[ft_param_offset(&d, i) + j];
    }
    const float *fx = v + total, *fdt = fx + nx, *flab = fdt + nt, *floss = flab + nz,
                *fgrad = floss + 1;
    double *x = malloc(nx * 8), *dt = malloc(nt * 8), *lab = malloc(nz * 8), *dz = malloc(nz * 8);
    for (size_t i = 0; i < nx; i++)
        x[i] = fx[i];
    for (size_t i = 0; i < nt; i++)
        dt[i] = fdt[i];
    for (size_t i = 0; i < nz; i++)
        lab[i] = flab[i];
    pr_model_acts acts;
    assert_int_equal(pr_model_acts_alloc(&rd, &acts), 1);
    pr_model_forward(&rd, P, x, dt, &acts);
    double want = pr_model_loss(&rd, acts.z, lab, dz);
    pr_model_backward(&rd, P, x, dt, &acts, dz, G, NULL);
    assert_true(fabs(*floss - want) <= 1e-5 * fabs(want));
    for (int i = 0; i < PR_PARAM_COUNT; i++) {
        size_t n = ft_param_size(&d, i);
        double scale = 0;
        for (size_t j = 0; j < n; j++)
            scale = fmax(scale, fabs(G[i][j]));
        for (size_t j = 0; j < n; j++)
            if (!(fabs(fgrad[ft_param_offset(&d, i) + j] - G[i][j]) <= 1e-4 * scale + 1e-7))
                fail_msg("dump %s[%zu]: %.9g, reference %.9g", ft_param_name(i), j,
                         (double)fgrad[ft_param_offset(&d, i) + j], G[i][j]);
        free(P[i]), free(G[i]);
    }
    pr_model_acts_free(&acts);
    free(x), free(dt), free(lab), free(dz), free(v), free(init);
}

/* The feed (feed.c) over several epochs, as a run and a resumed run call
 * it: the batch of every step is the one ft_epoch_order and ft_data_pack
 * give, whole or as a rank's slice, with the next unit packed by the
 * packer thread while one trains. (The emulated copies happen at once, so
 * this checks the data and the epoch bookkeeping; the stream order of the
 * uploads is checked on a GPU by gpu/trainer's bitwise curves.) */
static void check_feed_units(int global_batch, int rank, int ranks, int64_t first,
                             int64_t steps, int unit_batches)
{
    ft_dataset data;
    assert_int_equal(ft_data_generate(&data, 40, 3, 4, 2, FT_SIGNAL_RULE, 5, FT_STREAM_TRAIN),
                     0);
    const int per = global_batch / ranks, bpe = data.n / global_batch;
    ft_batch_layout l;
    ft_batch_layout_for(per, data.k, data.f, data.h, &l);
    ft_feed f;
    if (unit_batches) {
        /* A cap a little short of unit_batches + 1 batches. */
        size_t cap = (size_t)(unit_batches + 1) * l.floats * sizeof(float) - 1;
        assert_int_equal(ft_feed_open_units(&f, &cu, &data, global_batch, rank, ranks, 5, cap),
                         0);
        if (unit_batches < 2 * bpe) {
            assert_int_equal(f.unit_batches, unit_batches < bpe ? unit_batches : bpe);
            assert_int_equal(f.units_per_epoch, (bpe + f.unit_batches - 1) / f.unit_batches);
        }
        if (unit_batches >= 2 * bpe) {   /* whole epochs, as many as fit, up to 16 batches */
            assert_int_equal(f.epochs_per_unit, unit_batches / bpe < (16 + bpe - 1) / bpe
                                                    ? unit_batches / bpe
                                                    : (16 + bpe - 1) / bpe);
            assert_int_equal(f.unit_batches, f.epochs_per_unit * bpe);
            assert_int_equal(f.units_per_epoch, 1);
        }
    } else {
        /* Every epoch fits: short ones go together, up to 16 batches. */
        assert_int_equal(ft_feed_open_slice(&f, &cu, &data, global_batch, rank, ranks, 5), 0);
        assert_int_equal(f.epochs_per_unit, (16 + bpe - 1) / bpe);
        assert_int_equal(f.unit_batches, f.epochs_per_unit * bpe);
        assert_int_equal(f.units_per_epoch, 1);
    }
    float *want = malloc(l.floats * sizeof(float));
    int *perm = malloc((size_t)data.n * sizeof(int));
    CUdeviceptr dst;
    assert_int_equal(h_alloc(&dst, l.floats * sizeof(float)), CUDA_SUCCESS);
    const CUstream s = (CUstream)(uintptr_t)0x77;
    for (int64_t i = first; i < first + steps; i++) {
        assert_int_equal(ft_feed_batch(&f, i, dst, s), 0);
        ft_epoch_order(data.n, 5, (uint64_t)(i / bpe), perm);
        ft_data_pack(&data, perm + (i % bpe) * global_batch + rank * per, per, &l, want);
        if (memcmp(HP(dst), want, l.floats * sizeof(float)))
            fail_msg("step %lld (epoch %lld, batch %lld), rank %d of %d: not the epoch's batch",
                     (long long)i, (long long)(i / bpe), (long long)(i % bpe), rank, ranks);
    }
    ft_feed_close(&f);
    h_free(dst);
    free(want), free(perm);
    ft_data_free(&data);
}

static void check_feed(int global_batch, int rank, int ranks, int64_t first, int64_t steps)
{
    check_feed_units(global_batch, rank, ranks, first, steps, 0);
}

/* An upload that never completes (it queued behind an all-reduce a
 * stopped peer never joins): with give_up set, the feed stops waiting
 * when it says so, instead of hanging. */
static CUresult never_ready(CUevent e)
{
    (void)e;
    return CUDA_ERROR_NOT_READY;
}
static int polls;
static int give_up_after_3(void *arg)
{
    (void)arg;
    return ++polls > 3;
}

static void check_feed_gives_up(void)
{
    ft_dataset data;
    assert_int_equal(ft_data_generate(&data, 40, 3, 4, 2, FT_SIGNAL_RULE, 5, FT_STREAM_TRAIN),
                     0);
    ft_feed f;
    /* Units of one epoch (5 batches; the default puts 4 epochs in one). */
    ft_batch_layout l;
    ft_batch_layout_for(8, data.k, data.f, data.h, &l);
    assert_int_equal(ft_feed_open_units(&f, &cu, &data, 8, 0, 1, 5, 5 * l.floats * sizeof(float)),
                     0);
    assert_int_equal(f.unit_batches, 5);
    /* The packing threads come from the CPUs this process may use: one
     * when bound to one CPU (taskset, a launcher's binding, a cpuset),
     * and then shared by the ranks of the host. */
    cpu_set_t all, one;
    assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
    const int n_cpus = CPU_COUNT(&all);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &one);
            break;
        }
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    ft_feed_share_cores(&f, 1);
    const int bound = f.pack_threads;
    assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
    assert_int_equal(bound, 1);
    ft_feed_share_cores(&f, 1);
    assert_int_equal(f.pack_threads, n_cpus < 5 ? n_cpus : 5);   /* no more than the batches */
    ft_feed_share_cores(&f, n_cpus);
    assert_int_equal(f.pack_threads, 1);
    f.give_up = give_up_after_3;
    CUdeviceptr dst;
    assert_int_equal(h_alloc(&dst, f.layout.floats * sizeof(float)), CUDA_SUCCESS);
    const ft_cuda saved = cu;
    cu.cuEventQuery = never_ready;
    polls = 0;
    /* Epoch 0 packs 1 ahead; entering epoch 1 asks for 2, whose staging
     * buffer epoch 0's upload (never done) last read. */
    int rc = 0;
    int64_t i = 0;
    for (; i < 10 && rc == 0; i++)
        rc = ft_feed_batch(&f, i, dst, (CUstream)(uintptr_t)0x77);
    cu = saved;
    assert_int_equal(rc, -1);
    assert_int_equal(i, 6);     /* the first step of epoch 1 */
    assert_int_equal(polls, 4);
    ft_feed_close(&f);
    h_free(dst);
    ft_data_free(&data);
}

/* The reporting points' waits (pacer.c): a point knows the steps up to
 * the previous point done, never fewer than the last point knew, and
 * waits only for an event it recorded and has not waited for. */
static int pacer_waits;
static int count_wait(void *arg, CUevent ev)
{
    (void)arg, (void)ev;
    pacer_waits++;
    return 0;
}

static void test_pacer(void **state)
{
    (void)state;
    ft_pacer p;
    assert_int_equal(ft_pacer_open(&p, &cu, (CUstream)(uintptr_t)0x77), 0);
    p.wait = count_wait;
    pacer_waits = 0;
    static const struct {
        int64_t done;
        int all;
        int64_t upto;
        int waits;   /* so far */
    } pts[] = {{2, 0, 0, 0}, {3, 1, 3, 1}, {4, 0, 3, 1}, {6, 0, 4, 2},
               {8, 1, 8, 3}, {10, 0, 8, 3}, {12, 0, 10, 4}};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        int64_t upto = -1;
        assert_int_equal(ft_pacer_point(&p, pts[i].done, pts[i].all, &upto), 0);
        if (upto != pts[i].upto || pacer_waits != pts[i].waits)
            fail_msg("point %zu (step %lld, %s): upto %lld after %d waits; want %lld after %d",
                     i, (long long)pts[i].done, pts[i].all ? "all" : "lagged", (long long)upto,
                     pacer_waits, (long long)pts[i].upto, pts[i].waits);
    }
    /* After the caller waited for everything: steps count from 0 again,
     * nothing to wait for. */
    ft_pacer_restart(&p);
    int64_t upto = -1;
    assert_int_equal(ft_pacer_point(&p, 3, 0, &upto), 0);
    assert_int_equal(upto, 0);
    assert_int_equal(pacer_waits, 4);
    assert_int_equal(ft_pacer_point(&p, 6, 0, &upto), 0);
    assert_int_equal(upto, 3);
    assert_int_equal(pacer_waits, 5);
    ft_pacer_close(&p);
}

static void test_feed_follows_epoch_order(void **state)
{
    (void)state;
    check_feed_gives_up();
    check_feed(8, 0, 1, 0, 27);     /* 5 batches an epoch (40 sequences), 5+ epochs */
    check_feed(8, 0, 1, 13, 9);     /* resumed in the middle of epoch 2 */
    check_feed(8, 1, 2, 0, 17);     /* rank 1's half of each global batch */
    check_feed(40, 0, 1, 0, 4);     /* one batch an epoch: a new epoch every step */
    check_feed(20, 2, 4, 3, 6);     /* rank 2 of 4, resumed at an epoch's start */
    /* Epochs in units (feed.h): 5 batches in units of 2, 2 and 1, so units
     * of an epoch alternate the two buffers with the epoch's order cached
     * in each, and odd epochs start in the other buffer. */
    check_feed_units(8, 0, 1, 0, 27, 2);
    check_feed_units(8, 0, 1, 13, 9, 2);    /* resumed inside epoch 2's second unit */
    check_feed_units(8, 1, 2, 0, 17, 3);    /* a rank's slices, units of 3 and 2 */
    check_feed_units(8, 0, 1, 0, 12, 1);    /* a batch a unit */
    check_feed_units(20, 2, 4, 3, 6, 1);    /* 2 batches an epoch, a unit each */
    check_feed_units(8, 0, 1, 0, 11, 9);    /* a cap above the epoch: one unit */
    /* Short epochs go together: 5 batches an epoch, 2 epochs a unit where
     * 10 batches fit (the default cap takes 4, 16 batches or more, as
     * check_feed above does), resumed inside a unit's second epoch. */
    check_feed_units(8, 0, 1, 0, 33, 12);
    check_feed_units(8, 0, 1, 7, 20, 12);
    check_feed_units(8, 1, 2, 3, 25, 10);
    check_feed_units(40, 0, 1, 0, 40, 0);   /* one batch an epoch: 16 epochs a unit */
}

static void test_dump_step(void **state)
{
    (void)state;
    dump_matches_reference(NULL);
    dump_matches_reference("--per-step");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_matches_reference_model),
        cmocka_unit_test(test_per_step_path_matches_reference_model),
        cmocka_unit_test(test_sequence_step_streams),
        cmocka_unit_test(test_older_library_uses_narrow_bce),
        cmocka_unit_test(test_colsum_workspaces),
        cmocka_unit_test(test_older_library_uses_reduce_axis0),
        cmocka_unit_test(test_loop_resume_is_exact),
        cmocka_unit_test(test_loop_learns_constant_signal),
        cmocka_unit_test(test_feed_follows_epoch_order),
        cmocka_unit_test(test_pacer),
        cmocka_unit_test(test_dump_step),
    };
    return cmocka_run_group_tests_name("train_model_host", tests, setup, NULL);
}
