#include "registry.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "op_descriptor.h"

/* Every program of every op, each once, in op list order: built at first
 * use from the descriptors, which are the only place a program is named. */
static const fj_program *programs[64];
static size_t program_count;
static pthread_once_t programs_once = PTHREAD_ONCE_INIT;

static void collect_programs(void)
{
    for (size_t i = 0; i < fj_op_count; i++)
        for (int j = 0; j < FJ_OP_MAX_PROGRAMS && fj_ops[i]->programs[j]; j++) {
            const fj_program *p = fj_ops[i]->programs[j];
            size_t k = 0;
            while (k < program_count && programs[k] != p)
                k++;
            /* More programs than the table holds is a build-time mistake
             * the compile suite's coverage test shows. */
            if (k == program_count && program_count < sizeof programs / sizeof programs[0])
                programs[program_count++] = p;
        }
}

size_t fj_program_list(const fj_program *const **out)
{
    pthread_once(&programs_once, collect_programs);
    *out = programs;
    return program_count;
}

const fj_program *fj_program_find(const char *name)
{
    const fj_program *const *list;
    size_t n = fj_program_list(&list);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i]->name, name))
            return list[i];
    return NULL;
}

const fj_embedded_file *fj_program_source(const fj_program *p)
{
    const fj_source_set *set = p->sources ? p->sources : &fj_library_sources;
    for (size_t i = 0; i < set->count; i++)
        if (!strcmp(set->files[i].name, p->source))
            return &set->files[i];
    return NULL;
}

int fj_program_param_count(const fj_program *p)
{
    int n = 0;
    while (n < FJ_MAX_PARAMS && p->params[n])
        n++;
    return n;
}

int fj_program_kernel_count(const fj_program *p)
{
    int n = 0;
    while (n < FJ_MAX_KERNELS && p->kernels[n].name)
        n++;
    return n;
}

int fj_kernel_arg_count(const fj_kernel *k)
{
    int n = 0;
    while (n < FJ_MAX_KERNEL_ARGS && k->args[n])
        n++;
    return n;
}

int fj_program_precision_param(const fj_program *p)
{
    for (int i = 0; i < FJ_MAX_PARAMS && p->params[i]; i++)
        if (!strcmp(p->params[i], FJ_PRECISION_PARAM))
            return i;
    return -1;
}

fj_variant fj_variant_at_precision(const fj_variant *v, int tf32)
{
    fj_variant out = *v;
    const int i = fj_program_precision_param(v->program);
    if (i >= 0)
        out.values[i] = tf32 ? 1 : 0;
    return out;
}

void fj_variant_describe(const fj_variant *v, char *buf, size_t len)
{
    int n = fj_program_param_count(v->program);
    size_t used = (size_t)snprintf(buf, len, "%s(", v->program->name);
    for (int i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s=%d", i ? "," : "",
                                 v->program->params[i], v->values[i]);
    if (used < len)
        snprintf(buf + used, len - used, ")");
}

int fj_variant_equal(const fj_variant *a, const fj_variant *b)
{
    if (a->program != b->program)
        return 0;
    int n = fj_program_param_count(a->program);
    for (int i = 0; i < n; i++)
        if (a->values[i] != b->values[i])
            return 0;
    return 1;
}

uint64_t fj_variant_hash(const fj_variant *v)
{
    /* FNV-1a over the program address and the parameter values: only used
     * to place variants in the in-process module table. */
    uint64_t h = 1469598103934665603ull;
    uintptr_t p = (uintptr_t)v->program;
    for (size_t i = 0; i < sizeof p; i++) {
        h ^= (p >> (8 * i)) & 0xff;
        h *= 1099511628211ull;
    }
    int n = fj_program_param_count(v->program);
    for (int i = 0; i < n; i++) {
        uint32_t x = (uint32_t)v->values[i];
        for (int b = 0; b < 4; b++) {
            h ^= (x >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    }
    return h;
}
