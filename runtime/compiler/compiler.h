/* NVRTC: one variant -> cubin (or PTX when the GPU is newer than NVRTC). */
#ifndef FJ_COMPILER_H
#define FJ_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "registry.h"
#include "toolchain.h"

/* Compiles v for t. On success *image is malloc'd (PTX NUL-terminated) and
 * *kind is FJ_ENTRY_KIND_CUBIN or _PTX. On failure returns
 * FOXJIT_ERROR_COMPILE with the options and the NVRTC log in the message. */
foxjit_status fj_compile(const fj_toolchain *tc, const fj_variant *v, const fj_target *t,
                         uint8_t **image, size_t *size, uint32_t *kind, double *ms);

/* The same, and the PTX the image was made from in *ptx (malloc'd,
 * NUL-terminated; NULL when NVRTC kept none): what the compile suite reads
 * the kernels' parameter lists from. */
foxjit_status fj_compile_with_ptx(const fj_toolchain *tc, const fj_variant *v,
                                  const fj_target *t, uint8_t **image, size_t *size,
                                  uint32_t *kind, double *ms, char **ptx);

#endif
