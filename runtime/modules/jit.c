#include "jit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache_key.h"
#include "compiler.h"
#include "log.h"
#include "status.h"

typedef enum { NODE_LOADING, NODE_READY, NODE_FAILED } node_state;

/* An image replaced by a forced rebuild. A thread may still be loading it,
 * so like every image it lives until exit; the list keeps it reachable. */
typedef struct retired_image {
    struct retired_image *next;
    const uint8_t *data;
} retired_image;

typedef struct image_node {
    struct image_node *next;
    fj_key key;
    node_state state;
    fj_image image;
    retired_image *retired;
    foxjit_status failure;
    char *failure_message;
} image_node;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t table_changed = PTHREAD_COND_INITIALIZER;
static image_node *table_head;

static image_node *find_node(const fj_key *key)
{
    for (image_node *n = table_head; n; n = n->next)
        if (!strcmp(n->key.hex, key->hex) && !strcmp(n->key.text, key->text))
            return n;
    return NULL;
}

int fj_jit_memory_image(const fj_key *key, fj_image *out)
{
    pthread_mutex_lock(&table_lock);
    const image_node *node = find_node(key);
    int ready = node && node->state == NODE_READY;
    if (ready)
        *out = node->image;
    pthread_mutex_unlock(&table_lock);
    return ready;
}

/* Does the slow work for a key this thread leads. Called without the lock. */
static foxjit_status produce(const fj_toolchain *tc, fj_disk_cache *cache, fj_counters *counters,
                             const fj_variant *v, const fj_target *t, const fj_key *key,
                             int force_compile, fj_image *out, fj_image_source *source)
{
    uint8_t *data = NULL;
    size_t size = 0;
    uint32_t kind = 0;
    if (cache && !force_compile && fj_disk_cache_load(cache, key, &data, &size, &kind)) {
        out->data = data;
        out->size = size;
        out->kind = kind;
        *source = FJ_IMAGE_FROM_DISK;
        return FOXJIT_OK;
    }
    if (force_compile && cache)
        fj_disk_cache_remove(cache, key);
    double ms = 0;
    foxjit_status st = fj_compile(tc, v, t, &data, &size, &kind, &ms);
    if (st != FOXJIT_OK)
        return st;
    fj_count(counters, compiles, 1);
    fj_count(counters, compile_us, (uint64_t)(ms * 1000.0));
    if (cache)
        fj_disk_cache_store(cache, key, kind, data, size); /* failure only warns */
    out->data = data;
    out->size = size;
    out->kind = kind;
    *source = FJ_IMAGE_COMPILED;
    return FOXJIT_OK;
}

foxjit_status fj_jit_image(const fj_toolchain *tc, fj_disk_cache *cache, fj_counters *counters,
                           const fj_variant *v, const fj_target *t, int force_compile,
                           fj_image *out, fj_image_source *source)
{
    fj_key key;
    if (fj_key_build(v, t, tc, &key))
        return fj_fail(FOXJIT_ERROR_COMPILE, "%s", foxjit_last_error());
    fj_image_source src_dummy;
    if (!source)
        source = &src_dummy;

    pthread_mutex_lock(&table_lock);
    image_node *node = find_node(&key);
    int waited = 0;
    for (;;) {
        if (!node)
            break;
        if (node->state == NODE_LOADING) {
            pthread_cond_wait(&table_changed, &table_lock);
            node = find_node(&key);
            waited = 1;
            continue;
        }
        if (node->state == NODE_FAILED && waited) {
            /* The flight we waited for failed: report its error rather than
             * compiling the same thing again. */
            foxjit_status st = fj_fail(node->failure, "%s",
                                       node->failure_message ? node->failure_message : "");
            pthread_mutex_unlock(&table_lock);
            return st;
        }
        if (node->state == NODE_READY && !force_compile) {
            *out = node->image;
            *source = FJ_IMAGE_FROM_MEMORY;
            pthread_mutex_unlock(&table_lock);
            return FOXJIT_OK;
        }
        break; /* FAILED, or READY but the caller needs a fresh compile */
    }
    if (!node) {
        node = calloc(1, sizeof *node);
        if (!node) {
            pthread_mutex_unlock(&table_lock);
            return fj_fail(FOXJIT_ERROR_OUT_OF_MEMORY, "out of host memory");
        }
        node->key = key;
        node->next = table_head;
        table_head = node;
    }
    node->state = NODE_LOADING;
    pthread_mutex_unlock(&table_lock);

    fj_image image = {0};
    foxjit_status st = produce(tc, cache, counters, v, t, &key, force_compile, &image, source);

    pthread_mutex_lock(&table_lock);
    if (st == FOXJIT_OK) {
        /* A replaced image may still be in use by a thread loading it, so it
         * is kept; this happens at most once per key after a bad entry. */
        if (node->image.data && node->image.data != image.data) {
            retired_image *r = malloc(sizeof *r);
            if (r) {
                r->data = node->image.data;
                r->next = node->retired;
                node->retired = r;
            }
        }
        node->image = image;
        node->state = NODE_READY;
        *out = image;
    } else {
        free(node->failure_message);
        node->failure_message = strdup(foxjit_last_error());
        node->failure = st;
        node->state = NODE_FAILED;
    }
    pthread_cond_broadcast(&table_changed);
    pthread_mutex_unlock(&table_lock);
    return st;
}
