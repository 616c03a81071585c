//! The quick start: find and load fox-jit, make a GPU's context current,
//! create a runtime, and run a bias gradient (`db += sum over the batch of
//! dy`) and a rank normalization of rewards, each checked against the CPU.
//!
//!     cargo run --example quickstart
//!
//! Without a GPU it stops after loading the library and says so (exit 0);
//! without the library it prints where it looked and what to do (exit 1).
//! A trainer has its own CUDA context, buffers and stream (cudarc's, say:
//! the crate's README shows the wiring); this example brings the few driver
//! calls it needs in `cuda.rs`.
#[path = "../tests/common/cuda.rs"]
mod cuda;

use foxjit::{Library, Runtime, Ties};

const BATCH: usize = 8192;
const OUT_DIM: usize = 42;
const N: usize = 10_000;

fn main() {
    let lib = match Library::open() {
        Ok(lib) => lib,
        Err(e) => {
            eprintln!("quickstart: {}", e);
            std::process::exit(1);
        }
    };
    println!("fox-jit {} from {} (found through {})", lib.version(), lib.path(), lib.source());

    let gpu = match cuda::Cuda::open() {
        Ok(gpu) => gpu,
        Err(why) => {
            println!("quickstart: no GPU to run on: {}; fox-jit loaded, nothing more to run",
                     why);
            return;
        }
    };
    if let Err(e) = run(&lib, &gpu) {
        eprintln!("quickstart: {}", e);
        std::process::exit(1);
    }
}

fn run(lib: &Library, gpu: &cuda::Cuda) -> foxjit::Result<()> {
    // The runtime binds to the context current now (the device's primary
    // context, which cuda::Cuda::open made current).
    let rt = Runtime::new(lib)?;
    // Compile (or load from the disk cache) before the first call, as a
    // trainer does before capturing a CUDA graph.
    rt.column_sum_prepare(BATCH as i64, OUT_DIM as i64)?;
    rt.rank_normalize_prepare(Ties::Max)?;
    let stream = gpu.stream() as foxjit::CUstream;

    // Bias gradient: dy [BATCH, OUT_DIM] -> db [OUT_DIM] (+=).
    let dy: Vec<f32> = (0..BATCH * OUT_DIM).map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let db0: Vec<f32> = (0..OUT_DIM).map(|j| j as f32 * 0.01).collect();
    let (d_dy, d_db) = (gpu.upload(&dy), gpu.upload(&db0));
    // Safety: d_dy holds BATCH x OUT_DIM floats and d_db OUT_DIM, on the
    // runtime's context.
    unsafe { rt.bias_grad_reduce(d_dy.ptr, BATCH as i64, OUT_DIM as i64, d_db.ptr, stream)? };

    // Rank normalization: out_i = sign(s_i) * #{j : |s_j| <= |s_i|} / n,
    // s = (r - mean_ema) / std_ema, with its workspace allocated once.
    let rewards: Vec<f32> = (0..N).map(|i| ((i * 104_729) % 20_011) as f32 / 10_000.0 - 1.0)
        .collect();
    let bytes = rt.rank_normalize_workspace_size(N as i64, Ties::Max)?;
    let (d_rew, d_out, d_work) = (gpu.upload(&rewards), gpu.zeros_f32(N), gpu.alloc(bytes));
    // Safety: d_rew and d_out hold N floats, d_work `bytes` bytes.
    unsafe {
        rt.rank_normalize(d_rew.ptr, N as i64, 1.0, 0.0, Ties::Max, d_out.ptr, d_work.ptr, bytes,
                          stream)?
    };
    gpu.sync(stream as _);

    let db: Vec<f32> = d_db.download();
    let mut bad = 0;
    for j in 0..OUT_DIM {
        let want: f64 = db0[j] as f64 + (0..BATCH).map(|i| dy[i * OUT_DIM + j] as f64).sum::<f64>();
        if (db[j] as f64 - want).abs() > 1e-3 {
            eprintln!("db[{}] = {}, expected {}", j, db[j], want);
            bad += 1;
        }
    }
    let out: Vec<f32> = d_out.download();
    for i in (0..N).step_by(37) {
        let s = rewards[i].abs();
        let rank = rewards.iter().filter(|r| r.abs() <= s).count();
        let want = if s > 0.001 { rewards[i].signum() * rank as f32 / N as f32 } else { 0.0 };
        if (out[i] - want).abs() > 1e-6 {
            eprintln!("rank[{}] = {}, expected {}", i, out[i], want);
            bad += 1;
        }
    }
    if bad > 0 {
        eprintln!("quickstart: {} values differ from the CPU's", bad);
        std::process::exit(1);
    }
    println!("ok: bias gradient of {}x{} and rank normalization of {} on {}", BATCH, OUT_DIM, N,
             rt.arch());
    Ok(())
}
