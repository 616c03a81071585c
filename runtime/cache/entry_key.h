/* A cache key as the disk cache sees it: bytes it stores with an entry and
 * compares on load, and the 128-bit hash of those bytes that names the
 * entry's file. What the bytes say is cache_key.c's business; the disk
 * cache never parses them, so it builds without CUDA or NVRTC headers. */
#ifndef FJ_ENTRY_KEY_H
#define FJ_ENTRY_KEY_H

#include <stddef.h>

#include "cache_entry.h"

typedef struct fj_key {
    char text[FJ_ENTRY_MAX_KEY + 1];  /* NUL-terminated, at most FJ_ENTRY_MAX_KEY bytes */
    char hex[33];                     /* XXH3-128 of text as 32 lowercase hex digits */
} fj_key;

/* XXH3-128 of data as 32 hex digits. */
void fj_hash128_hex(const void *data, size_t len, char out[33]);

#endif
