/* Checked launches: a kernel's declared arguments (fj_kernel.args) against
 * the parameter list of the kernel as compiled. The runtime runs the check
 * once per kernel at module load with the sizes cuFuncGetParamInfo reports;
 * the compile suite runs it with the sizes read from the PTX. */
#ifndef FJ_KERNEL_ARGS_H
#define FJ_KERNEL_ARGS_H

#include <stddef.h>

#include "foxjit/foxjit.h"
#include "registry.h"

/* FOXJIT_OK when k declares exactly n arguments of sizes actual[0 .. n);
 * else FOXJIT_ERROR_COMPILE with a message naming the program, the kernel
 * and the first argument that differs (index, declared vs actual bytes).
 * `where` says what the sizes came from ("the loaded module", "the PTX"). */
foxjit_status fj_kernel_args_check(const fj_program *p, const fj_kernel *k, const size_t *actual,
                                   int n, const char *where);

#endif
