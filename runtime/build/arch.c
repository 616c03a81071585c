#include "arch.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvrtc_loader.h"
#include "status.h"

int fj_arch_parse(const char *text)
{
    if (!text)
        return -1;
    const char *p = text;
    if (!strncmp(p, "sm_", 3))
        p += 3;
    else if (!strncmp(p, "compute_", 8))
        p += 8;
    if (!isdigit((unsigned char)p[0]))
        return -1;
    char *end;
    long major = strtol(p, &end, 10);
    if (*end == '.') {
        if (!isdigit((unsigned char)end[1]) || end[2] != '\0' || major > 99)
            return -1;
        return (int)(major * 10 + (end[1] - '0'));
    }
    if (*end != '\0' || major < 10 || major > 999)
        return -1;
    return (int)major;
}

static int nvrtc_knows(const fj_nvrtc *nvrtc, int cc)
{
    for (int i = 0; i < nvrtc->num_archs; i++)
        if (nvrtc->archs[i] == cc)
            return 1;
    return 0;
}

static void list_archs(const fj_nvrtc *nvrtc, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < nvrtc->num_archs; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%ssm_%d", i ? " " : "", nvrtc->archs[i]);
    }
}

foxjit_status fj_target_for_device(const fj_nvrtc *nvrtc, int cc, fj_target *out)
{
    memset(out, 0, sizeof *out);
    if (nvrtc->num_archs == 0)
        return fj_fail(FOXJIT_ERROR_NVRTC_NOT_FOUND, "NVRTC %d.%d reports no supported archs",
                       nvrtc->major, nvrtc->minor);
    if (nvrtc_knows(nvrtc, cc)) {
        out->cc = cc;
        snprintf(out->name, sizeof out->name, "sm_%d", cc);
        return FOXJIT_OK;
    }
    int newest = nvrtc->archs[nvrtc->num_archs - 1];
    if (cc > newest) {
        /* The GPU is newer than this NVRTC: PTX for the newest arch it
         * knows runs there through the driver's JIT. */
        out->cc = newest;
        out->ptx = 1;
        snprintf(out->name, sizeof out->name, "compute_%d", newest);
        return FOXJIT_OK;
    }
    char known[512];
    list_archs(nvrtc, known, sizeof known);
    return fj_fail(FOXJIT_ERROR_UNSUPPORTED,
                   "the GPU is sm_%d, which NVRTC %d.%d cannot target (it knows %s); use an "
                   "NVRTC that supports sm_%d (FOXJIT_NVRTC_LIBRARY)",
                   cc, nvrtc->major, nvrtc->minor, known, cc);
}

foxjit_status fj_target_for_name(const fj_nvrtc *nvrtc, const char *name, fj_target *out)
{
    memset(out, 0, sizeof *out);
    int cc = fj_arch_parse(name);
    if (cc < 0)
        return fj_fail(FOXJIT_ERROR_INVALID_ARGUMENT,
                       "'%s' is not an arch name; write it like sm_89 or sm_90", name);
    int ptx = !strncmp(name, "compute_", 8);
    if (!nvrtc_knows(nvrtc, cc)) {
        char known[512];
        list_archs(nvrtc, known, sizeof known);
        return fj_fail(FOXJIT_ERROR_UNSUPPORTED, "NVRTC %d.%d cannot build for %s (it knows %s)",
                       nvrtc->major, nvrtc->minor, name, known);
    }
    out->cc = cc;
    out->ptx = ptx;
    snprintf(out->name, sizeof out->name, "%s_%d", ptx ? "compute" : "sm", cc);
    return FOXJIT_OK;
}
