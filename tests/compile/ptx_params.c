#include "ptx_params.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of a PTX scalar type (.u64, .f32, .b8, ...), or 0 when t is not one. */
static size_t type_size(const char *t, size_t len)
{
    if (len < 3 || t[0] != '.' || !strchr("usbf", t[1]))
        return 0;
    char digits[4] = {0};
    if (len - 2 >= sizeof digits)
        return 0;
    memcpy(digits, t + 2, len - 2);
    int bits = atoi(digits);
    return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? (size_t)bits / 8 : 0;
}

/* One `.param ...` declaration between p and end: its size in bytes
 * (an array `name[N]` of a type is N of them), or 0 when it does not parse. */
static size_t param_size(const char *p, const char *end)
{
    size_t elem = 0;
    while (p < end) {
        while (p < end && isspace((unsigned char)*p))
            p++;
        const char *tok = p;
        while (p < end && !isspace((unsigned char)*p))
            p++;
        size_t len = (size_t)(p - tok);
        if (!len)
            break;
        if (tok[0] == '.') {
            size_t s = type_size(tok, len);
            if (s)
                elem = s;
            continue;  /* .param, .ptr, .global, .align N (N is skipped below) */
        }
        if (isdigit((unsigned char)tok[0]))
            continue;  /* the N of .align N */
        /* The parameter's name, maybe with [N]. */
        const char *br = memchr(tok, '[', len);
        if (!br)
            return elem;
        return elem * (size_t)strtoul(br + 1, NULL, 10);
    }
    return 0;
}

int fj_ptx_entry_params(const char *ptx, const char *name, fj_ptx_entry *out, char *why,
                        size_t why_len)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    size_t nlen = strlen(name);
    const char *p = ptx;
    while ((p = strstr(p, ".entry ")) != NULL) {
        p += 7;
        while (*p == ' ')
            p++;
        if (!strncmp(p, name, nlen) && (p[nlen] == '(' || isspace((unsigned char)p[nlen])))
            break;
    }
    if (!p) {
        snprintf(why, why_len, "no .entry %s in the PTX", name);
        return -1;
    }
    const char *open = strchr(p, '('), *close = open ? strchr(open, ')') : NULL;
    if (!open || !close) {
        snprintf(why, why_len, ".entry %s: no parameter list", name);
        return -1;
    }
    /* Parameters are separated by commas; none contains one. */
    const char *q = open + 1;
    while (q < close) {
        const char *comma = memchr(q, ',', (size_t)(close - q));
        const char *end = comma ? comma : close;
        const char *decl = strstr(q, ".param");
        if (decl && decl < end) {
            size_t s = param_size(decl, end);
            if (!s) {
                snprintf(why, why_len, ".entry %s: parameter %d does not parse: %.*s", name,
                         out->count, (int)(end - decl), decl);
                return -1;
            }
            if (out->count == FJ_PTX_MAX_PARAMS) {
                snprintf(why, why_len, ".entry %s: more than %d parameters", name,
                         FJ_PTX_MAX_PARAMS);
                return -1;
            }
            out->sizes[out->count++] = s;
        }
        q = end + 1;
    }
    return 0;
}
