//! Tests that need no GPU: loading, the ABI checks, the version, the status
//! and message of errors, and every op's argument checks reached through the
//! crate (the library checks arguments before it looks at the runtime, so a
//! placeholder runtime pointer that is never dereferenced is enough).
mod common;

use foxjit::{
    AdamwArgs, AttnPoolArgs, CfcArgs, CfcSeqArgs, Error, HeadsArgs, HeadsSeqArgs, HeadsSeqPart,
    Library, Precision, Runtime, RuntimeParams, Source, Status, Ties, VsnArgs, VsnSeqArgs,
};
use std::sync::Mutex;

// Tests that set environment variables take this lock.
static ENV_LOCK: Mutex<()> = Mutex::new(());

fn lib() -> Option<Library> {
    let p = common::need(common::real_library())?;
    Some(Library::open_path(&p).unwrap_or_else(|e| panic!("loading the library: {}", e)))
}

/// A runtime wrapper around a pointer the library never dereferences:
/// every call below fails its argument checks first.
fn placeholder(lib: &Library) -> Runtime {
    unsafe { Runtime::from_raw(lib, 0x1000 as *mut std::os::raw::c_void, false) }
}

#[track_caller]
fn expect_err<T: std::fmt::Debug>(r: foxjit::Result<T>, status: Status, needles: &[&str]) {
    let e = r.expect_err("the call should have failed");
    assert_eq!(e.status(), Some(status), "status of {:?}", e);
    for n in needles {
        assert!(e.message().contains(n), "message '{}' should mention '{}'", e.message(), n);
    }
    assert!(e.to_string().starts_with(&status.name()), "Display: {}", e);
}

#[test]
fn missing_library_is_a_load_error() {
    let e = Library::open_path("/nonexistent/dir/libfoxjit.so.1").unwrap_err();
    match &e {
        Error::Load { path, message } => {
            assert_eq!(path, "/nonexistent/dir/libfoxjit.so.1");
            assert!(message.contains("No such file"), "{}", message);
        }
        other => panic!("expected a load error, got {:?}", other),
    }
    assert_eq!(e.status(), None);
}

#[test]
fn foreign_library_is_refused() {
    let e = Library::open_path("libm.so.6").unwrap_err();
    assert!(matches!(e, Error::Load { .. }), "{:?}", e);
    assert!(e.message().contains("foxjit_get_api"), "{}", e);
}

#[test]
fn env_variable_picks_the_library() {
    let _g = ENV_LOCK.lock().unwrap();
    std::env::set_var("FOXJIT_LIBRARY", "/nonexistent/from-env.so");
    let e = Library::open().unwrap_err();
    std::env::remove_var("FOXJIT_LIBRARY");
    assert!(e.to_string().contains("/nonexistent/from-env.so"), "{}", e);
}

#[test]
fn env_variable_library_is_used_and_says_so() {
    let Some(path) = common::need(common::real_library()) else { return };
    let lib = Library::search_with(Some(&path), "/nonexistent/pkg-config", "libfoxjit.so.1")
        .expect("the library FOXJIT_LIBRARY names");
    assert_eq!(lib.path(), path);
    assert_eq!(lib.source(), Source::Env);
    assert_eq!(Library::open_path(&path).unwrap().source(), Source::Given);
}

/// The real pkg-config program, reading a foxjit.pc like the one meson
/// installs, with the library under a prefix of its own.
#[test]
fn pkg_config_finds_a_library_under_a_prefix() {
    let Some(path) = common::need(common::real_library()) else { return };
    let Ok(real) = std::fs::canonicalize(&path) else {
        // Found by the loader under its bare name: no file to point at.
        return common::skip("the library has no path of its own (found by the loader)");
    };
    let have_pkg_config = std::process::Command::new("pkg-config").arg("--version").output();
    if have_pkg_config.is_err() {
        return common::skip("no pkg-config program");
    }
    let prefix = std::env::temp_dir().join(format!("foxjit-pc-{}", std::process::id()));
    let libdir = prefix.join("lib/x86_64-linux-gnu");
    let pcdir = libdir.join("pkgconfig");
    std::fs::create_dir_all(&pcdir).unwrap();
    let _ = std::fs::remove_file(libdir.join("libfoxjit.so.1"));
    std::os::unix::fs::symlink(&real, libdir.join("libfoxjit.so.1")).unwrap();
    std::fs::write(pcdir.join("foxjit.pc"), format!(
        "prefix={}\nlibdir=${{prefix}}/lib/x86_64-linux-gnu\nincludedir=${{prefix}}/include\n\n\
         Name: foxjit\nDescription: test\nVersion: 0.2.0\nLibs: -L${{libdir}} -lfoxjit\n\
         Cflags: -I${{includedir}}\n", prefix.display())).unwrap();
    // PKG_CONFIG_PATH for the pkg-config program alone: the test's own
    // environment is shared with the other tests' threads.
    let wrapper = prefix.join("pkg-config");
    std::fs::write(&wrapper, format!("#!/bin/sh\nPKG_CONFIG_PATH='{}' exec pkg-config \"$@\"\n",
                                     pcdir.display())).unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .unwrap();
    common::wait_runnable(&wrapper);
    let r = Library::search_with(None, &wrapper.to_string_lossy(), "libfoxjit.so.1");
    let _ = std::fs::remove_dir_all(&prefix);
    let lib = r.expect("the library through pkg-config");
    assert_eq!(lib.source(), Source::PkgConfig);
    assert_eq!(lib.path(), format!("{}/libfoxjit.so.1", libdir.display()));
    assert_eq!(lib.version(), env!("CARGO_PKG_VERSION"));
}

#[test]
fn version_and_abi() {
    let Some(lib) = lib() else { return };
    assert_eq!(lib.version(), env!("CARGO_PKG_VERSION"));
    let (size, major, minor) = lib.abi();
    assert_eq!(major, foxjit::ABI_MAJOR);
    assert!(minor >= foxjit::ABI_MINOR);
    assert!(size > 0);
    for s in 0..=12 {
        assert_eq!(lib.status_string(Status(s)), Status(s).name());
    }
    assert_eq!(Status(99).name(), "FOXJIT_STATUS_99");
    let l = lib.perception_limits();
    assert!(l.max_batch >= 1024 && l.max_t >= 64 && l.max_n_hid >= 128, "{:?}", l);
}

#[test]
fn library_of_another_abi_is_refused() {
    let Some(fake) = common::need(common::fake_library()) else { return };
    let _g = ENV_LOCK.lock().unwrap();
    for (mode, needle) in [
        ("other_major", "does not implement ABI major 2"),
        ("wrong_field", "table of ABI major 1"),
        ("short_table", "install a newer fox-jit"),
    ] {
        std::env::set_var("FOXJIT_FAKE_MODE", mode);
        let r = Library::open_path(&fake);
        std::env::remove_var("FOXJIT_FAKE_MODE");
        match r {
            Err(Error::Abi { message, .. }) => {
                assert!(message.contains(needle), "{}: '{}' lacks '{}'", mode, message, needle)
            }
            other => panic!("{}: expected an ABI error, got {:?}", mode, other),
        }
    }
}

/// The fake library in an older-minor mode. Its table is one static the
/// next open_path of the fake rewrites: hold ENV_LOCK while using it.
fn fake_library(mode: &str) -> Option<Library> {
    let fake = common::need(common::fake_library())?;
    std::env::set_var("FOXJIT_FAKE_MODE", mode);
    let r = Library::open_path(&fake);
    std::env::remove_var("FOXJIT_FAKE_MODE");
    Some(r.unwrap_or_else(|e| panic!("the fake library of mode {} loads: {}", mode, e)))
}

/// A call of an entry newer than the library's table: Error::Abi naming
/// the entry and the ABI it needs, before anything is called.
#[track_caller]
fn expect_abi_err<T: std::fmt::Debug>(r: foxjit::Result<T>, entry: &str, minor: u32, have: &str) {
    match r {
        Err(Error::Abi { message, .. }) => {
            let want = format!("foxjit_{} needs fox-jit ABI 2.{}", entry, minor);
            assert!(message.contains(&want), "'{}' lacks '{}'", message, want);
            assert!(message.contains(have), "'{}' lacks '{}'", message, have);
        }
        other => panic!("{}: expected an ABI error, got {:?}", entry, other),
    }
}

#[test]
fn older_minor_loads_without_the_save() {
    let _g = ENV_LOCK.lock().unwrap();
    let Some(lib) = fake_library("abi_2_2") else { return };
    assert_eq!((lib.abi().1, lib.abi().2), (2, 2));
    assert!(!lib.has_heads_seq_save());
    assert!(!lib.has_bce_with_logits_wide());
    assert!(!lib.has_heads_seq_backward_part());
    // The table's entries past its size are never called.
    let rt = placeholder(&lib);
    let heads = HeadsSeqArgs::default();
    expect_abi_err(rt.heads_seq_saved_size(2, 4, 8, 8, 2), "heads_seq_saved_size", 3,
                   "ABI 2.2");
    unsafe {
        expect_abi_err(rt.heads_seq_forward_save(&heads, G, 1 << 20, S),
                       "heads_seq_forward_save", 3, "ABI 2.2");
        expect_abi_err(rt.heads_seq_backward_saved(&heads, G, 1 << 20, S),
                       "heads_seq_backward_saved", 3, "ABI 2.2");
        expect_abi_err(rt.heads_seq_backward_part(&heads, G, 1 << 20, HeadsSeqPart::DX, S),
                       "heads_seq_backward_part", 8, "ABI 2.2");
        expect_abi_err(rt.bce_with_logits_wide(G, G * 2, 100, G * 3, false, 0, G * 4, 8, S),
                       "bce_with_logits_wide", 4, "ABI 2.2");
    }
    expect_abi_err(rt.bce_with_logits_workspace_size(100), "bce_with_logits_workspace_size", 4,
                   "ABI 2.2");
}

#[test]
fn older_minor_loads_without_the_wide_bce() {
    let _g = ENV_LOCK.lock().unwrap();
    let Some(lib) = fake_library("abi_2_3") else { return };
    assert_eq!((lib.abi().1, lib.abi().2), (2, 3));
    assert!(lib.has_heads_seq_save());
    assert!(!lib.has_heads_seq_backward_part());
    assert!(!lib.has_bce_with_logits_wide());
    let rt = placeholder(&lib);
    expect_abi_err(rt.bce_with_logits_workspace_size(100), "bce_with_logits_workspace_size", 4,
                   "ABI 2.3");
    unsafe {
        expect_abi_err(rt.bce_with_logits_wide(G, G * 2, 100, G * 3, false, 0, G * 4, 8, S),
                       "bce_with_logits_wide", 4, "ABI 2.3");
        // The one-block form is in the table: the fake's stand-in answers.
        expect_err(rt.bce_with_logits(G, G * 2, 100, G * 3, false, 0, S), Status::UNSUPPORTED,
                   &["fake_foxjit", "foxjit_bce_with_logits"]);
    }
}

#[test]
fn older_minor_loads_without_gae() {
    let _g = ENV_LOCK.lock().unwrap();
    let Some(lib) = fake_library("abi_2_4") else { return };
    assert_eq!((lib.abi().1, lib.abi().2), (2, 4));
    assert!(lib.has_heads_seq_save());
    assert!(lib.has_bce_with_logits_wide());
    assert!(!lib.has_gae());
    let rt = placeholder(&lib);
    unsafe {
        expect_abi_err(rt.gae(G, G * 2, G * 3, 16, 64, 0.99, 0.95, G * 4, G * 5, S), "gae", 5,
                       "ABI 2.4");
        expect_abi_err(rt.gae(G, G * 2, G * 3, 16, 64, 0.99, 0.95, G * 4, 0, S), "gae", 5,
                       "ABI 2.4");
    }
    expect_abi_err(rt.gae_prepare(), "gae_prepare", 5, "ABI 2.4");
    // The tables of 2.2 and 2.3 lack it too.
    for (mode, have) in [("abi_2_2", "ABI 2.2"), ("abi_2_3", "ABI 2.3")] {
        let Some(lib) = fake_library(mode) else { return };
        assert!(!lib.has_gae(), "{}", mode);
        expect_abi_err(placeholder(&lib).gae_prepare(), "gae_prepare", 5, have);
    }
}

#[test]
fn older_minor_loads_without_the_precision() {
    let _g = ENV_LOCK.lock().unwrap();
    let Some(lib) = fake_library("abi_2_5") else { return };
    assert_eq!((lib.abi().1, lib.abi().2), (2, 5));
    assert!(lib.has_gae());
    assert!(!lib.has_precision());
    let rt = placeholder(&lib);
    // Float32 is what such a library computes: accepted without a call (the
    // placeholder runtime would not survive one), and reported.
    assert_eq!(rt.set_precision(Precision::Float32), Ok(()));
    assert_eq!(rt.precision(), Ok(Precision::Float32));
    expect_abi_err(rt.set_precision(Precision::Tf32), "set_precision", 6, "ABI 2.5");
    let Some(lib) = fake_library("abi_2_2") else { return };
    expect_abi_err(placeholder(&lib).set_precision(Precision::Tf32), "set_precision", 6,
                   "ABI 2.2");
}

#[test]
fn older_minor_loads_without_the_split_column_sums() {
    let _g = ENV_LOCK.lock().unwrap();
    let Some(lib) = fake_library("abi_2_6") else { return };
    assert_eq!((lib.abi().1, lib.abi().2), (2, 6));
    assert!(lib.has_precision());
    assert!(!lib.has_column_sum_split());
    let rt = placeholder(&lib);
    expect_abi_err(rt.column_sum_workspace_size(8192, 42), "column_sum_workspace_size", 7,
                   "ABI 2.6");
    unsafe {
        expect_abi_err(rt.column_sum_split(G, 8192, 42, G * 2, true, G * 3, 1 << 16, S),
                       "column_sum_split", 7, "ABI 2.6");
    }
    expect_abi_err(rt.column_sum_split_prepare(8192, 42), "column_sum_split_prepare", 7,
                   "ABI 2.6");
    // The older tables lack it too.
    let Some(lib) = fake_library("abi_2_5") else { return };
    assert!(!lib.has_column_sum_split());
    expect_abi_err(placeholder(&lib).column_sum_split_prepare(4, 4), "column_sum_split_prepare",
                   7, "ABI 2.5");
}

#[test]
fn older_minor_loads_without_the_heads_parts() {
    let _g = ENV_LOCK.lock().unwrap();
    let Some(lib) = fake_library("abi_2_7") else { return };
    assert_eq!((lib.abi().1, lib.abi().2), (2, 7));
    assert!(lib.has_column_sum_split());
    assert!(lib.has_heads_seq_save());
    assert!(!lib.has_heads_seq_backward_part());
    let rt = placeholder(&lib);
    let heads = HeadsSeqArgs::default();
    // Every part, and one that is none of them: the table is checked
    // before anything else.
    for part in [HeadsSeqPart::DX, HeadsSeqPart::PARAMS, HeadsSeqPart::ALL, HeadsSeqPart(4)] {
        unsafe {
            expect_abi_err(rt.heads_seq_backward_part(&heads, G, 1 << 20, part, S),
                           "heads_seq_backward_part", 8, "ABI 2.7");
            expect_abi_err(rt.heads_seq_backward_part(&heads, 0, 0, part, S),
                           "heads_seq_backward_part", 8, "ABI 2.7");
        }
    }
    // The older tables lack it too.
    for (mode, have) in [("abi_2_6", "ABI 2.6"), ("abi_2_3", "ABI 2.3")] {
        let Some(lib) = fake_library(mode) else { return };
        assert!(!lib.has_heads_seq_backward_part(), "{}", mode);
        unsafe {
            expect_abi_err(placeholder(&lib).heads_seq_backward_part(&heads, 0, 0,
                                                                     HeadsSeqPart::ALL, S),
                           "heads_seq_backward_part", 8, have);
        }
    }
}

#[test]
fn struct_layouts_match_the_c_header() {
    let Some(path) = common::need(common::layout_listing()) else { return };
    let text = std::fs::read_to_string(&path).expect("reading the layout listing");
    let c: std::collections::HashMap<String, usize> = text
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect();
    let mine = foxjit::abi_layout();
    // Every field the C listing prints is one of the crate's: a field the
    // crate lacks would shift the ones after it.
    let missing: Vec<&String> =
        c.keys().filter(|n| !mine.iter().any(|(m, _)| m == *n)).collect();
    assert!(missing.is_empty(), "in the C listing, not in the crate: {:?}", missing);
    let mut checked = 0;
    for (name, value) in mine {
        let want = *c.get(&name).unwrap_or_else(|| panic!("{} is not in the C listing", name));
        if name == "foxjit_api.SIZE" {
            // The crate's table may end before a newer library's.
            assert!(value <= want, "{}: crate {} > C {}", name, value, want);
        } else {
            assert_eq!(value, want, "{}: crate {} != C {}", name, value, want);
        }
        checked += 1;
    }
    assert!(checked > 150, "only {} fields checked", checked);
}

#[test]
fn runtime_without_a_context_fails_with_the_message() {
    let Some(lib) = lib() else { return };
    // No CUDA context is current on this test's thread (and there may be
    // no driver at all): creation must fail with a status and a message.
    let e = Runtime::new(&lib).unwrap_err();
    let st = e.status().expect("a library status");
    assert!(
        [Status::DRIVER_NOT_FOUND, Status::NO_CONTEXT, Status::CUDA].contains(&st),
        "{:?}",
        e
    );
    assert!(!e.message().is_empty());
    // A parameter string the C side cannot take is refused before the call.
    let p = RuntimeParams { cache_dir: Some("a\0b".into()), ..Default::default() };
    expect_err(Runtime::with_params(&lib, &p), Status::INVALID_ARGUMENT, &["cache_dir"]);
}

const G: u64 = 0x10000; // an aligned placeholder device address
const S: foxjit::CUstream = std::ptr::null_mut();

#[test]
fn column_sum_argument_errors() {
    let Some(lib) = lib() else { return };
    let rt = placeholder(&lib);
    let inv = Status::INVALID_ARGUMENT;
    unsafe {
        expect_err(rt.column_sum(G, 0, 4, G * 2, false, S), inv, &["foxjit_column_sum", "rows"]);
        expect_err(rt.column_sum(G + 2, 4, 4, G * 2, true, S), inv, &["aligned"]);
        expect_err(rt.column_sum(G, 4, 4, G, false, S), inv, &["overlaps"]);
        expect_err(rt.column_sum(G, 1 << 31, 4, G * 2, false, S), Status::UNSUPPORTED, &["limit"]);
        expect_err(rt.bias_grad_reduce(G, 4, -3, G * 2, S), inv,
                   &["foxjit_bias_grad_reduce", "-3"]);
        expect_err(rt.curiosity_bias_grad_reduce(G, 4, 4, 0, S), inv,
                   &["foxjit_curiosity_bias_grad_reduce", "NULL"]);
        expect_err(rt.reduce_axis0(0, 4, 4, G, S), inv, &["foxjit_reduce_axis0", "NULL"]);
    }
    expect_err(rt.column_sum_prepare(0, 1), inv, &["foxjit_column_sum_prepare"]);
}

#[test]
fn sort_and_rank_argument_errors() {
    let Some(lib) = lib() else { return };
    let rt = placeholder(&lib);
    let inv = Status::INVALID_ARGUMENT;
    expect_err(rt.radix_sort_pairs_workspace_size(0, 0, 32), inv,
               &["foxjit_radix_sort_pairs_workspace_size"]);
    expect_err(rt.radix_sort_pairs_workspace_size(16, 8, 4), inv, &["bit"]);
    assert!(rt.radix_sort_pairs_workspace_size(1000, 0, 32).unwrap() > 0);
    expect_err(rt.rank_normalize_workspace_size(0, Ties::Max), inv,
               &["foxjit_rank_normalize_workspace_size"]);
    assert!(rt.rank_normalize_workspace_size(1000, Ties::Ordinal).unwrap() > 0);
    let ws = rt.rank_normalize_workspace_size(1000, Ties::Max).unwrap();
    unsafe {
        expect_err(rt.radix_sort_pairs(G, G * 2, G * 3, G * 4, 0, 0, 32, G * 5, 1 << 20, S), inv,
                   &["foxjit_radix_sort_pairs"]);
        expect_err(rt.radix_sort_pairs(0, G * 2, G * 3, G * 4, 16, 0, 32, G * 5, 1 << 20, S),
                   inv, &["NULL"]);
        expect_err(rt.rank_normalize(G, 1000, f32::NAN, 0.0, Ties::Max, G, G * 100, ws, S), inv,
                   &["foxjit_rank_normalize", "std_ema"]);
        expect_err(rt.rank_normalize(G, 1000, 1.0, 0.0, Ties::Max, G, G * 100, ws / 2, S),
                   Status::WORKSPACE_TOO_SMALL, &["foxjit_rank_normalize"]);
        expect_err(rt.rank_normalize(G, -1, 1.0, 0.0, Ties::Max, G, G * 100, ws, S), inv,
                   &["foxjit_rank_normalize"]);
    }
}

#[test]
fn perception_argument_errors() {
    let Some(lib) = lib() else { return };
    let rt = placeholder(&lib);
    let inv = Status::INVALID_ARGUMENT;
    unsafe {
        let cfc = CfcArgs::default();
        expect_err(rt.cfc_forward(&cfc, S), inv, &["foxjit_cfc_forward", "batch"]);
        expect_err(rt.cfc_backward(&cfc, S), inv, &["foxjit_cfc_backward", "batch"]);
        let heads = HeadsArgs { batch: 4, d: 8, e: 8, h: 0, ..Default::default() };
        expect_err(rt.heads_forward(&heads, S), inv, &["foxjit_heads_forward"]);
        expect_err(rt.heads_backward(&heads, S), inv, &["foxjit_heads_backward"]);
        let vsn = VsnArgs { batch: 2, t: 3, f: 4, ..Default::default() };
        expect_err(rt.vsn_forward(&vsn, S), inv, &["foxjit_vsn_forward", "NULL"]);
        expect_err(rt.vsn_backward(&vsn, S), inv, &["foxjit_vsn_backward", "NULL"]);
        let attn = AttnPoolArgs { batch: 2, t: 3, d: -1, ..Default::default() };
        expect_err(rt.attn_pool_forward(&attn, S), inv, &["foxjit_attn_pool_forward"]);
        expect_err(rt.attn_pool_backward(&attn, S), inv, &["foxjit_attn_pool_backward"]);
        let too_big = CfcArgs { batch: 1 << 20, n_in: 8, n_hid: 8, ..Default::default() };
        expect_err(rt.cfc_forward(&too_big, S), Status::UNSUPPORTED, &["limit"]);
    }
    expect_err(rt.cfc_prepare(0, 8), inv, &["foxjit_cfc_prepare"]);
    expect_err(rt.heads_prepare(8, 0, 2), inv, &["foxjit_heads_prepare"]);
    expect_err(rt.vsn_prepare(0), inv, &["foxjit_vsn_prepare"]);
    expect_err(rt.attn_pool_prepare(0), inv, &["foxjit_attn_pool_prepare"]);
    assert_eq!(rt.heads_workspace_size(4, 1, 8, 2), 0);
    assert!(rt.heads_workspace_size(4, 8, 8, 2) > 0);
}

#[test]
fn sequence_argument_errors() {
    let Some(lib) = lib() else { return };
    let rt = placeholder(&lib);
    let inv = Status::INVALID_ARGUMENT;
    expect_err(rt.cfc_seq_workspace_size(0, 4, 8, 8), inv, &["foxjit_cfc_seq_workspace_size"]);
    let ws = rt.cfc_seq_workspace_size(2, 4, 8, 8).unwrap();
    assert!(ws > 0);
    expect_err(rt.heads_seq_workspace_size(2, 0, 8, 8, 2), inv,
               &["foxjit_heads_seq_workspace_size"]);
    assert!(rt.heads_seq_workspace_size(2, 4, 8, 8, 2).unwrap() > 0);
    expect_err(rt.vsn_seq_workspace_size(2, 4, 0), inv, &["foxjit_vsn_seq_workspace_size"]);
    assert!(rt.vsn_seq_workspace_size(2, 4, 8).unwrap() > 0);
    unsafe {
        let cfc = CfcSeqArgs::default();
        expect_err(rt.cfc_seq_forward(&cfc, S), inv, &["foxjit_cfc_seq_forward"]);
        expect_err(rt.cfc_seq_backward(&cfc, S), inv, &["foxjit_cfc_seq_backward"]);
        let heads = HeadsSeqArgs::default();
        expect_err(rt.heads_seq_forward(&heads, S), inv, &["foxjit_heads_seq_forward"]);
        expect_err(rt.heads_seq_backward(&heads, S), inv, &["foxjit_heads_seq_backward"]);
        expect_err(rt.heads_seq_forward_save(&heads, 0, 0, S), inv,
                   &["foxjit_heads_seq_forward_save"]);
        expect_err(rt.heads_seq_backward_saved(&heads, 0, 0, S), inv,
                   &["foxjit_heads_seq_backward_saved"]);
        for part in [HeadsSeqPart::DX, HeadsSeqPart::PARAMS, HeadsSeqPart::ALL] {
            expect_err(rt.heads_seq_backward_part(&heads, 0, 0, part, S), inv,
                       &["foxjit_heads_seq_backward_part"]);
        }
        let vsn = VsnSeqArgs::default();
        expect_err(rt.vsn_seq_backward(&vsn, S), inv, &["foxjit_vsn_seq_backward"]);
    }
    expect_err(rt.cfc_seq_prepare(8, 0), inv, &["foxjit_cfc_seq_prepare"]);
    expect_err(rt.heads_seq_prepare(0, 8, 2), inv, &["foxjit_heads_seq_prepare"]);
    assert!(lib.has_heads_seq_save());
    expect_err(rt.heads_seq_saved_size(2, 4, 8, 0, 2), inv, &["foxjit_heads_seq_saved_size"]);
    assert!(rt.heads_seq_saved_size(2, 4, 8, 7, 2).unwrap() >= 2 * 4 * 16 * 4);
    expect_err(rt.vsn_seq_prepare(-2), inv, &["foxjit_vsn_seq_prepare"]);
}

/// Dims, parameters, x, dlogits and dx, and a workspace too small: the
/// library refuses it after every pointer check.
fn heads_part_args() -> HeadsSeqArgs {
    let p = |i: u64| 0x100000 + i * 0x10000; // 256-byte aligned and distinct
    HeadsSeqArgs {
        batch: 32, steps: 64, d: 128, e: 64, h: 5,
        w1: p(1), b1: p(2), w2: p(3), b2: p(4), w_gate: p(5), b_gate: p(6), w_main: p(7),
        b_main: p(8), w_skip: p(9), b_skip: p(10),
        x: p(11), logits: p(12), dlogits: p(13), dx: p(14),
        work: p(30), work_bytes: 100,
        ..Default::default()
    }
}

fn with_grads(a: HeadsSeqArgs) -> HeadsSeqArgs {
    let p = |i: u64| 0x100000 + i * 0x10000;
    HeadsSeqArgs {
        dw1: p(15), db1: p(16), dw2: p(17), db2: p(18), dw_gate: p(19), db_gate: p(20),
        dw_main: p(21), db_main: p(22), dw_skip: p(23), db_skip: p(24),
        ..a
    }
}

#[test]
fn heads_seq_backward_part_argument_errors() {
    let Some(lib) = lib() else { return };
    assert!(lib.has_heads_seq_backward_part());
    let rt = placeholder(&lib);
    let (inv, small) = (Status::INVALID_ARGUMENT, Status::WORKSPACE_TOO_SMALL);
    let name = "foxjit_heads_seq_backward_part";
    let sv: u64 = 0x100000 + 40 * 0x10000;
    assert_eq!(HeadsSeqPart::ALL.0, HeadsSeqPart::DX.0 | HeadsSeqPart::PARAMS.0);
    let plain = heads_part_args();
    let grads = with_grads(plain);
    let no_dlogits = HeadsSeqArgs { dlogits: 0, ..grads };
    let too_small: (Status, &[&str]) = (small, &[name, "work_bytes is 100"]);
    let no_dw1: (Status, &[&str]) = (inv, &[name, "dw1 is NULL"]);
    let no_dz: (Status, &[&str]) = (inv, &[name, "dlogits is NULL"]);
    unsafe {
        // Each part checks what it reads and writes, so the refusals tell
        // the parts apart: DX reads no gradient pointer, PARAMS neither
        // dlogits nor the save.
        for (part, without_grads, without_dlogits) in [
            (HeadsSeqPart::DX, too_small, no_dz),
            (HeadsSeqPart::PARAMS, no_dw1, too_small),
            (HeadsSeqPart::ALL, no_dw1, no_dz),
        ] {
            expect_err(rt.heads_seq_backward_part(&plain, 0, 0, part, S), without_grads.0,
                       without_grads.1);
            expect_err(rt.heads_seq_backward_part(&no_dlogits, 0, 0, part, S),
                       without_dlogits.0, without_dlogits.1);
        }
        // saved and saved_bytes reach the library in their places; PARAMS
        // does not read the save.
        expect_err(rt.heads_seq_backward_part(&plain, sv, 64, HeadsSeqPart::DX, S), small,
                   &[name, "saved_bytes is 64"]);
        expect_err(rt.heads_seq_backward_part(&plain, sv + 4, 1 << 30, HeadsSeqPart::DX, S), inv,
                   &[name, "saved"]);
        expect_err(rt.heads_seq_backward_part(&grads, sv + 4, 8, HeadsSeqPart::PARAMS, S),
                   too_small.0, too_small.1);
        let on_save = HeadsSeqArgs { work: sv, work_bytes: 1 << 30, ..grads };
        expect_err(rt.heads_seq_backward_part(&on_save, sv, 1 << 30, HeadsSeqPart::ALL, S), inv,
                   &[name, "work and saved are the same buffer"]);
        // A value that is none of the three reaches the library, which
        // refuses it naming them.
        for bad in [0, 4, -1, 7] {
            let want = format!("{}: part is {}", name, bad);
            expect_err(rt.heads_seq_backward_part(&grads, 0, 0, HeadsSeqPart(bad), S), inv,
                       &[&want, "FOXJIT_HEADS_SEQ_PART_DX (1)", "FOXJIT_HEADS_SEQ_PART_ALL (3)"]);
        }
        let null = Runtime::from_raw(&lib, std::ptr::null_mut(), false);
        expect_err(null.heads_seq_backward_part(&grads, 0, 0, HeadsSeqPart::DX, S), inv,
                   &[name, "runtime is NULL"]);
    }
}

#[test]
fn training_argument_errors() {
    let Some(lib) = lib() else { return };
    let rt = placeholder(&lib);
    let inv = Status::INVALID_ARGUMENT;
    unsafe {
        expect_err(rt.bce_with_logits(G, G * 2, 0, G * 3, false, 0, S), inv,
                   &["foxjit_bce_with_logits"]);
        let a = AdamwArgs::default();
        expect_err(rt.adamw(&a, S), inv, &["foxjit_adamw"]);
        let a = AdamwArgs { n: 16, param: G, grad: G * 2, m: G * 3, v: G * 4, step: G * 5,
                            lr: -1.0, beta1: 0.9, beta2: 0.999, eps: 1e-8, weight_decay: 0.0 };
        expect_err(rt.adamw(&a, S), inv, &["lr"]);
        expect_err(rt.increment_step(0, S), inv, &["foxjit_increment_step"]);
    }
}

#[test]
fn split_column_sum_argument_errors() {
    let Some(lib) = lib() else { return };
    assert!(lib.has_column_sum_split());
    let rt = placeholder(&lib);
    let (inv, unsup, small) =
        (Status::INVALID_ARGUMENT, Status::UNSUPPORTED, Status::WORKSPACE_TOO_SMALL);
    let name = "foxjit_column_sum_split";
    // x, out and the workspace: far apart (x is 1.3 MB)
    let (x, o, w) = (G, G << 8, G << 9);
    assert_eq!(rt.column_sum_workspace_size(32, 40960).unwrap(), 512);
    let ws = rt.column_sum_workspace_size(8192, 42).unwrap();
    assert!(ws > 512);
    expect_err(rt.column_sum_workspace_size(0, 4), inv,
               &["foxjit_column_sum_workspace_size", "rows is 0"]);
    expect_err(rt.column_sum_workspace_size(1 << 20, 1 << 20), unsup, &["2^40"]);
    expect_err(rt.column_sum_split_prepare(4, 0), inv, &["foxjit_column_sum_split_prepare"]);
    unsafe {
        expect_err(rt.column_sum_split(x, 8192, 42, o, true, 0, ws, S), inv,
                   &[name, "workspace is NULL"]);
        expect_err(rt.column_sum_split(x, 8192, 42, o, true, w + 8, ws, S), inv,
                   &[name, "16-byte"]);
        expect_err(rt.column_sum_split(x, 8192, 42, o, false, w, ws - 16, S), small,
                   &[name, "foxjit_column_sum_workspace_size"]);
        expect_err(rt.column_sum_split(x, 8192, 42, o, false, x + 4096, ws, S), inv,
                   &[name, "workspace overlaps x"]);
        expect_err(rt.column_sum_split(x, 8192, 42, x + 64, false, w, ws, S), inv,
                   &[name, "out overlaps x"]);
        expect_err(rt.column_sum_split(x, 1 << 31, 4, o, false, w, ws, S), unsup,
                   &[name, "limit"]);
    }
}

#[test]
fn gae_argument_errors() {
    let Some(lib) = lib() else { return };
    assert!(lib.has_gae());
    let rt = placeholder(&lib);
    let (inv, unsup) = (Status::INVALID_ARGUMENT, Status::UNSUPPORTED);
    let name = "foxjit_gae";
    // rewards, values, dones, advantages, returns: far apart, none overlapping
    let (r, v, d, a, q) = (G, G * 2, G * 3, G * 4, G * 5);
    let (t, n, g, l) = (16i64, 64i64, 0.99f32, 0.95f32);
    unsafe {
        expect_err(rt.gae(r, v, d, 0, n, g, l, a, q, S), inv, &[name, "steps is 0"]);
        expect_err(rt.gae(r, v, d, t, -1, g, l, a, q, S), inv, &[name, "envs is -1"]);
        expect_err(rt.gae(r, v, d, 1 << 32, n, g, l, a, q, S), unsup, &[name, "steps", "limit"]);
        expect_err(rt.gae(r, v, d, 1 << 21, 1 << 20, g, l, a, q, S), unsup,
                   &[name, "(steps + 1) x envs"]);
        expect_err(rt.gae(0, v, d, t, n, g, l, a, q, S), inv, &[name, "rewards is NULL"]);
        expect_err(rt.gae(r, 0, d, t, n, g, l, a, q, S), inv, &[name, "values is NULL"]);
        expect_err(rt.gae(r, v, 0, t, n, g, l, a, q, S), inv, &[name, "dones is NULL"]);
        expect_err(rt.gae(r, v, d, t, n, g, l, 0, q, S), inv, &[name, "advantages is NULL"]);
        expect_err(rt.gae(r + 2, v, d, t, n, g, l, a, q, S), inv, &[name, "rewards", "aligned"]);
        expect_err(rt.gae(r, v, d, t, n, g, l, a, q + 1, S), inv, &[name, "returns", "aligned"]);
        expect_err(rt.gae(r, v, d, t, n, -0.1, l, a, q, S), inv, &[name, "gamma", "[0, 1]"]);
        expect_err(rt.gae(r, v, d, t, n, 1.5, l, a, q, S), inv, &[name, "gamma"]);
        expect_err(rt.gae(r, v, d, t, n, f32::NAN, l, a, q, S), inv, &[name, "gamma"]);
        expect_err(rt.gae(r, v, d, t, n, g, f32::INFINITY, a, q, S), inv, &[name, "lambda"]);
        // outputs overlapping an input (values' last row too) or each other
        expect_err(rt.gae(r, v, d, t, n, g, l, r, q, S), inv,
                   &[name, "advantages overlaps rewards"]);
        expect_err(rt.gae(r, v, d, t, n, g, l, a, v + 4 * (t * n) as u64, S), inv,
                   &[name, "returns overlaps values"]);
        expect_err(rt.gae(r, v, d, t, n, g, l, a, a + 4, S), inv,
                   &[name, "returns overlaps advantages"]);
        expect_err(rt.gae(r, v, d, t, n, g, l, d, 0, S), inv,
                   &[name, "advantages overlaps dones"]);
    }
    // gae_prepare checks nothing but the runtime (one kernel for every shape).
    let null = unsafe { Runtime::from_raw(&lib, std::ptr::null_mut(), false) };
    expect_err(null.gae_prepare(), inv, &["foxjit_gae_prepare", "runtime is NULL"]);
    unsafe {
        expect_err(null.gae(r, v, d, t, n, g, l, a, q, S), inv, &[name, "runtime is NULL"]);
    }
}

#[test]
fn precision_argument_errors() {
    let Some(lib) = lib() else { return };
    assert!(lib.has_precision());
    assert_eq!(Precision::default(), Precision::Float32);
    let null = unsafe { Runtime::from_raw(&lib, std::ptr::null_mut(), false) };
    let inv = Status::INVALID_ARGUMENT;
    expect_err(null.set_precision(Precision::Tf32), inv,
               &["foxjit_set_precision", "runtime is NULL"]);
    expect_err(null.set_precision(Precision::Float32), inv, &["runtime is NULL"]);
    expect_err(null.precision(), inv, &["foxjit_get_precision"]);
}

#[test]
fn wide_bce_argument_errors() {
    let Some(lib) = lib() else { return };
    let rt = placeholder(&lib);
    let (inv, small) = (Status::INVALID_ARGUMENT, Status::WORKSPACE_TOO_SMALL);
    assert!(lib.has_bce_with_logits_wide());
    expect_err(rt.bce_with_logits_workspace_size(0), inv,
               &["foxjit_bce_with_logits_workspace_size", "n is 0"]);
    expect_err(rt.bce_with_logits_workspace_size(1 << 31), Status::UNSUPPORTED, &["limit"]);
    // At most 8 KiB, whole doubles, and a size for n serves every smaller n.
    let sizes: Vec<usize> = [1i64, 2048, 2049, 100_000, (1 << 31) - 1]
        .iter()
        .map(|&n| rt.bce_with_logits_workspace_size(n).unwrap())
        .collect();
    assert!(sizes[0] > 0, "{:?}", sizes);
    assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "{:?}", sizes);
    assert!(sizes.iter().all(|&b| b % 8 == 0 && b <= 8192), "{:?}", sizes);
    let n = 100_000i64;
    let ws = rt.bce_with_logits_workspace_size(n).unwrap();
    let w = G * 4;
    let name = "foxjit_bce_with_logits_wide";
    unsafe {
        expect_err(rt.bce_with_logits_wide(G, G * 2, 0, G * 3, false, 0, w, ws, S), inv,
                   &[name, "n is 0"]);
        expect_err(rt.bce_with_logits_wide(0, G * 2, n, G * 3, false, 0, w, ws, S), inv,
                   &[name, "z is NULL"]);
        expect_err(rt.bce_with_logits_wide(G, G * 2, n, 0, false, 0, w, ws, S), inv,
                   &[name, "loss is NULL"]);
        expect_err(rt.bce_with_logits_wide(G, G * 2, n, G * 3, false, G + 2, w, ws, S), inv,
                   &[name, "dz", "aligned"]);
        expect_err(rt.bce_with_logits_wide(G, G * 2, n, G * 3, false, G, 0, ws, S), small,
                   &[name, "workspace is NULL"]);
        expect_err(rt.bce_with_logits_wide(G, G * 2, n, G * 3, true, G, w + 4, ws, S), inv,
                   &[name, "8-byte aligned"]);
        expect_err(rt.bce_with_logits_wide(G, G * 2, n, G * 3, false, 0, w, ws - 8, S), small,
                   &[name, "workspace_bytes"]);
    }
}
