/* Where the cache lives and whether a directory is safe to use. A cache
 * holds code that will run on the GPU, so fox-jit uses only directories
 * that no other user can write to or swap.
 *
 * A directory is opened once, component by component from /, each opened
 * relative to the one before with O_NOFOLLOW and checked on its fd: the
 * checks hold for the directory actually used, and every later operation
 * goes through the returned fd, so renaming or replacing a path component
 * afterwards changes nothing. */
#ifndef FJ_CACHE_DIR_H
#define FJ_CACHE_DIR_H

#include <stddef.h>

/* $FOXJIT_CACHE_DIR, else $XDG_CACHE_HOME/foxjit, else $HOME/.cache/foxjit
 * (home from the password database when HOME is unset, or when it is
 * another user's: root with a user's HOME must not make root-owned
 * directories in it). -1 with why when no home is known or the path does
 * not fit. */
int fj_cache_dir_default(char *out, size_t len, char *why, size_t why_len);

typedef enum fj_dir_use {
    /* The writable cache: created when missing (0700, 0755 shared), owned
     * by you, not writable by group or others, carrying CACHEDIR.TAG. */
    FJ_DIR_WRITABLE,
    /* Inspection (list, verify, info): never created or written; owned by
     * you or root; tagged, or holding only fox-jit entries. */
    FJ_DIR_INSPECT,
    /* A read-only layer: owned by you or root, not writable by group or
     * others; a final symlink owned by you or root is followed. */
    FJ_DIR_LAYER,
} fj_dir_use;

/* Every component of every path (symlinks among the parents resolved and
 * checked in turn): a parent must be owned by you or root and not writable
 * by others unless sticky (/tmp); a symlink among them must be owned by you
 * or root. Returns an O_DIRECTORY fd, or -1 with why (what is wrong and
 * what to do). shared: created directories get 0755 (fox-jit warm
 * --shared). */
int fj_cache_dir_open(const char *dir, fj_dir_use use, int shared, char *why, size_t why_len);

/* CACHEDIR.TAG (cache_tag.c): 0 when dirfd is a fox-jit cache directory
 * (carrying fox-jit's tag; or untagged and empty or holding only fox-jit
 * entries and temp files, which then gets the tag when may_write), -1 with
 * why otherwise: another program's tag (cargo's, ccache's) is refused,
 * whether or not may_write, and never replaced. */
int fj_cache_tag_check(int dirfd, const char *dir, int may_write, int shared, char *why,
                       size_t why_len);

#endif
