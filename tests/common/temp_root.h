/* Test helper: a fresh directory under /tmp for a test's files, and its
 * removal (made writable first: tests make read-only parts). Header-only,
 * like fd_capture.h. */
#ifndef FJ_TEST_TEMP_ROOT_H
#define FJ_TEST_TEMP_ROOT_H

#include <stdio.h>
#include <stdlib.h>

/* root gets /tmp/foxjit-unit-<tag>-XXXXXX, made. 0, or -1. */
static inline int temp_root_make(char *root, size_t len, const char *tag)
{
    snprintf(root, len, "/tmp/foxjit-unit-%s-XXXXXX", tag);
    return mkdtemp(root) ? 0 : -1;
}

static inline int temp_root_remove(const char *root)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", root, root);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
