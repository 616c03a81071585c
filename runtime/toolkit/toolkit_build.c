/* The toolkit's build area (toolkit_build.h): NVRTC and CCCL, targets,
 * manifests, and kernel variants built into the cache or compiled cold
 * (`fox-jit warm`, the bench's compile rows). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_entry.h"
#include "cache_key.h"
#include "compiler.h"
#include "file_io.h"
#include "jit.h"
#include "status.h"
#include "target.h"
#include "toolchain.h"
#include "toolkit_internal.h"

_Static_assert(sizeof(((fj_tk_target *)0)->name) == sizeof(((fj_target *)0)->name),
               "fj_tk_target.name holds what fj_target.name does");

fj_target fj_tk_target_in(const fj_tk_target *t)
{
    fj_target out = {.cc = t->cc, .ptx = t->ptx};
    memcpy(out.name, t->name, sizeof out.name);
    return out;
}

fj_tk_target fj_tk_target_out(const fj_target *t)
{
    fj_tk_target out = {.cc = t->cc, .ptx = t->ptx};
    memcpy(out.name, t->name, sizeof out.name);
    return out;
}

/* ---- NVRTC, CCCL and targets ---------------------------------------------- */

const char *fj_tk_target_env(void) { return FJ_TARGET_ENV; }

foxjit_status fj_tk_toolchain_get(fj_tk_toolchain *out)
{
    const fj_toolchain *tc;
    foxjit_status st = fj_toolchain_get(&tc);
    if (st != FOXJIT_OK)
        return st;
    *out = (fj_tk_toolchain){.nvrtc_major = tc->nvrtc->major,
                             .nvrtc_minor = tc->nvrtc->minor,
                             .nvrtc_library = tc->nvrtc->library,
                             .num_archs = tc->nvrtc->num_archs,
                             .archs = tc->nvrtc->archs,
                             .cccl_version = tc->cccl_version,
                             .cccl_include = tc->cccl_include};
    return FOXJIT_OK;
}

foxjit_status fj_tk_target_for_name(const char *name, fj_tk_target *out)
{
    const fj_toolchain *tc;
    fj_target t;
    foxjit_status st = fj_toolchain_get(&tc);
    if (st == FOXJIT_OK && (st = fj_target_for_name(tc->nvrtc, name, &t)) == FOXJIT_OK)
        *out = fj_tk_target_out(&t);
    return st;
}

foxjit_status fj_tk_target_for_gpu(int device_cc, fj_tk_target *out)
{
    const fj_toolchain *tc;
    fj_target t;
    fj_plan_facts facts;
    foxjit_status st = fj_toolchain_get(&tc);
    if (st == FOXJIT_OK &&
        (st = fj_target_resolve(tc->nvrtc, device_cc, getenv(FJ_TARGET_ENV), FJ_TARGET_ENV, &t,
                                &facts)) == FOXJIT_OK)
        *out = fj_tk_target_out(&t);
    return st;
}

const char *fj_tk_sources_hash_hex(void) { return fj_sources_hash_hex(); }

/* ---- manifests ------------------------------------------------------------ */

const char *fj_tk_default_manifest(void) { return fj_default_manifest(); }

size_t fj_tk_manifest_max_bytes(void) { return FJ_MANIFEST_MAX_BYTES; }

char *fj_tk_read_bounded(int fd, size_t max, size_t size_hint, size_t *len)
{
    return (char *)fj_read_bounded(fd, NULL, 0, max, size_hint, len);
}

int fj_tk_manifest_parse(const char *text, fj_tk_manifest **out, char *why, size_t why_len)
{
    *out = NULL;
    fj_tk_manifest *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    if (fj_manifest_parse(text, &m->items, &m->count, why, why_len) != 0) {
        free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void fj_tk_manifest_free(fj_tk_manifest *m)
{
    if (m)
        free(m->items);
    free(m);
}

size_t fj_tk_manifest_count(const fj_tk_manifest *m) { return m->count; }

const char *fj_tk_manifest_op(const fj_tk_manifest *m, size_t i) { return m->items[i].op->name; }

const int64_t *fj_tk_manifest_values(const fj_tk_manifest *m, size_t i)
{
    return m->items[i].values;
}

/* ---- units: variants for targets -------------------------------------------- */

fj_tk_units *fj_tk_units_new(void) { return calloc(1, sizeof(fj_tk_units)); }

void fj_tk_units_free(fj_tk_units *u)
{
    if (u)
        free(u->units);
    free(u);
}

/* The most variants one manifest uses on one target (the default manifest
 * uses about a hundred). */
#define MAX_VARIANTS 1024

/* One unit more; -1 when out of memory. */
static int units_append(fj_tk_units *u, const fj_variant *v, const fj_tk_target *t)
{
    if (u->count == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 64;
        fj_tk_unit *grown = realloc(u->units, cap * sizeof *grown);
        if (!grown)
            return -1;
        u->units = grown;
        u->cap = cap;
    }
    u->units[u->count++] = (fj_tk_unit){*v, *t};
    return 0;
}

int fj_tk_units_add(fj_tk_units *u, const fj_tk_manifest *m, const fj_tk_target *t,
                    unsigned precisions, char *why, size_t why_len)
{
    const unsigned all = FJ_TK_PRECISION_BIT(FOXJIT_PRECISION_FLOAT32) |
                         FJ_TK_PRECISION_BIT(FOXJIT_PRECISION_TF32);
    if (!precisions || (precisions & ~all)) {
        snprintf(why, why_len, "no precision to build at (0x%x: float32, tf32 or both)",
                 precisions);
        return -1;
    }
    fj_variant *v = malloc(MAX_VARIANTS * sizeof *v);
    size_t nv = 0;
    if (!v) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    if (fj_manifest_expand(m->items, m->count, t->cc, v, MAX_VARIANTS, &nv, why, why_len)) {
        free(v);
        return -1;
    }
    int failed = 0;
    for (size_t a = 0; a < nv && !failed; a++) {
        if (fj_program_precision_param(v[a].program) < 0) {
            failed = units_append(u, &v[a], t);
            continue;
        }
        /* The plan's variant is the default's; each precision asked for. */
        for (int p = FOXJIT_PRECISION_FLOAT32; p <= FOXJIT_PRECISION_TF32 && !failed; p++)
            if (precisions & FJ_TK_PRECISION_BIT(p)) {
                const fj_variant at = fj_variant_at_precision(&v[a], p == FOXJIT_PRECISION_TF32);
                failed = units_append(u, &at, t);
            }
    }
    free(v);
    if (failed)
        snprintf(why, why_len, "out of memory");
    return failed ? -1 : 0;
}

size_t fj_tk_units_count(const fj_tk_units *u) { return u->count; }

void fj_tk_unit_describe(const fj_tk_units *u, size_t i, char *buf, size_t len)
{
    fj_variant_describe(&u->units[i].variant, buf, len);
}

const fj_tk_target *fj_tk_unit_target(const fj_tk_units *u, size_t i)
{
    return &u->units[i].target;
}

foxjit_status fj_tk_unit_build(const fj_tk_units *u, size_t i, fj_tk_cache *c, int *compiled)
{
    const fj_toolchain *tc;
    fj_clear_error();
    foxjit_status st = fj_toolchain_get(&tc);
    if (st != FOXJIT_OK)
        return st;
    fj_target t = fj_tk_target_in(&u->units[i].target);
    fj_image img;
    fj_image_source src;
    st = fj_jit_image(tc, c ? c->disk : NULL, c ? &c->counters : NULL, &u->units[i].variant, &t,
                      0, &img, &src);
    *compiled = st == FOXJIT_OK && src == FJ_IMAGE_COMPILED;
    return st;
}


/* Unit i's key, 0 or -1 (NVRTC missing, or the key does not fit). */
static int unit_key(const fj_tk_units *u, size_t i, fj_key *key)
{
    const fj_toolchain *tc;
    fj_target t = fj_tk_target_in(&u->units[i].target);
    if (fj_toolchain_get(&tc) != FOXJIT_OK || fj_key_build(&u->units[i].variant, &t, tc, key))
        return -1;
    return 0;
}

int fj_tk_unit_cached(const fj_tk_units *u, size_t i, fj_tk_cache *c)
{
    fj_key key;
    if (unit_key(u, i, &key) != 0)
        return -1;
    return fj_disk_cache_contains(c->disk, &key);
}

uint64_t fj_tk_unit_entry_bytes(const fj_tk_units *u, size_t i)
{
    fj_key key;
    fj_image img;
    if (unit_key(u, i, &key) != 0 || !fj_jit_memory_image(&key, &img))
        return 0;
    return FJ_ENTRY_HEADER_SIZE + strlen(key.text) + img.size;
}

int fj_tk_unit_store(const fj_tk_units *u, size_t i, fj_tk_cache *c)
{
    fj_key key;
    fj_image img;
    if (unit_key(u, i, &key) != 0 || !fj_jit_memory_image(&key, &img))
        return -1;
    return fj_disk_cache_store(c->disk, &key, img.kind, img.data, img.size);
}

foxjit_status fj_tk_unit_compile(const fj_tk_units *u, size_t i, double *ms)
{
    if (i >= u->count)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT, "fj_tk_unit_compile: no unit %zu (the "
                       "list has %zu)", i, u->count);
    const fj_toolchain *tc;
    foxjit_status st = fj_toolchain_get(&tc);
    if (st != FOXJIT_OK)
        return st;
    fj_target t = fj_tk_target_in(&u->units[i].target);
    uint8_t *image = NULL;
    size_t size = 0;
    uint32_t kind = 0;
    st = fj_compile(tc, &u->units[i].variant, &t, &image, &size, &kind, ms);
    free(image);
    return st;
}
