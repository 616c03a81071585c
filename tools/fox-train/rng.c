#include "rng.h"

#include <math.h>

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void ft_rng_init(ft_rng *r, uint64_t seed, uint64_t stream)
{
    /* Mixing seed and stream separately keeps (seed, stream) pairs apart
     * even when seed + stream coincide. */
    r->state = mix(seed ^ 0x6a09e667f3bcc909ull) ^ mix(stream + 0x3c6ef372fe94f82bull);
}

uint64_t ft_rng_next(ft_rng *r)
{
    r->state += 0x9e3779b97f4a7c15ull;
    return mix(r->state);
}

double ft_rng_uniform(ft_rng *r)
{
    return (double)(ft_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

double ft_rng_normal(ft_rng *r)
{
    /* 1 - u is in (0, 1], so the log is finite. */
    double u1 = 1.0 - ft_rng_uniform(r), u2 = ft_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t ft_rng_below(ft_rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = ft_rng_next(r);
    while (x >= limit);
    return x % n;
}
