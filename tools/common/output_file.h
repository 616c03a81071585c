/* The one way fox-jit's tools open a file a user names for their results
 * (fox-train's --csv, --checkpoint, --dump-step and --json; fox-jit bench's
 * --json), safe in a directory other users can write (/tmp, a group's
 * project directory):
 *
 *  - The directory is opened once; every later call is relative to it.
 *  - What is written goes into a new file created there under an
 *    unpredictable name with O_EXCL | O_NOFOLLOW (nothing planted at that
 *    name, a symbolic link least of all, is ever opened), which is then
 *    renamed over the path: an existing regular file is replaced, never
 *    written into, so a hard link to it elsewhere keeps its content.
 *  - A path that is a symbolic link is refused, naming the link and its
 *    target; so are a directory, a FIFO, a device or a socket, and another
 *    user's file in a sticky directory (which a rename may not replace).
 *  - The new file's mode is 0644 less what the umask takes from group and
 *    others; its owner can always read and write it.
 *
 * The one file written into in place is a file a run continues (a resumed
 * loss curve, OUT_FILE_CONTINUE): it is opened without following a link,
 * and only when the descriptor is a regular file of this user with no
 * other hard link.
 *
 * Messages name the path as the user gave it, prefixed by `what` (the
 * option, e.g. "--csv"), and say what to do. */
#ifndef TOOLS_OUTPUT_FILE_H
#define TOOLS_OUTPUT_FILE_H

#include <stddef.h>
#include <stdio.h>

enum out_file_flags {
    /* fsync the file before the rename and the directory after it: a crash
     * leaves the previous file or the new one whole (checkpoints). */
    OUT_FILE_SYNC = 1 << 0,
    /* The file takes its name at open, not at close, and grows there: a
     * loss curve a user can follow, of which a failed run leaves what it
     * wrote. */
    OUT_FILE_VISIBLE = 1 << 1,
    /* An existing file at the path is continued in place (read, truncated,
     * appended to); without one, a new file as OUT_FILE_VISIBLE. */
    OUT_FILE_CONTINUE = 1 << 2,
};

typedef struct out_file {
    FILE *f;              /* the stream to write (and, continued, to read) */
    int dirfd;            /* the path's directory (O_PATH); -1 when closed */
    const char *path;     /* as given, for messages: must outlive the out_file */
    const char *what;     /* the option that named it, for messages */
    unsigned flags;       /* out_file_flags */
    int published;        /* the path names f's file */
    int continued;        /* f is the file that was at the path */
    char name[256];       /* the path's last component */
    char tmp[256];        /* the new file's temporary name in dirfd */
} out_file;

/* Whether out_file_open(path, flags) can be expected to work, checked
 * by doing what it will do: the directory is opened, the path examined
 * (no link, no directory, nothing but a regular file, not another user's
 * in a sticky directory; continued, a file this user owns with no other
 * link, opened for reading and writing) and a file created in the
 * directory and removed again. So a file system that refuses new files
 * (/proc, a read-only mount) is found even by root, for whom access(2)
 * says yes. NULL passes. Returns 0, or -1 with the reason in why. */
int out_file_check(const char *path, const char *what, unsigned flags, char *why,
                   size_t why_len);

/* Opens a new file for path (or, OUT_FILE_CONTINUE, the existing one) as
 * above. Returns 0 with o->f ready, or -1 with the reason in why and
 * nothing left behind. */
int out_file_open(out_file *o, const char *path, const char *what, unsigned flags, char *why,
                  size_t why_len);

/* Flushes and closes the file and, unless it already has its name, renames
 * it over the path. Returns 0, or -1 with the reason in why (the new file
 * is removed then, and the path keeps what it held). o is closed either
 * way. */
int out_file_close(out_file *o, char *why, size_t why_len);

/* Closes the file without giving it the path's name: a file that does not
 * have it yet is removed. Nothing on an out_file already closed. */
void out_file_discard(out_file *o);

/* For a file that has its name (OUT_FILE_VISIBLE, OUT_FILE_CONTINUE): the
 * stream, which the caller ends with fclose; o is closed. */
FILE *out_file_take(out_file *o);

#endif
