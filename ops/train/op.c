/* Training-step ops (kernels.md section 7): argument checks, launch shape,
 * launch. Kernels: ops/train/kernel.cu. */
#include "train/op.h"

#include <math.h>

#include "op_call.h"
#include "runtime.h"
#include "status.h"

enum { K_BCE = 0, K_ADAMW, K_INCREMENT, K_BCE_WIDE_PARTIALS, K_BCE_WIDE_FINISH };

/* Below its size the wide form is one block of the other form, on every
 * arch (fj_bce_blocks), and leaves its workspace alone; above it, at least
 * 5 blocks and two launches. */
_Static_assert(FJ_BCE_WIDE_ONE_BLOCK_MAX <= FJ_BCE_PER_BLOCK &&
                   FJ_BCE_WIDE_ONE_BLOCK_MAX % FJ_BCE_WIDE_PER_BLOCK == 0,
               "FJ_BCE_WIDE_ONE_BLOCK_MAX: one block of foxjit_bce_with_logits everywhere");

const fj_program fj_program_train = {
    .name = "train",
    .source = "train/kernel.cu",
    .params = {"BCE_BLOCK", "ADAM_BLOCK", "BCE_WIDE_BLOCK", "BCE_WIDE_PER_BLOCK", NULL},
    .kernels = {
        {"bce_with_logits", {FJ_PTR, FJ_PTR, FJ_I64, FJ_PTR, FJ_I32, FJ_PTR}},
        {"adamw",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I64, FJ_F32, FJ_F32, FJ_F32, FJ_F32, FJ_F32}},
        {"increment_step", {FJ_PTR}},
        {"bce_wide_partials", {FJ_PTR, FJ_PTR, FJ_I64, FJ_PTR, FJ_PTR}},
        {"bce_wide_finish", {FJ_PTR, FJ_I32, FJ_I64, FJ_PTR, FJ_I32}},
    },
};

const fj_variant fj_train_variant = {
    &fj_program_train,
    {FJ_BCE_BLOCK, FJ_ADAM_BLOCK, FJ_BCE_WIDE_BLOCK, FJ_BCE_WIDE_PER_BLOCK}};

unsigned fj_bce_blocks(int64_t n, int cc)
{
    if (cc < 90 || n <= FJ_BCE_PER_BLOCK)
        return 1;
    int64_t want = (n + FJ_BCE_PER_BLOCK - 1) / FJ_BCE_PER_BLOCK;
    return want > FJ_PORTABLE_CLUSTER ? FJ_PORTABLE_CLUSTER : (unsigned)want;
}

/* The training-step kernels (BCE, AdamW, step counter): one variant. */
static int variants(const int64_t *v, int cc, fj_variant *out, int max, char *why,
                    size_t why_len)
{
    (void)v, (void)cc, (void)why, (void)why_len;
    if (max < 1)
        return -1;
    out[0] = fj_train_variant;
    return 1;
}

const fj_op fj_op_train = {
    .name = "training",
    .keys = {NULL},
    .help = "BCE with logits (one block or cluster, or wide), AdamW and the step counter (any n)",
    .variants = variants,
    .programs = {&fj_program_train, NULL},
    .shapes = "# training step of the end-to-end trainer: BCE with logits, AdamW\n"
              "training\n",
};

static foxjit_status begin(const char *op, const foxjit_runtime *rt)
{
    return fj_op_begin(op, rt);
}

static foxjit_status load(foxjit_runtime *rt, const char *op, CUstream stream,
                          const fj_loaded **k)
{
    return fj_op_load(rt, &fj_op_train, NULL, stream, op, k);
}

/* The checks both BCE API functions make before anything else: the runtime, n,
 * and the tensors (dz may be 0, "not needed"). */
static foxjit_status check_bce(const char *op, const foxjit_runtime *rt, CUdeviceptr z,
                               CUdeviceptr y, int64_t n, CUdeviceptr loss, CUdeviceptr dz)
{
    foxjit_status st;
    if ((st = begin(op, rt)) || (st = fj_check_size(op, "n", n, FJ_BCE_MAX_N)) ||
        (st = fj_check_ptr(op, "z", z)) || (st = fj_check_ptr(op, "y", y)) ||
        (st = fj_check_ptr(op, "loss", loss)) ||
        (st = dz ? fj_check_ptr(op, "dz", dz) : FOXJIT_OK))
        return st;
    return FOXJIT_OK;
}

/* foxjit_bce_with_logits's launch: one block, or one cluster of
 * fj_bce_blocks(n, cc) blocks. */
static foxjit_status launch_bce(const foxjit_runtime *rt, const fj_loaded *k, CUdeviceptr z,
                                CUdeviceptr y, int64_t n, CUdeviceptr loss, int loss_accumulate,
                                CUdeviceptr dz, CUstream stream, const char *op)
{
    long long nn = n;
    int acc = loss_accumulate ? 1 : 0;
    FJ_ARGS(args, z, y, nn, loss, acc, dz);
    unsigned blocks = fj_bce_blocks(n, rt->cc);
    return fj_launch_cluster(rt, k->fn[K_BCE], 1, blocks, FJ_BCE_BLOCK, blocks, stream, &args, op);
}

FOXJIT_API foxjit_status foxjit_bce_with_logits(foxjit_runtime *rt, CUdeviceptr z, CUdeviceptr y,
                                                int64_t n, CUdeviceptr loss, int loss_accumulate,
                                                CUdeviceptr dz, CUstream stream)
{
    const char *op = "foxjit_bce_with_logits";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = check_bce(op, rt, z, y, n, loss, dz)) || (st = load(rt, op, stream, &k)))
        return st;
    return launch_bce(rt, k, z, y, n, loss, loss_accumulate, dz, stream, op);
}

FOXJIT_API foxjit_status foxjit_bce_with_logits_workspace_size(foxjit_runtime *rt, int64_t n,
                                                               size_t *bytes)
{
    const char *op = "foxjit_bce_with_logits_workspace_size";
    foxjit_status st;
    if ((st = fj_size_query_begin(op, rt, bytes, "workspace size")) ||
        (st = fj_check_size(op, "n", n, FJ_BCE_MAX_N)))
        return st;
    *bytes = (size_t)fj_bce_wide_blocks(n) * sizeof(double);
    return FOXJIT_OK;
}

/* The wide form's workspace: present, aligned for doubles, large enough,
 * and apart from every other buffer of the call (the partials kernel
 * writes it while z, y and dz are in use, and loss is read after it). */
static foxjit_status check_bce_workspace(const char *op, int64_t n, CUdeviceptr z, CUdeviceptr y,
                                         CUdeviceptr loss, CUdeviceptr dz, CUdeviceptr ws,
                                         size_t ws_bytes, size_t need)
{
    if (!ws)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "%s: workspace is NULL; n = %lld needs "
                       "a workspace of %zu bytes (foxjit_bce_with_logits_workspace_size)", op,
                       (long long)n, need);
    if (ws % sizeof(double))
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: workspace (0x%llx) is not 8-byte "
                       "aligned; it holds doubles", op, (unsigned long long)ws);
    if (ws_bytes < need)
        return fj_fail(FOXJIT_ERROR_WORKSPACE_TOO_SMALL, "%s: workspace_bytes is %zu; n = %lld "
                       "needs %zu (foxjit_bce_with_logits_workspace_size)", op, ws_bytes,
                       (long long)n, need);
    const size_t tensor = (size_t)n * sizeof(float);
    const struct {
        const char *name;
        CUdeviceptr p;
        size_t bytes;
    } other[] = {{"z", z, tensor}, {"y", y, tensor}, {"dz", dz, dz ? tensor : 0},
                 {"loss", loss, sizeof(float)}};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
        if (other[i].bytes && ws < other[i].p + other[i].bytes && other[i].p < ws + need)
            return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: the workspace (0x%llx, %zu bytes "
                           "used) overlaps %s (0x%llx); give it a buffer of its own", op,
                           (unsigned long long)ws, need, other[i].name,
                           (unsigned long long)other[i].p);
    return FOXJIT_OK;
}

FOXJIT_API foxjit_status foxjit_bce_with_logits_wide(foxjit_runtime *rt, CUdeviceptr z,
                                                     CUdeviceptr y, int64_t n, CUdeviceptr loss,
                                                     int loss_accumulate, CUdeviceptr dz,
                                                     CUdeviceptr workspace,
                                                     size_t workspace_bytes, CUstream stream)
{
    const char *op = "foxjit_bce_with_logits_wide";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = check_bce(op, rt, z, y, n, loss, dz)))
        return st;
    const unsigned blocks = fj_bce_wide_blocks(n);
    const size_t need = (size_t)blocks * sizeof(double);
    if ((st = check_bce_workspace(op, n, z, y, loss, dz, workspace, workspace_bytes, need)) ||
        (st = load(rt, op, stream, &k)))
        return st;
    /* Two launches cost more than one block's single batch of loads (fox-jit
     * bench bce: 3.8 against 3.3 us at n = 2560); up to this n that is the
     * other API function's launch on every arch. */
    if (n <= FJ_BCE_WIDE_ONE_BLOCK_MAX)
        return launch_bce(rt, k, z, y, n, loss, loss_accumulate, dz, stream, op);
    long long nn = n;
    int acc = loss_accumulate ? 1 : 0, parts = (int)blocks;
    FJ_ARGS(partial_args, z, y, nn, dz, workspace);
    if ((st = fj_launch(rt, k->fn[K_BCE_WIDE_PARTIALS], blocks, 1, 1, FJ_BCE_WIDE_BLOCK, 0, stream,
                        &partial_args, op)))
        return st;
    FJ_ARGS(finish_args, workspace, parts, nn, loss, acc);
    return fj_launch(rt, k->fn[K_BCE_WIDE_FINISH], 1, 1, 1, FJ_BCE_WIDE_BLOCK, 0, stream,
                     &finish_args, op);
}

/* A hyperparameter in [lo, hi) (hi_open) or [lo, hi]; NaN fails. */
static foxjit_status check_hyper(const char *op, const char *name, float v, double lo, double hi,
                                 int lo_open, int hi_open, const char *range)
{
    int ok = isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
    if (!ok)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s is %g; it must be in %s", op,
                       name, (double)v, range);
    return FOXJIT_OK;
}

static foxjit_status check_adamw(const char *op, const foxjit_adamw_args *a)
{
    foxjit_status st;
    if ((st = fj_check_size(op, "n", a->n, FJ_ADAMW_MAX_N)) ||
        (st = fj_check_ptr(op, "param", a->param)) || (st = fj_check_ptr(op, "grad", a->grad)) ||
        (st = fj_check_ptr(op, "m", a->m)) || (st = fj_check_ptr(op, "v", a->v)) ||
        (st = fj_check_ptr(op, "step", a->step)))
        return st;
    /* Every buffer is read and written element by element; two of them
     * being the same memory is a caller bug that would corrupt the state. */
    const CUdeviceptr ptr[5] = {a->param, a->grad, a->m, a->v, a->step};
    static const char *const name[5] = {"param", "grad", "m", "v", "step"};
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (ptr[i] == ptr[j])
                return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: %s and %s are the same "
                               "buffer; each needs its own", op, name[i], name[j]);
    const double inf = INFINITY;
    if ((st = check_hyper(op, "lr", a->lr, 0, inf, 0, 1, "[0, inf)")) ||
        (st = check_hyper(op, "beta1", a->beta1, 0, 1, 0, 1, "[0, 1)")) ||
        (st = check_hyper(op, "beta2", a->beta2, 0, 1, 0, 1, "[0, 1)")) ||
        (st = check_hyper(op, "eps", a->eps, 0, inf, 1, 1,
                          "(0, inf) (eps = 0 divides 0 by 0 where a gradient is 0)")) ||
        (st = check_hyper(op, "weight_decay", a->weight_decay, 0, inf, 0, 1, "[0, inf)")))
        return st;
    return FOXJIT_OK;
}

FOXJIT_API foxjit_status foxjit_adamw(foxjit_runtime *rt, const foxjit_adamw_args *a,
                                      CUstream stream)
{
    const char *op = "foxjit_adamw";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = begin(op, rt)))
        return st;
    if (!a)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "%s: args is NULL", op);
    if ((st = check_adamw(op, a)) || (st = load(rt, op, stream, &k)))
        return st;
    CUdeviceptr p = a->param, g = a->grad, m = a->m, v = a->v, step = a->step;
    long long n = a->n;
    float lr = a->lr, b1 = a->beta1, b2 = a->beta2, eps = a->eps, wd = a->weight_decay;
    FJ_ARGS(args, p, g, m, v, step, n, lr, b1, b2, eps, wd);
    int64_t blocks = (a->n + FJ_ADAM_BLOCK - 1) / FJ_ADAM_BLOCK;
    int64_t cap = (int64_t)(rt->sm_count > 0 ? rt->sm_count : 1) * FJ_ADAM_BLOCKS_PER_SM;
    if (blocks > cap)
        blocks = cap;
    return fj_launch(rt, k->fn[K_ADAMW], (unsigned)blocks, 1, 1, FJ_ADAM_BLOCK, 0, stream, &args,
                     op);
}

FOXJIT_API foxjit_status foxjit_increment_step(foxjit_runtime *rt, CUdeviceptr step,
                                               CUstream stream)
{
    const char *op = "foxjit_increment_step";
    const fj_loaded *k;
    foxjit_status st;
    if ((st = begin(op, rt)) || (st = fj_check_ptr(op, "step", step)) ||
        (st = load(rt, op, stream, &k)))
        return st;
    FJ_ARGS(args, step);
    return fj_launch(rt, k->fn[K_INCREMENT], 1, 1, 1, 32, 0, stream, &args, op);
}

FOXJIT_API foxjit_status foxjit_training_prepare(foxjit_runtime *rt)
{
    return fj_op_prepare(rt, &fj_op_train, NULL, "foxjit_training_prepare");
}
