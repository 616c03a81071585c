/* The reference perception model's dims and its 17 parameter tensors
 * (kernels.md, "The reference perception model"): shapes, names, which
 * ones take weight decay, and their seeded initial values. Host only. */
#ifndef FT_PARAMS_H
#define FT_PARAMS_H

#include <stddef.h>
#include <stdint.h>

/* VSN over F variables; CfC with n_in = F, n_hid = D; heads (D, E, H);
 * attention pooling over the K states of dim D. */
typedef struct ft_dims {
    int batch, k, f, d, e, h;
} ft_dims;

/* The trainer's shapes (kernels.md, "perception trainer"). */
#define FT_DEFAULT_F 40
#define FT_DEFAULT_D 128
#define FT_DEFAULT_E 64
#define FT_DEFAULT_H 5

/* Reducer order, the same as tests/ref/perception_ref.h (pr_param). */
enum ft_param {
    FT_CFC_W_IN, FT_CFC_W_REC, FT_CFC_BIAS, FT_CFC_TAU,
    FT_HEADS_W1, FT_HEADS_B1, FT_HEADS_W2, FT_HEADS_B2, FT_HEADS_W_GATE, FT_HEADS_B_GATE,
    FT_HEADS_W_MAIN, FT_HEADS_B_MAIN, FT_HEADS_W_SKIP, FT_HEADS_B_SKIP,
    FT_VSN_W, FT_VSN_BIAS,
    FT_ATTN_Q,
    FT_PARAM_COUNT
};

size_t ft_param_size(const ft_dims *d, int which);
const char *ft_param_name(int which);
/* Sum of all tensor sizes. */
size_t ft_param_total(const ft_dims *d);
/* Offset of tensor `which` in the packed order (tensors back to back). */
size_t ft_param_offset(const ft_dims *d, int which);

/* Weight decay applies to the weight matrices and the attention query; not
 * to biases, and not to the CfC time constants (decay would pull tau
 * towards 0, where the cell stops integrating). */
int ft_param_decays(int which);

/* Seeded initial values of every tensor, packed (ft_param_offset order),
 * into out[ft_param_total(d)]:
 *  - VSN W ~ U(+-1/sqrt(F)), bias 0 (the softmax starts near uniform)
 *  - CfC W_in ~ U(+-sqrt(3F)) * 0.5: the VSN output is the input times
 *    weights that sum to 1, about x / F, so W_in is F times the usual scale
 *    to give pre-activations of order 1; W_rec ~ U(+-1/sqrt(D)); bias 0;
 *    tau log-uniform in [1, 16] time units (the horizons of the data)
 *  - heads: matrices ~ U(+-1/sqrt(fan_in)), biases 0
 *  - attention query ~ U(+-1/sqrt(D)) (pooling starts near uniform) */
void ft_params_init(const ft_dims *d, uint64_t seed, float *out);

#endif
