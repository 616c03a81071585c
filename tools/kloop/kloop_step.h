/* One training step of the reference perception model of kernels.md ("The
 * reference perception model and its K-loop") as a sequence of fox-jit
 * calls on one stream: forward, backward, and the reducers. Used by
 * `fox-jit bench kloop`, the GPU tests, and (with BCE between forward and
 * backward, AdamW after the reducers) the trainer.
 *
 * Model dims: VSN over F variables, CfC with n_in = F and n_hid = D, heads
 * (D, E, H), pooling over the K states of dim D. Every buffer lives in one
 * device allocation owned by kloop_model. Nothing here allocates, syncs or
 * compiles once kloop_prepare() has run, so a step can be captured in a
 * CUDA graph. */
#ifndef KLOOP_STEP_H
#define KLOOP_STEP_H

#include <stddef.h>

#include "toolkit.h"
#include "foxjit/foxjit.h"

/* The parameter tensors, in reducer order (the same order as pr_param in
 * tests/ref/perception_ref.h). */
enum kloop_param {
    KL_CFC_W_IN, KL_CFC_W_REC, KL_CFC_BIAS, KL_CFC_TAU,
    KL_HEADS_W1, KL_HEADS_B1, KL_HEADS_W2, KL_HEADS_B2, KL_HEADS_W_GATE, KL_HEADS_B_GATE,
    KL_HEADS_W_MAIN, KL_HEADS_B_MAIN, KL_HEADS_W_SKIP, KL_HEADS_B_SKIP,
    KL_VSN_W, KL_VSN_BIAS,
    KL_ATTN_Q,
    KL_PARAM_COUNT
};

typedef struct kloop_dims {
    int batch, k, f, d, e, h;
} kloop_dims;

typedef enum kloop_form {
    KLOOP_NEW = 0,     /* per-step block-per-batch kernels, per-batch scratch, 17 reducers */
    KLOOP_LEGACY = 1,  /* single-block backwards writing the gradients directly */
    KLOOP_SEQ = 2,     /* the whole-sequence ops (CfC, heads and the VSN backward over
                          all K steps at once, gradients straight into grad); the
                          VSN forward and pooling as in KLOOP_NEW, one reducer (dq) */
    KLOOP_FORM_COUNT
} kloop_form;

const char *kloop_form_name(kloop_form form);

typedef struct kloop_model {
    kloop_dims dims;
    const fj_cuda *cu;
    CUdeviceptr param[KL_PARAM_COUNT];
    CUdeviceptr grad[KL_PARAM_COUNT];     /* final gradients (reducer outputs) */
    CUdeviceptr scratch[KL_PARAM_COUNT];  /* per-batch scratch [B, ...] */
    CUdeviceptr x, dt;                    /* inputs: [B, K, F], [B, K] */
    CUdeviceptr y, hs, u;                 /* VSN output [B,K,F]; states, tanh [B,K,D] */
    CUdeviceptr pooled;                   /* [B, D] */
    CUdeviceptr z;                        /* logits [K+1, B, H]: K steps, then z_seq */
    CUdeviceptr dz;                       /* dL/dz [K+1, B, H]: the backward's input */
    CUdeviceptr dhs, dy, dpooled;         /* backward intermediates */
    CUdeviceptr heads_work;               /* heads backward workspace over the K steps */
    size_t heads_work_bytes;              /* (KLOOP_NEW and KLOOP_SEQ: the larger) */
    /* The sequence form's heads saves (foxjit_heads_seq_forward_save): the
     * K steps' and the pooled row's, as fox-train keeps them. */
    CUdeviceptr heads_saved, heads_pooled_saved;
    size_t heads_saved_bytes, heads_pooled_saved_bytes;
    CUdeviceptr cfc_work;                 /* KLOOP_SEQ: the CfC backward's workspace */
    size_t cfc_work_bytes;
    CUdeviceptr vsn_work;                 /* KLOOP_SEQ: the VSN backward's workspace */
    size_t vsn_work_bytes;
    CUdeviceptr base;                     /* the one allocation */
    size_t bytes;
    CUdeviceptr scratch_base, grad_base;  /* contiguous: one memset clears each */
    size_t scratch_floats, grad_floats;
} kloop_model;

/* Elements of parameter tensor `which`; its name ("cfc.w_in"). */
size_t kloop_param_size(const kloop_dims *d, int which);
const char *kloop_param_name(int which);

/* Allocates every buffer, the workspaces of every form included (contents
 * undefined). Returns 0, or -1 with a message on stderr. */
int kloop_alloc(foxjit_runtime *rt, const fj_cuda *cu, const kloop_dims *d, kloop_model *m);
void kloop_free(kloop_model *m);

/* Loads every kernel a step of this form uses (call before capture). */
foxjit_status kloop_prepare(foxjit_runtime *rt, const kloop_dims *d, kloop_form form);

/* The parts of a step, in order. zero: clears the per-batch scratch (new
 * form; the VSN and pooling scratch in the sequence form) or the gradients
 * (legacy form). forward: VSN, the K CfC + heads steps (or the sequence
 * calls), pooling, heads on the pooled state; writes z. backward: from dz
 * back to the parameter gradients. reduce: the 17 reducers (new form), the
 * attention query's (sequence form), none (legacy form). The forward is
 * the same for the new and legacy forms. */
foxjit_status kloop_zero(const kloop_model *m, kloop_form form, CUstream stream);
foxjit_status kloop_forward(foxjit_runtime *rt, const kloop_model *m, kloop_form form,
                            CUstream stream);
foxjit_status kloop_backward(foxjit_runtime *rt, const kloop_model *m, kloop_form form,
                             CUstream stream);
foxjit_status kloop_reduce(foxjit_runtime *rt, const kloop_model *m, kloop_form form,
                           CUstream stream);
/* zero + forward + backward + reduce. */
foxjit_status kloop_step(foxjit_runtime *rt, const kloop_model *m, kloop_form form,
                         CUstream stream);

/* Kernel launches and memsets one kloop_step enqueues (a captured step's
 * graph has exactly that many nodes). */
int kloop_kernels_per_step(const kloop_dims *d, kloop_form form);
int kloop_memsets_per_step(kloop_form form);

/* The step's calls one at a time (benchmarks time each kind). The new form
 * runs the heads of the K steps as one call (they do not feed the
 * recurrence): forward after the recurrent forward, backward before the
 * recurrent backward; the legacy form makes one heads backward per step. */
#define KLOOP_ALL_STEPS (-1)
typedef enum kloop_op {
    KLOOP_OP_ZERO,       /* the memset */
    KLOOP_OP_VSN_FWD,
    KLOOP_OP_CFC_FWD,    /* index: step t in [0, K) (sequence form: the whole sequence) */
    KLOOP_OP_HEADS_FWD,  /* index: step t in [0, K), K for the pooled state, or
                            KLOOP_ALL_STEPS: the K steps in one call */
    KLOOP_OP_ATTN_FWD,
    KLOOP_OP_HEADS_BWD,  /* index as HEADS_FWD (KLOOP_ALL_STEPS: new and sequence forms;
                            the sequence form takes only KLOOP_ALL_STEPS and K) */
    KLOOP_OP_ATTN_BWD,
    KLOOP_OP_CFC_BWD,    /* index: step t (sequence form: the whole sequence) */
    KLOOP_OP_VSN_BWD,
    KLOOP_OP_REDUCE,     /* index: parameter tensor (new form; the sequence form has
                            one reducer, the attention query's, at any index) */
    KLOOP_OP_COUNT
} kloop_op;

const char *kloop_op_name(kloop_op op);
/* How many calls of `op` one step makes. */
int kloop_op_calls(const kloop_dims *d, kloop_form form, kloop_op op);
foxjit_status kloop_run_op(foxjit_runtime *rt, const kloop_model *m, kloop_form form,
                           kloop_op op, int index, CUstream stream);

#endif
