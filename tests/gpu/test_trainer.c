/* gpu suite: the end-to-end trainer (tools/fox-train).
 *
 * In process, through the same model code fox-train runs (model.c, driven
 * by the foxjit_api table): the full-model gradient at B = 2, K = 4 against
 * the float64 reference model (tests/ref/perception_ref.c) and against
 * central finite differences of its float64 forward; the sequence and
 * per-step paths against each other, and the split column sums against
 * reduce_axis0 (a table cut short to ABI 2.6), the split form's
 * workspaces left at zero after a step.
 *
 * As a trainer runs it (the fox-train binary, which only dlopens the
 * library): the acceptance gate (constant-direction signal, B = 32: the
 * loss falls from its start to under 0.1 within 200 steps), eager and
 * graph-replayed training giving bitwise identical loss curves and
 * parameters over 50 steps (also at --precision tf32, whose losses are not
 * float32's and whose checkpoint resumes only at tf32), a resumed run
 * continuing bit for bit, and a run
 * longer than the loss ring (losslog.h) reported only when the ring fills
 * writing the curve of a run that reports every 10 steps, and --bench's
 * step and loop figures.
 *
 * Quick mode (FOXJIT_TEST_QUICK=1) keeps every run and check, at the same
 * batch and K (so the same kernels, reducer plans and cluster splits), with
 * fewer steps and a smaller held-out set (the counts below). The curves are
 * deterministic (seed 1), so a quick run is the start of the full one: the
 * gate's loss goes under 0.1 at step 18 on the host emulation of
 * tests/unit/test_train_model_host.c (float64 ops), well inside 40 steps.
 *
 * argv[1]: the fox-train binary, argv[2]: the built libfoxjit.so. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data.h"
#include "driver.h"
#include "gpu_harness.h"
#include "losslog.h"
#include "model.h"
#include "params.h"
#include "perception_ref.h"

static const char *fox_train, *library;
static char tmpdir[] = "/tmp/fox-train-gpu-XXXXXX";
static int have_tmpdir;

/* Made on first use (a run without a GPU makes none), removed by main. */
static void ensure_tmpdir(void)
{
    if (!have_tmpdir && !mkdtemp(tmpdir))
        fail_msg("mkdtemp %s failed", tmpdir);
    have_tmpdir = 1;
}

/* ---- gradient at a tiny size -------------------------------------------------- */

typedef struct fd_case {
    pr_model_dims dims;
    double *param[PR_PARAM_COUNT];
    double *x, *dt, *labels;
    pr_model_acts acts;
} fd_case;

/* The float64 model loss at the current parameters. */
static double ref_loss(fd_case *c)
{
    pr_model_forward(&c->dims, c->param, c->x, c->dt, &c->acts);
    return pr_model_loss(&c->dims, c->acts.z, c->labels, NULL);
}

static double max_abs(const double *v, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(v[i]));
    return m;
}

static void gradient_matches_finite_differences(ft_path path)
{
    const ft_dims d = {2, 4, FT_DEFAULT_F, FT_DEFAULT_D, FT_DEFAULT_E, FT_DEFAULT_H};
    const uint64_t seed = gh_seed();
    ft_cuda cu;
    char why[1024];
    if (ft_cuda_load(&cu, why, sizeof why))
        fail_msg("%s", why);
    const foxjit_api *api = foxjit_get_api(FOXJIT_ABI_MAJOR);
    ft_model m;
    if (ft_model_alloc(&m, api, gh.rt, &cu, &d, path))
        fail_msg("%s", m.why);
    if (ft_model_prepare(&m))
        fail_msg("%s", m.why);

    /* Parameters: the trainer's initialization, with the zero-initialized
     * biases and the query made nonzero so every path carries gradient. */
    size_t total = ft_param_total(&d);
    float *p = malloc(total * 4);
    ft_params_init(&d, seed, p);
    uint64_t s = seed + 1;
    for (int i = 0; i < FT_PARAM_COUNT; i++) {
        float *t = p + ft_param_offset(&d, i);
        for (size_t j = 0; j < ft_param_size(&d, i); j++) {
            if (i == FT_CFC_BIAS || i == FT_HEADS_B1 || i == FT_HEADS_B2 ||
                i == FT_HEADS_B_GATE || i == FT_HEADS_B_MAIN || i == FT_HEADS_B_SKIP ||
                i == FT_VSN_BIAS)
                t[j] = gh_uniform(&s, -0.3f, 0.3f);
            else if (i == FT_ATTN_Q)
                t[j] = gh_uniform(&s, -0.5f, 0.5f);
            else if (i == FT_CFC_TAU)
                t[j] = gh_uniform(&s, 0.5f, 4.0f);
        }
    }
    /* Two sequences of the rule data, packed as the trainer packs them. */
    ft_dataset data;
    assert_int_equal(ft_data_generate(&data, 2, d.k, d.f, d.h, FT_SIGNAL_RULE, seed,
                                      FT_STREAM_TRAIN), 0);
    const int idx[2] = {0, 1};
    float *packed = malloc(m.in_layout.floats * 4);
    ft_data_pack(&data, idx, 2, &m.in_layout, packed);

    /* GPU: one step without the update. */
    if (ft_model_set_state(&m, p, NULL, NULL, 0, gh.stream))
        fail_msg("%s", m.why);
    gh_upload(m.batch_in, packed, m.in_layout.floats * 4);
    foxjit_status st;
    if ((st = ft_model_zero(&m, gh.stream)) || (st = ft_model_forward(&m, gh.stream)) ||
        (st = ft_model_loss(&m, 1, gh.stream)) || (st = ft_model_backward(&m, gh.stream)) ||
        (st = ft_model_reduce(&m, gh.stream)))
        fail_msg("%s", m.why);
    float gpu_loss;
    float *gpu_grad = malloc(total * 4);
    gh_download(&gpu_loss, m.loss, 4);
    if (ft_model_get_grads(&m, gpu_grad, gh.stream))
        fail_msg("%s", m.why);

    /* float64 reference on the same numbers. */
    fd_case c = {.dims = {d.batch, d.k, d.f, d.d, d.e, d.h}};
    double *grad[PR_PARAM_COUNT];
    for (int i = 0; i < PR_PARAM_COUNT; i++) {
        size_t n = ft_param_size(&d, i);
        assert_int_equal(n, pr_param_size(&c.dims, i));
        c.param[i] = malloc(n * 8);
        grad[i] = malloc(n * 8);
        for (size_t j = 0; j < n; j++)
            c.param[i][j] = p[ft_param_offset(&d, i) + j];
    }
    size_t nx = (size_t)d.batch * d.k * d.f, nt = (size_t)d.batch * d.k;
    size_t nz = (size_t)(d.k + 1) * d.batch * d.h;
    c.x = malloc(nx * 8), c.dt = malloc(nt * 8), c.labels = malloc(nz * 8);
    for (size_t i = 0; i < nx; i++)
        c.x[i] = packed[m.in_layout.x + i];
    for (size_t i = 0; i < nt; i++)
        c.dt[i] = packed[m.in_layout.dt + i];
    for (size_t i = 0; i < nz; i++)
        c.labels[i] = packed[m.in_layout.labels + i];
    assert_int_equal(pr_model_acts_alloc(&c.dims, &c.acts), 1);
    double *dz = malloc(nz * 8);
    pr_model_forward(&c.dims, c.param, c.x, c.dt, &c.acts);
    double want_loss = pr_model_loss(&c.dims, c.acts.z, c.labels, dz);
    pr_model_backward(&c.dims, c.param, c.x, c.dt, &c.acts, dz, grad, NULL);
    printf("  loss: GPU %.9g, float64 %.12g\n", (double)gpu_loss, want_loss);
    gh_assert_close("model loss", &gpu_loss, &want_loss, NULL, 1, 1e-5, 1e-6);

    /* Every gradient element against the float64 chain rule, then sampled
     * elements against central differences of the float64 forward. */
    const double h = 1e-5;
    for (int i = 0; i < PR_PARAM_COUNT; i++) {
        size_t n = ft_param_size(&d, i);
        const float *g = gpu_grad + ft_param_offset(&d, i);
        double scale = max_abs(grad[i], n);
        char what[96];
        snprintf(what, sizeof what, "gradient of %s vs float64 backward", ft_param_name(i));
        gh_assert_close(what, g, grad[i], NULL, n, 1e-3, 2e-4 * scale + 1e-9);

        size_t picks[6] = {0, n - 1, n / 2, n / 3, n / 5, n / 7};
        double worst = 0;
        for (int k = 0; k < 6; k++) {
            size_t j = picks[k];
            double keep = c.param[i][j];
            c.param[i][j] = keep + h;
            double lp = ref_loss(&c);
            c.param[i][j] = keep - h;
            double lm = ref_loss(&c);
            c.param[i][j] = keep;
            double fd = (lp - lm) / (2 * h);
            double err = fabs((double)g[j] - fd), tol = 2e-3 * fabs(fd) + 3e-4 * scale + 1e-8;
            worst = fmax(worst, err / tol);
            if (!(err <= tol))
                fail_msg("%s[%zu]: GPU gradient %.9g, central difference %.9g (float64 "
                         "backward %.9g), error %.3g > %.3g", ft_param_name(i), j,
                         (double)g[j], fd, grad[i][j], err, tol);
        }
        printf("  %-13s max |grad| %.3e, finite differences within %.2f of tolerance\n",
               ft_param_name(i), scale, worst);
    }

    for (int i = 0; i < PR_PARAM_COUNT; i++)
        free(c.param[i]), free(grad[i]);
    free(c.x), free(c.dt), free(c.labels), free(dz);
    pr_model_acts_free(&c.acts);
    free(p), free(packed), free(gpu_grad);
    ft_data_free(&data);
    ft_model_free(&m);
}

static void test_gradient_matches_finite_differences(void **state)
{
    (void)state;
    printf("  sequence path\n");
    gradient_matches_finite_differences(FT_PATH_SEQUENCE);
}

static void test_per_step_gradient_matches_finite_differences(void **state)
{
    (void)state;
    printf("  per-step path\n");
    gradient_matches_finite_differences(FT_PATH_PER_STEP);
}

/* The split column sums' workspaces after a step: every counter (the
 * first 512 bytes) back at zero, as each call must leave them; then the
 * step's column sums again on the same workspaces give the same bits. */
static void check_split_sums(ft_model *m, const float *grads)
{
    const ft_dims *d = &m->dims;
    unsigned char counters[512];
    for (int i = 0; i <= FT_PARAM_COUNT; i++) {
        const CUdeviceptr w = i < FT_PARAM_COUNT ? m->colsum_work[i] : m->heads_sum_work;
        const size_t bytes = i < FT_PARAM_COUNT ? m->colsum_work_bytes[i]
                                                : m->heads_sum_work_bytes;
        if (!w)
            continue;
        assert_true(bytes >= sizeof counters);
        gh_download(counters, w, sizeof counters);
        for (size_t b = 0; b < sizeof counters; b++)
            if (counters[b])
                fail_msg("%s: the workspace of the column sum of %s has byte %zu = %u after "
                         "the step: a call left its counters not zero", ft_path_name(m->path),
                         i < FT_PARAM_COUNT ? ft_param_name(i) : "the heads' stack", b,
                         counters[b]);
    }
    if ((m->path == FT_PATH_SEQUENCE && ft_model_op(m, FT_OP_HEADS_SUM, 0, gh.stream)) ||
        ft_model_reduce(m, gh.stream))
        fail_msg("%s: %s", ft_path_name(m->path), m->why);
    float *again = malloc(ft_param_total(d) * 4);
    assert_non_null(again);
    if (ft_model_get_grads(m, again, gh.stream))
        fail_msg("%s", m->why);
    if (memcmp(again, grads, ft_param_total(d) * 4))
        fail_msg("%s: the column sums run again on their workspaces gave other bits",
                 ft_path_name(m->path));
    free(again);
}

/* Loss and gradients of one step (no update) of `path` at dims d from the
 * trainer's initial parameters and its first batch, through the table
 * `api` (the library's, or one cut short to an older ABI). */
static void one_step(const ft_dims *d, ft_path path, const foxjit_api *api, const ft_cuda *cu,
                     const float *params, const ft_dataset *data, float *loss, float *grads)
{
    ft_model m;
    if (ft_model_alloc(&m, api, gh.rt, cu, d, path) ||
        ft_model_prepare(&m) || ft_model_set_state(&m, params, NULL, NULL, 0, gh.stream))
        fail_msg("%s: %s", ft_path_name(path), m.why);
    int *idx = malloc((size_t)d->batch * sizeof *idx);
    assert_non_null(idx);
    for (int i = 0; i < d->batch; i++)
        idx[i] = i;
    float *packed = malloc(m.in_layout.floats * 4);
    ft_data_pack(data, idx, d->batch, &m.in_layout, packed);
    free(idx);
    gh_upload(m.batch_in, packed, m.in_layout.floats * 4);
    if (ft_model_zero(&m, gh.stream) || ft_model_forward(&m, gh.stream) ||
        ft_model_loss(&m, 1, gh.stream) || ft_model_backward(&m, gh.stream) ||
        ft_model_reduce(&m, gh.stream) || ft_model_get_grads(&m, grads, gh.stream))
        fail_msg("%s: %s", ft_path_name(path), m.why);
    gh_download(loss, m.loss, 4);
    if (m.colsum_split)
        check_split_sums(&m, grads);
    free(packed);
    ft_model_free(&m);
}

/* Gradients of the same step in two ways agree within float32 rounding:
 * sums of up to B*K*E terms in two orders, whose terms cancel, so they
 * can be larger than the result: 1e-4 of the tensor's largest entry (a
 * wrong term or index is off by far more). */
static void grads_agree(const ft_dims *d, const char *a_name, const float *ga,
                        const char *b_name, const float *gb)
{
    for (int i = 0; i < FT_PARAM_COUNT; i++) {
        const float *a = ga + ft_param_offset(d, i), *b = gb + ft_param_offset(d, i);
        size_t n = ft_param_size(d, i);
        double scale = 0, worst = 0;
        for (size_t j = 0; j < n; j++)
            scale = fmax(scale, fabs(b[j]));
        const double tol = 1e-4 * scale + 1e-12;
        for (size_t j = 0; j < n; j++) {
            double err = fabs((double)a[j] - b[j]);
            worst = fmax(worst, err / tol);
            if (!(err <= tol))
                fail_msg("%s[%zu]: %s %.9g, %s %.9g (max |g| %.3g)", ft_param_name(i), j,
                         a_name, (double)a[j], b_name, (double)b[j], scale);
        }
        printf("  %-13s max |g| %.3e, within %.2f of tolerance\n", ft_param_name(i), scale,
               worst);
    }
}

/* The sequence path and the per-step path compute the same step: their
 * loss and gradients agree within float32 rounding on the same batch (the
 * order of the sums over (b, t) differs, so the bits may not). */
static void test_paths_agree(void **state)
{
    (void)state;
    const ft_dims d = {GH_QUICK(32, 4), GH_QUICK(64, 8), FT_DEFAULT_F, FT_DEFAULT_D,
                       FT_DEFAULT_E, FT_DEFAULT_H};
    ft_cuda cu;
    char why[1024];
    if (ft_cuda_load(&cu, why, sizeof why))
        fail_msg("%s", why);
    const uint64_t seed = gh_seed();
    size_t total = ft_param_total(&d);
    float *p = malloc(total * 4), *gs = malloc(total * 4), *gp = malloc(total * 4);
    ft_params_init(&d, seed, p);
    ft_dataset data;
    assert_int_equal(ft_data_generate(&data, d.batch, d.k, d.f, d.h, FT_SIGNAL_RULE, seed,
                                      FT_STREAM_TRAIN), 0);
    float ls, lp;
    const foxjit_api *api = foxjit_get_api(FOXJIT_ABI_MAJOR);
    one_step(&d, FT_PATH_SEQUENCE, api, &cu, p, &data, &ls, gs);
    one_step(&d, FT_PATH_PER_STEP, api, &cu, p, &data, &lp, gp);
    printf("  loss: sequence %.9g, per-step %.9g\n", (double)ls, (double)lp);
    assert_true(fabsf(ls - lp) <= 1e-6f * fabsf(lp));
    grads_agree(&d, "sequence path", gs, "per-step path", gp);
    ft_data_free(&data);
    free(p), free(gs), free(gp);
}

/* fox-train's column sums: the split form (foxjit_column_sum_split, which
 * the library's table has) and, through the same table cut short before
 * it (a library of ABI 2.6), reduce_axis0. On both paths the loss is the
 * same bits (the forward has no column sum) and the gradients agree
 * within float32 rounding (the sums add in other orders: not the same
 * bits); the split form's workspaces are left at zero and serve the sums
 * again with the same bits (check_split_sums). B = 64, quick mode too: the
 * split form sums 64 rows of the attention query's 128 columns in two
 * blocks that meet at a counter of the workspace (colsum/policy.h:
 * fj_colsum_split_plan), and the per-step path's narrow tensors too; at
 * B = 32 the sequence path's sums are one block a tile, which never
 * touch the counters. */
static void test_column_sum_forms_agree(void **state)
{
    (void)state;
    const ft_dims d = {64, GH_QUICK(16, 4), FT_DEFAULT_F, FT_DEFAULT_D, FT_DEFAULT_E,
                       FT_DEFAULT_H};
    ft_cuda cu;
    char why[1024];
    if (ft_cuda_load(&cu, why, sizeof why))
        fail_msg("%s", why);
    const foxjit_api *api = foxjit_get_api(FOXJIT_ABI_MAJOR);
    assert_true(ft_model_colsum_split(api));
    foxjit_api older = *api;
    older.struct_size = offsetof(foxjit_api, column_sum_workspace_size);
    older.abi_minor = 6;
    assert_false(ft_model_colsum_split(&older));
    const uint64_t seed = gh_seed();
    size_t total = ft_param_total(&d);
    float *p = malloc(total * 4), *gs = malloc(total * 4), *ga = malloc(total * 4);
    ft_params_init(&d, seed, p);
    ft_dataset data;
    assert_int_equal(ft_data_generate(&data, d.batch, d.k, d.f, d.h, FT_SIGNAL_RULE, seed,
                                      FT_STREAM_TRAIN), 0);
    static const ft_path paths[] = {FT_PATH_SEQUENCE, FT_PATH_PER_STEP};
    for (size_t i = 0; i < 2; i++) {
        float ls, la;
        printf("  %s path\n", ft_path_name(paths[i]));
        one_step(&d, paths[i], api, &cu, p, &data, &ls, gs);
        one_step(&d, paths[i], &older, &cu, p, &data, &la, ga);
        if (memcmp(&ls, &la, sizeof ls))
            fail_msg("%s: loss %.9g with the split column sums, %.9g with reduce_axis0",
                     ft_path_name(paths[i]), (double)ls, (double)la);
        grads_agree(&d, "column_sum_split", gs, "reduce_axis0", ga);
    }
    ft_data_free(&data);
    free(p), free(gs), free(ga);
}

/* ---- fox-train as a program ------------------------------------------------------ */

/* Step counts and sizes of the fox-train runs: full, quick, and the
 * racecheck level (FOXJIT_TEST_QUICK=2: the same runs and checks, 1-3
 * steps each; the gate then only asks for a falling, finite loss). */
#define RACE(quick, race) (gh_quick() > 1 ? (race) : (quick))
#define GATE_STEPS GH_QUICK(200, RACE(40, 3))
#define GATE_HELDOUT GH_QUICK(256, 64)        /* sequences: 8 or 2 batches of 32 */
#define BITWISE_STEPS GH_QUICK(50, RACE(5, 2)) /* eager vs graph, and data parallel */
#define RESUME_STEPS GH_QUICK(50, RACE(8, 3))
#define RESUME_FIRST GH_QUICK(20, RACE(3, 1))  /* one epoch of RESUME_TRAIN */
#define RESUME_TRAIN GH_QUICK(640, RACE(96, 32)) /* 20, 3 or 1 batches of 32 */

/* v as an argument string (valid for the next 15 calls). */
static const char *arg_int(int v)
{
    static char buf[16][16];
    static int next;
    char *p = buf[next++ % 16];
    snprintf(p, sizeof buf[0], "%d", v);
    return p;
}

/* Runs fox-train with the trainer's common arguments plus the given ones
 * (NULL-terminated); its output goes to <tmpdir>/<tag>.log, whose tail is
 * printed. Returns the exit status. */
static int run_trainer(const char *tag, ...)
{
    const char *cache = getenv("FOXJIT_TEST_CACHE_DIR");
    char *argv[48] = {(char *)fox_train, "--library", (char *)library, "--cache-dir",
                      (char *)(cache && *cache ? cache : gh.cache_dir)};
    int argc = 5;
    va_list ap;
    va_start(ap, tag);
    for (char *a; (a = va_arg(ap, char *)) && argc < 47;)
        argv[argc++] = a;
    va_end(ap);
    ensure_tmpdir();
    char log[512];
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, tag);
    printf("  run %s:", tag);
    for (int i = 5; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n");
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(log, "w", stdout) || dup2(fileno(stdout), 2) < 0)
            _exit(126);
        execv(fox_train, argv);
        _exit(127);
    }
    int ws;
    waitpid(pid, &ws, 0);
    int status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "tail -n 12 '%s' | sed 's/^/    | /'", log);
    if (system(cmd) != 0)
        printf("    (no log)\n");
    printf("    exit status %d\n", status);
    return status;
}

static char *path_in(const char *name)
{
    static char buf[8][512];
    static int next;
    char *p = buf[next++ % 8];
    ensure_tmpdir();
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

#define CURVE_MAX 8192
typedef struct curve {
    int n;
    int step[CURVE_MAX];
    float loss[CURVE_MAX];
    unsigned bits[CURVE_MAX];
} curve;

static void read_curve(const char *path, curve *c)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("no loss curve at %s", path);
    char line[256];
    c->n = 0;
    if (!fgets(line, sizeof line, f) || strncmp(line, "step,loss,loss_bits", 19))
        fail_msg("%s: no CSV header", path);
    while (c->n < CURVE_MAX && fgets(line, sizeof line, f))
        if (sscanf(line, "%d,%g,%x", &c->step[c->n], &c->loss[c->n], &c->bits[c->n]) == 3)
            c->n++;
    fclose(f);
}

/* Rows [a_from, a_from + n) of a and [b_from, b_from + n) of b: the same
 * steps with the same loss bits. */
static void assert_same_curve(const char *what, const curve *a, int a_from, const curve *b,
                              int b_from, int n)
{
    for (int i = 0; i < n; i++) {
        int ia = a_from + i, ib = b_from + i;
        if (ia >= a->n || ib >= b->n)
            fail_msg("%s: curve too short (%d and %d rows, need %d)", what, a->n, b->n, n);
        if (a->step[ia] != b->step[ib] || a->bits[ia] != b->bits[ib])
            fail_msg("%s: step %d has loss %.9g (0x%08x) vs step %d %.9g (0x%08x)", what,
                     a->step[ia], (double)a->loss[ia], a->bits[ia], b->step[ib],
                     (double)b->loss[ib], b->bits[ib]);
    }
    printf("  %s: %d losses bitwise equal (first %.6f, last %.6f)\n", what, n,
           (double)a->loss[a_from], (double)a->loss[a_from + n - 1]);
}

static void assert_same_file(const char *what, const char *pa, const char *pb)
{
    FILE *a = fopen(pa, "rb"), *b = fopen(pb, "rb");
    if (!a || !b)
        fail_msg("%s: missing %s", what, a ? pb : pa);
    long offset = 0;
    int ca, cb;
    do {
        ca = fgetc(a), cb = fgetc(b);
        if (ca != cb)
            fail_msg("%s: %s and %s differ at byte %ld", what, pa, pb, offset);
        offset++;
    } while (ca != EOF);
    fclose(a), fclose(b);
    printf("  %s: %ld bytes identical\n", what, offset - 1);
}

static void test_acceptance_gate(void **state)
{
    (void)state;
    const int steps = GATE_STEPS;
    assert_int_equal(run_trainer("gate", "--signal", "constant", "--batch", "32", "--steps",
                                 arg_int(steps), "--heldout-size", arg_int(GATE_HELDOUT),
                                 "--csv", path_in("gate.csv"), NULL), 0);
    curve c;
    read_curve(path_in("gate.csv"), &c);
    assert_int_equal(c.n, steps);
    int first_under = 0;
    for (int i = 0; i < c.n && !first_under; i++)
        if (c.loss[i] < 0.1f)
            first_under = c.step[i];
    static const int show[] = {1, 10, 25, 50, 100, 150, 200};
    printf("  loss:");
    for (size_t i = 0; i < sizeof show / sizeof show[0] && show[i] <= steps; i++)
        printf(" step %d %.5f;", show[i], (double)c.loss[show[i] - 1]);
    printf("\n  first step under 0.1: %d\n", first_under);
    if (!(c.loss[0] >= 0.1f))
        fail_msg("the loss starts at %.5f, already under the gate", (double)c.loss[0]);
    if (gh_quick() > 1) {  /* 3 steps: too few to reach the gate */
        if (!(c.loss[c.n - 1] < c.loss[0]))
            fail_msg("the loss did not fall in %d steps: %.5f then %.5f", steps,
                     (double)c.loss[0], (double)c.loss[c.n - 1]);
        return;
    }
    if (!first_under)
        fail_msg("the loss never went under 0.1 in %d steps (last %.5f)", steps,
                 (double)c.loss[c.n - 1]);
}

static void test_eager_and_graph_bitwise(void **state)
{
    (void)state;
    const int steps = BITWISE_STEPS;
    const char *common[] = {"--batch", "32", "--steps", arg_int(steps), "--heldout-size", "0"};
    assert_int_equal(run_trainer("eager", common[0], common[1], common[2], common[3], common[4],
                                 common[5], "--csv", path_in("eager.csv"), "--checkpoint",
                                 path_in("eager.ckpt"), NULL), 0);
    assert_int_equal(run_trainer("graph", common[0], common[1], common[2], common[3], common[4],
                                 common[5], "--graph", "--csv", path_in("graph.csv"),
                                 "--checkpoint", path_in("graph.ckpt"), NULL), 0);
    curve e, g;
    read_curve(path_in("eager.csv"), &e);
    read_curve(path_in("graph.csv"), &g);
    assert_int_equal(e.n, steps);
    assert_same_curve("eager vs graph-replayed", &e, 0, &g, 0, steps);
    char what[96];
    snprintf(what, sizeof what, "parameters and AdamW state after %d steps", steps);
    assert_same_file(what, path_in("eager.ckpt"), path_in("graph.ckpt"));
}

/* Whether the log of run `tag` (run_trainer) holds needle. */
static int log_has(const char *tag, const char *needle)
{
    char log[512], text[16384];
    snprintf(log, sizeof log, "%s/%s.log", tmpdir, tag);
    FILE *f = fopen(log, "r");
    if (!f)
        return 0;
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    return strstr(text, needle) != NULL;
}

/* --precision tf32: said in the run's header; eager and graph-replayed
 * give the same bits at it too; its checkpoint resumes only with it. The
 * losses are not float32's (on tensor cores, sm_80 and newer: the heads'
 * and the CfC's products change). */
static void test_tf32_eager_and_graph_bitwise(void **state)
{
    (void)state;
    const int steps = BITWISE_STEPS;
    const char *common[] = {"--batch", "32", "--steps", arg_int(steps), "--heldout-size", "0"};
    assert_int_equal(run_trainer("tf32-eager", common[0], common[1], common[2], common[3],
                                 common[4], common[5], "--precision", "tf32", "--csv",
                                 path_in("tf32-eager.csv"), "--checkpoint",
                                 path_in("tf32-eager.ckpt"), NULL), 0);
    if (!log_has("tf32-eager", "precision tf32"))
        fail_msg("the run's header does not say 'precision tf32'");
    assert_int_equal(run_trainer("tf32-graph", common[0], common[1], common[2], common[3],
                                 common[4], common[5], "--precision", "tf32", "--graph", "--csv",
                                 path_in("tf32-graph.csv"), "--checkpoint",
                                 path_in("tf32-graph.ckpt"), NULL), 0);
    assert_int_equal(run_trainer("f32-eager", common[0], common[1], common[2], common[3],
                                 common[4], common[5], "--csv", path_in("f32-eager.csv"), NULL),
                     0);
    if (!log_has("f32-eager", "precision float32"))
        fail_msg("the run's header does not say 'precision float32'");
    curve e, g, f;
    read_curve(path_in("tf32-eager.csv"), &e);
    read_curve(path_in("tf32-graph.csv"), &g);
    read_curve(path_in("f32-eager.csv"), &f);
    assert_int_equal(e.n, steps);
    assert_same_curve("TF32: eager vs graph-replayed", &e, 0, &g, 0, steps);
    assert_same_file("TF32: parameters and AdamW state, eager vs graph",
                     path_in("tf32-eager.ckpt"), path_in("tf32-graph.ckpt"));
    int differ = 0;
    for (int i = 0; i < steps && !differ; i++)
        differ = e.bits[i] != f.bits[i];
    const char *arch = foxjit_runtime_arch(gh.rt), *u = strchr(arch, '_');
    if (u && atoi(u + 1) >= 80 && !differ)
        fail_msg("--precision tf32 gave float32's losses bit for bit: it did not reach the "
                 "kernels");
    assert_int_equal(run_trainer("tf32-resume", "--resume", path_in("tf32-eager.ckpt"),
                                 "--steps", arg_int(steps + 1), NULL), 2);
    if (!log_has("tf32-resume", "add --precision tf32"))
        fail_msg("resuming a TF32 checkpoint without --precision tf32 does not say to add it");
}

static void test_resume_bitwise(void **state)
{
    (void)state;
    /* One run of 50 steps; one of 20 with a checkpoint, resumed to 50 (the
     * resumed part replayed from a graph: it must not matter either). Quick:
     * 8 steps, 3, resumed to 8. */
    const int steps = RESUME_STEPS, first = RESUME_FIRST;
    const char *train_size = arg_int(RESUME_TRAIN);
    assert_int_equal(run_trainer("whole", "--steps", arg_int(steps), "--heldout-size", "0",
                                 "--train-size", train_size, "--csv", path_in("whole.csv"),
                                 "--checkpoint", path_in("whole.ckpt"), NULL), 0);
    assert_int_equal(run_trainer("first", "--steps", arg_int(first), "--heldout-size", "0",
                                 "--train-size", train_size, "--checkpoint",
                                 path_in("first.ckpt"), NULL), 0);
    assert_int_equal(run_trainer("resumed", "--resume", path_in("first.ckpt"), "--steps",
                                 arg_int(steps), "--graph", "--csv", path_in("resumed.csv"),
                                 "--checkpoint", path_in("resumed.ckpt"), NULL), 0);
    curve w, r;
    read_curve(path_in("whole.csv"), &w);
    read_curve(path_in("resumed.csv"), &r);
    assert_int_equal(r.n, steps - first);
    assert_int_equal(r.step[0], first + 1);
    /* 640 sequences are 20 batches (quick: 96, 3 batches; racecheck level:
     * 32, 1 batch): the first run ends with the first epoch, the resumed
     * part crosses another. */
    char what[96];
    snprintf(what, sizeof what, "resumed vs uninterrupted, steps %d..%d", first + 1, steps);
    assert_same_curve(what, &w, first, &r, 0, steps - first);
    snprintf(what, sizeof what, "state at step %d, resumed vs uninterrupted", steps);
    assert_same_file(what, path_in("whole.ckpt"), path_in("resumed.ckpt"));
    /* A setting that contradicts the checkpoint is refused. */
    assert_int_equal(run_trainer("conflict", "--resume", path_in("first.ckpt"), "--lr", "0.5",
                                 NULL), 2);
}

/* A run of more steps than the loss ring holds, at a small batch: the
 * common arguments, and the curve every comparison is made against (a
 * report every 10 steps, the ring never full), made once. */
#define LONG_STEPS (FT_LOSS_RING + 300)
static const char *long_args[] = {"--batch", "8", "--train-size", "512", "--heldout-size", "0",
                                  "--graph", "--steps", NULL /* LONG_STEPS */};

static void long_reference(curve *ref)
{
    const char **a = long_args;
    long_args[8] = arg_int(LONG_STEPS);
    if (access(path_in("long.csv"), R_OK))
        assert_int_equal(run_trainer("long", a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                                     a[8], "--csv", path_in("long.csv"), NULL), 0);
    read_curve(path_in("long.csv"), ref);
    assert_int_equal(ref->n, LONG_STEPS);
}

static void test_long_run_rare_reports(void **state)
{
    (void)state;
    if (gh_quick()) {  /* 4400 steps: minutes under a sanitizer */
        printf("  NOT RUN in quick mode: it needs more steps than the loss ring holds (%d)\n",
               FT_LOSS_RING);
        skip();
    }
    static curve ref, rare;
    long_reference(&ref);
    /* --progress past the run: the loop reports only when the ring fills
     * and at the end. */
    const char **a = long_args;
    assert_int_equal(run_trainer("long-rare", a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                                 a[8], "--progress", "100000000", "--csv", path_in("long-rare.csv"),
                                 NULL), 0);
    read_curve(path_in("long-rare.csv"), &rare);
    assert_int_equal(rare.n, LONG_STEPS);
    assert_same_curve("reported when the loss ring fills vs every 10 steps", &ref, 0, &rare, 0,
                      LONG_STEPS);
}

/* fox-train --bench on one GPU: the step figures and the loop figure (the
 * graph-replayed step through epochs packed ahead, reporting points every
 * --progress steps) are there and positive, at the epoch length asked. */
static void expect_bench_row(const char *json, int sequences)
{
    FILE *f = fopen(json, "r");
    if (!f)
        fail_msg("no bench JSON at %s", json);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    const char *keys[] = {"\"eager_ms\": ", "\"graph_ms\": ", "\"loop_ms\": "};
    for (int i = 0; i < 3; i++) {
        const char *p = strstr(buf, keys[i]);
        double v = p ? atof(p + strlen(keys[i])) : 0;
        if (!(v > 0))
            fail_msg("%s: %s missing or not positive:\n%s", json, keys[i], buf);
    }
    char want[64];
    snprintf(want, sizeof want, "\"loop_sequences\": %d,", sequences);
    if (!strstr(buf, want))
        fail_msg("%s: no %s:\n%s", json, want, buf);
    printf("  %s: eager, graph and loop figures present (%s)\n", json, want);
}

static void test_bench_loop(void **state)
{
    (void)state;
    /* Two batches of 4 (the least it uses), then 10-batch epochs with a
     * reporting point every 3 steps. */
    assert_int_equal(run_trainer("bench-small", "--bench", "--bench-batches", "4", "--train-size",
                                 "8", "--bench-steps", "3", "--progress", "1", "--json",
                                 path_in("bench-small.json"), NULL), 0);
    expect_bench_row(path_in("bench-small.json"), 8);
    assert_int_equal(run_trainer("bench-epochs", "--bench", "--bench-batches", "4",
                                 "--train-size", "40", "--bench-steps", "3", "--progress", "3",
                                 "--json", path_in("bench-epochs.json"), NULL), 0);
    expect_bench_row(path_in("bench-epochs.json"), 40);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s path/to/fox-train path/to/libfoxjit.so\n", argv[0]);
        return 2;
    }
    fox_train = argv[1];
    library = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradient_matches_finite_differences),
        cmocka_unit_test(test_per_step_gradient_matches_finite_differences),
        cmocka_unit_test(test_paths_agree),
        cmocka_unit_test(test_column_sum_forms_agree),
        cmocka_unit_test(test_acceptance_gate),
        cmocka_unit_test(test_eager_and_graph_bitwise),
        cmocka_unit_test(test_tf32_eager_and_graph_bitwise),
        cmocka_unit_test(test_resume_bitwise),
        cmocka_unit_test(test_long_run_rare_reports),
        cmocka_unit_test(test_bench_loop),
    };
    int rc = gh_main("gpu/trainer", tests, sizeof tests / sizeof tests[0]);
    if (have_tmpdir && rc == 0) {  /* kept on failure: the logs and curves */
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    } else if (have_tmpdir) {
        fprintf(stderr, "gpu/trainer: logs and loss curves kept in %s\n", tmpdir);
    }
    return rc;
}
