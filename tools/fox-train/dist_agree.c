#include "dist_agree.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#include "checkpoint.h"
#include "params.h"
#include "precision_name.h"

void ft_agree_make(ft_agree *a, const ft_run_config *rc, const ft_options *o)
{
    const ft_ckpt_meta *c = &rc->cfg;
    memset(a, 0, sizeof *a);   /* the padding too: the struct goes over the wire */
    a->start = rc->start, a->end = rc->end;
    a->seed = c->seed;
    if (rc->params) {
        /* The parameters and AdamW's moments: all three decide the run. */
        const size_t bytes = ft_param_total(&c->dims) * sizeof(float);
        uint64_t h = XXH64(rc->params, bytes, 0);
        h = rc->m ? XXH64(rc->m, bytes, h) : h;
        a->resumed = rc->v ? XXH64(rc->v, bytes, h) : h;
    }
    a->batch = c->dims.batch, a->k = c->dims.k;
    a->n_train = c->n_train, a->n_heldout = c->n_heldout, a->signal = c->signal;
    a->path = o->per_step ? FT_KLOOP_PER_STEP : FT_KLOOP_SEQUENCE;
    a->progress = o->progress_every, a->checkpoint_every = o->checkpoint_every;
    a->lr = c->lr, a->beta1 = c->beta1, a->beta2 = c->beta2, a->eps = c->eps;
    a->weight_decay = c->weight_decay;
    a->graph = o->graph != 0;
    a->precision = o->precision;
    a->format = FT_AGREE_FORMAT;
    a->ring = FT_LOSS_RING;
}

enum { KIND_I64, KIND_U64, KIND_I32, KIND_F32, KIND_HASH, KIND_PATH, KIND_FLAG, KIND_PRECISION };

static const struct {
    const char *name;
    size_t at;
    int kind;
} fields[] = {
    /* The build's first: another fox-train's fields mean other things. */
    {"the build's exchange format (another fox-train?)", offsetof(ft_agree, format), KIND_I32},
    {"the build's loss ring (FT_LOSS_RING; another fox-train?)", offsetof(ft_agree, ring),
     KIND_I32},
    {"the steps done before (--resume)", offsetof(ft_agree, start), KIND_I64},
    {"--steps", offsetof(ft_agree, end), KIND_I64},
    {"--seed", offsetof(ft_agree, seed), KIND_U64},
    {"the resumed checkpoint's parameters and moments (XXH64)", offsetof(ft_agree, resumed),
     KIND_HASH},
    {"--batch", offsetof(ft_agree, batch), KIND_I32},
    {"--k", offsetof(ft_agree, k), KIND_I32},
    {"--train-size", offsetof(ft_agree, n_train), KIND_I32},
    {"--heldout-size", offsetof(ft_agree, n_heldout), KIND_I32},
    {"--signal", offsetof(ft_agree, signal), KIND_I32},
    {"the K-loop path (--per-step)", offsetof(ft_agree, path), KIND_PATH},
    {"--progress", offsetof(ft_agree, progress), KIND_I32},
    {"--checkpoint-every", offsetof(ft_agree, checkpoint_every), KIND_I32},
    {"--lr", offsetof(ft_agree, lr), KIND_F32},
    {"--beta1", offsetof(ft_agree, beta1), KIND_F32},
    {"--beta2", offsetof(ft_agree, beta2), KIND_F32},
    {"--eps", offsetof(ft_agree, eps), KIND_F32},
    {"--weight-decay", offsetof(ft_agree, weight_decay), KIND_F32},
    {"--graph", offsetof(ft_agree, graph), KIND_FLAG},
    {"--precision", offsetof(ft_agree, precision), KIND_PRECISION},
};

static void show(char *buf, size_t len, const ft_agree *a, size_t at, int kind)
{
    const char *p = (const char *)a + at;
    int64_t i64;
    uint64_t u64;
    int32_t i32;
    float f;
    switch (kind) {
    case KIND_I64:
        memcpy(&i64, p, sizeof i64);
        snprintf(buf, len, "%lld", (long long)i64);
        break;
    case KIND_U64:
        memcpy(&u64, p, sizeof u64);
        snprintf(buf, len, "%llu", (unsigned long long)u64);
        break;
    case KIND_HASH:
        memcpy(&u64, p, sizeof u64);
        if (u64)
            snprintf(buf, len, "%016llx", (unsigned long long)u64);
        else
            snprintf(buf, len, "none (a fresh run)");
        break;
    case KIND_PATH:
        memcpy(&i32, p, sizeof i32);
        snprintf(buf, len, "%s", i32 == FT_KLOOP_PER_STEP ? "--per-step" : "the sequence ops");
        break;
    case KIND_FLAG:
        memcpy(&i32, p, sizeof i32);
        snprintf(buf, len, "%s", i32 ? "given" : "not given");
        break;
    case KIND_PRECISION:
        memcpy(&i32, p, sizeof i32);
        snprintf(buf, len, "%s", precision_name((foxjit_precision)i32));
        break;
    case KIND_F32:
        memcpy(&f, p, sizeof f);
        snprintf(buf, len, "%.9g", (double)f);
        break;
    default:
        memcpy(&i32, p, sizeof i32);
        snprintf(buf, len, "%d", (int)i32);
        break;
    }
}

int ft_agree_diff(const ft_agree *a, const char *a_name, const ft_agree *b, const char *b_name,
                  char *why, size_t len)
{
    /* The whole struct decides (a field the table below missed still
     * counts); the table names the difference. */
    if (memcmp(a, b, sizeof *a) == 0)
        return 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const size_t at = fields[i].at;
        const size_t size = fields[i].kind == KIND_I64 || fields[i].kind == KIND_U64 ||
                                    fields[i].kind == KIND_HASH
                                ? 8 : 4;
        /* Bitwise: a float option is the same only as the same bits. */
        if (memcmp((const char *)a + at, (const char *)b + at, size) == 0)
            continue;
        char va[64], vb[64];
        show(va, sizeof va, a, at, fields[i].kind);
        show(vb, sizeof vb, b, at, fields[i].kind);
        snprintf(why, len, "%s is %s on %s and %s on %s", fields[i].name, va, a_name, vb,
                 b_name);
        return 1;
    }
    snprintf(why, len, "a value this build does not name differs between %s and %s (the same "
             "fox-train on every rank?)", a_name, b_name);
    return 1;
}
