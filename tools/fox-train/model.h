/* The reference perception model on the GPU, driven only through a
 * foxjit_api table (the caller's: fox-train's from the plugin, `fox-jit
 * bench kloop`'s from the library it links) and the driver API: buffers,
 * parameter state, and one training step as a fixed sequence of calls on
 * one stream (kernels.md, "The reference perception model and its
 * K-loop"). This file is the one place the step is written; every user
 * runs these calls.
 *
 *   zero     one memset of all per-batch gradient scratch
 *   forward  vsn_forward; for t in 0..K-1: cfc_forward(t); heads_forward
 *            over the K bars (one call); attn_pool_forward;
 *            heads_forward(pooled)
 *   loss     bce over the K*B*H per-bar logits (overwrites loss, writes dz),
 *            bce over the B*H sequence logits (adds to loss, writes dz)
 *   backward heads_backward(pooled) -> dpooled; attn_pool_backward -> dhs
 *            (overwrite); heads_backward over the K bars (one call, with
 *            its workspace: dx added into dhs[t]); for t in K-1..0:
 *            cfc_backward(t) (dh added into dhs[t-1], dy[t] written);
 *            vsn_backward
 *   reduce   a column sum of each of the 17 scratch tensors -> gradients
 *   update   increment_step, then adamw once per weight-decay group (2 calls,
 *            below)
 *
 * That is the per-step path (FT_PATH_PER_STEP, `fox-train --per-step`). The
 * default, FT_PATH_SEQUENCE, runs the same model with the whole-sequence ops:
 *
 *   zero     one memset of the attention scratch
 *   forward  vsn_forward; cfc_seq_forward (all K bars, one call); then
 *            heads_seq_forward over the K bars, and beside it on a second
 *            stream attn_pool_forward and heads_seq_forward(pooled)
 *   loss     as above
 *   backward heads_seq_backward over the K bars (dx -> dhs, overwrite;
 *            heads gradients into row 0 of a stack), and beside it on the
 *            second stream heads_seq_backward(pooled) (-> dpooled; heads
 *            gradients into row 1); then attn_pool_backward (dhs +=);
 *            a column sum of the stack -> the heads gradients;
 *            cfc_seq_backward (dy written, CfC gradients =);
 *            vsn_seq_backward (VSN gradients =)
 *   reduce   a column sum of the attention scratch (1 tensor)
 *   update   as above
 *
 * The column sums (the reducers and the heads' stack sum; they overwrite
 * their output) are foxjit_column_sum_split when the library's table has
 * it (ABI 2.7), else foxjit_reduce_axis0 (ft_model.colsum_split). The
 * split form spreads the rows over the whole GPU without thread-block
 * clusters: before sm_90 (the L40S, sm_89) 2.3-3.1x the speed of
 * reduce_axis0's plan there at 8192 rows of 42 to 256 columns, about equal
 * on sm_90 (docs/performance.md), and its bits are the same on every GPU.
 * It takes a workspace: one per call site (each tensor's reducer, the
 * heads' sum), so calls on different streams never share one (two calls
 * with the same output must be ordered anyway), zeroed once with
 * everything else at allocation; each call leaves its counters at zero,
 * so eager steps and graph replays need no memset of them.
 *
 * Two more paths serve `fox-jit bench kloop` (tools/kloop), which times
 * the step's calls one by one against what they replaced; fox-train never
 * takes them:
 *
 *   FT_PATH_SEQUENCE_ONE_STREAM  the sequence path's calls on one stream in
 *            the one-stream order of kernels.md: heads_seq_backward(pooled)
 *            overwrites dpooled and the heads gradients, attn_pool_backward
 *            overwrites dhs, heads_seq_backward over the K bars adds to
 *            both; no stack. The same bits as FT_PATH_SEQUENCE.
 *   FT_PATH_SINGLE_BLOCK  the per-step forward, then the original
 *            trainer's backward: single-block kernels that add straight
 *            into the gradients (zeroed first; no scratch, no reducers),
 *            the heads one bar at a time inside the recurrence's loop.
 *            Those kernels are no part of the library: their four entries
 *            (cfc_backward, heads_backward, vsn_backward,
 *            attn_pool_backward) come from the table in m->single_block.
 *
 * AdamW runs once per weight-decay group (2 calls): the tensors of a group
 * lie back to back, at the same offsets in the parameter, gradient and
 * moment spans, with the padding between them zeroed at allocation (AdamW
 * leaves a zero parameter with a zero gradient at zero).
 *
 * Nothing in a step allocates, synchronizes or compiles once
 * ft_model_prepare() has run, so a whole step can be captured in one CUDA
 * graph, and replaying it gives the bits of eager launches. The sequence
 * path's two streams change no bits either: the calls beside each other
 * write disjoint buffers, and the sums that join them add the same two
 * terms as the one-stream order does (a + b is b + a in float32).
 *
 * Layouts: x [B,K,F], dt [B,K], y (VSN out) [B,K,F], hs and u [B,K,D]
 * (bar t of row b at (b*K + t)*D: the CfC reads and writes strided views),
 * logits z and labels [K+1,B,H] (the K per-bar blocks, then the sequence
 * logits), scratch [B, size] per tensor. */
#ifndef FT_MODEL_H
#define FT_MODEL_H

#include <stddef.h>

#include "data.h"
#include "driver.h"
#include "foxjit/foxjit.h"
#include "params.h"

typedef struct ft_hparams {
    float lr, beta1, beta2, eps, weight_decay;
} ft_hparams;

typedef struct ft_model ft_model;

/* Which ops carry the K-loop, in which order (see the top of this file). */
typedef enum ft_path {
    FT_PATH_SEQUENCE = 0,  /* the whole-sequence ops (the default) */
    FT_PATH_PER_STEP = 1,  /* the per-step ops, per-batch scratch and reducers */
    FT_PATH_SEQUENCE_ONE_STREAM = 2,  /* the bench's: the sequence ops on one stream */
    FT_PATH_SINGLE_BLOCK = 3,         /* the bench's: the original trainer's backward */
    FT_PATH_COUNT
} ft_path;

const char *ft_path_name(ft_path p);

/* Called by ft_model_step between the reducers and AdamW (see
 * ft_model.after_reduce). Returns FOXJIT_OK, or an error with the reason
 * written to m->why. */
typedef foxjit_status (*ft_after_reduce_fn)(ft_model *m, CUstream s, void *arg);

struct ft_model {
    ft_dims dims;
    ft_path path;              /* the path the step takes: one of paths */
    unsigned paths;            /* the paths allocated for (bit 1 << ft_path) */
    const foxjit_api *api;
    /* FT_PATH_SINGLE_BLOCK only: the table its four single-block backward
     * entries come from (the caller's; NULL for the other paths). */
    const foxjit_api *single_block;
    foxjit_runtime *rt;
    const ft_cuda *cu;
    CUdeviceptr base;  /* the one allocation everything below lives in */
    size_t bytes;
    CUdeviceptr param[FT_PARAM_COUNT], grad[FT_PARAM_COUNT], scratch[FT_PARAM_COUNT];
    CUdeviceptr m[FT_PARAM_COUNT], v[FT_PARAM_COUNT];  /* AdamW moments */
    CUdeviceptr scratch_base;
    size_t scratch_floats;
    /* All 17 gradients lie in one span, grad[0] first and grad[16] last
     * (each tensor 256-byte aligned; the padding between them is never
     * written by a step): one all-reduce covers them all. */
    CUdeviceptr grad_base;
    size_t grad_floats;
    /* NULL for one GPU. The data-parallel trainer sets it to all-reduce the
     * gradient span (the average over the ranks) after the reducers and
     * before AdamW, so the hook is part of a captured step too. */
    ft_after_reduce_fn after_reduce;
    void *after_reduce_arg;
    ft_batch_layout in_layout;
    CUdeviceptr batch_in;      /* the packed batch (data.h): x, dt, labels are views */
    CUdeviceptr x, dt, labels;
    CUdeviceptr y, hs, u, pooled, z, dz, dhs, dy, dpooled;
    CUdeviceptr heads_work;    /* the heads backward's workspace over the K bars */
    size_t heads_work_bytes;
    /* The sequence path runs the pooled row's calls (pooling and heads
     * forward; heads backward) on a second stream beside the heads over
     * the K bars: `side`, forked from and joined to the step's stream with
     * two events (model.c, "the sequence path"). */
    CUstream side;
    CUevent fork, join;
    CUdeviceptr heads_pooled_work;  /* the pooled row's heads backward workspace */
    size_t heads_pooled_work_bytes;
    /* The two heads backward calls' gradients, side by side: row 0 the
     * bars', row 1 the pooled row's, each laid out like grad from
     * grad[FT_HEADS_W1] to the end of grad[FT_HEADS_B_SKIP] (the heads'
     * tensors are contiguous in the device order); one column sum adds
     * the rows into grad. */
    CUdeviceptr heads_stack;
    size_t heads_span_floats;
    /* 1: the column sums are foxjit_column_sum_split (the library has ABI
     * 2.7's entries); 0: foxjit_reduce_axis0, with no workspaces. */
    int colsum_split;
    /* The split form's workspaces, one per call site: colsum_work[i] for
     * tensor i's reducer (0 where no path reduces it), heads_sum_work for
     * the heads' stack sum. Zeroed at allocation (the block counters must
     * start at zero; each call leaves them so), never written by anything
     * else. */
    CUdeviceptr colsum_work[FT_PARAM_COUNT];
    size_t colsum_work_bytes[FT_PARAM_COUNT];
    CUdeviceptr heads_sum_work;
    size_t heads_sum_work_bytes;
    /* The heads forward's saves (the first layer's pre-activations), read by
     * the backward instead of recomputing them: bars and pooled row. 0 with a
     * library older than ABI 2.3 (no save entries) and on the per-step path. */
    CUdeviceptr heads_saved, heads_pooled_saved;
    size_t heads_saved_bytes, heads_pooled_saved_bytes;
    /* The wide BCE's workspace, for both of the loss's calls; 0 with a
     * library older than ABI 2.4 (foxjit_bce_with_logits then). */
    CUdeviceptr bce_work;
    size_t bce_work_bytes;
    CUdeviceptr cfc_work;      /* the sequence path's CfC backward workspace */
    size_t cfc_work_bytes;
    CUdeviceptr vsn_work;      /* the sequence path's VSN backward workspace */
    size_t vsn_work_bytes;
    /* AdamW groups: [0] decayed tensors, [1] the others; each a span of
     * adamw_floats[g] floats from param[adamw_first[g]] (and the same
     * offsets in grad, m, v). */
    int adamw_first[2];
    size_t adamw_floats[2];
    CUdeviceptr loss;          /* one float: this step's loss */
    CUdeviceptr step;          /* one int32: the step number AdamW reads */
    char why[1024];            /* what failed, after a call returned an error */
};

/* Allocates every buffer on the device (contents undefined until
 * ft_model_set_state). Returns 0, or -1 with the reason in m->why. */
int ft_model_alloc(ft_model *m, const foxjit_api *api, foxjit_runtime *rt, const ft_cuda *cu,
                   const ft_dims *dims, ft_path path);
/* The same for several paths at once (a mask of 1 << ft_path): the buffers
 * and workspaces of each, so that the caller can switch m->path between
 * them (the first of them to start with). What a step of one path is given
 * is what a model of that path alone would give it, but for the heads'
 * workspace, which is the largest the paths ask for. */
int ft_model_alloc_paths(ft_model *m, const foxjit_api *api, foxjit_runtime *rt,
                         const ft_cuda *cu, const ft_dims *dims, unsigned paths);
void ft_model_free(ft_model *m);

/* Whether a model on this table takes the split column sums (ABI 2.7), and
 * the form's name for a run's header: "split" or "reduce_axis0 (library
 * before ABI 2.7)". */
int ft_model_colsum_split(const foxjit_api *api);
const char *ft_model_colsum_form(const foxjit_api *api);

/* Compiles (or loads from the cache) every kernel a step of m->path uses:
 * call once before capturing a step into a graph (FT_PATH_SINGLE_BLOCK: but
 * its single-block kernels, which the caller prepares). */
foxjit_status ft_model_prepare(ft_model *m);

/* The parts of a step, in order (see the top of this file). with_dz = 0
 * computes the loss only (evaluation). */
foxjit_status ft_model_zero(ft_model *m, CUstream s);
foxjit_status ft_model_forward(ft_model *m, CUstream s);
foxjit_status ft_model_loss(ft_model *m, int with_dz, CUstream s);
foxjit_status ft_model_backward(ft_model *m, CUstream s);
foxjit_status ft_model_reduce(ft_model *m, CUstream s);
foxjit_status ft_model_update(ft_model *m, const ft_hparams *hp, CUstream s);
/* zero, forward, loss, backward, reduce, after_reduce (when set), update. */
foxjit_status ft_model_step(ft_model *m, const ft_hparams *hp, CUstream s);

/* Library calls and memsets one ft_model_step of FT_PATH_SEQUENCE or
 * FT_PATH_PER_STEP enqueues (a library call may launch more than one
 * kernel: the graph's node count says how many). */
int ft_model_launches_per_step(const ft_dims *d, ft_path path);

/* The calls of zero, forward, backward and reduce one at a time, each
 * exactly as the step makes it (the bench times each kind). */
#define FT_ALL_BARS (-1)
typedef enum ft_op {
    FT_OP_ZERO,        /* the memset */
    FT_OP_VSN_FWD,
    FT_OP_CFC_FWD,     /* index: bar t; the sequence paths: 0, the one call */
    FT_OP_HEADS_FWD,   /* index: FT_ALL_BARS (the K bars in one call) or K (the
                          pooled row) */
    FT_OP_ATTN_FWD,
    FT_OP_HEADS_BWD,   /* index as FT_OP_HEADS_FWD; FT_PATH_SINGLE_BLOCK: bar t
                          or K */
    FT_OP_ATTN_BWD,
    FT_OP_HEADS_SUM,   /* FT_PATH_SEQUENCE: the stack's column sum */
    FT_OP_CFC_BWD,     /* index as FT_OP_CFC_FWD */
    FT_OP_VSN_BWD,
    FT_OP_REDUCE,      /* index: the parameter tensor (ft_param); a column sum */
    FT_OP_COUNT
} ft_op;

/* One call of the step of m->path on stream s. Returns FOXJIT_OK, or an
 * error with the reason in m->why (FOXJIT_ERROR_INVALID_ARGUMENT: a call
 * the path does not make, a path the model has no buffers for, or the
 * single-block path without m->single_block). */
foxjit_status ft_model_op(ft_model *m, ft_op op, int index, CUstream s);
/* How many calls of op one step of `path` makes. */
int ft_model_op_calls(const ft_dims *d, ft_path path, ft_op op);

/* Parameters (packed, params.h order), moments and the step counter from
 * or to the host; m_host / v_host NULL = zeros. Synchronous on stream s.
 * Return 0, or -1 with the reason in m->why. */
int ft_model_set_state(ft_model *m, const float *params, const float *m_host,
                       const float *v_host, int step, CUstream s);
int ft_model_get_state(ft_model *m, float *params, float *m_host, float *v_host, int *step,
                       CUstream s);
/* The gradients of the last reduce, packed (tests). */
int ft_model_get_grads(ft_model *m, float *grads, CUstream s);

#endif
