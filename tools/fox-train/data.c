#include "data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

#define INFORMATIVE 8          /* features the rule reads */
#define NOISE_CONSTANT 0.3     /* noise on the constant-direction signal */

const char *ft_signal_name(ft_signal s)
{
    return s == FT_SIGNAL_CONSTANT ? "constant" : "rule";
}

void ft_data_free(ft_dataset *d)
{
    free(d->x), free(d->dt), free(d->y_step), free(d->y_seq);
    memset(d, 0, sizeof *d);
}

/* The hidden direction: unit length over INFORMATIVE distinct features
 * (all of them if f is smaller), chosen by the seed. */
static void rule_direction(int f, uint64_t seed, double *p)
{
    ft_rng r;
    ft_rng_init(&r, seed, FT_STREAM_RULE);
    for (int j = 0; j < f; j++)
        p[j] = 0;
    int want = f < INFORMATIVE ? f : INFORMATIVE;
    double norm = 0;
    for (int c = 0; c < want;) {
        int j = (int)ft_rng_below(&r, (uint64_t)f);
        if (p[j] != 0)
            continue;
        p[j] = ft_rng_normal(&r);
        if (p[j] == 0)
            continue;
        norm += p[j] * p[j];
        c++;
    }
    for (int j = 0; j < f; j++)
        p[j] /= sqrt(norm);
}

static void rule_sample(const ft_dataset *d, const double *p, ft_rng *r, int i)
{
    int K = d->k, F = d->f, H = d->h;
    float *x = d->x + (size_t)i * K * F, *dt = d->dt + (size_t)i * K;
    float *ys = d->y_step + (size_t)i * K * H, *yq = d->y_seq + (size_t)i * H;
    double a[64], aq[64];  /* H <= 64 (checked by the caller) */
    for (int h = 0; h < H; h++)
        a[h] = aq[h] = 0;
    for (int t = 0; t < K; t++) {
        dt[t] = (float)(0.25 + 1.5 * ft_rng_uniform(r));
        double s = 0;
        for (int j = 0; j < F; j++) {
            x[t * F + j] = (float)ft_rng_normal(r);
            s += p[j] * x[t * F + j];
        }
        for (int h = 0; h < H; h++) {
            double L = (double)(1 << (h < 20 ? h : 20));
            a[h] = exp(-dt[t] / L) * a[h] + s;
            aq[h] = exp(-dt[t] / (4 * L)) * aq[h] + s;
            ys[t * H + h] = a[h] > 0 ? 1.0f : 0.0f;
        }
    }
    for (int h = 0; h < H; h++)
        yq[h] = aq[h] > 0 ? 1.0f : 0.0f;
}

static void constant_sample(const ft_dataset *d, const double *dir, ft_rng *r, int i)
{
    int K = d->k, F = d->f, H = d->h;
    float *x = d->x + (size_t)i * K * F, *dt = d->dt + (size_t)i * K;
    float *ys = d->y_step + (size_t)i * K * H, *yq = d->y_seq + (size_t)i * H;
    int positive = ft_rng_next(r) >> 63;
    double amp = (positive ? 1.0 : -1.0) * (0.5 + ft_rng_uniform(r));
    for (int t = 0; t < K; t++) {
        dt[t] = (float)(0.25 + 1.5 * ft_rng_uniform(r));
        for (int j = 0; j < F; j++)
            x[t * F + j] = (float)(amp * dir[j] + NOISE_CONSTANT * ft_rng_normal(r));
        for (int h = 0; h < H; h++)
            ys[t * H + h] = (float)positive;
    }
    for (int h = 0; h < H; h++)
        yq[h] = (float)positive;
}

int ft_data_generate(ft_dataset *d, int n, int k, int f, int h, ft_signal signal,
                     uint64_t seed, int split_stream)
{
    memset(d, 0, sizeof *d);
    if (n < 0 || k < 1 || f < 1 || h < 1 || h > 64)
        return -1;
    d->n = n, d->k = k, d->f = f, d->h = h;
    size_t N = (size_t)n, K = (size_t)k;
    d->x = malloc((N * K * (size_t)f + 1) * sizeof(float));
    d->dt = malloc((N * K + 1) * sizeof(float));
    d->y_step = malloc((N * K * (size_t)h + 1) * sizeof(float));
    d->y_seq = malloc((N * (size_t)h + 1) * sizeof(float));
    double *p = malloc((size_t)f * sizeof *p);
    if (!d->x || !d->dt || !d->y_step || !d->y_seq || !p) {
        free(p);
        ft_data_free(d);
        return -1;
    }
    /* Both splits share the rule's direction, drawn from the run's seed;
     * only their samples differ. */
    rule_direction(f, seed, p);
    ft_rng r;
    ft_rng_init(&r, seed, (uint64_t)split_stream);
    for (int i = 0; i < n; i++) {
        if (signal == FT_SIGNAL_CONSTANT)
            constant_sample(d, p, &r, i);
        else
            rule_sample(d, p, &r, i);
    }
    free(p);
    return 0;
}

static size_t align64(size_t floats) { return (floats + 63) & ~(size_t)63; }

void ft_batch_layout_for(int batch, int k, int f, int h, ft_batch_layout *l)
{
    size_t B = (size_t)batch, K = (size_t)k;
    l->x = 0;
    l->dt = align64(B * K * (size_t)f);
    l->labels = l->dt + align64(B * K);
    l->floats = l->labels + align64((K + 1) * B * (size_t)h);
}

void ft_data_pack(const ft_dataset *d, const int *idx, int batch, const ft_batch_layout *l,
                  float *out)
{
    size_t K = (size_t)d->k, F = (size_t)d->f, H = (size_t)d->h, B = (size_t)batch;
    memset(out, 0, l->floats * sizeof(float));  /* padding too: packs compare bitwise */
    for (size_t b = 0; b < B; b++) {
        size_t i = (size_t)idx[b];
        memcpy(out + l->x + b * K * F, d->x + i * K * F, K * F * sizeof(float));
        memcpy(out + l->dt + b * K, d->dt + i * K, K * sizeof(float));
        float *lab = out + l->labels;
        for (size_t t = 0; t < K; t++)
            memcpy(lab + (t * B + b) * H, d->y_step + (i * K + t) * H, H * sizeof(float));
        memcpy(lab + (K * B + b) * H, d->y_seq + i * H, H * sizeof(float));
    }
}

void ft_epoch_order(int n, uint64_t seed, uint64_t epoch, int *perm)
{
    ft_rng r;
    ft_rng_init(&r, seed, FT_STREAM_EPOCH + 16 * epoch);
    for (int i = 0; i < n; i++)
        perm[i] = i;
    /* Fisher-Yates. */
    for (int i = n - 1; i > 0; i--) {
        int j = (int)ft_rng_below(&r, (uint64_t)i + 1);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}
