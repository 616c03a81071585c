/* The precisions of the products (foxjit_set_precision) by the names the
 * tools take and print: `fox-jit warm --precision`, `fox-jit bench
 * --precision`, `fox-train --precision`, and the bindings' too.
 * Header-only: fox-jit and fox-train both use it. */
#ifndef FJ_TOOLS_PRECISION_NAME_H
#define FJ_TOOLS_PRECISION_NAME_H

#include <string.h>

#include "foxjit/foxjit.h"

/* "float32" (3xTF32, the default) or "tf32". */
static inline const char *precision_name(foxjit_precision p)
{
    return p == FOXJIT_PRECISION_TF32 ? "tf32" : "float32";
}

/* 0 with *out for "float32" or "tf32", else -1. */
static inline int precision_parse(const char *s, foxjit_precision *out)
{
    if (!strcmp(s, "float32"))
        *out = FOXJIT_PRECISION_FLOAT32;
    else if (!strcmp(s, "tf32"))
        *out = FOXJIT_PRECISION_TF32;
    else
        return -1;
    return 0;
}

#endif
