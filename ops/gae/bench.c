/* Generalized advantage estimation (kernels.md 9) at rollout shapes: one
 * pass over rewards, dones and values, advantages and returns written,
 * against a copy of the same bytes. */
#include <stdio.h>

#include "bench.h"

#define MAX_ROT 32

typedef struct gae_bench {
    CUdeviceptr r[MAX_ROT], v[MAX_ROT], d[MAX_ROT];
    CUdeviceptr adv, ret;
    int nrot;
    int64_t steps, envs;
} gae_bench;

static int run_once(bench_ctx *b, void *ud, int iter)
{
    gae_bench *c = ud;
    const int i = iter % c->nrot;
    if (foxjit_gae(b->rt, c->r[i], c->v[i], c->d[i], c->steps, c->envs, 0.99f, 0.95f, c->adv,
                   c->ret, b->stream) != FOXJIT_OK) {
        fprintf(stderr, "bench gae: %s\n", foxjit_last_error());
        return 1;
    }
    return 0;
}

static int bench_shape(bench_ctx *b, int64_t steps, int64_t envs, const char *note)
{
    gae_bench c = {.steps = steps, .envs = envs};
    const size_t n = (size_t)(steps * envs), nv = (size_t)((steps + 1) * envs);
    c.nrot = bench_rotation(b, (2 * n + nv) * 4, MAX_ROT);
    for (int i = 0; i < c.nrot; i++) {
        c.r[i] = bench_alloc(b, n * 4);
        c.v[i] = bench_alloc(b, nv * 4);
        c.d[i] = bench_alloc(b, n * 4);
        bench_fill_random(b, c.r[i], n, 3u * (unsigned)i + 1);
        bench_fill_random(b, c.v[i], nv, 3u * (unsigned)i + 2);
        /* dones of random values: nonzero, so every step ends an episode;
         * the work is the same whatever they hold. */
        bench_fill_random(b, c.d[i], n, 3u * (unsigned)i + 3);
    }
    c.adv = bench_alloc(b, n * 4);
    c.ret = bench_alloc(b, n * 4);
    /* Bytes moved: rewards, dones, values read; advantages, returns written. */
    const double bytes = (double)(4 * n + nv) * 4;
    bench_row row = {.group = "gae", .name = "gae", .bytes = bytes, .note = note};
    snprintf(row.shape, sizeof row.shape, "%lldx%lld", (long long)steps, (long long)envs);
    row.us = bench_time_us(b, run_once, &c, 10);
    row.graph_us = bench_time_graph_us(b, run_once, &c, 10);
    bench_copy_us(b, (size_t)bytes / 2, &row.copy_us, &row.copy_graph_us);
    int failed = !(row.us > 0 && row.graph_us > 0);
    if (!failed)
        bench_emit(b, &row);
    for (int i = 0; i < c.nrot; i++) {
        bench_free(b, c.r[i]);
        bench_free(b, c.v[i]);
        bench_free(b, c.d[i]);
    }
    bench_free(b, c.adv);
    bench_free(b, c.ret);
    return failed;
}

static int bench_gae(bench_ctx *b)
{
    static const struct {
        int64_t steps, envs;
        const char *note;
    } shapes[] = {
        {128, 1024, "PPO: 128 steps of 1024 envs"},
        {256, 4096, NULL},
        {2048, 64, "long rollouts, few envs"},
        {64, 65536, "many envs"},
    };
    int failed = 0;
    bench_print_header("GAE: advantages and returns over [T, N] rollouts vs a copy of the bytes");
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!b->quick || i == 0)
            failed |= bench_shape(b, shapes[i].steps, shapes[i].envs, shapes[i].note);
    return failed;
}

const bench_group bench_group_gae = {
    "gae",
    "generalized advantage estimation over [T, N] rollouts vs a copy of the same bytes",
    bench_gae,
};
