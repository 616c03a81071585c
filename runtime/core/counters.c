#include "counters.h"

#include <string.h>

#include "foxjit/foxjit.h"

void fj_counters_snapshot(const fj_counters *c, foxjit_counters *out)
{
    memset(out, 0, sizeof *out);
    out->disk_hits = atomic_load(&c->disk_hits);
    out->disk_misses = atomic_load(&c->disk_misses);
    out->compiles = atomic_load(&c->compiles);
    out->compile_ms = (double)atomic_load(&c->compile_us) / 1000.0;
    out->bytes_read = atomic_load(&c->bytes_read);
    out->bytes_written = atomic_load(&c->bytes_written);
    out->corrupt_entries = atomic_load(&c->corrupt_entries);
    out->evictions = atomic_load(&c->evictions);
    out->write_failures = atomic_load(&c->write_failures);
    out->modules_loaded = atomic_load(&c->modules_loaded);
}
