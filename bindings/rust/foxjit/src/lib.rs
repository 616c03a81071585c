//! Rust bindings to fox-jit, the JIT-compiled CUDA kernels of the foxhunt
//! trainers.
//!
//! The crate has no dependencies and links nothing of CUDA: it `dlopen`s
//! `libfoxjit.so.1` at run time, takes the function table from
//! `foxjit_get_api` and checks its ABI version and size before using it.
//!
//! # Finding the library
//!
//! [`Library::open`] searches, in order:
//!
//! 1. `$FOXJIT_LIBRARY`, the path of a `libfoxjit.so.1`. While it is set
//!    nothing else is tried: a library it names that does not load is an
//!    error.
//! 2. `<libdir>/libfoxjit.so.1`, libdir from `pkg-config --variable=libdir
//!    foxjit` (the program `$PKG_CONFIG`, else `pkg-config`; a fox-jit
//!    installed under a prefix of its own is found by adding
//!    `<prefix>/<libdir>/pkgconfig` to `PKG_CONFIG_PATH`). No pkg-config
//!    program or no `foxjit.pc` is not an error, just a place tried.
//! 3. `libfoxjit.so.1` from the dynamic loader's search path
//!    (`LD_LIBRARY_PATH`, the program's rpath, `ld.so.cache`).
//!
//! The first library found is used ([`Library::source`] says where it came
//! from); when none is, the one [`Error::Load`] names every place tried,
//! why each failed, and what to do. [`Library::open_path`] loads a given
//! file and tries nothing else; [`Library::open_with`] takes an optional
//! path (a command-line option, say) and searches when it is `None`.
//!
//! ```no_run
//! let lib = foxjit::Library::open()?;
//! println!("fox-jit {} from {} ({})", lib.version(), lib.path(), lib.source());
//! # Ok::<(), foxjit::Error>(())
//! ```
//!
//! Device memory and streams stay the caller's. Device pointers are `u64`
//! ([`CUdeviceptr`]) and streams raw `CUstream`s, exactly what `cudarc`
//! hands out (`DevicePtr::device_ptr`, `CudaStream::cu_stream`), so a
//! trainer passes its own buffers without copies. A [`Runtime`] must be
//! created, used and dropped with the same CUDA context current (cudarc's
//! `CudaContext::bind_to_thread`).
//!
//! The ops are `unsafe fn`s: the library cannot know how large the memory
//! behind a device pointer is, so the caller promises the sizes the C header
//! documents for each argument. Everything the library can check (null
//! pointers, alignment, dims, overlap, workspace sizes) comes back as an
//! [`Error`] with the library's status and message, and nothing is launched.

mod ffi;
mod search;

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::Arc;

pub use ffi::{
    AdamwArgs, AttnPoolArgs, CUdeviceptr, CUstream, CfcArgs, CfcSeqArgs, Counters, HeadsArgs,
    HeadsSeqArgs, PerceptionLimits, VsnArgs, VsnSeqArgs, ABI_MAJOR, ABI_MINOR,
};
#[doc(hidden)]
pub use ffi::layout as abi_layout;

use ffi::{Api, RawRuntimeParams, RuntimePtr};
pub use search::Source;

/// The name the library is loaded by when no path is given.
pub const DEFAULT_LIBRARY: &str = "libfoxjit.so.1";

/// A `foxjit_status` value. Known values have constants; a newer library
/// may return others, which keep their number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Status(pub i32);

impl Status {
    pub const OK: Status = Status(0);
    pub const INVALID_ARGUMENT: Status = Status(1);
    pub const UNSUPPORTED: Status = Status(2);
    pub const WORKSPACE_TOO_SMALL: Status = Status(3);
    pub const DRIVER_NOT_FOUND: Status = Status(4);
    pub const NVRTC_NOT_FOUND: Status = Status(5);
    pub const NO_CONTEXT: Status = Status(6);
    pub const WRONG_CONTEXT: Status = Status(7);
    pub const COMPILE: Status = Status(8);
    pub const NOT_PREPARED: Status = Status(9);
    pub const CUDA: Status = Status(10);
    pub const OUT_OF_MEMORY: Status = Status(11);
    pub const CACHE: Status = Status(12);

    /// The C name ("FOXJIT_ERROR_UNSUPPORTED"), or `FOXJIT_STATUS_<n>`.
    pub fn name(self) -> String {
        const NAMES: [&str; 13] = [
            "FOXJIT_OK", "FOXJIT_ERROR_INVALID_ARGUMENT", "FOXJIT_ERROR_UNSUPPORTED",
            "FOXJIT_ERROR_WORKSPACE_TOO_SMALL", "FOXJIT_ERROR_DRIVER_NOT_FOUND",
            "FOXJIT_ERROR_NVRTC_NOT_FOUND", "FOXJIT_ERROR_NO_CONTEXT",
            "FOXJIT_ERROR_WRONG_CONTEXT", "FOXJIT_ERROR_COMPILE", "FOXJIT_ERROR_NOT_PREPARED",
            "FOXJIT_ERROR_CUDA", "FOXJIT_ERROR_OUT_OF_MEMORY", "FOXJIT_ERROR_CACHE",
        ];
        match NAMES.get(self.0 as usize) {
            Some(n) if self.0 >= 0 => n.to_string(),
            _ => format!("FOXJIT_STATUS_{}", self.0),
        }
    }
}

/// Tie handling of the rank normalization (`foxjit_tie_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ties {
    /// rank = #{j : |s_j| <= |s_i|} (the legacy result; the default).
    Max = 0,
    /// rank = 1 + stable ascending sort position.
    Ordinal = 1,
}

/// The precision of the heads' and the CfC's matrix products
/// (`foxjit_precision`, [`Runtime::set_precision`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Precision {
    /// 3xTF32 on tensor cores: float32 accuracy (the default).
    #[default]
    Float32 = 0,
    /// One TF32 product a step, as PyTorch's
    /// `torch.backends.cuda.matmul.allow_tf32 = True`: faster, each
    /// product term to about 2^-10.
    Tf32 = 1,
}

/// A part of the heads' backward (`foxjit_heads_seq_part`,
/// [`Runtime::heads_seq_backward_part`]). The constants are the C enum's
/// values; like [`Status`] it keeps any other number, which is passed to the
/// library as it is and refused there (`INVALID_ARGUMENT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HeadsSeqPart(pub i32);

impl HeadsSeqPart {
    /// The rows' backward (dA and the per-tile sums into `work`; from the
    /// save when `saved` is not 0, else recomputed), then dx when `args.dx`
    /// is not 0. The ten gradient pointers are not read and may be 0.
    pub const DX: HeadsSeqPart = HeadsSeqPart(1);
    /// The ten parameter gradients, from what the [`HeadsSeqPart::DX`]
    /// call of the same args left in `work`. dlogits, dx and the save are
    /// not read (each may be 0; `saved_bytes` is then ignored).
    pub const PARAMS: HeadsSeqPart = HeadsSeqPart(2);
    /// Both: the launches of the one-call form (`DX | PARAMS`).
    pub const ALL: HeadsSeqPart = HeadsSeqPart(3);
}

/// What went wrong. Calls into the library give [`Error::Status`] with the
/// status and `foxjit_last_error()`'s message, which says what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The library could not be loaded (dlopen's message), or it has no
    /// `foxjit_get_api` symbol. From [`Library::open`]'s search: `path` is
    /// `libfoxjit.so.1` and the message names every place tried.
    Load { path: String, message: String },
    /// The library is a fox-jit of another ABI, or too old for this crate.
    Abi { path: String, message: String },
    /// A call returned a status other than OK.
    Status { status: Status, message: String },
}

impl Error {
    /// The library's status; `None` for load and ABI errors.
    pub fn status(&self) -> Option<Status> {
        match self {
            Error::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
    /// The message alone.
    pub fn message(&self) -> &str {
        match self {
            Error::Load { message, .. } | Error::Abi { message, .. } => message,
            Error::Status { message, .. } => message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Load { path, message } => write!(f, "cannot load {}: {}", path, message),
            Error::Abi { path, message } => write!(f, "{}: {}", path, message),
            Error::Status { status, message } => write!(f, "{}: {}", status.name(), message),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

struct LibInner {
    handle: *mut c_void,
    api: *const Api,
    path: String,
    source: Source,
}

// The table is static data of the library and every entry is thread-safe
// (the header's thread-safety note); the handle is only closed on drop.
unsafe impl Send for LibInner {}
unsafe impl Sync for LibInner {}

impl Drop for LibInner {
    fn drop(&mut self) {
        unsafe {
            ffi::dlclose(self.handle);
        }
    }
}

fn cstr_to_string(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// The loaded library. Cheap to clone (shared); it stays loaded while any
/// clone or [`Runtime`] lives.
#[derive(Clone)]
pub struct Library {
    inner: Arc<LibInner>,
}

impl fmt::Debug for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Library")
            .field("path", &self.inner.path)
            .field("source", &self.inner.source)
            .finish()
    }
}

impl Library {
    /// Finds and loads the library: `$FOXJIT_LIBRARY` (only it, when set),
    /// else the libdir of `pkg-config foxjit`, else `libfoxjit.so.1` from the
    /// dynamic loader's search path (the crate's documentation has the
    /// details). When none has it, the [`Error::Load`] names every place
    /// tried and why each failed; a library found that is of another ABI is
    /// an [`Error::Abi`].
    pub fn open() -> Result<Library> {
        let env = std::env::var("FOXJIT_LIBRARY").ok();
        search::search(env.as_deref(), &search::pkg_config_program(), DEFAULT_LIBRARY)
    }

    /// Loads `path` when given (and tries nothing else), else searches as
    /// [`Library::open`] does: for a program's `--library` option.
    pub fn open_with(path: Option<&str>) -> Result<Library> {
        match path {
            Some(p) => Library::open_path(p),
            None => Library::open(),
        }
    }

    /// [`Library::open`]'s search with its inputs given (`$FOXJIT_LIBRARY`,
    /// the pkg-config program, the file name), for the crate's tests.
    #[doc(hidden)]
    pub fn search_with(foxjit_library: Option<&str>, pkg_config: &str, file_name: &str)
        -> Result<Library> {
        search::search(foxjit_library, pkg_config, file_name)
    }

    /// Loads the library at `path` (a file name alone is searched for as
    /// dlopen does) and checks its table: ABI major [`ABI_MAJOR`], and every
    /// entry of ABI 2.1 ([`ABI_MINOR`]) present. Newer entries (2.3 to 2.8)
    /// are checked where they are called, and return `Error::Abi` on a
    /// table that lacks them. Nothing else is tried.
    pub fn open_path(path: &str) -> Result<Library> {
        Library::open_as(path, Source::Given)
    }

    pub(crate) fn open_as(path: &str, source: Source) -> Result<Library> {
        let load_err = |message: String| Error::Load { path: path.to_string(), message };
        let cpath = CString::new(path).map_err(|_| load_err("the path has a NUL byte".into()))?;
        let handle = unsafe { ffi::dlopen(cpath.as_ptr(), ffi::RTLD_NOW | ffi::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(load_err(cstr_to_string(unsafe { ffi::dlerror() })));
        }
        let sym = unsafe { ffi::dlsym(handle, b"foxjit_get_api\0".as_ptr() as *const c_char) };
        if sym.is_null() {
            unsafe { ffi::dlclose(handle) };
            return Err(load_err(
                "no foxjit_get_api symbol: this is not a fox-jit library".into(),
            ));
        }
        let get_api: ffi::GetApiFn = unsafe { std::mem::transmute(sym) };
        let api = unsafe { get_api(ABI_MAJOR) };
        let abi_err = |message: String| {
            unsafe { ffi::dlclose(handle) };
            Err(Error::Abi { path: path.to_string(), message })
        };
        if api.is_null() {
            return abi_err(format!(
                "this fox-jit library does not implement ABI major {} (foxjit_get_api({}) \
                 returned NULL); use a library of the same major version as this crate \
                 (fox-jit 0.2, libfoxjit.so.1)",
                ABI_MAJOR, ABI_MAJOR
            ));
        }
        let (size, major, minor) =
            unsafe { ((*api).struct_size, (*api).abi_major, (*api).abi_minor) };
        if major != ABI_MAJOR {
            return abi_err(format!(
                "foxjit_get_api({}) returned a table of ABI major {}; this crate needs {}",
                ABI_MAJOR, major, ABI_MAJOR
            ));
        }
        // The ABI 2.1 table: every entry before the heads' save (2.3), which
        // is checked where it is called (Library::need).
        let need = ffi::api_offset_heads_seq_saved_size();
        if size < need {
            return abi_err(format!(
                "the library's function table has {} bytes (ABI {}.{}), fewer than the {} this \
                 crate needs (ABI {}.{}): install a newer fox-jit",
                size, major, minor, need, ABI_MAJOR, ABI_MINOR
            ));
        }
        Ok(Library { inner: Arc::new(LibInner { handle, api, path: path.to_string(), source }) })
    }

    fn api(&self) -> &Api {
        unsafe { &*self.inner.api }
    }

    /// The path the library was loaded from (as given to dlopen: a bare
    /// `libfoxjit.so.1` when the loader's search path had it).
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    /// Where the library was found: the path given, `$FOXJIT_LIBRARY`,
    /// pkg-config or the loader's search path.
    pub fn source(&self) -> Source {
        self.inner.source
    }

    /// The library's version ("0.3.0").
    pub fn version(&self) -> String {
        cstr_to_string(unsafe { (self.api().version)() })
    }

    /// Whether the library has the heads' save (ABI 2.3:
    /// [`Runtime::heads_seq_forward_save`] and its siblings); without it
    /// those calls return `Error::Abi` and the plain pair is the way.
    pub fn has_heads_seq_save(&self) -> bool {
        self.abi().0 >= ffi::api_end_heads_seq_backward_saved()
    }

    /// Whether the library has the wide BCE (ABI 2.4:
    /// [`Runtime::bce_with_logits_wide`] and
    /// [`Runtime::bce_with_logits_workspace_size`]); without it those calls
    /// return `Error::Abi` and [`Runtime::bce_with_logits`] is the way.
    pub fn has_bce_with_logits_wide(&self) -> bool {
        self.abi().0 >= ffi::api_end_bce_with_logits_wide()
    }

    /// Whether the library has generalized advantage estimation (ABI 2.5:
    /// [`Runtime::gae`] and [`Runtime::gae_prepare`]); without it those
    /// calls return `Error::Abi`.
    pub fn has_gae(&self) -> bool {
        self.abi().0 >= ffi::api_end_gae_prepare()
    }

    /// Whether the library has the products' precision (ABI 2.6:
    /// [`Runtime::set_precision`] with [`Precision::Tf32`]); without it the
    /// library computes in float32 and that call returns `Error::Abi`.
    pub fn has_precision(&self) -> bool {
        self.abi().0 >= ffi::api_end_get_precision()
    }

    /// Whether the library has the split column sums (ABI 2.7:
    /// [`Runtime::column_sum_workspace_size`], [`Runtime::column_sum_split`]
    /// and [`Runtime::column_sum_split_prepare`]); without it those calls
    /// return `Error::Abi`.
    pub fn has_column_sum_split(&self) -> bool {
        self.abi().0 >= ffi::api_end_column_sum_split_prepare()
    }

    /// Whether the library has the heads' backward in parts (ABI 2.8:
    /// [`Runtime::heads_seq_backward_part`]); without it that call returns
    /// `Error::Abi` and [`Runtime::heads_seq_backward`] (or
    /// [`Runtime::heads_seq_backward_saved`]) is the way.
    pub fn has_heads_seq_backward_part(&self) -> bool {
        self.abi().0 >= ffi::api_end_heads_seq_backward_part()
    }

    /// Err(Error::Abi) unless the library's table reaches `end` bytes (the
    /// end of `entry`, new in ABI 2.`minor`).
    fn need(&self, entry: &str, end: usize, minor: u32) -> Result<()> {
        let (size, major, have) = self.abi();
        if size >= end {
            return Ok(());
        }
        Err(Error::Abi {
            path: self.inner.path.clone(),
            message: format!(
                "foxjit_{} needs fox-jit ABI {}.{}; this library's table is ABI {}.{} ({} \
                 bytes): install a newer fox-jit",
                entry, ABI_MAJOR, minor, major, have, size
            ),
        })
    }

    /// (struct_size, abi_major, abi_minor) of the library's table.
    pub fn abi(&self) -> (usize, u32, u32) {
        let a = self.api();
        (a.struct_size, a.abi_major, a.abi_minor)
    }

    /// The library's name of a status.
    pub fn status_string(&self, status: Status) -> String {
        cstr_to_string(unsafe { (self.api().status_string)(status.0) })
    }

    /// The library's message for the last failure on this thread.
    pub fn last_error(&self) -> String {
        cstr_to_string(unsafe { (self.api().last_error)() })
    }

    /// The largest supported dims of the perception ops.
    pub fn perception_limits(&self) -> PerceptionLimits {
        let mut l = PerceptionLimits::default();
        unsafe { (self.api().get_perception_limits)(&mut l) };
        l
    }

    /// Bytes of workspace a heads backward over `steps` steps needs (0 for
    /// one step or invalid dims).
    pub fn heads_workspace_size(&self, batch: i32, steps: i32, e: i32, h: i32) -> usize {
        unsafe { (self.api().heads_workspace_size)(batch, steps, e, h) }
    }

    fn check(&self, st: c_int) -> Result<()> {
        if st == 0 {
            Ok(())
        } else {
            Err(Error::Status { status: Status(st), message: self.last_error() })
        }
    }
}

/// Parameters of [`Runtime::new`]; `Default` gives the library's defaults
/// (the cache directory from the environment, 2 GiB cap, disk cache on).
#[derive(Clone, Debug, Default)]
pub struct RuntimeParams {
    /// Writable cache directory (None: $FOXJIT_CACHE_DIR, then XDG).
    pub cache_dir: Option<String>,
    /// Colon-separated read-only cache directories searched first.
    pub readonly_cache_dirs: Option<String>,
    /// Size cap of the cache in bytes (0: $FOXJIT_CACHE_MAX_BYTES or 2 GiB).
    pub cache_max_bytes: u64,
    /// Keep compiled kernels in memory only.
    pub disable_disk_cache: bool,
    /// A testing aid: plan and compile as for an older arch, e.g.
    /// "compute_89" on an H200 (None: $FOXJIT_TARGET; "native": the GPU's own).
    /// ABI 2.2: [`Runtime::with_params`] returns `Error::Abi` for a target
    /// on an ABI 2.1 library.
    pub target: Option<String>,
}

/// A fox-jit runtime, bound to the CUDA context current when it was
/// created. Dropping it destroys it (the context must still exist then).
/// Usable from many threads at once, each with the context current.
pub struct Runtime {
    lib: Library,
    rt: RuntimePtr,
    owned: bool,
}

unsafe impl Send for Runtime {}
unsafe impl Sync for Runtime {}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.owned && !self.rt.is_null() {
            unsafe { (self.lib.api().runtime_destroy)(&mut self.rt) };
        }
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime").field("ptr", &self.rt).field("library", &self.lib).finish()
    }
}

fn opt_cstring(s: &Option<String>, what: &str) -> Result<Option<CString>> {
    match s {
        None => Ok(None),
        Some(v) => CString::new(v.as_str()).map(Some).map_err(|_| Error::Status {
            status: Status::INVALID_ARGUMENT,
            message: format!("RuntimeParams::{} has a NUL byte", what),
        }),
    }
}

/// `foxjit_runtime_params.target` is ABI 2.2's: a 2.1 library reads the
/// struct_size its own params have, which ends before it, and would plan
/// for the GPU's arch without a word. So a target for such a library is
/// refused before anything is called.
fn check_target_abi(path: &str, abi: (usize, u32, u32), params: &RuntimeParams) -> Result<()> {
    let (_, major, minor) = abi;
    if params.target.is_none() || minor >= 2 {
        return Ok(());
    }
    Err(Error::Abi {
        path: path.to_string(),
        message: format!(
            "RuntimeParams::target needs fox-jit ABI 2.2 (foxjit_runtime_params.target); this \
             library is ABI {}.{}, which would ignore it: install a newer fox-jit, or leave \
             target unset",
            major, minor
        ),
    })
}

macro_rules! call {
    ($self:ident, $f:ident ( $($a:expr),* )) => {{
        let api = $self.lib.api();
        let st = unsafe { (api.$f)($self.rt $(, $a)*) };
        $self.lib.check(st)
    }};
}

impl Runtime {
    /// Creates a runtime with default parameters on the current context.
    pub fn new(lib: &Library) -> Result<Runtime> {
        Runtime::with_params(lib, &RuntimeParams::default())
    }

    /// Creates a runtime on the calling thread's current CUDA context.
    /// [`RuntimeParams::target`] needs a library of ABI 2.2 or newer:
    /// `Error::Abi` on an older one, which would ignore it.
    pub fn with_params(lib: &Library, params: &RuntimeParams) -> Result<Runtime> {
        check_target_abi(lib.path(), lib.abi(), params)?;
        let api = lib.api();
        let mut raw = RawRuntimeParams {
            struct_size: 0,
            cache_dir: std::ptr::null(),
            readonly_cache_dirs: std::ptr::null(),
            cache_max_bytes: 0,
            disable_disk_cache: 0,
            target: std::ptr::null(),
        };
        unsafe { (api.runtime_default_params)(&mut raw) };
        let cache_dir = opt_cstring(&params.cache_dir, "cache_dir")?;
        let ro = opt_cstring(&params.readonly_cache_dirs, "readonly_cache_dirs")?;
        if let Some(c) = &cache_dir {
            raw.cache_dir = c.as_ptr();
        }
        if let Some(c) = &ro {
            raw.readonly_cache_dirs = c.as_ptr();
        }
        let target = opt_cstring(&params.target, "target")?;
        if let Some(c) = &target {
            raw.target = c.as_ptr();
        }
        if params.cache_max_bytes != 0 {
            raw.cache_max_bytes = params.cache_max_bytes;
        }
        if params.disable_disk_cache {
            raw.disable_disk_cache = 1;
        }
        let mut rt: RuntimePtr = std::ptr::null_mut();
        let st = unsafe { (api.runtime_create)(&raw, &mut rt) };
        lib.check(st)?;
        Ok(Runtime { lib: lib.clone(), rt, owned: true })
    }

    /// Wraps a `foxjit_runtime *` made elsewhere (by C code of the same
    /// process). With `owned`, dropping the wrapper destroys it.
    ///
    /// # Safety
    /// `ptr` must be a runtime of this library that outlives the wrapper
    /// (or is owned by it), or a value that the library's argument checks
    /// reject before they look at the runtime (the crate's own tests).
    pub unsafe fn from_raw(lib: &Library, ptr: *mut c_void, owned: bool) -> Runtime {
        Runtime { lib: lib.clone(), rt: ptr, owned }
    }

    /// The `foxjit_runtime *`, for C code of the same process.
    pub fn as_raw(&self) -> *mut c_void {
        self.rt
    }

    /// The library this runtime came from.
    pub fn library(&self) -> &Library {
        &self.lib
    }

    /// The device's arch ("sm_90").
    pub fn arch(&self) -> String {
        cstr_to_string(unsafe { (self.lib.api().runtime_arch)(self.rt) })
    }

    /// A snapshot of the kernel cache's counters.
    pub fn counters(&self) -> Result<Counters> {
        let mut c = Counters::default();
        call!(self, runtime_get_counters(&mut c))?;
        Ok(c)
    }

    /// Sets the precision of the heads' and the CfC's matrix products for
    /// the calls that start after it (`foxjit_set_precision`). Each
    /// precision is a kernel variant of its own: prepare after setting it
    /// (a capture otherwise fails with `NOT_PREPARED`); a captured CUDA
    /// graph keeps the kernels it captured. [`Precision::Tf32`] needs a
    /// library of ABI 2.6 (`Error::Abi` on an older one);
    /// [`Precision::Float32`] is what an older library computes, and is
    /// accepted there without a call.
    pub fn set_precision(&self, precision: Precision) -> Result<()> {
        if precision == Precision::Float32 && !self.lib.has_precision() {
            return Ok(());
        }
        self.lib.need("set_precision", ffi::api_end_set_precision(), 6)?;
        call!(self, set_precision(precision as c_int))
    }

    /// The runtime's precision ([`Precision::Float32`] on a library older
    /// than ABI 2.6, the only one it has).
    pub fn precision(&self) -> Result<Precision> {
        if !self.lib.has_precision() {
            return Ok(Precision::Float32);
        }
        let mut p: c_int = 0;
        call!(self, get_precision(&mut p))?;
        match p {
            0 => Ok(Precision::Float32),
            1 => Ok(Precision::Tf32),
            other => Err(Error::Status {
                status: Status::UNSUPPORTED,
                message: format!("foxjit_get_precision: precision {} is not one this crate \
                                  knows (float32 0, tf32 1); use a newer crate", other),
            }),
        }
    }

    // ---- column sums --------------------------------------------------

    /// `out[j] (+)= sum_b x[b, j]`; x is `[rows, cols]` f32, out `[cols]`.
    ///
    /// # Safety
    /// The pointers are device memory of the runtime's context holding at
    /// least the sizes above, and `stream` is a stream of that context.
    pub unsafe fn column_sum(&self, x: CUdeviceptr, rows: i64, cols: i64, out: CUdeviceptr,
                             accumulate: bool, stream: CUstream) -> Result<()> {
        call!(self, column_sum(x, rows, cols, out, accumulate as c_int, stream))
    }

    /// `db[out_dim] += sum over batch of dy[batch, out_dim]`.
    ///
    /// # Safety
    /// As [`Runtime::column_sum`].
    pub unsafe fn bias_grad_reduce(&self, dy: CUdeviceptr, batch: i64, out_dim: i64,
                                   db: CUdeviceptr, stream: CUstream) -> Result<()> {
        call!(self, bias_grad_reduce(dy, batch, out_dim, db, stream))
    }

    /// `db[out_dim] = sum over rows of dy[rows, out_dim]`.
    ///
    /// # Safety
    /// As [`Runtime::column_sum`].
    pub unsafe fn curiosity_bias_grad_reduce(&self, dy: CUdeviceptr, rows: i64, out_dim: i64,
                                             db: CUdeviceptr, stream: CUstream) -> Result<()> {
        call!(self, curiosity_bias_grad_reduce(dy, rows, out_dim, db, stream))
    }

    /// `out[n_tail] = sum over n_batch of x[n_batch, n_tail]`.
    ///
    /// # Safety
    /// As [`Runtime::column_sum`].
    pub unsafe fn reduce_axis0(&self, x: CUdeviceptr, n_batch: i64, n_tail: i64,
                               out: CUdeviceptr, stream: CUstream) -> Result<()> {
        call!(self, reduce_axis0(x, n_batch, n_tail, out, stream))
    }

    /// Compiles and loads the kernels a column sum of this shape uses.
    pub fn column_sum_prepare(&self, rows: i64, cols: i64) -> Result<()> {
        call!(self, column_sum_prepare(rows, cols))
    }

    /// Bytes of workspace [`Runtime::column_sum_split`] needs for x
    /// `[rows, cols]`. ABI 2.7: `Error::Abi` on an older library
    /// ([`Library::has_column_sum_split`]).
    pub fn column_sum_workspace_size(&self, rows: i64, cols: i64) -> Result<usize> {
        self.lib.need("column_sum_workspace_size", ffi::api_end_column_sum_workspace_size(),
                      7)?;
        let mut bytes = 0usize;
        call!(self, column_sum_workspace_size(rows, cols, &mut bytes))?;
        Ok(bytes)
    }

    /// The sums of [`Runtime::column_sum`] by the split form: the rows
    /// spread over the whole GPU without thread-block clusters, one
    /// pairwise tree a column, the same bits on every GPU and at every
    /// alignment of x (not [`Runtime::column_sum`]'s bits). `workspace`:
    /// [`Runtime::column_sum_workspace_size`] bytes or more, 16-byte
    /// aligned, zeroed before its first use (each call leaves it zeroed
    /// again: zero it once, not per call). ABI 2.7: `Error::Abi` on an older
    /// library ([`Library::has_column_sum_split`]).
    ///
    /// # Safety
    /// As [`Runtime::column_sum`]; `workspace` too, and no other call in
    /// flight uses it.
    pub unsafe fn column_sum_split(&self, x: CUdeviceptr, rows: i64, cols: i64,
                                   out: CUdeviceptr, accumulate: bool, workspace: CUdeviceptr,
                                   workspace_bytes: usize, stream: CUstream) -> Result<()> {
        self.lib.need("column_sum_split", ffi::api_end_column_sum_split(), 7)?;
        call!(self, column_sum_split(x, rows, cols, out, accumulate as c_int, workspace,
                                     workspace_bytes, stream))
    }

    /// Compiles and loads the kernels [`Runtime::column_sum_split`] uses for
    /// this shape, for use before CUDA graph capture. ABI 2.7: `Error::Abi`
    /// on an older library.
    pub fn column_sum_split_prepare(&self, rows: i64, cols: i64) -> Result<()> {
        self.lib.need("column_sum_split_prepare", ffi::api_end_column_sum_split_prepare(), 7)?;
        call!(self, column_sum_split_prepare(rows, cols))
    }

    // ---- sort and rank normalization -----------------------------------

    /// Bytes of workspace [`Runtime::radix_sort_pairs`] needs.
    pub fn radix_sort_pairs_workspace_size(&self, n: i64, begin_bit: i32, end_bit: i32)
                                           -> Result<usize> {
        let mut bytes = 0usize;
        call!(self, radix_sort_pairs_workspace_size(n, begin_bit, end_bit, &mut bytes))?;
        Ok(bytes)
    }

    /// Stable ascending sort of u32 keys (bits [begin_bit, end_bit)) with
    /// u32 values.
    ///
    /// # Safety
    /// Keys and values are `n` u32 each, the workspace `workspace_bytes`
    /// bytes, all device memory of the runtime's context.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn radix_sort_pairs(&self, keys_in: CUdeviceptr, values_in: CUdeviceptr,
                                   keys_out: CUdeviceptr, values_out: CUdeviceptr, n: i64,
                                   begin_bit: i32, end_bit: i32, workspace: CUdeviceptr,
                                   workspace_bytes: usize, stream: CUstream) -> Result<()> {
        call!(self, radix_sort_pairs(keys_in, values_in, keys_out, values_out, n, begin_bit,
                                     end_bit, workspace, workspace_bytes, stream))
    }

    /// Compiles and loads the sort's kernels.
    pub fn radix_sort_prepare(&self) -> Result<()> {
        call!(self, radix_sort_prepare())
    }

    /// Bytes of workspace [`Runtime::rank_normalize`] needs.
    pub fn rank_normalize_workspace_size(&self, n: i64, ties: Ties) -> Result<usize> {
        let mut bytes = 0usize;
        call!(self, rank_normalize_workspace_size(n, ties as c_int, &mut bytes))?;
        Ok(bytes)
    }

    /// `out[i] = trade_i ? sign(s_i) * rank_i / n : 0` (kernels.md 2); `out`
    /// may be `rewards`.
    ///
    /// # Safety
    /// `rewards` and `out` are `n` f32, the workspace `workspace_bytes`
    /// bytes, all device memory of the runtime's context.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn rank_normalize(&self, rewards: CUdeviceptr, n: i64, std_ema: f32,
                                 mean_ema: f32, ties: Ties, out: CUdeviceptr,
                                 workspace: CUdeviceptr, workspace_bytes: usize,
                                 stream: CUstream) -> Result<()> {
        call!(self, rank_normalize(rewards, n, std_ema, mean_ema, ties as c_int, out, workspace,
                                   workspace_bytes, stream))
    }

    /// Compiles and loads the rank normalization's kernels.
    pub fn rank_normalize_prepare(&self, ties: Ties) -> Result<()> {
        call!(self, rank_normalize_prepare(ties as c_int))
    }

    // ---- perception ops ---------------------------------------------------

    /// CfC step forward (writes h_out and u).
    ///
    /// # Safety
    /// Every pointer in `args` is 0 where allowed or device memory of the
    /// runtime's context of the size the C header gives.
    pub unsafe fn cfc_forward(&self, args: &CfcArgs, stream: CUstream) -> Result<()> {
        call!(self, cfc_forward(args, stream))
    }
    /// CfC step backward.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn cfc_backward(&self, args: &CfcArgs, stream: CUstream) -> Result<()> {
        call!(self, cfc_backward(args, stream))
    }
    /// Compiles and loads the CfC step's kernels for these dims.
    pub fn cfc_prepare(&self, n_in: i32, n_hid: i32) -> Result<()> {
        call!(self, cfc_prepare(n_in, n_hid))
    }

    /// GRN heads forward.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn heads_forward(&self, args: &HeadsArgs, stream: CUstream) -> Result<()> {
        call!(self, heads_forward(args, stream))
    }
    /// GRN heads backward.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn heads_backward(&self, args: &HeadsArgs, stream: CUstream) -> Result<()> {
        call!(self, heads_backward(args, stream))
    }
    /// Compiles and loads the heads' kernels for these dims.
    pub fn heads_prepare(&self, d: i32, e: i32, h: i32) -> Result<()> {
        call!(self, heads_prepare(d, e, h))
    }
    /// Bytes of workspace a heads backward over `steps` steps needs.
    pub fn heads_workspace_size(&self, batch: i32, steps: i32, e: i32, h: i32) -> usize {
        self.lib.heads_workspace_size(batch, steps, e, h)
    }

    /// Variable selection forward.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn vsn_forward(&self, args: &VsnArgs, stream: CUstream) -> Result<()> {
        call!(self, vsn_forward(args, stream))
    }
    /// Variable selection backward (per-batch scratch).
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn vsn_backward(&self, args: &VsnArgs, stream: CUstream) -> Result<()> {
        call!(self, vsn_backward(args, stream))
    }
    /// Compiles and loads the VSN kernels for `f` variables.
    pub fn vsn_prepare(&self, f: i32) -> Result<()> {
        call!(self, vsn_prepare(f))
    }

    /// Attention pooling forward.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn attn_pool_forward(&self, args: &AttnPoolArgs, stream: CUstream) -> Result<()> {
        call!(self, attn_pool_forward(args, stream))
    }
    /// Attention pooling backward.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn attn_pool_backward(&self, args: &AttnPoolArgs, stream: CUstream) -> Result<()> {
        call!(self, attn_pool_backward(args, stream))
    }
    /// Compiles and loads the attention pooling's kernels.
    pub fn attn_pool_prepare(&self, d: i32) -> Result<()> {
        call!(self, attn_pool_prepare(d))
    }

    /// The largest supported dims of the perception ops.
    pub fn perception_limits(&self) -> PerceptionLimits {
        self.lib.perception_limits()
    }

    // ---- whole-sequence ops -------------------------------------------------

    /// Bytes of workspace [`Runtime::cfc_seq_backward`] needs.
    pub fn cfc_seq_workspace_size(&self, batch: i32, k: i32, n_in: i32, n_hid: i32)
                                  -> Result<usize> {
        let mut bytes = 0usize;
        call!(self, cfc_seq_workspace_size(batch, k, n_in, n_hid, &mut bytes))?;
        Ok(bytes)
    }
    /// CfC over k steps, forward (h and u of every step).
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn cfc_seq_forward(&self, args: &CfcSeqArgs, stream: CUstream) -> Result<()> {
        call!(self, cfc_seq_forward(args, stream))
    }
    /// CfC over k steps, backward.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn cfc_seq_backward(&self, args: &CfcSeqArgs, stream: CUstream) -> Result<()> {
        call!(self, cfc_seq_backward(args, stream))
    }
    /// Compiles and loads every kernel of the CfC sequence ops.
    pub fn cfc_seq_prepare(&self, n_in: i32, n_hid: i32) -> Result<()> {
        call!(self, cfc_seq_prepare(n_in, n_hid))
    }

    /// Bytes of workspace [`Runtime::heads_seq_backward`] needs.
    pub fn heads_seq_workspace_size(&self, batch: i32, steps: i32, d: i32, e: i32, h: i32)
                                    -> Result<usize> {
        let mut bytes = 0usize;
        call!(self, heads_seq_workspace_size(batch, steps, d, e, h, &mut bytes))?;
        Ok(bytes)
    }
    /// GRN heads over batch x steps rows, forward.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn heads_seq_forward(&self, args: &HeadsSeqArgs, stream: CUstream) -> Result<()> {
        call!(self, heads_seq_forward(args, stream))
    }
    /// GRN heads over batch x steps rows, backward.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn heads_seq_backward(&self, args: &HeadsSeqArgs, stream: CUstream)
                                     -> Result<()> {
        call!(self, heads_seq_backward(args, stream))
    }
    /// Bytes of the save [`Runtime::heads_seq_forward_save`] writes.
    pub fn heads_seq_saved_size(&self, batch: i32, steps: i32, d: i32, e: i32, h: i32)
                                -> Result<usize> {
        self.lib.need("heads_seq_saved_size", ffi::api_end_heads_seq_saved_size(), 3)?;
        let mut bytes = 0usize;
        call!(self, heads_seq_saved_size(batch, steps, d, e, h, &mut bytes))?;
        Ok(bytes)
    }
    /// GRN heads forward that also keeps the first layer's pre-activations in
    /// `saved` for [`Runtime::heads_seq_backward_saved`].
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`]; `saved` is a device allocation of
    /// `saved_bytes` bytes.
    pub unsafe fn heads_seq_forward_save(&self, args: &HeadsSeqArgs, saved: CUdeviceptr,
                                         saved_bytes: usize, stream: CUstream) -> Result<()> {
        self.lib.need("heads_seq_forward_save", ffi::api_end_heads_seq_forward_save(), 3)?;
        call!(self, heads_seq_forward_save(args, saved, saved_bytes, stream))
    }
    /// GRN heads backward reading the forward's save instead of recomputing it.
    ///
    /// # Safety
    /// As [`Runtime::heads_seq_forward_save`].
    pub unsafe fn heads_seq_backward_saved(&self, args: &HeadsSeqArgs, saved: CUdeviceptr,
                                           saved_bytes: usize, stream: CUstream)
                                           -> Result<()> {
        self.lib.need("heads_seq_backward_saved", ffi::api_end_heads_seq_backward_saved(), 3)?;
        call!(self, heads_seq_backward_saved(args, saved, saved_bytes, stream))
    }
    /// One part of the GRN heads backward (`foxjit_heads_seq_backward_part`,
    /// `docs/kernels.md` section 8): [`HeadsSeqPart::DX`] (the rows'
    /// backward and dx), [`HeadsSeqPart::PARAMS`] (the ten parameter
    /// gradients) or [`HeadsSeqPart::ALL`] (both); every output has the
    /// one-call form's bits. `saved` not 0 reads A from the forward's save
    /// as [`Runtime::heads_seq_backward_saved`] does; 0 recomputes it. A
    /// part that is none of the three is refused by the library
    /// (`INVALID_ARGUMENT`). ABI 2.8: `Error::Abi` on an older library
    /// ([`Library::has_heads_seq_backward_part`]).
    ///
    /// # Safety
    /// As [`Runtime::heads_seq_forward_save`] (`saved` when not 0), for the
    /// pointers the part reads and writes. `PARAMS` runs after the `DX`
    /// call of the same args and workspace, exactly once: on the same
    /// stream, or on one made to wait for an event recorded after `DX`.
    /// The workspace is the pair's until `PARAMS` has finished: no other
    /// call on it may start before then, and nothing may rewrite x or the
    /// parameters while either part may run.
    pub unsafe fn heads_seq_backward_part(&self, args: &HeadsSeqArgs, saved: CUdeviceptr,
                                          saved_bytes: usize, part: HeadsSeqPart,
                                          stream: CUstream) -> Result<()> {
        self.lib.need("heads_seq_backward_part", ffi::api_end_heads_seq_backward_part(), 8)?;
        call!(self, heads_seq_backward_part(args, saved, saved_bytes, part.0 as c_int, stream))
    }
    /// Compiles and loads the heads sequence ops' kernels.
    pub fn heads_seq_prepare(&self, d: i32, e: i32, h: i32) -> Result<()> {
        call!(self, heads_seq_prepare(d, e, h))
    }

    /// Bytes of workspace [`Runtime::vsn_seq_backward`] needs.
    pub fn vsn_seq_workspace_size(&self, batch: i32, t: i32, f: i32) -> Result<usize> {
        let mut bytes = 0usize;
        call!(self, vsn_seq_workspace_size(batch, t, f, &mut bytes))?;
        Ok(bytes)
    }
    /// Variable selection backward over all rows.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn vsn_seq_backward(&self, args: &VsnSeqArgs, stream: CUstream) -> Result<()> {
        call!(self, vsn_seq_backward(args, stream))
    }
    /// Compiles and loads the VSN sequence backward's kernels.
    pub fn vsn_seq_prepare(&self, f: i32) -> Result<()> {
        call!(self, vsn_seq_prepare(f))
    }

    // ---- training step --------------------------------------------------------

    /// `loss[0] (+)= mean BCE-with-logits(z, y)`; `dz = (sigmoid(z) - y) / n`
    /// (dz may be 0).
    ///
    /// # Safety
    /// `z`, `y` (and `dz`) are `n` f32, `loss` one f32, device memory of the
    /// runtime's context.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn bce_with_logits(&self, z: CUdeviceptr, y: CUdeviceptr, n: i64,
                                  loss: CUdeviceptr, loss_accumulate: bool, dz: CUdeviceptr,
                                  stream: CUstream) -> Result<()> {
        call!(self, bce_with_logits(z, y, n, loss, loss_accumulate as c_int, dz, stream))
    }
    /// Bytes of workspace [`Runtime::bce_with_logits_wide`] needs for `n`
    /// values (at most 8 KiB; a workspace sized for `n` serves every smaller
    /// `n`). ABI 2.4: `Error::Abi` on an older library.
    pub fn bce_with_logits_workspace_size(&self, n: i64) -> Result<usize> {
        self.lib.need("bce_with_logits_workspace_size",
                      ffi::api_end_bce_with_logits_workspace_size(), 4)?;
        let mut bytes = 0usize;
        call!(self, bce_with_logits_workspace_size(n, &mut bytes))?;
        Ok(bytes)
    }
    /// The loss and dz of [`Runtime::bce_with_logits`], spread over the
    /// whole GPU: past 8192 values, blocks write float64 partial sums to
    /// `workspace` and a second kernel adds them in a fixed order; up to
    /// 8192, the one-block form itself. dz has the bits of
    /// [`Runtime::bce_with_logits`]; the loss is a sum whose order depends
    /// on `n` alone, not always the one-block form's. Faster past about 8192
    /// values, most below sm_90. ABI 2.4:
    /// `Error::Abi` on an older library ([`Library::has_bce_with_logits_wide`]).
    ///
    /// # Safety
    /// As [`Runtime::bce_with_logits`]; `workspace` is a device allocation
    /// of `workspace_bytes` bytes (8-byte aligned, at least
    /// [`Runtime::bce_with_logits_workspace_size`]) that overlaps no other
    /// argument.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn bce_with_logits_wide(&self, z: CUdeviceptr, y: CUdeviceptr, n: i64,
                                       loss: CUdeviceptr, loss_accumulate: bool,
                                       dz: CUdeviceptr, workspace: CUdeviceptr,
                                       workspace_bytes: usize, stream: CUstream) -> Result<()> {
        self.lib.need("bce_with_logits_wide", ffi::api_end_bce_with_logits_wide(), 4)?;
        call!(self, bce_with_logits_wide(z, y, n, loss, loss_accumulate as c_int, dz, workspace,
                                         workspace_bytes, stream))
    }
    /// Fused AdamW over one tensor.
    ///
    /// # Safety
    /// As [`Runtime::cfc_forward`].
    pub unsafe fn adamw(&self, args: &AdamwArgs, stream: CUstream) -> Result<()> {
        call!(self, adamw(args, stream))
    }
    /// `step[0] += 1` on the device (one i32).
    ///
    /// # Safety
    /// `step` is one i32 of device memory of the runtime's context.
    pub unsafe fn increment_step(&self, step: CUdeviceptr, stream: CUstream) -> Result<()> {
        call!(self, increment_step(step, stream))
    }
    /// Compiles and loads the training-step kernels.
    pub fn training_prepare(&self) -> Result<()> {
        call!(self, training_prepare())
    }

    // ---- generalized advantage estimation ---------------------------------------

    /// Advantages and returns of time-major rollouts (kernels.md 9): with
    /// `keep = 0` where `dones[t, n]` is nonzero (the episode ended at step
    /// t) and 1 elsewhere, from the last step back, per environment,
    ///
    /// ```text
    /// delta[t]      = rewards[t] + gamma * keep[t] * values[t + 1] - values[t]
    /// advantages[t] = delta[t] + gamma * lambda * keep[t] * advantages[t + 1]
    /// returns[t]    = advantages[t] + values[t]
    /// ```
    ///
    /// (`advantages[steps] = 0`), in f32 in that order: the bits depend on
    /// the inputs only. `returns` may be 0 (not wanted). `gamma` and
    /// `lambda` in [0, 1]; `steps` and `envs` in [1, 2^31], `(steps + 1) x
    /// envs` at most 2^40. ABI 2.5: `Error::Abi` on an older library
    /// ([`Library::has_gae`]).
    ///
    /// # Safety
    /// `rewards`, `dones`, `advantages` (and `returns`) are `steps x envs`
    /// f32 and `values` `(steps + 1) x envs` f32 (its last row the
    /// bootstrap value), row-major by step, device memory of the runtime's
    /// context. An output that overlaps an input or the other output is
    /// refused with `Error::Status`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gae(&self, rewards: CUdeviceptr, values: CUdeviceptr, dones: CUdeviceptr,
                      steps: i64, envs: i64, gamma: f32, lambda: f32, advantages: CUdeviceptr,
                      returns: CUdeviceptr, stream: CUstream) -> Result<()> {
        self.lib.need("gae", ffi::api_end_gae(), 5)?;
        call!(self, gae(rewards, values, dones, steps, envs, gamma, lambda, advantages, returns,
                        stream))
    }
    /// Compiles and loads [`Runtime::gae`]'s kernel (one for every shape),
    /// for use before CUDA graph capture. ABI 2.5: `Error::Abi` on an older
    /// library.
    pub fn gae_prepare(&self) -> Result<()> {
        self.lib.need("gae_prepare", ffi::api_end_gae_prepare(), 5)?;
        call!(self, gae_prepare())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // No ABI 2.1 library is at hand (the tests' fake one starts at 2.2), so
    // the check runs on the table's (size, major, minor) alone.
    #[test]
    fn target_needs_abi_2_2() {
        let with = RuntimeParams { target: Some("compute_89".into()), ..Default::default() };
        let without = RuntimeParams::default();
        match check_target_abi("libfoxjit.so.1", (400, 2, 1), &with) {
            Err(Error::Abi { path, message }) => {
                assert_eq!(path, "libfoxjit.so.1");
                assert!(message.contains("needs fox-jit ABI 2.2"), "{}", message);
                assert!(message.contains("ABI 2.1"), "{}", message);
            }
            other => panic!("expected an ABI error, got {:?}", other),
        }
        assert_eq!(check_target_abi("libfoxjit.so.1", (400, 2, 1), &without), Ok(()));
        for minor in [2, 3, 4, 9] {
            assert_eq!(check_target_abi("libfoxjit.so.1", (400, 2, minor), &with), Ok(()));
        }
    }
}
