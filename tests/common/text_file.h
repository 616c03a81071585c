/* Test helper: write a small text file, and check one's whole content.
 * Header-only, like temp_root.h; include it after <cmocka.h>. */
#ifndef FJ_TEST_TEXT_FILE_H
#define FJ_TEST_TEXT_FILE_H

#include <stdio.h>
#include <string.h>

/* path gets exactly text (created or truncated). */
static inline void put_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* path must hold exactly want (at most 511 bytes of it are compared). */
static inline void expect_text(const char *path, const char *want)
{
    char got[512] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s cannot be read", path);
    got[fread(got, 1, sizeof got - 1, f)] = '\0';
    fclose(f);
    if (strcmp(got, want))
        fail_msg("%s holds '%s', want '%s'", path, got, want);
}

#endif
