/* Cache and compile counters, updated from any thread. */
#ifndef FJ_COUNTERS_H
#define FJ_COUNTERS_H

#include <stdatomic.h>
#include <stdint.h>


typedef struct fj_counters {
    _Atomic uint64_t disk_hits, disk_misses, compiles, compile_us, bytes_read, bytes_written,
        corrupt_entries, evictions, write_failures, modules_loaded;
} fj_counters;

#define fj_count(c, field, n) \
    do { if (c) atomic_fetch_add_explicit(&(c)->field, (uint64_t)(n), memory_order_relaxed); } while (0)

/* Declared without the public header so that the disk cache, which counts
 * hits and misses, builds without cuda.h. */
struct foxjit_counters;
void fj_counters_snapshot(const fj_counters *c, struct foxjit_counters *out);

#endif
