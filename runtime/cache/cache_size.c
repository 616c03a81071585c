#include "cache_size.h"

#include <stdio.h>

int fj_parse_size(const char *text, uint64_t *out, char *why, size_t why_len)
{
    if (!text || !*text) {
        snprintf(why, why_len, "an empty size; give a number of bytes like 500M or 2G");
        return -1;
    }
    const char *p = text;
    if (*p < '0' || *p > '9') {
        snprintf(why, why_len, "'%s' is not a size: it must start with a digit (a size like "
                 "500M or 2G; negative sizes do not exist)", text);
        return -1;
    }
    uint64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (n > (UINT64_MAX - d) / 10) {
            snprintf(why, why_len, "'%s' is too large (at most 2^64 - 1 bytes)", text);
            return -1;
        }
        n = n * 10 + d;
    }
    unsigned shift = 0;
    switch (*p) {
    case 'k': case 'K': shift = 10; p++; break;
    case 'm': case 'M': shift = 20; p++; break;
    case 'g': case 'G': shift = 30; p++; break;
    case 't': case 'T': shift = 40; p++; break;
    default: break;
    }
    if (shift && (*p == 'i' || *p == 'I') && (p[1] == 'b' || p[1] == 'B'))
        p += 2;
    else if (*p == 'b' || *p == 'B')
        p++;
    if (*p) {
        snprintf(why, why_len, "'%s' is not a size: unexpected '%s' (a size is digits with an "
                 "optional K, M, G or T, like 500M or 2G)", text, p);
        return -1;
    }
    if (shift && n > (UINT64_MAX >> shift)) {
        snprintf(why, why_len, "'%s' is too large (at most 2^64 - 1 bytes)", text);
        return -1;
    }
    *out = n << shift;
    return 0;
}
