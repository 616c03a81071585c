//! Where [`Library::open`](crate::Library::open) looks for `libfoxjit.so.1`,
//! in order: `$FOXJIT_LIBRARY`, the libdir of `pkg-config foxjit`, then the
//! dynamic loader's search path. A place that has no library is noted with
//! the reason and the next is tried; the first library found is the one
//! used, and a library that is not what the crate needs (another ABI, not
//! fox-jit at all) is reported as it is. When no place has one, one error
//! names every place tried, why each failed, and what to do.

use std::fmt;
use std::io::ErrorKind;
use std::process::Command;

use crate::{Error, Library, Result};

/// How a [`Library`] was found ([`Library::source`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// The path the caller gave ([`Library::open_path`]).
    Given,
    /// `$FOXJIT_LIBRARY`.
    Env,
    /// `<libdir>/libfoxjit.so.1`, libdir from `pkg-config --variable=libdir foxjit`.
    PkgConfig,
    /// `libfoxjit.so.1` from the dynamic loader's search path
    /// (`LD_LIBRARY_PATH`, the rpath, `ld.so.cache`).
    LoaderPath,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::Given => "the path given",
            Source::Env => "FOXJIT_LIBRARY",
            Source::PkgConfig => "pkg-config foxjit",
            Source::LoaderPath => "the loader's search path",
        })
    }
}

/// What to do when no place had the library (the end of the error).
const WHAT_TO_DO: &str = "install fox-jit (meson install; for a prefix outside the system's \
    add <prefix>/<libdir>/pkgconfig to PKG_CONFIG_PATH), or set FOXJIT_LIBRARY to a \
    libfoxjit.so.1 (a meson build has one in <build>/runtime/), or pass its path to \
    Library::open_path";

/// The program `pkg-config`: `$PKG_CONFIG` when set (the convention of
/// autotools and the pkg-config crate), else `pkg-config` from `PATH`.
pub(crate) fn pkg_config_program() -> String {
    match std::env::var("PKG_CONFIG") {
        Ok(p) if !p.is_empty() => p,
        _ => "pkg-config".into(),
    }
}

/// The libdir of `pkg-config foxjit`, or why there is none.
fn pkg_config_libdir(program: &str) -> std::result::Result<String, String> {
    let out = match Command::new(program).args(["--variable=libdir", "foxjit"]).output() {
        Ok(o) => o,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(format!("no {} program (install pkg-config, or set PKG_CONFIG)", program))
        }
        Err(e) => return Err(format!("{} did not run: {}", program, e)),
    };
    if !out.status.success() {
        let path = match std::env::var("PKG_CONFIG_PATH") {
            Ok(p) if !p.is_empty() => format!("PKG_CONFIG_PATH={}", p),
            _ => "PKG_CONFIG_PATH is not set".into(),
        };
        return Err(format!("{} finds no foxjit.pc ({}, {})", program, path, out.status));
    }
    let libdir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if libdir.is_empty() {
        return Err(format!("{} gives foxjit.pc no libdir", program));
    }
    Ok(libdir)
}

/// The search with its inputs given: `foxjit_library` is `$FOXJIT_LIBRARY`,
/// `pkg_config` the program to ask, `file_name` the library's file name
/// (`libfoxjit.so.1`, looked for in pkg-config's libdir and on the
/// loader's path).
///
/// A `$FOXJIT_LIBRARY` that does not load is an error, not a step of the
/// search: a library the user named is never silently replaced by another.
pub(crate) fn search(foxjit_library: Option<&str>, pkg_config: &str, file_name: &str)
    -> Result<Library> {
    if let Some(p) = foxjit_library.filter(|p| !p.is_empty()) {
        return Library::open_as(p, Source::Env).map_err(|e| match e {
            Error::Load { path, message } => Error::Load {
                path,
                message: format!(
                    "{} (named by FOXJIT_LIBRARY; no other place is tried while it is set: \
                     correct it, or unset it to search pkg-config and the loader's path)",
                    message
                ),
            },
            other => other,
        });
    }
    let mut tried = vec!["FOXJIT_LIBRARY: not set".to_string()];

    match pkg_config_libdir(pkg_config) {
        Err(why) => tried.push(format!("pkg-config foxjit: {}", why)),
        Ok(libdir) => {
            let path = format!("{}/{}", libdir.trim_end_matches('/'), file_name);
            if !std::path::Path::new(&path).exists() {
                tried.push(format!("pkg-config foxjit: {} (its libdir) does not exist", path));
            } else {
                match Library::open_as(&path, Source::PkgConfig) {
                    Err(Error::Load { message, .. }) => {
                        tried.push(format!("pkg-config foxjit: {}: {}", path, message))
                    }
                    found => return found,
                }
            }
        }
    }

    match Library::open_as(file_name, Source::LoaderPath) {
        Err(Error::Load { message, .. }) => {
            tried.push(format!("the loader's search path (LD_LIBRARY_PATH, ld.so.cache): {}",
                               message))
        }
        found => return found,
    }

    Err(Error::Load {
        path: file_name.to_string(),
        message: format!("not found; tried: {}. To fix: {}", tried.join("; "), WHAT_TO_DO),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A directory of this test's own under the system's temporary one.
    fn scratch(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("foxjit-search-{}-{}", name, std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A stand-in pkg-config that prints `libdir` (or fails when None).
    fn fake_pkg_config(dir: &std::path::Path, libdir: Option<&str>) -> String {
        let p = dir.join("pkg-config");
        let body = match libdir {
            Some(d) => format!("#!/bin/sh\necho '{}'\n", d),
            None => "#!/bin/sh\nexit 1\n".to_string(),
        };
        std::fs::write(&p, body).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        runnable(&p);
        p.to_string_lossy().into_owned()
    }

    /// Waits until a script just written can be run: a child another test
    /// thread forked while the script was open for writing holds that file
    /// descriptor until it execs, and running the script meanwhile fails
    /// with ETXTBSY. Children forked later never see the descriptor.
    fn runnable(p: &std::path::Path) {
        for _ in 0..500 {
            match std::process::Command::new(p).output() {
                Err(e) if e.raw_os_error() == Some(26) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                _ => return,
            }
        }
        panic!("{} stays busy (ETXTBSY)", p.display());
    }

    #[track_caller]
    fn load_message(r: Result<Library>) -> String {
        match r {
            Err(Error::Load { message, .. }) => message,
            other => panic!("expected a load error, got {:?}", other),
        }
    }

    #[test]
    fn nothing_found_names_every_place_and_what_to_do() {
        let m = load_message(search(None, "/nonexistent/pkg-config", "libfoxjit-none.so.1"));
        for needle in [
            "not found; tried: FOXJIT_LIBRARY: not set",
            "pkg-config foxjit: no /nonexistent/pkg-config program",
            "the loader's search path",
            "libfoxjit-none.so.1: cannot open shared object file",
            "set FOXJIT_LIBRARY",
            "PKG_CONFIG_PATH",
        ] {
            assert!(m.contains(needle), "'{}' lacks '{}'", m, needle);
        }
        let e = search(None, "/nonexistent/pkg-config", "libfoxjit-none.so.1").unwrap_err();
        assert!(e.to_string().starts_with("cannot load libfoxjit-none.so.1: not found"), "{}", e);
    }

    #[test]
    fn pkg_config_without_foxjit_pc_is_one_place_tried() {
        let d = scratch("nopc");
        let pc = fake_pkg_config(&d, None);
        let m = load_message(search(None, &pc, "libfoxjit-none.so.1"));
        assert!(m.contains(&format!("pkg-config foxjit: {} finds no foxjit.pc", pc)), "{}", m);
        assert!(m.contains("the loader's search path"), "{}", m);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn pkg_config_libdir_is_searched_before_the_loader() {
        let d = scratch("libdir");
        let pc = fake_pkg_config(&d, Some("/nonexistent/lib"));
        let m = load_message(search(None, &pc, "libfoxjit-none.so.1"));
        let at_pc = m.find("/nonexistent/lib/libfoxjit-none.so.1 (its libdir) does not exist")
            .expect(&m);
        let at_loader = m.find("the loader's search path").expect(&m);
        assert!(at_pc < at_loader, "{}", m);
        // A library there that is not fox-jit: noted, and the search goes on.
        let libdir = d.join("lib");
        std::fs::create_dir_all(&libdir).unwrap();
        std::fs::write(libdir.join("libfoxjit-none.so.1"), b"not an ELF file").unwrap();
        let pc = fake_pkg_config(&d, Some(&libdir.to_string_lossy()));
        let m = load_message(search(None, &pc, "libfoxjit-none.so.1"));
        assert!(m.contains(&format!("pkg-config foxjit: {}/libfoxjit-none.so.1:",
                                    libdir.to_string_lossy())), "{}", m);
        assert!(m.contains("the loader's search path"), "{}", m);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn foxjit_library_that_does_not_load_is_not_replaced() {
        let d = scratch("env");
        // pkg-config would point at a directory; it must not be asked.
        let pc = fake_pkg_config(&d, Some("/nonexistent/lib"));
        let e = search(Some("/nonexistent/env/libfoxjit.so.1"), &pc, "libm.so.6").unwrap_err();
        match &e {
            Error::Load { path, message } => {
                assert_eq!(path, "/nonexistent/env/libfoxjit.so.1");
                assert!(message.contains("No such file"), "{}", message);
                assert!(message.contains("named by FOXJIT_LIBRARY"), "{}", message);
                assert!(!message.contains("pkg-config foxjit:"), "{}", message);
            }
            other => panic!("expected a load error, got {:?}", other),
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn sources_read_as_places() {
        assert_eq!(Source::Env.to_string(), "FOXJIT_LIBRARY");
        assert_eq!(Source::PkgConfig.to_string(), "pkg-config foxjit");
        assert_eq!(Source::LoaderPath.to_string(), "the loader's search path");
        assert_eq!(Source::Given.to_string(), "the path given");
    }
}
