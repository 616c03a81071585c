/* The list of ops: one line per op, X(op, api). op names its folder
 * ops/<op>/: kernel.cu, op.c exporting fj_op_<op> (op_descriptor.h, in
 * runtime/build/), test.c and bench.c (docs/adding-an-op.md); meson reads
 * the names from this file (ops/meson.build), so adding an op needs no
 * build-file edit. api lists the op's API functions, the foxjit_api
 * members it fills: FJ_API(name) for each foxjit_<name>
 * (runtime/api/api_table.c).
 *
 * From this list come: the embedded kernel sources, the table of ops
 * (ops/op_table.c: the descriptors behind the program registry, the
 * manifest's ops and the default manifest), the plugin table
 * (api_table.c), the gpu tests and the bad-input table (ops/<op>/test.c,
 * holding cases_<op>, which gpu_bad_input needs for every line, with a
 * case for every API function) and the bench's per-op groups
 * (ops/<op>/bench.c where one exists; radix_sort is timed in
 * rank_normalize's group, the seven perception ops in the kloop group,
 * tools/bench/bench_kloop.c: docs/adding-an-op.md section 7).
 * Order: append only (the table's layout is foxjit_api's, in the header). */
#ifndef FJ_OP_LIST_H
#define FJ_OP_LIST_H

#define FJ_OPS(X) \
    X(colsum, FJ_API(column_sum) FJ_API(bias_grad_reduce) FJ_API(curiosity_bias_grad_reduce) \
              FJ_API(reduce_axis0) FJ_API(column_sum_prepare) \
              FJ_API(column_sum_workspace_size) FJ_API(column_sum_split) \
              FJ_API(column_sum_split_prepare)) \
    X(radix_sort, FJ_API(radix_sort_pairs_workspace_size) FJ_API(radix_sort_pairs) \
                  FJ_API(radix_sort_prepare)) \
    X(rank_normalize, FJ_API(rank_normalize_workspace_size) FJ_API(rank_normalize) \
                      FJ_API(rank_normalize_prepare)) \
    X(cfc, FJ_API(cfc_forward) FJ_API(cfc_backward) FJ_API(cfc_prepare)) \
    X(heads, FJ_API(heads_forward) FJ_API(heads_backward) FJ_API(heads_prepare) \
             FJ_API(heads_workspace_size)) \
    X(vsn, FJ_API(vsn_forward) FJ_API(vsn_backward) FJ_API(vsn_prepare)) \
    X(attn_pool, FJ_API(attn_pool_forward) FJ_API(attn_pool_backward) \
                 FJ_API(attn_pool_prepare)) \
    X(train, FJ_API(bce_with_logits) FJ_API(adamw) FJ_API(increment_step) \
             FJ_API(training_prepare) FJ_API(bce_with_logits_workspace_size) \
             FJ_API(bce_with_logits_wide)) \
    X(cfc_seq, FJ_API(cfc_seq_workspace_size) FJ_API(cfc_seq_forward) \
               FJ_API(cfc_seq_backward) FJ_API(cfc_seq_prepare)) \
    X(heads_seq, FJ_API(heads_seq_workspace_size) FJ_API(heads_seq_forward) \
                 FJ_API(heads_seq_backward) FJ_API(heads_seq_prepare) \
                 FJ_API(heads_seq_saved_size) FJ_API(heads_seq_forward_save) \
                 FJ_API(heads_seq_backward_saved) FJ_API(heads_seq_backward_part)) \
    X(vsn_seq, FJ_API(vsn_seq_workspace_size) FJ_API(vsn_seq_backward) \
               FJ_API(vsn_seq_prepare)) \
    X(gae, FJ_API(gae) FJ_API(gae_prepare))

#endif
