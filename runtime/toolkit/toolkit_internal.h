/* Inside the toolkit (toolkit_*.c): what its opaque types hold. The tools
 * never include this (tests/tools/test_layers.sh). */
#ifndef FJ_TOOLKIT_INTERNAL_H
#define FJ_TOOLKIT_INTERNAL_H

#include "arch.h"
#include "counters.h"
#include "disk_cache.h"
#include "manifest.h"
#include "module_cache.h"
#include "registry.h"
#include "toolkit.h"

struct fj_tk_cache {
    fj_disk_cache *disk;
    fj_counters counters;  /* what fj_tk_cache_counters reports */
};

struct fj_tk_manifest {
    fj_manifest_item *items;
    size_t count;
};

typedef struct fj_tk_unit {
    fj_variant variant;
    fj_tk_target target;
} fj_tk_unit;

struct fj_tk_units {
    fj_tk_unit *units;
    size_t count, cap;
};

struct fj_tk_kernel {
    const fj_program *program;
    fj_fn fn;  /* its module stays loaded while the runtime lives */
};

/* The runtime's target for the toolkit's, and back. */
fj_target fj_tk_target_in(const fj_tk_target *t);
fj_tk_target fj_tk_target_out(const fj_target *t);

#endif
