/* Synthetic data for the trainer, generated from a seed: sequences of K
 * bars of F features with irregular time steps, and labels for the H
 * horizons at every bar and for the whole sequence.
 *
 * "rule" signal (default): a hidden projection s_t = p . x_t of 8 of the F
 * features (the rest are noise the variable selection should learn to
 * drop); horizon h has the time constant L_h = 2^h time units. The label
 * of bar t, horizon h is 1 when the exponentially decayed sum of s over
 * the past is positive:
 *     a_h(t) = exp(-dt_t / L_h) * a_h(t-1) + s_t,      label = a_h(t) > 0
 * and the sequence label of horizon h is the same with time constant
 * 4 L_h at the last bar. It depends on the features over the horizon and
 * on the irregular spacing, which is what a CfC cell models.
 *
 * "constant" signal (the acceptance gate): every bar of a sequence is
 * sign * amplitude * d plus small noise, for one fixed direction d, and
 * every label of the sequence is sign > 0.
 *
 * Features are N(0, 1) noise (rule) and dt is uniform in [0.25, 1.75]. */
#ifndef FT_DATA_H
#define FT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "rng.h"  /* FT_STREAM_TRAIN, FT_STREAM_HELDOUT */

typedef enum ft_signal {
    FT_SIGNAL_RULE = 0,
    FT_SIGNAL_CONSTANT = 1,
} ft_signal;

const char *ft_signal_name(ft_signal s);

typedef struct ft_dataset {
    int n, k, f, h;
    float *x;       /* [n, K, F] */
    float *dt;      /* [n, K] */
    float *y_step;  /* [n, K, H] */
    float *y_seq;   /* [n, H] */
} ft_dataset;

/* Generates n sequences of the split (FT_STREAM_TRAIN or
 * FT_STREAM_HELDOUT): the same seed gives the same rule for both splits and
 * different samples. Returns 0, or -1 when out of memory. */
int ft_data_generate(ft_dataset *d, int n, int k, int f, int h, ft_signal signal,
                     uint64_t seed, int split_stream);
void ft_data_free(ft_dataset *d);

/* One batch as the model reads it, in one buffer (offsets in floats, each
 * part 256-byte aligned): x [B, K, F], dt [B, K], labels [K+1, B, H]
 * (the K per-bar label blocks, then the sequence labels: the layout of the
 * model's logits). */
typedef struct ft_batch_layout {
    size_t x, dt, labels, floats;
} ft_batch_layout;

void ft_batch_layout_for(int batch, int k, int f, int h, ft_batch_layout *l);

/* Writes the samples idx[0 .. batch) into out (l->floats floats). */
void ft_data_pack(const ft_dataset *d, const int *idx, int batch, const ft_batch_layout *l,
                  float *out);

/* The order of the n training samples in epoch `epoch`: a permutation
 * that depends only on (seed, epoch), so a resumed run sees the same
 * batches. */
void ft_epoch_order(int n, uint64_t seed, uint64_t epoch, int *perm);

#endif
