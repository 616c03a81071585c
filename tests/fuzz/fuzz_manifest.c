/* libFuzzer target: the manifest parser (runtime/build/manifest.c) and what warm
 * does with each parsed line: the op's variant expansion for sm_89, sm_90
 * and a future arch (ops/op_table.c and the ops' planners), the
 * variant description and the cache key.
 *
 * Properties beyond "no crash, no leak, no sanitizer report": a refused
 * manifest says why, naming the line; an accepted one yields items with the
 * op's every key set; a variant expansion returns -1 with a reason or a
 * count within bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "cache_key.h"
#include "manifest.h"
#include "registry.h"

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "property failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                         \
        }                                                                    \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    fj_manifest_item *items = NULL;
    size_t count = 0;
    char why[512] = "";
    if (fj_manifest_parse(text, &items, &count, why, sizeof why) != 0) {
        CHECK(items == NULL && count == 0);
        CHECK(why[0] != '\0');
        CHECK(!strncmp(why, "line ", 5) || !strcmp(why, "out of memory"));
        free(text);
        return 0;
    }
    static const int ccs[] = {89, 90, 120};
    for (size_t i = 0; i < count; i++) {
        const fj_manifest_item *it = &items[i];
        CHECK(it->op != NULL && it->line >= 1);
        for (size_t c = 0; c < sizeof ccs / sizeof ccs[0]; c++) {
            fj_variant v[FJ_MANIFEST_MAX_VARIANTS];
            char vwhy[256] = "";
            int k = fj_op_variants(it->op, it->values, ccs[c], v, FJ_MANIFEST_MAX_VARIANTS, vwhy,
                                   sizeof vwhy);
            CHECK(k >= -1 && k <= FJ_MANIFEST_MAX_VARIANTS);
            if (k < 0)
                CHECK(vwhy[0] != '\0');
            fj_target t = {ccs[c], 0, ""};
            snprintf(t.name, sizeof t.name, "sm_%d", ccs[c]);
            for (int j = 0; j < k; j++) {
                char desc[256];
                fj_variant_describe(&v[j], desc, sizeof desc);
                CHECK(!strncmp(desc, v[j].program->name, strlen(v[j].program->name)));
                fj_key key;
                fj_key_build(&v[j], &t, NULL, &key);
                CHECK(strlen(key.hex) == 32);
            }
        }
    }
    free(items);
    free(text);
    return 0;
}
