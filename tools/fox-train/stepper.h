/* Runs training steps eagerly or by replaying one captured CUDA graph of a
 * whole step (forward to AdamW). The same calls are captured as are
 * launched eagerly, so the two give the same bits. */
#ifndef FT_STEPPER_H
#define FT_STEPPER_H

#include <stddef.h>

#include "model.h"

typedef struct ft_stepper {
    ft_model *model;
    ft_hparams hp;
    CUstream stream;
    int graph;
    CUgraph g;
    CUgraphExec exec;
    size_t nodes;  /* graph nodes (0 eager) */
} ft_stepper;

/* graph != 0: captures one ft_model_step on the stream and instantiates
 * it (the model must be prepared). Returns 0, or -1 after printing why. */
int ft_stepper_init(ft_stepper *st, ft_model *model, const ft_hparams *hp, int graph,
                    CUstream stream);
/* Enqueues one step. Returns 0, or -1 after printing why. */
int ft_stepper_run(ft_stepper *st);
void ft_stepper_free(ft_stepper *st);

#endif
