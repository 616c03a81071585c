/* Prints the size of every struct of the public header and the offset of
 * each of its fields, one "struct.field offset" line each, so the Rust
 * crate's and the Python package's copies of the structs can be checked
 * against what the C compiler lays out. */
#include <stddef.h>
#include <stdio.h>

#include "foxjit/foxjit.h"

#define SIZE(s) printf("%s.SIZE %zu\n", #s, sizeof(s))
#define OFF(s, f) printf("%s.%s %zu\n", #s, #f, offsetof(s, f))

#define F1(s, a) OFF(s, a)
#define F2(s, a, b) OFF(s, a); OFF(s, b)
#define F4(s, a, b, c, d) F2(s, a, b); F2(s, c, d)

int main(void)
{
    SIZE(foxjit_runtime_params);
    F4(foxjit_runtime_params, struct_size, cache_dir, readonly_cache_dirs, cache_max_bytes);
    F1(foxjit_runtime_params, disable_disk_cache);
    F1(foxjit_runtime_params, target);

    SIZE(foxjit_counters);
    F4(foxjit_counters, disk_hits, disk_misses, compiles, compile_ms);
    F4(foxjit_counters, bytes_read, bytes_written, corrupt_entries, evictions);
    F2(foxjit_counters, write_failures, modules_loaded);

    SIZE(foxjit_cfc_args);
    F4(foxjit_cfc_args, batch, n_in, n_hid, w_in);
    F4(foxjit_cfc_args, w_rec, bias, tau, x);
    F4(foxjit_cfc_args, x_stride, h, h_stride, dt);
    F4(foxjit_cfc_args, dt_stride, u, u_stride, h_out);
    F4(foxjit_cfc_args, h_out_stride, dh_out, dh_out_stride, dh);
    F4(foxjit_cfc_args, dh_stride, dh_accumulate, dx, dx_stride);
    F4(foxjit_cfc_args, dx_accumulate, dw_in, dw_rec, dbias);
    F1(foxjit_cfc_args, dtau);

    SIZE(foxjit_heads_args);
    F4(foxjit_heads_args, batch, d, e, h);
    F4(foxjit_heads_args, w1, b1, w2, b2);
    F4(foxjit_heads_args, w_gate, b_gate, w_main, b_main);
    F4(foxjit_heads_args, w_skip, b_skip, x, x_stride);
    F4(foxjit_heads_args, logits, logits_stride, dlogits, dlogits_stride);
    F4(foxjit_heads_args, dx, dx_stride, dx_accumulate, dw1);
    F4(foxjit_heads_args, db1, dw2, db2, dw_gate);
    F4(foxjit_heads_args, db_gate, dw_main, db_main, dw_skip);
    F4(foxjit_heads_args, db_skip, steps, x_step_stride, logits_step_stride);
    F4(foxjit_heads_args, dlogits_step_stride, dx_step_stride, work, work_bytes);

    SIZE(foxjit_vsn_args);
    F4(foxjit_vsn_args, batch, t, f, w);
    F4(foxjit_vsn_args, bias, x, y, dy);
    F4(foxjit_vsn_args, dx, dx_accumulate, dw, dbias);

    SIZE(foxjit_attn_pool_args);
    F4(foxjit_attn_pool_args, batch, t, d, q);
    F4(foxjit_attn_pool_args, hs, pooled, dpooled, dhs);
    F2(foxjit_attn_pool_args, dhs_accumulate, dq);

    SIZE(foxjit_perception_limits);
    F4(foxjit_perception_limits, max_batch, max_t, max_n_hid, max_n_in);
    F4(foxjit_perception_limits, max_e, max_h, max_f, max_d);

    SIZE(foxjit_cfc_seq_args);
    F4(foxjit_cfc_seq_args, batch, k, n_in, n_hid);
    F4(foxjit_cfc_seq_args, w_in, w_rec, bias, tau);
    F4(foxjit_cfc_seq_args, x, dt, h_init, h);
    F4(foxjit_cfc_seq_args, u, dh, dx, dx_accumulate);
    F4(foxjit_cfc_seq_args, dh_init, dh_init_accumulate, dw_in, dw_rec);
    F4(foxjit_cfc_seq_args, dbias, dtau, grad_accumulate, work);
    F1(foxjit_cfc_seq_args, work_bytes);

    SIZE(foxjit_heads_seq_args);
    F4(foxjit_heads_seq_args, batch, steps, d, e);
    F4(foxjit_heads_seq_args, h, w1, b1, w2);
    F4(foxjit_heads_seq_args, b2, w_gate, b_gate, w_main);
    F4(foxjit_heads_seq_args, b_main, w_skip, b_skip, x);
    F4(foxjit_heads_seq_args, x_stride, x_step_stride, logits, logits_stride);
    F4(foxjit_heads_seq_args, logits_step_stride, dlogits, dlogits_stride, dlogits_step_stride);
    F4(foxjit_heads_seq_args, dx, dx_stride, dx_step_stride, dx_accumulate);
    F4(foxjit_heads_seq_args, dw1, db1, dw2, db2);
    F4(foxjit_heads_seq_args, dw_gate, db_gate, dw_main, db_main);
    F4(foxjit_heads_seq_args, dw_skip, db_skip, grad_accumulate, work);
    F1(foxjit_heads_seq_args, work_bytes);

    SIZE(foxjit_vsn_seq_args);
    F4(foxjit_vsn_seq_args, batch, t, f, w);
    F4(foxjit_vsn_seq_args, bias, x, dy, dx);
    F4(foxjit_vsn_seq_args, dx_accumulate, dw, dbias, grad_accumulate);
    F2(foxjit_vsn_seq_args, work, work_bytes);

    SIZE(foxjit_adamw_args);
    F4(foxjit_adamw_args, n, param, grad, m);
    F4(foxjit_adamw_args, v, step, lr, beta1);
    F4(foxjit_adamw_args, beta2, eps, weight_decay, n);

    SIZE(foxjit_api);
    F2(foxjit_api, abi_major, abi_minor);
    F2(foxjit_api, version, cfc_forward);
    F2(foxjit_api, heads_workspace_size, vsn_seq_prepare);
    F1(foxjit_api, heads_seq_backward_saved);
    F2(foxjit_api, bce_with_logits_workspace_size, bce_with_logits_wide);
    F2(foxjit_api, gae, gae_prepare);
    F2(foxjit_api, set_precision, get_precision);
    F2(foxjit_api, column_sum_workspace_size, column_sum_split);
    F2(foxjit_api, column_sum_split_prepare, heads_seq_backward_part);
    return 0;
}
