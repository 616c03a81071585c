/* libFuzzer target: the cache-entry parser (runtime/cache/cache_entry.c), the
 * code that stands between a file anyone with a bug, a crash or a grudge
 * may have written and cuModuleLoadData.
 *
 * Input: one flags byte, then the entry bytes.
 *   bit 0  repair: before parsing, write the right checksums for whatever
 *          lengths the header claims, so mutations reach the checks behind
 *          the checksums (kind, PTX termination, key comparison)
 *   bit 1  parse against the key inside (must then succeed) rather than
 *          against a fixed key of another kernel
 *
 * Properties checked beyond "no crash, no leak, no sanitizer report": an
 * accepted entry's view lies inside the buffer and accounts for every byte,
 * re-encoding it gives the same bytes, and it is accepted against its own
 * key and refused against any other. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "cache_entry.h"

static const char other_key[] =
    "foxjit-key-1\nlibrary 0.2.0\nprogram colsum_rows\ntarget sm_90 cubin\n";

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "property failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                         \
        }                                                                    \
    } while (0)

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static void put_hash(uint8_t *out, XXH128_hash_t h)
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out, c.digest, 16);
}

/* The checksums cache_entry.c writes, for the lengths in the header. */
static void repair(uint8_t *buf, size_t len)
{
    if (len < FJ_ENTRY_HEADER_SIZE)
        return;
    uint64_t key_len = get_u32(buf + 16), payload_len = get_u64(buf + 24);
    if (key_len > len || payload_len > len ||
        FJ_ENTRY_HEADER_SIZE + key_len + payload_len != len)
        return;
    put_hash(buf + 32, XXH3_128bits(buf + FJ_ENTRY_HEADER_SIZE + key_len, payload_len));
    XXH3_state_t *s = XXH3_createState();
    if (!s)
        return;
    XXH3_128bits_reset(s);
    XXH3_128bits_update(s, buf, 48);
    XXH3_128bits_update(s, buf + FJ_ENTRY_HEADER_SIZE, key_len);
    put_hash(buf + 48, XXH3_128bits_digest(s));
    XXH3_freeState(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    size_t len = size - 1;
    /* An exact-size heap copy: any read past the end is an ASan report. */
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return 0;
    memcpy(buf, data + 1, len);
    if (flags & 1)
        repair(buf, len);

    char why[256];
    fj_entry_view v;
    memset(&v, 0, sizeof v);
    int ok = fj_entry_parse(buf, len, NULL, &v, why, sizeof why) == 0;
    if (!ok) {
        CHECK(why[0] != '\0'); /* a refusal always says why */
        CHECK(fj_entry_parse(buf, len, other_key, NULL, why, sizeof why) != 0);
        free(buf);
        return 0;
    }
    CHECK(v.kind == FJ_ENTRY_KIND_CUBIN || v.kind == FJ_ENTRY_KIND_PTX);
    CHECK((const uint8_t *)v.key == buf + FJ_ENTRY_HEADER_SIZE);
    CHECK(v.key_len > 0 && v.key_len <= FJ_ENTRY_MAX_KEY);
    CHECK(v.payload == buf + FJ_ENTRY_HEADER_SIZE + v.key_len);
    CHECK(v.payload_len > 0 && FJ_ENTRY_HEADER_SIZE + v.key_len + v.payload_len == len);

    /* A key with a NUL inside cannot be given as a C string; the encoder
     * never writes one, so there is no round trip to check. */
    if (!memchr(v.key, 0, v.key_len)) {
        char *key = malloc(v.key_len + 1);
        memcpy(key, v.key, v.key_len);
        key[v.key_len] = '\0';
        size_t again_len = 0;
        uint8_t *again = fj_entry_encode(key, v.kind, v.payload, v.payload_len, &again_len);
        CHECK(again && again_len == len && !memcmp(again, buf, len));
        free(again);
        if (flags & 2)
            CHECK(fj_entry_parse(buf, len, key, NULL, why, sizeof why) == 0);
        if (strcmp(key, other_key))
            CHECK(fj_entry_parse(buf, len, other_key, NULL, why, sizeof why) != 0);
        free(key);
    }
    free(buf);
    return 0;
}
