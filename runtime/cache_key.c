#include "cache_key.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "foxjit/foxjit.h"

#define FJ_KEY_FORMAT "foxjit-key-1"

void fj_hash128_hex(const void *data, size_t len, char out[33])
{
    XXH128_hash_t h = XXH3_128bits(data, len);
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
    for (size_t i = 0; i < fj_embedded_file_count; i++) {
        const fj_embedded_file *f = &fj_embedded_files[i];
        uint64_t size = f->size;
        XXH3_128bits_update(&s, f->name, strlen(f->name) + 1);
        XXH3_128bits_update(&s, &size, sizeof size);
        XXH3_128bits_update(&s, f->text, f->size);
    }
    XXH128_hash_t h = XXH3_128bits_digest(&s);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    for (int i = 0; i < 16; i++)
        snprintf(sources_hex + 2 * i, 3, "%02x", c.digest[i]);
}

const char *fj_sources_hash_hex(void)
{
    pthread_once(&sources_once, hash_sources);
    return sources_hex;
}

static char *next_option(fj_options *o)
{
    if (o->argc >= FJ_MAX_OPTIONS)
        return NULL;
    o->argv[o->argc] = o->storage[o->argc];
    return o->storage[o->argc++];
}

#define ADD_OPTION(o, ...)                                               \
    do {                                                                 \
        char *slot_ = next_option(o);                                    \
        if (slot_)                                                       \
            snprintf(slot_, sizeof (o)->storage[0], __VA_ARGS__);        \
    } while (0)

void fj_build_options(const fj_variant *v, const fj_target *t, const fj_toolchain *tc,
                      fj_options *out)
{
    memset(out, 0, sizeof *out);
    ADD_OPTION(out, "--gpu-architecture=%s", t->name);
    ADD_OPTION(out, "-std=c++17");
    ADD_OPTION(out, "-DFOXJIT_NVRTC=1");
    /* Unannotated helpers (constexpr functions) are device code. */
    ADD_OPTION(out, "-default-device");
    const fj_program *p = v->program;
    for (int i = 0; i < FJ_MAX_PARAMS && p->params[i]; i++)
        ADD_OPTION(out, "-D%s=%d", p->params[i], v->values[i]);
    if (p->uses_cccl)
        ADD_OPTION(out, "-I%s", tc && tc->cccl_include[0] ? tc->cccl_include : "<cccl>");
}

void fj_key_build(const fj_variant *v, const fj_target *t, const fj_toolchain *tc, fj_key *out)
{
    fj_options o;
    fj_build_options(v, t, tc, &o);
    size_t used = (size_t)snprintf(out->text, sizeof out->text,
                                   "%s\nlibrary %d.%d.%d\nprogram %s\nsource %s\nsources %s\n"
                                   "target %s %s\nnvrtc %d.%d\ncccl %d\noptions",
                                   FJ_KEY_FORMAT, FOXJIT_VERSION_MAJOR, FOXJIT_VERSION_MINOR,
                                   FOXJIT_VERSION_PATCH, v->program->name, v->program->source,
                                   fj_sources_hash_hex(), t->name, t->ptx ? "ptx" : "cubin",
                                   tc ? tc->nvrtc->major : 0, tc ? tc->nvrtc->minor : 0,
                                   tc ? tc->cccl_version : 0);
    for (int i = 0; i < o.argc && used < sizeof out->text; i++) {
        /* The include path is machine-specific; the CCCL version above is
         * what matters for the compiled code. */
        const char *opt = !strncmp(o.argv[i], "-I", 2) ? "-I<cccl>" : o.argv[i];
        used += (size_t)snprintf(out->text + used, sizeof out->text - used, " %s", opt);
    }
    if (used < sizeof out->text)
        snprintf(out->text + used, sizeof out->text - used, "\n");
    fj_hash128_hex(out->text, strlen(out->text), out->hex);
}
