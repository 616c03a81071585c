/* From a variant to a loadable image: the process-wide in-memory table, then
 * the disk cache, then NVRTC. At most one compile per key runs in the
 * process at a time (single flight); other threads asking for the same key
 * wait for it. The in-memory table is also the fallback when the disk cache
 * is unusable: kernels compiled in this process are never compiled twice. */
#ifndef FJ_JIT_H
#define FJ_JIT_H

#include "arch.h"
#include "counters.h"
#include "disk_cache.h"
#include "entry_key.h"
#include "registry.h"
#include "toolchain.h"

typedef struct fj_image {
    const uint8_t *data;  /* lives until process exit */
    size_t size;
    uint32_t kind;        /* FJ_ENTRY_KIND_CUBIN or _PTX */
} fj_image;

typedef enum fj_image_source {
    FJ_IMAGE_FROM_MEMORY = 0,
    FJ_IMAGE_FROM_DISK = 1,
    FJ_IMAGE_COMPILED = 2,
} fj_image_source;

/* cache may be NULL (memory only). force_compile skips memory and disk (used
 * once after an image failed to load as a module) and replaces both. */
foxjit_status fj_jit_image(const fj_toolchain *tc, fj_disk_cache *cache, fj_counters *counters,
                           const fj_variant *v, const fj_target *t, int force_compile,
                           fj_image *out, fj_image_source *source);

/* 1 with the image this process holds for key (built or loaded before),
 * 0 when it holds none; never compiles or reads the disk. */
int fj_jit_memory_image(const fj_key *key, fj_image *out);

#endif
