/* The runtime's precision of the perception ops' matrix products
 * (foxjit_set_precision): a setting the kernel lookup reads
 * (module_cache.c), which picks the TF32 or the 3xTF32 variant of a
 * program that follows it (fj_variant_at_precision). */
#include "runtime.h"
#include "status.h"

FOXJIT_API foxjit_status foxjit_set_precision(foxjit_runtime *rt, foxjit_precision precision)
{
    fj_clear_error();
    if (!rt)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "foxjit_set_precision: runtime is NULL; "
                       "create one with foxjit_runtime_create()");
    /* Compared as an int: a caller's enum may hold any value. */
    const int p = (int)precision;
    if (p != FOXJIT_PRECISION_FLOAT32 && p != FOXJIT_PRECISION_TF32)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "foxjit_set_precision: precision is %d, "
                       "not a foxjit_precision; pass FOXJIT_PRECISION_FLOAT32 (%d, the default: "
                       "float32 accuracy) or FOXJIT_PRECISION_TF32 (%d); the runtime's "
                       "precision is unchanged", p, FOXJIT_PRECISION_FLOAT32,
                       FOXJIT_PRECISION_TF32);
    atomic_store_explicit(&rt->precision, p, memory_order_relaxed);
    return FOXJIT_OK;
}

FOXJIT_API foxjit_status foxjit_get_precision(const foxjit_runtime *rt, foxjit_precision *out)
{
    fj_clear_error();
    if (!rt || !out)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "foxjit_get_precision: rt and out must not be NULL");
    *out = (foxjit_precision)atomic_load_explicit(&rt->precision, memory_order_relaxed);
    return FOXJIT_OK;
}
