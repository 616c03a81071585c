/* What the ranks of a --dist job must agree on, checked before their first
 * collective: every rank reads its own command line (and --resume file),
 * and a launcher gives them the same one only when it is told to. Ranks
 * with different steps, batches or reporting points would queue different
 * collectives and wait in them until --dist-timeout; ranks with different
 * data, optimizer settings or checkpoints would train a run that is none
 * of theirs. So the ranks exchange these values first (dist_xchg.h, one
 * gather) and every rank stops, naming the option, when any differs. */
#ifndef FT_DIST_AGREE_H
#define FT_DIST_AGREE_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "config.h"
#include "dist_xchg.h"

/* The layout below; a build that changes it changes this. */
#define FT_AGREE_FORMAT 3

typedef struct ft_agree {
    int64_t start, end;        /* steps: done before (--resume), done at the end (--steps) */
    uint64_t seed;
    uint64_t resumed;          /* XXH64 of the resumed parameters and moments, 0 when fresh */
    int32_t batch, k, n_train, n_heldout, signal, path, progress, checkpoint_every;
    float lr, beta1, beta2, eps, weight_decay;
    int32_t format;            /* FT_AGREE_FORMAT */
    int32_t ring;              /* FT_LOSS_RING (it sets the half-ring reporting points) */
    int32_t graph;             /* --graph: a collective captured in a graph may take
                                * another path in NCCL (buffer registration) than one
                                * launched eagerly, so every rank does the same */
    int32_t precision;         /* --precision: replicas of other precisions would part */
    int32_t spare;             /* 0: the struct stays a multiple of 8 bytes */
} ft_agree;

_Static_assert(sizeof(ft_agree) % 8 == 0, "ft_agree: no padding of the compiler's");
_Static_assert(sizeof(ft_agree) <= FT_XCHG_LOSSES * sizeof(float),
               "ft_agree must fit one exchange's message");

/* This rank's values: rc after ft_run_config_make (the checkpoint's arrays
 * still loaded when resuming), o its options. */
void ft_agree_make(ft_agree *a, const ft_run_config *rc, const ft_options *o);
/* Whether a and b differ (any byte); if so, why names the first value that
 * does, with both: "--progress is 7 on rank 1 and 10 on rank 0" (a_name
 * "rank 1", b_name "rank 0"). Returns 1 when they differ, 0 when not. */
int ft_agree_diff(const ft_agree *a, const char *a_name, const ft_agree *b, const char *b_name,
                  char *why, size_t len);

#endif
