/* Files fox-train writes only at the end (the checkpoint, the bench's
 * JSON, the dumped step) are checked at the start: a directory that does
 * not exist or cannot be written would otherwise fail after the whole run
 * had been spent. */
#ifndef FT_OUTPATH_H
#define FT_OUTPATH_H

#include <stddef.h>

/* 0 when `path` (given as option `opt`) can be created or replaced: its
 * directory exists and this process may create files there, and the path
 * itself is not a directory. Else -1 with what is wrong and what to do in
 * why. NULL passes. */
int ft_check_output_path(const char *path, const char *opt, char *why, size_t why_len);

/* The directory a file path names its file in: "." for a bare name, "/"
 * for a file in the root. */
void ft_dir_of(const char *path, char *out, size_t len);

#endif
