/* Where the cache lives and whether a directory is safe to use. A cache
 * holds code that will run on the GPU, so fox-jit uses only directories
 * that no other user can write to. */
#ifndef FJ_CACHE_DIR_H
#define FJ_CACHE_DIR_H

#include <stddef.h>

/* $FOXJIT_CACHE_DIR, else $XDG_CACHE_HOME/foxjit, else $HOME/.cache/foxjit
 * (home from the password database when HOME is unset). -1 when no home is
 * known. */
int fj_cache_dir_default(char *out, size_t len);

/* Creates dir (and missing parents, mode 0700) and checks it is a real
 * directory, not a symlink, owned by the current user, not writable by group
 * or others. 0 when usable; -1 with why (what is wrong and what to do). */
int fj_cache_dir_prepare(const char *dir, char *why, size_t why_len);

/* A read-only layer: an existing directory (links resolved), owned by the
 * current user or root, not writable by group or others. */
int fj_cache_dir_check_readonly(const char *dir, char *why, size_t why_len);

#endif
