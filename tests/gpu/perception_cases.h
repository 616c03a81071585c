/* Test data for the perception GPU tests: each op's inputs on the host (as
 * float, as the float64 reference sees them, and on the device, possibly
 * strided), its outputs, and calls that run the op, its legacy baseline
 * and its float64 reference. One struct per op; the ops' tests
 * (ops/<op>/test.c) and gpu_target_paths drive them. */
#ifndef PERCEPTION_CASES_H
#define PERCEPTION_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "foxjit/foxjit.h"
#include "perception_ref.h"

/* A tensor of `rows` rows of `width` floats, `stride` floats apart on the
 * device (stride >= width). host: the device image (gaps NaN); ref: the
 * dense float64 copy of the values (rows * width). */
typedef struct tensor {
    int rows, width;
    long long stride;
    size_t n;        /* floats in the device image */
    float *host;
    double *ref;
    CUdeviceptr dev;
} tensor;

tensor t_new(int rows, int width, long long stride);      /* device poisoned */
tensor t_rand(int rows, int width, long long stride, uint64_t *seed, float lo, float hi);
tensor t_zero(int rows, int width);
void t_upload(tensor *t);             /* host image -> device */
void t_download(tensor *t);           /* device -> host image */
void t_poison(tensor *t);
void t_free(tensor *t);
float t_at(const tensor *t, int row, int col);   /* from the host image */
/* Device address of row `row` (for B = 1 views). */
CUdeviceptr t_row(const tensor *t, int row);

/* Checks rows of got (downloaded) against want (dense rows x width):
 * |got - want| <= rtol * (|want| + max |want|). Fails naming what, the
 * row, the column and both values. */
void t_check(const char *what, tensor *got, const double *want, double rtol);
/* t_check, each element also allowed residue[i] (NULL: none): the float32
 * rounding residue of a value that is 0 by cancellation. */
void t_check_bounded(const char *what, tensor *got, const double *want, double rtol,
                     const double *residue);
/* FOXJIT_TEST_VERBOSE=1: checks print their worst error / allowed ratio. */
int t_verbose(void);
/* Bitwise comparison of two downloaded tensors of one shape. */
void t_check_same(const char *what, tensor *a, tensor *b);
/* Bitwise comparison of row `row` of a with row 0 of b. */
void t_check_same_row(const char *what, tensor *a, int row, tensor *b);

/* ---- CfC ------------------------------------------------------------------ */

typedef struct cfc_case {
    int batch, n_in, n_hid;
    int strided;   /* non-dense strides on every activation */
    int zero_h;    /* h = NULL (the first step) */
} cfc_case;

typedef struct cfc_data {
    cfc_case c;
    tensor w_in, w_rec, bias, tau;          /* parameters (one row) */
    tensor x, h, dt, u, h_out;              /* forward */
    tensor dh_out, dh, dx;                  /* backward activations */
    tensor g[4];        /* per-batch scratch [B, size]: w_in, w_rec, bias, tau */
    tensor gf[4];       /* final gradients [1, size] (legacy form, reducer output) */
    int accumulate;
} cfc_data;

/* accumulate = 0: dh, dx poisoned and overwritten, scratch starts at zero;
 * 1: dh, dx, scratch start from random values the op adds to. */
void cfc_make(cfc_data *d, const cfc_case *c, uint64_t seed, int accumulate);
void cfc_free(cfc_data *d);
/* legacy = 1: parameter gradients point at gf instead of g. */
foxjit_cfc_args cfc_args(const cfc_data *d, int legacy);
/* Reference (dense outputs). The backward starts from the op's initial
 * values (the bases when accumulating) and adds, row by row. */
void cfc_ref_forward(const cfc_data *d, double *h_out, double *u);
/* An allowance for float32 rounding where h_out or u cancel to near 0 (for
 * t_check_bounded): a few ulps of the terms that were added, not of the
 * small result (an estimate of the usual worst case, not a strict bound).
 * h_out = decay h + (1 - decay) u can cancel, as can the pre-activation
 * under u = tanh(pre). */
void cfc_ref_forward_residue(const cfc_data *d, double *h_out_res, double *u_res);
void cfc_ref_backward(const cfc_data *d, double *dh, double *dx, double *g[4]);
/* L = sum_i dh_out[b, i] h'[b, i] with the float64 forward (for finite
 * differences). */
double cfc_row_loss(const cfc_data *d, int b);

/* ---- heads ---------------------------------------------------------------- */

typedef struct heads_case {
    int batch, d, e, h, strided;
} heads_case;

typedef struct heads_data {
    heads_case c;
    tensor p[10];                 /* w1 b1 w2 b2 w_gate b_gate w_main b_main w_skip b_skip */
    tensor x, logits, dlogits, dx;
    tensor g[10];                 /* [B, ...] scratch in the same order */
    tensor gf[10];                /* final gradients */
    int accumulate;
} heads_data;

void heads_make(heads_data *d, const heads_case *c, uint64_t seed, int accumulate);
void heads_free(heads_data *d);
foxjit_heads_args heads_args(const heads_data *d, int legacy);
void heads_ref_forward(const heads_data *d, double *logits);
void heads_ref_backward(const heads_data *d, double *dx, double *g[10]);
double heads_row_loss(const heads_data *d, int b);
size_t heads_param_size(const heads_case *c, int i);

/* ---- VSN ------------------------------------------------------------------ */

typedef struct vsn_case {
    int batch, t, f;
} vsn_case;

typedef struct vsn_data {
    vsn_case c;
    tensor w, bias;
    tensor x, y, dy, dx;          /* [B, T*F] as B rows */
    tensor g[2];                  /* dw [B, F*F], dbias [B, F] */
    tensor gf[2];
    int accumulate;
} vsn_data;

void vsn_make(vsn_data *d, const vsn_case *c, uint64_t seed, int accumulate);
void vsn_free(vsn_data *d);
foxjit_vsn_args vsn_args(const vsn_data *d, int legacy);
void vsn_ref_forward(const vsn_data *d, double *y);
void vsn_ref_backward(const vsn_data *d, double *dx, double *g[2]);
double vsn_row_loss(const vsn_data *d, int b);

/* ---- attention pooling ---------------------------------------------------- */

typedef struct attn_case {
    int batch, t, d;
} attn_case;

typedef struct attn_data {
    attn_case c;
    tensor q;
    tensor hs, pooled, dpooled, dhs;   /* hs, dhs: [B, T*D] as B rows */
    tensor g[1];                       /* dq [B, D] */
    tensor gf[1];
    int accumulate;
} attn_data;

void attn_make(attn_data *d, const attn_case *c, uint64_t seed, int accumulate);
void attn_free(attn_data *d);
foxjit_attn_pool_args attn_args(const attn_data *d, int legacy);
void attn_ref_forward(const attn_data *d, double *pooled);
void attn_ref_backward(const attn_data *d, double *dhs, double *g[1]);
double attn_row_loss(const attn_data *d, int b);

#endif
