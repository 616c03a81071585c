//! On a GPU: the column sums, the sort, the rank normalization, one CfC
//! step (forward and backward), the BCE with logits (the wide form's dz
//! bitwise the one-block form's) and generalized advantage estimation
//! through the crate, each against a CPU reference. Without a GPU (or driver) it prints SKIP and passes, unless
//! FOXJIT_REQUIRE_GPU=1, which makes that a failure.
mod common;

#[path = "common/cuda.rs"]
mod cuda;

use foxjit::{CfcArgs, Library, Precision, Runtime, RuntimeParams, Ties};

struct Rng(u64);
impl Rng {
    fn next_u32(&mut self) -> u32 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545F4914F6CDD1D) >> 32) as u32
    }
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next_u32() as f32 / 4294967296.0)
    }
    fn vec(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }
}

#[track_caller]
fn assert_close(what: &str, got: &[f32], want: &[f64], atol: f64, rtol: f64) {
    assert_eq!(got.len(), want.len(), "{}: length", what);
    let mut worst = 0f64;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g as f64 - w).abs();
        assert!(err <= atol + rtol * w.abs(), "{}[{}]: got {} want {} (error {:e})", what, i, g,
                w, err);
        worst = worst.max(err);
    }
    eprintln!("  {}: {} values, worst error {:.3e}", what, got.len(), worst);
}

/// Every element of `got` within twice its bound of `want` (the bounds of
/// a float32 computation's rounding, carried step by step).
#[track_caller]
fn assert_within(what: &str, got: &[f32], want: &[f64], bound: &[f64]) {
    assert_eq!(got.len(), want.len(), "{}: length", what);
    let mut worst = 0f64;
    for i in 0..got.len() {
        let err = (got[i] as f64 - want[i]).abs();
        let allowed = 2.0 * bound[i] + 1e-30;
        assert!(err <= allowed, "{}[{}]: got {} want {} (error {:e}, allowed {:e})", what, i,
                got[i], want[i], err, allowed);
        worst = worst.max(err / allowed);
    }
    eprintln!("  {}: {} values, worst error {:.3} of the bound", what, got.len(), worst);
}

/// GAE's recurrence (kernels.md 9) in float64 over time-major `[steps,
/// envs]` rollouts: (advantages, returns, their error bounds). The bound
/// is ops/gae/test.c's: with u = 2^-24 and c = gamma lambda keep, a step's
/// rounding is at most u (3 (|r| + gamma |V'| + |V|) + 3 c |A'| + 2 |delta|),
/// and the error of A' is carried by c; returns add u (|A| + |V|).
#[allow(clippy::too_many_arguments)]
fn gae_reference(rewards: &[f32], values: &[f32], dones: &[f32], steps: usize, envs: usize,
                 gamma: f32, lambda: f32) -> [Vec<f64>; 4] {
    let u = (-24f64).exp2();
    let n = steps * envs;
    let (mut adv, mut ret, mut adv_err, mut ret_err) =
        (vec![0f64; n], vec![0f64; n], vec![0f64; n], vec![0f64; n]);
    let g = gamma as f64;
    for e in 0..envs {
        let (mut a, mut err, mut next_v) = (0f64, 0f64, values[steps * envs + e] as f64);
        for t in (0..steps).rev() {
            let i = t * envs + e;
            let keep = if dones[i] != 0.0 { 0.0 } else { 1.0 };
            let (r, v) = (rewards[i] as f64, values[i] as f64);
            let c = g * lambda as f64 * keep;
            let delta = r + g * keep * next_v - v;
            err = c * err
                + u * (3.0 * (r.abs() + g * next_v.abs() + v.abs()) + 3.0 * c * a.abs()
                    + 2.0 * delta.abs());
            a = delta + c * a;
            adv[i] = a;
            adv_err[i] = err;
            ret[i] = a + v;
            ret_err[i] = err + u * (a.abs() + v.abs());
            next_v = v;
        }
    }
    [adv, ret, adv_err, ret_err]
}

fn setup() -> Option<(cuda::Cuda, Library)> {
    let require = std::env::var("FOXJIT_REQUIRE_GPU").map(|v| v == "1").unwrap_or(false);
    let path = match common::real_library() {
        Ok(p) => p,
        Err(common::Lack::Missing(why)) if require => {
            panic!("FOXJIT_REQUIRE_GPU=1 but {}", why)
        }
        Err(lack) => {
            common::need(Err(lack));
            return None;
        }
    };
    match cuda::Cuda::open() {
        Ok(c) => Some((c, Library::open_path(&path).expect("loading libfoxjit"))),
        Err(why) => {
            assert!(!require, "FOXJIT_REQUIRE_GPU=1 but {}", why);
            common::skip_gpu(&format!("the GPU integration test needs a GPU: {}", why));
            None
        }
    }
}

fn runtime(lib: &Library) -> Runtime {
    let params = RuntimeParams {
        cache_dir: std::env::var("FOXJIT_CACHE_DIR").ok(),
        ..Default::default()
    };
    Runtime::with_params(lib, &params).expect("runtime on the current context")
}

#[test]
fn gpu_ops_match_the_cpu_reference() {
    let Some((gpu, lib)) = setup() else { return };
    let rt = runtime(&lib);
    eprintln!("GPU test on {} with fox-jit {}", rt.arch(), lib.version());
    let stream = gpu.stream() as foxjit::CUstream;
    let mut rng = Rng(0x5eed_f0c5);

    // ---- column sums: overwrite and accumulate (bias gradient) --------------
    for &(rows, cols) in &[(8192usize, 42usize), (32, 5000), (1000, 3)] {
        let x = rng.vec(rows * cols, -1.0, 1.0);
        let mut want = vec![0f64; cols];
        for r in 0..rows {
            for c in 0..cols {
                want[c] += x[r * cols + c] as f64;
            }
        }
        let dx = gpu.upload(&x);
        let out = gpu.zeros_f32(cols);
        let db0 = rng.vec(cols, -1.0, 1.0);
        let db = gpu.upload(&db0);
        unsafe {
            rt.column_sum(dx.ptr, rows as i64, cols as i64, out.ptr, false, stream).unwrap();
            rt.bias_grad_reduce(dx.ptr, rows as i64, cols as i64, db.ptr, stream).unwrap();
        }
        gpu.sync(stream as _);
        let tol = 1e-5 * rows as f64;
        assert_close(&format!("column_sum {}x{}", rows, cols), &out.download::<f32>(), &want,
                     tol, 1e-5);
        let want_db: Vec<f64> = want.iter().zip(&db0).map(|(w, &b)| w + b as f64).collect();
        assert_close(&format!("bias_grad_reduce {}x{}", rows, cols), &db.download::<f32>(),
                     &want_db, tol, 1e-5);
    }

    // ---- the split column sums: the reference, and their bits again on one
    // workspace zeroed once, which each call leaves zeroed ---------------------
    if lib.has_column_sum_split() {
        for &(rows, cols) in &[(8192usize, 42usize), (8192, 256), (1000, 77)] {
            let x = rng.vec(rows * cols, -1.0, 1.0);
            let mut want = vec![0f64; cols];
            for r in 0..rows {
                for c in 0..cols {
                    want[c] += x[r * cols + c] as f64;
                }
            }
            let (r, c) = (rows as i64, cols as i64);
            rt.column_sum_split_prepare(r, c).unwrap();
            let ws_bytes = rt.column_sum_workspace_size(r, c).unwrap();
            let ws = gpu.zeros_f32(ws_bytes / 4);
            let dx = gpu.upload(&x);
            let out = gpu.zeros_f32(cols);
            unsafe {
                rt.column_sum_split(dx.ptr, r, c, out.ptr, false, ws.ptr, ws_bytes, stream)
                    .unwrap();
            }
            gpu.sync(stream as _);
            let first = out.download::<f32>();
            assert_close(&format!("column_sum_split {}x{}", rows, cols), &first, &want,
                         1e-5 * rows as f64, 1e-5);
            for _ in 0..2 {
                unsafe {
                    rt.column_sum_split(dx.ptr, r, c, out.ptr, false, ws.ptr, ws_bytes, stream)
                        .unwrap();
                }
                gpu.sync(stream as _);
                let again = out.download::<f32>();
                for i in 0..cols {
                    assert_eq!(again[i].to_bits(), first[i].to_bits(), "column {} again", i);
                }
            }
            assert!(ws.download::<u32>()[..128].iter().all(|&w| w == 0), "counters back at 0");
        }
    } else {
        eprintln!("  column_sum_split: the library predates ABI 2.7, not run");
    }

    // ---- radix sort of pairs: exact against a stable sort ---------------------
    {
        let n = 100_000usize;
        let keys: Vec<u32> = (0..n).map(|_| rng.next_u32() % 5000).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
        want.sort_by_key(|p| p.0); // stable
        let ws = rt.radix_sort_pairs_workspace_size(n as i64, 0, 32).unwrap();
        let (kin, vin) = (gpu.upload(&keys), gpu.upload(&values));
        let (kout, vout, work) = (gpu.alloc(n * 4), gpu.alloc(n * 4), gpu.alloc(ws));
        unsafe {
            rt.radix_sort_pairs(kin.ptr, vin.ptr, kout.ptr, vout.ptr, n as i64, 0, 32, work.ptr,
                                ws, stream).unwrap();
        }
        gpu.sync(stream as _);
        let (gk, gv) = (kout.download::<u32>(), vout.download::<u32>());
        for (i, w) in want.iter().enumerate() {
            assert_eq!((gk[i], gv[i]), *w, "sorted pair {}", i);
        }
        eprintln!("  radix_sort_pairs: {} pairs, exact", n);
    }

    // ---- rank normalization (ties = max): the definition of kernels.md 2 ------
    for &ties in &[Ties::Max, Ties::Ordinal] {
        let n = 20_000usize;
        let (std_ema, mean_ema) = (1.5f32, 0.25f32);
        let mut rewards = rng.vec(n, -3.0, 3.0);
        for i in (0..n).step_by(97) {
            rewards[i] = mean_ema; // non-trades (s = 0)
        }
        for i in (0..n).step_by(31) {
            rewards[i] = rewards[(i * 7) % n]; // ties
        }
        let s: Vec<f32> = rewards.iter().map(|&r| (r - mean_ema) / std_ema).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| s[a].abs().partial_cmp(&s[b].abs()).unwrap());
        let mut rank = vec![0usize; n];
        let mut i = 0;
        while i < n {
            let mut j = i;
            while j + 1 < n && s[order[j + 1]].abs() == s[order[i]].abs() {
                j += 1;
            }
            for (p, &idx) in order.iter().enumerate().take(j + 1).skip(i) {
                rank[idx] = if ties == Ties::Max { j + 1 } else { p + 1 };
            }
            i = j + 1;
        }
        let want: Vec<f64> = (0..n)
            .map(|i| {
                if s[i].abs() > 0.001 {
                    s[i].signum() as f64 * rank[i] as f64 / n as f64
                } else {
                    0.0
                }
            })
            .collect();
        let ws = rt.rank_normalize_workspace_size(n as i64, ties).unwrap();
        let (rw, out, work) = (gpu.upload(&rewards), gpu.alloc(n * 4), gpu.alloc(ws));
        unsafe {
            rt.rank_normalize(rw.ptr, n as i64, std_ema, mean_ema, ties, out.ptr, work.ptr, ws,
                              stream).unwrap();
        }
        gpu.sync(stream as _);
        assert_close(&format!("rank_normalize {:?}", ties), &out.download::<f32>(), &want,
                     1e-6, 1e-6);
    }

    // ---- one CfC step, forward and backward ---------------------------------------
    {
        let (b, n_in, n_hid) = (6usize, 12usize, 20usize);
        let w_in = rng.vec(n_hid * n_in, -0.3, 0.3);
        let w_rec = rng.vec(n_hid * n_hid, -0.3, 0.3);
        let bias = rng.vec(n_hid, -0.1, 0.1);
        let tau = rng.vec(n_hid, 1.0, 8.0);
        let x = rng.vec(b * n_in, -1.0, 1.0);
        let h = rng.vec(b * n_hid, -1.0, 1.0);
        let dt = rng.vec(b, 0.25, 1.75);
        let dh_out = rng.vec(b * n_hid, -1.0, 1.0);

        // float64 reference of kernels.md section 3
        let mut want_h = vec![0f64; b * n_hid];
        let mut want_dh = vec![0f64; b * n_hid];
        let mut want_dx = vec![0f64; b * n_in];
        let mut want_dw_in = vec![0f64; b * n_hid * n_in];
        let mut want_dbias = vec![0f64; b * n_hid];
        let mut want_dtau = vec![0f64; b * n_hid];
        for r in 0..b {
            let mut dpre = vec![0f64; n_hid];
            for i in 0..n_hid {
                let mut pre = bias[i] as f64;
                for k in 0..n_in {
                    pre += w_in[i * n_in + k] as f64 * x[r * n_in + k] as f64;
                }
                for j in 0..n_hid {
                    pre += w_rec[i * n_hid + j] as f64 * h[r * n_hid + j] as f64;
                }
                let u = pre.tanh();
                let decay = (-(dt[r] as f64) / tau[i] as f64).exp();
                let hp = h[r * n_hid + i] as f64;
                want_h[r * n_hid + i] = decay * hp + (1.0 - decay) * u;
                let g = dh_out[r * n_hid + i] as f64;
                dpre[i] = g * (1.0 - decay) * (1.0 - u * u);
                want_dbias[r * n_hid + i] = dpre[i];
                want_dtau[r * n_hid + i] =
                    g * (hp - u) * decay * dt[r] as f64 / (tau[i] as f64 * tau[i] as f64);
                want_dh[r * n_hid + i] = g * decay;
                for k in 0..n_in {
                    want_dw_in[(r * n_hid + i) * n_in + k] = dpre[i] * x[r * n_in + k] as f64;
                }
            }
            for i in 0..n_hid {
                for j in 0..n_hid {
                    want_dh[r * n_hid + i] += w_rec[j * n_hid + i] as f64 * dpre[j];
                }
            }
            for k in 0..n_in {
                for i in 0..n_hid {
                    want_dx[r * n_in + k] += w_in[i * n_in + k] as f64 * dpre[i];
                }
            }
        }

        let d = |v: &Vec<f32>| gpu.upload(v);
        let (g_w_in, g_w_rec, g_bias, g_tau) = (d(&w_in), d(&w_rec), d(&bias), d(&tau));
        let (g_x, g_h, g_dt, g_dh_out) = (d(&x), d(&h), d(&dt), d(&dh_out));
        let g_u = gpu.zeros_f32(b * n_hid);
        let g_h_out = gpu.zeros_f32(b * n_hid);
        let g_dh = gpu.zeros_f32(b * n_hid);
        let g_dx = gpu.zeros_f32(b * n_in);
        let g_dw_in = gpu.zeros_f32(b * n_hid * n_in);
        let g_dw_rec = gpu.zeros_f32(b * n_hid * n_hid);
        let g_dbias = gpu.zeros_f32(b * n_hid);
        let g_dtau = gpu.zeros_f32(b * n_hid);
        let args = CfcArgs {
            batch: b as i32, n_in: n_in as i32, n_hid: n_hid as i32,
            w_in: g_w_in.ptr, w_rec: g_w_rec.ptr, bias: g_bias.ptr, tau: g_tau.ptr,
            x: g_x.ptr, h: g_h.ptr, dt: g_dt.ptr, dt_stride: 1, u: g_u.ptr, h_out: g_h_out.ptr,
            dh_out: g_dh_out.ptr, dh: g_dh.ptr, dx: g_dx.ptr,
            dw_in: g_dw_in.ptr, dw_rec: g_dw_rec.ptr, dbias: g_dbias.ptr, dtau: g_dtau.ptr,
            ..Default::default()
        };
        rt.cfc_prepare(n_in as i32, n_hid as i32).unwrap();
        unsafe {
            rt.cfc_forward(&args, stream).unwrap();
            rt.cfc_backward(&args, stream).unwrap();
        }
        gpu.sync(stream as _);
        let t = 2e-5;
        assert_close("cfc h_out", &g_h_out.download::<f32>(), &want_h, t, t);
        assert_close("cfc dh", &g_dh.download::<f32>(), &want_dh, t, t);
        assert_close("cfc dx", &g_dx.download::<f32>(), &want_dx, t, t);
        assert_close("cfc dw_in", &g_dw_in.download::<f32>(), &want_dw_in, t, t);
        assert_close("cfc dbias", &g_dbias.download::<f32>(), &want_dbias, t, t);
        assert_close("cfc dtau", &g_dtau.download::<f32>(), &want_dtau, t, t);
    }

    // ---- BCE with logits: the wide form (ABI 2.4) against the one-block form ---------
    if lib.has_bce_with_logits_wide() {
        for &n in &[5usize, 2049, 8193, 300_001] {
            let z = rng.vec(n, -6.0, 6.0);
            let y: Vec<f32> = (0..n)
                .map(|i| if i % 7 == 0 { 0.25 } else { (rng.next_u32() & 1) as f32 })
                .collect();
            let mut want = 0f64;
            for i in 0..n {
                let (zi, yi) = (z[i] as f64, y[i] as f64);
                want += zi.max(0.0) - zi * yi + (-zi.abs()).exp().ln_1p();
            }
            want /= n as f64;
            let ws = rt.bce_with_logits_workspace_size(n as i64).unwrap();
            assert!(ws > 0 && ws <= 8192, "workspace {} bytes", ws);
            let (gz, gy) = (gpu.upload(&z), gpu.upload(&y));
            let (loss1, loss2) = (gpu.zeros_f32(1), gpu.zeros_f32(1));
            let (dz1, dz2, work) = (gpu.alloc(n * 4), gpu.alloc(n * 4), gpu.alloc(ws));
            unsafe {
                rt.bce_with_logits(gz.ptr, gy.ptr, n as i64, loss1.ptr, false, dz1.ptr, stream)
                    .unwrap();
                rt.bce_with_logits_wide(gz.ptr, gy.ptr, n as i64, loss2.ptr, false, dz2.ptr,
                                        work.ptr, ws, stream).unwrap();
            }
            gpu.sync(stream as _);
            let (d1, d2) = (dz1.download::<u32>(), dz2.download::<u32>());
            assert!(d1 == d2, "bce n = {}: the wide dz differs from the one-block dz", n);
            assert_close(&format!("bce loss n = {} (one block)", n), &loss1.download::<f32>(),
                         &[want], 1e-6, 1e-6);
            assert_close(&format!("bce loss n = {} (wide)", n), &loss2.download::<f32>(),
                         &[want], 1e-6, 1e-6);
        }
    } else {
        eprintln!("  bce_with_logits_wide: the library predates ABI 2.4, not run");
    }

    // ---- generalized advantage estimation (ABI 2.5), with and without returns -------
    if lib.has_gae() {
        rt.gae_prepare().unwrap();
        // (steps, envs, gamma, lambda, the share of steps that end an episode)
        for &(steps, envs, gamma, lambda, done_rate) in &[
            (128usize, 1000usize, 0.99f32, 0.95f32, 0.02f32), // a PPO rollout
            (1, 1, 0.99, 0.95, 0.5),
            (37, 300, 1.0, 1.0, 0.0),   // no discount, no episode end: plain sums
            (50, 129, 0.0, 0.9, 0.1),   // gamma 0: A = r - V
            (5, 1003, 0.9, 0.0, 0.3),   // lambda 0: one-step TD errors
            (30, 129, 0.97, 0.9, 1.0),  // every step ends an episode
        ] {
            let n = steps * envs;
            let rewards = rng.vec(n, -1.0, 1.0);
            let values = rng.vec(n + envs, -3.0, 3.0);
            // (a rate of 1 ends every step, of 0 none: u32 / 2^32 < rate exactly)
            let dones: Vec<f32> = (0..n)
                .map(|_| {
                    let ended = (rng.next_u32() as f64) < done_rate as f64 * 4294967296.0;
                    if ended { 1.0 } else { 0.0 }
                })
                .collect();
            let [adv, ret, adv_err, ret_err] =
                gae_reference(&rewards, &values, &dones, steps, envs, gamma, lambda);
            let (gr, gv, gd) = (gpu.upload(&rewards), gpu.upload(&values), gpu.upload(&dones));
            let nan = vec![f32::NAN; n];
            for with_returns in [false, true] {
                let (g_adv, g_ret) = (gpu.upload(&nan), gpu.upload(&nan));
                let returns = if with_returns { g_ret.ptr } else { 0 };
                unsafe {
                    rt.gae(gr.ptr, gv.ptr, gd.ptr, steps as i64, envs as i64, gamma, lambda,
                           g_adv.ptr, returns, stream).unwrap();
                }
                gpu.sync(stream as _);
                let what = format!("gae {}x{} gamma {} lambda {}{}", steps, envs, gamma, lambda,
                                   if with_returns { "" } else { " (no returns)" });
                assert_within(&format!("{} advantages", what), &g_adv.download::<f32>(), &adv,
                              &adv_err);
                let got_ret = g_ret.download::<f32>();
                if with_returns {
                    assert_within(&format!("{} returns", what), &got_ret, &ret, &ret_err);
                } else {
                    assert!(got_ret.iter().all(|x| x.is_nan()),
                            "{}: returns written with returns = 0", what);
                }
            }
        }
    } else {
        eprintln!("  gae: the library predates ABI 2.5, not run");
    }
    // ---- the products' precision (ABI 2.6): float32 until set, then as set ------------
    if lib.has_precision() {
        assert_eq!(rt.precision(), Ok(Precision::Float32));
        rt.set_precision(Precision::Tf32).unwrap();
        assert_eq!(rt.precision(), Ok(Precision::Tf32));
        rt.set_precision(Precision::Float32).unwrap();
        assert_eq!(rt.precision(), Ok(Precision::Float32));
    } else {
        eprintln!("  set_precision: the library predates ABI 2.6, not run");
    }
    let c = rt.counters().unwrap();
    eprintln!("GPU test passed ({} modules loaded, {} compiles)", c.modules_loaded, c.compiles);
}
