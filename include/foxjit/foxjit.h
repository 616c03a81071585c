/*
 * fox-jit: JIT-compiled CUDA kernels for reinforcement-learning and
 * sequence-model trainers.
 *
 * This header is the whole public API. Everything is prefixed foxjit_ /
 * FOXJIT_; nothing else is exported from libfoxjit.so.
 *
 * Conventions (apply to every call below unless it says otherwise)
 *  - Every call returns a foxjit_status; FOXJIT_OK is 0. On failure,
 *    foxjit_last_error() returns a message for the calling thread that says
 *    what went wrong and what to do (with the NVRTC log after a failed
 *    compile). The exceptions return their answer instead:
 *    foxjit_status_string, foxjit_last_error, foxjit_version,
 *    foxjit_runtime_arch and foxjit_get_api (NULL for an ABI major the
 *    library lacks), foxjit_heads_workspace_size (a size_t, 0 for an
 *    invalid dim), and foxjit_runtime_default_params,
 *    foxjit_runtime_destroy and foxjit_get_perception_limits (void).
 *  - Device memory belongs to the caller. Ops take CUdeviceptr and a
 *    CUstream, never allocate, never synchronize, and launch nothing when
 *    they return an error. Temporary storage follows the CUB convention: a
 *    *_workspace_size() query, then the caller passes the buffer.
 *  - Tensors are float32, row-major, contiguous unless a *_stride field
 *    says otherwise (strides are in elements between consecutive batch
 *    rows; 0 means "dense"). Device pointers must be 4-byte aligned.
 *  - A runtime is bound to the CUcontext that was current when it was
 *    created; ops must be called with that context current.
 *  - Results are bitwise reproducible for the same inputs, shape, GPU arch,
 *    precision (foxjit_set_precision) and pointer alignment class
 *    (address mod 16): kernels pick vector widths by alignment, which
 *    changes the order of float additions. The column
 *    sums (bias_grad_reduce, reduce_axis0) also split rows by the GPU's SM
 *    count (and whether it takes clusters of 16), so their bits are those of
 *    one GPU model: an H100 PCIe (114 SMs) or a MIG slice may differ from an
 *    H100 SXM (132) in the last bits, within float32 rounding. The split
 *    column sums (foxjit_column_sum_split) give the same bits on every GPU,
 *    arch and alignment.
 *  - A workspace belongs to one call at a time: two calls in flight at once
 *    (e.g. on two streams) need two workspaces.
 *  - Kernels compile on first use (NVRTC) and are cached on disk. Call the
 *    *_prepare() functions before CUDA Graph capture: an op launched into a
 *    capturing stream whose kernel is not loaded fails with
 *    FOXJIT_ERROR_NOT_PREPARED instead of compiling.
 *
 * Thread safety: each declaration below says which threads may call it
 * ("Threads: ..."). In short: a foxjit_runtime may be used from many threads
 * at once (ops, prepare, workspace sizes, counters), each with the runtime's
 * context current for ops and prepare; destroy is not concurrent with any
 * other use of the same runtime; error messages are per thread.
 */
#ifndef FOXJIT_FOXJIT_H
#define FOXJIT_FOXJIT_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FOXJIT_BUILDING_LIBRARY)
#define FOXJIT_API __attribute__((visibility("default")))
#else
#define FOXJIT_API
#endif

#define FOXJIT_VERSION_MAJOR 0
#define FOXJIT_VERSION_MINOR 3
#define FOXJIT_VERSION_PATCH 0

/* ABI version of the function table returned by foxjit_get_api(). 2 (library
 * 0.2, soname libfoxjit.so.1): foxjit_heads_args grew (steps, step strides,
 * workspace), so a caller built for 1 must not get this table. */
#define FOXJIT_ABI_MAJOR 2
/* The table's additions within ABI 2, its abi_minor: 1 the whole-sequence
 * ops; 2 foxjit_runtime_params.target; 3 the heads' save
 * (heads_seq_saved_size, _forward_save, _backward_saved); 4 the wide BCE
 * (bce_with_logits_workspace_size, _wide); 5 generalized advantage
 * estimation (gae, gae_prepare); 6 the products' precision
 * (set_precision, get_precision); 7 the split column sums
 * (column_sum_workspace_size, column_sum_split, column_sum_split_prepare);
 * 8 the heads' backward in parts (heads_seq_backward_part).
 * A caller built against this header checks struct_size against the last
 * member it calls. */
#define FOXJIT_ABI_MINOR 8

typedef enum foxjit_status {
    FOXJIT_OK = 0,
    FOXJIT_ERROR_INVALID_ARGUMENT = 1,   /* NULL, zero/negative size, misaligned */
    FOXJIT_ERROR_UNSUPPORTED = 2,        /* a size or dim past the op's limit */
    FOXJIT_ERROR_WORKSPACE_TOO_SMALL = 3,
    FOXJIT_ERROR_DRIVER_NOT_FOUND = 4,   /* libcuda.so.1 could not be loaded */
    FOXJIT_ERROR_NVRTC_NOT_FOUND = 5,    /* libnvrtc.so.13/.12 could not be loaded */
    FOXJIT_ERROR_NO_CONTEXT = 6,         /* no CUcontext current on this thread */
    FOXJIT_ERROR_WRONG_CONTEXT = 7,      /* current context is not the runtime's */
    FOXJIT_ERROR_COMPILE = 8,            /* NVRTC failed; the log is in the message */
    FOXJIT_ERROR_NOT_PREPARED = 9,       /* stream is capturing, kernel not loaded */
    FOXJIT_ERROR_CUDA = 10,              /* a driver call failed */
    FOXJIT_ERROR_OUT_OF_MEMORY = 11,     /* host allocation failed */
    FOXJIT_ERROR_CACHE = 12,             /* cache administration failed */
} foxjit_status;

/* Name of a status ("FOXJIT_ERROR_UNSUPPORTED"); never NULL. */
/* Threads: any thread, any time; needs no runtime and no context. */
FOXJIT_API const char *foxjit_status_string(foxjit_status status);

/* Message for the last failure on the calling thread; "" if none. The
 * pointer stays valid until the next foxjit call on this thread. */
/* Threads: per thread; reports the calling thread's last failure only. */
FOXJIT_API const char *foxjit_last_error(void);

/* "0.3.0" */
/* Threads: any thread, any time; needs no runtime and no context. */
FOXJIT_API const char *foxjit_version(void);

/* ------------------------------------------------------------------------
 * Runtime
 * ------------------------------------------------------------------------ */

typedef struct foxjit_runtime foxjit_runtime;

/* Parameters for foxjit_runtime_create(). Fill with
 * foxjit_runtime_default_params() first so new fields keep their defaults.
 * Strings are copied; they need not outlive the call. */
typedef struct foxjit_runtime_params {
    size_t struct_size;              /* set by foxjit_runtime_default_params */
    /* Writable cache directory. NULL: $FOXJIT_CACHE_DIR, else
     * $XDG_CACHE_HOME/foxjit, else ~/.cache/foxjit. */
    const char *cache_dir;
    /* Colon-separated read-only cache directories searched before
     * cache_dir. NULL: $FOXJIT_CACHE_READONLY_DIRS. */
    const char *readonly_cache_dirs;
    /* Size cap of cache_dir in bytes, least recently used entries evicted.
     * 0: $FOXJIT_CACHE_MAX_BYTES, else 2 GiB. */
    uint64_t cache_max_bytes;
    /* Nonzero: keep compiled kernels in memory only. */
    int disable_disk_cache;
    /* ABI 2.2. A testing aid, not for production: plan, compile and cache
     * as for an older GPU arch than the one present, e.g. "compute_89" on
     * an H200 runs the kernels an L40S runs (no thread-block clusters, the
     * sm_89 code paths and per-block limits), built as PTX for that arch,
     * which the driver compiles for the GPU present; SM count and L2 stay
     * the GPU's own. The target is part of every cache key. Refused
     * (FOXJIT_ERROR_UNSUPPORTED) when the GPU is older than the target.
     * NULL: $FOXJIT_TARGET; "" or "native" (here or there): the GPU's own
     * arch. foxjit_runtime_arch() then names the target ("compute_89"). */
    const char *target;
} foxjit_runtime_params;

/* Threads: any thread, any time; needs no runtime and no context. */
FOXJIT_API void foxjit_runtime_default_params(foxjit_runtime_params *params);

/* Creates a runtime bound to the calling thread's current CUcontext.
 * params may be NULL (defaults). Fails with FOXJIT_ERROR_DRIVER_NOT_FOUND,
 * FOXJIT_ERROR_NO_CONTEXT, ... and a message. A cache directory that is
 * unsafe or unwritable does not fail creation: the runtime warns once and
 * keeps kernels in memory. The caller owns *out. */
/* Threads: any thread with the context to bind current; creates may run at once. */
FOXJIT_API foxjit_status foxjit_runtime_create(const foxjit_runtime_params *params,
                                               foxjit_runtime **out);

/* Unloads every module and frees the runtime; sets *rt to NULL. The bound
 * context must still exist. NULL and *rt == NULL are accepted. */
/* Threads: not concurrent with any other call on *rt; finish (synchronize) the
 * streams that ran its ops first. */
FOXJIT_API void foxjit_runtime_destroy(foxjit_runtime **rt);

typedef struct foxjit_counters {
    uint64_t disk_hits;        /* entries loaded from a cache directory */
    uint64_t disk_misses;      /* lookups that found no usable entry */
    uint64_t compiles;         /* NVRTC compiles run */
    double compile_ms;         /* wall time spent in NVRTC */
    uint64_t bytes_read;       /* cache bytes read */
    uint64_t bytes_written;    /* cache bytes written */
    uint64_t corrupt_entries;  /* entries found bad and removed */
    uint64_t evictions;        /* entries removed by the size cap */
    uint64_t write_failures;   /* cache writes that failed (kept in memory) */
    uint64_t modules_loaded;   /* cuModuleLoadData calls that succeeded */
} foxjit_counters;

/* Thread-safe snapshot. */
/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API foxjit_status foxjit_runtime_get_counters(const foxjit_runtime *rt,
                                                     foxjit_counters *out);

/* "sm_90" etc. for the runtime's device ("compute_89" under a target
 * override, see foxjit_runtime_params.target); valid while rt lives. */
/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API const char *foxjit_runtime_arch(const foxjit_runtime *rt);

/* The precision of the whole-sequence perception ops' matrix products
 * (every heads_seq call's, cfc_seq_backward's gradient products; the only
 * products fox-jit runs on tensor cores; docs/kernels.md, "Precision of
 * the products"), runtime-wide, as cublasSetMathMode sets a cuBLAS
 * handle's. ABI 2.6. */
typedef enum foxjit_precision {
    /* The default: 3xTF32 on tensor cores (each float split into a TF32
     * part and a remainder, three products), the accuracy of float32 FMA. */
    FOXJIT_PRECISION_FLOAT32 = 0,
    /* One tensor-core product of the operands rounded to TF32 (10 mantissa
     * bits), summed in float32, as PyTorch's
     * torch.backends.cuda.matmul.allow_tf32 = True: faster, each product
     * term off by up to about 2^-10 of its size. */
    FOXJIT_PRECISION_TF32 = 1,
} foxjit_precision;

/* Sets rt's precision for the calls that start after it returns. Every
 * other op computes in float32 either way, and so do the products on GPUs
 * before sm_80 (no TF32 tensor cores; float32 FMA) and the heads' first
 * layer A = x W1^T at e outside 9 to 128 (FMA; there TF32 changes only
 * dw1 and dx of heads_seq). A value other than
 * the two above is refused (FOXJIT_ERROR_INVALID_ARGUMENT) and changes
 * nothing.
 * Each precision is a kernel variant of its own, compiled, cached and
 * loaded on its own: a call after a change loads the variant of the new
 * precision, compiling it on first use. So
 *  - prepare after setting the precision: kernels prepared at the other
 *    one do not serve the call, and inside a CUDA graph capture it fails
 *    with FOXJIT_ERROR_NOT_PREPARED (the variants loaded for both stay
 *    loaded: switching back and forth compiles nothing more);
 *  - a captured CUDA graph keeps the kernels it captured: changing the
 *    precision does not change what a graph replays; capture again.
 * Results are bitwise repeatable at each precision, and the default's bits
 * are the same whether or not TF32 was ever set. */
/* Threads: any thread, concurrently with every call on rt except destroy;
 * needs no context. An op call running meanwhile uses one precision or the
 * other for the whole call. */
FOXJIT_API foxjit_status foxjit_set_precision(foxjit_runtime *rt, foxjit_precision precision);

/* *out = rt's precision (FOXJIT_PRECISION_FLOAT32 until set). ABI 2.6. */
/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API foxjit_status foxjit_get_precision(const foxjit_runtime *rt, foxjit_precision *out);

/* ------------------------------------------------------------------------
 * Column sums (kernels.md section 1): out[j] (+)= sum_b x[b, j]
 * x: [rows, cols]. No workspace, except the split form's. Deterministic
 * (no float atomics).
 * Limits: rows, cols in [1, 2^31-1], rows * cols < 2^40 (2^40 itself is
 * refused). out must not overlap x: in place is refused (INVALID_ARGUMENT).
 * ------------------------------------------------------------------------ */

/* General form; accumulate != 0 adds to out, else overwrites it. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_column_sum(foxjit_runtime *rt, CUdeviceptr x,
                                           int64_t rows, int64_t cols, CUdeviceptr out,
                                           int accumulate, CUstream stream);
/* db[out_dim] += sum over batch of dy[batch, out_dim]. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_bias_grad_reduce(foxjit_runtime *rt, CUdeviceptr dy,
                                                 int64_t batch, int64_t out_dim,
                                                 CUdeviceptr db, CUstream stream);
/* db[out_dim] = sum over rows of dy[rows, out_dim]. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_curiosity_bias_grad_reduce(foxjit_runtime *rt, CUdeviceptr dy,
                                                           int64_t rows, int64_t out_dim,
                                                           CUdeviceptr db, CUstream stream);
/* out[n_tail] = sum over n_batch of x[n_batch, n_tail]. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_reduce_axis0(foxjit_runtime *rt, CUdeviceptr x,
                                             int64_t n_batch, int64_t n_tail, CUdeviceptr out,
                                             CUstream stream);
/* Compiles and loads the kernels a column sum of this shape uses. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_column_sum_prepare(foxjit_runtime *rt, int64_t rows,
                                                   int64_t cols);

/* The split form (ABI 2.7): the same sums over the whole GPU without
 * thread-block clusters, in one launch. Each column is one pairwise tree
 * over its rows (kernels.md section 1): blocks of rows add their part of
 * it and leave it in the workspace, and the last block to finish adds
 * those in the tree's order. Its bits depend on x, the shape and
 * accumulate alone: the same on every GPU and arch, at every alignment of
 * x, however the rows are split (they are not foxjit_column_sum's bits,
 * which adds in another order). The fast form before sm_90 (the L40S)
 * from about 42 columns, where foxjit_column_sum sums a tile of columns
 * in one block (at a few columns the older form is as fast or faster);
 * `fox-jit bench colsum` compares the two on each plan.
 *
 * The workspace: foxjit_column_sum_workspace_size bytes or more, 16-byte
 * aligned, overlapping neither x nor out, and ZEROED BEFORE ITS FIRST USE
 * (cuMemsetD8Async(workspace, 0, bytes, stream) once, after allocating
 * it). Its first 512 bytes count the blocks that have finished, and every
 * call leaves them at zero again: zero it once, not before every call (a
 * captured graph replays without it). A workspace serves calls of every
 * shape it is large enough for, one call at a time; zero it again after
 * anything else has written it. Counts left in it make the sums NaN (or
 * wrong, if what was left are small integers) until it is zeroed.
 *
 * A caller of foxjit_column_sum, foxjit_bias_grad_reduce,
 * foxjit_curiosity_bias_grad_reduce or foxjit_reduce_axis0 who wants this
 * speed: allocate one workspace of the size its largest shape needs and
 * zero it, call foxjit_column_sum_split_prepare before graph capture where
 * it called foxjit_column_sum_prepare, and call foxjit_column_sum_split
 * with accumulate = 1 where it called foxjit_bias_grad_reduce, 0 for the
 * others (their out[] is overwritten). The older functions are unchanged. */

/* Bytes of workspace foxjit_column_sum_split needs for x[rows, cols]
 * (at every alignment of x): 512 bytes, plus a float per column for
 * every block of rows when the rows are split (21.5 KiB at 8192 x 42). */
/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API foxjit_status foxjit_column_sum_workspace_size(foxjit_runtime *rt, int64_t rows,
                                                          int64_t cols, size_t *bytes);
/* out[j] (+)= sum_b x[b, j] by the split form; accumulate != 0 adds to
 * out, else overwrites it. Refused (and nothing launched): a workspace
 * that is NULL, not 16-byte aligned, too small (WORKSPACE_TOO_SMALL) or
 * overlapping x or out. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_column_sum_split(foxjit_runtime *rt, CUdeviceptr x,
                                                 int64_t rows, int64_t cols, CUdeviceptr out,
                                                 int accumulate, CUdeviceptr workspace,
                                                 size_t workspace_bytes, CUstream stream);
/* Compiles and loads the kernels foxjit_column_sum_split uses for this
 * shape. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_column_sum_split_prepare(foxjit_runtime *rt, int64_t rows,
                                                         int64_t cols);

/* ------------------------------------------------------------------------
 * Device-wide radix sort and reward rank normalization (kernels.md sec. 2)
 * ------------------------------------------------------------------------ */

/* Bytes of workspace foxjit_radix_sort_pairs needs for n pairs. */
/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API foxjit_status foxjit_radix_sort_pairs_workspace_size(foxjit_runtime *rt, int64_t n,
                                                                int begin_bit, int end_bit,
                                                                size_t *bytes);
/* Stable ascending sort of uint32 keys (bits [begin_bit, end_bit)) with
 * uint32 values. n in [1, 2^31-1]. Inputs are not modified; outputs must
 * not overlap inputs or workspace. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_radix_sort_pairs(foxjit_runtime *rt, CUdeviceptr keys_in,
                                                 CUdeviceptr values_in, CUdeviceptr keys_out,
                                                 CUdeviceptr values_out, int64_t n, int begin_bit,
                                                 int end_bit, CUdeviceptr workspace,
                                                 size_t workspace_bytes, CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_radix_sort_prepare(foxjit_runtime *rt);

typedef enum foxjit_tie_mode {
    FOXJIT_TIES_MAX = 0,      /* rank = #{j : |s_j| <= |s_i|} (legacy result) */
    FOXJIT_TIES_ORDINAL = 1,  /* rank = 1 + stable ascending sort position */
} foxjit_tie_mode;

/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API foxjit_status foxjit_rank_normalize_workspace_size(foxjit_runtime *rt, int64_t n,
                                                              foxjit_tie_mode ties,
                                                              size_t *bytes);
/* out[i] = trade_i ? sign(s_i) * rank_i / n : 0, see kernels.md. out may be
 * rewards (in place). std_ema must be finite and >= 0, mean_ema finite
 * (else INVALID_ARGUMENT). */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_rank_normalize(foxjit_runtime *rt, CUdeviceptr rewards,
                                               int64_t n, float std_ema, float mean_ema,
                                               foxjit_tie_mode ties, CUdeviceptr out,
                                               CUdeviceptr workspace, size_t workspace_bytes,
                                               CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_rank_normalize_prepare(foxjit_runtime *rt,
                                                       foxjit_tie_mode ties);

/* ------------------------------------------------------------------------
 * Perception model kernels (kernels.md sections 3-6)
 *
 * Block-per-batch forms: parameter gradients are added (+=) to per-batch
 * scratch tensors with a leading [batch] dimension; collapse each with
 * foxjit_reduce_axis0 after the K-loop. Gradients of inputs take an
 * accumulate flag (nonzero: +=, zero: overwrite).
 * Supported dims: see docs/dims.md and foxjit_perception_limits.
 * ------------------------------------------------------------------------ */

/* CfC step. Activations: row b of a tensor starts at ptr + b * stride
 * floats (stride 0 = dense). */
typedef struct foxjit_cfc_args {
    int batch, n_in, n_hid;
    CUdeviceptr w_in;   /* [n_hid, n_in] */
    CUdeviceptr w_rec;  /* [n_hid, n_hid] */
    CUdeviceptr bias;   /* [n_hid] */
    CUdeviceptr tau;    /* [n_hid], > 0 */
    CUdeviceptr x;      int64_t x_stride;   /* [batch, n_in] */
    CUdeviceptr h;      int64_t h_stride;   /* [batch, n_hid]; 0 pointer = zeros */
    CUdeviceptr dt;     int64_t dt_stride;  /* [batch] (stride between rows) */
    CUdeviceptr u;      int64_t u_stride;   /* [batch, n_hid]: forward writes, backward reads */
    /* forward */
    CUdeviceptr h_out;  int64_t h_out_stride; /* [batch, n_hid] */
    /* backward */
    CUdeviceptr dh_out; int64_t dh_out_stride; /* dL/dh' [batch, n_hid] */
    CUdeviceptr dh;     int64_t dh_stride;     /* dL/dh; 0 pointer = not needed */
    int dh_accumulate;
    CUdeviceptr dx;     int64_t dx_stride;     /* dL/dx; 0 pointer = not needed */
    int dx_accumulate;
    CUdeviceptr dw_in;  /* scratch [batch, n_hid, n_in], += */
    CUdeviceptr dw_rec; /* scratch [batch, n_hid, n_hid], += */
    CUdeviceptr dbias;  /* scratch [batch, n_hid], += */
    CUdeviceptr dtau;   /* scratch [batch, n_hid], += */
} foxjit_cfc_args;

/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_cfc_forward(foxjit_runtime *rt, const foxjit_cfc_args *args,
                                            CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_cfc_backward(foxjit_runtime *rt, const foxjit_cfc_args *args,
                                             CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_cfc_prepare(foxjit_runtime *rt, int n_in, int n_hid);

/* Multi-horizon GRN heads. The backward recomputes the forward
 * intermediates from x, so the forward saves nothing but the logits. A
 * sequence model calls each once for all its time steps (steps below): the
 * heads do not feed the recurrence, so the forward can follow the whole
 * recurrent forward and the backward precede the recurrent backward. */
typedef struct foxjit_heads_args {
    int batch, d, e, h;       /* input dim D, hidden E, heads H */
    CUdeviceptr w1, b1;       /* [H, E, D], [H, E] */
    CUdeviceptr w2, b2;       /* [H, E, E], [H, E] */
    CUdeviceptr w_gate, b_gate; /* [H, E], [H] */
    CUdeviceptr w_main, b_main; /* [H, E], [H] */
    CUdeviceptr w_skip, b_skip; /* [H, D], [H] */
    CUdeviceptr x;      int64_t x_stride;      /* [batch, D] */
    CUdeviceptr logits; int64_t logits_stride; /* forward: [batch, H] */
    CUdeviceptr dlogits; int64_t dlogits_stride; /* backward: [batch, H] */
    CUdeviceptr dx;     int64_t dx_stride;     /* backward: [batch, D]; 0 = not needed */
    int dx_accumulate;
    /* backward scratch, each with a leading [batch] dimension, += */
    CUdeviceptr dw1, db1, dw2, db2, dw_gate, db_gate, dw_main, db_main, dw_skip, db_skip;
    /* Several time steps in one call (0 or 1 = one step, the fields below
     * unused). Step s of x, logits, dlogits and dx starts s * *_step_stride
     * floats after the base pointer (0 = steps packed one after another,
     * batch * row stride apart). The steps of an output must not overlap:
     * accepted are whole steps one after another (step stride >= (batch -
     * 1) * row stride + width) or steps side by side in each row (row
     * stride >= (steps - 1) * step stride + width). Outputs must not share
     * floats with any step of an input (only equal base pointers are
     * detected).
     * The forward runs every step at once; the backward runs them from the
     * last to the first, adding each step's gradients to the scratch in that
     * order, which gives the bits of one call per step from the last. */
    int steps;
    int64_t x_step_stride, logits_step_stride, dlogits_step_stride, dx_step_stride;
    /* Backward over several steps: a device workspace of at least
     * foxjit_heads_workspace_size() bytes (16-byte aligned, not shared with
     * any other tensor of the call or a call running at the same time). With
     * it every step runs at once and the steps' gradients are added after;
     * without it (0) the steps run one after another in one kernel, many
     * times slower. Same bits either way. The forward ignores it. */
    CUdeviceptr work;
    size_t work_bytes;
} foxjit_heads_args;

/* Bytes of the workspace a heads backward over `steps` steps needs (0 for
 * one step or an invalid dim). */
/* Threads: any thread, any time; needs no runtime and no context. */
FOXJIT_API size_t foxjit_heads_workspace_size(int batch, int steps, int e, int h);

/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_heads_forward(foxjit_runtime *rt, const foxjit_heads_args *args,
                                              CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_heads_backward(foxjit_runtime *rt, const foxjit_heads_args *args,
                                               CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_heads_prepare(foxjit_runtime *rt, int d, int e, int h);

/* Variable selection over all T rows of each batch row. */
typedef struct foxjit_vsn_args {
    int batch, t, f;
    CUdeviceptr w, bias;  /* [F, F], [F] */
    CUdeviceptr x;        /* [batch, T, F] */
    CUdeviceptr y;        /* forward: [batch, T, F] */
    CUdeviceptr dy;       /* backward: [batch, T, F] */
    CUdeviceptr dx;       /* backward: [batch, T, F]; 0 = not needed */
    int dx_accumulate;
    CUdeviceptr dw;       /* scratch [batch, F, F], += */
    CUdeviceptr dbias;    /* scratch [batch, F], += */
} foxjit_vsn_args;

/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_vsn_forward(foxjit_runtime *rt, const foxjit_vsn_args *args,
                                            CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_vsn_backward(foxjit_runtime *rt, const foxjit_vsn_args *args,
                                             CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_vsn_prepare(foxjit_runtime *rt, int f);

/* Attention pooling with a learned query. */
typedef struct foxjit_attn_pool_args {
    int batch, t, d;
    CUdeviceptr q;        /* [D] */
    CUdeviceptr hs;       /* [batch, T, D] */
    CUdeviceptr pooled;   /* forward: [batch, D] */
    CUdeviceptr dpooled;  /* backward: [batch, D] */
    CUdeviceptr dhs;      /* backward: [batch, T, D] */
    int dhs_accumulate;
    CUdeviceptr dq;       /* scratch [batch, D], += */
} foxjit_attn_pool_args;

/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_attn_pool_forward(foxjit_runtime *rt,
                                                  const foxjit_attn_pool_args *args,
                                                  CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_attn_pool_backward(foxjit_runtime *rt,
                                                   const foxjit_attn_pool_args *args,
                                                   CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_attn_pool_prepare(foxjit_runtime *rt, int d);

/* Largest supported dims of the perception ops. */
typedef struct foxjit_perception_limits {
    int max_batch;   /* 1024 */
    int max_t;       /* 4096 */
    int max_n_hid;   /* CfC n_hid, heads D */
    int max_n_in;    /* CfC n_in */
    int max_e;       /* heads E */
    int max_h;       /* heads H */
    int max_f;       /* VSN F */
    int max_d;       /* attention D */
} foxjit_perception_limits;

/* Threads: any thread, any time; needs no runtime and no context. */
FOXJIT_API void foxjit_get_perception_limits(foxjit_perception_limits *out);

/* ------------------------------------------------------------------------
 * Whole-sequence perception ops (docs/kernels.md, "Whole-sequence ops")
 *
 * The math of K calls of the per-step ops above, organized for the batch:
 * the CfC recurrence runs all K steps in one launch (each batch row is
 * independent), and the heads run over all batch x steps rows as tiled
 * matrix products. Parameter gradients are summed over every (b, t) row in
 * a fixed order straight into parameter-shaped tensors (no per-batch
 * scratch, no foxjit_reduce_axis0), overwriting them or adding to them
 * (grad_accumulate). Float32 arithmetic: FMA, and for the heads' and
 * the CfC backward's products tensor cores in 3xTF32 form (float32
 * accuracy; docs/kernels.md), or TF32 where foxjit_set_precision asks for
 * it; results are bitwise repeatable for the same inputs, GPU and
 * precision, and in float32 within float32 rounding of the per-step ops
 * (the order of the sums differs).
 * ------------------------------------------------------------------------ */

/* CfC over a whole sequence of k steps. Every tensor is dense. */
typedef struct foxjit_cfc_seq_args {
    int batch, k, n_in, n_hid;
    CUdeviceptr w_in;     /* [n_hid, n_in] */
    CUdeviceptr w_rec;    /* [n_hid, n_hid] */
    CUdeviceptr bias;     /* [n_hid] */
    CUdeviceptr tau;      /* [n_hid], > 0 */
    CUdeviceptr x;        /* [batch, k, n_in] */
    CUdeviceptr dt;       /* [batch, k] */
    CUdeviceptr h_init;   /* [batch, n_hid], the state before step 0; 0 = zeros */
    CUdeviceptr h;        /* [batch, k, n_hid]: h_t; the forward writes it, the backward reads */
    CUdeviceptr u;        /* [batch, k, n_hid]: tanh(pre_t); likewise */
    /* backward */
    CUdeviceptr dh;       /* [batch, k, n_hid]: dL/dh_t from outside the recurrence (read) */
    CUdeviceptr dx;       /* [batch, k, n_in]; 0 = not needed */
    int dx_accumulate;
    CUdeviceptr dh_init;  /* [batch, n_hid]: dL/dh_init; 0 = not needed */
    int dh_init_accumulate;
    CUdeviceptr dw_in;    /* [n_hid, n_in] */
    CUdeviceptr dw_rec;   /* [n_hid, n_hid] */
    CUdeviceptr dbias;    /* [n_hid] */
    CUdeviceptr dtau;     /* [n_hid] */
    int grad_accumulate;  /* nonzero: the four parameter gradients +=, zero: = */
    /* Backward workspace of foxjit_cfc_seq_workspace_size() bytes or more
     * (256-byte aligned; one call at a time). The forward ignores it. */
    CUdeviceptr work;
    size_t work_bytes;
} foxjit_cfc_seq_args;

/* Bytes of workspace foxjit_cfc_seq_backward needs for these dims. */
/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API foxjit_status foxjit_cfc_seq_workspace_size(foxjit_runtime *rt, int batch, int k,
                                                       int n_in, int n_hid, size_t *bytes);
/* h and u for every step (kernels.md section 3 applied k times). */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_cfc_seq_forward(foxjit_runtime *rt,
                                                const foxjit_cfc_seq_args *args,
                                                CUstream stream);
/* From t = k-1 down to 0, carrying the recurrent gradient: dx, dh_init and
 * the parameter gradients summed over all (b, t). */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_cfc_seq_backward(foxjit_runtime *rt,
                                                 const foxjit_cfc_seq_args *args,
                                                 CUstream stream);
/* Every kernel of both directions, for any batch and k. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_cfc_seq_prepare(foxjit_runtime *rt, int n_in, int n_hid);

/* GRN heads over batch x steps rows. Row (b, s) of a tensor starts
 * b * *_stride + s * *_step_stride floats after its base pointer; a stride
 * of 0 means dense [batch, steps, width] (stride steps * width, step stride
 * width). Outputs must not overlap inputs. */
typedef struct foxjit_heads_seq_args {
    int batch, steps, d, e, h;    /* input dim D, hidden E, heads H */
    CUdeviceptr w1, b1;           /* [H, E, D], [H, E] */
    CUdeviceptr w2, b2;           /* [H, E, E], [H, E] */
    CUdeviceptr w_gate, b_gate;   /* [H, E], [H] */
    CUdeviceptr w_main, b_main;   /* [H, E], [H] */
    CUdeviceptr w_skip, b_skip;   /* [H, D], [H] */
    CUdeviceptr x;       int64_t x_stride, x_step_stride;             /* D per row */
    CUdeviceptr logits;  int64_t logits_stride, logits_step_stride;   /* forward: H per row */
    CUdeviceptr dlogits; int64_t dlogits_stride, dlogits_step_stride; /* backward: H per row */
    CUdeviceptr dx;      int64_t dx_stride, dx_step_stride;           /* backward: D; 0 = not needed */
    int dx_accumulate;
    /* backward: parameter-shaped gradients, summed over every row */
    CUdeviceptr dw1, db1, dw2, db2, dw_gate, db_gate, dw_main, db_main, dw_skip, db_skip;
    int grad_accumulate;  /* nonzero: +=, zero: = */
    /* Backward workspace of foxjit_heads_seq_workspace_size() bytes or more
     * (256-byte aligned; one call at a time). The forward ignores it. */
    CUdeviceptr work;
    size_t work_bytes;
} foxjit_heads_seq_args;

/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API foxjit_status foxjit_heads_seq_workspace_size(foxjit_runtime *rt, int batch,
                                                         int steps, int d, int e, int h,
                                                         size_t *bytes);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_heads_seq_forward(foxjit_runtime *rt,
                                                  const foxjit_heads_seq_args *args,
                                                  CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_heads_seq_backward(foxjit_runtime *rt,
                                                   const foxjit_heads_seq_args *args,
                                                   CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_heads_seq_prepare(foxjit_runtime *rt, int d, int e, int h);

/* The save: the first layer's pre-activations A = x W1^T + b1 of every row
 * and head ([batch * steps, H * E] floats, rows padded to a multiple of 4) and
 * a few per-head vectors, written by the forward and read by the backward,
 * which then does not recompute them (its largest product). The results are bitwise the same as
 * the plain forward's and backward's. The save must hold the forward of the
 * same x and parameters when the backward reads it; nothing checks that.
 * saved: foxjit_heads_seq_saved_size() bytes or more, 16-byte aligned, not
 * overlapping any tensor of the call (the forward writes it, the backward
 * only reads it, so one save serves several backward calls). */
/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API foxjit_status foxjit_heads_seq_saved_size(foxjit_runtime *rt, int batch, int steps,
                                                     int d, int e, int h, size_t *bytes);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a save, workspace or output must be
 * ordered by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_heads_seq_forward_save(foxjit_runtime *rt,
                                                       const foxjit_heads_seq_args *args,
                                                       CUdeviceptr saved, size_t saved_bytes,
                                                       CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a save, workspace or output must be
 * ordered by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_heads_seq_backward_saved(foxjit_runtime *rt,
                                                         const foxjit_heads_seq_args *args,
                                                         CUdeviceptr saved, size_t saved_bytes,
                                                         CUstream stream);

/* The backward in two parts (ABI 2.8), so that a caller can run the
 * parameter gradients on a second stream beside what needs only dx (a
 * recurrence's backward: at a small batch it fills a few SMs, and the
 * gradients' blocks would otherwise run before it). Each part launches
 * its share of the one-call form's kernels, and every output has the
 * bits of the one-call form (foxjit_heads_seq_backward, or
 * foxjit_heads_seq_backward_saved when saved != 0), however the parts
 * are ordered onto streams.
 *  FOXJIT_HEADS_SEQ_PART_DX      the rows' backward (dA and the per-tile
 *      sums into args->work; from the save when saved != 0, else
 *      recomputed), then dx when args->dx != 0. Reads dims, parameters,
 *      x, dlogits (and the save); writes work and dx. The ten gradient
 *      pointers are not read and may be 0.
 *  FOXJIT_HEADS_SEQ_PART_PARAMS  the ten parameter gradients, from what
 *      the PART_DX call of the same args left in work. Reads dims,
 *      parameters, x and work; writes the gradients and work. dlogits,
 *      dx and the save are not read (each may be 0; saved_bytes is then
 *      ignored); those given must not be a gradient, as in the one-call
 *      form.
 *  FOXJIT_HEADS_SEQ_PART_ALL     both: the launches of the one-call form.
 * The order is the caller's to keep:
 *  - PART_PARAMS after the PART_DX call of the same args and workspace:
 *    on the same stream, or on another stream made to wait for an event
 *    recorded after PART_DX (cuEventRecord, cuStreamWaitEvent; in a
 *    captured graph, the same fork). Exactly one PART_PARAMS per PART_DX:
 *    PART_DX resets the integer tickets in work that PART_PARAMS counts
 *    its blocks with.
 *  - work belongs to the pair until PART_PARAMS has finished: no other
 *    call on it (another PART_DX included) may start before then, and
 *    nothing may rewrite x or the parameters while either part may run.
 *    dx may be read as soon as PART_DX has finished.
 * A part value other than the three is refused (INVALID_ARGUMENT).
 * foxjit_heads_seq_prepare loads every kernel of every part. */
typedef enum foxjit_heads_seq_part {
    FOXJIT_HEADS_SEQ_PART_DX = 1,
    FOXJIT_HEADS_SEQ_PART_PARAMS = 2,
    FOXJIT_HEADS_SEQ_PART_ALL = 3, /* PART_DX | PART_PARAMS */
} foxjit_heads_seq_part;
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a save, workspace or output must be
 * ordered by the caller (one stream, or events), the two parts of one
 * backward as above. */
FOXJIT_API foxjit_status foxjit_heads_seq_backward_part(foxjit_runtime *rt,
                                                        const foxjit_heads_seq_args *args,
                                                        CUdeviceptr saved, size_t saved_bytes,
                                                        foxjit_heads_seq_part part,
                                                        CUstream stream);

/* Variable selection backward over all batch x t rows at once (the forward
 * is foxjit_vsn_forward): dx per row, and dW, dbias summed over every row
 * into [F, F] and [F]. Every tensor is dense. */
typedef struct foxjit_vsn_seq_args {
    int batch, t, f;
    CUdeviceptr w, bias;  /* [F, F], [F] */
    CUdeviceptr x;        /* [batch, t, F] */
    CUdeviceptr dy;       /* [batch, t, F] */
    CUdeviceptr dx;       /* [batch, t, F]; 0 = not needed */
    int dx_accumulate;
    CUdeviceptr dw;       /* [F, F] */
    CUdeviceptr dbias;    /* [F] */
    int grad_accumulate;  /* nonzero: +=, zero: = */
    /* Workspace of foxjit_vsn_seq_workspace_size() bytes or more (256-byte
     * aligned; one call at a time). */
    CUdeviceptr work;
    size_t work_bytes;
} foxjit_vsn_seq_args;

/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API foxjit_status foxjit_vsn_seq_workspace_size(foxjit_runtime *rt, int batch, int t,
                                                       int f, size_t *bytes);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_vsn_seq_backward(foxjit_runtime *rt,
                                                 const foxjit_vsn_seq_args *args,
                                                 CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_vsn_seq_prepare(foxjit_runtime *rt, int f);

/* ------------------------------------------------------------------------
 * Training-step kernels (kernels.md section 7)
 * ------------------------------------------------------------------------ */

/* loss[0] (+)= mean over n of BCE-with-logits(z, y); dz = (sigmoid(z)-y)/n
 * (dz may be 0 = not needed, or z or y itself). loss is one float on the
 * device. Deterministic. n in [1, 2^31-1]. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_bce_with_logits(foxjit_runtime *rt, CUdeviceptr z, CUdeviceptr y,
                                                int64_t n, CUdeviceptr loss, int loss_accumulate,
                                                CUdeviceptr dz, CUstream stream);

/* Bytes of workspace foxjit_bce_with_logits_wide needs for n values (at
 * most 8 KiB; a workspace sized for n serves every smaller n). n in
 * [1, 2^31-1]. */
/* Threads: any thread, concurrently with every call on rt except destroy. */
FOXJIT_API foxjit_status foxjit_bce_with_logits_workspace_size(foxjit_runtime *rt, int64_t n,
                                                               size_t *bytes);

/* The loss and dz of foxjit_bce_with_logits, spread over the whole GPU:
 * past 8192 values, blocks of at most 2048 values (up to 2^21 values; n /
 * 1024 past that) each write a float64 partial sum to the workspace, and a
 * second kernel adds the partials in a fixed order; up to 8192 values, one
 * launch of foxjit_bce_with_logits's single block (its bits), which leaves
 * the workspace alone. The workspace: 8-byte aligned,
 * foxjit_bce_with_logits_workspace_size bytes or more, overlapping no other
 * argument, contents on entry ignored. It beats foxjit_bce_with_logits past
 * about 8192 values on every arch, most below sm_90, where that one runs as
 * one block (fox-jit bench bce). dz is bitwise foxjit_bce_with_logits's; the
 * loss is a sum whose order depends on n alone, not on the GPU, and not
 * always in foxjit_bce_with_logits's order. ABI 2.4. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_bce_with_logits_wide(foxjit_runtime *rt, CUdeviceptr z,
                                                     CUdeviceptr y, int64_t n, CUdeviceptr loss,
                                                     int loss_accumulate, CUdeviceptr dz,
                                                     CUdeviceptr workspace,
                                                     size_t workspace_bytes, CUstream stream);

/* Fused AdamW over one tensor. `step` points to one int32 on the device: the
 * 1-based step number used for bias correction (read by the kernel, so a
 * captured graph can replay with an advancing step; see
 * foxjit_increment_step; a step below 1 counts as 1). n in [1, 2^40]; lr and
 * weight_decay >= 0, beta1 and beta2 in [0, 1), eps > 0, all finite. The
 * float32 operations are in a fixed order (ops/train/kernel.cu), so the
 * result is the same on every GPU. */
typedef struct foxjit_adamw_args {
    int64_t n;
    CUdeviceptr param, grad, m, v;
    CUdeviceptr step;
    float lr, beta1, beta2, eps, weight_decay;
} foxjit_adamw_args;

/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_adamw(foxjit_runtime *rt, const foxjit_adamw_args *args,
                                      CUstream stream);
/* step[0] += 1 on the device (one int32). */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share a workspace or output must be ordered
 * by the caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_increment_step(foxjit_runtime *rt, CUdeviceptr step,
                                               CUstream stream);
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; a kernel asked for by several threads at once is
 * compiled once while the others wait. */
FOXJIT_API foxjit_status foxjit_training_prepare(foxjit_runtime *rt);

/* ------------------------------------------------------------------------
 * Generalized advantage estimation (kernels.md section 9)
 * ------------------------------------------------------------------------ */

/* Advantages and returns of an RL trainer's rollouts, laid out time-major:
 * rewards and dones [steps, envs], values [steps + 1, envs] (its last row
 * the bootstrap value of the state after the last step), float32. With
 * keep = 0 where dones is nonzero (the episode ended at that step), else 1,
 * from the last step back:
 *     delta[t]      = rewards[t] + gamma * keep[t] * values[t + 1] - values[t]
 *     advantages[t] = delta[t] + gamma * lambda * keep[t] * advantages[t + 1]
 *     returns[t]    = advantages[t] + values[t]
 * (advantages[steps] = 0), per environment, in float32 in that order: the
 * bits depend on the inputs only. returns may be 0 (not wanted). gamma and
 * lambda in [0, 1]; steps and envs in [1, 2^31], (steps + 1) x envs at most
 * 2^40. The outputs may not overlap the inputs or each other. One kernel,
 * a thread per environment; no workspace. ABI 2.5. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy; calls that share an output must be ordered by the
 * caller (one stream, or events). */
FOXJIT_API foxjit_status foxjit_gae(foxjit_runtime *rt, CUdeviceptr rewards, CUdeviceptr values,
                                    CUdeviceptr dones, int64_t steps, int64_t envs, float gamma,
                                    float lambda, CUdeviceptr advantages, CUdeviceptr returns,
                                    CUstream stream);
/* Compiles and loads foxjit_gae's kernel (one for every shape), for use
 * before CUDA graph capture. */
/* Threads: any thread with rt's context current, concurrently with every call
 * on rt except destroy. */
FOXJIT_API foxjit_status foxjit_gae_prepare(foxjit_runtime *rt);

/* ------------------------------------------------------------------------
 * Plugin table: the one symbol a trainer needs to dlsym.
 * The table starts with its own size and ABI version and only ever grows at
 * the end. foxjit_get_api returns NULL for an unknown abi_major.
 * ------------------------------------------------------------------------ */

typedef struct foxjit_api {
    size_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;

    const char *(*version)(void);
    const char *(*status_string)(foxjit_status);
    const char *(*last_error)(void);

    void (*runtime_default_params)(foxjit_runtime_params *);
    foxjit_status (*runtime_create)(const foxjit_runtime_params *, foxjit_runtime **);
    void (*runtime_destroy)(foxjit_runtime **);
    foxjit_status (*runtime_get_counters)(const foxjit_runtime *, foxjit_counters *);
    const char *(*runtime_arch)(const foxjit_runtime *);

    foxjit_status (*column_sum)(foxjit_runtime *, CUdeviceptr, int64_t, int64_t, CUdeviceptr,
                                int, CUstream);
    foxjit_status (*bias_grad_reduce)(foxjit_runtime *, CUdeviceptr, int64_t, int64_t,
                                      CUdeviceptr, CUstream);
    foxjit_status (*curiosity_bias_grad_reduce)(foxjit_runtime *, CUdeviceptr, int64_t, int64_t,
                                                CUdeviceptr, CUstream);
    foxjit_status (*reduce_axis0)(foxjit_runtime *, CUdeviceptr, int64_t, int64_t, CUdeviceptr,
                                  CUstream);
    foxjit_status (*column_sum_prepare)(foxjit_runtime *, int64_t, int64_t);

    foxjit_status (*radix_sort_pairs_workspace_size)(foxjit_runtime *, int64_t, int, int,
                                                     size_t *);
    foxjit_status (*radix_sort_pairs)(foxjit_runtime *, CUdeviceptr, CUdeviceptr, CUdeviceptr,
                                      CUdeviceptr, int64_t, int, int, CUdeviceptr, size_t,
                                      CUstream);
    foxjit_status (*radix_sort_prepare)(foxjit_runtime *);
    foxjit_status (*rank_normalize_workspace_size)(foxjit_runtime *, int64_t, foxjit_tie_mode,
                                                   size_t *);
    foxjit_status (*rank_normalize)(foxjit_runtime *, CUdeviceptr, int64_t, float, float,
                                    foxjit_tie_mode, CUdeviceptr, CUdeviceptr, size_t, CUstream);
    foxjit_status (*rank_normalize_prepare)(foxjit_runtime *, foxjit_tie_mode);

    foxjit_status (*cfc_forward)(foxjit_runtime *, const foxjit_cfc_args *, CUstream);
    foxjit_status (*cfc_backward)(foxjit_runtime *, const foxjit_cfc_args *, CUstream);
    foxjit_status (*cfc_prepare)(foxjit_runtime *, int, int);
    foxjit_status (*heads_forward)(foxjit_runtime *, const foxjit_heads_args *, CUstream);
    foxjit_status (*heads_backward)(foxjit_runtime *, const foxjit_heads_args *, CUstream);
    foxjit_status (*heads_prepare)(foxjit_runtime *, int, int, int);
    foxjit_status (*vsn_forward)(foxjit_runtime *, const foxjit_vsn_args *, CUstream);
    foxjit_status (*vsn_backward)(foxjit_runtime *, const foxjit_vsn_args *, CUstream);
    foxjit_status (*vsn_prepare)(foxjit_runtime *, int);
    foxjit_status (*attn_pool_forward)(foxjit_runtime *, const foxjit_attn_pool_args *,
                                       CUstream);
    foxjit_status (*attn_pool_backward)(foxjit_runtime *, const foxjit_attn_pool_args *,
                                        CUstream);
    foxjit_status (*attn_pool_prepare)(foxjit_runtime *, int);
    void (*get_perception_limits)(foxjit_perception_limits *);

    foxjit_status (*bce_with_logits)(foxjit_runtime *, CUdeviceptr, CUdeviceptr, int64_t,
                                     CUdeviceptr, int, CUdeviceptr, CUstream);
    foxjit_status (*adamw)(foxjit_runtime *, const foxjit_adamw_args *, CUstream);
    foxjit_status (*increment_step)(foxjit_runtime *, CUdeviceptr, CUstream);
    foxjit_status (*training_prepare)(foxjit_runtime *);
    size_t (*heads_workspace_size)(int batch, int steps, int e, int h);
    /* ABI 2.1: whole-sequence ops */
    foxjit_status (*cfc_seq_workspace_size)(foxjit_runtime *, int, int, int, int, size_t *);
    foxjit_status (*cfc_seq_forward)(foxjit_runtime *, const foxjit_cfc_seq_args *, CUstream);
    foxjit_status (*cfc_seq_backward)(foxjit_runtime *, const foxjit_cfc_seq_args *, CUstream);
    foxjit_status (*cfc_seq_prepare)(foxjit_runtime *, int, int);
    foxjit_status (*heads_seq_workspace_size)(foxjit_runtime *, int, int, int, int, int,
                                              size_t *);
    foxjit_status (*heads_seq_forward)(foxjit_runtime *, const foxjit_heads_seq_args *,
                                       CUstream);
    foxjit_status (*heads_seq_backward)(foxjit_runtime *, const foxjit_heads_seq_args *,
                                        CUstream);
    foxjit_status (*heads_seq_prepare)(foxjit_runtime *, int, int, int);
    foxjit_status (*vsn_seq_workspace_size)(foxjit_runtime *, int, int, int, size_t *);
    foxjit_status (*vsn_seq_backward)(foxjit_runtime *, const foxjit_vsn_seq_args *, CUstream);
    foxjit_status (*vsn_seq_prepare)(foxjit_runtime *, int);
    /* abi_minor 3 */
    foxjit_status (*heads_seq_saved_size)(foxjit_runtime *, int, int, int, int, int, size_t *);
    foxjit_status (*heads_seq_forward_save)(foxjit_runtime *, const foxjit_heads_seq_args *,
                                            CUdeviceptr, size_t, CUstream);
    foxjit_status (*heads_seq_backward_saved)(foxjit_runtime *, const foxjit_heads_seq_args *,
                                              CUdeviceptr, size_t, CUstream);
    /* abi_minor 4 */
    foxjit_status (*bce_with_logits_workspace_size)(foxjit_runtime *, int64_t, size_t *);
    foxjit_status (*bce_with_logits_wide)(foxjit_runtime *, CUdeviceptr, CUdeviceptr, int64_t,
                                          CUdeviceptr, int, CUdeviceptr, CUdeviceptr, size_t,
                                          CUstream);
    /* abi_minor 5 */
    foxjit_status (*gae)(foxjit_runtime *, CUdeviceptr, CUdeviceptr, CUdeviceptr, int64_t,
                         int64_t, float, float, CUdeviceptr, CUdeviceptr, CUstream);
    foxjit_status (*gae_prepare)(foxjit_runtime *);
    /* abi_minor 6 */
    foxjit_status (*set_precision)(foxjit_runtime *, foxjit_precision);
    foxjit_status (*get_precision)(const foxjit_runtime *, foxjit_precision *);
    /* abi_minor 7 */
    foxjit_status (*column_sum_workspace_size)(foxjit_runtime *, int64_t, int64_t, size_t *);
    foxjit_status (*column_sum_split)(foxjit_runtime *, CUdeviceptr, int64_t, int64_t,
                                      CUdeviceptr, int, CUdeviceptr, size_t, CUstream);
    foxjit_status (*column_sum_split_prepare)(foxjit_runtime *, int64_t, int64_t);
    /* abi_minor 8 */
    foxjit_status (*heads_seq_backward_part)(foxjit_runtime *, const foxjit_heads_seq_args *,
                                             CUdeviceptr, size_t, foxjit_heads_seq_part,
                                             CUstream);
    /* New members go here, at the end only. */
} foxjit_api;

/* Returns the table for abi_major (FOXJIT_ABI_MAJOR), or NULL if this
 * library does not implement that major version. The table is static. */
/* Threads: any thread, any time; needs no runtime and no context. */
FOXJIT_API const foxjit_api *foxjit_get_api(uint32_t abi_major);
typedef const foxjit_api *(*foxjit_get_api_fn)(uint32_t abi_major);

#ifdef __cplusplus
}
#endif

#endif /* FOXJIT_FOXJIT_H */
