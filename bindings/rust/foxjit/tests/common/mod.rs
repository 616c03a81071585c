//! Shared by the tests: the files they need (the real library, the fake
//! library of another ABI, the C compiler's struct layouts), found or built
//! here, and the one line that says what was skipped.
//!
//! meson's variables name each file (FOXJIT_TEST_LIBRARY,
//! FOXJIT_TEST_FAKE_LIBRARY, FOXJIT_TEST_LAYOUT) and win when set. Without
//! them the real library is the crate's own search (`Library::open`) with a
//! meson build of this checkout (`<repo>/build*/runtime/libfoxjit.so.1`,
//! newest first) tried before it, and the other two are compiled from
//! tests/bindings/ with the system's C compiler and the CUDA headers.
//!
//! A test that lacks a file is skipped, and the test program prints one line
//! at its end counting the skips and saying why. `--features require-all`
//! or FOXJIT_REQUIRE_ALL=1 makes such a skip a failure; a missing GPU is
//! governed by FOXJIT_REQUIRE_GPU=1 instead.
#![allow(dead_code)]

use std::io::Write;
use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, Once};

use foxjit::Library;

pub fn repo_root() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..");
    std::fs::canonicalize(&p).unwrap_or(p)
}

/// Why a file a test needs is not at hand.
#[derive(Clone, Debug)]
pub enum Lack {
    /// Nothing to build or find it with: the test is skipped.
    Missing(String),
    /// The tools are here but building it failed: the test fails.
    Broken(String),
}

/// The path, or None after recording the skip; a broken build panics.
#[track_caller]
pub fn need(found: Result<String, Lack>) -> Option<String> {
    match found {
        Ok(p) => Some(p),
        Err(Lack::Missing(why)) => {
            skip(&why);
            None
        }
        Err(Lack::Broken(why)) => panic!("{}", why),
    }
}

fn from_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|p| !p.is_empty())
}

/// Computes a value once per test program; tests run on parallel threads.
fn once(cell: &Mutex<Option<Result<String, Lack>>>, f: impl FnOnce() -> Result<String, Lack>)
    -> Result<String, Lack> {
    let mut g = cell.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        *g = Some(f());
    }
    g.clone().unwrap()
}

static REAL: Mutex<Option<Result<String, Lack>>> = Mutex::new(None);
static FAKE: Mutex<Option<Result<String, Lack>>> = Mutex::new(None);
static LAYOUT: Mutex<Option<Result<String, Lack>>> = Mutex::new(None);

/// The real libfoxjit.so.1: $FOXJIT_TEST_LIBRARY, $FOXJIT_LIBRARY (either
/// is used as given: one that does not load fails the tests), a meson build
/// of this checkout, then the crate's search (pkg-config, the loader).
pub fn real_library() -> Result<String, Lack> {
    once(&REAL, || {
        if let Some(p) = from_env("FOXJIT_TEST_LIBRARY").or_else(|| from_env("FOXJIT_LIBRARY")) {
            return Ok(p);
        }
        let mut tried = Vec::new();
        let builds = meson_builds();
        if builds.is_empty() {
            tried.push(format!("a meson build of this checkout: no {}/build*/runtime/\
                                libfoxjit.so.1", repo_root().display()));
        }
        for p in builds {
            match Library::open_path(&p) {
                Ok(_) => return Ok(p),
                Err(e) => tried.push(e.to_string()),
            }
        }
        match Library::open() {
            Ok(lib) => Ok(lib.path().to_string()),
            Err(e) => {
                // The places the crate's error lists ("...; tried: A; B. To
                // fix: ..."); the tests give their own advice.
                let m = e.message();
                let start = m.find("tried: ").map(|i| i + 7).unwrap_or(0);
                let end = m.find(". To fix:").unwrap_or(m.len());
                tried.push(m[start..end.max(start)].to_string());
                Err(Lack::Missing(format!(
                    "no libfoxjit.so.1 found (tried: FOXJIT_TEST_LIBRARY: not set; {}): build \
                     it (meson setup build -Dtoolkit=/usr/local/cuda && ninja -C build) or set \
                     FOXJIT_LIBRARY",
                    tried.join("; ")
                )))
            }
        }
    })
}

/// `<repo>/build*/runtime/libfoxjit.so.1`, the newest first.
fn meson_builds() -> Vec<String> {
    let mut found: Vec<(std::time::SystemTime, String)> = Vec::new();
    let Ok(dir) = std::fs::read_dir(repo_root()) else { return Vec::new() };
    for entry in dir.flatten() {
        if !entry.file_name().to_string_lossy().starts_with("build") {
            continue;
        }
        let lib = entry.path().join("runtime/libfoxjit.so.1");
        if let Ok(m) = std::fs::metadata(&lib).and_then(|m| m.modified()) {
            found.push((m, lib.to_string_lossy().into_owned()));
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    found.into_iter().map(|(_, p)| p).collect()
}

/// The fake library of another ABI (tests/bindings/fake_foxjit.c).
pub fn fake_library() -> Result<String, Lack> {
    once(&FAKE, || {
        if let Some(p) = from_env("FOXJIT_TEST_FAKE_LIBRARY") {
            return Ok(p);
        }
        let out = c_out_dir().join("libfake_foxjit.so");
        compile("fake_foxjit.c", &out, &["-shared", "-fPIC"])?;
        Ok(out.to_string_lossy().into_owned())
    })
}

/// The C compiler's struct layouts, "struct.field offset" lines
/// (tests/bindings/abi_layout.c, run).
pub fn layout_listing() -> Result<String, Lack> {
    once(&LAYOUT, || {
        if let Some(p) = from_env("FOXJIT_TEST_LAYOUT") {
            return Ok(p);
        }
        let dir = c_out_dir();
        let exe = dir.join("abi_layout");
        compile("abi_layout.c", &exe, &[])?;
        let out = Command::new(&exe)
            .output()
            .map_err(|e| Lack::Broken(format!("running {}: {}", exe.display(), e)))?;
        if !out.status.success() {
            return Err(Lack::Broken(format!("{} failed: {}", exe.display(), out.status)));
        }
        let txt = dir.join("abi_layout.txt");
        write_atomically(&txt, &out.stdout)?;
        Ok(txt.to_string_lossy().into_owned())
    })
}

fn c_out_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("foxjit-c");
    let _ = std::fs::create_dir_all(&d);
    d
}

/// Writes through a name of this process's, then renames: another test
/// program building the same file at the same time never sees half of it.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Lack> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| Lack::Broken(format!("writing {}: {}", path.display(), e)))
}

/// The directory of cuda.h: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda (each
/// /include), /usr/include; or the places looked at.
fn cuda_include() -> Result<PathBuf, String> {
    let mut dirs: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| from_env(v))
        .map(|d| PathBuf::from(d).join("include"))
        .collect();
    dirs.push("/usr/local/cuda/include".into());
    dirs.push("/usr/include".into());
    match dirs.iter().find(|d| d.join("cuda.h").is_file()) {
        Some(d) => Ok(d.clone()),
        None => Err(format!(
            "no cuda.h in {} (install the CUDA toolkit, or set CUDA_HOME)",
            dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Compiles tests/bindings/<source> against the repository's header with
/// $CC (default cc); a missing compiler, header or source is a Lack::Missing.
fn compile(source: &str, out: &Path, extra: &[&str]) -> Result<(), Lack> {
    let src = repo_root().join("tests/bindings").join(source);
    if !src.is_file() {
        return Err(Lack::Missing(format!(
            "{} is not here (the crate is outside a fox-jit checkout)",
            src.display()
        )));
    }
    let cuda = cuda_include().map_err(|why| Lack::Missing(format!("{}: {}", source, why)))?;
    let cc = from_env("CC").unwrap_or_else(|| "cc".into());
    let mut words = cc.split_whitespace();
    let program = words.next().unwrap_or("cc").to_string();
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    let result = Command::new(&program)
        .args(words)
        .args(["-std=c11", "-O1", "-I"])
        .arg(repo_root().join("include"))
        .arg("-I")
        .arg(&cuda)
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(&tmp)
        .output();
    let out_ok = match result {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Lack::Missing(format!(
                "{}: no C compiler ({} not found; install gcc, or set CC)",
                source, program
            )))
        }
        Err(e) => return Err(Lack::Broken(format!("{} did not run: {}", program, e))),
        Ok(o) => o,
    };
    if !out_ok.status.success() {
        return Err(Lack::Broken(format!(
            "{} {} failed ({}):\n{}",
            cc,
            src.display(),
            out_ok.status,
            String::from_utf8_lossy(&out_ok.stderr)
        )));
    }
    std::fs::rename(&tmp, out)
        .map_err(|e| Lack::Broken(format!("renaming to {}: {}", out.display(), e)))
}

/// Waits until a script just written can be run: a child another test
/// thread forked while the script was open for writing holds that file
/// descriptor until it execs, and running the script meanwhile fails with
/// ETXTBSY. Children forked later never see the descriptor.
pub fn wait_runnable(p: &Path) {
    for _ in 0..500 {
        match Command::new(p).output() {
            Err(e) if e.raw_os_error() == Some(26) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            _ => return,
        }
    }
    panic!("{} stays busy (ETXTBSY)", p.display());
}

// ---- skips ------------------------------------------------------------------

/// (why, how many tests) of this test program, in first-seen order.
static SKIPS: Mutex<Vec<(String, usize)>> = Mutex::new(Vec::new());
static GPU_SKIPS: Mutex<Vec<(String, usize)>> = Mutex::new(Vec::new());
static REPORT: Once = Once::new();

extern "C" {
    fn atexit(f: extern "C" fn()) -> c_int;
}

fn require_all() -> bool {
    cfg!(feature = "require-all")
        || std::env::var("FOXJIT_REQUIRE_ALL").map(|v| v == "1").unwrap_or(false)
}

fn record(list: &Mutex<Vec<(String, usize)>>, why: &str) {
    let mut l = list.lock().unwrap_or_else(|e| e.into_inner());
    match l.iter_mut().find(|(w, _)| w == why) {
        Some((_, n)) => *n += 1,
        None => l.push((why.to_string(), 1)),
    }
    // The line is printed when the program exits, after the harness's own
    // summary: libtest runs the tests on threads and has no hook of its own
    // for the end of the run.
    REPORT.call_once(|| unsafe {
        atexit(report);
    });
}

/// Skips the calling test for want of a file; fails it instead under
/// `--features require-all` or FOXJIT_REQUIRE_ALL=1.
#[track_caller]
pub fn skip(why: &str) {
    if require_all() {
        panic!("skipped, which --features require-all / FOXJIT_REQUIRE_ALL=1 forbid: {}", why);
    }
    eprintln!("SKIP: {}", why);
    record(&SKIPS, why);
}

/// Skips the calling test for want of a GPU (FOXJIT_REQUIRE_GPU=1 fails
/// instead, in the caller).
pub fn skip_gpu(why: &str) {
    eprintln!("SKIP: {}", why);
    record(&GPU_SKIPS, why);
}

fn phrase(list: &[(String, usize)]) -> (usize, String) {
    let n = list.iter().map(|(_, n)| n).sum();
    let whys: Vec<String> = list
        .iter()
        .map(|(w, k)| if list.len() > 1 { format!("{} for {}", k, w) } else { w.clone() })
        .collect();
    (n, whys.join("; "))
}

extern "C" fn report() {
    let take = |m: &Mutex<Vec<(String, usize)>>| match m.lock() {
        Ok(g) => g.clone(),
        Err(e) => e.into_inner().clone(),
    };
    let (files, gpu) = (take(&SKIPS), take(&GPU_SKIPS));
    let mut parts = Vec::new();
    if !files.is_empty() {
        let (n, why) = phrase(&files);
        parts.push(format!(
            "{} skipped: {}; `cargo test --features require-all` or FOXJIT_REQUIRE_ALL=1 \
             makes a skip fail",
            plural(n),
            why
        ));
    }
    if !gpu.is_empty() {
        let (n, why) = phrase(&gpu);
        parts.push(format!("{} skipped for want of a GPU: {} (FOXJIT_REQUIRE_GPU=1 makes \
                            that fail)", plural(n), why));
    }
    if parts.is_empty() {
        return;
    }
    let line = format!("foxjit: tests/{}.rs: {}\n", env!("CARGO_CRATE_NAME"), parts.join("; "));
    // stderr is unbuffered and needs no thread-local state, which is gone
    // by the time exit handlers run.
    let _ = std::io::stderr().write_all(line.as_bytes());
}

fn plural(n: usize) -> String {
    if n == 1 {
        "1 test".into()
    } else {
        format!("{} tests", n)
    }
}
