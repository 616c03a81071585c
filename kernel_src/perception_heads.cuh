// The forward and backward of one GRN head for one input row (kernels.md
// section 4), shared by heads.cu and its seed baseline. Needs HEADS_D,
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

// Where the backward of head hh puts its parameter gradients. Slot r of a
// tensor of N elements is element i = threadIdx.x + r * BLOCK (i < N): every
// thread owns the same elements at every step.
//   fj_head_global_sink adds each straight into the scratch (g pointers are
//     the tensors' [H, ...] bases).
//   fj_head_reg_sink keeps a block's head's gradients in registers across
//     time steps: loaded from the scratch before the first step, stored
//     after the last. The same values are added in the same order, so the
//     bits are those of one global update per step, with one load and one
//     store per element instead of one of each per step.
constexpr int FJ_HW1 = fj_cdiv(E * D, BLOCK), FJ_HW2 = fj_cdiv(E * E, BLOCK);
constexpr int FJ_HD = fj_cdiv(D, BLOCK), FJ_HE = fj_cdiv(E, BLOCK);
// Registers the register sink needs per thread, and whether it fits.
constexpr bool FJ_HEAD_REG_SINK = FJ_HW1 + FJ_HW2 + FJ_HD + 4 * FJ_HE <= 48;

struct fj_head_global_sink {
    fj_head_grads g;
    int hh;
    FJ_DEVICE void begin(const fj_head_grads &grads, int head) { g = grads, hh = head; }
    FJ_DEVICE void end(const fj_head_grads &, int) {}
    FJ_DEVICE void scalars(float dz, float dm, float dgp)
    {
        g.b_skip[hh] += dz;
        g.b_main[hh] += dm;
        g.b_gate[hh] += dgp;
    }
    FJ_DEVICE void skip(int, int d, float v) { g.w_skip[hh * D + d] += v; }
    FJ_DEVICE void per_e(int, int e, float wm, float wg, float b2)
    {
        g.w_main[hh * E + e] += wm;
        g.w_gate[hh * E + e] += wg;
        g.b2[hh * E + e] += b2;
    }
    FJ_DEVICE void b1(int, int e, float v) { g.b1[hh * E + e] += v; }
    FJ_DEVICE void w2(int, int i, float v) { g.w2[hh * E * E + i] += v; }
    FJ_DEVICE void w1(int, int i, float v) { g.w1[hh * E * D + i] += v; }
};

struct fj_head_reg_sink {
    float r_w1[FJ_HW1], r_w2[FJ_HW2], r_skip[FJ_HD], r_wm[FJ_HE], r_wg[FJ_HE], r_b2[FJ_HE],
        r_b1[FJ_HE];
    float r_s[3];  // b_skip, b_main, b_gate (thread 0)

    // Visits every slot this thread owns: f(register, global element).
    template <typename F>
    FJ_DEVICE void each(const fj_head_grads &g, int hh, F f)
    {
        const int t = threadIdx.x;
#pragma unroll
        for (int r = 0; r < FJ_HW1; r++)
            if (t + r * BLOCK < E * D)
                f(r_w1[r], g.w1[hh * E * D + t + r * BLOCK]);
#pragma unroll
        for (int r = 0; r < FJ_HW2; r++)
            if (t + r * BLOCK < E * E)
                f(r_w2[r], g.w2[hh * E * E + t + r * BLOCK]);
#pragma unroll
        for (int r = 0; r < FJ_HD; r++)
            if (t + r * BLOCK < D)
                f(r_skip[r], g.w_skip[hh * D + t + r * BLOCK]);
#pragma unroll
        for (int r = 0; r < FJ_HE; r++) {
            const int e = t + r * BLOCK;
            if (e < E) {
                f(r_wm[r], g.w_main[hh * E + e]);
                f(r_wg[r], g.w_gate[hh * E + e]);
                f(r_b2[r], g.b2[hh * E + e]);
                f(r_b1[r], g.b1[hh * E + e]);
            }
        }
        if (t == 0) {
            f(r_s[0], g.b_skip[hh]);
            f(r_s[1], g.b_main[hh]);
            f(r_s[2], g.b_gate[hh]);
        }
    }
    FJ_DEVICE void begin(const fj_head_grads &g, int hh)
    {
        each(g, hh, [](float &r, float &m) { r = m; });
    }
    FJ_DEVICE void end(const fj_head_grads &g, int hh)
    {
        each(g, hh, [](float &r, float &m) { m = r; });
    }
    FJ_DEVICE void scalars(float dz, float dm, float dgp)
    {
        r_s[0] += dz;
        r_s[1] += dm;
        r_s[2] += dgp;
    }
    FJ_DEVICE void skip(int r, int, float v) { r_skip[r] += v; }
    FJ_DEVICE void per_e(int r, int, float vm, float vg, float vb2)
    {
        r_wm[r] += vm;
        r_wg[r] += vg;
        r_b2[r] += vb2;
    }
    FJ_DEVICE void b1(int r, int, float v) { r_b1[r] += v; }
    FJ_DEVICE void w2(int r, int, float v) { r_w2[r] += v; }
    FJ_DEVICE void w1(int r, int, float v) { r_w1[r] += v; }
};

// Drops the gradients: for a backward that only wants dx and sm's terms.
struct fj_head_null_sink {
    FJ_DEVICE void scalars(float, float, float) {}
    FJ_DEVICE void skip(int, int, float) {}
    FJ_DEVICE void per_e(int, int, float, float, float) {}
    FJ_DEVICE void b1(int, int, float) {}
    FJ_DEVICE void w2(int, int, float) {}
    FJ_DEVICE void w1(int, int, float) {}
};

template <bool kRegisters> struct fj_head_sink_of { typedef fj_head_global_sink type; };
template <> struct fj_head_sink_of<true> { typedef fj_head_reg_sink type; };
// The sink of a block that runs one head over many steps.
typedef fj_head_sink_of<FJ_HEAD_REG_SINK>::type fj_head_step_sink;

// Backward of head hh after fj_head_forward: hands the parameter gradients
// to the sink and leaves this head's dL/dx in sm.dx. Synchronizes before
// returning.
template <typename Sink>
FJ_DEVICE void fj_head_backward(const fj_head_params &p, Sink &sink, int hh, float dz,
                                fj_head_smem &sm)
{
    const int tid = threadIdx.x;
    // logit = s + sigmoid(gate_pre) * m
    const float gt = fj_sigmoid(sm.gate_pre);
    const float dm = dz * gt;
    const float dgp = dz * sm.m * gt * (1.0f - gt);
    if (tid == 0)
        sink.scalars(dz, dm, dgp);
#pragma unroll
    for (int r = 0; r < FJ_HD; r++) {
        const int d = tid + r * BLOCK;
        if (d < D)
            sink.skip(r, d, dz * sm.x[d]);
    }
#pragma unroll
    for (int r = 0; r < FJ_HE; r++) {
        const int e = tid + r * BLOCK;
        if (e < E) {
            const float c = sm.c[e];
            const float dc =
                dm * __ldg(p.w_main + hh * E + e) + dgp * __ldg(p.w_gate + hh * E + e);
            sm.dc[e] = dc;
            sink.per_e(r, e, dm * c, dgp * c, dc);
        }
    }
    __syncthreads();
    // c = W2 eta + b2:  dW2[e, k] += dc_e eta_k;  deta_k = sum_e W2[e, k] dc_e
#pragma unroll
    for (int r = 0; r < FJ_HW2; r++) {
        const int i = tid + r * BLOCK;
        if (i < E * E) {
            const int e = i / E, k = i - e * E;
            sink.w2(r, i, sm.dc[e] * sm.eta[k]);
        }
    }
    const float *w2 = p.w2 + hh * E * E;
    fj_col_dot<BLOCK, E>(E, [&](int e, int k) { return __ldg(w2 + e * E + k); }, sm.dc, sm.part,
                         sm.da);
    // eta = ELU(a):  da = deta * ELU'(a)
#pragma unroll
    for (int r = 0; r < FJ_HE; r++) {
        const int e = tid + r * BLOCK;
        if (e < E) {
            const float a = sm.a[e];
            const float da = sm.da[e] * (a > 0.0f ? 1.0f : expf(a));
            sm.da[e] = da;
            sink.b1(r, e, da);
        }
    }
    __syncthreads();
    // a = W1 x + b1:  dW1[e, d] += da_e x_d;  dx_d = sum_e W1[e, d] da_e (+ skip)
#pragma unroll
    for (int r = 0; r < FJ_HW1; r++) {
        const int i = tid + r * BLOCK;
        if (i < E * D) {
            const int e = i / D, d = i - e * D;
            sink.w1(r, i, sm.da[e] * sm.x[d]);
        }
    }
    const float *w1 = p.w1 + hh * E * D;
    fj_col_dot<BLOCK, D>(E, [&](int e, int d) { return __ldg(w1 + e * D + d); }, sm.da, sm.part,
                         sm.dx);
    for (int d = tid; d < D; d += BLOCK)
        sm.dx[d] += dz * __ldg(p.w_skip + hh * D + d);
    __syncthreads();
}
