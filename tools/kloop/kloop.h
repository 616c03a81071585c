/* The reference model's training step (tools/fox-train/model.c, the one
 * copy fox-train runs) as `fox-jit bench kloop` and gpu_kloop run it: one
 * model with the buffers of every path, the table of the library this
 * program links, and for FT_PATH_SINGLE_BLOCK the original trainer's
 * single-block backwards (libfoxjit_baselines.a). A kloop step is zero,
 * forward, backward and the reducers: no loss (the caller fills dz) and no
 * optimizer. */
#ifndef KLOOP_H
#define KLOOP_H

#include "foxjit/foxjit.h"
#include "model.h"

typedef struct kloop {
    ft_model m;               /* m.cu points at cu below: a kloop does not move */
    ft_cuda cu;
    foxjit_api single_block;  /* the four backward entries of FT_PATH_SINGLE_BLOCK */
} kloop;

/* Every path's buffers for dims d on runtime rt (whose context is
 * current); contents undefined. Returns 0, or -1 after printing why. */
int kloop_open(kloop *k, foxjit_runtime *rt, const ft_dims *d);
void kloop_close(kloop *k);

/* Loads every kernel a step of the path uses (call before capture).
 * Returns FOXJIT_OK, or an error with the reason in k->m.why. */
foxjit_status kloop_prepare(kloop *k, ft_path path);

/* zero + forward + backward + reduce of the path; one call of it
 * (ft_model_op). Errors as kloop_prepare. */
foxjit_status kloop_step(kloop *k, ft_path path, CUstream s);
foxjit_status kloop_op(kloop *k, ft_path path, ft_op op, int index, CUstream s);

/* Kernel launches one kloop_step enqueues besides its memset (a captured
 * step's graph has exactly that many nodes and the memset). */
int kloop_kernels_per_step(const ft_dims *d, ft_path path);

#endif
