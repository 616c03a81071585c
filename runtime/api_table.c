/* The plugin table: the one entry point a trainer dlsym()s. It only grows at
 * the end; abi_minor counts the entries added within a major version. */
#include <stddef.h>

#include "foxjit/foxjit.h"

/* One table for the whole of ABI 2 (it was named api_v1, after ABI 1). */
static const foxjit_api api_table = {
    .struct_size = sizeof(foxjit_api),
    .abi_major = FOXJIT_ABI_MAJOR,
    .abi_minor = 2,  /* 1: the whole-sequence ops; 2: foxjit_runtime_params.target */

    .version = foxjit_version,
    .status_string = foxjit_status_string,
    .last_error = foxjit_last_error,

    .runtime_default_params = foxjit_runtime_default_params,
    .runtime_create = foxjit_runtime_create,
    .runtime_destroy = foxjit_runtime_destroy,
    .runtime_get_counters = foxjit_runtime_get_counters,
    .runtime_arch = foxjit_runtime_arch,

    .column_sum = foxjit_column_sum,
    .bias_grad_reduce = foxjit_bias_grad_reduce,
    .curiosity_bias_grad_reduce = foxjit_curiosity_bias_grad_reduce,
    .reduce_axis0 = foxjit_reduce_axis0,
    .column_sum_prepare = foxjit_column_sum_prepare,
    .radix_sort_pairs_workspace_size = foxjit_radix_sort_pairs_workspace_size,
    .radix_sort_pairs = foxjit_radix_sort_pairs,
    .radix_sort_prepare = foxjit_radix_sort_prepare,
    .rank_normalize_workspace_size = foxjit_rank_normalize_workspace_size,
    .rank_normalize = foxjit_rank_normalize,
    .rank_normalize_prepare = foxjit_rank_normalize_prepare,
    .cfc_forward = foxjit_cfc_forward,
    .cfc_backward = foxjit_cfc_backward,
    .cfc_prepare = foxjit_cfc_prepare,
    .heads_forward = foxjit_heads_forward,
    .heads_backward = foxjit_heads_backward,
    .heads_prepare = foxjit_heads_prepare,
    .vsn_forward = foxjit_vsn_forward,
    .vsn_backward = foxjit_vsn_backward,
    .vsn_prepare = foxjit_vsn_prepare,
    .attn_pool_forward = foxjit_attn_pool_forward,
    .attn_pool_backward = foxjit_attn_pool_backward,
    .attn_pool_prepare = foxjit_attn_pool_prepare,
    .get_perception_limits = foxjit_get_perception_limits,
    .bce_with_logits = foxjit_bce_with_logits,
    .adamw = foxjit_adamw,
    .increment_step = foxjit_increment_step,
    .training_prepare = foxjit_training_prepare,
    .heads_workspace_size = foxjit_heads_workspace_size,
    .cfc_seq_workspace_size = foxjit_cfc_seq_workspace_size,
    .cfc_seq_forward = foxjit_cfc_seq_forward,
    .cfc_seq_backward = foxjit_cfc_seq_backward,
    .cfc_seq_prepare = foxjit_cfc_seq_prepare,
    .heads_seq_workspace_size = foxjit_heads_seq_workspace_size,
    .heads_seq_forward = foxjit_heads_seq_forward,
    .heads_seq_backward = foxjit_heads_seq_backward,
    .heads_seq_prepare = foxjit_heads_seq_prepare,
    .vsn_seq_workspace_size = foxjit_vsn_seq_workspace_size,
    .vsn_seq_backward = foxjit_vsn_seq_backward,
    .vsn_seq_prepare = foxjit_vsn_seq_prepare,
    /* FJ_API_TABLE_MORE: entries of ops that land later go here, in header order. */
};

FOXJIT_API const foxjit_api *foxjit_get_api(uint32_t abi_major)
{
    if (abi_major != FOXJIT_ABI_MAJOR)
        return NULL;
    return &api_table;
}
