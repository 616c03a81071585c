/* Checkpoints: everything a resumed run needs to continue bit for bit.
 *
 * File layout (host byte order: little-endian on every CUDA host):
 *   ft_ckpt_header (112 bytes; magic "FOXTRAIN", format version, the run's
 *   configuration, K-loop path and precision, the step count, the float
 *   count per array, a checksum)
 *   then three float32 arrays of param_floats each: the parameters, AdamW's
 *   first moments m and second moments v, every tensor back to back in
 *   reducer order (params.h).
 * The checksum is XXH64 of the header (with the checksum field zero) and
 * the arrays. The data cursor is not stored separately: epoch orders are a
 * function of (seed, epoch), so the step count fixes it. The device step
 * counter AdamW reads equals the step count. Written to a new file of an
 * unpredictable name, fsync'ed, then renamed over the path
 * (tools/common/output_file.h): a reader never sees a torn checkpoint, and
 * nothing is written through a link planted at either name. */
#ifndef FT_CHECKPOINT_H
#define FT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "params.h"

#define FT_CKPT_VERSION 1

typedef struct ft_ckpt_meta {
    ft_dims dims;
    int signal, n_train, n_heldout;
    uint64_t seed;
    float lr, beta1, beta2, eps, weight_decay;
    uint64_t step;          /* completed steps */
    int kloop;              /* the K-loop path that made it: FT_KLOOP_* (0 in older files) */
    int precision;          /* the products' precision that made it: a foxjit_precision
                               (0, float32, in older files: the only one they had) */
} ft_ckpt_meta;

/* ft_ckpt_meta.kloop: the two K-loop paths give different bits, so a run
 * continues exactly only on the path it was trained on. */
enum { FT_KLOOP_UNKNOWN = 0, FT_KLOOP_SEQUENCE = 1, FT_KLOOP_PER_STEP = 2 };

/* Returns 0, or -1 with the reason in why. A state with a value that is
 * not finite (or a negative second moment) is not written: no run could
 * continue it, and it would replace the last checkpoint one can. */
int ft_ckpt_write(const char *path, const ft_ckpt_meta *meta, const float *params,
                  const float *m, const float *v, size_t n, char *why, size_t why_len);

/* Reads and verifies a checkpoint; *params, *m, *v are malloc'ed arrays of
 * *n floats. Returns 0, or -1 with the reason in why (missing, a
 * directory, a FIFO or anything but a regular file, truncated, not a
 * checkpoint, other version, bad checksum, a state that is not finite). */
int ft_ckpt_read(const char *path, ft_ckpt_meta *meta, float **params, float **m, float **v,
                 size_t *n, char *why, size_t why_len);

#endif
