/* The trainer's random numbers: splitmix64, so a seed names the same
 * dataset and the same initial parameters on every machine. Streams split
 * one seed into independent sequences (data, held-out data, parameters,
 * epoch orders). */
#ifndef FT_RNG_H
#define FT_RNG_H

#include <stdint.h>

typedef struct ft_rng {
    uint64_t state;
} ft_rng;

/* Stream numbers, so no two uses of a seed share a sequence. */
enum {
    FT_STREAM_RULE = 1,      /* the hidden rule (projection, direction) */
    FT_STREAM_TRAIN = 2,     /* training samples */
    FT_STREAM_HELDOUT = 3,   /* held-out samples */
    FT_STREAM_PARAMS = 4,    /* initial parameters */
    FT_STREAM_EPOCH = 5,     /* epoch orders (plus the epoch number) */
};

void ft_rng_init(ft_rng *r, uint64_t seed, uint64_t stream);
uint64_t ft_rng_next(ft_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double ft_rng_uniform(ft_rng *r);
/* Standard normal (Box-Muller, one value per call). */
double ft_rng_normal(ft_rng *r);
/* Uniform integer in [0, n), n >= 1 (rejection: no modulo bias). */
uint64_t ft_rng_below(ft_rng *r, uint64_t n);

#endif
