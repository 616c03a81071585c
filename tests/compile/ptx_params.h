/* The parameter lists of the kernels in a PTX text, read from each
 * `.entry name(.param ...)` header: what the compile suite checks the
 * host's kernel declarations (fj_kernel.sig) against without a GPU. */
#ifndef FJ_PTX_PARAMS_H
#define FJ_PTX_PARAMS_H

#include <stddef.h>

#define FJ_PTX_MAX_PARAMS 64

typedef struct fj_ptx_entry {
    char name[128];
    int count;                        /* -1: more than FJ_PTX_MAX_PARAMS */
    size_t sizes[FJ_PTX_MAX_PARAMS];  /* bytes per parameter, in order */
} fj_ptx_entry;

/* Finds the entry `name` in ptx and fills out. Returns 0, or -1 when ptx has
 * no such entry or its header does not parse (why says which). */
int fj_ptx_entry_params(const char *ptx, const char *name, fj_ptx_entry *out, char *why,
                        size_t why_len);

#endif
