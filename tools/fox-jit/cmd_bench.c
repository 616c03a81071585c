/* fox-jit bench: runs the bench groups on device 0. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../bench/bench.h"
#include "cli.h"
#include "driver.h"
#include "precision_name.h"
#include "toolkit.h"

/* The groups in their order: BENCH_FIRST ones, each op group (op list
 * order) followed by the groups placed after that op, then BENCH_LAST ones.
 * Built once, at the first call of bench_groups(). */
typedef struct other_group {
    const char *after;
    bench_group g;
} other_group;

static const other_group others[] = {
#define BENCH_OTHER(name, after, help) {after, {#name, help, bench_##name}},
    BENCH_OTHER_GROUPS(BENCH_OTHER)
#undef BENCH_OTHER
};
#define N_OTHERS (sizeof others / sizeof others[0])

typedef struct op_group {
    const char *op;
    const bench_group *g;
} op_group;

/* A trailing empty row keeps the array nonempty when no op has a bench. */
static const op_group op_groups[] = {
#define BENCH_OP_ROW(op) {#op, &bench_group_##op},
    BENCH_OPS(BENCH_OP_ROW)
#undef BENCH_OP_ROW
    {NULL, NULL},
};

#define MAX_GROUPS 64
static const bench_group *groups[MAX_GROUPS];
static size_t n_groups;

static void add_after(const char *after)
{
    for (size_t i = 0; i < N_OTHERS; i++)
        if (!strcmp(others[i].after, after) && n_groups < MAX_GROUPS)
            groups[n_groups++] = &others[i].g;
}

/* 0, or -1 after saying which group has no place (its `after` op has no
 * bench group) or that there are more groups than MAX_GROUPS. */
static int bench_groups(void)
{
    if (n_groups)
        return 0;
    add_after(BENCH_FIRST);
    size_t n_ops = 0;
    for (const op_group *o = op_groups; o->op; o++, n_ops++) {
        if (n_groups < MAX_GROUPS)
            groups[n_groups++] = o->g;
        add_after(o->op);
    }
    add_after(BENCH_LAST);
    if (n_groups == N_OTHERS + n_ops)
        return 0;
    for (size_t i = 0; i < N_OTHERS; i++) {
        int placed = 0;
        for (size_t g = 0; g < n_groups; g++)
            placed |= groups[g] == &others[i].g;
        if (!placed)
            fprintf(stderr, "fox-jit bench: group %s goes after op %s, which has no bench group "
                    "(ops/%s/bench.c); change its place in BENCH_OTHER_GROUPS "
                    "(tools/bench/bench.h)\n", others[i].g.name, others[i].after,
                    others[i].after);
    }
    if (n_groups == MAX_GROUPS)
        fprintf(stderr, "fox-jit bench: more than %d groups; raise MAX_GROUPS in "
                "tools/fox-jit/cmd_bench.c\n", MAX_GROUPS);
    n_groups = 0;
    return -1;
}

void bench_print_usage(FILE *f)
{
    fputs("usage: fox-jit bench [GROUP...] [--json FILE] [--samples N] [--quick] "
          "[--target ARCH]\n"
          "                     [--precision float32|tf32] [--cache-dir DIR]\n\n"
          "Times fox-jit's kernels on GPU 0 with CUDA events: warm-up, then the median of N "
          "samples\n"
          "(default 51), each a batch of back-to-back calls over rotating input buffers larger "
          "than\n"
          "L2 together. Each row shows microseconds per call, GB/s, the time relative to a\n"
          "device-to-device copy of the same input bytes measured in the same run (the "
          "bandwidth\n"
          "roofline), and the speed-up over the baselines. Groups (default: all):\n", f);
    if (bench_groups() == 0)
        for (size_t g = 0; g < n_groups; g++)
            fprintf(f, "  %s: %s\n", groups[g]->name, groups[g]->help);
    fputs("\n  --json FILE   also write the rows as JSON\n"
          "  --samples N   timed samples per figure (median reported)\n"
          "  --quick       fewer shapes, and 11 samples unless --samples is given (smoke\n"
          "                test)\n"
          "  --target ARCH plan and compile as for an older arch, e.g. compute_89 (sets\n"
          "                FOXJIT_TARGET, a testing aid); rows say \"sm_89 plan on <GPU>\"\n"
          "  --precision P the products' precision (foxjit_set_precision): float32 (the\n"
          "                default, 3xTF32) or tf32; it changes the heads' and the CfC's\n"
          "                sequence kernels: kloop's sequence rows and steps\n"
          "  --cache-dir DIR  kernel cache (default $FOXJIT_CACHE_DIR, $XDG_CACHE_HOME/foxjit,\n"
          "                ~/.cache/foxjit)\n"
          "\nExit status: 0, 1 when there is no GPU, a runtime cannot be made or a group\n"
          "failed (the others still run), 2 on bad usage.\n", f);
}

/* Whether "all" (and no group named) runs the group: not the developer
 * groups, whose help ends "(not in all)". */
static int in_all(const bench_group *g)
{
    return strstr(g->help, "(not in all)") == NULL;
}

int cmd_bench(int argc, char **argv)
{
    const char *json_path = NULL, *cache_dir = NULL;
    foxjit_precision precision = FOXJIT_PRECISION_FLOAT32;
    bench_ctx b;
    memset(&b, 0, sizeof b);
    b.samples = 51;
    int samples_given = 0;
    b.warmup = 5;
    static const struct option opts[] = {{"json", required_argument, NULL, 'j'},
                                         {"samples", required_argument, NULL, 's'},
                                         {"quick", no_argument, NULL, 'q'},
                                         {"cache-dir", required_argument, NULL, 'c'},
                                         {"target", required_argument, NULL, 't'},
                                         {"precision", required_argument, NULL, 'p'},
                                         {NULL, 0, NULL, 0}};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'j': json_path = optarg; break;
        case 's': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 100000) {
                fprintf(stderr, "fox-jit bench: --samples wants a whole number from 1 to "
                        "100000, not '%s'\n", optarg);
                return 2;
            }
            b.samples = (int)v;
            samples_given = 1;
            break;
        }
        case 'q': b.quick = 1; break;
        case 'p':
            if (precision_parse(optarg, &precision)) {
                fprintf(stderr, "fox-jit bench: --precision wants float32 or tf32, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'c':
            cache_dir = optarg;
            if (cli_check_cache_dir("bench", optarg))
                return 2;
            break;
        case 't':
            /* Through the environment, so that the processes the jit group
             * starts plan for the same arch. */
            setenv(fj_tk_target_env(), optarg, 1);
            break;
        default: bench_print_usage(stderr); return 2;
        }
    }
    if (b.samples < 1) {
        fprintf(stderr, "fox-jit bench: --samples must be at least 1\n");
        return 2;
    }
    /* --quick's 11 samples unless --samples says otherwise. */
    if (b.quick && !samples_given && b.samples > 11)
        b.samples = 11;
    if (bench_groups() != 0)
        return 1;
    int selected[MAX_GROUPS] = {0}, any = 0;
    for (int i = optind; i < argc; i++) {
        int matched = 0;
        for (size_t g = 0; g < n_groups; g++)
            if (!strcmp(argv[i], groups[g]->name) ||
                (!strcmp(argv[i], "all") && in_all(groups[g])))
                selected[g] = 1, any = matched = 1;
        if (!matched) {
            fprintf(stderr, "fox-jit bench: unknown group '%s'\n", argv[i]);
            bench_print_usage(stderr);
            return 2;
        }
    }
    if (!any)
        for (size_t g = 0; g < n_groups; g++)
            selected[g] = in_all(groups[g]); /* the developer groups on request */

    static ft_cuda cu;
    char why[512];
    if (ft_cuda_load(&cu, why, sizeof why) != 0) {
        fprintf(stderr, "fox-jit bench needs a GPU: %s\n", why);
        return 1;
    }
    b.cu = &cu;
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
    if (foxjit_runtime_create(&p, &b.rt) != FOXJIT_OK ||
        foxjit_set_precision(b.rt, precision) != FOXJIT_OK) {
        fprintf(stderr, "fox-jit bench: %s\n", foxjit_last_error());
        return 1;
    }
    fj_tk_plan plan;
    fj_tk_runtime_plan(b.rt, b.device_name, &plan);
    snprintf(b.plan, sizeof b.plan, "%s", plan.label);
    b.plan_overridden = plan.overridden;
    if (json_path) {
        b.json = bench_json_open(json_path);
        if (!b.json)
            return 1;   /* bench_json_open said why */
        time_t now = time(NULL);
        char when[64];
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
        fprintf(b.json, "{\"fox_jit\": \"%s\", \"device\": \"%s\", \"arch\": \"%s\", "
                "\"plan\": \"%s\", \"precision\": \"%s\", \"sms\": %d, \"samples\": %d, "
                "\"date\": \"%s\", \"rows\": [", foxjit_version(), b.device_name,
                foxjit_runtime_arch(b.rt), b.plan, precision_name(precision), b.sm_count,
                b.samples, when);
    }
    printf("fox-jit bench on %s (%s, %d SMs, L2 %zu MiB): median of %d samples after %d "
           "warm-up\n", b.device_name, foxjit_runtime_arch(b.rt), b.sm_count, b.l2_bytes >> 20,
           b.samples, b.warmup);
    if (precision != FOXJIT_PRECISION_FLOAT32)
        printf("precision %s: the heads' and the CfC's products in one TF32 product, not "
               "3xTF32\n", precision_name(precision));
    if (b.plan_overridden)
        printf("target override %s: every row below is the %s, as PTX the driver compiled\n",
               foxjit_runtime_arch(b.rt), b.plan);
    int failed = 0;
    for (size_t g = 0; g < n_groups; g++)
        if (selected[g] && groups[g]->run(&b) != 0) {
            fprintf(stderr, "fox-jit bench: group %s failed\n", groups[g]->name);
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
    static ft_cuda driver;
    const ft_cuda *cu = &driver;
    char no_driver[512];
    CUdevice dev;
    CUcontext ctx;
    if (ft_cuda_load(&driver, no_driver, sizeof no_driver) != 0 ||
        fj_tk_driver_preload() != FOXJIT_OK || cu->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
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
    fj_tk_manifest *man;
    char why[256];
    if (fj_tk_manifest_parse(fj_tk_default_manifest(), &man, why, sizeof why) != 0)
        return 1;
    for (size_t i = 0; i < fj_tk_manifest_count(man); i++) {
        const int64_t *v = fj_tk_manifest_values(man, i);
        if (!strcmp(fj_tk_manifest_op(man, i), "column_sum") &&
            foxjit_column_sum_prepare(rt, v[0], v[1]) != FOXJIT_OK) {
            fprintf(stderr, "__jit-probe: %s\n", foxjit_last_error());
            return 1;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &z);
    fj_tk_manifest_free(man);
    foxjit_counters k;
    foxjit_runtime_get_counters(rt, &k);
    double create_ms = (double)(m.tv_sec - a.tv_sec) * 1e3 + (double)(m.tv_nsec - a.tv_nsec) / 1e6;
    double load_ms = (double)(z.tv_sec - m.tv_sec) * 1e3 + (double)(z.tv_nsec - m.tv_nsec) / 1e6;
    printf("%.3f %.3f %llu %llu\n", create_ms, load_ms, (unsigned long long)k.compiles,
           (unsigned long long)k.disk_hits);
    foxjit_runtime_destroy(&rt);
    return 0;
}
