/* The on-disk format of one cache entry (one file per entry):
 *
 *   offset  size  field
 *        0     8  magic "FOXJITC\n"
 *        8     4  format version (1), little endian
 *       12     4  payload kind: 1 cubin, 2 PTX
 *       16     4  key length K
 *       20     4  reserved, 0
 *       24     8  payload length P
 *       32    16  XXH3-128 of the payload
 *       48    16  XXH3-128 of bytes [0, 48) and the key
 *       64     K  key text (see cache_key.h)
 *     64+K     P  payload: the cubin (cuobjdump reads it once the first
 *                 64+K bytes are stripped) or NUL-terminated PTX
 *
 * The file is exactly 64 + K + P bytes. Any other shape, a checksum that
 * does not match, or a key that is not the expected one makes it a miss. */
#ifndef FJ_CACHE_ENTRY_H
#define FJ_CACHE_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#define FJ_ENTRY_MAGIC "FOXJITC\n"
#define FJ_ENTRY_VERSION 1u
#define FJ_ENTRY_HEADER_SIZE 64u
#define FJ_ENTRY_KIND_CUBIN 1u
#define FJ_ENTRY_KIND_PTX 2u
#define FJ_ENTRY_MAX_KEY 4096u
#define FJ_ENTRY_MAX_PAYLOAD (256u << 20)

typedef struct fj_entry_view {
    uint32_t kind;
    const char *key;        /* not NUL-terminated */
    size_t key_len;
    const uint8_t *payload;
    size_t payload_len;
} fj_entry_view;

/* Serializes an entry into a new malloc'd buffer; NULL on allocation
 * failure. */
uint8_t *fj_entry_encode(const char *key, uint32_t kind, const void *payload,
                         size_t payload_len, size_t *out_len);

/* The checks of fj_entry_parse that need only the header (its first
 * FJ_ENTRY_HEADER_SIZE bytes) and the file's size: magic, version, kind,
 * lengths, and that the file is exactly as long as the header says. 0, or
 * -1 with why. A reader checks this before it reads the rest, so a large
 * file that is no entry costs one header. */
int fj_entry_check_header(const uint8_t *hdr, uint64_t file_size, char *why, size_t why_len);

/* Checks and splits an entry. expected_key may be NULL (verify any entry).
 * Returns 0 and fills *view on success; -1 with a reason in why. Never
 * reads outside [buf, buf + len). */
int fj_entry_parse(const uint8_t *buf, size_t len, const char *expected_key,
                   fj_entry_view *view, char *why, size_t why_len);

#endif
