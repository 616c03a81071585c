/* Manifests: text files listing op shapes to precompile (`fox-jit warm`).
 *
 *   # comment
 *   column_sum rows=8192 cols=42
 *   cfc n_in=40 n_hid=128
 *
 * One op per line, then key=value pairs (decimal integers). Each op knows
 * which kernel variants its shapes use, so warm builds exactly what the ops
 * will load. A manifest is at most FJ_MANIFEST_MAX_BYTES: a reader refuses
 * more (a FIFO, a pipe or /dev/zero given by mistake would never end). */
#ifndef FJ_MANIFEST_H
#define FJ_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "op_descriptor.h"
#include "registry.h"

#define FJ_MANIFEST_MAX_KEYS FJ_OP_MAX_KEYS
/* The built-in manifest is a few KiB; a thousand shapes fit many times. */
#define FJ_MANIFEST_MAX_BYTES (1u << 20)
#define FJ_MANIFEST_MAX_VARIANTS FJ_OP_MAX_VARIANTS

/* A manifest names ops by their descriptors' names (op_descriptor.h). */
typedef fj_op fj_manifest_op;

typedef struct fj_manifest_item {
    const fj_manifest_op *op;
    int64_t values[FJ_MANIFEST_MAX_KEYS];
    int line;
} fj_manifest_item;

/* Parses a manifest. Returns 0 and a malloc'd array, or -1 with
 * "line N: what is wrong" in why. */
int fj_manifest_parse(const char *text, fj_manifest_item **items, size_t *count, char *why,
                      size_t why_len);
/* The same against another list of ops (the baselines' manifest). */
int fj_manifest_parse_ops(const char *text, const fj_manifest_op *const *ops, size_t n_ops,
                          fj_manifest_item **items, size_t *count, char *why, size_t why_len);

/* Appends the variants every item uses on compute capability cc to
 * out[*n .. max), skipping variants already in out[0 .. *n). Returns 0, or -1
 * with "line N (op): why" for values an op does not support or when out is
 * full. */
int fj_manifest_expand(const fj_manifest_item *items, size_t count, int cc, fj_variant *out,
                       size_t max, size_t *n, char *why, size_t why_len);

/* The trainer shapes of kernels.md (the default for warm and the compile
 * tests): every op's shapes, in op list order (ops/op_table.c builds it). */
const char *fj_default_manifest(void);

#endif
