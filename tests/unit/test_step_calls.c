/* unit: the exact calls of the reference model's training step
 * (tools/fox-train/model.c), recorded against a foxjit_api table and a
 * driver that only write down what they are asked, and compared line by
 * line with tests/unit/step_calls.txt: fox-train's steps, and `fox-jit
 * bench kloop`'s (tools/kloop: the same step on every path, and the calls
 * it times one at a time).
 *
 * Each line is one library or driver call with every argument: sizes,
 * flags, strides, and each device pointer named by the buffer it points
 * into and its offset in floats ("grad.heads.w1+0", "heads_stack+1234"),
 * so the recording does not depend on where the buffers lie, only on
 * what each call is given. A step that changes a call, an argument or the
 * order changes the recording: fox-train's loss curve is bitwise the same
 * only while it is not. Regenerate the file on purpose with
 * FOXJIT_STEP_CALLS_WRITE=<path>, and say in the commit why it changed.
 *
 *   unit_step_calls EXPECTED_FILE */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "params.h"
#include "stepper.h"

/* ---- the recording ------------------------------------------------------------ */

static char *rec;
static size_t rec_len, rec_cap;
static int recording;

static void put(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void put(const char *fmt, ...)
{
    if (!recording)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (rec_len + (size_t)n + 1 > rec_cap) {
        rec_cap = (rec_len + (size_t)n + 1) * 2;
        rec = realloc(rec, rec_cap);
        assert_non_null(rec);
    }
    va_start(ap, fmt);
    vsnprintf(rec + rec_len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rec_len += (size_t)n;
}

/* The buffers pointers are named by: a pointer is named by the smallest
 * buffer that holds it (a tensor before the span or batch it lies in). */
typedef struct region {
    char name[40];
    uintptr_t lo;
    size_t bytes;
} region;
static region regions[160];
static int n_regions;

static void region_add(const char *name, CUdeviceptr lo, size_t bytes)
{
    if (!lo)
        return;
    assert_true(n_regions < (int)(sizeof regions / sizeof regions[0]));
    region *r = &regions[n_regions++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->lo = (uintptr_t)lo, r->bytes = bytes;
}

static const char *ptr(CUdeviceptr p)
{
    static char ring[16][64];
    static int next;
    char *out = ring[next++ % 16];
    if (!p)
        return "0";
    const region *best = NULL;
    for (int i = 0; i < n_regions; i++) {
        const region *r = &regions[i];
        if ((uintptr_t)p >= r->lo && (uintptr_t)p < r->lo + r->bytes &&
            (!best || r->bytes < best->bytes))
            best = r;
    }
    if (!best)
        fail_msg("pointer %#llx lies in no buffer of the model", (unsigned long long)p);
    snprintf(out, 64, "%s+%llu", best->name,
             (unsigned long long)(((uintptr_t)p - best->lo) / sizeof(float)));
    return out;
}

/* Streams and events by their role. */
static CUstream main_stream;
static const ft_model *model;

static const char *stream_name(CUstream s)
{
    if (s == main_stream)
        return "s";
    if (model && s == model->side)
        return "side";
    return s ? "?stream" : "null";
}

static const char *event_name(CUevent e)
{
    if (model && e == model->fork)
        return "fork";
    if (model && e == model->join)
        return "join";
    return "?event";
}

/* ---- the recording library ------------------------------------------------------ */

#define P(f) put(" " #f "=%s", ptr(a->f))
#define I(f) put(" " #f "=%lld", (long long)a->f)
#define F(f) put(" " #f "=%.9g", (double)a->f)

static void cfc_fields(const foxjit_cfc_args *a)
{
    I(batch), I(n_in), I(n_hid), P(w_in), P(w_rec), P(bias), P(tau), P(x), I(x_stride), P(h),
        I(h_stride), P(dt), I(dt_stride), P(u), I(u_stride), P(h_out), I(h_out_stride),
        P(dh_out), I(dh_out_stride), P(dh), I(dh_stride), I(dh_accumulate), P(dx),
        I(dx_stride), I(dx_accumulate), P(dw_in), P(dw_rec), P(dbias), P(dtau);
}

static void heads_fields(const foxjit_heads_args *a)
{
    I(batch), I(d), I(e), I(h), P(w1), P(b1), P(w2), P(b2), P(w_gate), P(b_gate), P(w_main),
        P(b_main), P(w_skip), P(b_skip), P(x), I(x_stride), P(logits), I(logits_stride),
        P(dlogits), I(dlogits_stride), P(dx), I(dx_stride), I(dx_accumulate), P(dw1), P(db1),
        P(dw2), P(db2), P(dw_gate), P(db_gate), P(dw_main), P(db_main), P(dw_skip),
        P(db_skip), I(steps), I(x_step_stride), I(logits_step_stride),
        I(dlogits_step_stride), I(dx_step_stride), P(work), I(work_bytes);
}

static void vsn_fields(const foxjit_vsn_args *a)
{
    I(batch), I(t), I(f), P(w), P(bias), P(x), P(y), P(dy), P(dx), I(dx_accumulate), P(dw),
        P(dbias);
}

static void attn_fields(const foxjit_attn_pool_args *a)
{
    I(batch), I(t), I(d), P(q), P(hs), P(pooled), P(dpooled), P(dhs), I(dhs_accumulate),
        P(dq);
}

static void cfc_seq_fields(const foxjit_cfc_seq_args *a)
{
    I(batch), I(k), I(n_in), I(n_hid), P(w_in), P(w_rec), P(bias), P(tau), P(x), P(dt),
        P(h_init), P(h), P(u), P(dh), P(dx), I(dx_accumulate), P(dh_init),
        I(dh_init_accumulate), P(dw_in), P(dw_rec), P(dbias), P(dtau), I(grad_accumulate),
        P(work), I(work_bytes);
}

static void heads_seq_fields(const foxjit_heads_seq_args *a)
{
    I(batch), I(steps), I(d), I(e), I(h), P(w1), P(b1), P(w2), P(b2), P(w_gate), P(b_gate),
        P(w_main), P(b_main), P(w_skip), P(b_skip), P(x), I(x_stride), I(x_step_stride),
        P(logits), I(logits_stride), I(logits_step_stride), P(dlogits), I(dlogits_stride),
        I(dlogits_step_stride), P(dx), I(dx_stride), I(dx_step_stride), I(dx_accumulate),
        P(dw1), P(db1), P(dw2), P(db2), P(dw_gate), P(db_gate), P(dw_main), P(db_main),
        P(dw_skip), P(db_skip), I(grad_accumulate), P(work), I(work_bytes);
}

static void vsn_seq_fields(const foxjit_vsn_seq_args *a)
{
    I(batch), I(t), I(f), P(w), P(bias), P(x), P(dy), P(dx), I(dx_accumulate), P(dw),
        P(dbias), I(grad_accumulate), P(work), I(work_bytes);
}

static void adamw_fields(const foxjit_adamw_args *a)
{
    I(n), P(param), P(grad), P(m), P(v), P(step), F(lr), F(beta1), F(beta2), F(eps),
        F(weight_decay);
}

#undef P
#undef I
#undef F

/* r_<fn> records the library's entry fn; sb_<fn> the single-block path's
 * (the bench's baselines, "single_block.<fn>"). */
#define LINE_CALL(name, label, type, fields)                                             \
    static foxjit_status name(foxjit_runtime *rt, const type *a, CUstream s)            \
    {                                                                                    \
        (void)rt;                                                                        \
        put(label " %s", stream_name(s));                                                \
        fields(a);                                                                       \
        put("\n");                                                                       \
        return FOXJIT_OK;                                                                \
    }
#define STRUCT_CALL(fn, type, fields) LINE_CALL(r_##fn, #fn, type, fields)
#define SINGLE_BLOCK_CALL(fn, type, fields) LINE_CALL(sb_##fn, "single_block." #fn, type, fields)
STRUCT_CALL(cfc_forward, foxjit_cfc_args, cfc_fields)
STRUCT_CALL(cfc_backward, foxjit_cfc_args, cfc_fields)
STRUCT_CALL(heads_forward, foxjit_heads_args, heads_fields)
STRUCT_CALL(heads_backward, foxjit_heads_args, heads_fields)
STRUCT_CALL(vsn_forward, foxjit_vsn_args, vsn_fields)
STRUCT_CALL(vsn_backward, foxjit_vsn_args, vsn_fields)
STRUCT_CALL(attn_pool_forward, foxjit_attn_pool_args, attn_fields)
STRUCT_CALL(attn_pool_backward, foxjit_attn_pool_args, attn_fields)
STRUCT_CALL(cfc_seq_forward, foxjit_cfc_seq_args, cfc_seq_fields)
STRUCT_CALL(cfc_seq_backward, foxjit_cfc_seq_args, cfc_seq_fields)
STRUCT_CALL(heads_seq_forward, foxjit_heads_seq_args, heads_seq_fields)
STRUCT_CALL(heads_seq_backward, foxjit_heads_seq_args, heads_seq_fields)
STRUCT_CALL(vsn_seq_backward, foxjit_vsn_seq_args, vsn_seq_fields)
STRUCT_CALL(adamw, foxjit_adamw_args, adamw_fields)
SINGLE_BLOCK_CALL(cfc_backward, foxjit_cfc_args, cfc_fields)
SINGLE_BLOCK_CALL(heads_backward, foxjit_heads_args, heads_fields)
SINGLE_BLOCK_CALL(vsn_backward, foxjit_vsn_args, vsn_fields)
SINGLE_BLOCK_CALL(attn_pool_backward, foxjit_attn_pool_args, attn_fields)
#undef SINGLE_BLOCK_CALL
#undef STRUCT_CALL
#undef LINE_CALL

/* The heads' forward with its save, and the backward from it. */
#define SAVE_CALL(fn)                                                                    \
    static foxjit_status r_##fn(foxjit_runtime *rt, const foxjit_heads_seq_args *a,     \
                                CUdeviceptr saved, size_t bytes, CUstream s)             \
    {                                                                                    \
        (void)rt;                                                                        \
        put(#fn " %s saved=%s saved_bytes=%zu", stream_name(s), ptr(saved), bytes);     \
        heads_seq_fields(a);                                                             \
        put("\n");                                                                       \
        return FOXJIT_OK;                                                                \
    }
SAVE_CALL(heads_seq_forward_save)
SAVE_CALL(heads_seq_backward_saved)
#undef SAVE_CALL

static foxjit_status r_reduce_axis0(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                    int64_t cols, CUdeviceptr out, CUstream s)
{
    (void)rt;
    put("reduce_axis0 %s x=%s rows=%lld cols=%lld out=%s\n", stream_name(s), ptr(x),
        (long long)rows, (long long)cols, ptr(out));
    return FOXJIT_OK;
}

static foxjit_status r_column_sum_split(foxjit_runtime *rt, CUdeviceptr x, int64_t rows,
                                        int64_t cols, CUdeviceptr out, int accumulate,
                                        CUdeviceptr work, size_t work_bytes, CUstream s)
{
    (void)rt;
    put("column_sum_split %s x=%s rows=%lld cols=%lld out=%s accumulate=%d work=%s "
        "work_bytes=%zu\n", stream_name(s), ptr(x), (long long)rows, (long long)cols, ptr(out),
        accumulate, ptr(work), work_bytes);
    return FOXJIT_OK;
}

static foxjit_status r_bce(foxjit_runtime *rt, CUdeviceptr z, CUdeviceptr y, int64_t n,
                           CUdeviceptr loss, int acc, CUdeviceptr dz, CUstream s)
{
    (void)rt;
    put("bce_with_logits %s z=%s y=%s n=%lld loss=%s accumulate=%d dz=%s\n", stream_name(s),
        ptr(z), ptr(y), (long long)n, ptr(loss), acc, ptr(dz));
    return FOXJIT_OK;
}

static foxjit_status r_bce_wide(foxjit_runtime *rt, CUdeviceptr z, CUdeviceptr y, int64_t n,
                                CUdeviceptr loss, int acc, CUdeviceptr dz, CUdeviceptr work,
                                size_t work_bytes, CUstream s)
{
    (void)rt;
    put("bce_with_logits_wide %s z=%s y=%s n=%lld loss=%s accumulate=%d dz=%s work=%s "
        "work_bytes=%zu\n", stream_name(s), ptr(z), ptr(y), (long long)n, ptr(loss), acc,
        ptr(dz), ptr(work), work_bytes);
    return FOXJIT_OK;
}

static foxjit_status r_increment_step(foxjit_runtime *rt, CUdeviceptr step, CUstream s)
{
    (void)rt;
    put("increment_step %s step=%s\n", stream_name(s), ptr(step));
    return FOXJIT_OK;
}

/* Workspace sizes: made-up rules that differ per argument, so a call with
 * other arguments sizes other buffers. */
static size_t r_heads_ws(int batch, int steps, int e, int h)
{
    put("heads_workspace_size batch=%d steps=%d e=%d h=%d\n", batch, steps, e, h);
    return steps > 1 ? (size_t)steps * batch * h * (4 * (size_t)e + 4) * 4 : 0;
}

static foxjit_status r_heads_seq_ws(foxjit_runtime *rt, int batch, int steps, int d, int e,
                                    int h, size_t *bytes)
{
    (void)rt;
    put("heads_seq_workspace_size batch=%d steps=%d d=%d e=%d h=%d\n", batch, steps, d, e, h);
    *bytes = (size_t)batch * steps * e * h * 4 + 64;
    return FOXJIT_OK;
}

static foxjit_status r_heads_seq_saved_size(foxjit_runtime *rt, int batch, int steps, int d,
                                            int e, int h, size_t *bytes)
{
    (void)rt;
    put("heads_seq_saved_size batch=%d steps=%d d=%d e=%d h=%d\n", batch, steps, d, e, h);
    *bytes = (size_t)batch * steps * e * h * 4 + 16;
    return FOXJIT_OK;
}

static foxjit_status r_cfc_seq_ws(foxjit_runtime *rt, int batch, int k, int n_in, int n_hid,
                                  size_t *bytes)
{
    (void)rt;
    put("cfc_seq_workspace_size batch=%d k=%d n_in=%d n_hid=%d\n", batch, k, n_in, n_hid);
    *bytes = (size_t)batch * k * n_hid * 4 + 32;
    return FOXJIT_OK;
}

static foxjit_status r_vsn_seq_ws(foxjit_runtime *rt, int batch, int t, int f, size_t *bytes)
{
    (void)rt;
    put("vsn_seq_workspace_size batch=%d t=%d f=%d\n", batch, t, f);
    *bytes = (size_t)batch * t * f * 4 + 48;
    return FOXJIT_OK;
}

static foxjit_status r_bce_ws(foxjit_runtime *rt, int64_t n, size_t *bytes)
{
    (void)rt;
    put("bce_with_logits_workspace_size n=%lld\n", (long long)n);
    *bytes = (size_t)((n + 2047) / 2048) * 8;
    return FOXJIT_OK;
}

static foxjit_status r_colsum_ws(foxjit_runtime *rt, int64_t rows, int64_t cols, size_t *bytes)
{
    (void)rt;
    put("column_sum_workspace_size rows=%lld cols=%lld\n", (long long)rows, (long long)cols);
    *bytes = 512 + (size_t)((rows + 1) / 2 * cols * 4 + 15) / 16 * 16;
    return FOXJIT_OK;
}

static foxjit_status r_prep1(const char *what, int a)
{
    put("%s %d\n", what, a);
    return FOXJIT_OK;
}
static foxjit_status r_vsn_prepare(foxjit_runtime *rt, int f)
{
    (void)rt;
    return r_prep1("vsn_prepare", f);
}
static foxjit_status r_vsn_seq_prepare(foxjit_runtime *rt, int f)
{
    (void)rt;
    return r_prep1("vsn_seq_prepare", f);
}
static foxjit_status r_attn_pool_prepare(foxjit_runtime *rt, int d)
{
    (void)rt;
    return r_prep1("attn_pool_prepare", d);
}
static foxjit_status r_cfc_prepare(foxjit_runtime *rt, int n_in, int n_hid)
{
    (void)rt;
    put("cfc_prepare %d %d\n", n_in, n_hid);
    return FOXJIT_OK;
}
static foxjit_status r_cfc_seq_prepare(foxjit_runtime *rt, int n_in, int n_hid)
{
    (void)rt;
    put("cfc_seq_prepare %d %d\n", n_in, n_hid);
    return FOXJIT_OK;
}
static foxjit_status r_heads_prepare(foxjit_runtime *rt, int d, int e, int h)
{
    (void)rt;
    put("heads_prepare %d %d %d\n", d, e, h);
    return FOXJIT_OK;
}
static foxjit_status r_heads_seq_prepare(foxjit_runtime *rt, int d, int e, int h)
{
    (void)rt;
    put("heads_seq_prepare %d %d %d\n", d, e, h);
    return FOXJIT_OK;
}
static foxjit_status r_training_prepare(foxjit_runtime *rt)
{
    (void)rt;
    put("training_prepare\n");
    return FOXJIT_OK;
}
static foxjit_status r_column_sum_prepare(foxjit_runtime *rt, int64_t rows, int64_t cols)
{
    (void)rt;
    put("column_sum_prepare %lld %lld\n", (long long)rows, (long long)cols);
    return FOXJIT_OK;
}
static foxjit_status r_column_sum_split_prepare(foxjit_runtime *rt, int64_t rows, int64_t cols)
{
    (void)rt;
    put("column_sum_split_prepare %lld %lld\n", (long long)rows, (long long)cols);
    return FOXJIT_OK;
}
static const char *r_status_string(foxjit_status st)
{
    (void)st;
    return "status";
}
static const char *r_last_error(void) { return "recorded"; }

static foxjit_api api = {
    .struct_size = sizeof(foxjit_api),
    .abi_major = FOXJIT_ABI_MAJOR,
    .abi_minor = 7,
    .status_string = r_status_string,
    .last_error = r_last_error,
    .reduce_axis0 = r_reduce_axis0,
    .column_sum_prepare = r_column_sum_prepare,
    .cfc_forward = r_cfc_forward,
    .cfc_backward = r_cfc_backward,
    .cfc_prepare = r_cfc_prepare,
    .heads_forward = r_heads_forward,
    .heads_backward = r_heads_backward,
    .heads_prepare = r_heads_prepare,
    .vsn_forward = r_vsn_forward,
    .vsn_backward = r_vsn_backward,
    .vsn_prepare = r_vsn_prepare,
    .attn_pool_forward = r_attn_pool_forward,
    .attn_pool_backward = r_attn_pool_backward,
    .attn_pool_prepare = r_attn_pool_prepare,
    .bce_with_logits = r_bce,
    .adamw = r_adamw,
    .increment_step = r_increment_step,
    .training_prepare = r_training_prepare,
    .heads_workspace_size = r_heads_ws,
    .cfc_seq_workspace_size = r_cfc_seq_ws,
    .cfc_seq_forward = r_cfc_seq_forward,
    .cfc_seq_backward = r_cfc_seq_backward,
    .cfc_seq_prepare = r_cfc_seq_prepare,
    .heads_seq_workspace_size = r_heads_seq_ws,
    .heads_seq_forward = r_heads_seq_forward,
    .heads_seq_backward = r_heads_seq_backward,
    .heads_seq_prepare = r_heads_seq_prepare,
    .vsn_seq_workspace_size = r_vsn_seq_ws,
    .vsn_seq_backward = r_vsn_seq_backward,
    .vsn_seq_prepare = r_vsn_seq_prepare,
    .heads_seq_saved_size = r_heads_seq_saved_size,
    .heads_seq_forward_save = r_heads_seq_forward_save,
    .heads_seq_backward_saved = r_heads_seq_backward_saved,
    .bce_with_logits_workspace_size = r_bce_ws,
    .bce_with_logits_wide = r_bce_wide,
    .column_sum_workspace_size = r_colsum_ws,
    .column_sum_split = r_column_sum_split,
    .column_sum_split_prepare = r_column_sum_split_prepare,
};

/* The single-block path's four backward entries (the bench's baselines). */
static const foxjit_api single_block = {
    .struct_size = sizeof(foxjit_api),
    .cfc_backward = sb_cfc_backward,
    .heads_backward = sb_heads_backward,
    .vsn_backward = sb_vsn_backward,
    .attn_pool_backward = sb_attn_pool_backward,
};

/* ---- the recording driver ---------------------------------------------------------- */

static CUresult d_alloc(CUdeviceptr *p, size_t n)
{
    put("cuMemAlloc bytes=%zu\n", n);
    void *m = aligned_alloc(256, (n + 255) & ~(size_t)255);
    *p = (CUdeviceptr)(uintptr_t)m;
    return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult d_free(CUdeviceptr p)
{
    put("cuMemFree\n");
    free((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
}
static CUresult d_memset32(CUdeviceptr d, unsigned v, size_t n, CUstream s)
{
    /* The model's own first memset is of everything, before the regions
     * are known: name it by its size only. */
    put("cuMemsetD32Async %s dst=%s value=%u n=%zu\n", stream_name(s),
        n_regions ? ptr(d) : "model", v, n);
    return CUDA_SUCCESS;
}
static CUresult d_sync(CUstream s)
{
    put("cuStreamSynchronize %s\n", stream_name(s));
    return CUDA_SUCCESS;
}
static CUresult d_priority_range(int *least, int *greatest)
{
    put("cuCtxGetStreamPriorityRange\n");
    *least = 0, *greatest = -5;
    return CUDA_SUCCESS;
}
static CUresult d_stream_create_priority(CUstream *s, unsigned flags, int priority)
{
    static uintptr_t next = 0x1000;
    put("cuStreamCreateWithPriority flags=%u priority=%d\n", flags, priority);
    *s = (CUstream)next++;
    return CUDA_SUCCESS;
}
static CUresult d_stream_destroy(CUstream s)
{
    put("cuStreamDestroy %s\n", stream_name(s));
    return CUDA_SUCCESS;
}
static CUresult d_event_create(CUevent *e, unsigned flags)
{
    static uintptr_t next = 0x2000;
    put("cuEventCreate flags=%u\n", flags);
    *e = (CUevent)next++;
    return CUDA_SUCCESS;
}
static CUresult d_event_destroy(CUevent e)
{
    put("cuEventDestroy %s\n", event_name(e));
    return CUDA_SUCCESS;
}
static CUresult d_event_record(CUevent e, CUstream s)
{
    put("cuEventRecord %s %s\n", event_name(e), stream_name(s));
    return CUDA_SUCCESS;
}
static CUresult d_stream_wait_event(CUstream s, CUevent e, unsigned flags)
{
    put("cuStreamWaitEvent %s %s flags=%u\n", stream_name(s), event_name(e), flags);
    return CUDA_SUCCESS;
}
static CUresult d_begin_capture(CUstream s, CUstreamCaptureMode mode)
{
    put("cuStreamBeginCapture %s mode=%d\n", stream_name(s), (int)mode);
    return CUDA_SUCCESS;
}
static CUresult d_end_capture(CUstream s, CUgraph *g)
{
    put("cuStreamEndCapture %s\n", stream_name(s));
    *g = (CUgraph)(uintptr_t)0x3000;
    return CUDA_SUCCESS;
}
static CUresult d_graph_nodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    (void)g, (void)nodes;
    *n = 0;
    return CUDA_SUCCESS;
}
static CUresult d_instantiate(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
    (void)g;
    put("cuGraphInstantiateWithFlags flags=%llu\n", flags);
    *e = (CUgraphExec)(uintptr_t)0x4000;
    return CUDA_SUCCESS;
}
static CUresult d_graph_destroy(CUgraph g)
{
    (void)g;
    return CUDA_SUCCESS;
}
static CUresult d_exec_destroy(CUgraphExec e)
{
    (void)e;
    return CUDA_SUCCESS;
}

static ft_cuda cu = {
    .cuMemAlloc = d_alloc,
    .cuMemFree = d_free,
    .cuMemsetD32Async = d_memset32,
    .cuStreamSynchronize = d_sync,
    .cuCtxGetStreamPriorityRange = d_priority_range,
    .cuStreamCreateWithPriority = d_stream_create_priority,
    .cuStreamDestroy = d_stream_destroy,
    .cuEventCreate = d_event_create,
    .cuEventDestroy = d_event_destroy,
    .cuEventRecord = d_event_record,
    .cuStreamWaitEvent = d_stream_wait_event,
    .cuStreamBeginCapture = d_begin_capture,
    .cuStreamEndCapture = d_end_capture,
    .cuGraphGetNodes = d_graph_nodes,
    .cuGraphInstantiateWithFlags = d_instantiate,
    .cuGraphDestroy = d_graph_destroy,
    .cuGraphExecDestroy = d_exec_destroy,
};

/* ---- the model's buffers ------------------------------------------------------------ */

static void model_regions(const ft_model *m)
{
    const ft_dims *d = &m->dims;
    const size_t B = (size_t)d->batch, K = (size_t)d->k, F = (size_t)d->f, D = (size_t)d->d,
                 H = (size_t)d->h, f4 = sizeof(float);
    char name[40];
    n_regions = 0;
    for (int i = 0; i < FT_PARAM_COUNT; i++) {
        const size_t n = ft_param_size(d, i) * f4;
        const struct {
            const char *what;
            CUdeviceptr p;
            size_t bytes;
        } t[5] = {{"param", m->param[i], n}, {"grad", m->grad[i], n},
                  {"scratch", m->scratch[i], B * n}, {"adam_m", m->m[i], n},
                  {"adam_v", m->v[i], n}};
        for (int k = 0; k < 5; k++) {
            snprintf(name, sizeof name, "%s.%s", t[k].what, ft_param_name(i));
            region_add(name, t[k].p, t[k].bytes);
        }
        snprintf(name, sizeof name, "colsum_work.%s", ft_param_name(i));
        region_add(name, m->colsum_work[i], m->colsum_work_bytes[i]);
    }
    region_add("heads_sum_work", m->heads_sum_work, m->heads_sum_work_bytes);
    region_add("x", m->x, B * K * F * f4);
    region_add("dt", m->dt, B * K * f4);
    region_add("labels", m->labels, (K + 1) * B * H * f4);
    region_add("batch_in", m->batch_in, m->in_layout.floats * f4);
    region_add("y", m->y, B * K * F * f4);
    region_add("hs", m->hs, B * K * D * f4);
    region_add("u", m->u, B * K * D * f4);
    region_add("pooled", m->pooled, B * D * f4);
    region_add("z", m->z, (K + 1) * B * H * f4);
    region_add("dz", m->dz, (K + 1) * B * H * f4);
    region_add("dhs", m->dhs, B * K * D * f4);
    region_add("dy", m->dy, B * K * F * f4);
    region_add("dpooled", m->dpooled, B * D * f4);
    region_add("heads_work", m->heads_work, m->heads_work_bytes);
    region_add("heads_pooled_work", m->heads_pooled_work, m->heads_pooled_work_bytes);
    region_add("heads_stack", m->heads_stack, 2 * m->heads_span_floats * f4);
    region_add("heads_saved", m->heads_saved, m->heads_saved_bytes);
    region_add("heads_pooled_saved", m->heads_pooled_saved, m->heads_pooled_saved_bytes);
    region_add("bce_work", m->bce_work, m->bce_work_bytes);
    region_add("cfc_work", m->cfc_work, m->cfc_work_bytes);
    region_add("vsn_work", m->vsn_work, m->vsn_work_bytes);
    region_add("loss", m->loss, f4);
    region_add("step", m->step, f4);
    region_add("model", m->base, m->bytes);
}

/* ---- fox-train's steps ------------------------------------------------------------- */

static const ft_dims dims = {.batch = 2, .k = 3, .f = 4, .d = 8, .e = 4, .h = 2};
static ft_hparams hp = {3e-3f, 0.9f, 0.999f, 1e-8f, 0.01f};

static foxjit_status record_hook(ft_model *m, CUstream s, void *arg)
{
    (void)m, (void)arg;
    put("after_reduce %s\n", stream_name(s));
    return FOXJIT_OK;
}

typedef enum how { EAGER, CAPTURED, EVAL } how;

/* One model's life as fox-train lives it: allocate, prepare, then one
 * step (eagerly, captured in a graph, or the held-out loss), then free. */
static void record_trainer(const char *title, const foxjit_api *a, ft_path path, how how,
                           int hook)
{
    recording = 1;
    put("== %s\n", title);
    ft_model m;
    main_stream = (CUstream)(uintptr_t)0x77;
    n_regions = 0;
    assert_int_equal(ft_model_alloc(&m, a, (foxjit_runtime *)(uintptr_t)0x10, &cu, &dims, path),
                     0);
    model = &m;
    model_regions(&m);
    assert_int_equal(ft_model_prepare(&m), FOXJIT_OK);
    if (hook)
        m.after_reduce = record_hook;
    put("-- step\n");
    if (how == EAGER) {
        assert_int_equal(ft_model_step(&m, &hp, main_stream), FOXJIT_OK);
    } else if (how == EVAL) {
        assert_int_equal(ft_model_forward(&m, main_stream), FOXJIT_OK);
        assert_int_equal(ft_model_loss(&m, 0, main_stream), FOXJIT_OK);
    } else {
        ft_stepper st;
        assert_int_equal(ft_stepper_init(&st, &m, &hp, 1, main_stream), 0);
        ft_stepper_free(&st);
    }
    put("-- free\n");
    ft_model_free(&m);
    model = NULL;
    n_regions = 0;
    recording = 0;
}

/* ---- `fox-jit bench kloop`'s steps (tools/kloop) --------------------------------- */

/* The calls the bench times one at a time, per path (bench_kloop.c: the
 * per-op rows and the single-block calls beside them). */
typedef struct op_call {
    ft_op op;
    int index;
} op_call;

static int bench_calls(ft_path path, op_call *out)
{
    const int K = dims.k;
    int n = 0;
    switch (path) {
    case FT_PATH_PER_STEP:
        out[n++] = (op_call){FT_OP_VSN_FWD, 0};
        out[n++] = (op_call){FT_OP_CFC_FWD, K / 2};
        out[n++] = (op_call){FT_OP_HEADS_FWD, FT_ALL_BARS};
        out[n++] = (op_call){FT_OP_HEADS_FWD, K};
        out[n++] = (op_call){FT_OP_ATTN_FWD, 0};
        out[n++] = (op_call){FT_OP_HEADS_BWD, FT_ALL_BARS};
        out[n++] = (op_call){FT_OP_HEADS_BWD, K};
        out[n++] = (op_call){FT_OP_ATTN_BWD, 0};
        out[n++] = (op_call){FT_OP_CFC_BWD, K / 2};
        out[n++] = (op_call){FT_OP_VSN_BWD, 0};
        for (int i = 0; i < FT_PARAM_COUNT; i++)
            out[n++] = (op_call){FT_OP_REDUCE, i};
        break;
    case FT_PATH_SINGLE_BLOCK:
        out[n++] = (op_call){FT_OP_HEADS_BWD, K / 2};
        out[n++] = (op_call){FT_OP_HEADS_BWD, K};
        out[n++] = (op_call){FT_OP_ATTN_BWD, 0};
        out[n++] = (op_call){FT_OP_CFC_BWD, K / 2};
        out[n++] = (op_call){FT_OP_VSN_BWD, 0};
        break;
    case FT_PATH_SEQUENCE_ONE_STREAM:
        out[n++] = (op_call){FT_OP_VSN_FWD, 0};
        out[n++] = (op_call){FT_OP_CFC_FWD, 0};
        out[n++] = (op_call){FT_OP_HEADS_FWD, FT_ALL_BARS};
        out[n++] = (op_call){FT_OP_ATTN_FWD, 0};
        out[n++] = (op_call){FT_OP_HEADS_FWD, K};
        out[n++] = (op_call){FT_OP_HEADS_BWD, K};
        out[n++] = (op_call){FT_OP_ATTN_BWD, 0};
        out[n++] = (op_call){FT_OP_HEADS_BWD, FT_ALL_BARS};
        out[n++] = (op_call){FT_OP_CFC_BWD, 0};
        out[n++] = (op_call){FT_OP_VSN_BWD, 0};
        out[n++] = (op_call){FT_OP_REDUCE, FT_ATTN_Q};
        break;
    default:
        break;
    }
    return n;
}

/* One model with every path's buffers, as tools/kloop opens it; for each
 * path the bench times, a step (zero, forward, backward, reducers) and the
 * calls it times alone; then the two-stream step on the same buffers. */
static void record_kloop(void)
{
    recording = 1;
    put("== fox-jit bench kloop: one model of every path\n");
    ft_model m;
    main_stream = (CUstream)(uintptr_t)0x77;
    n_regions = 0;
    assert_int_equal(ft_model_alloc_paths(&m, &api, (foxjit_runtime *)(uintptr_t)0x10, &cu,
                                          &dims, (1u << FT_PATH_COUNT) - 1), 0);
    m.single_block = &single_block;
    model = &m;
    model_regions(&m);
    static const ft_path paths[] = {FT_PATH_PER_STEP, FT_PATH_SINGLE_BLOCK,
                                    FT_PATH_SEQUENCE_ONE_STREAM, FT_PATH_SEQUENCE};
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
        m.path = paths[p];
        put("-- %s: step\n", ft_path_name(m.path));
        assert_int_equal(ft_model_zero(&m, main_stream), FOXJIT_OK);
        assert_int_equal(ft_model_forward(&m, main_stream), FOXJIT_OK);
        assert_int_equal(ft_model_backward(&m, main_stream), FOXJIT_OK);
        assert_int_equal(ft_model_reduce(&m, main_stream), FOXJIT_OK);
        op_call calls[40];
        const int n = bench_calls(m.path, calls);
        if (n)
            put("-- %s: the calls timed alone\n", ft_path_name(m.path));
        for (int i = 0; i < n; i++)
            assert_int_equal(ft_model_op(&m, calls[i].op, calls[i].index, main_stream),
                             FOXJIT_OK);
    }
    put("-- free\n");
    ft_model_free(&m);
    model = NULL;
    n_regions = 0;
    recording = 0;
}

static void record_all(void)
{
    rec_len = 0;
    /* A library of ABI 2.2: no heads saves, no wide BCE, no split column
     * sums; one of ABI 2.6: all but the split column sums (reduce_axis0). */
    foxjit_api old = api;
    old.struct_size = offsetof(foxjit_api, heads_seq_saved_size);
    old.abi_minor = 2;
    foxjit_api no_split = api;
    no_split.struct_size = offsetof(foxjit_api, column_sum_workspace_size);
    no_split.abi_minor = 6;
    record_trainer("fox-train, sequence path, eager", &api, FT_PATH_SEQUENCE, EAGER, 0);
    record_trainer("fox-train, sequence path, captured, data-parallel hook", &api,
                   FT_PATH_SEQUENCE, CAPTURED, 1);
    record_trainer("fox-train --per-step, eager", &api, FT_PATH_PER_STEP, EAGER, 0);
    record_trainer("fox-train --per-step, captured", &api, FT_PATH_PER_STEP, CAPTURED, 0);
    record_trainer("fox-train, held-out loss", &api, FT_PATH_SEQUENCE, EVAL, 0);
    record_trainer("fox-train, sequence path, ABI 2.2 library", &old, FT_PATH_SEQUENCE, EAGER,
                   0);
    record_trainer("fox-train, sequence path, ABI 2.6 library", &no_split, FT_PATH_SEQUENCE,
                   EAGER, 0);
    record_trainer("fox-train --per-step, ABI 2.6 library", &no_split, FT_PATH_PER_STEP, EAGER,
                   0);
    record_kloop();
}

/* ---- the test ------------------------------------------------------------------------ */

static const char *expected_path;

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s (the expected recording)", path);
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 > cap) {
            cap = (n + 4096) * 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Line `line` (from 1) of text, up to 300 characters. */
static const char *line_of(const char *text, int line, char *out, size_t len)
{
    const char *p = text;
    for (int i = 1; i < line && p; i++)
        if ((p = strchr(p, '\n')))
            p++;
    if (!p || !*p)
        return "(end of recording)";
    size_t n = strcspn(p, "\n");
    snprintf(out, len, "%.*s", (int)(n < len - 1 ? n : len - 1), p);
    return out;
}

static void test_step_calls_unchanged(void **state)
{
    (void)state;
    record_all();
    const char *write = getenv("FOXJIT_STEP_CALLS_WRITE");
    if (write && *write) {
        FILE *f = fopen(write, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(rec, 1, rec_len, f), rec_len);
        assert_int_equal(fclose(f), 0);
        printf("  wrote %zu bytes to %s\n", rec_len, write);
    }
    size_t want_len;
    char *want = read_file(expected_path, &want_len);
    size_t i = 0;
    int line = 1;
    while (i < rec_len && i < want_len && rec[i] == want[i])
        line += rec[i++] == '\n';
    if (i != rec_len || i != want_len) {
        char a[300], b[300];
        fail_msg("the step's calls differ from %s at line %d:\n  recorded: %s\n  expected: %s\n"
                 "(FOXJIT_STEP_CALLS_WRITE=<file> writes the whole recording)", expected_path,
                 line, line_of(rec, line, a, sizeof a), line_of(want, line, b, sizeof b));
    }
    free(want);
}

/* The recording sees what it should: an argument changed in one call
 * changes its line. */
static void test_recording_sees_an_argument(void **state)
{
    (void)state;
    record_all();
    char *first = malloc(rec_len + 1);
    assert_non_null(first);
    memcpy(first, rec, rec_len + 1);
    const size_t first_len = rec_len;
    const ft_hparams saved = hp;
    hp.weight_decay = 0.02f;
    record_all();
    hp = saved;
    assert_true(first_len != rec_len || memcmp(first, rec, rec_len) != 0);
    free(first);
}

/* A call the model cannot make is refused, saying why, and enqueues nothing. */
static void refused(ft_model *m, ft_path path, ft_op op, int index, const char *why)
{
    m->path = path;
    m->why[0] = '\0';
    rec_len = 0;
    recording = 1;
    assert_int_equal(ft_model_op(m, op, index, main_stream), FOXJIT_ERROR_INVALID_ARGUMENT);
    recording = 0;
    assert_int_equal(rec_len, 0);
    if (!strstr(m->why, why))
        fail_msg("op %d at %d on the %s path: \"%s\" does not say \"%s\"", (int)op, index,
                 ft_path_name(path), m->why, why);
}

static void test_op_refuses_what_the_path_does_not_do(void **state)
{
    (void)state;
    ft_model m;
    main_stream = (CUstream)(uintptr_t)0x77;
    assert_int_equal(ft_model_alloc_paths(&m, &api, (foxjit_runtime *)(uintptr_t)0x10, &cu,
                                          &dims, (1u << FT_PATH_PER_STEP) |
                                                     (1u << FT_PATH_SINGLE_BLOCK)), 0);
    assert_int_equal(m.path, FT_PATH_PER_STEP);
    const char *no_call = "the path makes no such call";
    refused(&m, FT_PATH_PER_STEP, FT_OP_HEADS_SUM, 0, no_call);
    refused(&m, FT_PATH_PER_STEP, FT_OP_CFC_FWD, dims.k, no_call);
    refused(&m, FT_PATH_PER_STEP, FT_OP_HEADS_BWD, 1, no_call);
    refused(&m, FT_PATH_PER_STEP, FT_OP_REDUCE, FT_PARAM_COUNT, no_call);
    refused(&m, FT_PATH_PER_STEP, FT_OP_VSN_FWD, 1, no_call);
    refused(&m, FT_PATH_SEQUENCE, FT_OP_VSN_FWD, 0, "no buffers for that path");
    refused(&m, FT_PATH_COUNT, FT_OP_VSN_FWD, 0, "no buffers for that path");
    refused(&m, FT_PATH_SINGLE_BLOCK, FT_OP_CFC_BWD, 0, "m->single_block");
    m.single_block = &single_block;
    refused(&m, FT_PATH_SINGLE_BLOCK, FT_OP_REDUCE, 0, no_call);
    refused(&m, FT_PATH_SINGLE_BLOCK, FT_OP_HEADS_BWD, FT_ALL_BARS, no_call);
    ft_model_free(&m);
    assert_int_equal(ft_model_alloc_paths(&m, &api, (foxjit_runtime *)(uintptr_t)0x10, &cu,
                                          &dims, 1u << FT_PATH_COUNT), -1);
    assert_non_null(strstr(m.why, "no model of the paths"));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s EXPECTED_FILE\n", argv[0]);
        return 2;
    }
    expected_path = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_calls_unchanged),
        cmocka_unit_test(test_recording_sees_an_argument),
        cmocka_unit_test(test_op_refuses_what_the_path_does_not_do),
    };
    return cmocka_run_group_tests_name("step_calls", tests, NULL, NULL);
}
