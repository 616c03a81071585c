/* Kernel registry: the embedded CUDA sources and the programs built from
 * them. A program is one NVRTC translation unit (one source file) with
 * integer specialization parameters passed as -D<NAME>=<value>, holding one
 * or more extern "C" kernels. A variant is a program plus parameter values:
 * the unit that is compiled, cached and loaded. */
#ifndef FJ_REGISTRY_H
#define FJ_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#define FJ_MAX_PARAMS 8
#define FJ_MAX_KERNELS 12
#define FJ_MAX_KERNEL_ARGS 32

typedef struct fj_embedded_file {
    /* Its path below kernel_src/ or ops/: "common.cuh", "colsum/kernel.cu";
     * kernels #include it by this name. */
    const char *name;
    const char *text;
    size_t size;
} fj_embedded_file;

/* A set of embedded files, generated at build time from kernel_src/ and
 * the op folders (tools/embed_sources.py). */
typedef struct fj_source_set {
    const fj_embedded_file *files;
    size_t count;
} fj_source_set;

/* The shipped kernels' sources and headers, inside libfoxjit. The bench and
 * test baselines carry their own set (baselines/), so their text never
 * ships. */
extern const fj_source_set fj_library_sources;

/* A kernel of a program and the arguments the host launches it with: the
 * size in bytes of each, in the order of the kernel's parameter list. The
 * runtime checks them against the compiled kernel once, at module load
 * (cuFuncGetParamInfo), and the compile suite against the parameter
 * lists in the PTX, so a host argument list that drifts from the kernel's is a load
 * error naming the argument, not a launch that reads garbage. Spell each
 * size with the macros below, or sizeof(T) for a struct passed by value. */
typedef struct fj_kernel {
    const char *name;                       /* extern "C" name */
    uint16_t args[FJ_MAX_KERNEL_ARGS + 1];  /* 0-terminated */
} fj_kernel;

#define FJ_PTR 8  /* a device pointer (CUdeviceptr, T *) */
#define FJ_I64 8  /* long long, int64_t */
#define FJ_I32 4  /* int, unsigned */
#define FJ_F32 4  /* float */
#define FJ_PTRS(n) ((n) * FJ_PTR)  /* a struct of n device pointers, by value */

typedef struct fj_program {
    const char *name;                        /* unique, e.g. "colsum_tall" */
    const char *source;                      /* embedded file compiled */
    const char *params[FJ_MAX_PARAMS + 1];   /* NULL-terminated */
    fj_kernel kernels[FJ_MAX_KERNELS + 1];   /* terminated by one without a name */
    int uses_cccl;                           /* needs -I<CCCL> (CUB block primitives) */
    /* Name of the parameter holding the largest cluster the variant is
     * launched with, or NULL. Above 8 (the portable limit) its kernels get
     * the non-portable cluster opt-in at load; other variants never do,
     * since the opt-in slowed their plain launches (measured on the H200). */
    const char *cluster_param;
    /* Where source lives: NULL for the library's set; a baseline program
     * points at its own. Headers (.cuh) come from the library's set and
     * from this one. */
    const fj_source_set *sources;
} fj_program;

typedef struct fj_variant {
    const fj_program *program;
    int values[FJ_MAX_PARAMS];
} fj_variant;

/* The parameter through which a program follows the runtime's precision
 * (foxjit_set_precision): a program whose kernels include
 * kernel_src/tile_gemm.cuh lists it last among its params (the tile GEMM
 * does not build without it). Its value comes from the runtime, not from
 * the op's plan, which leaves it 0: 0 the default (3xTF32), 1 TF32. A
 * parameter like the others, it is a -D option of the compile, so the two
 * precisions are two cache keys and two loaded modules. */
#define FJ_PRECISION_PARAM "FJ_TF32"

/* The index of FJ_PRECISION_PARAM in p's params, or -1 when p has none
 * (no tensor-core products: one variant serves both precisions). */
int fj_program_precision_param(const fj_program *p);

/* v at a precision: its precision parameter set to tf32 (0 or 1); v as it
 * is when its program has none. */
fj_variant fj_variant_at_precision(const fj_variant *v, int tf32);

/* The embedded source file p compiles, or NULL. */
const fj_embedded_file *fj_program_source(const fj_program *p);
int fj_program_param_count(const fj_program *p);
int fj_program_kernel_count(const fj_program *p);
/* Arguments k declares. */
int fj_kernel_arg_count(const fj_kernel *k);

/* "colsum_tall(COLS=3,BLOCK=256)" */
void fj_variant_describe(const fj_variant *v, char *buf, size_t len);

/* Equality and an in-process hash (not the cache key). */
int fj_variant_equal(const fj_variant *a, const fj_variant *b);
uint64_t fj_variant_hash(const fj_variant *v);

/* All the library's programs, those of the ops of ops/op_list.h (for
 * listings and compile tests): sets *out and returns the count. */
size_t fj_program_list(const fj_program *const **out);
const fj_program *fj_program_find(const char *name);

#endif
