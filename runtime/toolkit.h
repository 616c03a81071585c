/* The one internal header the tools (tools/fox-jit, tools/bench,
 * tools/kloop) include besides the public foxjit/foxjit.h: what `fox-jit
 * warm`, `info`, `list`, `verify`, `clear`, `prune` and the bench need from
 * inside the runtime, and nothing more. Its types are its own and its
 * functions wrap the internals (runtime/toolkit_*.c, the static library
 * foxjit_toolkit, which the tools and their tests link and libfoxjit.so
 * does not contain), so an internal header can change without a tool
 * noticing, and this file is the whole list of what the tools depend on.
 * A tool that needs more adds a declaration here and a wrapper there.
 *
 * Of the runtime's headers it includes only these
 * (tests/tools/test_layers.sh checks, and that the tools include no other):
 *   foxjit/foxjit.h  the public API;
 *   cuda_loader.h    fj_cuda, the driver's entry points as the runtime
 *                    loaded them with dlopen (fj_cuda_get). The bench and
 *                    `fox-jit info` call the driver through it instead of
 *                    linking libcuda, which `fox-jit warm` must run
 *                    without; a copy of its table here would drift from
 *                    the runtime's. It includes nothing of the runtime but
 *                    the public header. */
#ifndef FJ_TOOLKIT_H
#define FJ_TOOLKIT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cuda_loader.h"
#include "foxjit/foxjit.h"

/* ---- settings ------------------------------------------------------------ */

/* "FOXJIT_TARGET": the variable naming the target override a runtime
 * plans and compiles for when its params name none. */
const char *fj_tk_target_env(void);

/* A size such as 500M, 2G or 123456: the parser FOXJIT_CACHE_MAX_BYTES goes
 * through. 0, or -1 with why. */
int fj_tk_parse_size(const char *text, uint64_t *out, char *why, size_t why_len);

/* ---- NVRTC, CCCL and targets ---------------------------------------------- */

typedef struct fj_tk_toolchain {
    int nvrtc_major, nvrtc_minor;
    const char *nvrtc_library;  /* the path or soname loaded */
    int num_archs;
    const int *archs;           /* compute capabilities NVRTC builds, ascending */
    int cccl_version;           /* CCCL_VERSION, e.g. 3000001; 0 when not found */
    const char *cccl_include;   /* "" when not found */
} fj_tk_toolchain;

/* Loads NVRTC and finds CCCL (once per process); the status and message of
 * the runtime's loader when NVRTC is missing. */
foxjit_status fj_tk_toolchain_get(fj_tk_toolchain *out);

/* What a kernel is built for. */
typedef struct fj_tk_target {
    int cc;         /* compute capability x 10 + y, e.g. 90 */
    int ptx;        /* 1: PTX for compute_<cc>, finished by the driver */
    char name[24];  /* "sm_90" or "compute_89" */
} fj_tk_target;

/* The target an arch name stands for ("sm_90", "compute_89"): `fox-jit
 * warm --arch`. Refused with a message when NVRTC cannot build it. */
foxjit_status fj_tk_target_for_name(const char *name, fj_tk_target *out);

/* What a runtime here builds for a GPU of compute capability device_cc,
 * the target override (fj_tk_target_env()) included. */
foxjit_status fj_tk_target_for_gpu(int device_cc, fj_tk_target *out);

/* ---- manifests ------------------------------------------------------------ */

/* The built-in manifest: the trainer shapes of kernels.md, every op's. */
const char *fj_tk_default_manifest(void);

/* The most bytes a manifest may have (1 MiB): more is refused. */
size_t fj_tk_manifest_max_bytes(void);

/* Reads fd to its end, at most max bytes (the library's bounded reader,
 * runtime/file_io.h): a malloc'd text with a NUL after its *len bytes, or
 * NULL with errno (EFBIG when fd holds more than max: at most max + 1 bytes
 * are read, so a FIFO, a pipe or /dev/zero ends it too). size_hint: the
 * size fstat gave, or 0. */
char *fj_tk_read_bounded(int fd, size_t max, size_t size_hint, size_t *len);

typedef struct fj_tk_manifest fj_tk_manifest;

/* 0 and a manifest (fj_tk_manifest_free), or -1 with "line N: what is
 * wrong" in why. */
int fj_tk_manifest_parse(const char *text, fj_tk_manifest **out, char *why, size_t why_len);
void fj_tk_manifest_free(fj_tk_manifest *m);
size_t fj_tk_manifest_count(const fj_tk_manifest *m);
/* Line i's op ("column_sum") and its values, in the order of its keys. */
const char *fj_tk_manifest_op(const fj_tk_manifest *m, size_t i);
const int64_t *fj_tk_manifest_values(const fj_tk_manifest *m, size_t i);

/* ---- the disk cache -------------------------------------------------------- */

typedef struct fj_tk_cache fj_tk_cache;

/* fj_tk_cache_open flags. */
#define FJ_TK_CACHE_INSPECT 1  /* list, verify, info: create, write and touch nothing; a
                                  root-owned directory (a prebuilt layer) is accepted */
#define FJ_TK_CACHE_SHARED 2   /* warm --shared: directories 0755, entries 0644 */

/* Opens the writable directory (dir NULL: $FOXJIT_CACHE_DIR, else
 * $XDG_CACHE_HOME/foxjit, ~/.cache/foxjit) and the read-only layers of
 * $FOXJIT_CACHE_READONLY_DIRS. 0, or -1 with why in foxjit_last_error(). */
int fj_tk_cache_open(const char *dir, int flags, fj_tk_cache **out);
void fj_tk_cache_close(fj_tk_cache *c);
/* 1 when the writable directory (dir NULL: the default above) does not
 * exist yet: the first compile or `fox-jit warm` creates it, so it is not
 * an error to report; else 0. The directory's path goes to where (len
 * bytes) when where is not NULL. */
int fj_tk_cache_not_created(const char *dir, char *where, size_t len);

const char *fj_tk_cache_dir(const fj_tk_cache *c);
int fj_tk_cache_layer_count(const fj_tk_cache *c);
const char *fj_tk_cache_layer(const fj_tk_cache *c, int i);
uint64_t fj_tk_cache_max_bytes(const fj_tk_cache *c);
/* 1 when the writable directory was removed after it was opened. */
int fj_tk_cache_dir_removed(const fj_tk_cache *c);
/* What the cache counted since it was opened (hits, compiles stored, write
 * failures, evictions). */
void fj_tk_cache_counters(const fj_tk_cache *c, foxjit_counters *out);

/* An entry or a temp file of an unfinished write, as a walk finds it. */
typedef struct fj_tk_entry {
    const char *path, *name;
    uint64_t size;
    time_t mtime;
    int layer;          /* -1: the writable directory, else a read-only layer's index */
    int is_temp;        /* a temp file of an unfinished write */
    int valid;          /* checked walks only */
    int gone;           /* listed, then removed by another process before it was
                           examined: nothing else is known of it */
    const char *why;    /* why it is not valid ("" when unknown) */
    char program[64];   /* what its key names ("?" where the walk did not read one) */
    char target[32];
} fj_tk_entry;

typedef int (*fj_tk_entry_visitor)(const fj_tk_entry *e, void *ud);

/* Visits every entry and temp file of every directory; check != 0 reads
 * and verifies each entry. Changes nothing (not even a file's time).
 * Returns the number visited, -1 on a directory error; a visitor returning
 * nonzero stops the walk. */
long fj_tk_cache_walk(fj_tk_cache *c, int check, fj_tk_entry_visitor visit, void *ud);

/* Deletes name from the writable directory if it carries the fox-jit
 * header (`fox-jit verify --remove`). 0 when removed, else -1 with errno
 * (fj_disk_cache_remove_file). */
int fj_tk_cache_remove_file(fj_tk_cache *c, const char *name);

typedef struct fj_tk_prune_stats {
    long entries;          /* entries removed */
    uint64_t entry_bytes;
    long temps;            /* stale temp files removed */
    uint64_t temp_bytes;
    uint64_t bytes_left;   /* of fox-jit's entries, in the writable directory */
    long kept_temps;       /* temp files of writes in progress, kept */
    long foreign;          /* files named like entries that are not fox-jit's: left,
                              not counted (a warning names one) */
    uint64_t foreign_bytes;
} fj_tk_prune_stats;

/* Evicts least recently used entries of the writable directory down to
 * max_bytes, and stale temp files; returns the entries removed, -1 when the
 * directory cannot be read. Files named like entries that are not
 * fox-jit's are left, not counted, and warned about. */
long fj_tk_cache_prune(fj_tk_cache *c, uint64_t max_bytes, fj_tk_prune_stats *stats);
/* Every entry and stale temp file of the writable directory. */
long fj_tk_cache_clear(fj_tk_cache *c, fj_tk_prune_stats *stats);
/* Every entry readable by all (warm --shared); the number of files changed. */
long fj_tk_cache_make_shared(fj_tk_cache *c);

/* The hash of the embedded kernel sources, part of every cache key. */
const char *fj_tk_sources_hash_hex(void);

/* ---- building kernels ------------------------------------------------------- */

/* Kernel variants, each for a target: what `fox-jit warm` builds. */
typedef struct fj_tk_units fj_tk_units;

/* An empty list, or NULL when out of memory. */
fj_tk_units *fj_tk_units_new(void);
void fj_tk_units_free(fj_tk_units *u);

/* Appends the variants the manifest's shapes use on target t, each once
 * per target. 0, or -1 with "line N (op): why" (a value the op does not
 * support) or out of memory. */
int fj_tk_units_add(fj_tk_units *u, const fj_tk_manifest *m, const fj_tk_target *t, char *why,
                    size_t why_len);
size_t fj_tk_units_count(const fj_tk_units *u);

/* Unit i's variant, e.g. "colsum_tall(COLS=3,BLOCK=256)", and target. */
void fj_tk_unit_describe(const fj_tk_units *u, size_t i, char *buf, size_t len);
const fj_tk_target *fj_tk_unit_target(const fj_tk_units *u, size_t i);

/* Unit i into the cache: found there (or in this process's memory), or
 * compiled by NVRTC and stored (*compiled = 1). Clears the thread's message
 * first, so a failure's message is this build's. Threads may build
 * different units at once. */
foxjit_status fj_tk_unit_build(const fj_tk_units *u, size_t i, fj_tk_cache *c, int *compiled);

/* 0 when the cache does not hold unit i (a size cap smaller than what a
 * warm built evicts it again), 1 when it does, -1 when unknown (its key
 * does not fit, or its name is taken by a directory: already reported). */
int fj_tk_unit_cached(const fj_tk_units *u, size_t i, fj_tk_cache *c);

/* The bytes unit i's entry takes in a cache, from the image this process
 * built or loaded for it (0 when it holds none). */
uint64_t fj_tk_unit_entry_bytes(const fj_tk_units *u, size_t i);

/* Stores again the image this process holds for unit i (a warm whose entry
 * another process removed meanwhile): 0, or -1 when it could not be stored
 * (warned, as every cache write) or this process holds no image for it. */
int fj_tk_unit_store(const fj_tk_units *u, size_t i, fj_tk_cache *c);

/* A cold compile of unit i, straight through NVRTC with no cache: its
 * time in ms. */
foxjit_status fj_tk_unit_compile(const fj_tk_units *u, size_t i, double *ms);

/* ---- a runtime ------------------------------------------------------------ */

/* What a runtime's plans are sized by, and how benches and `fox-jit info`
 * name it. */
typedef struct fj_tk_plan {
    char label[192];  /* "sm_90 on NVIDIA H200", or "sm_89 plan on NVIDIA H200" under
                         a target override */
    int overridden;   /* 1: planned for the target override's arch */
    int sm_count;
    int smem_per_block_optin;  /* bytes of shared memory a block may opt into */
    int l2_bytes;
    int clusters;     /* 1: plans may launch thread-block clusters */
} fj_tk_plan;

void fj_tk_runtime_plan(const foxjit_runtime *rt, const char *device_name, fj_tk_plan *out);

/* ---- the bench: column-sum geometry ------------------------------------------ */

/* A column-sum kernel and its launch geometry (the sweep's and the launch
 * group's), loaded on a runtime before it is launched. */
typedef struct fj_tk_colsum_plan fj_tk_colsum_plan;

typedef struct fj_tk_colsum_geometry {
    int rows_mode;         /* 1: blocks of whole rows; 0: column tiles */
    unsigned grid_x;       /* tiles */
    unsigned split;        /* blocks per cluster over the rows (1: no cluster) */
    unsigned block;        /* threads */
    unsigned vec, lanes;   /* floats per load; lanes per tile (tiles only) */
} fj_tk_colsum_geometry;

/* The plan a runtime makes for x[rows, cols] (16-byte aligned), loaded. */
foxjit_status fj_tk_colsum_plan_load(foxjit_runtime *rt, int64_t rows, int64_t cols,
                                     fj_tk_colsum_plan **out);
/* A geometry of the bench's choosing, not loaded (NULL when out of
 * memory): whole rows, or tiles of lanes x vec columns. */
fj_tk_colsum_plan *fj_tk_colsum_plan_rows(int64_t cols, unsigned vec, unsigned block);
fj_tk_colsum_plan *fj_tk_colsum_plan_tiles(int64_t cols, unsigned vec, unsigned lanes,
                                           unsigned block);
/* Sets the cluster split and loads the kernel built for it (above 8 blocks
 * the variant with the non-portable cluster opt-in). */
foxjit_status fj_tk_colsum_plan_split(foxjit_runtime *rt, fj_tk_colsum_plan *p, unsigned split);
void fj_tk_colsum_plan_geometry(const fj_tk_colsum_plan *p, fj_tk_colsum_geometry *out);
/* The planned kernel launched over x[rows, cols] (loaded plans only). */
foxjit_status fj_tk_colsum_launch(const foxjit_runtime *rt, const fj_tk_colsum_plan *p,
                                  CUdeviceptr x, int64_t rows, int64_t cols, CUdeviceptr out,
                                  int accumulate, CUstream stream);
void fj_tk_colsum_plan_free(fj_tk_colsum_plan *p);

/* ---- the bench: onesweep tunings ----------------------------------------------- */

/* Threads per block, keys per thread, blocks per SM compiled for. */
typedef struct fj_tk_radix_tuning {
    int block, items, occupancy;
} fj_tk_radix_tuning;

/* The tuning the ops use. */
fj_tk_radix_tuning fj_tk_radix_default_tuning(void);

/* foxjit_radix_sort_pairs and foxjit_rank_normalize with another tuning:
 * the same checks, with these workspace sizes. */
size_t fj_tk_radix_sort_workspace(int64_t n, int begin_bit, int end_bit,
                                  const fj_tk_radix_tuning *t);
foxjit_status fj_tk_radix_sort_pairs(foxjit_runtime *rt, const fj_tk_radix_tuning *t,
                                     CUdeviceptr keys_in, CUdeviceptr values_in,
                                     CUdeviceptr keys_out, CUdeviceptr values_out, int64_t n,
                                     int begin_bit, int end_bit, CUdeviceptr workspace,
                                     size_t workspace_bytes, CUstream stream);
size_t fj_tk_rank_workspace(int64_t n, const fj_tk_radix_tuning *t);
foxjit_status fj_tk_rank_normalize(foxjit_runtime *rt, const fj_tk_radix_tuning *t,
                                   CUdeviceptr rewards, int64_t n, float std_ema, float mean_ema,
                                   foxjit_tie_mode ties, CUdeviceptr out, CUdeviceptr workspace,
                                   size_t workspace_bytes, CUstream stream);

/* ---- the K-loop step: kernels per call ----------------------------------------- */

/* Kernels one call of the whole-sequence ops launches (forward or
 * backward): a captured step's graph has exactly that many nodes. */
int fj_tk_cfc_seq_kernels(int backward);
int fj_tk_heads_seq_kernels(int backward);
int fj_tk_vsn_seq_kernels(void);

#endif
