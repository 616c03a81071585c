/* unit: fox-train's host-side pieces, no GPU: checkpoints (round trip and
 * every kind of damage), held-out metrics, the seeded data, epoch orders,
 * batch packing and the initial parameters. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "../common/fd_capture.h"
#include "args.h"
#include "checkpoint.h"
#include "config.h"
#include "env.h"
#include "data.h"
#include "losslog.h"
#include "metrics.h"
#include "params.h"
#include "../common/text_file.h"

/* ---- checkpoints ------------------------------------------------------------- */

static char dir[] = "/tmp/fox-train-ckpt-XXXXXX";

/* Files in dir whose name holds `part`. */
static int files_named(const char *part)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

static void make_arrays(size_t n, float **p, float **m, float **v)
{
    *p = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        (*p)[i] = (float)i * 0.5f - 3.0f;
        (*m)[i] = 1.0f / (float)(i + 1);
        (*v)[i] = (float)(i % 7) * 1e-3f;
    }
}

static ft_ckpt_meta sample_meta(void)
{
    return (ft_ckpt_meta){.dims = {32, 64, 40, 128, 64, 5}, .signal = 1, .n_train = 4096,
                          .n_heldout = 512, .seed = 0x123456789abcdefull, .lr = 3e-3f,
                          .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                          .weight_decay = 0.01f, .step = 1234};
}

static void test_checkpoint_round_trip(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/a.ckpt", dir);
    const size_t n = 1000;
    float *p, *m, *v;
    make_arrays(n, &p, &m, &v);
    ft_ckpt_meta meta = sample_meta(), got;
    meta.kloop = FT_KLOOP_PER_STEP, meta.precision = FOXJIT_PRECISION_TF32;
    char why[512];
    assert_int_equal(ft_ckpt_write(path, &meta, p, m, v, n, why, sizeof why), 0);
    float *p2, *m2, *v2;
    size_t n2;
    if (ft_ckpt_read(path, &got, &p2, &m2, &v2, &n2, why, sizeof why))
        fail_msg("%s", why);
    assert_int_equal(n2, n);
    assert_int_equal(got.kloop, FT_KLOOP_PER_STEP);
    assert_int_equal(got.precision, FOXJIT_PRECISION_TF32);
    assert_memory_equal(&got.dims, &meta.dims, sizeof meta.dims);
    assert_int_equal(got.signal, 1);
    assert_int_equal(got.n_train, 4096);
    assert_int_equal(got.n_heldout, 512);
    assert_true(got.seed == meta.seed && got.step == 1234);
    assert_true(got.lr == meta.lr && got.beta2 == meta.beta2 && got.eps == meta.eps);
    assert_true(got.weight_decay == meta.weight_decay);
    assert_memory_equal(p2, p, n * 4);
    assert_memory_equal(m2, m, n * 4);
    assert_memory_equal(v2, v, n * 4);
    /* No temporary file is left behind. */
    assert_int_equal(files_named(".tmp."), 0);
    free(p), free(m), free(v), free(p2), free(m2), free(v2);
    unlink(path);
}

/* --precision reaches the runtime through foxjit_set_precision; the
 * default makes no call (a library older than ABI 2.6 trains as before),
 * and tf32 on such a library is refused with exit status 4, saying why. */
static int precision_calls, precision_set;
static foxjit_status record_precision(foxjit_runtime *rt, foxjit_precision p)
{
    (void)rt;
    precision_calls++, precision_set = (int)p;
    return FOXJIT_OK;
}

static void test_env_precision(void **state)
{
    (void)state;
    foxjit_api api = {.struct_size = sizeof api, .abi_major = FOXJIT_ABI_MAJOR,
                      .abi_minor = FOXJIT_ABI_MINOR, .set_precision = record_precision};
    ft_env e;
    memset(&e, 0, sizeof e);
    e.api = &api;
    snprintf(e.plugin.path, sizeof e.plugin.path, "libfoxjit-old.so");
    assert_int_equal(ft_env_set_precision(&e, FOXJIT_PRECISION_FLOAT32), FT_EXIT_OK);
    assert_int_equal(precision_calls, 0);
    assert_int_equal(ft_env_set_precision(&e, FOXJIT_PRECISION_TF32), FT_EXIT_OK);
    assert_int_equal(precision_calls, 1);
    assert_int_equal(precision_set, FOXJIT_PRECISION_TF32);
    api.struct_size = offsetof(foxjit_api, set_precision), api.abi_minor = 5;
    fd_capture c;
    char out[512];
    fd_capture_begin(&c, 2);
    int rc = ft_env_set_precision(&e, FOXJIT_PRECISION_TF32);
    fd_capture_end(&c, out, sizeof out);
    assert_int_equal(rc, FT_EXIT_NO_LIBRARY);
    assert_int_equal(precision_calls, 1);
    assert_non_null(strstr(out, "--precision tf32 needs foxjit_set_precision (fox-jit ABI 2.6); "
                                "libfoxjit-old.so is ABI 2.5"));
    assert_int_equal(ft_env_set_precision(&e, FOXJIT_PRECISION_FLOAT32), FT_EXIT_OK);
}

/* Writes a good checkpoint, applies `damage` to its bytes, expects the read
 * to fail with a message containing `needle`. */
static void expect_damaged(void (*damage)(unsigned char **, size_t *), const char *needle)
{
    char path[256], why[512];
    snprintf(path, sizeof path, "%s/d.ckpt", dir);
    const size_t n = 100;
    float *p, *m, *v;
    make_arrays(n, &p, &m, &v);
    ft_ckpt_meta meta = sample_meta();
    assert_int_equal(ft_ckpt_write(path, &meta, p, m, v, n, why, sizeof why), 0);
    FILE *f = fopen(path, "rb");
    unsigned char *bytes = malloc(4096);
    size_t len = fread(bytes, 1, 4096, f);
    fclose(f);
    damage(&bytes, &len);
    f = fopen(path, "wb");
    fwrite(bytes, 1, len, f);
    fclose(f);
    float *p2, *m2, *v2;
    size_t n2;
    assert_int_equal(ft_ckpt_read(path, &meta, &p2, &m2, &v2, &n2, why, sizeof why), -1);
    if (!strstr(why, needle))
        fail_msg("message '%s' should mention '%s'", why, needle);
    assert_null(p2);
    free(bytes), free(p), free(m), free(v);
    unlink(path);
}

static void flip_payload(unsigned char **b, size_t *len) { (*b)[*len - 5] ^= 0x10; }
static void flip_header(unsigned char **b, size_t *len) { (void)len, (*b)[60] ^= 1; }
static void truncate_file(unsigned char **b, size_t *len) { (void)b, *len -= 9; }
static void append_byte(unsigned char **b, size_t *len) { (*b)[(*len)++] = 0; }
static void bad_magic(unsigned char **b, size_t *len) { (void)len, (*b)[0] = 'X'; }
static void bad_version(unsigned char **b, size_t *len) { (void)len, (*b)[8] = 99; }

static void test_checkpoint_damage(void **state)
{
    (void)state;
    expect_damaged(flip_payload, "corrupt (checksum mismatch)");
    expect_damaged(flip_header, "corrupt");
    expect_damaged(truncate_file, "truncated");
    expect_damaged(append_byte, "longer than its header says");
    expect_damaged(bad_magic, "not a fox-train checkpoint");
    expect_damaged(bad_version, "format 99");
    char why[512];
    ft_ckpt_meta meta;
    float *p, *m, *v;
    size_t n;
    assert_int_equal(ft_ckpt_read("/nonexistent/x.ckpt", &meta, &p, &m, &v, &n, why,
                                  sizeof why), -1);
    assert_non_null(strstr(why, "cannot open /nonexistent/x.ckpt"));
    meta = sample_meta();
    float one = 1;
    assert_int_equal(ft_ckpt_write("/nonexistent/dir/x.ckpt", &meta, &one, &one, &one, 1, why,
                                   sizeof why), -1);
    assert_non_null(strstr(why, "the directory '/nonexistent/dir' does not exist"));
}

/* A header that claims more floats than the file holds is refused before
 * anything that big is allocated. */
static void huge_count(unsigned char **b, size_t *len)
{
    uint64_t n = 1ull << 32;
    memcpy(*b + 96, &n, sizeof n);   /* param_floats */
    *len = 112;
}

/* Settings a checkpoint's checksum cannot vouch for: each is refused by the
 * resume (ft_run_config_make), with what is wrong. */
/* ft_run_config_make with its stderr in out. */
static int run_config_capturing(ft_run_config *rc, const ft_options *o, char *out, size_t len)
{
    fd_capture c;
    fd_capture_begin(&c, 2);
    int status = ft_run_config_make(rc, o);
    fd_capture_end(&c, out, len);
    return status;
}

static void test_checkpoint_settings_checked(void **state)
{
    (void)state;
    expect_damaged(huge_count, "truncated");
    char path[256], why[512];
    snprintf(path, sizeof path, "%s/s.ckpt", dir);
    const ft_ckpt_meta good = sample_meta();
    const size_t n = ft_param_total(&good.dims);
    float *p, *m, *v;
    make_arrays(n, &p, &m, &v);
    struct {
        ft_ckpt_meta meta;
        const char *needle;
    } bad[6];
    for (int i = 0; i < 6; i++)
        bad[i].meta = good;
    bad[0].meta.step = (1ull << 32) + 2, bad[0].needle = "step count 4294967298";
    bad[1].meta.signal = 7, bad[1].needle = "signal 7";
    bad[2].meta.n_heldout = 3, bad[2].needle = "held-out size 3";
    bad[3].meta.lr = NAN, bad[3].needle = "AdamW settings";
    bad[4].meta.n_train = -5, bad[4].needle = "train size -5";
    bad[5].meta.dims.k = 0, bad[5].needle = "K 0";
    for (int i = 0; i < 6; i++) {
        assert_int_equal(ft_ckpt_write(path, &bad[i].meta, p, m, v, n, why, sizeof why), 0);
        char *argv[] = {"fox-train", "--resume", path, "--quiet", NULL};
        ft_options o;
        assert_int_equal(ft_parse_args(4, argv, &o, why, sizeof why), FT_PARSE_OK);
        ft_run_config rc;
        /* The message goes to stderr; the status says it was refused. */
        assert_int_equal(ft_run_config_make(&rc, &o), FT_EXIT_USAGE);
        ft_run_config_free(&rc);
    }
    /* The K-loop path the checkpoint was trained on must be this run's. */
    ft_ckpt_meta per = good;
    per.kloop = FT_KLOOP_PER_STEP;
    assert_int_equal(ft_ckpt_write(path, &per, p, m, v, n, why, sizeof why), 0);
    {
        char *av[] = {"fox-train", "--resume", path, "--quiet", "--steps", "2000", NULL};
        ft_options o;
        assert_int_equal(ft_parse_args(6, av, &o, why, sizeof why), FT_PARSE_OK);
        ft_run_config rc;
        assert_int_equal(ft_run_config_make(&rc, &o), FT_EXIT_USAGE);
        ft_run_config_free(&rc);
        char *av2[] = {"fox-train", "--resume", path, "--quiet", "--steps", "2000", "--per-step",
                       NULL};
        assert_int_equal(ft_parse_args(7, av2, &o, why, sizeof why), FT_PARSE_OK);
        assert_int_equal(ft_run_config_make(&rc, &o), FT_EXIT_OK);
        assert_int_equal(rc.cfg.kloop, FT_KLOOP_PER_STEP);
        ft_run_config_free(&rc);
    }
    /* So must the precision of its products (0, float32, in files older
     * than the field: the only one they could be). */
    ft_ckpt_meta tf = good;
    tf.precision = FOXJIT_PRECISION_TF32;
    assert_int_equal(ft_ckpt_write(path, &tf, p, m, v, n, why, sizeof why), 0);
    {
        char *av[] = {"fox-train", "--resume", path, "--steps", "2000", NULL};
        ft_options o;
        assert_int_equal(ft_parse_args(5, av, &o, why, sizeof why), FT_PARSE_OK);
        ft_run_config rc;
        char out[1024];
        assert_int_equal(run_config_capturing(&rc, &o, out, sizeof out), FT_EXIT_USAGE);
        ft_run_config_free(&rc);
        assert_non_null(strstr(out, "trained with --precision tf32; add --precision tf32"));
        char *av2[] = {"fox-train", "--resume", path, "--quiet", "--steps", "2000",
                       "--precision", "tf32", NULL};
        assert_int_equal(ft_parse_args(8, av2, &o, why, sizeof why), FT_PARSE_OK);
        assert_int_equal(ft_run_config_make(&rc, &o), FT_EXIT_OK);
        assert_int_equal(rc.cfg.precision, FOXJIT_PRECISION_TF32);
        ft_run_config_free(&rc);
    }
    assert_int_equal(ft_ckpt_write(path, &good, p, m, v, n, why, sizeof why), 0);
    {
        char *av[] = {"fox-train", "--resume", path, "--steps", "2000", "--precision", "tf32",
                      NULL};
        ft_options o;
        assert_int_equal(ft_parse_args(7, av, &o, why, sizeof why), FT_PARSE_OK);
        ft_run_config rc;
        char out[1024];
        assert_int_equal(run_config_capturing(&rc, &o, out, sizeof out), FT_EXIT_USAGE);
        ft_run_config_free(&rc);
        assert_non_null(strstr(out, "trained with --precision float32; drop --precision"));
    }
    tf.precision = 7;
    assert_int_equal(ft_ckpt_write(path, &tf, p, m, v, n, why, sizeof why), 0);
    {
        char *av[] = {"fox-train", "--resume", path, NULL};
        ft_options o;
        assert_int_equal(ft_parse_args(3, av, &o, why, sizeof why), FT_PARSE_OK);
        ft_run_config rc;
        char out[1024];
        assert_int_equal(run_config_capturing(&rc, &o, out, sizeof out), FT_EXIT_USAGE);
        ft_run_config_free(&rc);
        assert_non_null(strstr(out, "precision 7 is not float32 (0) or tf32 (1)"));
    }
    /* A batch trained over several GPUs: more rows than one GPU takes
     * unless the run has GPUs enough, and a world that divides it. */
    ft_ckpt_meta wide = good;
    wide.dims.batch = 3072, wide.n_train = 4096, wide.n_heldout = 0;
    assert_int_equal(ft_ckpt_write(path, &wide, p, m, v, n, why, sizeof why), 0);
    {
        const char *gpus[] = {"1", "2", "3", "4", "5"};
        const int want[] = {FT_EXIT_USAGE, FT_EXIT_USAGE, FT_EXIT_OK, FT_EXIT_OK, FT_EXIT_USAGE};
        for (int i = 0; i < 5; i++) {
            char *av[] = {"fox-train", "--resume", path, "--quiet", "--steps", "2000", "--gpus",
                          (char *)gpus[i], NULL};
            ft_options o;
            assert_int_equal(ft_parse_args(8, av, &o, why, sizeof why), FT_PARSE_OK);
            char out[1024];
            ft_run_config rc;
            int got = run_config_capturing(&rc, &o, out, sizeof out);
            ft_run_config_free(&rc);
            if (got != want[i])
                fail_msg("--gpus %s: status %d, want %d (%s)", gpus[i], got, want[i], out);
            if (i == 1 && !strstr(out, "trained at batch 3072: over 2 GPUs that is 1536 rows a "
                                       "GPU, more than one GPU takes (1024); resume it over 3 "
                                       "GPUs"))
                fail_msg("--gpus 2: message '%s'", out);
        }
    }
    wide.dims.batch = FT_MAX_BATCH + 1;
    assert_int_equal(ft_ckpt_write(path, &wide, p, m, v, n, why, sizeof why), 0);
    {
        char *av[] = {"fox-train", "--resume", path, "--quiet", NULL};
        ft_options o;
        assert_int_equal(ft_parse_args(4, av, &o, why, sizeof why), FT_PARSE_OK);
        ft_run_config rc;
        char out[1024];
        assert_int_equal(run_config_capturing(&rc, &o, out, sizeof out), FT_EXIT_USAGE);
        ft_run_config_free(&rc);
        assert_non_null(strstr(out, "batch 1048577 or K 64 is outside [1, 2^20]"));
    }
    /* The good one passes (sample_meta has no path: an older file). */
    assert_int_equal(ft_ckpt_write(path, &good, p, m, v, n, why, sizeof why), 0);
    char *argv[] = {"fox-train", "--resume", path, "--quiet", "--steps", "2000", NULL};
    ft_options o;
    assert_int_equal(ft_parse_args(6, argv, &o, why, sizeof why), FT_PARSE_OK);
    ft_run_config rc;
    assert_int_equal(ft_run_config_make(&rc, &o), FT_EXIT_OK);
    assert_int_equal(rc.start, 1234);
    ft_run_config_free(&rc);
    /* A --seed a resumed run gives is compared with the checkpoint's as 64
     * bits: seeds one apart near 2^64 are the same double. */
    ft_ckpt_meta seeded = good;
    seeded.seed = UINT64_MAX;
    assert_int_equal(ft_ckpt_write(path, &seeded, p, m, v, n, why, sizeof why), 0);
    {
        char *av[] = {"fox-train", "--resume", path, "--quiet", "--steps", "2000", "--seed",
                      "18446744073709551614", NULL};
        assert_int_equal(ft_parse_args(8, av, &o, why, sizeof why), FT_PARSE_OK);
        char out[1024];
        assert_int_equal(run_config_capturing(&rc, &o, out, sizeof out), FT_EXIT_USAGE);
        ft_run_config_free(&rc);
        if (!strstr(out, "--seed 18446744073709551614 differs from the checkpoint's "
                         "18446744073709551615"))
            fail_msg("message '%s'", out);
        av[7] = "18446744073709551615";
        assert_int_equal(ft_parse_args(8, av, &o, why, sizeof why), FT_PARSE_OK);
        assert_int_equal(run_config_capturing(&rc, &o, out, sizeof out), FT_EXIT_OK);
        ft_run_config_free(&rc);
    }
    /* A model of other dims: both are said. */
    ft_ckpt_meta other = good;
    other.dims.e = good.dims.e / 2;
    const size_t n_other = ft_param_total(&other.dims);
    float *po, *mo, *vo;
    make_arrays(n_other, &po, &mo, &vo);
    assert_int_equal(ft_ckpt_write(path, &other, po, mo, vo, n_other, why, sizeof why), 0);
    {
        char *av[] = {"fox-train", "--resume", path, "--quiet", "--steps", "2000", NULL};
        assert_int_equal(ft_parse_args(6, av, &o, why, sizeof why), FT_PARSE_OK);
        char out[1024], want[200];
        assert_int_equal(run_config_capturing(&rc, &o, out, sizeof out), FT_EXIT_USAGE);
        ft_run_config_free(&rc);
        snprintf(want, sizeof want, "holds a model of F %d, D %d, E %d, H %d in %zu parameters; "
                 "this fox-train trains F %d, D %d, E %d, H %d in %zu", other.dims.f,
                 other.dims.d, other.dims.e, other.dims.h, n_other, good.dims.f, good.dims.d,
                 good.dims.e, good.dims.h, n);
        if (!strstr(out, want))
            fail_msg("message '%s' lacks '%s'", out, want);
    }
    free(po), free(mo), free(vo);
    free(p), free(m), free(v);
    unlink(path);
}

/* ---- metrics ----------------------------------------------------------------- */

/* ---- checkpoints and the loss curve against what a directory holds --------- */



/* Sets float `index` of array `array` (0 params, 1 m, 2 v) of the
 * checkpoint at path to `value` and seals it again: its checksum stays
 * good, as a run that diverged would have written it. */
static void poison(const char *path, size_t n, int array, size_t index, float value)
{
    const size_t header = 112, len = header + 3 * n * sizeof(float);
    unsigned char *b = malloc(len);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(b, 1, len, f), len);
    fclose(f);
    memcpy(b + header + ((size_t)array * n + index) * sizeof(float), &value, sizeof value);
    memset(b + 104, 0, 8);   /* the checksum field, zero while summed */
    uint64_t sum = XXH64(b, len, 0);
    memcpy(b + 104, &sum, 8);
    f = fopen(path, "wb");
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
    free(b);
}

/* A checkpoint whose checksum is good but whose state is not finite (or
 * has a negative second moment) is not resumed: the run that wrote it had
 * diverged. Said with where the first bad value is. And a state like that
 * is not written over the last good checkpoint. */
static void test_checkpoint_state_not_finite(void **state)
{
    (void)state;
    char path[256], why[1200];
    snprintf(path, sizeof path, "%s/nan.ckpt", dir);
    const ft_ckpt_meta meta = sample_meta();
    const size_t n = ft_param_total(&meta.dims);
    const size_t at = ft_param_offset(&meta.dims, FT_HEADS_W2) + 3;
    static const struct {
        int array;
        float value;
        const char *says;
    } bad[] = {
        {0, NAN, "its parameters hold NaN"},
        {1, INFINITY, "its AdamW first moments (m) hold an infinity"},
        {1, -INFINITY, "its AdamW first moments (m) hold an infinity"},
        {2, -1e-3f, "its AdamW second moments (v) hold a negative value"},
    };
    float *p, *m, *v;
    make_arrays(n, &p, &m, &v);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ft_ckpt_write(path, &meta, p, m, v, n, why, sizeof why), 0);
        poison(path, n, bad[i].array, at, bad[i].value);
        ft_ckpt_meta got;
        float *p2, *m2, *v2;
        size_t n2;
        assert_int_equal(ft_ckpt_read(path, &got, &p2, &m2, &v2, &n2, why, sizeof why), -1);
        char where[160];
        snprintf(where, sizeof where, "(1 such values; the first is element 3 of %s)",
                 ft_param_name(FT_HEADS_W2));
        if (!strstr(why, bad[i].says) || !strstr(why, where) ||
            !strstr(why, "cannot be resumed") ||
            !strstr(why, "had diverged; resume an earlier checkpoint"))
            fail_msg("case %zu: message '%s'", i, why);
        assert_null(p2);
    }
    /* Not written: the previous checkpoint stays. */
    assert_int_equal(ft_ckpt_write(path, &meta, p, m, v, n, why, sizeof why), 0);
    float keep = p[7];
    p[7] = NAN;
    ft_ckpt_meta later = meta;
    later.step = 2000;
    assert_int_equal(ft_ckpt_write(path, &later, p, m, v, n, why, sizeof why), -1);
    if (!strstr(why, "not writing the checkpoint of step 2000: its parameters hold NaN") ||
        !strstr(why, "keeps what it held"))
        fail_msg("message '%s'", why);
    p[7] = keep;
    ft_ckpt_meta got;
    float *p2, *m2, *v2;
    size_t n2;
    if (ft_ckpt_read(path, &got, &p2, &m2, &v2, &n2, why, sizeof why))
        fail_msg("%s", why);
    assert_true(got.step == meta.step);
    free(p2), free(m2), free(v2);
    free(p), free(m), free(v);
    unlink(path);
}

/* --resume of a directory says so (not "no FOXTRAIN header"); of a FIFO,
 * says so at once instead of waiting for a writer forever. */
static void test_resume_not_a_file(void **state)
{
    (void)state;
    char why[1200], fifo[256];
    ft_ckpt_meta meta;
    float *p, *m, *v;
    size_t n;
    assert_int_equal(ft_ckpt_read(dir, &meta, &p, &m, &v, &n, why, sizeof why), -1);
    if (!strstr(why, "' is a directory; give a checkpoint file (one that --checkpoint FILE "
                     "wrote)"))
        fail_msg("message '%s'", why);
    snprintf(fifo, sizeof fifo, "%s/fifo.ckpt", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(5);   /* a read that waits for a writer ends here */
        int r = ft_ckpt_read(fifo, &meta, &p, &m, &v, &n, why, sizeof why);
        _exit(r == -1 && strstr(why, "' is a FIFO; give a checkpoint file") ? 0 : 1);
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    unlink(fifo);
    if (WIFSIGNALED(ws))
        fail_msg("reading a FIFO as a checkpoint waited for a writer (killed by signal %d)",
                 WTERMSIG(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
}

/* Another user's links in a shared directory: one at the checkpoint's path
 * is refused; one at the temporary name a checkpoint used to take
 * (<path>.tmp.<pid>) is never opened. The victim keeps its content. */
static void test_checkpoint_links(void **state)
{
    (void)state;
    char path[256], victim[256], planted[300], why[1200];
    snprintf(path, sizeof path, "%s/run.ckpt", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(planted, sizeof planted, "%s.tmp.%ld", path, (long)getpid());
    put_text(victim, "the victim's file\n");
    const ft_ckpt_meta meta = sample_meta();
    const size_t n = 100;
    float *p, *m, *v;
    make_arrays(n, &p, &m, &v);
    assert_int_equal(symlink(victim, path), 0);
    assert_int_equal(ft_ckpt_write(path, &meta, p, m, v, n, why, sizeof why), -1);
    if (!strstr(why, "--checkpoint '") || !strstr(why, "' is a symbolic link (to '") ||
        !strstr(why, "outputs are never written through a link"))
        fail_msg("message '%s'", why);
    expect_text(victim, "the victim's file\n");
    unlink(path);
    assert_int_equal(symlink(victim, planted), 0);
    if (ft_ckpt_write(path, &meta, p, m, v, n, why, sizeof why))
        fail_msg("%s", why);
    expect_text(victim, "the victim's file\n");
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(lstat(planted, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    ft_ckpt_meta got;
    float *p2, *m2, *v2;
    size_t n2;
    if (ft_ckpt_read(path, &got, &p2, &m2, &v2, &n2, why, sizeof why))
        fail_msg("%s", why);
    assert_memory_equal(p2, p, n * sizeof(float));
    free(p2), free(m2), free(v2);
    free(p), free(m), free(v);
    unlink(planted), unlink(path), unlink(victim);
}

/* ft_losslog_open with its stderr in out. */
static int losslog_open_capturing(ft_losslog *l, const char *path, const float *ring,
                                  int64_t start, int64_t end, char *out, size_t len)
{
    fd_capture c;
    fd_capture_begin(&c, 2);
    int rc = ft_losslog_open(l, path, ring, start, end);
    fd_capture_end(&c, out, len);
    return rc;
}

/* The loss curve: a link at --csv is refused, fresh or resumed, and its
 * target keeps its content; a fresh curve never writes into a file a
 * hard link shares, and a resumed one does not continue such a file. */
static void test_csv_links(void **state)
{
    (void)state;
    char path[256], victim[256], out[1024];
    snprintf(path, sizeof path, "%s/loss.csv", dir);
    snprintf(victim, sizeof victim, "%s/victim.csv", dir);
    const char *curve = "step,loss,loss_bits\n1,0.5,0x3f000000\n2,0.25,0x3e800000\n";
    put_text(victim, curve);
    const float ring[4] = {1, 1, 1, 1};
    ft_losslog l;
    assert_int_equal(symlink(victim, path), 0);
    for (int start = 0; start <= 1; start++) {
        assert_int_equal(losslog_open_capturing(&l, path, ring, start, start + 4, out,
                                                sizeof out), -1);
        if (!strstr(out, "fox-train: --csv '") || !strstr(out, "' is a symbolic link"))
            fail_msg("start %d: message '%s'", start, out);
        expect_text(victim, curve);
    }
    unlink(path);
    /* A hard link: a fresh curve is a new file; the other name keeps its
     * content. A resumed curve refuses it. */
    assert_int_equal(link(victim, path), 0);
    assert_int_equal(losslog_open_capturing(&l, path, ring, 1, 5, out, sizeof out), -1);
    if (!strstr(out, "has 2 hard links"))
        fail_msg("message '%s'", out);
    expect_text(victim, curve);
    assert_int_equal(losslog_open_capturing(&l, path, ring, 0, 4, out, sizeof out), 0);
    assert_int_equal(ft_losslog_flush(&l, 4), 0);
    ft_losslog_close(&l);
    expect_text(victim, curve);
    expect_text(path, "step,loss,loss_bits\n1,1,0x3f800000\n2,1,0x3f800000\n3,1,0x3f800000\n"
                      "4,1,0x3f800000\n");
    /* The file of its own, resumed at step 1: continued in place. */
    assert_int_equal(losslog_open_capturing(&l, path, ring, 1, 3, out, sizeof out), 0);
    assert_int_equal(ft_losslog_flush(&l, 2), 0);
    ft_losslog_close(&l);
    expect_text(path, "step,loss,loss_bits\n1,1,0x3f800000\n2,1,0x3f800000\n3,1,0x3f800000\n");
    assert_int_equal(files_named(".tmp."), 0);
    unlink(path), unlink(victim);
}

static void test_auc(void **state)
{
    (void)state;
    const float y[] = {0, 0, 1, 1};
    const float s1[] = {0.1f, 0.4f, 0.35f, 0.8f};
    assert_true(fabs(ft_auc(s1, y, 4) - 0.75) < 1e-12);
    const float perfect[] = {-3, -2, 2, 3}, reversed[] = {3, 2, -2, -3}, ties[] = {1, 1, 1, 1};
    assert_true(ft_auc(perfect, y, 4) == 1.0);
    assert_true(ft_auc(reversed, y, 4) == 0.0);
    assert_true(ft_auc(ties, y, 4) == 0.5);
    /* One positive tied with one of two negatives: (1 + 0.5) / 2. */
    const float y3[] = {1, 0, 0}, s3[] = {0.5f, 0.5f, 0.1f};
    assert_true(fabs(ft_auc(s3, y3, 3) - 0.75) < 1e-12);
    const float ones[] = {1, 1, 1, 1};
    assert_true(isnan(ft_auc(s1, ones, 4)));
    const float with_nan[] = {0.1f, NAN, 0.2f, 0.3f};
    assert_true(isnan(ft_auc(with_nan, y, 4)));
}

static void test_bce_mean(void **state)
{
    (void)state;
    const float z[] = {0.0f, 100.0f, -100.0f, 2.0f}, y[] = {1, 0, 0, 1};
    double want = (log(2.0) + 100.0 + log1p(exp(-100.0)) + log1p(exp(-2.0))) / 4;
    assert_true(fabs(ft_bce_mean(z, y, 4) - want) < 1e-12);
}

/* ---- data, orders, packing, initial parameters ------------------------------- */

static void test_data_is_seeded(void **state)
{
    (void)state;
    ft_dataset a, b, c;
    assert_int_equal(ft_data_generate(&a, 50, 16, 40, 5, FT_SIGNAL_RULE, 7, FT_STREAM_TRAIN), 0);
    assert_int_equal(ft_data_generate(&b, 50, 16, 40, 5, FT_SIGNAL_RULE, 7, FT_STREAM_TRAIN), 0);
    assert_int_equal(ft_data_generate(&c, 50, 16, 40, 5, FT_SIGNAL_RULE, 7,
                                      FT_STREAM_HELDOUT), 0);
    assert_memory_equal(a.x, b.x, 50 * 16 * 40 * 4);
    assert_memory_equal(a.dt, b.dt, 50 * 16 * 4);
    assert_memory_equal(a.y_step, b.y_step, 50 * 16 * 5 * 4);
    assert_memory_equal(a.y_seq, b.y_seq, 50 * 5 * 4);
    assert_true(memcmp(a.x, c.x, 50 * 16 * 40 * 4) != 0);
    /* Irregular spacing in [0.25, 1.75]; labels 0/1 and not all alike. */
    double pos = 0;
    for (int i = 0; i < 50 * 16; i++)
        assert_true(a.dt[i] >= 0.25f && a.dt[i] <= 1.75f);
    for (int i = 0; i < 50 * 16 * 5; i++) {
        assert_true(a.y_step[i] == 0.0f || a.y_step[i] == 1.0f);
        pos += a.y_step[i];
    }
    pos /= 50 * 16 * 5;
    printf("  rule: %.3f of the bar labels are positive\n", pos);
    assert_true(pos > 0.3 && pos < 0.7);
    /* At bar 0 every horizon's decayed sum is s_0 itself: equal labels. */
    for (int i = 0; i < 50; i++)
        for (int h = 1; h < 5; h++)
            assert_true(a.y_step[(size_t)i * 16 * 5 + h] == a.y_step[(size_t)i * 16 * 5]);
    ft_data_free(&a), ft_data_free(&b), ft_data_free(&c);
}

static void test_constant_signal(void **state)
{
    (void)state;
    ft_dataset d;
    assert_int_equal(ft_data_generate(&d, 40, 8, 40, 5, FT_SIGNAL_CONSTANT, 3,
                                      FT_STREAM_TRAIN), 0);
    int positives = 0;
    for (int i = 0; i < 40; i++) {
        float l = d.y_seq[i * 5];
        positives += l == 1.0f;
        for (int j = 0; j < 8 * 5; j++)
            assert_true(d.y_step[i * 40 + j] == l);
        for (int h = 0; h < 5; h++)
            assert_true(d.y_seq[i * 5 + h] == l);
    }
    assert_true(positives > 5 && positives < 35);
    ft_data_free(&d);
}

static void test_epoch_order(void **state)
{
    (void)state;
    int a[100], b[100], c[100], seen[100] = {0};
    ft_epoch_order(100, 9, 3, a);
    ft_epoch_order(100, 9, 3, b);
    ft_epoch_order(100, 9, 4, c);
    assert_memory_equal(a, b, sizeof a);
    assert_true(memcmp(a, c, sizeof a) != 0);
    for (int i = 0; i < 100; i++)
        seen[a[i]]++;
    for (int i = 0; i < 100; i++)
        assert_int_equal(seen[i], 1);
}

static void test_pack_layout(void **state)
{
    (void)state;
    const int K = 3, F = 4, H = 2, B = 2;
    ft_dataset d;
    assert_int_equal(ft_data_generate(&d, 5, K, F, H, FT_SIGNAL_RULE, 1, FT_STREAM_TRAIN), 0);
    ft_batch_layout l;
    ft_batch_layout_for(B, K, F, H, &l);
    assert_int_equal(l.dt % 64, 0);
    assert_int_equal(l.labels % 64, 0);
    assert_true(l.floats >= l.labels + (size_t)(K + 1) * B * H);
    float *out = malloc(l.floats * 4);
    const int idx[2] = {4, 1};
    ft_data_pack(&d, idx, B, &l, out);
    /* x [B, K, F]: row 1 is sample 1. */
    assert_memory_equal(out + l.x + K * F, d.x + 1 * K * F, (size_t)K * F * 4);
    /* dt [B, K]: row 0 is sample 4. */
    assert_memory_equal(out + l.dt, d.dt + 4 * K, (size_t)K * 4);
    /* labels [K+1, B, H]: bar 2 of row 1, then the sequence block. */
    assert_memory_equal(out + l.labels + (2 * B + 1) * H, d.y_step + (1 * K + 2) * H,
                        (size_t)H * 4);
    assert_memory_equal(out + l.labels + (K * B + 0) * H, d.y_seq + 4 * H, (size_t)H * 4);
    free(out);
    ft_data_free(&d);
}

static void test_initial_parameters(void **state)
{
    (void)state;
    ft_dims d = {32, 64, 40, 128, 64, 5};
    size_t n = ft_param_total(&d);
    assert_int_equal(n, ft_param_offset(&d, FT_ATTN_Q) + 128);
    float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    ft_params_init(&d, 5, a);
    ft_params_init(&d, 5, b);
    ft_params_init(&d, 6, c);
    assert_memory_equal(a, b, n * 4);
    assert_true(memcmp(a, c, n * 4) != 0);
    const float *tau = a + ft_param_offset(&d, FT_CFC_TAU);
    for (int i = 0; i < 128; i++)
        assert_true(tau[i] >= 1.0f && tau[i] <= 16.0f);
    const int zero[] = {FT_CFC_BIAS, FT_HEADS_B1, FT_HEADS_B2, FT_HEADS_B_GATE,
                        FT_HEADS_B_MAIN, FT_HEADS_B_SKIP, FT_VSN_BIAS};
    for (size_t k = 0; k < sizeof zero / sizeof zero[0]; k++) {
        const float *p = a + ft_param_offset(&d, zero[k]);
        for (size_t i = 0; i < ft_param_size(&d, zero[k]); i++)
            assert_true(p[i] == 0.0f);
        assert_false(ft_param_decays(zero[k]));
    }
    assert_false(ft_param_decays(FT_CFC_TAU));
    assert_true(ft_param_decays(FT_CFC_W_REC));
    assert_string_equal(ft_param_name(FT_HEADS_W_SKIP), "heads.w_skip");
    free(a), free(b), free(c);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(dir);
}

/* ---- the loss curve's ring ------------------------------------------------------ */

static float loss_of(int64_t i)
{
    return 1.0f + 0.25f * (float)(i % 100000);
}

/* A loop as the trainers run it: a loss per step into the ring, a report
 * every `every` steps, at the end, and whenever the ring is full. Returns
 * the number of reports. */
static int run_ring(ft_losslog *l, float *ring, int64_t todo, int64_t every, int64_t nan_at)
{
    int reports = 0;
    for (int64_t i = 0; i < todo; i++) {
        ring[ft_ring_slot(i)] = i == nan_at ? NAN : loss_of(i);
        int64_t done = i + 1;
        if (done % every && done != todo && !ft_ring_full(done, l->written))
            continue;
        reports++;
        if (ft_losslog_flush(l, done))
            return -reports;
    }
    return reports;
}

/* Reads the CSV back: row j must be step start + j + 1 with loss_of(j). */
static int64_t check_csv(const char *path, int64_t start)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[128];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "step,loss,loss_bits\n");
    int64_t rows = 0;
    long long step;
    double loss;
    unsigned bits;
    while (fscanf(f, "%lld,%lf,0x%x\n", &step, &loss, &bits) == 3) {
        float want = loss_of(rows), got;
        memcpy(&got, &bits, 4);
        assert_int_equal(step, start + rows + 1);
        assert_true(got == want && (float)loss == want);
        rows++;
    }
    fclose(f);
    return rows;
}

static void test_loss_ring_wraps(void **state)
{
    (void)state;
    char path[] = "/tmp/fox-train-ring-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    /* A run of several rings, reported rarely (--progress past the ring):
     * the ring must force reports, and every loss must reach the CSV. */
    const int64_t todo = 3 * FT_LOSS_RING + 17, start = 40;
    assert_int_equal(ft_ring_entries(todo), FT_LOSS_RING);
    assert_int_equal(ft_ring_entries(5), 5);
    assert_int_equal(ft_ring_entries(0), 1);
    float *ring = malloc(FT_LOSS_RING * sizeof(float));
    assert_non_null(ring);
    ft_losslog l;
    assert_int_equal(ft_losslog_open(&l, path, ring, start, start + todo), 0);
    int reports = run_ring(&l, ring, todo, 100000000, -1);
    assert_int_equal(reports, 7);   /* every half ring (six) and the end */
    assert_true(l.first == loss_of(0) && l.last == loss_of(todo - 1));
    ft_losslog_close(&l);
    assert_int_equal(check_csv(path, start), todo);

    /* Frequent reports: the same curve, the ring never fills. */
    assert_int_equal(ft_losslog_open(&l, path, ring, start, start + todo), 0);
    assert_int_equal(run_ring(&l, ring, todo, 10, -1), (int)((todo + 9) / 10));
    ft_losslog_close(&l);
    assert_int_equal(check_csv(path, start), todo);

    /* A loss that is not finite, past the first wrap: the run stops at the
     * report that holds it, with the rows before it written. */
    const int64_t bad = FT_LOSS_RING + 123;
    assert_int_equal(ft_losslog_open(&l, path, ring, 0, todo), 0);
    assert_int_equal(run_ring(&l, ring, todo, 100000000, bad), -3);
    ft_losslog_close(&l);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int64_t lines = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        lines += c == '\n';
    fclose(f);
    assert_int_equal(lines, 1 + bad + 1);   /* the header, the rows, the bad row */

    /* A loop that did not report in time is an error, not a wrong curve. */
    for (int64_t i = 0; i < FT_LOSS_RING; i++)
        ring[i] = loss_of(i);
    assert_int_equal(ft_losslog_open(&l, NULL, ring, 0, todo), 0);
    assert_int_equal(ft_losslog_flush(&l, FT_LOSS_RING + 1), -1);
    assert_int_equal(ft_losslog_flush(&l, FT_LOSS_RING), 0);
    ft_losslog_close(&l);
    free(ring);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checkpoint_round_trip),
        cmocka_unit_test(test_checkpoint_damage),
        cmocka_unit_test(test_checkpoint_settings_checked),
        cmocka_unit_test(test_env_precision),
        cmocka_unit_test(test_checkpoint_state_not_finite),
        cmocka_unit_test(test_resume_not_a_file),
        cmocka_unit_test(test_checkpoint_links),
        cmocka_unit_test(test_csv_links),
        cmocka_unit_test(test_auc),
        cmocka_unit_test(test_bce_mean),
        cmocka_unit_test(test_data_is_seeded),
        cmocka_unit_test(test_constant_signal),
        cmocka_unit_test(test_epoch_order),
        cmocka_unit_test(test_pack_layout),
        cmocka_unit_test(test_initial_parameters),
        cmocka_unit_test(test_loss_ring_wraps),
    };
    return cmocka_run_group_tests_name("train_host", tests, setup, teardown);
}
