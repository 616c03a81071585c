#include "params.h"

#include <math.h>

#include "rng.h"

static const char *const names[FT_PARAM_COUNT] = {
    "cfc.w_in", "cfc.w_rec", "cfc.bias", "cfc.tau",
    "heads.w1", "heads.b1", "heads.w2", "heads.b2", "heads.w_gate", "heads.b_gate",
    "heads.w_main", "heads.b_main", "heads.w_skip", "heads.b_skip",
    "vsn.w", "vsn.bias", "attn.q",
};

const char *ft_param_name(int which)
{
    return which >= 0 && which < FT_PARAM_COUNT ? names[which] : "?";
}

size_t ft_param_size(const ft_dims *m, int which)
{
    size_t F = (size_t)m->f, D = (size_t)m->d, E = (size_t)m->e, H = (size_t)m->h;
    switch (which) {
    case FT_CFC_W_IN: return D * F;
    case FT_CFC_W_REC: return D * D;
    case FT_CFC_BIAS: case FT_CFC_TAU: return D;
    case FT_HEADS_W1: return H * E * D;
    case FT_HEADS_W2: return H * E * E;
    case FT_HEADS_B1: case FT_HEADS_B2: case FT_HEADS_W_GATE: case FT_HEADS_W_MAIN:
        return H * E;
    case FT_HEADS_B_GATE: case FT_HEADS_B_MAIN: case FT_HEADS_B_SKIP: return H;
    case FT_HEADS_W_SKIP: return H * D;
    case FT_VSN_W: return F * F;
    case FT_VSN_BIAS: return F;
    case FT_ATTN_Q: return D;
    default: return 0;
    }
}

size_t ft_param_offset(const ft_dims *d, int which)
{
    size_t off = 0;
    for (int i = 0; i < which && i < FT_PARAM_COUNT; i++)
        off += ft_param_size(d, i);
    return off;
}

size_t ft_param_total(const ft_dims *d)
{
    return ft_param_offset(d, FT_PARAM_COUNT);
}

int ft_param_decays(int which)
{
    switch (which) {
    case FT_CFC_W_IN: case FT_CFC_W_REC: case FT_HEADS_W1: case FT_HEADS_W2:
    case FT_HEADS_W_GATE: case FT_HEADS_W_MAIN: case FT_HEADS_W_SKIP: case FT_VSN_W:
    case FT_ATTN_Q:
        return 1;
    default:
        return 0;
    }
}

static void uniform(ft_rng *r, float *out, size_t n, double a)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (float)((2.0 * ft_rng_uniform(r) - 1.0) * a);
}

void ft_params_init(const ft_dims *d, uint64_t seed, float *out)
{
    ft_rng r;
    ft_rng_init(&r, seed, FT_STREAM_PARAMS);
    const double F = d->f, D = d->d, E = d->e;
    for (int i = 0; i < FT_PARAM_COUNT; i++) {
        float *p = out + ft_param_offset(d, i);
        size_t n = ft_param_size(d, i);
        switch (i) {
        case FT_VSN_W: uniform(&r, p, n, 1.0 / sqrt(F)); break;
        case FT_CFC_W_IN: uniform(&r, p, n, 0.5 * sqrt(3.0 * F)); break;
        case FT_CFC_W_REC: case FT_ATTN_Q: case FT_HEADS_W1: case FT_HEADS_W_SKIP:
            uniform(&r, p, n, 1.0 / sqrt(D));
            break;
        case FT_HEADS_W2: case FT_HEADS_W_GATE: case FT_HEADS_W_MAIN:
            uniform(&r, p, n, 1.0 / sqrt(E));
            break;
        case FT_CFC_TAU:
            for (size_t j = 0; j < n; j++)
                p[j] = (float)exp(ft_rng_uniform(&r) * log(16.0));
            break;
        default:
            for (size_t j = 0; j < n; j++)
                p[j] = 0.0f;
            break;
        }
    }
}
