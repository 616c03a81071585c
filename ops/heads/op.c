/* Multi-horizon GRN heads (kernels.md section 4): argument checks, launch
 * shape, launch. Kernels: ops/heads/kernel.cu.
 *
 * Forward: grid (B, H, steps). Backward on sm_90+: grid (B, H) in clusters
 * of the H heads of a row, which add their dx through distributed shared
 * memory; before sm_90: grid (B, 1), each block runs the H heads in turn.
 * A backward over several steps: with a workspace, grid (B, H, steps) for
 * dx and each step's gradient terms, then grid (B, H) adds the terms over
 * the steps; without one, the steps run in turn inside one kernel. */
#include "common/perception.h"
#include "heads/policy.h"

#include "op_call.h"
#include "runtime.h"
#include "status.h"

const fj_program fj_program_heads = {
    .name = "heads",
    .source = "heads/kernel.cu",
    .params = {"HEADS_D", "HEADS_E", "HEADS_H", "CLUSTER", "BLOCK", NULL},
    .kernels = {
        {"heads_forward", {FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I64, FJ_I64}},
        {"heads_backward",
         {FJ_PTRS(10), FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I64, FJ_I64, FJ_PTR,
          FJ_I64, FJ_I64, FJ_I32, FJ_I32}},
        {"heads_backward_rows",
         {FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I64, FJ_I64,
          FJ_I32, FJ_PTR}},
        {"heads_backward_sum", {FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I32}},
    },
};
enum { K_FORWARD, K_BACKWARD, K_ROWS, K_SUM };

FOXJIT_API size_t foxjit_heads_workspace_size(int batch, int steps, int e, int h)
{
    if (batch < 1 || batch > FJ_PERC_MAX_BATCH || steps < 2 || steps > FJ_PERC_MAX_T || e < 1 ||
        e > FJ_PERC_MAX_E || h < 1 || h > FJ_PERC_MAX_H)
        return 0;
    return (size_t)steps * (size_t)batch * (size_t)h * (size_t)fj_heads_terms(e) * sizeof(float);
}


/* The device-side fj_head_params / fj_head_grads: ten pointers each. */
typedef struct head_ptrs {
    CUdeviceptr p[10];
} head_ptrs;

static int check_dims(int d, int e, int h, char *why, size_t why_len)
{
    return fj_perc_dim_why("d", d, FJ_PERC_MAX_D, why, why_len) ||
           fj_perc_dim_why("e", e, FJ_PERC_MAX_E, why, why_len) ||
           fj_perc_dim_why("h", h, FJ_PERC_MAX_H, why, why_len) ? -1 : 0;
}

int fj_heads_variant(int d, int e, int h, int cc, fj_variant *v, char *why, size_t why_len)
{
    if (check_dims(d, e, h, why, why_len))
        return -1;
    *v = (fj_variant){&fj_program_heads, {d, e, h, fj_heads_cluster(cc, h), fj_heads_block(d, e)}};
    return 0;
}

static foxjit_status check_common(const char *op, const foxjit_heads_args *a, long long *x_stride)
{
    foxjit_status st;
    static const char *const names[10] = {"w1", "b1", "w2", "b2", "w_gate",
                                          "b_gate", "w_main", "b_main", "w_skip", "b_skip"};
    const CUdeviceptr params[10] = {a->w1, a->b1, a->w2, a->b2, a->w_gate,
                                    a->b_gate, a->w_main, a->b_main, a->w_skip, a->b_skip};
    if ((st = fj_check_size(op, "batch", a->batch, FJ_PERC_MAX_BATCH)) ||
        (st = fj_check_size(op, "d", a->d, FJ_PERC_MAX_D)) ||
        (st = fj_check_size(op, "e", a->e, FJ_PERC_MAX_E)) ||
        (st = fj_check_size(op, "h", a->h, FJ_PERC_MAX_H)))
        return st;
    for (int i = 0; i < 10; i++)
        if ((st = fj_check_ptr(op, names[i], params[i])))
            return st;
    if ((st = fj_check_ptr(op, "x", a->x)) ||
        (st = fj_perc_stride(op, "x_stride", a->x_stride, a->d, x_stride)))
        return st;
    return FOXJIT_OK;
}

/* The steps of a call: 0 and 1 both mean one. */
static foxjit_status steps_of(const char *op, const foxjit_heads_args *a, int *steps)
{
    if (a->steps < 0)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: steps is %d; pass 0 or 1 for one "
                       "time step, or the number of steps", op, a->steps);
    *steps = a->steps ? a->steps : 1;
    return *steps > 1 ? fj_check_size(op, "steps", *steps, FJ_PERC_MAX_T) : FOXJIT_OK;
}

/* The step stride of a [steps][batch rows of `width` floats, `row` apart]
 * tensor: 0 = packed (batch * row). An output's steps must be disjoint:
 * either the steps are whole blocks of rows one after another, or each row
 * holds its steps side by side. */
static foxjit_status step_stride(const char *op, const char *name, int64_t given, int steps,
                                 int batch, long long row, int width, int output,
                                 long long *out)
{
    if (steps <= 1) {
        *out = 0;
        return FOXJIT_OK;
    }
    if (given < 0)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s is %lld; step strides count "
                       "floats between time steps and must be >= 0 (0 = packed)", op, name,
                       (long long)given);
    if (given > FJ_PERC_MAX_STRIDE)
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "%s: %s is %lld, past the limit of 2^40", op,
                       name, (long long)given);
    long long s = given ? given : (long long)batch * row;
    int steps_after_rows = s >= row * (batch - 1) + width;
    int steps_within_rows = s >= width && row >= s * (steps - 1) + width;
    if (output && !steps_after_rows && !steps_within_rows)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s is %lld with a row stride of %lld, "
                       "%d rows of %d floats and %d steps, so the steps of this output would "
                       "overlap; give every step its own floats", op, name, s, row, batch,
                       width, steps);
    *out = s;
    return FOXJIT_OK;
}

/* The backward's workspace: 0 (steps one after another), or big enough. */
static foxjit_status check_work(const char *op, const foxjit_heads_args *a, int steps)
{
    if (!a->work || steps <= 1)
        return FOXJIT_OK;
    if (a->work % 16)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: work (0x%llx) is not 16-byte aligned",
                       op, (unsigned long long)a->work);
    size_t need = foxjit_heads_workspace_size(a->batch, steps, a->e, a->h);
    if (a->work_bytes < need) /* the status sort and rank give too */
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "%s: work_bytes is %zu; %d steps of %d rows "
                       "need %zu (foxjit_heads_workspace_size), or pass work = 0 to run the steps "
                       "one after another", op, a->work_bytes, steps, a->batch, need);
    return FOXJIT_OK;
}

static head_ptrs params_of(const foxjit_heads_args *a)
{
    return (head_ptrs){{a->w1, a->b1, a->w2, a->b2, a->w_gate, a->b_gate, a->w_main,
                        a->b_main, a->w_skip, a->b_skip}};
}

static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    return max < 1 || fj_heads_variant((int)v[0], (int)v[1], (int)v[2], cc, out, why, why_len) ? -1 : 1;
}

const fj_op fj_op_heads = {
    .name = "heads",
    .keys = {"d", "e", "h", NULL},
    .limits = {FJ_PERC_MAX_D, FJ_PERC_MAX_E, FJ_PERC_MAX_H},
    .help = "GRN heads forward and backward",
    .variants = variants,
    .programs = {&fj_program_heads, NULL},
    .shapes = "heads d=128 e=64 h=5\n",
};

static foxjit_status load(foxjit_runtime *rt, const char *op, const foxjit_heads_args *a,
                          CUstream stream, const fj_loaded **k)
{
    return fj_op_load(rt, &fj_op_heads, (int64_t[]){a->d, a->e, a->h}, stream, op, k);
}

FOXJIT_API foxjit_status foxjit_heads_forward(foxjit_runtime *rt, const foxjit_heads_args *a,
                                              CUstream stream)
{
    const char *op = "foxjit_heads_forward";
    long long xs, ls, xss, lss;
    int steps = 1;
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) || (st = check_common(op, a, &xs)) ||
        (st = steps_of(op, a, &steps)) ||
        (st = fj_check_ptr(op, "logits", a->logits)) ||
        (st = fj_perc_stride(op, "logits_stride", a->logits_stride, a->h, &ls)) ||
        (st = step_stride(op, "x_step_stride", a->x_step_stride, steps, a->batch, xs, a->d, 0,
                          &xss)) ||
        (st = step_stride(op, "logits_step_stride", a->logits_step_stride, steps, a->batch, ls,
                          a->h, 1, &lss)) ||
        (st = fj_perc_distinct(op, "logits", a->logits, "x", a->x)) ||
        (st = load(rt, op, a, stream, &k)))
        return st;
    head_ptrs p = params_of(a);
    CUdeviceptr x = a->x, logits = a->logits;
    FJ_ARGS(args, p, x, xs, xss, logits, ls, lss);
    return fj_launch(rt, k->fn[K_FORWARD], (unsigned)a->batch, (unsigned)a->h, (unsigned)steps,
                     (unsigned)fj_heads_block(a->d, a->e), 0, stream, &args, op);
}

foxjit_status fj_heads_check_backward(const char *op, const foxjit_runtime *rt,
                                      const foxjit_heads_args *a, fj_heads_strides *s)
{
    static const char *const names[10] = {"dw1", "db1", "dw2", "db2", "dw_gate",
                                          "db_gate", "dw_main", "db_main", "dw_skip", "db_skip"};
    foxjit_status st;
    if ((st = fj_perc_begin(op, rt, a)) || (st = check_common(op, a, &s->x)) ||
        (st = steps_of(op, a, &s->steps)))
        return st;
    const CUdeviceptr g[10] = {a->dw1, a->db1, a->dw2, a->db2, a->dw_gate,
                               a->db_gate, a->dw_main, a->db_main, a->dw_skip, a->db_skip};
    for (int i = 0; i < 10; i++)
        if ((st = fj_check_ptr(op, names[i], g[i])))
            return st;
    if ((st = fj_check_ptr(op, "dlogits", a->dlogits)) ||
        (st = fj_perc_stride(op, "dlogits_stride", a->dlogits_stride, a->h, &s->dlogits)) ||
        (st = fj_perc_optional_ptr(op, "dx", a->dx)) ||
        (st = fj_perc_stride(op, "dx_stride", a->dx_stride, a->d, &s->dx)) ||
        (st = step_stride(op, "x_step_stride", a->x_step_stride, s->steps, a->batch, s->x, a->d,
                          0, &s->x_step)) ||
        (st = step_stride(op, "dlogits_step_stride", a->dlogits_step_stride, s->steps, a->batch,
                          s->dlogits, a->h, 0, &s->dlogits_step)) ||
        (st = step_stride(op, "dx_step_stride", a->dx_step_stride, s->steps, a->batch, s->dx,
                          a->d, a->dx != 0, &s->dx_step)) ||
        (st = fj_perc_distinct(op, "dx", a->dx, "x", a->x)))
        return st;
    fj_perc_named outs[11] = {{"dx", a->dx}};
    for (int i = 0; i < 10; i++)
        outs[1 + i] = (fj_perc_named){names[i], g[i]};
    const fj_perc_named ins[] = {{"w1", a->w1},         {"b1", a->b1},         {"w2", a->w2},
                                 {"b2", a->b2},         {"w_gate", a->w_gate}, {"b_gate", a->b_gate},
                                 {"w_main", a->w_main}, {"b_main", a->b_main}, {"w_skip", a->w_skip},
                                 {"b_skip", a->b_skip}, {"x", a->x},           {"dlogits", a->dlogits}};
    return fj_perc_distinct_all(op, outs, 11, ins, 12);
}

FOXJIT_API foxjit_status foxjit_heads_backward(foxjit_runtime *rt, const foxjit_heads_args *a,
                                               CUstream stream)
{
    const char *op = "foxjit_heads_backward";
    fj_heads_strides s;
    const fj_loaded *k;
    foxjit_status st;
    if ((st = fj_heads_check_backward(op, rt, a, &s)) || (st = check_work(op, a, s.steps)) ||
        (st = load(rt, op, a, stream, &k)))
        return st;
    head_ptrs p = params_of(a);
    head_ptrs g = {{a->dw1, a->db1, a->dw2, a->db2, a->dw_gate, a->db_gate, a->dw_main,
                    a->db_main, a->dw_skip, a->db_skip}};
    CUdeviceptr x = a->x, dlogits = a->dlogits, dx = a->dx;
    int dx_acc = a->dx_accumulate ? 1 : 0, steps = s.steps;
    long long xs = s.x, xss = s.x_step, dls = s.dlogits, dlss = s.dlogits_step, dxs = s.dx,
              dxss = s.dx_step;
    unsigned block = (unsigned)fj_heads_block(a->d, a->e);
    const int cluster = fj_heads_cluster(rt->cc, a->h);
    if (steps > 1 && a->work) {
        /* Every (row, step, head) at once, then the sums over the steps. */
        CUdeviceptr work = a->work;
        FJ_ARGS(rows_args, p, x, xs, xss, dlogits, dls, dlss, dx, dxs, dxss, dx_acc, work);
        FJ_ARGS(sum_args, g, x, xs, xss, work, steps);
        if ((st = fj_launch_cluster_3d(rt, k->fn[K_ROWS], (unsigned)a->batch,
                                       cluster ? (unsigned)a->h : 1, (unsigned)steps, block,
                                       cluster ? (unsigned)a->h : 1, stream, &rows_args, op)))
            return st;
        return fj_launch(rt, k->fn[K_SUM], (unsigned)a->batch, (unsigned)a->h, 1, block, 0, stream,
                         &sum_args, op);
    }
    FJ_ARGS(args, p, g, x, xs, xss, dlogits, dls, dlss, dx, dxs, dxss, dx_acc, steps);
    if (cluster)
        return fj_launch_cluster(rt, k->fn[K_BACKWARD], (unsigned)a->batch, (unsigned)a->h, block,
                                 (unsigned)a->h, stream, &args, op);
    return fj_launch(rt, k->fn[K_BACKWARD], (unsigned)a->batch, 1, 1, block, 0, stream, &args, op);
}

FOXJIT_API foxjit_status foxjit_heads_prepare(foxjit_runtime *rt, int d, int e, int h)
{
    return fj_op_prepare(rt, &fj_op_heads, (int64_t[]){d, e, h}, "foxjit_heads_prepare");
}
