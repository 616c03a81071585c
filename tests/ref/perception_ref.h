/* Float64 CPU reference of the perception kernels (kernels.md sections 3-6),
 * of the CfC over a sequence (section 8), and of the reference model's
 * K-loop step built from them.
 *
 * Every function works on one batch row (or one (b, t) row for VSN, one b
 * for attention pooling); callers loop over the batch. Forward functions
 * overwrite their outputs. Backward functions ADD (+=) to every gradient
 * they are given, so callers zero them first; a NULL gradient pointer means
 * "not needed". This is the plain chain rule written out once, checked
 * against central finite differences by tests/unit/test_perception_ref.c,
 * and then used as the ground truth for the GPU tests. */
#ifndef PERCEPTION_REF_H
#define PERCEPTION_REF_H

#include <stddef.h>

/* ---- CfC step ---------------------------------------------------------- */

typedef struct pr_cfc {
    int n_in, n_hid;
    const double *w_in;   /* [n_hid, n_in] */
    const double *w_rec;  /* [n_hid, n_hid] */
    const double *bias;   /* [n_hid] */
    const double *tau;    /* [n_hid], > 0 */
} pr_cfc;

typedef struct pr_cfc_grads {
    double *w_in, *w_rec, *bias, *tau;  /* same shapes as pr_cfc, += */
} pr_cfc_grads;

/* h NULL = zeros. Writes h_out[n_hid] and u[n_hid] = tanh(pre). */
void pr_cfc_forward(const pr_cfc *p, const double *x, const double *h, double dt,
                    double *h_out, double *u);
/* dh_out = dL/dh'. Adds dL/dh to dh, dL/dx to dx, parameter gradients to g
 * (any of them may be NULL). */
void pr_cfc_backward(const pr_cfc *p, const double *x, const double *h, double dt,
                     const double *dh_out, double *dh, double *dx, const pr_cfc_grads *g);

/* ---- CfC over a sequence (kernels.md section 8) ---------------------------- */

/* A batch of sequences, row b*k + t of x [batch*k, n_in], dt [batch*k], h
 * and u [batch*k, n_hid]; h_init [batch, n_hid], NULL = zeros. Writes the
 * state h_t and u_t = tanh(pre_t) of every step. */
void pr_cfc_seq_forward(const pr_cfc *p, int batch, int k, const double *x, const double *dt,
                        const double *h_init, double *h, double *u);
/* dh [batch*k, n_hid] = dL/dh_t from outside the recurrence; h, u from
 * pr_cfc_seq_forward. Adds dL/dx to dx, dL/dh_init to dh_init (defined with
 * h_init NULL too: the gradient at the zero state) and parameter gradients to
 * g; any may be NULL. g_abs (may be NULL) adds, for each gradient element,
 * the sum of the magnitudes of the terms it sums: the scale of a float32
 * sum's rounding, for the GPU tests' allowances. */
void pr_cfc_seq_backward(const pr_cfc *p, int batch, int k, const double *x, const double *dt,
                         const double *h_init, const double *h, const double *u,
                         const double *dh, double *dx, double *dh_init, const pr_cfc_grads *g,
                         const pr_cfc_grads *g_abs);

/* ---- multi-horizon GRN heads -------------------------------------------- */

typedef struct pr_heads {
    int d, e, h;
    const double *w1, *b1;          /* [H, E, D], [H, E] */
    const double *w2, *b2;          /* [H, E, E], [H, E] */
    const double *w_gate, *b_gate;  /* [H, E], [H] */
    const double *w_main, *b_main;  /* [H, E], [H] */
    const double *w_skip, *b_skip;  /* [H, D], [H] */
} pr_heads;

typedef struct pr_heads_grads {
    double *w1, *b1, *w2, *b2, *w_gate, *b_gate, *w_main, *b_main, *w_skip, *b_skip;
} pr_heads_grads;

/* logits[H] for one input row x[D]. */
void pr_heads_forward(const pr_heads *p, const double *x, double *logits);
/* Adds dL/dx (summed over heads) to dx and parameter gradients to g. */
void pr_heads_backward(const pr_heads *p, const double *x, const double *dlogits, double *dx,
                       const pr_heads_grads *g);

/* ---- variable selection ------------------------------------------------- */

typedef struct pr_vsn {
    int f;
    const double *w, *bias;  /* [F, F], [F] */
} pr_vsn;

typedef struct pr_vsn_grads {
    double *w, *bias;
} pr_vsn_grads;

/* One (b, t) row: y[F] = softmax(W x + bias) * x. */
void pr_vsn_forward(const pr_vsn *p, const double *x, double *y);
void pr_vsn_backward(const pr_vsn *p, const double *x, const double *dy, double *dx,
                     const pr_vsn_grads *g);

/* ---- attention pooling -------------------------------------------------- */

/* One batch row: hs[T, D] -> pooled[D]; q[D]. */
void pr_attn_forward(int t, int d, const double *q, const double *hs, double *pooled);
/* Adds dL/dhs to dhs and dL/dq to dq. */
void pr_attn_backward(int t, int d, const double *q, const double *hs, const double *dpooled,
                      double *dhs, double *dq);

/* ---- the reference model of kernels.md and its K-loop step -------------- */

/* The 17 parameter tensors, in the order of the reducers. */
enum pr_param {
    PR_CFC_W_IN, PR_CFC_W_REC, PR_CFC_BIAS, PR_CFC_TAU,
    PR_HEADS_W1, PR_HEADS_B1, PR_HEADS_W2, PR_HEADS_B2, PR_HEADS_W_GATE, PR_HEADS_B_GATE,
    PR_HEADS_W_MAIN, PR_HEADS_B_MAIN, PR_HEADS_W_SKIP, PR_HEADS_B_SKIP,
    PR_VSN_W, PR_VSN_BIAS,
    PR_ATTN_Q,
    PR_PARAM_COUNT
};

/* Model dims: n_in of the CfC is f, n_hid is d (= heads D = attention D). */
typedef struct pr_model_dims {
    int batch, k, f, d, e, h;
} pr_model_dims;

/* Elements of parameter tensor `which` ("cfc.w_in" etc. from pr_param_name). */
size_t pr_param_size(const pr_model_dims *m, int which);
const char *pr_param_name(int which);

/* Forward activations of one step, kept for the backward. Sizes:
 * y [B,K,F], hs [B,K,D], pooled [B,D], z [(K+1),B,H] (the K per-step
 * logits, then z_seq). */
typedef struct pr_model_acts {
    double *y, *hs, *pooled, *z;
} pr_model_acts;

/* Allocates (calloc) / frees the activation buffers. */
int pr_model_acts_alloc(const pr_model_dims *m, pr_model_acts *a);
void pr_model_acts_free(pr_model_acts *a);

/* Forward of the reference model: x [B,K,F], dt [B,K]. */
void pr_model_forward(const pr_model_dims *m, double *const param[PR_PARAM_COUNT],
                      const double *x, const double *dt, pr_model_acts *a);

/* Backward of one step, in the order of kernels.md, given dz = dL/dz for
 * all (K+1)*B*H logits. Overwrites grad[i] (the value every reducer writes).
 * dx (may be NULL) receives dL/dx [B,K,F] (overwrite). */
void pr_model_backward(const pr_model_dims *m, double *const param[PR_PARAM_COUNT],
                       const double *x, const double *dt, const pr_model_acts *a,
                       const double *dz, double *const grad[PR_PARAM_COUNT], double *dx);

/* Mean BCE with logits over n values; dz[i] = (sigmoid(z_i) - y_i) / n
 * (dz may be NULL). */
double pr_bce(const double *z, const double *y, size_t n, double *dz);

/* The model loss: BCE over the K step logits (one mean over K*B*H) plus BCE
 * over z_seq (mean over B*H); labels have the layout of z. dz may be NULL. */
double pr_model_loss(const pr_model_dims *m, const double *z, const double *labels, double *dz);

#endif
