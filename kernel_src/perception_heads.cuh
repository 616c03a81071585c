// The forward and backward of one GRN head for one input row (kernels.md
// section 4), shared by heads.cu and heads_legacy.cu. Needs HEADS_D,
// HEADS_E, HEADS_H and BLOCK defined. Shared-memory state of a head lives in
// fj_head_smem.
#pragma once

#include "perception_common.cuh"

#if !defined(HEADS_D) || !defined(HEADS_E) || !defined(HEADS_H) || !defined(BLOCK)
#error "HEADS_D, HEADS_E, HEADS_H and BLOCK must be defined"
#endif

constexpr int D = HEADS_D;  // input dim
constexpr int E = HEADS_E;  // hidden dim
constexpr int H = HEADS_H;  // heads

struct fj_head_params {
    const float *__restrict__ w1, *__restrict__ b1, *__restrict__ w2, *__restrict__ b2;
    const float *__restrict__ w_gate, *__restrict__ b_gate;
    const float *__restrict__ w_main, *__restrict__ b_main;
    const float *__restrict__ w_skip, *__restrict__ b_skip;
};

struct fj_head_grads {
    float *w1, *b1, *w2, *b2, *w_gate, *b_gate, *w_main, *b_main, *w_skip, *b_skip;
};

struct fj_head_smem {
    float x[D];
    float a[E], eta[E], c[E];
    float dc[E], da[E];
    float dx[D];          // this head's dL/dx
    float part[BLOCK];    // fj_col_dot scratch
    float gate_pre, m, s; // scalars of the head
};

// a = W1 x + b1, eta = ELU(a), c = W2 eta + b2, then the gate, main and
// skip dots. sm.x must hold the input row. Synchronizes before returning.
FJ_DEVICE void fj_head_forward(const fj_head_params &p, int hh, fj_head_smem &sm)
{
    const float *w1 = p.w1 + hh * E * D, *w2 = p.w2 + hh * E * E;
    const int lane = threadIdx.x % 32;
    fj_rows_dot<BLOCK, D, E>(w1, E, sm.x, [&](int e, float s) {
        if (lane == 0) {
            const float a = s + __ldg(p.b1 + hh * E + e);
            sm.a[e] = a;
            sm.eta[e] = a > 0.0f ? a : expf(a) - 1.0f;
        }
    });
    __syncthreads();
    fj_rows_dot<BLOCK, E, E>(w2, E, sm.eta, [&](int e, float s) {
        if (lane == 0)
            sm.c[e] = s + __ldg(p.b2 + hh * E + e);
    });
    __syncthreads();
    // Three dots, one warp each (a warp takes several when there are
    // fewer than three).
    constexpr int WARPS = BLOCK / 32;
    for (int task = threadIdx.x / 32; task < 3; task += WARPS) {
        const float *w = task == 0 ? p.w_gate + hh * E : task == 1 ? p.w_main + hh * E
                                                                   : p.w_skip + hh * D;
        const float *v = task == 2 ? sm.x : sm.c;
        const int n = task == 2 ? D : E;
        float acc = 0.0f;
        for (int k = lane; k < n; k += 32)
            acc += __ldg(w + k) * v[k];
        acc = fj_warp_sum(acc);
        if (lane == 0) {
            if (task == 0)
                sm.gate_pre = acc + __ldg(p.b_gate + hh);
            else if (task == 1)
                sm.m = acc + __ldg(p.b_main + hh);
            else
                sm.s = acc + __ldg(p.b_skip + hh);
        }
    }
    __syncthreads();
}

FJ_DEVICE float fj_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

FJ_DEVICE float fj_head_logit(const fj_head_smem &sm)
{
    return sm.s + fj_sigmoid(sm.gate_pre) * sm.m;
}

// Backward of head hh after fj_head_forward: adds the parameter gradients
// to g (offset to this head's slice by the caller's base pointers: every g
// pointer is the tensor's [H, ...] base) and leaves this head's dL/dx in
// sm.dx. Synchronizes before returning.
FJ_DEVICE void fj_head_backward(const fj_head_params &p, const fj_head_grads &g, int hh,
                                float dz, fj_head_smem &sm)
{
    const int tid = threadIdx.x;
    // logit = s + sigmoid(gate_pre) * m
    const float gt = fj_sigmoid(sm.gate_pre);
    const float dm = dz * gt;
    const float dgp = dz * sm.m * gt * (1.0f - gt);
    if (tid == 0) {
        g.b_skip[hh] += dz;
        g.b_main[hh] += dm;
        g.b_gate[hh] += dgp;
    }
    for (int d = tid; d < D; d += BLOCK)
        g.w_skip[hh * D + d] += dz * sm.x[d];
    for (int e = tid; e < E; e += BLOCK) {
        const float c = sm.c[e];
        const float dc = dm * __ldg(p.w_main + hh * E + e) + dgp * __ldg(p.w_gate + hh * E + e);
        sm.dc[e] = dc;
        g.w_main[hh * E + e] += dm * c;
        g.w_gate[hh * E + e] += dgp * c;
        g.b2[hh * E + e] += dc;
    }
    __syncthreads();
    // c = W2 eta + b2:  dW2[e, k] += dc_e eta_k;  deta_k = sum_e W2[e, k] dc_e
    float *gw2 = g.w2 + hh * E * E;
    for (int i = tid; i < E * E; i += BLOCK) {
        const int e = i / E, k = i - e * E;
        gw2[i] += sm.dc[e] * sm.eta[k];
    }
    const float *w2 = p.w2 + hh * E * E;
    fj_col_dot<BLOCK, E>(E, [&](int e, int k) { return __ldg(w2 + e * E + k); }, sm.dc, sm.part,
                         sm.da);
    // eta = ELU(a):  da = deta * ELU'(a)
    for (int e = tid; e < E; e += BLOCK) {
        const float a = sm.a[e];
        const float da = sm.da[e] * (a > 0.0f ? 1.0f : expf(a));
        sm.da[e] = da;
        g.b1[hh * E + e] += da;
    }
    __syncthreads();
    // a = W1 x + b1:  dW1[e, d] += da_e x_d;  dx_d = sum_e W1[e, d] da_e (+ skip)
    float *gw1 = g.w1 + hh * E * D;
    for (int i = tid; i < E * D; i += BLOCK) {
        const int e = i / D, d = i - e * D;
        gw1[i] += sm.da[e] * sm.x[d];
    }
    const float *w1 = p.w1 + hh * E * D;
    fj_col_dot<BLOCK, D>(E, [&](int e, int d) { return __ldg(w1 + e * D + d); }, sm.da, sm.part,
                         sm.dx);
    for (int d = tid; d < D; d += BLOCK)
        sm.dx[d] += dz * __ldg(p.w_skip + hh * D + d);
    __syncthreads();
}
