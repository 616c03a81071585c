// Baseline for `fox-jit bench kloop` and a cross-check in tests, not used by
// the ops: the original trainer's CfC backward (kernels.md section 3) as one
// block that loops over the batch and adds parameter gradients straight into
// the final gradient tensors ([n_hid, n_in] etc., no batch dimension). Same
// math as cfc.cu; dh and dx columns are serial loops over the hidden units.
// Compile-time dims: N_IN, N_HID; BLOCK threads.
#include "perception_common.cuh"

#if !defined(N_IN) || !defined(N_HID) || !defined(BLOCK)
#error "N_IN, N_HID and BLOCK must be defined"
#endif

extern "C" __global__ void __launch_bounds__(BLOCK)
cfc_backward_legacy(const float *__restrict__ w_in, const float *__restrict__ w_rec,
                    const float *__restrict__ tau,
                    const float *__restrict__ x, long long x_stride,
                    const float *__restrict__ h, long long h_stride,
                    const float *__restrict__ dt, long long dt_stride,
                    const float *__restrict__ u, long long u_stride,
                    const float *__restrict__ dh_out, long long dh_out_stride,
                    float *__restrict__ dh, long long dh_stride, int dh_accumulate,
                    float *__restrict__ dx, long long dx_stride, int dx_accumulate,
                    float *__restrict__ dw_in, float *__restrict__ dw_rec,
                    float *__restrict__ dbias, float *__restrict__ dtau, int batch)
{
    __shared__ float d_pre[N_HID];
    __shared__ float xv[N_IN];
    __shared__ float hv[N_HID];
    const int tid = threadIdx.x;
    for (int b = 0; b < batch; b++) {
        const float *ub = fj_row(u, b, u_stride);
        const float *gb = fj_row(dh_out, b, dh_out_stride);
        const float dtb = dt[b * dt_stride];
        for (int k = tid; k < N_IN; k += BLOCK)
            xv[k] = fj_row(x, b, x_stride)[k];
        for (int i = tid; i < N_HID; i += BLOCK) {
            hv[i] = h ? fj_row(h, b, h_stride)[i] : 0.0f;
            const float decay = expf(-dtb / tau[i]);
            d_pre[i] = gb[i] * (1.0f - decay) * (1.0f - ub[i] * ub[i]);
        }
        __syncthreads();
        for (int e = tid; e < N_HID * N_IN; e += BLOCK)
            dw_in[e] += d_pre[e / N_IN] * xv[e % N_IN];
        for (int e = tid; e < N_HID * N_HID; e += BLOCK)
            dw_rec[e] += d_pre[e / N_HID] * hv[e % N_HID];
        for (int i = tid; i < N_HID; i += BLOCK) {
            const float t = tau[i];
            const float decay = expf(-dtb / t);
            dbias[i] += d_pre[i];
            dtau[i] += gb[i] * (hv[i] - ub[i]) * decay * dtb / (t * t);
        }
        for (int j = tid; dh && j < N_HID; j += BLOCK) {
            float s = 0.0f;
            for (int i = 0; i < N_HID; i++)
                s += w_rec[i * N_HID + j] * d_pre[i];
            const float v = gb[j] * expf(-dtb / tau[j]) + s;
            float *o = fj_row(dh, b, dh_stride) + j;
            *o = dh_accumulate ? *o + v : v;
        }
        for (int k = tid; dx && k < N_IN; k += BLOCK) {
            float s = 0.0f;
            for (int i = 0; i < N_HID; i++)
                s += w_in[i * N_IN + k] * d_pre[i];
            float *o = fj_row(dx, b, dx_stride) + k;
            *o = dx_accumulate ? *o + s : s;
        }
        __syncthreads();
    }
}
