/* The cache key: a canonical text naming everything a compiled kernel
 * depends on, and its 128-bit XXH3 hash (never truncated), which names the
 * entry's file. The full text is stored in the entry and compared on load,
 * so a hash collision can never serve the wrong kernel. */
#ifndef FJ_CACHE_KEY_H
#define FJ_CACHE_KEY_H

#include <stddef.h>

#include "arch.h"
#include "registry.h"
#include "toolchain.h"

#define FJ_KEY_TEXT_MAX 2048
#define FJ_MAX_OPTIONS 24

typedef struct fj_key {
    char text[FJ_KEY_TEXT_MAX];
    char hex[33];  /* 128-bit hash as 32 lowercase hex digits */
} fj_key;

/* The NVRTC options for a variant, in canonical order. The CCCL include
 * option is last when the program uses CCCL; its path is not part of the key
 * (the CCCL version is). Strings live in `storage`. Returns the count. */
typedef struct fj_options {
    const char *argv[FJ_MAX_OPTIONS];
    int argc;
    char storage[FJ_MAX_OPTIONS][560];
} fj_options;

void fj_build_options(const fj_variant *v, const fj_target *t, const fj_toolchain *tc,
                      fj_options *out);

/* Hash of every embedded kernel_src file (names and contents). */
const char *fj_sources_hash_hex(void);

void fj_key_build(const fj_variant *v, const fj_target *t, const fj_toolchain *tc, fj_key *out);

/* XXH3-128 of data as 32 hex digits. */
void fj_hash128_hex(const void *data, size_t len, char out[33]);

#endif
