#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cuda_loader.h"
#include "foxjit/foxjit.h"
#include "status.h"

fj_disk_cache *cli_open_cache(const char *dir, fj_counters *counters)
{
    fj_cache_config cfg = {dir, NULL, 0};
    fj_disk_cache *c;
    if (fj_disk_cache_open(&cfg, counters, &c) != FOXJIT_OK) {
        fprintf(stderr, "fox-jit: cannot use the cache: %s\n", foxjit_last_error());
        return NULL;
    }
    return c;
}

char *cli_read_manifest(const char *path)
{
    if (!path)
        return strdup(fj_default_manifest);
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) {
        fprintf(stderr, "fox-jit: cannot read manifest %s: %s\n", path, strerror(errno));
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
    if (f != stdin)
        fclose(f);
    if (!text) {
        fprintf(stderr, "fox-jit: out of memory reading %s\n", path);
        return NULL;
    }
    text[n] = '\0';
    return text;
}

int cli_parse_size(const char *text, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno || end == text)
        return -1;
    unsigned long long scale = 1;
    switch (*end) {
    case 'k': case 'K': scale = 1ull << 10; end++; break;
    case 'm': case 'M': scale = 1ull << 20; end++; break;
    case 'g': case 'G': scale = 1ull << 30; end++; break;
    default: break;
    }
    if (*end)
        return -1;
    *out = n * scale;
    return 0;
}

int cli_local_gpu_cc(char *why, size_t why_len)
{
    const fj_cuda *cu;
    if (fj_cuda_get(&cu) != FOXJIT_OK) {
        snprintf(why, why_len, "%s", foxjit_last_error());
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
