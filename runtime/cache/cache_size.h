/* Sizes given by users: FOXJIT_CACHE_MAX_BYTES, fox-jit prune --max-bytes.
 * One strict parser, so a typo never becomes "unlimited" or "empty the
 * cache". */
#ifndef FJ_CACHE_SIZE_H
#define FJ_CACHE_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* Decimal digits with an optional suffix K, M, G or T (powers of 1024, any
 * case, an optional trailing B or iB: 500M, 2GiB). Refuses an empty text,
 * signs, spaces, other characters and values past 2^64 - 1. 0 on success,
 * -1 with why ("... is not a size: ..."). */
int fj_parse_size(const char *text, uint64_t *out, char *why, size_t why_len);

#endif
