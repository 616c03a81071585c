/* The table of ops: what the list of ops (op_list.h) builds on the
 * runtime side, the descriptors (fj_ops, declared in op_descriptor.h)
 * that the program registry and the manifest read, and the default
 * manifest from their shapes. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "op_descriptor.h"
#include "op_list.h"

#define FJ_DECLARE_OP(op, api) extern const fj_op fj_op_##op;
FJ_OPS(FJ_DECLARE_OP)
#undef FJ_DECLARE_OP

const fj_op *const fj_ops[] = {
#define FJ_LIST_OP(op, api) &fj_op_##op,
    FJ_OPS(FJ_LIST_OP)
#undef FJ_LIST_OP
};
const size_t fj_op_count = sizeof fj_ops / sizeof fj_ops[0];

static char *default_text;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void build_default(void)
{
    static const char head[] =
        "# fox-jit default manifest: the shapes of kernels.md used by the trainers.\n";
    size_t len = sizeof head;
    for (size_t i = 0; i < fj_op_count; i++)
        len += fj_ops[i]->shapes ? strlen(fj_ops[i]->shapes) : 0;
    default_text = malloc(len);
    if (!default_text)
        return;
    char *p = default_text;
    memcpy(p, head, sizeof head - 1);
    p += sizeof head - 1;
    for (size_t i = 0; i < fj_op_count; i++)
        if (fj_ops[i]->shapes) {
            size_t n = strlen(fj_ops[i]->shapes);
            memcpy(p, fj_ops[i]->shapes, n);
            p += n;
        }
    *p = '\0';
}

const char *fj_default_manifest(void)
{
    pthread_once(&default_once, build_default);
    /* Out of host memory at the first call: an empty manifest, which warm
     * reports as nothing to build. */
    return default_text ? default_text : "";
}
