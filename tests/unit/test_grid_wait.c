/* unit: every kernel of the library's sources starts with fj_grid_wait()
 * (kernel_src/common.cuh). The runtime launches them with programmatic
 * stream serialization on sm_90+ (runtime/call/op_call.c), so a kernel that
 * touched memory before that wait could read what the previous kernel of
 * its stream has not written yet. Read from the sources embedded in the
 * library, the ones NVRTC compiles. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "registry.h"

/* The body of the kernel declared at decl: its first statement, or NULL. */
static const char *first_statement(const char *decl, const char *end)
{
    /* The parameter list's closing parenthesis, then the body's brace. */
    int depth = 0, seen = 0;
    const char *p = decl;
    for (; p < end; p++) {
        if (*p == '(')
            depth++, seen = 1;
        else if (*p == ')' && --depth == 0 && seen) {
            /* __launch_bounds__(...) comes before the name's list: go on
             * until a '{' follows the closing parenthesis. */
            const char *q = p + 1;
            while (q < end && (*q == ' ' || *q == '\n'))
                q++;
            if (q < end && *q == '{') {
                q++;
                while (q < end && (*q == ' ' || *q == '\n'))
                    q++;
                return q;
            }
        }
    }
    return NULL;
}

static void test_every_kernel_waits_first(void **state)
{
    (void)state;
    int kernels = 0;
    for (size_t i = 0; i < fj_library_sources.count; i++) {
        const fj_embedded_file *f = &fj_library_sources.files[i];
        const char *end = f->text + f->size;
        for (const char *p = f->text; (p = strstr(p, "extern \"C\" __global__")); p++) {
            const char *body = first_statement(p, end);
            if (!body)
                fail_msg("%s: a kernel without a body at offset %td", f->name, p - f->text);
            if (strncmp(body, "fj_grid_wait();", 15)) {
                const char *nl = strchr(p, '\n');
                fail_msg("%s: the kernel '%.*s' does not start with fj_grid_wait()", f->name,
                         (int)(nl ? nl - p : 60), p);
            }
            kernels++;
        }
    }
    printf("  %d kernels in %zu embedded files, each starting with fj_grid_wait()\n", kernels,
           fj_library_sources.count);
    /* Every program's kernels are among them: 33 definitions when this was
     * written (35 kernels of the programs, radix_reduce and radix_pass
     * written once for two, radix_kernels.cuh). */
    assert_true(kernels >= 33);
}

/* The check itself: a kernel that does something first is caught. */
static void test_check_catches_a_late_wait(void **state)
{
    (void)state;
    static const char good[] = "extern \"C\" __global__ void __launch_bounds__(256, 2)\n"
                               "k(const float *x, int n)\n{\n    fj_grid_wait();\n    x[0];\n}\n";
    static const char bad[] = "extern \"C\" __global__ void k(int *t)\n{\n    t[0] = 0;\n"
                              "    fj_grid_wait();\n}\n";
    const char *g = first_statement(good, good + sizeof good - 1);
    const char *b = first_statement(bad, bad + sizeof bad - 1);
    assert_non_null(g);
    assert_non_null(b);
    assert_int_equal(strncmp(g, "fj_grid_wait();", 15), 0);
    assert_int_not_equal(strncmp(b, "fj_grid_wait();", 15), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kernel_waits_first),
        cmocka_unit_test(test_check_catches_a_late_wait),
    };
    return cmocka_run_group_tests_name("grid_wait", tests, NULL, NULL);
}
