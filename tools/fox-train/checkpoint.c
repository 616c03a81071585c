#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "outpath.h"

static const char magic[8] = {'F', 'O', 'X', 'T', 'R', 'A', 'I', 'N'};

typedef struct ft_ckpt_header {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    int32_t batch, k, f, d, e, h;
    int32_t signal, n_train, n_heldout, kloop;   /* kloop: a reserved 0 in older files */
    uint64_t seed;
    float lr, beta1, beta2, eps, weight_decay, reserved_f;
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

/* The rename itself survives a crash only once the directory is on disk.
 * Best effort: some file systems cannot sync a directory, and the file is
 * complete either way (a crash before this leaves the previous
 * checkpoint, never a torn one). */
static void sync_dir_of(const char *path)
{
    char dir[4096];
    ft_dir_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
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
    h.seed = meta->seed;
    h.lr = meta->lr, h.beta1 = meta->beta1, h.beta2 = meta->beta2, h.eps = meta->eps;
    h.weight_decay = meta->weight_decay;
    h.step = meta->step;
    h.param_floats = n;
    const float *const arr[3] = {params, m, v};
    h.checksum = checksum(&h, arr, n);

    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(why, why_len, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    int ok = fwrite(&h, sizeof h, 1, f) == 1;
    for (int i = 0; i < 3 && ok; i++)
        ok = fwrite(arr[i], sizeof(float), n, f) == n;
    ok = ok && fflush(f) == 0 && fsync(fileno(f)) == 0;
    int err = errno;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        err = ok ? errno : err;
        unlink(tmp);
        snprintf(why, why_len, "cannot write %s: %s", path, strerror(err));
        return -1;
    }
    sync_dir_of(path);
    return 0;
}

int ft_ckpt_read(const char *path, ft_ckpt_meta *meta, float **params, float **m, float **v,
                 size_t *n, char *why, size_t why_len)
{
    *params = *m = *v = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
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
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
        (unsigned long long)st.st_size != sizeof h + 3ull * count * sizeof(float)) {
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
    meta->dims = (ft_dims){h.batch, h.k, h.f, h.d, h.e, h.h};
    meta->signal = h.signal, meta->n_train = h.n_train, meta->n_heldout = h.n_heldout;
    meta->kloop = h.kloop;
    meta->seed = h.seed;
    meta->lr = h.lr, meta->beta1 = h.beta1, meta->beta2 = h.beta2, meta->eps = h.eps;
    meta->weight_decay = h.weight_decay;
    meta->step = h.step;
    *params = arr[0], *m = arr[1], *v = arr[2];
    *n = count;
    return 0;
}
