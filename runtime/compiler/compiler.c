#include "compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache_entry.h"
#include "cache_key.h"
#include "log.h"
#include "status.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The shared device library's .cuh files and the ops' policy.h files. */
static int is_header(const char *name)
{
    size_t n = strlen(name);
    return (n > 4 && !strcmp(name + n - 4, ".cuh")) || (n > 2 && !strcmp(name + n - 2, ".h"));
}

foxjit_status fj_compile(const fj_toolchain *tc, const fj_variant *v, const fj_target *t,
                         uint8_t **image, size_t *size, uint32_t *kind, double *ms)
{
    return fj_compile_with_ptx(tc, v, t, image, size, kind, ms, NULL);
}

foxjit_status fj_compile_with_ptx(const fj_toolchain *tc, const fj_variant *v,
                                  const fj_target *t, uint8_t **image, size_t *size,
                                  uint32_t *kind, double *ms, char **ptx)
{
    if (ptx)
        *ptx = NULL;
    const fj_nvrtc *nv = tc->nvrtc;
    char desc[256];
    fj_variant_describe(v, desc, sizeof desc);
    *image = NULL;
    *size = 0;
    const fj_embedded_file *src = fj_program_source(v->program);
    if (!src)
        return fj_fail(FOXJIT_ERROR_COMPILE, "kernel source %s of %s is not embedded (a build "
                       "problem: an op's kernel is embedded as \"<op>/kernel.cu\" when its "
                       "line is in ops/op_list.h)", v->program->source, desc);
    if (v->program->uses_cccl && !tc->cccl_include[0])
        return fj_fail(FOXJIT_ERROR_COMPILE, "%s needs the CCCL (CUB) headers, which were not "
                       "found; set FOXJIT_CCCL_INCLUDE to <cuda>/include/cccl", desc);

    /* Every embedded header is offered to NVRTC by its embedded name, so
     * sources include each other by that name ("common.cuh",
     * "colsum/policy.h") and never touch the file system. */
    const fj_source_set *sets[2] = {&fj_library_sources, v->program->sources};
    size_t room = fj_library_sources.count + (sets[1] ? sets[1]->count : 0);
    const char **header_names = malloc((room ? room : 1) * sizeof *header_names);
    const char **header_texts = malloc((room ? room : 1) * sizeof *header_texts);
    if (!header_names || !header_texts) {
        free(header_names), free(header_texts);
        return fj_fail(FOXJIT_ERROR_OUT_OF_MEMORY, "out of host memory compiling %s", desc);
    }
    int nheaders = 0;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; sets[s] && i < sets[s]->count; i++) {
            const char *name = sets[s]->files[i].name;
            if (is_header(name)) {
                header_names[nheaders] = name;
                header_texts[nheaders] = sets[s]->files[i].text;
                nheaders++;
            }
        }
    fj_options opts;
    if (fj_build_options(v, t, tc, &opts)) {
        free(header_names), free(header_texts);
        return fj_fail(FOXJIT_ERROR_COMPILE, "%s: %s", desc, foxjit_last_error());
    }

    double t0 = now_ms();
    nvrtcProgram prog;
    nvrtcResult r = nv->nvrtcCreateProgram(&prog, src->text, src->name, nheaders, header_texts,
                                           header_names);
    /* NVRTC copies the headers' names and texts. */
    free(header_names), free(header_texts);
    if (r != NVRTC_SUCCESS)
        return fj_fail(FOXJIT_ERROR_COMPILE, "nvrtcCreateProgram for %s failed: %s", desc,
                       nv->nvrtcGetErrorString(r));
    r = nv->nvrtcCompileProgram(prog, opts.argc, opts.argv);
    size_t log_size = 0;
    nv->nvrtcGetProgramLogSize(prog, &log_size);
    char *log = malloc(log_size + 1);
    if (log) {
        log[0] = '\0';
        if (log_size)
            nv->nvrtcGetProgramLog(prog, log);
        log[log_size] = '\0';
    }
    if (r != NVRTC_SUCCESS) {
        char optline[2048] = "";
        for (int i = 0; i < opts.argc; i++) {
            size_t used = strlen(optline);
            snprintf(optline + used, sizeof optline - used, " %s", opts.argv[i]);
        }
        foxjit_status st = fj_fail(FOXJIT_ERROR_COMPILE,
                                   "NVRTC %d.%d failed to compile %s for %s: %s\noptions:%s\n"
                                   "log:\n", nv->major, nv->minor, desc, t->name,
                                   nv->nvrtcGetErrorString(r), optline);
        fj_fail_append(log ? log : "(no log)");
        free(log);
        nv->nvrtcDestroyProgram(&prog);
        return st;
    }
    if (log && log[0] && fj_log_enabled(FJ_LOG_DEBUG))
        fj_debug("NVRTC log for %s:\n%s", desc, log);
    free(log);

    size_t n = 0;
    uint8_t *out = NULL;
    if (t->ptx) {
        nv->nvrtcGetPTXSize(prog, &n);
        out = malloc(n ? n : 1);
        if (out && nv->nvrtcGetPTX(prog, (char *)out) != NVRTC_SUCCESS)
            n = 0;
        *kind = FJ_ENTRY_KIND_PTX;
    } else {
        nv->nvrtcGetCUBINSize(prog, &n);
        out = malloc(n ? n : 1);
        if (out && nv->nvrtcGetCUBIN(prog, (char *)out) != NVRTC_SUCCESS)
            n = 0;
        *kind = FJ_ENTRY_KIND_CUBIN;
    }
    /* NVRTC keeps the PTX it made the cubin from. */
    size_t ptx_size = 0;
    if (ptx && out && n && nv->nvrtcGetPTXSize(prog, &ptx_size) == NVRTC_SUCCESS && ptx_size) {
        *ptx = malloc(ptx_size);
        if (*ptx && nv->nvrtcGetPTX(prog, *ptx) != NVRTC_SUCCESS) {
            free(*ptx);
            *ptx = NULL;
        }
    }
    nv->nvrtcDestroyProgram(&prog);
    if (!out || n == 0) {
        free(out);
        return fj_fail(FOXJIT_ERROR_COMPILE, "NVRTC produced no %s for %s",
                       t->ptx ? "PTX" : "cubin", desc);
    }
    double elapsed = now_ms() - t0;
    if (ms)
        *ms = elapsed;
    fj_info("compiled %s for %s in %.0f ms (%zu bytes)", desc, t->name, elapsed, n);
    *image = out;
    *size = n;
    return FOXJIT_OK;
}
