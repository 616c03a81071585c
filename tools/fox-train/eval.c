#include "eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

int ft_evaluate(ft_model *m, const ft_dataset *data, int per, CUstream s, ft_eval_result *r)
{
    const ft_cuda *cu = m->cu;
    const ft_dims *d = &m->dims;
    const int B = d->batch, batches = data->n / per * per / B;
    const size_t bars = (size_t)d->k * B * d->h, seq = (size_t)B * d->h;
    const ft_batch_layout *l = &m->in_layout;
    memset(r, 0, sizeof *r);
    float *packed = malloc(l->floats * sizeof(float));
    float *z = malloc((bars + seq) * sizeof(float));
    /* Scores and labels of all batches, bars and sequences apart. */
    float *zb = malloc(((size_t)batches * bars + 1) * sizeof(float));
    float *yb = malloc(((size_t)batches * bars + 1) * sizeof(float));
    float *zs = malloc(((size_t)batches * seq + 1) * sizeof(float));
    float *ys = malloc(((size_t)batches * seq + 1) * sizeof(float));
    int *idx = malloc((size_t)B * sizeof *idx);
    int rc = -1;
    if (!packed || !z || !zb || !yb || !zs || !ys || !idx) {
        fprintf(stderr, "fox-train: out of memory for the evaluation\n");
        goto done;
    }
    for (int b = 0; b < batches; b++) {
        for (int i = 0; i < B; i++)
            idx[i] = b * B + i;
        ft_data_pack(data, idx, B, l, packed);
        if (ft_cu_check(cu, cu->cuMemcpyHtoDAsync(m->batch_in, packed, l->floats * 4, s),
                        "cuMemcpyHtoDAsync (evaluation batch)"))
            goto done;
        if (ft_model_forward(m, s) || ft_model_loss(m, 0, s)) {
            fprintf(stderr, "fox-train: evaluation forward failed: %s\n", m->why);
            goto done;
        }
        if (ft_cu_check(cu, cu->cuMemcpyDtoHAsync(z, m->z, (bars + seq) * 4, s),
                        "cuMemcpyDtoHAsync (logits)") ||
            ft_cu_check(cu, cu->cuStreamSynchronize(s), "cuStreamSynchronize"))
            goto done;
        const float *lab = packed + l->labels;
        memcpy(zb + (size_t)b * bars, z, bars * 4);
        memcpy(yb + (size_t)b * bars, lab, bars * 4);
        memcpy(zs + (size_t)b * seq, z + bars, seq * 4);
        memcpy(ys + (size_t)b * seq, lab + bars, seq * 4);
    }
    r->sequences = batches * B;
    /* Equal-size batches: the mean over all values is the mean of the
     * per-batch means, which is what the training loss averages. */
    r->loss_bars = ft_bce_mean(zb, yb, (size_t)batches * bars);
    r->loss_seq = ft_bce_mean(zs, ys, (size_t)batches * seq);
    r->loss = r->loss_bars + r->loss_seq;
    r->auc_bars = ft_auc(zb, yb, (size_t)batches * bars);
    r->auc_seq = ft_auc(zs, ys, (size_t)batches * seq);
    rc = 0;
done:
    free(packed), free(z), free(zb), free(yb), free(zs), free(ys), free(idx);
    return rc;
}

void ft_print_eval(const char *when, const ft_eval_result *v)
{
    printf("held-out %s (%d sequences): loss %.5f (bars %.5f + sequence %.5f), AUC bars "
           "%.4f, AUC sequence %.4f\n", when, v->sequences, v->loss, v->loss_bars,
           v->loss_seq, v->auc_bars, v->auc_seq);
}
