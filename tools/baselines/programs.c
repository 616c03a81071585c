/* The baselines' programs: sources in kernel_src/baselines/, embedded into
 * this library only (fj_baseline_sources). */
#include "baselines_internal.h"

const fj_program fj_program_colsum_legacy = {
    .name = "colsum_legacy",
    .source = "colsum_legacy.cu",
    .params = {NULL},
    .kernels = {"colsum_serial", "colsum_p1", "colsum_p2", NULL},
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_rank_legacy = {
    .name = "rank_legacy",
    .source = "rank_legacy.cu",
    .params = {NULL},
    .kernels = {"rank_legacy_abs", "rank_legacy_quadratic", NULL},
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_cfc_legacy = {
    .name = "cfc_legacy",
    .source = "cfc_legacy.cu",
    .params = {"N_IN", "N_HID", "BLOCK", NULL},
    .kernels = {"cfc_backward_legacy", NULL},
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_heads_legacy = {
    .name = "heads_legacy",
    .source = "heads_legacy.cu",
    .params = {"HEADS_D", "HEADS_E", "HEADS_H", "BLOCK", NULL},
    .kernels = {"heads_backward_legacy", NULL},
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_vsn_legacy = {
    .name = "vsn_legacy",
    .source = "vsn_legacy.cu",
    .params = {"VSN_F", "ROWS", "BLOCK", NULL},
    .kernels = {"vsn_backward_legacy", NULL},
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_attn_pool_legacy = {
    .name = "attn_pool_legacy",
    .source = "attn_pool_legacy.cu",
    .params = {"ATTN_D", "BLOCK", NULL},
    .kernels = {"attn_pool_backward_legacy", NULL},
    .sources = &fj_baseline_sources,
};

const fj_program *const fj_baseline_programs[] = {
    &fj_program_colsum_legacy, &fj_program_rank_legacy,    &fj_program_cfc_legacy,
    &fj_program_heads_legacy,  &fj_program_vsn_legacy,     &fj_program_attn_pool_legacy,
};
const size_t fj_baseline_program_count =
    sizeof fj_baseline_programs / sizeof fj_baseline_programs[0];
