/* gpu suite: every public op refuses bad input with its documented status
 * and a message, and launches nothing.
 *
 * For each op of the op list (ops/op_list.h: column sums, radix
 * sort, rank normalization, the perception forwards and backwards, the
 * whole-sequence ops, BCE, AdamW, the step counter) and its prepare and
 * workspace-size calls: sizes 0, negative and past the limit, NULL and
 * misaligned pointers, outputs that alias inputs, workspaces too small,
 * unsupported dims, bad enum and hyperparameter values. Every refused call
 * is made twice: once on the stream, after which the op's output buffers
 * (poisoned with NaN, or a finite sentinel where the op adds to them) must
 * be bit-for-bit untouched, and once into a CUDA graph capture, which must
 * end with zero nodes, so nothing was launched at all.
 *
 * The runtime calls that are no op's too (counters, create, the
 * products' precision).
 *
 * Then, with arguments that are fine: another CUcontext current
 * (FOXJIT_ERROR_WRONG_CONTEXT), no context current (FOXJIT_ERROR_NO_CONTEXT),
 * a stream of another context (FOXJIT_ERROR_WRONG_CONTEXT), and a capturing
 * stream on a runtime whose kernel is not loaded
 * (FOXJIT_ERROR_NOT_PREPARED, and the captured graph has 0 nodes; after the
 * op's prepare the same capture records the launch).
 *
 * The cases are each op's own: cases_<op> in the op's test file
 * (ops/<op>/test.c; tests/common/bad_input.h), which meson compiles into this program too
 * (its main renamed); this file is the walk over the op list and the
 * runtime calls that are no op's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bad_input.h"
#include "op_list.h"

/* ---- the table, from the op list ------------------------------------------
 * Each op of ops/op_list.h has its cases as cases_<op>: the table
 * below is FJ_OPS expanded, so an op added to the list without them does
 * not link ("undefined reference to `cases_<op>'"), and
 * api_without_case fails, naming the API function, when an op's line names
 * one (other than its prepare and workspace sizes, which the cases call)
 * that none of its cases makes. */

#define OP_CASES(op, api) extern const bi_case cases_##op[];
FJ_OPS(OP_CASES)
#undef OP_CASES

/* An op of the list: its cases and the API functions its line names. */
typedef struct op_row {
    const char *op;
    const bi_case *cases;            /* ended by BI_END */
    const char *const *api;          /* "foxjit_<name>" each, NULL-terminated */
} op_row;

#define FJ_API(name) "foxjit_" #name,
#define OP_API(op, api) static const char *const api_##op[] = {api NULL};
FJ_OPS(OP_API)
#undef OP_API
#define OP_ROW(op, api) {#op, cases_##op, api_##op},
static const op_row op_table[] = {FJ_OPS(OP_ROW)};
#undef OP_ROW
#undef FJ_API
#define OP_TABLE_COUNT (sizeof op_table / sizeof op_table[0])

/* Every case of every op, in list order (filled by main). */
#define MAX_CASES 64
static const bi_case *ops[MAX_CASES];
static size_t OP_COUNT;

static void collect_cases(void)
{
    OP_COUNT = 0;
    for (size_t i = 0; i < OP_TABLE_COUNT; i++)
        for (const bi_case *c = op_table[i].cases; c->name; c++) {
            if (OP_COUNT == MAX_CASES) {
                fprintf(stderr, "gpu/bad_input: more than %d cases; raise MAX_CASES in "
                        "tests/gpu/test_bad_input.c\n", MAX_CASES);
                exit(1);
            }
            ops[OP_COUNT++] = c;
        }
}

/* ---- tests ------------------------------------------------------------- */

static void test_bad_arguments(void **state)
{
    (void)state;
    long before = bi_refused_calls;
    for (size_t i = 0; i < OP_COUNT; i++) {
        if (!ops[i]->refusals)
            continue;
        printf("%s:\n", ops[i]->name);
        bi_start(ops[i]);
        bi_check_refusals(ops[i]);
    }
    printf("bad input: %ld refused calls, each with its documented status and a message; "
           "outputs untouched, 0 launches captured\n", bi_refused_calls - before);
}

static void test_runtime_calls(void **state)
{
    (void)state;
    foxjit_counters c;
    foxjit_runtime *rt = NULL;
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.struct_size = 1;
    REFUSED(INVALID, foxjit_runtime_get_counters(NULL, &c));
    REFUSED(INVALID, foxjit_runtime_get_counters(gh.rt, NULL));
    REFUSED(INVALID, foxjit_runtime_create(NULL, NULL));
    REFUSED(INVALID, foxjit_runtime_create(&p, &rt));
    assert_null(rt);
    assert_string_equal(foxjit_runtime_arch(NULL), "");
    /* The products' precision: a value that is none, on a real runtime,
     * changes nothing. */
    foxjit_precision prec;
    REFUSED(INVALID, foxjit_set_precision(NULL, FOXJIT_PRECISION_TF32));
    REFUSED(INVALID, foxjit_set_precision(gh.rt, (foxjit_precision)2));
    REFUSED(INVALID, foxjit_set_precision(gh.rt, (foxjit_precision)-1));
    REFUSED(INVALID, foxjit_get_precision(NULL, &prec));
    REFUSED(INVALID, foxjit_get_precision(gh.rt, NULL));
    GH_CHECK(foxjit_get_precision(gh.rt, &prec));
    assert_int_equal(prec, FOXJIT_PRECISION_FLOAT32);
    foxjit_runtime_destroy(NULL);
    foxjit_runtime_destroy(&rt);
}

/* Every op with fine arguments, in the wrong context state. */
static void test_wrong_context(void **state)
{
    (void)state;
    CUcontext other;
    CUstream foreign;
    /* cuCtxCreate pushes the new context on this thread's stack: pop it,
     * or setting the current context to NULL later would uncover gh.ctx. */
    CUcontext popped;
    GH_CU(gh.cu->cuCtxCreate(&other, NULL, 0, gh.device));
    GH_CU(gh.cu->cuStreamCreate(&foreign, CU_STREAM_NON_BLOCKING));
    GH_CU(gh.cu->cuCtxPopCurrent(&popped));
    GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx));
    long before = bi_refused_calls;
    for (size_t i = 0; i < OP_COUNT; i++) {
        bi_start(ops[i]);
        bi_check_contexts(ops[i], other, foreign);
    }
    GH_CU(gh.cu->cuCtxSetCurrent(other));
    gh.cu->cuStreamDestroy(foreign);
    GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx));
    gh.cu->cuCtxDestroy(other);
    GH_CU(gh.cu->cuCtxSetCurrent(gh.ctx));
    printf("bad input: %ld calls in the wrong context state refused, outputs untouched\n",
           bi_refused_calls - before);
}

/* Every op, capturing, on a runtime that has loaded nothing. */
static void test_capture_before_prepare(void **state)
{
    (void)state;
    long before = bi_refused_calls;
    for (size_t i = 0; i < OP_COUNT; i++) {
        bi_start(ops[i]);
        bi_check_capture_before_prepare(ops[i]);
    }
    printf("bad input: %ld captures before prepare refused, 0 launches\n",
           bi_refused_calls - before);
}

static void test_report(void **state)
{
    (void)state;
    printf("bad input: %zu ops, %ld refused calls in all, none launched anything\n", OP_COUNT,
           bi_refused_calls);
    printf("FOXJIT-COUNT bad_input_refusals %ld\n", bi_refused_calls);
}

/* Each API function an op's list line names has a case of that op named
 * after it, or is a prepare or a size query (a workspace's or a save's,
 * which the cases call).
 * Checked before the GPU is looked for, so a machine without one catches a
 * missing case too. Returns the number of API functions without a case. */
static int api_without_case(void)
{
    int missing = 0;
    for (size_t i = 0; i < OP_TABLE_COUNT; i++) {
        for (const char *const *e = op_table[i].api; *e; e++) {
            size_t len = strlen(*e);
            static const char *const helpers[] = {"_prepare", "_workspace_size", "_saved_size"};
            int helper = 0;
            for (int h = 0; h < 3; h++) {
                size_t hl = strlen(helpers[h]);
                helper |= len > hl && !strcmp(*e + len - hl, helpers[h]);
            }
            int found = helper;
            for (const bi_case *c = op_table[i].cases; c->name && !found; c++)
                found = !strcmp(c->name, *e);
            if (!found) {
                fprintf(stderr, "gpu/bad_input: op %s: API function %s has no bad-input case; "
                        "add one named \"%s\" to cases_%s in the op's test file "
                        "(ops/%s/test.c)\n", op_table[i].op, *e, *e, op_table[i].op,
                        op_table[i].op);
                missing++;
            }
        }
    }
    return missing;
}

int main(void)
{
    collect_cases();
    if (api_without_case())
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_runtime_calls),
        cmocka_unit_test(test_wrong_context),
        cmocka_unit_test(test_capture_before_prepare),
        cmocka_unit_test(test_report),
    };
    gh_set_teardown(bi_free_buffers);
    return gh_main("gpu/bad_input", tests, sizeof tests / sizeof tests[0]);
}
