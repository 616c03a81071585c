/* unit: fox-train's command line (tools/fox-train/args.c), no GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "foxjit/foxjit.h"

static char why[512];

/* Parses a NULL-terminated list of arguments (argv[0] added). */
static ft_parse_result parse(ft_options *o, ...)
{
    char *argv[64] = {"fox-train"};
    int argc = 1;
    va_list ap;
    va_start(ap, o);
    for (char *a; (a = va_arg(ap, char *)) && argc < 63;)
        argv[argc++] = a;
    va_end(ap);
    return ft_parse_args(argc, argv, o, why, sizeof why);
}

static void expect_error(ft_parse_result r, const char *needle)
{
    if (r != FT_PARSE_ERROR)
        fail_msg("expected an error mentioning '%s', got result %d", needle, (int)r);
    if (!strstr(why, needle))
        fail_msg("message '%s' should mention '%s'", why, needle);
}

static void test_defaults(void **state)
{
    (void)state;
    ft_options o;
    assert_int_equal(parse(&o, NULL), FT_PARSE_OK);
    assert_int_equal(o.steps, 1000);
    assert_int_equal(o.batch, 32);
    assert_int_equal(o.k, 64);
    assert_true(o.lr == 1e-3f && o.beta1 == 0.9f && o.beta2 == 0.999f && o.eps == 1e-8f);
    assert_true(o.weight_decay == 0.01f);
    assert_int_equal(o.seed, 1);
    assert_int_equal(o.signal, FT_SIGNAL_RULE);
    assert_int_equal(o.n_train, 4096);
    assert_int_equal(o.n_heldout, 1024);
    assert_false(o.graph || o.bench || o.quiet);
    assert_null(o.csv);
    assert_null(o.resume);
    assert_int_equal(o.n_bench_batches, 3);
    assert_int_equal(o.bench_batches[2], 512);
    assert_int_equal(o.set, 0);
}

static void test_every_option(void **state)
{
    (void)state;
    ft_options o;
    assert_int_equal(parse(&o, "--steps", "200", "--batch=16", "--k", "8", "--lr", "3e-3",
                           "--weight-decay=0", "--beta1", "0.8", "--beta2", "0.99", "--eps",
                           "1e-6", "--seed", "18446744073709551615", "--signal", "constant",
                           "--train-size", "100", "--heldout-size", "0", "--graph", "--csv",
                           "loss.csv", "--checkpoint", "c.bin", "--checkpoint-every", "50",
                           "--library", "/x/libfoxjit.so", "--cache-dir", "/tmp/c",
                           "--device", "1", "--progress", "5", "--quiet", NULL),
                     FT_PARSE_OK);
    assert_int_equal(o.steps, 200);
    assert_int_equal(o.batch, 16);
    assert_int_equal(o.k, 8);
    assert_true(o.lr == 3e-3f && o.weight_decay == 0.0f && o.beta1 == 0.8f);
    assert_true(o.beta2 == 0.99f && o.eps == 1e-6f);
    assert_true(o.seed == UINT64_MAX);
    assert_int_equal(o.signal, FT_SIGNAL_CONSTANT);
    assert_int_equal(o.n_train, 100);
    assert_int_equal(o.n_heldout, 0);
    assert_true(o.graph && o.quiet);
    assert_string_equal(o.csv, "loss.csv");
    assert_string_equal(o.checkpoint, "c.bin");
    assert_int_equal(o.checkpoint_every, 50);
    assert_string_equal(o.library, "/x/libfoxjit.so");
    assert_string_equal(o.cache_dir, "/tmp/c");
    assert_int_equal(o.device, 1);
    assert_int_equal(o.progress_every, 5);
    /* Every setting a checkpoint records is marked as given. */
    unsigned all = FT_SET_BATCH | FT_SET_K | FT_SET_LR | FT_SET_WD | FT_SET_BETA1 |
                   FT_SET_BETA2 | FT_SET_EPS | FT_SET_SEED | FT_SET_TRAIN | FT_SET_HELDOUT |
                   FT_SET_SIGNAL;
    assert_int_equal(o.set, all);

    assert_int_equal(parse(&o, "--resume", "c.bin", "--steps", "400", NULL), FT_PARSE_OK);
    assert_string_equal(o.resume, "c.bin");
    assert_int_equal(o.set, 0);

    assert_int_equal(parse(&o, "--bench", "--bench-batches", "32,128", "--bench-steps", "7",
                           "--json", "b.json", NULL), FT_PARSE_OK);
    assert_true(o.bench);
    assert_int_equal(o.n_bench_batches, 2);
    assert_int_equal(o.bench_batches[0], 32);
    assert_int_equal(o.bench_batches[1], 128);
    assert_int_equal(o.bench_steps, 7);
    assert_string_equal(o.json, "b.json");
}

static void test_help(void **state)
{
    (void)state;
    ft_options o;
    assert_int_equal(parse(&o, "--steps", "5", "--help", NULL), FT_PARSE_HELP);
    assert_int_equal(parse(&o, "-h", NULL), FT_PARSE_HELP);
    assert_non_null(strstr(ft_usage, "--graph"));
    assert_non_null(strstr(ft_usage, "Exit status"));
}

static void test_malformed(void **state)
{
    (void)state;
    ft_options o;
    expect_error(parse(&o, "--stepz", "5", NULL), "unknown option '--stepz'");
    expect_error(parse(&o, "steps", NULL), "unexpected argument 'steps'");
    expect_error(parse(&o, "--steps", NULL), "--steps needs a value");
    expect_error(parse(&o, "--steps", "ten", NULL), "--steps: 'ten' is not an integer");
    expect_error(parse(&o, "--steps", "5x", NULL), "--steps: '5x'");
    expect_error(parse(&o, "--steps", "0", NULL), "--steps: '0' is too small (min 1)");
    expect_error(parse(&o, "--batch", "1048577", "--gpus", "1024", NULL), "--batch: '1048577'");
    expect_error(parse(&o, "--k=0", NULL), "--k: '0'");
    expect_error(parse(&o, "--lr", "fast", NULL), "--lr: 'fast' is not a number");
    /* Finite as a double, infinite as the float32 it becomes. */
    expect_error(parse(&o, "--lr", "1e39", NULL),
                 "--lr: '1e39' is too large (max 3.40282347e+38, the largest float32)");
    expect_error(parse(&o, "--bench", "--csv", "x.csv", NULL), "--bench times steps and writes no");
    expect_error(parse(&o, "--bench", "--checkpoint", "x.ckpt", NULL), "drop --csv, --checkpoint");
    expect_error(parse(&o, "--weight-decay", "-1e40", NULL),
                 "'-1e40' is too small (min -3.40282347e+38, the lowest float32)");
    expect_error(parse(&o, "--lr", "nan", NULL), "--lr: 'nan' is not a finite number");
    expect_error(parse(&o, "--eps", "inf", NULL), "--eps: 'inf' is not a finite number");
    expect_error(parse(&o, "--seed", "-1", NULL), "--seed: '-1' is too small (min 0)");
    expect_error(parse(&o, "--signal", "sine", NULL), "'rule' or 'constant'");
    expect_error(parse(&o, "--graph=1", NULL), "--graph takes no value");
    expect_error(parse(&o, "--csv=", NULL), "--csv: empty value");
    expect_error(parse(&o, "--bench", "--bench-batches", "32,,64", NULL),
                 "--bench-batches: '32,,64' has an empty item");
    expect_error(parse(&o, "--bench", "--bench-batches", "0", NULL),
                 "--bench-batches: '0' is too small (min 1)");
    expect_error(parse(&o, "--bench", "--bench-batches", "32,2048", NULL),
                 "--bench-batches: '2048' is too large (max 1024)");
    expect_error(parse(&o, "--bench", "--bench-batches", "1,2,3,4,5,6,7,8,9", NULL),
                 "more than 8 batch sizes; give up to 8");
}

static void test_inconsistent(void **state)
{
    (void)state;
    ft_options o;
    expect_error(parse(&o, "--lr", "-0.1", NULL), "--lr must be >= 0");
    expect_error(parse(&o, "--weight-decay", "-1", NULL), "--weight-decay must be >= 0");
    expect_error(parse(&o, "--beta1", "1", NULL), "[0, 1)");
    expect_error(parse(&o, "--beta2", "-0.5", NULL), "[0, 1)");
    expect_error(parse(&o, "--eps", "0", NULL), "--eps must be > 0");
    expect_error(parse(&o, "--batch", "64", "--train-size", "63", NULL),
                 "--train-size 63 is smaller than one batch (--batch 64)");
    expect_error(parse(&o, "--batch", "64", "--heldout-size", "10", NULL), "use 0 to skip");
    expect_error(parse(&o, "--checkpoint-every", "10", NULL), "needs --checkpoint");
    /* One GPU takes at most 1024 rows; --batch is global, so N GPUs take N
     * times that. */
    expect_error(parse(&o, "--batch", "1025", NULL),
                 "--batch 1025 is more than one GPU takes (1024 rows)");
    /* The GPUs it needs split it evenly: 1025 = 5 x 205, not 2, 3 or 4. */
    expect_error(parse(&o, "--batch", "1025", NULL), "(N = 5 or more, dividing 1025)");
    expect_error(parse(&o, "--batch", "1025", "--dump-step", "x.bin", NULL),
                 "more than one GPU takes");
    expect_error(parse(&o, "--batch", "4096", "--gpus", "2", "--heldout-size", "0", NULL),
                 "--batch 4096 puts 2048 rows on each of the 2 GPUs (--gpus 2), more than one "
                 "GPU takes (1024): use a smaller --batch or 4 GPUs or more");
    expect_error(parse(&o, "--batch", "3000", "--dist-local", "2", "--heldout-size", "0", NULL),
                 "1500 rows on each of the 2 GPUs (--dist-local 2)");
    assert_int_equal(parse(&o, "--batch", "2048", "--gpus", "2", "--heldout-size", "0", NULL),
                     FT_PARSE_OK);
    assert_int_equal(o.batch, 2048);
    assert_int_equal(parse(&o, "--batch", "2048", "--dist-local", "2", "--heldout-size", "0",
                           NULL), FT_PARSE_OK);
    /* A launcher's world is known only when the rank starts (dist_train.c). */
    assert_int_equal(parse(&o, "--batch", "8192", "--dist", "--train-size", "8192",
                           "--heldout-size", "0", NULL), FT_PARSE_OK);
    expect_error(parse(&o, "--json", "x.json", NULL), "--json is for --bench");
    expect_error(parse(&o, "--bench", "--resume", "c.bin", NULL), "do not go together");
    /* The training-data checks do not apply to --bench: it makes data of its own (at
     * least two batches of --train-size sequences). */
    assert_int_equal(parse(&o, "--bench", "--bench-batches", "64", "--train-size", "8", NULL),
                     FT_PARSE_OK);
}

/* An option the run's mode does nothing with is refused, not dropped: the
 * bench's sizes, steps and modes are its own; --dump-step writes one file;
 * --dist-timeout is for ranks. */
static void test_ignored_options_refused(void **state)
{
    (void)state;
    ft_options o;
    expect_error(parse(&o, "--bench", "--batch", "64", NULL),
                 "give --bench-batches 64 instead of --batch");
    expect_error(parse(&o, "--bench", "--steps", "5", NULL), "give --bench-steps instead");
    expect_error(parse(&o, "--bench", "--graph", NULL), "eager and graph-replayed steps: drop "
                                                        "--graph");
    expect_error(parse(&o, "--bench", "--signal", "constant", NULL), "--signal does nothing");
    expect_error(parse(&o, "--bench", "--heldout-size", "0", NULL), "--heldout-size does nothing");
    /* What the bench does use. */
    assert_int_equal(parse(&o, "--bench", "--k", "8", "--progress", "3", "--seed", "5",
                           "--per-step", "--train-size", "64", NULL), FT_PARSE_OK);
    /* A --batch past one GPU is met with the bench's own advice, not --gpus'. */
    expect_error(parse(&o, "--bench", "--batch", "2048", NULL),
                 "give --bench-batches 1024 --gpus 2 for 2048 rows");
    expect_error(parse(&o, "--dump-step", "/tmp/x", "--batch", "2048", NULL),
                 "--dump-step runs on one GPU: give a --batch of at most 1024");
    expect_error(parse(&o, "--dump-step", "/tmp/x", "--lr", "0.5", NULL),
                 "--lr does nothing there");
    expect_error(parse(&o, "--dump-step", "/tmp/x", "--eps", "1e-6", NULL),
                 "--eps does nothing there");
    static const char *const dump_unused[][2] = {
        {"--csv", "c.csv"}, {"--checkpoint", "c.ckpt"}, {"--json", "j.json"},
        {"--steps", "9"},   {"--progress", "2"},        {"--heldout-size", "0"}};
    for (size_t i = 0; i < sizeof dump_unused / sizeof dump_unused[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "%s does nothing there", dump_unused[i][0]);
        expect_error(parse(&o, "--dump-step", "/tmp/x", dump_unused[i][0], dump_unused[i][1],
                           NULL), want);
    }
    expect_error(parse(&o, "--dump-step", "/tmp/x", "--checkpoint-every", "3", NULL),
                 "--checkpoint-every does nothing there");
    assert_int_equal(parse(&o, "--dump-step", "/tmp/x", "--batch", "8", "--k", "4", "--seed",
                           "3", "--signal", "constant", "--per-step", NULL), FT_PARSE_OK);
    expect_error(parse(&o, "--dist-timeout", "5", NULL), "this run has no other ranks");
    expect_error(parse(&o, "--gpus", "2", "--dist-timeout", "5", NULL), "drop it");
    assert_int_equal(parse(&o, "--dist-local", "2", "--dist-timeout", "5", NULL), FT_PARSE_OK);
    assert_int_equal(o.dist_timeout, 5);
    assert_int_equal(parse(&o, "--dist", "--dist-timeout", "5", NULL), FT_PARSE_OK);
    /* Numbers are digits: no blanks or plus signs for strtol to skip. */
    expect_error(parse(&o, "--seed", " -1", NULL), "--seed: ' -1'");
    expect_error(parse(&o, "--seed", "+3", NULL), "--seed: '+3'");
    expect_error(parse(&o, "--steps", " 5", NULL), "--steps: ' 5'");
    expect_error(parse(&o, "--steps", "+5", NULL), "--steps: '+5'");
    assert_int_equal(parse(&o, "--seed", "18446744073709551615", NULL), FT_PARSE_OK);
    assert_true(o.seed == UINT64_MAX);
}

/* One number parser for every numeric option (tools/fox-train/number.h):
 * the same rules for blanks, signs, range and trailing text, integers and
 * floats alike, and a value too large for its option says so with the
 * largest it takes. */
static void test_one_number_parser(void **state)
{
    (void)state;
    ft_options o;
    /* Past 2^64 - 1, past the option's own limit, past a float32. */
    expect_error(parse(&o, "--seed", "99999999999999999999999", NULL),
                 "--seed: '99999999999999999999999' is too large (max 18446744073709551615)");
    expect_error(parse(&o, "--seed", "18446744073709551616", NULL),
                 "is too large (max 18446744073709551615)");
    expect_error(parse(&o, "--steps", "100000001", NULL),
                 "--steps: '100000001' is too large (max 100000000)");
    expect_error(parse(&o, "--steps", "99999999999999999999", NULL),
                 "--steps: '99999999999999999999' is too large (max 100000000)");
    expect_error(parse(&o, "--device", "1024", NULL), "--device: '1024' is too large (max 1023)");
    expect_error(parse(&o, "--dist-timeout", "0", "--dist", NULL),
                 "--dist-timeout: '0' is too small (min 1)");
    /* Every numeric option, with a blank before or after, a '+', trailing
     * text: refused the same way, naming the option. */
    static const char *const numeric[] = {
        "--steps", "--batch", "--k", "--lr", "--weight-decay", "--beta1", "--beta2", "--eps",
        "--seed", "--train-size", "--heldout-size", "--checkpoint-every", "--device", "--gpus",
        "--dist-local", "--dist-timeout", "--progress", "--bench-steps", "--bench-batches"};
    static const struct {
        const char *value, *says;
    } malformed[] = {
        {" 1", "has a blank before the number; give the number alone"},
        {"\t1", "has a blank before the number"},
        {"1 ", "has a blank after the number; give the number alone"},
        {"+1", "write the number without '+'"},
        {"1x", "is not"},
        {"", "the value is empty"},
        {"0x1", "is not"},
        {"-", "is not"},
    };
    for (size_t i = 0; i < sizeof numeric / sizeof numeric[0]; i++)
        for (size_t j = 0; j < sizeof malformed / sizeof malformed[0]; j++) {
            char arg[64], opt[40];
            snprintf(arg, sizeof arg, "%s=%s", numeric[i], malformed[j].value);
            snprintf(opt, sizeof opt, "%s: ", numeric[i]);
            ft_parse_result r = parse(&o, arg, NULL);
            if (r != FT_PARSE_ERROR || strncmp(why, opt, strlen(opt)) ||
                !strstr(why, malformed[j].says))
                fail_msg("%s: result %d, message '%s'; want '%s... %s'", arg, (int)r, why, opt,
                         malformed[j].says);
        }
    /* The float options take what a float is written as, and nothing a
     * float32 would silently turn into another value. */
    assert_int_equal(parse(&o, "--lr", "3e-3", "--beta1", ".5", "--beta2", "0.99",
                           "--weight-decay", "2.", "--eps", "1E-7", NULL), FT_PARSE_OK);
    assert_true(o.lr == 3e-3f && o.beta1 == 0.5f && o.weight_decay == 2.0f && o.eps == 1e-7f);
    expect_error(parse(&o, "--lr", "1e-50", NULL),
                 "--lr: '1e-50' is too close to 0 for a float32");
    expect_error(parse(&o, "--lr", "0x1p-3", NULL), "--lr: '0x1p-3' is not a number");
    expect_error(parse(&o, "--lr", "1e", NULL), "--lr: '1e' is not a number");
    expect_error(parse(&o, "--lr", "infinity", NULL), "--lr: 'infinity' is not a finite");
    expect_error(parse(&o, "--steps", "1e3", NULL), "--steps: '1e3' is not an integer");
    expect_error(parse(&o, "--steps", "2.0", NULL), "--steps: '2.0' is not an integer");
    expect_error(parse(&o, "--bench", "--bench-batches", "32, 64", NULL),
                 "--bench-batches: ' 64' has a blank before the number");
    /* Zeros in front are still decimal. */
    assert_int_equal(parse(&o, "--steps", "007", NULL), FT_PARSE_OK);
    assert_int_equal(o.steps, 7);
}

/* --per-step selects the older path; --dump-step is a one-GPU, one-step mode. */
static void test_path_and_dump(void **state)
{
    (void)state;
    ft_options o;
    assert_int_equal(parse(&o, NULL), FT_PARSE_OK);
    assert_int_equal(o.per_step, 0);
    assert_null(o.dump_step);
    assert_int_equal(parse(&o, "--per-step", "--dump-step", "/tmp/x", NULL), FT_PARSE_OK);
    assert_int_equal(o.per_step, 1);
    assert_string_equal(o.dump_step, "/tmp/x");
    expect_error(parse(&o, "--dump-step", "/tmp/x", "--bench", NULL), "--dump-step");
    expect_error(parse(&o, "--dump-step", "/tmp/x", "--graph", NULL), "--dump-step");
    expect_error(parse(&o, "--dump-step", "/tmp/x", "--gpus", "2", NULL), "--dump-step");
    expect_error(parse(&o, "--dump-step", "/tmp/x", "--resume", "/tmp/c", NULL), "--dump-step");
    expect_error(parse(&o, "--dump-step", "/tmp/x", "--batch", "64", "--train-size", "32", NULL),
                 "--train-size");
    expect_error(parse(&o, "--dump-step", NULL), "--dump-step");
}

/* --precision: float32 (the default) or tf32, in every mode; anything else
 * is refused naming the two. */
static void test_precision(void **state)
{
    (void)state;
    ft_options o;
    assert_int_equal(parse(&o, NULL), FT_PARSE_OK);
    assert_int_equal(o.precision, FOXJIT_PRECISION_FLOAT32);
    assert_int_equal(parse(&o, "--precision", "tf32", NULL), FT_PARSE_OK);
    assert_int_equal(o.precision, FOXJIT_PRECISION_TF32);
    assert_int_equal(parse(&o, "--precision=float32", NULL), FT_PARSE_OK);
    assert_int_equal(o.precision, FOXJIT_PRECISION_FLOAT32);
    assert_int_equal(parse(&o, "--bench", "--precision", "tf32", NULL), FT_PARSE_OK);
    assert_int_equal(o.precision, FOXJIT_PRECISION_TF32);
    assert_int_equal(parse(&o, "--dump-step", "/tmp/x", "--precision", "tf32", NULL),
                     FT_PARSE_OK);
    assert_int_equal(parse(&o, "--gpus", "2", "--batch", "64", "--precision", "tf32", NULL),
                     FT_PARSE_OK);
    expect_error(parse(&o, "--precision", "fp16", NULL),
                 "--precision: 'fp16' is not 'float32' or 'tf32'");
    expect_error(parse(&o, "--precision", "TF32", NULL), "is not 'float32' or 'tf32'");
    expect_error(parse(&o, "--precision", "", NULL), "--precision");
    expect_error(parse(&o, "--precision", NULL), "--precision needs a value");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_every_option),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_inconsistent),
        cmocka_unit_test(test_path_and_dump),
        cmocka_unit_test(test_precision),
        cmocka_unit_test(test_ignored_options_refused),
        cmocka_unit_test(test_one_number_parser),
    };
    return cmocka_run_group_tests_name("train_args_cli", tests, NULL, NULL);
}
