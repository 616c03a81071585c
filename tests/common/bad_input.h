/* The bad-input checks of the gpu suite, shared by every op's test file.
 *
 * Each op of the op list (ops/op_list.h) defines, in its test file
 * (ops/<op>/test.c), its cases:
 *
 *     const bi_case cases_<op>[] = {
 *         {"foxjit_<name>", setup, valid, prepare, refusals},
 *         ...
 *         BI_END,
 *     };
 *
 * gpu_bad_input (tests/gpu/test_bad_input.c) walks the op list and runs
 * every op's cases: an op without cases_<op> does not link. For each case:
 * its refusals on the stream and into a graph capture (REFUSED below), its
 * watched outputs untouched; then its valid call with another context
 * current, with no context, on a stream of another context
 * (bi_check_contexts), and capturing on a runtime that has loaded nothing
 * (bi_check_capture_before_prepare).
 *
 * The op's test file is compiled into gpu_bad_input as well as into its own
 * program, next to the other ops' files: its cases_<op> (one for each op
 * it tests) are its only non-static names besides main, which meson
 * renames there. */
#ifndef BAD_INPUT_H
#define BAD_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpu_harness.h"

/* One API function of an op. valid and prepare get the runtime and stream
 * to use, which the checks vary (another context's stream, a fresh runtime
 * that has loaded nothing); refusals get gh.rt and gh.stream. */
typedef struct bi_case {
    const char *name;                                        /* "foxjit_<name>" */
    void (*setup)(void);                                     /* buffers and watched outputs */
    foxjit_status (*valid)(foxjit_runtime *rt, CUstream s);  /* a correct call */
    foxjit_status (*prepare)(foxjit_runtime *rt);            /* its prepare */
    void (*refusals)(foxjit_runtime *rt, CUstream s);        /* NULL: none of its own */
} bi_case;

/* Ends a cases_<op> array. */
#define BI_END {.name = NULL}

/* ---- buffers ------------------------------------------------------------- */

#define BI_INPUT_BITS 0x3f000000u    /* 0.5f: finite inputs */
#define BI_NAN_BITS 0x7fc00000u      /* outputs that are overwritten */
#define BI_SENTINEL_BITS 0x40400000u /* 3.0f: outputs that are added to (NaN + x stays NaN) */

/* A device buffer of `words` 32-bit words filled with `bits`, freed once
 * after the last test (bi_free_buffers). */
CUdeviceptr bi_buffer(size_t words, uint32_t bits);
/* bi_buffer(words, BI_INPUT_BITS). */
CUdeviceptr bi_input(size_t words);
void bi_free_buffers(void);

/* An output a case's setup names: poisoned with `bits` before its refusals
 * and checked bit for bit after them. */
void bi_watch(const char *name, CUdeviceptr p, size_t words, uint32_t bits);

/* ---- refused calls -------------------------------------------------------- */

/* got must be want, with a message of some length. */
void bi_expect_status(const char *expr, int line, const char *mode, foxjit_status got,
                      foxjit_status want);
void bi_begin_capture(void);
/* Ends the capture; returns the number of nodes it recorded. */
size_t bi_end_capture(void);
/* Refused calls counted so far (REFUSED and the checks below). */
extern long bi_refused_calls;

/* Makes the call on the stream, then again into a graph capture that must
 * stay empty; both must return want with a message. */
#define REFUSED(want, expr)                                                          \
    do {                                                                             \
        foxjit_status st_ = (expr);                                                  \
        bi_expect_status(#expr, __LINE__, "on the stream", st_, (want));             \
        printf("  %-26s %s\n", foxjit_status_string(st_), foxjit_last_error());       \
        bi_begin_capture();                                                          \
        st_ = (expr);                                                                \
        size_t nodes_ = bi_end_capture();                                            \
        bi_expect_status(#expr, __LINE__, "under capture", st_, (want));             \
        if (nodes_)                                                                  \
            fail_msg("line %d: %s was refused but captured %zu launches", __LINE__,  \
                     #expr, nodes_);                                                 \
        bi_refused_calls++;                                                          \
    } while (0)

#define INVALID FOXJIT_ERROR_INVALID_ARGUMENT
#define UNSUPPORTED FOXJIT_ERROR_UNSUPPORTED
#define TOO_SMALL FOXJIT_ERROR_WORKSPACE_TOO_SMALL

/* a = the valid args with one field changed (declare `a` of the args type). */
#define WITH(base, field, value) (a = (base), a.field = (value), &a)

/* ---- the checks gpu_bad_input runs for each case ------------------------- */

/* Its setup, its valid call on gh.rt (which must work), its outputs
 * poisoned. */
void bi_start(const bi_case *c);
/* Its refusals, then its watched outputs checked. */
void bi_check_refusals(const bi_case *c);
/* Its valid call (and prepare) with `other` current, with no context, and
 * on `foreign`, a stream of `other`: WRONG_CONTEXT, NO_CONTEXT,
 * WRONG_CONTEXT. gh.ctx is current again after. */
void bi_check_contexts(const bi_case *c, CUcontext other, CUstream foreign);
/* Its valid call capturing on a fresh runtime: NOT_PREPARED with 0 nodes;
 * after its prepare, the same capture records it. */
void bi_check_capture_before_prepare(const bi_case *c);

#endif
