/* The baselines' list, as ops/op_list.h is the library's: their ops (the
 * manifest names `fox-jit warm`'s parser and the compile tests know), their
 * programs, and their manifest of the trainer shapes, each op's lines
 * (its descriptor's shapes) in list order. */
#include "baselines_internal.h"

int fj_legacy_one_variant(const fj_program *p, fj_variant *out, int max)
{
    if (max < 1)
        return -1;
    out[0] = (fj_variant){p, {0}};
    return 1;
}

static const fj_op *const op_list[] = {
    &fj_op_colsum_legacy, &fj_op_rank_legacy, &fj_op_cfc_legacy,
    &fj_op_heads_legacy,  &fj_op_vsn_legacy,  &fj_op_attn_pool_legacy,
};
const fj_op *const *const fj_baseline_manifest_op_list = op_list;
const size_t fj_baseline_manifest_op_count = sizeof op_list / sizeof op_list[0];

const fj_program *const fj_baseline_programs[] = {
    &fj_program_colsum_legacy, &fj_program_rank_legacy,    &fj_program_cfc_legacy,
    &fj_program_heads_legacy,  &fj_program_vsn_legacy,     &fj_program_attn_pool_legacy,
};
const size_t fj_baseline_program_count =
    sizeof fj_baseline_programs / sizeof fj_baseline_programs[0];
_Static_assert(sizeof fj_baseline_programs / sizeof fj_baseline_programs[0] ==
                   sizeof op_list / sizeof op_list[0],
               "one program per baseline op");

const char fj_baseline_manifest[] =
    "# fox-jit baselines (bench and tests only): the original kernels at the trainer shapes\n"
    FJ_COLSUM_LEGACY_SHAPES FJ_RANK_LEGACY_SHAPES FJ_CFC_LEGACY_SHAPES FJ_HEADS_LEGACY_SHAPES
    FJ_VSN_LEGACY_SHAPES FJ_ATTN_POOL_LEGACY_SHAPES;
