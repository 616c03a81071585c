#include "metrics.h"

#include <math.h>
#include <stdlib.h>

double ft_bce_mean(const float *z, const float *y, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        double zi = z[i];
        s += fmax(zi, 0.0) - zi * y[i] + log1p(exp(-fabs(zi)));
    }
    return n ? s / (double)n : NAN;
}

typedef struct scored {
    float score;
    int positive;
} scored;

static int by_score(const void *a, const void *b)
{
    float x = ((const scored *)a)->score, y = ((const scored *)b)->score;
    return x < y ? -1 : x > y;
}

double ft_auc(const float *score, const float *y, size_t n)
{
    scored *s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return NAN;
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(score[i])) {  /* no order to rank by */
            free(s);
            return NAN;
        }
        s[i].score = score[i];
        s[i].positive = y[i] >= 0.5f;
        pos += (size_t)s[i].positive;
    }
    size_t neg = n - pos;
    if (!pos || !neg) {
        free(s);
        return NAN;
    }
    qsort(s, n, sizeof *s, by_score);
    /* Sum of the positives' ranks (1-based), tied runs at their mean rank. */
    double rank_sum = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        size_t run_pos = 0;
        while (j < n && s[j].score == s[i].score)
            run_pos += (size_t)s[j++].positive;
        double mean_rank = 0.5 * ((double)(i + 1) + (double)j);
        rank_sum += mean_rank * (double)run_pos;
        i = j;
    }
    free(s);
    double u = rank_sum - (double)pos * ((double)pos + 1) / 2;
    return u / ((double)pos * (double)neg);
}
