//! The few CUDA driver calls the GPU test needs (context, allocation,
//! copies), loaded from libcuda.so.1 with dlopen so the test builds and
//! runs without a driver. Not part of the crate: a trainer has cudarc.
#![allow(dead_code)]

use std::os::raw::{c_char, c_int, c_uint, c_void};

type CuResult = c_int;

#[link(name = "dl")]
extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

pub struct Cuda {
    init: unsafe extern "C" fn(c_uint) -> CuResult,
    device_get_count: unsafe extern "C" fn(*mut c_int) -> CuResult,
    device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult,
    primary_ctx_retain: unsafe extern "C" fn(*mut *mut c_void, c_int) -> CuResult,
    ctx_set_current: unsafe extern "C" fn(*mut c_void) -> CuResult,
    ctx_synchronize: unsafe extern "C" fn() -> CuResult,
    mem_alloc: unsafe extern "C" fn(*mut u64, usize) -> CuResult,
    mem_free: unsafe extern "C" fn(u64) -> CuResult,
    memcpy_htod: unsafe extern "C" fn(u64, *const c_void, usize) -> CuResult,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, u64, usize) -> CuResult,
    stream_create: unsafe extern "C" fn(*mut *mut c_void, c_uint) -> CuResult,
    stream_synchronize: unsafe extern "C" fn(*mut c_void) -> CuResult,
    pub ctx: *mut c_void,
}

fn check(what: &str, r: CuResult) {
    assert_eq!(r, 0, "{} failed with CUresult {}", what, r);
}

impl Cuda {
    /// The driver with device 0's primary context current on this thread,
    /// or why not (no driver, no device).
    pub fn open() -> Result<Cuda, String> {
        let name = std::env::var("FOXJIT_CUDA_LIBRARY").unwrap_or_else(|_| "libcuda.so.1".into());
        let cname = std::ffi::CString::new(name.clone()).unwrap();
        let h = unsafe { dlopen(cname.as_ptr(), 2) };
        if h.is_null() {
            let msg = unsafe { std::ffi::CStr::from_ptr(dlerror()) };
            return Err(format!("no CUDA driver ({})", msg.to_string_lossy()));
        }
        macro_rules! sym {
            ($n:expr) => {{
                let p = unsafe { dlsym(h, concat!($n, "\0").as_ptr() as *const c_char) };
                if p.is_null() {
                    return Err(format!("libcuda lacks {}", $n));
                }
                unsafe { std::mem::transmute(p) }
            }};
        }
        let mut c = Cuda {
            init: sym!("cuInit"),
            device_get_count: sym!("cuDeviceGetCount"),
            device_get: sym!("cuDeviceGet"),
            primary_ctx_retain: sym!("cuDevicePrimaryCtxRetain"),
            ctx_set_current: sym!("cuCtxSetCurrent"),
            ctx_synchronize: sym!("cuCtxSynchronize"),
            mem_alloc: sym!("cuMemAlloc_v2"),
            mem_free: sym!("cuMemFree_v2"),
            memcpy_htod: sym!("cuMemcpyHtoD_v2"),
            memcpy_dtoh: sym!("cuMemcpyDtoH_v2"),
            stream_create: sym!("cuStreamCreate"),
            stream_synchronize: sym!("cuStreamSynchronize"),
            ctx: std::ptr::null_mut(),
        };
        let r = unsafe { (c.init)(0) };
        if r != 0 {
            return Err(format!("cuInit failed with CUresult {} (no usable GPU)", r));
        }
        let mut n = 0;
        unsafe { (c.device_get_count)(&mut n) };
        if n < 1 {
            return Err("no CUDA device".into());
        }
        let mut dev = 0;
        check("cuDeviceGet", unsafe { (c.device_get)(&mut dev, 0) });
        check("cuDevicePrimaryCtxRetain", unsafe { (c.primary_ctx_retain)(&mut c.ctx, dev) });
        c.make_current();
        Ok(c)
    }

    pub fn make_current(&self) {
        check("cuCtxSetCurrent", unsafe { (self.ctx_set_current)(self.ctx) });
    }

    pub fn alloc(&self, bytes: usize) -> DeviceBuf<'_> {
        let mut p = 0u64;
        check("cuMemAlloc", unsafe { (self.mem_alloc)(&mut p, bytes.max(4)) });
        DeviceBuf { cuda: self, ptr: p, bytes }
    }

    pub fn upload<T: Copy>(&self, host: &[T]) -> DeviceBuf<'_> {
        let bytes = std::mem::size_of_val(host);
        let b = self.alloc(bytes);
        check("cuMemcpyHtoD", unsafe {
            (self.memcpy_htod)(b.ptr, host.as_ptr() as *const c_void, bytes)
        });
        b
    }

    pub fn zeros_f32(&self, n: usize) -> DeviceBuf<'_> {
        self.upload(&vec![0f32; n])
    }

    pub fn stream(&self) -> *mut c_void {
        let mut s = std::ptr::null_mut();
        check("cuStreamCreate", unsafe { (self.stream_create)(&mut s, 0) });
        s
    }

    pub fn sync(&self, stream: *mut c_void) {
        check("cuStreamSynchronize", unsafe { (self.stream_synchronize)(stream) });
        check("cuCtxSynchronize", unsafe { (self.ctx_synchronize)() });
    }
}

pub struct DeviceBuf<'a> {
    cuda: &'a Cuda,
    pub ptr: u64,
    pub bytes: usize,
}

impl DeviceBuf<'_> {
    pub fn download<T: Copy + Default>(&self) -> Vec<T> {
        let n = self.bytes / std::mem::size_of::<T>();
        let mut v = vec![T::default(); n];
        check("cuMemcpyDtoH", unsafe {
            (self.cuda.memcpy_dtoh)(v.as_mut_ptr() as *mut c_void, self.ptr, self.bytes)
        });
        v
    }
}

impl Drop for DeviceBuf<'_> {
    fn drop(&mut self) {
        unsafe { (self.cuda.mem_free)(self.ptr) };
    }
}
