#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "driver.h"
#include "toolkit.h"
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
    /* A FIFO given on purpose (a shell's <(...)) is read like stdin: its
     * open waits for the writer, and the read below ends with it. */
    const int is_stdin = !strcmp(path, "-");
    int fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    if (is_stdin)
        path = "on stdin";
    if (fd < 0) {
        cannot_read_manifest(path, errno);
        return NULL;
    }
    struct stat st;
    const int have_stat = fstat(fd, &st) == 0;
    if (have_stat && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "fox-jit: manifest %s is a directory; give the manifest file (one op "
                "per line, see fox-jit warm --print-manifest)\n", path);
        if (!is_stdin)
            close(fd);
        return NULL;
    }
    /* Bounded: /dev/zero, `yes |` or a huge file ends here, not when
     * memory runs out. */
    const size_t max = fj_tk_manifest_max_bytes();
    size_t n = 0;
    char *text = fj_tk_read_bounded(fd, max, have_stat && S_ISREG(st.st_mode)
                                                 ? (size_t)st.st_size : 0, &n);
    const int err = errno;
    if (!is_stdin)
        close(fd);
    if (!text && err == EFBIG) {
        fprintf(stderr, "fox-jit: manifest %s is larger than %zu bytes (1 MiB), the most a "
                "manifest may be: it lists op shapes, one per line (see fox-jit warm "
                "--print-manifest); give the manifest file\n", path, max);
        return NULL;
    }
    if (!text) {
        if (err == ENOMEM)
            fprintf(stderr, "fox-jit: out of memory reading %s\n", path);
        else
            cannot_read_manifest(path, err);
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
    return text;
}

int cli_parse_size(const char *cmd, const char *option, const char *text, uint64_t *out)
{
    char why[300];
    if (!*text) {
        fprintf(stderr, "fox-jit %s: %s is empty; give a number of bytes like 500M or 2G\n",
                cmd, option);
        return -1;
    }
    /* The parser's sentence starts with the value: "'abc' is not a size". */
    if (fj_tk_parse_size(text, out, why, sizeof why) != 0) {
        fprintf(stderr, "fox-jit %s: %s %s\n", cmd, option, why);
        return -1;
    }
    return 0;
}

int cli_local_gpu_cc(char *why, size_t why_len)
{
    static ft_cuda driver;
    const ft_cuda *cu = &driver;
    char no_driver[512];
    const int loaded = ft_cuda_load(&driver, no_driver, sizeof no_driver);
    if (loaded != 0) {
        /* Said to a machine that builds for others (a container image, a
         * CI host): no GPU is what matters, not how to install a driver. */
        const char *lib = getenv("FOXJIT_CUDA_LIBRARY");
        snprintf(why, why_len, "%s", loaded == FT_CUDA_ABSENT && !(lib && *lib)
                                         ? "no CUDA driver or GPU here"
                                         : no_driver);
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
