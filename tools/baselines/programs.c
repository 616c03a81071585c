/* The baselines' programs: sources in kernel_src/baselines/, embedded into
 * this library only (fj_baseline_sources). */
#include "baselines_internal.h"

const fj_program fj_program_colsum_legacy = {
    .name = "colsum_legacy",
    .source = "colsum_legacy.cu",
    .params = {NULL},
    .kernels = {
        {"colsum_serial", {FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I32}},
        {"colsum_p1", {FJ_PTR, FJ_I64, FJ_I64, FJ_PTR}},
        {"colsum_p2", {FJ_PTR, FJ_I64, FJ_I64, FJ_PTR, FJ_I32}},
    },
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_rank_legacy = {
    .name = "rank_legacy",
    .source = "rank_legacy.cu",
    .params = {NULL},
    .kernels = {
        {"rank_legacy_abs", {FJ_PTR, FJ_I64, FJ_F32, FJ_F32, FJ_PTR}},
        {"rank_legacy_quadratic", {FJ_PTR, FJ_PTR, FJ_I64, FJ_F32, FJ_F32, FJ_PTR}},
    },
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_cfc_legacy = {
    .name = "cfc_legacy",
    .source = "cfc_legacy.cu",
    .params = {"N_IN", "N_HID", "BLOCK", NULL},
    .kernels = {
        {"cfc_backward_legacy",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64,
          FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_I32, FJ_PTR, FJ_I64, FJ_I32, FJ_PTR, FJ_PTR, FJ_PTR,
          FJ_PTR, FJ_I32}},
    },
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_heads_legacy = {
    .name = "heads_legacy",
    .source = "heads_legacy.cu",
    .params = {"HEADS_D", "HEADS_E", "HEADS_H", "BLOCK", NULL},
    .kernels = {
        {"heads_backward_legacy",
         {FJ_PTRS(10), FJ_PTRS(10), FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_PTR, FJ_I64, FJ_I32, FJ_I32}},
    },
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_vsn_legacy = {
    .name = "vsn_legacy",
    .source = "vsn_legacy.cu",
    .params = {"VSN_F", "ROWS", "BLOCK", NULL},
    .kernels = {
        {"vsn_backward_legacy",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_PTR, FJ_PTR, FJ_I32, FJ_I32}},
    },
    .sources = &fj_baseline_sources,
};

const fj_program fj_program_attn_pool_legacy = {
    .name = "attn_pool_legacy",
    .source = "attn_pool_legacy.cu",
    .params = {"ATTN_D", "BLOCK", NULL},
    .kernels = {
        {"attn_pool_backward_legacy",
         {FJ_PTR, FJ_PTR, FJ_PTR, FJ_PTR, FJ_I32, FJ_PTR, FJ_I32, FJ_I32}},
    },
    .sources = &fj_baseline_sources,
};

const fj_program *const fj_baseline_programs[] = {
    &fj_program_colsum_legacy, &fj_program_rank_legacy,    &fj_program_cfc_legacy,
    &fj_program_heads_legacy,  &fj_program_vsn_legacy,     &fj_program_attn_pool_legacy,
};
const size_t fj_baseline_program_count =
    sizeof fj_baseline_programs / sizeof fj_baseline_programs[0];
