/* fox-jit info: what fox-jit would use on this machine. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "driver.h"
#include "toolkit.h"
#include "foxjit/foxjit.h"

const char info_usage[] =
    "usage: fox-jit info [--cache-dir DIR] [--no-probe]\n\n"
    "Prints the library, NVRTC, CCCL and driver versions, the GPUs, the cache directories with\n"
    "their size, and, when a GPU is present, a probe: a runtime is created and the default\n"
    "column-sum kernels are prepared, with the time it took and the runtime's counters\n"
    "(disk hits and misses, compiles, compile ms, bytes read and written).\n"
    "\n"
    "  --cache-dir DIR  the cache to report (default $FOXJIT_CACHE_DIR, $XDG_CACHE_HOME/foxjit,\n"
    "                   ~/.cache/foxjit)\n"
    "  --no-probe       skip the probe\n"
    "\n"
    "Exit status: 0, or 1 when the cache directory exists but cannot be used,\n"
    "FOXJIT_TARGET is not a target for this machine, or FOXJIT_NVRTC_LIBRARY or\n"
    "FOXJIT_CCCL_INCLUDE points at no toolchain (everything else is still printed), 2 on\n"
    "bad usage.\n";

static int env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

typedef struct sizes {
    long entries;
    unsigned long long bytes;
} sizes;

static int add_size(const fj_tk_entry *e, void *ud)
{
    sizes *s = ud;
    if (!e->is_temp && !e->gone) {
        s->entries++;
        s->bytes += e->size;
    }
    return 0;
}

static void print_counters(const foxjit_counters *k)
{
    printf("  counters: disk hits %llu, misses %llu, compiles %llu (%.0f ms), read %llu B, "
           "written %llu B, corrupt %llu, evicted %llu, write failures %llu, modules %llu\n",
           (unsigned long long)k->disk_hits, (unsigned long long)k->disk_misses,
           (unsigned long long)k->compiles, k->compile_ms, (unsigned long long)k->bytes_read,
           (unsigned long long)k->bytes_written, (unsigned long long)k->corrupt_entries,
           (unsigned long long)k->evictions, (unsigned long long)k->write_failures,
           (unsigned long long)k->modules_loaded);
}

/* The target override is a testing aid: say so wherever it is set, so a
 * slow trainer with a forgotten FOXJIT_TARGET is explained here. Returns
 * -1 when its value is not a target (runtimes refuse to start then). */
static int print_target_override(void)
{
    const char *env = fj_tk_target_env(), *t = getenv(env);
    fj_tk_target tt;
    char why[256];
    int cc;
    if (!t || !t[0] || !strcmp(t, "native")) {
        printf("target override: none (runtimes build for the GPU present)\n");
    } else if (fj_tk_target_for_name(t, &tt) != FOXJIT_OK) {
        printf("target override: %s=%s is not valid: %s; runtimes refuse to start until it is "
               "fixed or unset\n", env, t, foxjit_last_error());
        return -1;
    } else if ((cc = cli_local_gpu_cc(why, sizeof why)) > 0 &&
               fj_tk_target_for_gpu(cc, &tt) != FOXJIT_OK) {
        /* A target, but not one for this machine's GPU (an older arch
         * only): what a runtime here says. */
        printf("target override: %s=%s cannot be used here (runtimes on this GPU refuse "
               "it): %s\n", env, t, foxjit_last_error());
        return -1;
    } else {
        printf("target override: %s=%s (a testing aid): runtimes plan, compile and cache as "
               "for that arch, as PTX the driver compiles for the GPU present\n",
               env, t);
    }
    return 0;
}

/* Creates a runtime on device 0 and prepares the default column sums. */
static void probe(const ft_cuda *cu, const char *cache_dir)
{
    CUdevice dev;
    CUcontext ctx;
    if (cu->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cu->cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cu->cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        printf("probe: cannot make a context on device 0\n");
        return;
    }
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.cache_dir = cache_dir;
    /* A failure here is the create's below, said there. */
    (void)fj_tk_driver_preload();
    double t0 = now_ms();
    foxjit_runtime *rt;
    if (foxjit_runtime_create(&p, &rt) != FOXJIT_OK) {
        printf("probe: foxjit_runtime_create failed: %s\n", foxjit_last_error());
        return;
    }
    double t1 = now_ms();
    fj_tk_manifest *m;
    char why[256];
    int prepared = 0, failed = 0;
    if (fj_tk_manifest_parse(fj_tk_default_manifest(), &m, why, sizeof why) == 0) {
        for (size_t i = 0; i < fj_tk_manifest_count(m); i++) {
            const int64_t *v = fj_tk_manifest_values(m, i);
            if (strcmp(fj_tk_manifest_op(m, i), "column_sum"))
                continue;
            if (foxjit_column_sum_prepare(rt, v[0], v[1]) == FOXJIT_OK) {
                prepared++;
            } else {
                failed++;
                printf("probe: prepare failed: %s\n", foxjit_last_error());
            }
        }
        fj_tk_manifest_free(m);
    }
    double t2 = now_ms();
    char name[128] = "";
    cu->cuDeviceGetName(name, sizeof name, dev);
    fj_tk_plan plan;
    fj_tk_runtime_plan(rt, name, &plan);
    printf("probe (runtime on device 0, arch %s: %s; %d SMs, %d KiB shared memory per block, "
           "L2 %d MiB, clusters %s):\n", foxjit_runtime_arch(rt), plan.label, plan.sm_count,
           plan.smem_per_block_optin >> 10, plan.l2_bytes >> 20, plan.clusters ? "yes" : "no");
    printf("  runtime created in %.2f ms; %d default column-sum shapes prepared in %.2f ms%s\n",
           t1 - t0, prepared, t2 - t1, failed ? " (some failed)" : "");
    foxjit_counters k;
    foxjit_runtime_get_counters(rt, &k);
    print_counters(&k);
    foxjit_runtime_destroy(&rt);
    cu->cuDevicePrimaryCtxRelease(dev);
}

int cmd_info(int argc, char **argv)
{
    const char *cache_dir = NULL;
    int no_probe = 0;
    static const struct option opts[] = {{"cache-dir", required_argument, NULL, 'c'},
                                         {"no-probe", no_argument, NULL, 'n'},
                                         {NULL, 0, NULL, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'c') {
            cache_dir = optarg;
            if (cli_check_cache_dir("info", optarg))
                return 2;
        } else if (c == 'n')
            no_probe = 1;
        else {
            fputs(info_usage, stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "fox-jit info: unexpected argument '%s'\n%s", argv[optind], info_usage);
        return 2;
    }
    printf("fox-jit %s (cache entry format 1, sources %s)\n", foxjit_version(),
           fj_tk_sources_hash_hex());
    fj_tk_toolchain tc;
    int toolchain_rc = 0;
    if (fj_tk_toolchain_get(&tc) == FOXJIT_OK) {
        printf("NVRTC %d.%d (%s); archs:", tc.nvrtc_major, tc.nvrtc_minor, tc.nvrtc_library);
        for (int i = 0; i < tc.num_archs; i++)
            printf(" sm_%d", tc.archs[i]);
        printf("\n");
        if (tc.cccl_version)
            printf("CCCL %d.%d.%d (%s)\n", tc.cccl_version / 1000000,
                   tc.cccl_version / 1000 % 1000, tc.cccl_version % 1000, tc.cccl_include);
        else
            printf("CCCL: not found (kernels built on CUB cannot compile; set "
                   "FOXJIT_CCCL_INCLUDE)\n");
    } else {
        /* A toolchain the user pointed at wrongly is a failure to report;
         * one simply not installed is the machine's state. */
        printf("NVRTC and CCCL: %s\n", foxjit_last_error());
        toolchain_rc = env_set("FOXJIT_CCCL_INCLUDE") || env_set("FOXJIT_NVRTC_LIBRARY");
    }
    static ft_cuda driver;
    const ft_cuda *cu = &driver;
    char no_driver[512];
    int gpus = 0;
    if (ft_cuda_load(&driver, no_driver, sizeof no_driver) == 0) {
        printf("CUDA driver API %d.%d (%s)\n", cu->driver_version / 1000,
               cu->driver_version % 1000 / 10, cu->library);
        cu->cuDeviceGetCount(&gpus);
        for (int i = 0; i < gpus; i++) {
            CUdevice d;
            char name[128] = "";
            int major = 0, minor = 0, sms = 0;
            size_t mem = 0;
            cu->cuDeviceGet(&d, i);
            cu->cuDeviceGetName(name, sizeof name, d);
            cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
            cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
            cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
            cu->cuDeviceTotalMem(&mem, d);
            printf("GPU %d: %s, sm_%d%d, %d SMs, %.1f GiB\n", i, name, major, minor, sms,
                   (double)mem / (1 << 30));
        }
    } else {
        printf("CUDA driver: %s\n", no_driver);
    }
    /* Everything is printed; what the user configured and cannot work
     * (the override, the cache directory) makes the exit status 1. */
    int rc = print_target_override() || toolchain_rc ? 1 : 0;
    fj_tk_cache *cache = NULL;
    char where[4096];
    if (fj_tk_cache_not_created(cache_dir, where, sizeof where))
        printf("cache: %s does not exist yet (the first compile or `fox-jit warm` creates "
               "it)\n", where);
    else if (!(cache = cli_open_cache(cache_dir, FJ_TK_CACHE_INSPECT)))
        rc = 1;
    if (cache) {
        sizes s = {0};
        fj_tk_cache_walk(cache, 0, add_size, &s);
        printf("cache: %s (%ld entries, %llu bytes, cap %llu bytes)\n", fj_tk_cache_dir(cache),
               s.entries, s.bytes, (unsigned long long)fj_tk_cache_max_bytes(cache));
        for (int i = 0; i < fj_tk_cache_layer_count(cache); i++)
            printf("read-only layer: %s\n", fj_tk_cache_layer(cache, i));
        fj_tk_cache_close(cache);
    }
    if (gpus > 0 && !no_probe && !rc)
        probe(cu, cache_dir);
    return rc;
}
