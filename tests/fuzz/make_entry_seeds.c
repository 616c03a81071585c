/* Writes the seed corpus of fuzz_cache_entry (tests/fuzz/corpus/cache_entry)
 * with the real encoder: entries with real key texts, cubin-like and PTX
 * payloads, each with the flag byte fuzz_cache_entry.c reads first.
 *   make_entry_seeds OUT_DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "cache_entry.h"
#include "cache_key.h"
#include "colsum/op.h"

static int write_seed(const char *dir, const char *name, uint8_t flags, const uint8_t *entry,
                      size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fputc(flags, f);
    fwrite(entry, 1, len, f);
    return fclose(f);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
        return 2;
    }
    fj_colsum_plan p;
    fj_colsum_plan_for(8192, 42, fj_colsum_split_limit(90), 16, &p);
    fj_target t = {90, 0, "sm_90"};
    fj_key key;
    fj_key_build(&p.variant, &t, NULL, &key);
    uint8_t cubin[512];
    static const uint8_t elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41};
    for (size_t i = 0; i < sizeof cubin; i++)
        cubin[i] = (uint8_t)(i * 37 + 11);
    memcpy(cubin, elf, sizeof elf);
    static const char ptx[] = "//\n.version 8.8\n.target sm_90\n.address_size 64\n";
    struct {
        const char *name;
        uint32_t kind;
        const void *payload;
        size_t len;
        uint8_t flags;
    } seeds[] = {
        {"cubin", FJ_ENTRY_KIND_CUBIN, cubin, sizeof cubin, 0},
        {"cubin-repair", FJ_ENTRY_KIND_CUBIN, cubin, sizeof cubin, 1},
        {"cubin-own-key", FJ_ENTRY_KIND_CUBIN, cubin, sizeof cubin, 3},
        {"cubin-tiny", FJ_ENTRY_KIND_CUBIN, elf, 4, 2},
        {"ptx", FJ_ENTRY_KIND_PTX, ptx, sizeof ptx, 2},
        {"ptx-repair", FJ_ENTRY_KIND_PTX, ptx, sizeof ptx - 1, 1},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        size_t len;
        uint8_t *e = fj_entry_encode(key.text, seeds[i].kind, seeds[i].payload, seeds[i].len,
                                     &len);
        if (!e || write_seed(argv[1], seeds[i].name, seeds[i].flags, e, len) != 0) {
            fprintf(stderr, "cannot write seed %s in %s\n", seeds[i].name, argv[1]);
            return 1;
        }
        free(e);
    }
    /* A short key and the header alone. */
    size_t len;
    uint8_t *e = fj_entry_encode("k", FJ_ENTRY_KIND_CUBIN, elf, sizeof elf, &len);
    int rc = write_seed(argv[1], "short-key", 1, e, len) |
             write_seed(argv[1], "header-only", 1, e, FJ_ENTRY_HEADER_SIZE);
    free(e);
    return rc ? 1 : 0;
}
