/* Held-out metrics on the host, in float64: mean BCE with logits and the
 * ROC AUC of logits against 0/1 labels. */
#ifndef FT_METRICS_H
#define FT_METRICS_H

#include <stddef.h>

/* Mean of max(z,0) - z*y + log1p(exp(-|z|)) over n values. */
double ft_bce_mean(const float *z, const float *y, size_t n);

/* Area under the ROC curve: the probability that a random positive
 * (y >= 0.5) scores above a random negative, ties counting one half
 * (Mann-Whitney U with average ranks). NaN when a class is empty or a score
 * is NaN. */
double ft_auc(const float *score, const float *y, size_t n);

#endif
