#include "cache_key.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "foxjit/foxjit.h"
#include "message.h"

#define FJ_KEY_FORMAT "foxjit-key-1"

static void hash_set(XXH3_state_t *s, const fj_source_set *set)
{
    for (size_t i = 0; i < set->count; i++) {
        const fj_embedded_file *f = &set->files[i];
        uint64_t size = f->size;
        XXH3_128bits_update(s, f->name, strlen(f->name) + 1);
        XXH3_128bits_update(s, &size, sizeof size);
        XXH3_128bits_update(s, f->text, f->size);
    }
}

static void digest_hex(XXH3_state_t *s, char out[33])
{
    XXH128_hash_t h = XXH3_128bits_digest(s);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", c.digest[i]);
}

static char sources_hex[33];
static pthread_once_t sources_once = PTHREAD_ONCE_INIT;

static void hash_sources(void)
{
    XXH3_state_t s;
    XXH3_INITSTATE(&s);
    XXH3_128bits_reset(&s);
    hash_set(&s, &fj_library_sources);
    digest_hex(&s, sources_hex);
}

const char *fj_sources_hash_hex(void)
{
    pthread_once(&sources_once, hash_sources);
    return sources_hex;
}

/* The library's set, plus the program's own (a baseline's): hashed per
 * key, since only the bench and the tests build baselines. */
static void program_sources_hex(const fj_program *p, char out[33])
{
    if (!p->sources) {
        memcpy(out, fj_sources_hash_hex(), 33);
        return;
    }
    XXH3_state_t s;
    XXH3_INITSTATE(&s);
    XXH3_128bits_reset(&s);
    hash_set(&s, &fj_library_sources);
    hash_set(&s, p->sources);
    digest_hex(&s, out);
}

/* Appends one formatted option; -1 (with a message) when it does not fit
 * its slot. */
static int add_option(fj_options *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add_option(fj_options *o, const char *fmt, ...)
{
    if (o->argc >= FJ_MAX_OPTIONS)
        return fj_fail_message("more than %d NVRTC options for one variant (a program with "
                               "more parameters than FJ_MAX_PARAMS)", FJ_MAX_OPTIONS);
    char *slot = o->storage[o->argc];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(slot, sizeof o->storage[0], fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof o->storage[0])
        return fj_fail_message("NVRTC option %.40s... is longer than %zu characters; shorten "
                               "the parameter name or the CCCL path", slot,
                               sizeof o->storage[0] - 1);
    o->argv[o->argc++] = slot;
    return 0;
}

int fj_build_options(const fj_variant *v, const fj_target *t, const fj_toolchain *tc,
                     fj_options *out)
{
    memset(out, 0, sizeof *out);
    /* Unannotated helpers (constexpr functions) are device code: -default-device. */
    if (add_option(out, "--gpu-architecture=%s", t->name) || add_option(out, "-std=c++17") ||
        add_option(out, "-DFOXJIT_NVRTC=1") || add_option(out, "-default-device"))
        return -1;
    const fj_program *p = v->program;
    for (int i = 0; i < FJ_MAX_PARAMS && p->params[i]; i++)
        if (add_option(out, "-D%s=%d", p->params[i], v->values[i]))
            return -1;
    if (p->uses_cccl &&
        add_option(out, "-I%s", tc && tc->cccl_include[0] ? tc->cccl_include : "<cccl>"))
        return -1;
    return 0;
}

int fj_key_build(const fj_variant *v, const fj_target *t, const fj_toolchain *tc, fj_key *out)
{
    fj_options o;
    if (fj_build_options(v, t, tc, &o))
        return -1;
    char sources[33];
    program_sources_hex(v->program, sources);
    size_t room = sizeof out->text;
    int n = snprintf(out->text, room,
                     "%s\nlibrary %d.%d.%d\nprogram %s\nsource %s\nsources %s\n"
                     "target %s %s\nnvrtc %d.%d\ncccl %d\noptions",
                     FJ_KEY_FORMAT, FOXJIT_VERSION_MAJOR, FOXJIT_VERSION_MINOR,
                     FOXJIT_VERSION_PATCH, v->program->name, v->program->source,
                     sources, t->name, t->ptx ? "ptx" : "cubin",
                     tc ? tc->nvrtc->major : 0, tc ? tc->nvrtc->minor : 0,
                     tc ? tc->cccl_version : 0);
    size_t used = n < 0 ? room : (size_t)n;
    for (int i = 0; i < o.argc && used < room; i++) {
        /* The include path is machine-specific; the CCCL version above is
         * what matters for the compiled code. */
        const char *opt = !strncmp(o.argv[i], "-I", 2) ? "-I<cccl>" : o.argv[i];
        n = snprintf(out->text + used, room - used, " %s", opt);
        used = n < 0 ? room : used + (size_t)n;
    }
    if (used < room) {
        n = snprintf(out->text + used, room - used, "\n");
        used = n < 0 ? room : used + (size_t)n;
    }
    if (used >= room)
        return fj_fail_message("the cache key of program %s is longer than %zu bytes; shorten "
                               "its name or parameter names", v->program->name, room - 1);
    fj_hash128_hex(out->text, used, out->hex);
    return 0;
}

void fj_key_describe(const char *key, char *program, size_t program_len, char *target,
                     size_t target_len)
{
    snprintf(program, program_len, "?");
    snprintf(target, target_len, "?");
    for (const char *line = key; line && *line;) {
        const char *end = strchr(line, '\n');
        int len = (int)(end ? (size_t)(end - line) : strlen(line));
        if (!strncmp(line, "program ", 8))
            snprintf(program, program_len, "%.*s", len - 8, line + 8);
        else if (!strncmp(line, "target ", 7))
            snprintf(target, target_len, "%.*s", len - 7, line + 7);
        else if (!strncmp(line, "options ", 8)) {
            /* After the program's line: a TF32 variant says so. */
            const char *tf32 = strstr(line, " -D" FJ_PRECISION_PARAM "=1");
            if (tf32 && tf32 < line + len && strcmp(program, "?"))
                snprintf(program + strlen(program), program_len - strlen(program), " tf32");
        }
        line = end ? end + 1 : NULL;
    }
}
