//! The C types of `include/foxjit/foxjit.h`, field for field (`#[repr(C)]`),
//! and the few libc calls that load a shared library.
//!
//! The layouts are checked against the C compiler's by the `abi_layout`
//! test (it compares with the output of `tests/bindings/abi_layout.c`).
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

/// A device address, as `cudarc`'s `DevicePtr::device_ptr` gives it.
pub type CUdeviceptr = u64;
/// A raw CUDA stream (`CUstream`); null is the legacy default stream.
/// `cudarc`'s `CudaStream::cu_stream()` casts to it with `as CUstream`.
pub type CUstream = *mut c_void;

pub(crate) type Status = c_int;
pub(crate) type RuntimePtr = *mut c_void;

/// The ABI major version of the function table this crate was written for.
pub const ABI_MAJOR: u32 = 2;
/// The smallest ABI minor version the crate needs (2.1: the sequence ops).
/// A 2.1 library ignores `RuntimeParams::target` (2.2): it reads only the
/// struct_size bytes it knows. The heads' save (2.3), the wide BCE (2.4),
/// generalized advantage estimation (2.5), the products' precision (2.6),
/// the split column sums (2.7) and the heads' backward in parts (2.8) are
/// called only when the library's table has them; otherwise those calls
/// return `Error::Abi`.
pub const ABI_MINOR: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawRuntimeParams {
    pub struct_size: usize,
    pub cache_dir: *const c_char,
    pub readonly_cache_dirs: *const c_char,
    pub cache_max_bytes: u64,
    pub disable_disk_cache: c_int,
    /// ABI 2.2; the library writes struct_size bytes here, so the field must
    /// exist even where the crate leaves it NULL.
    pub target: *const c_char,
}

/// `foxjit_counters`: what the runtime's kernel cache has done.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counters {
    pub disk_hits: u64,
    pub disk_misses: u64,
    pub compiles: u64,
    pub compile_ms: f64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub corrupt_entries: u64,
    pub evictions: u64,
    pub write_failures: u64,
    pub modules_loaded: u64,
}

/// `foxjit_cfc_args`: one CfC step (see the C header for each field).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CfcArgs {
    pub batch: c_int,
    pub n_in: c_int,
    pub n_hid: c_int,
    pub w_in: CUdeviceptr,
    pub w_rec: CUdeviceptr,
    pub bias: CUdeviceptr,
    pub tau: CUdeviceptr,
    pub x: CUdeviceptr,
    pub x_stride: i64,
    pub h: CUdeviceptr,
    pub h_stride: i64,
    pub dt: CUdeviceptr,
    pub dt_stride: i64,
    pub u: CUdeviceptr,
    pub u_stride: i64,
    pub h_out: CUdeviceptr,
    pub h_out_stride: i64,
    pub dh_out: CUdeviceptr,
    pub dh_out_stride: i64,
    pub dh: CUdeviceptr,
    pub dh_stride: i64,
    pub dh_accumulate: c_int,
    pub dx: CUdeviceptr,
    pub dx_stride: i64,
    pub dx_accumulate: c_int,
    pub dw_in: CUdeviceptr,
    pub dw_rec: CUdeviceptr,
    pub dbias: CUdeviceptr,
    pub dtau: CUdeviceptr,
}

/// `foxjit_heads_args`: the GRN heads over one or several steps.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HeadsArgs {
    pub batch: c_int,
    pub d: c_int,
    pub e: c_int,
    pub h: c_int,
    pub w1: CUdeviceptr,
    pub b1: CUdeviceptr,
    pub w2: CUdeviceptr,
    pub b2: CUdeviceptr,
    pub w_gate: CUdeviceptr,
    pub b_gate: CUdeviceptr,
    pub w_main: CUdeviceptr,
    pub b_main: CUdeviceptr,
    pub w_skip: CUdeviceptr,
    pub b_skip: CUdeviceptr,
    pub x: CUdeviceptr,
    pub x_stride: i64,
    pub logits: CUdeviceptr,
    pub logits_stride: i64,
    pub dlogits: CUdeviceptr,
    pub dlogits_stride: i64,
    pub dx: CUdeviceptr,
    pub dx_stride: i64,
    pub dx_accumulate: c_int,
    pub dw1: CUdeviceptr,
    pub db1: CUdeviceptr,
    pub dw2: CUdeviceptr,
    pub db2: CUdeviceptr,
    pub dw_gate: CUdeviceptr,
    pub db_gate: CUdeviceptr,
    pub dw_main: CUdeviceptr,
    pub db_main: CUdeviceptr,
    pub dw_skip: CUdeviceptr,
    pub db_skip: CUdeviceptr,
    pub steps: c_int,
    pub x_step_stride: i64,
    pub logits_step_stride: i64,
    pub dlogits_step_stride: i64,
    pub dx_step_stride: i64,
    pub work: CUdeviceptr,
    pub work_bytes: usize,
}

/// `foxjit_vsn_args`: variable selection over `[batch, t, f]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct VsnArgs {
    pub batch: c_int,
    pub t: c_int,
    pub f: c_int,
    pub w: CUdeviceptr,
    pub bias: CUdeviceptr,
    pub x: CUdeviceptr,
    pub y: CUdeviceptr,
    pub dy: CUdeviceptr,
    pub dx: CUdeviceptr,
    pub dx_accumulate: c_int,
    pub dw: CUdeviceptr,
    pub dbias: CUdeviceptr,
}

/// `foxjit_attn_pool_args`: attention pooling with a learned query.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct AttnPoolArgs {
    pub batch: c_int,
    pub t: c_int,
    pub d: c_int,
    pub q: CUdeviceptr,
    pub hs: CUdeviceptr,
    pub pooled: CUdeviceptr,
    pub dpooled: CUdeviceptr,
    pub dhs: CUdeviceptr,
    pub dhs_accumulate: c_int,
    pub dq: CUdeviceptr,
}

/// `foxjit_perception_limits`: the largest supported dims.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerceptionLimits {
    pub max_batch: c_int,
    pub max_t: c_int,
    pub max_n_hid: c_int,
    pub max_n_in: c_int,
    pub max_e: c_int,
    pub max_h: c_int,
    pub max_f: c_int,
    pub max_d: c_int,
}

/// `foxjit_cfc_seq_args`: the CfC recurrence over k steps.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CfcSeqArgs {
    pub batch: c_int,
    pub k: c_int,
    pub n_in: c_int,
    pub n_hid: c_int,
    pub w_in: CUdeviceptr,
    pub w_rec: CUdeviceptr,
    pub bias: CUdeviceptr,
    pub tau: CUdeviceptr,
    pub x: CUdeviceptr,
    pub dt: CUdeviceptr,
    pub h_init: CUdeviceptr,
    pub h: CUdeviceptr,
    pub u: CUdeviceptr,
    pub dh: CUdeviceptr,
    pub dx: CUdeviceptr,
    pub dx_accumulate: c_int,
    pub dh_init: CUdeviceptr,
    pub dh_init_accumulate: c_int,
    pub dw_in: CUdeviceptr,
    pub dw_rec: CUdeviceptr,
    pub dbias: CUdeviceptr,
    pub dtau: CUdeviceptr,
    pub grad_accumulate: c_int,
    pub work: CUdeviceptr,
    pub work_bytes: usize,
}

/// `foxjit_heads_seq_args`: the GRN heads over batch x steps rows.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct HeadsSeqArgs {
    pub batch: c_int,
    pub steps: c_int,
    pub d: c_int,
    pub e: c_int,
    pub h: c_int,
    pub w1: CUdeviceptr,
    pub b1: CUdeviceptr,
    pub w2: CUdeviceptr,
    pub b2: CUdeviceptr,
    pub w_gate: CUdeviceptr,
    pub b_gate: CUdeviceptr,
    pub w_main: CUdeviceptr,
    pub b_main: CUdeviceptr,
    pub w_skip: CUdeviceptr,
    pub b_skip: CUdeviceptr,
    pub x: CUdeviceptr,
    pub x_stride: i64,
    pub x_step_stride: i64,
    pub logits: CUdeviceptr,
    pub logits_stride: i64,
    pub logits_step_stride: i64,
    pub dlogits: CUdeviceptr,
    pub dlogits_stride: i64,
    pub dlogits_step_stride: i64,
    pub dx: CUdeviceptr,
    pub dx_stride: i64,
    pub dx_step_stride: i64,
    pub dx_accumulate: c_int,
    pub dw1: CUdeviceptr,
    pub db1: CUdeviceptr,
    pub dw2: CUdeviceptr,
    pub db2: CUdeviceptr,
    pub dw_gate: CUdeviceptr,
    pub db_gate: CUdeviceptr,
    pub dw_main: CUdeviceptr,
    pub db_main: CUdeviceptr,
    pub dw_skip: CUdeviceptr,
    pub db_skip: CUdeviceptr,
    pub grad_accumulate: c_int,
    pub work: CUdeviceptr,
    pub work_bytes: usize,
}

/// `foxjit_vsn_seq_args`: the variable-selection backward over all rows.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct VsnSeqArgs {
    pub batch: c_int,
    pub t: c_int,
    pub f: c_int,
    pub w: CUdeviceptr,
    pub bias: CUdeviceptr,
    pub x: CUdeviceptr,
    pub dy: CUdeviceptr,
    pub dx: CUdeviceptr,
    pub dx_accumulate: c_int,
    pub dw: CUdeviceptr,
    pub dbias: CUdeviceptr,
    pub grad_accumulate: c_int,
    pub work: CUdeviceptr,
    pub work_bytes: usize,
}

/// `foxjit_adamw_args`: fused AdamW over one tensor.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct AdamwArgs {
    pub n: i64,
    pub param: CUdeviceptr,
    pub grad: CUdeviceptr,
    pub m: CUdeviceptr,
    pub v: CUdeviceptr,
    pub step: CUdeviceptr,
    pub lr: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub eps: f32,
    pub weight_decay: f32,
}

type Rt = RuntimePtr;
type S = CUstream;
type D = CUdeviceptr;

/// `foxjit_api`, the plugin table, up to the last entry this crate calls.
#[repr(C)]
pub(crate) struct Api {
    pub struct_size: usize,
    pub abi_major: u32,
    pub abi_minor: u32,

    pub version: unsafe extern "C" fn() -> *const c_char,
    pub status_string: unsafe extern "C" fn(Status) -> *const c_char,
    pub last_error: unsafe extern "C" fn() -> *const c_char,

    pub runtime_default_params: unsafe extern "C" fn(*mut RawRuntimeParams),
    pub runtime_create: unsafe extern "C" fn(*const RawRuntimeParams, *mut Rt) -> Status,
    pub runtime_destroy: unsafe extern "C" fn(*mut Rt),
    pub runtime_get_counters: unsafe extern "C" fn(Rt, *mut Counters) -> Status,
    pub runtime_arch: unsafe extern "C" fn(Rt) -> *const c_char,

    pub column_sum: unsafe extern "C" fn(Rt, D, i64, i64, D, c_int, S) -> Status,
    pub bias_grad_reduce: unsafe extern "C" fn(Rt, D, i64, i64, D, S) -> Status,
    pub curiosity_bias_grad_reduce: unsafe extern "C" fn(Rt, D, i64, i64, D, S) -> Status,
    pub reduce_axis0: unsafe extern "C" fn(Rt, D, i64, i64, D, S) -> Status,
    pub column_sum_prepare: unsafe extern "C" fn(Rt, i64, i64) -> Status,

    pub radix_sort_pairs_workspace_size:
        unsafe extern "C" fn(Rt, i64, c_int, c_int, *mut usize) -> Status,
    pub radix_sort_pairs:
        unsafe extern "C" fn(Rt, D, D, D, D, i64, c_int, c_int, D, usize, S) -> Status,
    pub radix_sort_prepare: unsafe extern "C" fn(Rt) -> Status,
    pub rank_normalize_workspace_size: unsafe extern "C" fn(Rt, i64, c_int, *mut usize) -> Status,
    pub rank_normalize: unsafe extern "C" fn(Rt, D, i64, f32, f32, c_int, D, D, usize, S) -> Status,
    pub rank_normalize_prepare: unsafe extern "C" fn(Rt, c_int) -> Status,

    pub cfc_forward: unsafe extern "C" fn(Rt, *const CfcArgs, S) -> Status,
    pub cfc_backward: unsafe extern "C" fn(Rt, *const CfcArgs, S) -> Status,
    pub cfc_prepare: unsafe extern "C" fn(Rt, c_int, c_int) -> Status,
    pub heads_forward: unsafe extern "C" fn(Rt, *const HeadsArgs, S) -> Status,
    pub heads_backward: unsafe extern "C" fn(Rt, *const HeadsArgs, S) -> Status,
    pub heads_prepare: unsafe extern "C" fn(Rt, c_int, c_int, c_int) -> Status,
    pub vsn_forward: unsafe extern "C" fn(Rt, *const VsnArgs, S) -> Status,
    pub vsn_backward: unsafe extern "C" fn(Rt, *const VsnArgs, S) -> Status,
    pub vsn_prepare: unsafe extern "C" fn(Rt, c_int) -> Status,
    pub attn_pool_forward: unsafe extern "C" fn(Rt, *const AttnPoolArgs, S) -> Status,
    pub attn_pool_backward: unsafe extern "C" fn(Rt, *const AttnPoolArgs, S) -> Status,
    pub attn_pool_prepare: unsafe extern "C" fn(Rt, c_int) -> Status,
    pub get_perception_limits: unsafe extern "C" fn(*mut PerceptionLimits),

    pub bce_with_logits: unsafe extern "C" fn(Rt, D, D, i64, D, c_int, D, S) -> Status,
    pub adamw: unsafe extern "C" fn(Rt, *const AdamwArgs, S) -> Status,
    pub increment_step: unsafe extern "C" fn(Rt, D, S) -> Status,
    pub training_prepare: unsafe extern "C" fn(Rt) -> Status,
    pub heads_workspace_size: unsafe extern "C" fn(c_int, c_int, c_int, c_int) -> usize,

    pub cfc_seq_workspace_size:
        unsafe extern "C" fn(Rt, c_int, c_int, c_int, c_int, *mut usize) -> Status,
    pub cfc_seq_forward: unsafe extern "C" fn(Rt, *const CfcSeqArgs, S) -> Status,
    pub cfc_seq_backward: unsafe extern "C" fn(Rt, *const CfcSeqArgs, S) -> Status,
    pub cfc_seq_prepare: unsafe extern "C" fn(Rt, c_int, c_int) -> Status,
    pub heads_seq_workspace_size:
        unsafe extern "C" fn(Rt, c_int, c_int, c_int, c_int, c_int, *mut usize) -> Status,
    pub heads_seq_forward: unsafe extern "C" fn(Rt, *const HeadsSeqArgs, S) -> Status,
    pub heads_seq_backward: unsafe extern "C" fn(Rt, *const HeadsSeqArgs, S) -> Status,
    pub heads_seq_prepare: unsafe extern "C" fn(Rt, c_int, c_int, c_int) -> Status,
    pub vsn_seq_workspace_size: unsafe extern "C" fn(Rt, c_int, c_int, c_int, *mut usize) -> Status,
    pub vsn_seq_backward: unsafe extern "C" fn(Rt, *const VsnSeqArgs, S) -> Status,
    pub vsn_seq_prepare: unsafe extern "C" fn(Rt, c_int) -> Status,
    // ABI 2.3
    pub heads_seq_saved_size:
        unsafe extern "C" fn(Rt, c_int, c_int, c_int, c_int, c_int, *mut usize) -> Status,
    pub heads_seq_forward_save:
        unsafe extern "C" fn(Rt, *const HeadsSeqArgs, CUdeviceptr, usize, S) -> Status,
    pub heads_seq_backward_saved:
        unsafe extern "C" fn(Rt, *const HeadsSeqArgs, CUdeviceptr, usize, S) -> Status,
    // ABI 2.4
    pub bce_with_logits_workspace_size: unsafe extern "C" fn(Rt, i64, *mut usize) -> Status,
    pub bce_with_logits_wide:
        unsafe extern "C" fn(Rt, D, D, i64, D, c_int, D, D, usize, S) -> Status,
    // ABI 2.5
    pub gae: unsafe extern "C" fn(Rt, D, D, D, i64, i64, f32, f32, D, D, S) -> Status,
    pub gae_prepare: unsafe extern "C" fn(Rt) -> Status,
    // ABI 2.6 (foxjit_precision passed as the C enum's int)
    pub set_precision: unsafe extern "C" fn(Rt, c_int) -> Status,
    pub get_precision: unsafe extern "C" fn(Rt, *mut c_int) -> Status,
    // ABI 2.7
    pub column_sum_workspace_size: unsafe extern "C" fn(Rt, i64, i64, *mut usize) -> Status,
    pub column_sum_split: unsafe extern "C" fn(Rt, D, i64, i64, D, c_int, D, usize, S) -> Status,
    pub column_sum_split_prepare: unsafe extern "C" fn(Rt, i64, i64) -> Status,
    // ABI 2.8 (foxjit_heads_seq_part passed as the C enum's int)
    pub heads_seq_backward_part:
        unsafe extern "C" fn(Rt, *const HeadsSeqArgs, CUdeviceptr, usize, c_int, S) -> Status,
}

pub(crate) type GetApiFn = unsafe extern "C" fn(u32) -> *const Api;

/// The offset of field `$f` of the table (address arithmetic on an
/// uninitialized value: nothing is read; rust-version 1.65 has no offset_of!).
macro_rules! api_offset {
    ($f:ident) => {{
        let u = std::mem::MaybeUninit::<Api>::uninit();
        let base = u.as_ptr();
        let field = unsafe { std::ptr::addr_of!((*base).$f) };
        field as usize - base as usize
    }};
}

/// The ABI 2.1 table's size: where the first ABI 2.3 entry starts.
pub(crate) fn api_offset_heads_seq_saved_size() -> usize {
    api_offset!(heads_seq_saved_size)
}
/// The ends of the ABI 2.3 entries (a table holds one when its size reaches it).
pub(crate) fn api_end_heads_seq_saved_size() -> usize {
    api_offset!(heads_seq_saved_size) + std::mem::size_of::<usize>()
}
pub(crate) fn api_end_heads_seq_forward_save() -> usize {
    api_offset!(heads_seq_forward_save) + std::mem::size_of::<usize>()
}
pub(crate) fn api_end_heads_seq_backward_saved() -> usize {
    api_offset!(heads_seq_backward_saved) + std::mem::size_of::<usize>()
}
/// The ends of the ABI 2.4 entries (the wide BCE).
pub(crate) fn api_end_bce_with_logits_workspace_size() -> usize {
    api_offset!(bce_with_logits_workspace_size) + std::mem::size_of::<usize>()
}
pub(crate) fn api_end_bce_with_logits_wide() -> usize {
    api_offset!(bce_with_logits_wide) + std::mem::size_of::<usize>()
}
/// The ends of the ABI 2.5 entries (generalized advantage estimation).
pub(crate) fn api_end_gae() -> usize {
    api_offset!(gae) + std::mem::size_of::<usize>()
}
pub(crate) fn api_end_gae_prepare() -> usize {
    api_offset!(gae_prepare) + std::mem::size_of::<usize>()
}
/// The ends of the ABI 2.6 entries (the products' precision).
pub(crate) fn api_end_set_precision() -> usize {
    api_offset!(set_precision) + std::mem::size_of::<usize>()
}
pub(crate) fn api_end_get_precision() -> usize {
    api_offset!(get_precision) + std::mem::size_of::<usize>()
}
/// The ends of the ABI 2.7 entries (the split column sums).
pub(crate) fn api_end_column_sum_workspace_size() -> usize {
    api_offset!(column_sum_workspace_size) + std::mem::size_of::<usize>()
}
pub(crate) fn api_end_column_sum_split() -> usize {
    api_offset!(column_sum_split) + std::mem::size_of::<usize>()
}
pub(crate) fn api_end_column_sum_split_prepare() -> usize {
    api_offset!(column_sum_split_prepare) + std::mem::size_of::<usize>()
}
/// The end of the ABI 2.8 entry (the heads' backward in parts).
pub(crate) fn api_end_heads_seq_backward_part() -> usize {
    api_offset!(heads_seq_backward_part) + std::mem::size_of::<usize>()
}

pub(crate) const RTLD_NOW: c_int = 2;
pub(crate) const RTLD_LOCAL: c_int = 0;

#[link(name = "dl")]
extern "C" {
    pub(crate) fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    pub(crate) fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    pub(crate) fn dlerror() -> *mut c_char;
    pub(crate) fn dlclose(handle: *mut c_void) -> c_int;
}

/// Offsets of the public structs' fields, for the layout test.
#[doc(hidden)]
pub fn layout() -> Vec<(String, usize)> {
    use std::mem::size_of;
    macro_rules! off {
        ($v:ident, $t:ty, $c:expr, $($f:ident),*) => {
            $v.push((format!("{}.SIZE", $c), size_of::<$t>()));
            $( $v.push((format!("{}.{}", $c, stringify!($f)), offset_of_field!($t, $f))); )*
        };
    }
    macro_rules! offset_of_field {
        ($t:ty, $f:ident) => {{
            let u = std::mem::MaybeUninit::<$t>::uninit();
            let base = u.as_ptr();
            // Address arithmetic only: the field is never read.
            let field = unsafe { std::ptr::addr_of!((*base).$f) };
            field as usize - base as usize
        }};
    }
    let mut v = Vec::new();
    off!(v, RawRuntimeParams, "foxjit_runtime_params", struct_size, cache_dir,
         readonly_cache_dirs, cache_max_bytes, disable_disk_cache, target);
    off!(v, Counters, "foxjit_counters", disk_hits, disk_misses, compiles, compile_ms,
         bytes_read, bytes_written, corrupt_entries, evictions, write_failures, modules_loaded);
    off!(v, CfcArgs, "foxjit_cfc_args", batch, n_in, n_hid, w_in, w_rec, bias, tau, x,
         x_stride, h, h_stride, dt, dt_stride, u, u_stride, h_out, h_out_stride, dh_out,
         dh_out_stride, dh, dh_stride, dh_accumulate, dx, dx_stride, dx_accumulate, dw_in,
         dw_rec, dbias, dtau);
    off!(v, HeadsArgs, "foxjit_heads_args", batch, d, e, h, w1, b1, w2, b2, w_gate, b_gate,
         w_main, b_main, w_skip, b_skip, x, x_stride, logits, logits_stride, dlogits,
         dlogits_stride, dx, dx_stride, dx_accumulate, dw1, db1, dw2, db2, dw_gate, db_gate,
         dw_main, db_main, dw_skip, db_skip, steps, x_step_stride, logits_step_stride,
         dlogits_step_stride, dx_step_stride, work, work_bytes);
    off!(v, VsnArgs, "foxjit_vsn_args", batch, t, f, w, bias, x, y, dy, dx, dx_accumulate, dw,
         dbias);
    off!(v, AttnPoolArgs, "foxjit_attn_pool_args", batch, t, d, q, hs, pooled, dpooled, dhs,
         dhs_accumulate, dq);
    off!(v, PerceptionLimits, "foxjit_perception_limits", max_batch, max_t, max_n_hid,
         max_n_in, max_e, max_h, max_f, max_d);
    off!(v, CfcSeqArgs, "foxjit_cfc_seq_args", batch, k, n_in, n_hid, w_in, w_rec, bias, tau,
         x, dt, h_init, h, u, dh, dx, dx_accumulate, dh_init, dh_init_accumulate, dw_in, dw_rec,
         dbias, dtau, grad_accumulate, work, work_bytes);
    off!(v, HeadsSeqArgs, "foxjit_heads_seq_args", batch, steps, d, e, h, w1, b1, w2, b2,
         w_gate, b_gate, w_main, b_main, w_skip, b_skip, x, x_stride, x_step_stride, logits,
         logits_stride, logits_step_stride, dlogits, dlogits_stride, dlogits_step_stride, dx,
         dx_stride, dx_step_stride, dx_accumulate, dw1, db1, dw2, db2, dw_gate, db_gate,
         dw_main, db_main, dw_skip, db_skip, grad_accumulate, work, work_bytes);
    off!(v, VsnSeqArgs, "foxjit_vsn_seq_args", batch, t, f, w, bias, x, dy, dx, dx_accumulate,
         dw, dbias, grad_accumulate, work, work_bytes);
    off!(v, AdamwArgs, "foxjit_adamw_args", n, param, grad, m, v, step, lr, beta1, beta2, eps,
         weight_decay);
    off!(v, Api, "foxjit_api", abi_major, abi_minor, version, cfc_forward,
         heads_workspace_size, vsn_seq_prepare, heads_seq_backward_saved,
         bce_with_logits_workspace_size, bce_with_logits_wide, gae, gae_prepare, set_precision,
         get_precision, column_sum_workspace_size, column_sum_split, column_sum_split_prepare,
         heads_seq_backward_part);
    v
}
