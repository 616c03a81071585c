/* An op as one declared unit: what `fox-jit warm`, the manifest, prepare
 * and the program registry need to know of it, in one descriptor that the
 * op's host side (ops/<op>/op.c) exports as fj_op_<op>. The list of ops is
 * ops/op_list.h. No CUDA here: the manifest and the tools read
 * descriptors without a driver. */
#ifndef FJ_OP_DESCRIPTOR_H
#define FJ_OP_DESCRIPTOR_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"

#define FJ_OP_MAX_KEYS 6
#define FJ_OP_MAX_PROGRAMS 4
#define FJ_OP_MAX_VARIANTS 16

typedef struct fj_op {
    /* The name a manifest line starts with ("cfc"), then its keys, all
     * required, in the order variants() reads them. */
    const char *name;
    const char *keys[FJ_OP_MAX_KEYS + 1];  /* NULL-terminated */
    const char *help;
    /* The kernel variants a shape (values of keys) uses on compute
     * capability cc: the count (at most max), or -1 with why. The one
     * function behind both the op's prepare and `fox-jit warm`, so warm
     * builds exactly what the op loads. Values are inside limits. */
    int (*variants)(const int64_t *values, int cc, fj_variant *out, int max, char *why,
                    size_t why_len);
    /* Key i must be in [1, limits[i]] (0: no limit checked here). */
    int64_t limits[FJ_OP_MAX_KEYS];
    /* Where those limits are documented, for messages (NULL: docs/dims.md,
     * the perception ops'). */
    const char *limits_doc;
    /* Every program the op's variants use (the registry of programs is
     * built from these). */
    const fj_program *programs[FJ_OP_MAX_PROGRAMS + 1];
    /* Its lines of the default manifest (the trainers' shapes), or NULL. */
    const char *shapes;
} fj_op;

/* The library's ops, in op_list.h order: defined by the table of ops
 * (ops/op_table.c), which the op list builds, as fj_library_sources is by
 * the embedded sources (registry.h). */
extern const fj_op *const fj_ops[];
extern const size_t fj_op_count;

/* Fills why and returns -1 when a value is outside its op's limits. */
int fj_op_check_values(const fj_op *op, const int64_t *values, char *why, size_t why_len);

/* op->variants() for values that come from outside (a manifest, a fuzzer):
 * the limits first, since variants() may assume them (a zero column count
 * would divide by zero in a plan). Returns the count or -1 with why. */
int fj_op_variants(const fj_op *op, const int64_t *values, int cc, fj_variant *out, int max,
                   char *why, size_t why_len);

#endif
