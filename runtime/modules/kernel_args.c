#include "kernel_args.h"

#include "status.h"

foxjit_status fj_kernel_args_check(const fj_program *p, const fj_kernel *k, const size_t *actual,
                                   int n, const char *where)
{
    int declared = fj_kernel_arg_count(k);
    int common = declared < n ? declared : n;
    for (int i = 0; i < common; i++)
        if (k->args[i] != actual[i])
            return fj_fail(FOXJIT_ERROR_COMPILE,
                           "kernel %s (program %s, %s): argument %d is declared as %u bytes "
                           "but the kernel's parameter %d takes %zu bytes in %s; the host "
                           "would pass it wrong. Make fj_program_%s's declaration and the "
                           "launch's argument list match the kernel's parameter list",
                           k->name, p->name, p->source, i, (unsigned)k->args[i], i, actual[i],
                           where, p->name);
    if (declared != n)
        return fj_fail(FOXJIT_ERROR_COMPILE,
                       "kernel %s (program %s, %s): %d arguments are declared but the kernel "
                       "takes %d parameters in %s (argument %d: declared %u bytes, actual "
                       "%zu); make fj_program_%s's declaration and the launch's argument list "
                       "match the kernel's parameter list",
                       k->name, p->name, p->source, declared, n, where, common,
                       common < declared ? (unsigned)k->args[common] : 0u,
                       common < n ? actual[common] : (size_t)0, p->name);
    return FOXJIT_OK;
}
