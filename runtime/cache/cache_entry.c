#include "cache_entry.h"
#include "entry_key.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The state struct is public only with static linking declared; it lets the
 * hash state live on the stack (no allocation on the cache path). */
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* XXH3-128 of a followed by b (b may be NULL), canonical byte order. */
static void hash_into(uint8_t out[16], const void *a, size_t alen, const void *b, size_t blen)
{
    XXH3_state_t s;
    XXH3_INITSTATE(&s);
    XXH3_128bits_reset(&s);
    XXH3_128bits_update(&s, a, alen);
    if (b)
        XXH3_128bits_update(&s, b, blen);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&s));
    memcpy(out, c.digest, 16);
}

uint8_t *fj_entry_encode(const char *key, uint32_t kind, const void *payload,
                         size_t payload_len, size_t *out_len)
{
    size_t key_len = strlen(key);
    size_t total = FJ_ENTRY_HEADER_SIZE + key_len + payload_len;
    uint8_t *buf = malloc(total);
    if (!buf)
        return NULL;
    memset(buf, 0, FJ_ENTRY_HEADER_SIZE);
    memcpy(buf, FJ_ENTRY_MAGIC, 8);
    put_u32(buf + 8, FJ_ENTRY_VERSION);
    put_u32(buf + 12, kind);
    put_u32(buf + 16, (uint32_t)key_len);
    put_u32(buf + 20, 0);
    put_u64(buf + 24, payload_len);
    memcpy(buf + FJ_ENTRY_HEADER_SIZE, key, key_len);
    memcpy(buf + FJ_ENTRY_HEADER_SIZE + key_len, payload, payload_len);
    hash_into(buf + 32, payload, payload_len, NULL, 0);
    hash_into(buf + 48, buf, 48, key, key_len);
    *out_len = total;
    return buf;
}

#define REJECT(...)                                  \
    do {                                             \
        if (why)                                     \
            snprintf(why, why_len, __VA_ARGS__);     \
        return -1;                                   \
    } while (0)

int fj_entry_check_header(const uint8_t *hdr, uint64_t file_size, char *why, size_t why_len)
{
    if (file_size < FJ_ENTRY_HEADER_SIZE)
        REJECT("short file (%llu bytes, header is %u)", (unsigned long long)file_size,
               FJ_ENTRY_HEADER_SIZE);
    if (memcmp(hdr, FJ_ENTRY_MAGIC, 8) != 0)
        REJECT("not a fox-jit cache entry (bad magic)");
    uint32_t version = get_u32(hdr + 8);
    if (version != FJ_ENTRY_VERSION)
        REJECT("entry format version %u, expected %u", version, FJ_ENTRY_VERSION);
    uint32_t kind = get_u32(hdr + 12);
    uint32_t key_len = get_u32(hdr + 16);
    uint64_t payload_len = get_u64(hdr + 24);
    if (kind != FJ_ENTRY_KIND_CUBIN && kind != FJ_ENTRY_KIND_PTX)
        REJECT("unknown payload kind %u", kind);
    if (get_u32(hdr + 20) != 0)
        REJECT("reserved header field is not zero");
    if (key_len == 0 || key_len > FJ_ENTRY_MAX_KEY)
        REJECT("key length %u out of range", key_len);
    if (payload_len == 0 || payload_len > FJ_ENTRY_MAX_PAYLOAD)
        REJECT("payload length %llu out of range", (unsigned long long)payload_len);
    if (file_size != FJ_ENTRY_HEADER_SIZE + (uint64_t)key_len + payload_len)
        REJECT("file is %llu bytes, header says %llu (torn or truncated)",
               (unsigned long long)file_size,
               (unsigned long long)(FJ_ENTRY_HEADER_SIZE + (uint64_t)key_len + payload_len));
    return 0;
}

int fj_entry_parse(const uint8_t *buf, size_t len, const char *expected_key,
                   fj_entry_view *view, char *why, size_t why_len)
{
    if (len < FJ_ENTRY_HEADER_SIZE)
        REJECT("short file (%zu bytes, header is %u)", len, FJ_ENTRY_HEADER_SIZE);
    if (fj_entry_check_header(buf, len, why, why_len) != 0)
        return -1;
    uint32_t kind = get_u32(buf + 12);
    uint32_t key_len = get_u32(buf + 16);
    uint64_t payload_len = get_u64(buf + 24);
    const char *key = (const char *)buf + FJ_ENTRY_HEADER_SIZE;
    uint8_t h[16];
    hash_into(h, buf, 48, key, key_len);
    if (memcmp(h, buf + 48, 16) != 0)
        REJECT("header checksum mismatch");
    const uint8_t *payload = buf + FJ_ENTRY_HEADER_SIZE + key_len;
    hash_into(h, payload, (size_t)payload_len, NULL, 0);
    if (memcmp(h, buf + 32, 16) != 0)
        REJECT("payload checksum mismatch");
    if (kind == FJ_ENTRY_KIND_PTX && payload[payload_len - 1] != '\0')
        REJECT("PTX payload is not NUL-terminated");
    if (expected_key && (strlen(expected_key) != key_len || memcmp(expected_key, key, key_len)))
        REJECT("entry was built for another key (stale or colliding entry)");
    if (view) {
        view->kind = kind;
        view->key = key;
        view->key_len = key_len;
        view->payload = payload;
        view->payload_len = (size_t)payload_len;
    }
    return 0;
}

void fj_hash128_hex(const void *data, size_t len, char out[33])
{
    XXH128_hash_t h = XXH3_128bits(data, len);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", c.digest[i]);
}
