/* The checks every descriptor shares: an op's values against its limits,
 * before its variants() sees them. */
#include "op_descriptor.h"

#include <stdio.h>

int fj_op_check_values(const fj_op *op, const int64_t *values, char *why, size_t why_len)
{
    for (int i = 0; i < FJ_OP_MAX_KEYS && op->keys[i]; i++)
        if (op->limits[i] && (values[i] < 1 || values[i] > op->limits[i])) {
            snprintf(why, why_len, "%s = %lld is outside the supported range [1, %lld] "
                     "(%s)", op->keys[i], (long long)values[i], (long long)op->limits[i],
                     op->limits_doc ? op->limits_doc : "docs/dims.md");
            return -1;
        }
    return 0;
}

int fj_op_variants(const fj_op *op, const int64_t *values, int cc, fj_variant *out, int max,
                   char *why, size_t why_len)
{
    if (fj_op_check_values(op, values, why, why_len) != 0)
        return -1;
    return op->variants(values, cc, out, max, why, why_len);
}
