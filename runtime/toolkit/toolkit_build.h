/* The toolkit's build area (toolkit.h): building kernels without a GPU,
 * as `fox-jit warm` and `info` do and the bench's compile rows time: NVRTC
 * and CCCL, targets, manifests of op shapes, and the kernel variants a
 * manifest uses, built into a cache or compiled cold. */
#ifndef FJ_TOOLKIT_BUILD_H
#define FJ_TOOLKIT_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "foxjit/foxjit.h"
#include "toolkit_cache.h"

/* ---- NVRTC, CCCL and targets ---------------------------------------------- */

/* "FOXJIT_TARGET": the variable naming the target override a runtime
 * plans and compiles for when its params name none. */
const char *fj_tk_target_env(void);

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

/* The hash of the embedded kernel sources, part of every cache key. */
const char *fj_tk_sources_hash_hex(void);

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

/* Reads fd to its end, at most max bytes (the library's bounded reader):
 * a malloc'd text with a NUL after its *len bytes, or NULL with errno
 * (EFBIG when fd holds more than max: at most max + 1 bytes are read, so a
 * FIFO, a pipe or /dev/zero ends it too). size_hint: the size fstat gave,
 * or 0. */
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

/* ---- kernel variants for targets ------------------------------------------- */

/* Kernel variants, each for a target: what `fox-jit warm` builds. */
typedef struct fj_tk_units fj_tk_units;

/* An empty list, or NULL when out of memory. */
fj_tk_units *fj_tk_units_new(void);
void fj_tk_units_free(fj_tk_units *u);

/* A set of precisions of the products (foxjit_precision) to build at: bit
 * 1 << p for precision p. */
#define FJ_TK_PRECISION_BIT(p) (1u << (unsigned)(p))
#define FJ_TK_PRECISIONS_DEFAULT FJ_TK_PRECISION_BIT(FOXJIT_PRECISION_FLOAT32)

/* Appends the variants the manifest's shapes use on target t, each once
 * per target: a variant of a program that follows the precision (the
 * heads' and the CfC's) once for each of `precisions`, every other once.
 * 0, or -1 with "line N (op): why" (a value the op does not support),
 * no precision, or out of memory. */
int fj_tk_units_add(fj_tk_units *u, const fj_tk_manifest *m, const fj_tk_target *t,
                    unsigned precisions, char *why, size_t why_len);
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

#endif
