#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "output_file.h"

static const char magic[8] = {'F', 'O', 'X', 'T', 'R', 'A', 'I', 'N'};

typedef struct ft_ckpt_header {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    int32_t batch, k, f, d, e, h;
    int32_t signal, n_train, n_heldout, kloop;   /* kloop: a reserved 0 in older files */
    uint64_t seed;
    float lr, beta1, beta2, eps, weight_decay;
    int32_t precision;  /* a foxjit_precision; 0 (float32, all they could be) in older files */
    uint64_t step;
    uint64_t param_floats;
    uint64_t checksum;
} ft_ckpt_header;

_Static_assert(sizeof(ft_ckpt_header) == 112, "the checkpoint header has no hidden padding");

static uint64_t checksum(const ft_ckpt_header *h, const float *const arr[3], size_t n)
{
    ft_ckpt_header copy = *h;
    copy.checksum = 0;
    XXH64_state_t *s = XXH64_createState();
    if (!s)
        return 0;
    XXH64_reset(s, 0);
    XXH64_update(s, &copy, sizeof copy);
    for (int i = 0; i < 3; i++)
        XXH64_update(s, arr[i], n * sizeof(float));
    uint64_t d = XXH64_digest(s);
    XXH64_freeState(s);
    return d;
}

/* What is not finite in a model's state (or, in v, negative): the
 * checksum vouches for the bytes, not for a run that can go on. NULL when
 * all is well; else what, where and how many, in out. */
static const char *bad_state(const ft_dims *dims, const float *const arr[3], size_t n, char *out,
                             size_t len)
{
    static const char *const names[3] = {"parameters", "AdamW first moments (m)",
                                         "AdamW second moments (v)"};
    for (int a = 0; a < 3; a++) {
        size_t first = n, count = 0;
        for (size_t i = 0; i < n; i++) {
            float x = arr[a][i];
            if (!isfinite(x) || (a == 2 && x < 0)) {
                first = first == n ? i : first;
                count++;
            }
        }
        if (!count)
            continue;
        float x = arr[a][first];
        const char *kind = isnan(x) ? "NaN" : isinf(x) ? "an infinity" : "a negative value";
        /* The tensor, when the file's dims are the ones its count says. */
        int t = -1;
        if (ft_param_total(dims) == n)
            for (t = FT_PARAM_COUNT - 1; t > 0 && ft_param_offset(dims, t) > first; t--)
                ;
        if (t >= 0)
            snprintf(out, len, "%s hold %s (%zu such values; the first is element %zu of %s)",
                     names[a], kind, count, first - ft_param_offset(dims, t), ft_param_name(t));
        else
            snprintf(out, len, "%s hold %s (%zu such values; the first is float %zu)", names[a],
                     kind, count, first);
        return out;
    }
    return NULL;
}

int ft_ckpt_write(const char *path, const ft_ckpt_meta *meta, const float *params,
                  const float *m, const float *v, size_t n, char *why, size_t why_len)
{
    ft_ckpt_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, magic, sizeof magic);
    h.version = FT_CKPT_VERSION;
    h.header_bytes = sizeof h;
    h.batch = meta->dims.batch, h.k = meta->dims.k, h.f = meta->dims.f;
    h.d = meta->dims.d, h.e = meta->dims.e, h.h = meta->dims.h;
    h.signal = meta->signal, h.n_train = meta->n_train, h.n_heldout = meta->n_heldout;
    h.kloop = meta->kloop;
    h.precision = meta->precision;
    h.seed = meta->seed;
    h.lr = meta->lr, h.beta1 = meta->beta1, h.beta2 = meta->beta2, h.eps = meta->eps;
    h.weight_decay = meta->weight_decay;
    h.step = meta->step;
    h.param_floats = n;
    const float *const arr[3] = {params, m, v};
    /* A state no run can continue would replace the last one that can. */
    char bad[200];
    if (bad_state(&meta->dims, arr, n, bad, sizeof bad)) {
        snprintf(why, why_len, "not writing the checkpoint of step %llu: its %s; the run has "
                 "diverged, and %s keeps what it held", (unsigned long long)meta->step, bad,
                 path);
        return -1;
    }
    h.checksum = checksum(&h, arr, n);

    /* A new file renamed over the path, synced (output_file.h): a reader
     * sees the previous checkpoint or this one, never a torn one. */
    out_file out;
    if (out_file_open(&out, path, "--checkpoint", OUT_FILE_SYNC, why, why_len))
        return -1;
    int ok = fwrite(&h, sizeof h, 1, out.f) == 1;
    for (int i = 0; i < 3 && ok; i++)
        ok = fwrite(arr[i], sizeof(float), n, out.f) == n;
    if (!ok) {
        int err = errno;
        out_file_discard(&out);
        snprintf(why, why_len, "--checkpoint '%s': writing it failed: %s (the path keeps what "
                 "it held)", path, strerror(err));
        return -1;
    }
    return out_file_close(&out, why, why_len);
}

/* The checkpoint to resume, opened without waiting on a FIFO (O_NONBLOCK)
 * and read only when it is a regular file. A symbolic link is followed:
 * reading through one writes nothing (a `latest.ckpt` link is common). */
static FILE *open_checkpoint(const char *path, struct stat *st, char *why, size_t why_len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_len, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    const char *kind = NULL;
    if (fstat(fd, st) != 0)
        snprintf(why, why_len, "cannot examine %s: %s", path, strerror(errno));
    else if (S_ISDIR(st->st_mode))
        kind = "a directory";
    else if (S_ISFIFO(st->st_mode))
        kind = "a FIFO";
    else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
        kind = "a device";
    else if (S_ISSOCK(st->st_mode))
        kind = "a socket";
    else if (!S_ISREG(st->st_mode))
        kind = "not a regular file";
    else {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        FILE *f = fdopen(fd, "rb");
        if (f)
            return f;
        snprintf(why, why_len, "cannot open %s: %s", path, strerror(errno));
    }
    if (kind)
        snprintf(why, why_len, "--resume '%s' is %s; give a checkpoint file (one that "
                 "--checkpoint FILE wrote)", path, kind);
    close(fd);
    return NULL;
}

int ft_ckpt_read(const char *path, ft_ckpt_meta *meta, float **params, float **m, float **v,
                 size_t *n, char *why, size_t why_len)
{
    *params = *m = *v = NULL;
    struct stat st;
    FILE *f = open_checkpoint(path, &st, why, why_len);
    if (!f)
        return -1;
    ft_ckpt_header h;
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, magic, sizeof magic)) {
        fclose(f);
        snprintf(why, why_len, "%s is not a fox-train checkpoint (no FOXTRAIN header)", path);
        return -1;
    }
    if (h.version != FT_CKPT_VERSION || h.header_bytes != sizeof h) {
        fclose(f);
        snprintf(why, why_len, "%s is checkpoint format %u; this fox-train reads format %d",
                 path, h.version, FT_CKPT_VERSION);
        return -1;
    }
    /* Sizes come from the file: bound them before allocating. */
    if (h.param_floats == 0 || h.param_floats > (1ull << 32)) {
        fclose(f);
        snprintf(why, why_len, "%s: implausible parameter count %llu", path,
                 (unsigned long long)h.param_floats);
        return -1;
    }
    size_t count = (size_t)h.param_floats;
    /* The file's size must be what the header says before anything that
     * big is allocated. */
    if ((unsigned long long)st.st_size != sizeof h + 3ull * count * sizeof(float)) {
        fclose(f);
        snprintf(why, why_len, "%s is %s than its header says (%lld bytes, the header's %llu "
                 "floats need %llu); it cannot be resumed", path,
                 (unsigned long long)st.st_size < sizeof h + 3ull * count * sizeof(float)
                     ? "shorter (truncated)" : "longer",
                 (long long)st.st_size, (unsigned long long)count,
                 (unsigned long long)(sizeof h + 3ull * count * sizeof(float)));
        return -1;
    }
    float *arr[3];
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        arr[i] = malloc(count * sizeof(float));
        ok = ok && arr[i] && fread(arr[i], sizeof(float), count, f) == count;
    }
    int trailing = fgetc(f) != EOF;
    fclose(f);
    const float *const carr[3] = {arr[0], arr[1], arr[2]};
    if (!ok || trailing || checksum(&h, carr, count) != h.checksum) {
        for (int i = 0; i < 3; i++)
            free(arr[i]);
        snprintf(why, why_len, "%s is %s; it cannot be resumed", path,
                 !ok ? "truncated" : trailing ? "longer than its header says"
                                              : "corrupt (checksum mismatch)");
        return -1;
    }
    const ft_dims dims = {h.batch, h.k, h.f, h.d, h.e, h.h};
    char bad[200];
    if (bad_state(&dims, carr, count, bad, sizeof bad)) {
        for (int i = 0; i < 3; i++)
            free(arr[i]);
        snprintf(why, why_len, "%s cannot be resumed: its %s. The run that wrote it had "
                 "diverged; resume an earlier checkpoint, or start again (with a lower --lr)",
                 path, bad);
        return -1;
    }
    meta->dims = dims;
    meta->signal = h.signal, meta->n_train = h.n_train, meta->n_heldout = h.n_heldout;
    meta->kloop = h.kloop;
    meta->precision = h.precision;
    meta->seed = h.seed;
    meta->lr = h.lr, meta->beta1 = h.beta1, meta->beta2 = h.beta2, meta->eps = h.eps;
    meta->weight_decay = h.weight_decay;
    meta->step = h.step;
    *params = arr[0], *m = arr[1], *v = arr[2];
    *n = count;
    return 0;
}
