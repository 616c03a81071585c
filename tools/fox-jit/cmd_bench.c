/* fox-jit bench: runs the bench groups on device 0. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench/bench.h"
#include "cli.h"
#include "toolkit.h"

const char bench_usage[] =
    "usage: fox-jit bench [GROUP...] [--json FILE] [--samples N] [--quick] [--cache-dir DIR]\n\n"
    "Times fox-jit's kernels on GPU 0 with CUDA events: warm-up, then the median of N samples\n"
    "(default 51), each a batch of back-to-back calls over rotating input buffers larger than\n"
    "L2 together. Each row shows microseconds per call, GB/s, the time relative to a\n"
    "device-to-device copy of the same input bytes measured in the same run (the bandwidth\n"
    "roofline), and the speed-up over the baselines. Groups (default: all):\n"
#define BENCH_HELP(name, help) "  " #name ": " help "\n"
    BENCH_GROUPS(BENCH_HELP)
#undef BENCH_HELP
    "\n  --json FILE   also write the rows as JSON\n"
    "  --samples N   timed samples per figure (median reported)\n"
    "  --quick       fewer samples and shapes (smoke test)\n"
    "  --target ARCH plan and compile as for an older arch, e.g. compute_89 (sets\n"
    "                FOXJIT_TARGET, a testing aid); rows say \"sm_89 plan on <GPU>\"\n";

typedef struct group {
    const char *name;
    int (*run)(bench_ctx *);
} group;

static const group groups[] = {
#define BENCH_ENTRY(name, help) {#name, bench_##name},
    BENCH_GROUPS(BENCH_ENTRY)
#undef BENCH_ENTRY
};
static const size_t n_groups = sizeof groups / sizeof groups[0];

int cmd_bench(int argc, char **argv)
{
    const char *json_path = NULL, *cache_dir = NULL;
    bench_ctx b;
    memset(&b, 0, sizeof b);
    b.samples = 51;
    b.warmup = 5;
    static const struct option opts[] = {{"json", required_argument, NULL, 'j'},
                                         {"samples", required_argument, NULL, 's'},
                                         {"quick", no_argument, NULL, 'q'},
                                         {"cache-dir", required_argument, NULL, 'c'},
                                         {"target", required_argument, NULL, 't'},
                                         {NULL, 0, NULL, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json_path = optarg; break;
        case 's': b.samples = atoi(optarg); break;
        case 'q': b.quick = 1; break;
        case 'c':
            cache_dir = optarg;
            if (cli_check_cache_dir("bench", optarg))
                return 2;
            break;
        case 't':
            /* Through the environment, so that the processes the jit group
             * starts plan for the same arch. */
            setenv(FJ_TARGET_ENV, optarg, 1);
            break;
        default: fputs(bench_usage, stderr); return 2;
        }
    }
    if (b.samples < 1) {
        fprintf(stderr, "fox-jit bench: --samples must be at least 1\n");
        return 2;
    }
    if (b.quick && b.samples > 11)
        b.samples = 11;
    int selected[64] = {0}, any = 0;
    for (int i = optind; i < argc; i++) {
        int matched = 0;
        for (size_t g = 0; g < n_groups; g++)
            if (!strcmp(argv[i], groups[g].name) ||
                (!strcmp(argv[i], "all") && !strstr(groups[g].name, "sweep")))
                selected[g] = 1, any = matched = 1;
        if (!matched) {
            fprintf(stderr, "fox-jit bench: unknown group '%s'\n%s", argv[i], bench_usage);
            return 2;
        }
    }
    if (!any)
        for (size_t g = 0; g < n_groups; g++)
            selected[g] = strstr(groups[g].name, "sweep") == NULL; /* sweeps on request */

    if (fj_cuda_get(&b.cu) != FOXJIT_OK) {
        fprintf(stderr, "fox-jit bench needs a GPU: %s\n", foxjit_last_error());
        return 1;
    }
    int count = 0;
    if (b.cu->cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1 ||
        b.cu->cuDeviceGet(&b.device, 0) != CUDA_SUCCESS ||
        b.cu->cuDevicePrimaryCtxRetain(&b.ctx, b.device) != CUDA_SUCCESS ||
        b.cu->cuCtxSetCurrent(b.ctx) != CUDA_SUCCESS ||
        b.cu->cuStreamCreate(&b.stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        fprintf(stderr, "fox-jit bench needs a GPU: no usable CUDA device 0\n");
        return 1;
    }
    b.cu->cuDeviceGetName(b.device_name, sizeof b.device_name, b.device);
    b.cu->cuDeviceGetAttribute(&b.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, b.device);
    int l2 = 0;
    b.cu->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, b.device);
    b.l2_bytes = (size_t)l2;
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.cache_dir = cache_dir;
    if (foxjit_runtime_create(&p, &b.rt) != FOXJIT_OK) {
        fprintf(stderr, "fox-jit bench: %s\n", foxjit_last_error());
        return 1;
    }
    fj_plan_label(&b.rt->facts, b.device_name, b.plan, sizeof b.plan);
    b.plan_overridden = b.rt->facts.overridden;
    if (json_path) {
        b.json = fopen(json_path, "w");
        if (!b.json) {
            perror(json_path);
            return 1;
        }
        time_t now = time(NULL);
        char when[64];
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        fprintf(b.json, "{\"fox_jit\": \"%s\", \"device\": \"%s\", \"arch\": \"%s\", "
                "\"plan\": \"%s\", \"sms\": %d, \"samples\": %d, \"date\": \"%s\", "
                "\"rows\": [", foxjit_version(), b.device_name, foxjit_runtime_arch(b.rt), b.plan,
                b.sm_count, b.samples, when);
    }
    printf("fox-jit bench on %s (%s, %d SMs, L2 %zu MiB): median of %d samples after %d "
           "warm-up\n", b.device_name, foxjit_runtime_arch(b.rt), b.sm_count, b.l2_bytes >> 20,
           b.samples, b.warmup);
    if (b.plan_overridden)
        printf("target override %s: every row below is the %s, as PTX the driver compiled\n",
               foxjit_runtime_arch(b.rt), b.plan);
    int failed = 0;
    for (size_t g = 0; g < n_groups; g++)
        if (selected[g] && groups[g].run(&b) != 0) {
            fprintf(stderr, "fox-jit bench: group %s failed\n", groups[g].name);
            failed = 1;
        }
    if (b.json) {
        fprintf(b.json, "\n]}\n");
        fclose(b.json);
    }
    foxjit_runtime_destroy(&b.rt);
    b.cu->cuStreamDestroy(b.stream);
    b.cu->cuDevicePrimaryCtxRelease(b.device);
    return failed;
}

/* Hidden verb used by the jit bench group: time runtime creation and the
 * loading of every default column-sum shape in a fresh process. Prints
 * "create_ms load_ms compiles disk_hits". */
int cmd_jit_probe(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const fj_cuda *cu;
    CUdevice dev;
    CUcontext ctx;
    if (fj_cuda_get(&cu) != FOXJIT_OK || cu->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cu->cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
        cu->cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "__jit-probe: no GPU\n");
        return 1;
    }
    cu->cuCtxSynchronize();
    struct timespec a, m, z;
    foxjit_runtime_params p;
    foxjit_runtime_default_params(&p);
    p.cache_dir = argv[1];
    foxjit_runtime *rt;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (foxjit_runtime_create(&p, &rt) != FOXJIT_OK) {
        fprintf(stderr, "__jit-probe: %s\n", foxjit_last_error());
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &m);
    fj_manifest_item *items;
    size_t n;
    char why[256];
    if (fj_manifest_parse(fj_default_manifest(), &items, &n, why, sizeof why) != 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(items[i].op->name, "column_sum") &&
            foxjit_column_sum_prepare(rt, items[i].values[0], items[i].values[1]) != FOXJIT_OK) {
            fprintf(stderr, "__jit-probe: %s\n", foxjit_last_error());
            return 1;
        }
    clock_gettime(CLOCK_MONOTONIC, &z);
    free(items);
    foxjit_counters k;
    foxjit_runtime_get_counters(rt, &k);
    double create_ms = (double)(m.tv_sec - a.tv_sec) * 1e3 + (double)(m.tv_nsec - a.tv_nsec) / 1e6;
    double load_ms = (double)(z.tv_sec - m.tv_sec) * 1e3 + (double)(z.tv_nsec - m.tv_nsec) / 1e6;
    printf("%.3f %.3f %llu %llu\n", create_ms, load_ms, (unsigned long long)k.compiles,
           (unsigned long long)k.disk_hits);
    foxjit_runtime_destroy(&rt);
    return 0;
}
