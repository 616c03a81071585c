/* The cache key: a canonical text naming everything a compiled kernel
 * depends on, and its 128-bit XXH3 hash (never truncated), which names the
 * entry's file. The full text is stored in the entry and compared on load,
 * so a hash collision can never serve the wrong kernel. */
#ifndef FJ_CACHE_KEY_H
#define FJ_CACHE_KEY_H

#include <stddef.h>

#include "arch.h"
#include "entry_key.h"
#include "registry.h"
#include "toolchain.h"

/* Four fixed options, one -D per parameter, the CCCL include: every
 * variant fits, so there is no option to drop. */
#define FJ_MAX_OPTIONS (4 + FJ_MAX_PARAMS + 1)

/* The NVRTC options for a variant, in canonical order. The CCCL include
 * option is last when the program uses CCCL; its path is not part of the key
 * (the CCCL version is). Strings live in `storage`. Returns the count. */
typedef struct fj_options {
    const char *argv[FJ_MAX_OPTIONS];
    int argc;
    char storage[FJ_MAX_OPTIONS][560];
} fj_options;

int fj_build_options(const fj_variant *v, const fj_target *t, const fj_toolchain *tc,
                     fj_options *out);
/* fj_build_options returns 0, or -1 with the option that does not fit in
 * the thread's message (a parameter name longer than an option slot). */

/* Hash of every embedded kernel_src file (names and contents). */
const char *fj_sources_hash_hex(void);

/* 0, or -1 with the reason in the thread's message when an option or the
 * key text does not fit (never cut: a cut key could name two kernels). */
int fj_key_build(const fj_variant *v, const fj_target *t, const fj_toolchain *tc, fj_key *out);

/* What an entry's key bytes say, for fox-jit list: the program (with
 * " tf32" after a TF32 variant's) and the target ("?" where the bytes are
 * not a key this library wrote). */
void fj_key_describe(const char *key, char *program, size_t program_len, char *target,
                     size_t target_len);

#endif
