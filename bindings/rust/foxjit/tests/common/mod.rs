//! Shared by the tests: where the libraries under test are.
#![allow(dead_code)]

use std::path::PathBuf;

/// The real library: $FOXJIT_TEST_LIBRARY (meson sets it), else the
/// repository's build/runtime/libfoxjit.so.1 when it exists.
pub fn real_library() -> Option<String> {
    if let Ok(p) = std::env::var("FOXJIT_TEST_LIBRARY") {
        if !p.is_empty() {
            return Some(p);
        }
    }
    let p = repo_root().join("build/runtime/libfoxjit.so.1");
    if p.exists() {
        Some(p.to_string_lossy().into_owned())
    } else {
        None
    }
}

/// A file meson writes next to the build: $FOXJIT_TEST_<what>.
pub fn from_env(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|p| !p.is_empty())
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../..")
}

/// Prints why a test did nothing. Under FOXJIT_REQUIRE_GPU=1 (or
/// FOXJIT_REQUIRE_ALL=1) it fails instead.
pub fn skip(why: &str) {
    if std::env::var("FOXJIT_REQUIRE_ALL").map(|v| v == "1").unwrap_or(false) {
        panic!("required but missing: {}", why);
    }
    eprintln!("SKIP: {}", why);
}
