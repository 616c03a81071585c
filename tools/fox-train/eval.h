/* Held-out evaluation: the model's forward over every full batch of a
 * dataset (in order), then the loss and ROC AUC of its logits on the host
 * in float64. Uses the model's buffers, so it runs between steps. */
#ifndef FT_EVAL_H
#define FT_EVAL_H

#include "data.h"
#include "model.h"

typedef struct ft_eval_result {
    int sequences;           /* evaluated (full batches only) */
    double loss;             /* the training loss: loss_bars + loss_seq */
    double loss_bars, loss_seq;
    double auc_bars;         /* per-bar logits, all horizons pooled */
    double auc_seq;          /* sequence logits, all horizons pooled */
} ft_eval_result;

/* Scores the first sequences of data, as many whole batches of `per` (the
 * run's global batch: the one-GPU run's, whatever the model's own batch)
 * as fit, in batches of the model's; so every number of GPUs scores the
 * same sequences. Returns 0, or -1 after printing why. */
int ft_evaluate(ft_model *m, const ft_dataset *data, int per, CUstream s, ft_eval_result *r);

/* "held-out <when> (N sequences): loss ..., AUC ..." on stdout. */
void ft_print_eval(const char *when, const ft_eval_result *v);

#endif
