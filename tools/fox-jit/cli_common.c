#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "toolkit.h"
#include "cli.h"
#include "foxjit/foxjit.h"

fj_tk_cache *cli_open_cache(const char *dir, int flags)
{
    fj_tk_cache *c;
    if (fj_tk_cache_open(dir, flags, &c) != 0) {
        fprintf(stderr, "fox-jit: cannot use the cache: %s\n", foxjit_last_error());
        return NULL;
    }
    return c;
}

int cli_check_cache_dir(const char *cmd, const char *dir)
{
    if (dir && !*dir) {
        fprintf(stderr, "fox-jit %s: --cache-dir is empty; give a directory, or leave the "
                "option out to use the default ($FOXJIT_CACHE_DIR, ~/.cache/foxjit)\n", cmd);
        return 2;
    }
    return 0;
}

static void cannot_read_manifest(const char *path, int err)
{
    fprintf(stderr, "fox-jit: cannot read manifest %s: %s (give --manifest a file of op "
            "shapes; fox-jit warm --print-manifest shows the default)\n", path, strerror(err));
}

char *cli_read_manifest(const char *path)
{
    if (!path)
        return strdup(fj_tk_default_manifest());
    if (!*path) {
        fprintf(stderr, "fox-jit: --manifest is empty; give a file ('-' reads stdin)\n");
        return NULL;
    }
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        cannot_read_manifest(path, errno);
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "fox-jit: manifest %s is a directory; give the manifest file (one op "
                "per line, see fox-jit warm --print-manifest)\n", path);
        if (f != stdin)
            fclose(f);
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *text = malloc(cap);
    size_t got;
    while (text && (got = fread(text + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *grown = realloc(text, cap * 2);
            if (!grown) {
                free(text);
                text = NULL;
                break;
            }
            text = grown;
            cap *= 2;
        }
    }
    /* The read's errno, before fclose can change it. */
    const int read_error = ferror(f) ? (errno ? errno : EIO) : 0;
    if (f != stdin)
        fclose(f);
    if (!text) {
        fprintf(stderr, "fox-jit: out of memory reading %s\n", path);
        return NULL;
    }
    if (read_error) {
        cannot_read_manifest(path, read_error);
        free(text);
        return NULL;
    }
    /* A NUL byte would silently end the text there: the rest of the file
     * would be ignored. */
    const char *nul = memchr(text, '\0', n);
    if (nul) {
        fprintf(stderr, "fox-jit: manifest %s has a NUL byte at offset %zu: it is not a text "
                "file (one op per line, see fox-jit warm --print-manifest)\n", path,
                (size_t)(nul - text));
        free(text);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

int cli_parse_size(const char *cmd, const char *option, const char *text, uint64_t *out)
{
    char why[300];
    if (fj_tk_parse_size(text, out, why, sizeof why) != 0) {
        fprintf(stderr, "fox-jit %s: %s %s\n", cmd, option, why);
        return -1;
    }
    return 0;
}

int cli_local_gpu_cc(char *why, size_t why_len)
{
    const fj_cuda *cu;
    const foxjit_status st = fj_cuda_get(&cu);
    if (st != FOXJIT_OK) {
        /* Said to a machine that builds for others (a container image, a
         * CI host): no GPU is what matters, not how to install a driver. */
        snprintf(why, why_len, "%s", st == FOXJIT_ERROR_DRIVER_NOT_FOUND
                                         ? "no CUDA driver or GPU here"
                                         : foxjit_last_error());
        return -1;
    }
    int count = 0;
    CUdevice dev;
    if (cu->cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1 ||
        cu->cuDeviceGet(&dev, 0) != CUDA_SUCCESS) {
        snprintf(why, why_len, "no CUDA device");
        return -1;
    }
    int major = 0, minor = 0;
    cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    return major * 10 + minor;
}
