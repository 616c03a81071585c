"""ctypes view of include/foxjit/foxjit.h: the structs, the plugin table,
loading with the ABI checks, Status and Error."""

import ctypes
import os
import threading

ABI_MAJOR = 2
ABI_MINOR = 1          # the sequence ops: the last entries every library must have
# Newer entries, ABI 2.3's (the heads' save), 2.4's (the wide BCE), 2.5's
# (generalized advantage estimation), 2.6's (the products' precision),
# 2.7's (the split column sums) and 2.8's (the heads' backward in parts),
# are called only when the library has them (Library.has, Library.need);
# an older library still loads.
DEFAULT_LIBRARY = "libfoxjit.so.1"
# The library the wheel carries (pip install . at the repository root):
# meson-python installs the project's shared libraries into
# .<distribution>.mesonpy.libs next to the package.
_HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED_LIBRARY = os.path.join(os.path.dirname(_HERE), ".foxjit.mesonpy.libs", "libfoxjit.so")

c_int, c_i64, c_u64, c_f32, c_size = (ctypes.c_int, ctypes.c_int64, ctypes.c_uint64,
                                      ctypes.c_float, ctypes.c_size_t)
CUdeviceptr = ctypes.c_uint64
CUstream = ctypes.c_void_p
P = CUdeviceptr

STATUS_NAMES = [
    "FOXJIT_OK", "FOXJIT_ERROR_INVALID_ARGUMENT", "FOXJIT_ERROR_UNSUPPORTED",
    "FOXJIT_ERROR_WORKSPACE_TOO_SMALL", "FOXJIT_ERROR_DRIVER_NOT_FOUND",
    "FOXJIT_ERROR_NVRTC_NOT_FOUND", "FOXJIT_ERROR_NO_CONTEXT", "FOXJIT_ERROR_WRONG_CONTEXT",
    "FOXJIT_ERROR_COMPILE", "FOXJIT_ERROR_NOT_PREPARED", "FOXJIT_ERROR_CUDA",
    "FOXJIT_ERROR_OUT_OF_MEMORY", "FOXJIT_ERROR_CACHE",
]


class Status:
    OK, INVALID_ARGUMENT, UNSUPPORTED, WORKSPACE_TOO_SMALL = 0, 1, 2, 3
    DRIVER_NOT_FOUND, NVRTC_NOT_FOUND, NO_CONTEXT, WRONG_CONTEXT = 4, 5, 6, 7
    COMPILE, NOT_PREPARED, CUDA, OUT_OF_MEMORY, CACHE = 8, 9, 10, 11, 12

    @staticmethod
    def name(status):
        if 0 <= status < len(STATUS_NAMES):
            return STATUS_NAMES[status]
        return "FOXJIT_STATUS_%d" % status


TIES_MAX, TIES_ORDINAL = 0, 1
# foxjit_precision by name, in the order of its values (FOXJIT_PRECISION_FLOAT32 = 0).
PRECISIONS = ("float32", "tf32")
# foxjit_heads_seq_part (Runtime.heads_seq_backward_part), and its values by name.
HEADS_SEQ_PART_DX, HEADS_SEQ_PART_PARAMS, HEADS_SEQ_PART_ALL = 1, 2, 3
HEADS_SEQ_PARTS = {"dx": HEADS_SEQ_PART_DX, "params": HEADS_SEQ_PART_PARAMS,
                   "all": HEADS_SEQ_PART_ALL}


class Error(RuntimeError):
    """A fox-jit call failed: .status (int), .status_name and .message (the
    library's foxjit_last_error(), which says what to do)."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = Status.name(status)
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))


class LoadError(OSError):
    """The library could not be loaded, or is not a fox-jit library."""


class AbiError(LoadError):
    """The library is a fox-jit of another ABI, or too old for this package."""


def _struct(name, fields):
    return type(name, (ctypes.Structure,), {"_fields_": fields})


RuntimeParams = _struct("foxjit_runtime_params", [
    ("struct_size", c_size), ("cache_dir", ctypes.c_char_p),
    ("readonly_cache_dirs", ctypes.c_char_p), ("cache_max_bytes", c_u64),
    ("disable_disk_cache", c_int),
    # ABI 2.2: the library writes struct_size bytes, so the field must exist.
    ("target", ctypes.c_char_p)])

Counters = _struct("foxjit_counters", [
    ("disk_hits", c_u64), ("disk_misses", c_u64), ("compiles", c_u64),
    ("compile_ms", ctypes.c_double), ("bytes_read", c_u64), ("bytes_written", c_u64),
    ("corrupt_entries", c_u64), ("evictions", c_u64), ("write_failures", c_u64),
    ("modules_loaded", c_u64)])

CfcArgs = _struct("foxjit_cfc_args", [
    ("batch", c_int), ("n_in", c_int), ("n_hid", c_int),
    ("w_in", P), ("w_rec", P), ("bias", P), ("tau", P),
    ("x", P), ("x_stride", c_i64), ("h", P), ("h_stride", c_i64),
    ("dt", P), ("dt_stride", c_i64), ("u", P), ("u_stride", c_i64),
    ("h_out", P), ("h_out_stride", c_i64), ("dh_out", P), ("dh_out_stride", c_i64),
    ("dh", P), ("dh_stride", c_i64), ("dh_accumulate", c_int),
    ("dx", P), ("dx_stride", c_i64), ("dx_accumulate", c_int),
    ("dw_in", P), ("dw_rec", P), ("dbias", P), ("dtau", P)])

_HEADS_PARAMS = ["w1", "b1", "w2", "b2", "w_gate", "b_gate", "w_main", "b_main",
                 "w_skip", "b_skip"]

HeadsArgs = _struct("foxjit_heads_args", [
    ("batch", c_int), ("d", c_int), ("e", c_int), ("h", c_int)]
    + [(n, P) for n in _HEADS_PARAMS]
    + [("x", P), ("x_stride", c_i64), ("logits", P), ("logits_stride", c_i64),
       ("dlogits", P), ("dlogits_stride", c_i64), ("dx", P), ("dx_stride", c_i64),
       ("dx_accumulate", c_int)]
    + [("d" + n, P) for n in _HEADS_PARAMS]
    + [("steps", c_int), ("x_step_stride", c_i64), ("logits_step_stride", c_i64),
       ("dlogits_step_stride", c_i64), ("dx_step_stride", c_i64),
       ("work", P), ("work_bytes", c_size)])

VsnArgs = _struct("foxjit_vsn_args", [
    ("batch", c_int), ("t", c_int), ("f", c_int), ("w", P), ("bias", P), ("x", P), ("y", P),
    ("dy", P), ("dx", P), ("dx_accumulate", c_int), ("dw", P), ("dbias", P)])

AttnPoolArgs = _struct("foxjit_attn_pool_args", [
    ("batch", c_int), ("t", c_int), ("d", c_int), ("q", P), ("hs", P), ("pooled", P),
    ("dpooled", P), ("dhs", P), ("dhs_accumulate", c_int), ("dq", P)])

PerceptionLimits = _struct("foxjit_perception_limits", [
    (n, c_int) for n in ("max_batch", "max_t", "max_n_hid", "max_n_in", "max_e", "max_h",
                         "max_f", "max_d")])

CfcSeqArgs = _struct("foxjit_cfc_seq_args", [
    ("batch", c_int), ("k", c_int), ("n_in", c_int), ("n_hid", c_int),
    ("w_in", P), ("w_rec", P), ("bias", P), ("tau", P), ("x", P), ("dt", P),
    ("h_init", P), ("h", P), ("u", P), ("dh", P), ("dx", P), ("dx_accumulate", c_int),
    ("dh_init", P), ("dh_init_accumulate", c_int), ("dw_in", P), ("dw_rec", P),
    ("dbias", P), ("dtau", P), ("grad_accumulate", c_int), ("work", P),
    ("work_bytes", c_size)])

HeadsSeqArgs = _struct("foxjit_heads_seq_args", [
    ("batch", c_int), ("steps", c_int), ("d", c_int), ("e", c_int), ("h", c_int)]
    + [(n, P) for n in _HEADS_PARAMS]
    + [("x", P), ("x_stride", c_i64), ("x_step_stride", c_i64),
       ("logits", P), ("logits_stride", c_i64), ("logits_step_stride", c_i64),
       ("dlogits", P), ("dlogits_stride", c_i64), ("dlogits_step_stride", c_i64),
       ("dx", P), ("dx_stride", c_i64), ("dx_step_stride", c_i64), ("dx_accumulate", c_int)]
    + [("d" + n, P) for n in _HEADS_PARAMS]
    + [("grad_accumulate", c_int), ("work", P), ("work_bytes", c_size)])

VsnSeqArgs = _struct("foxjit_vsn_seq_args", [
    ("batch", c_int), ("t", c_int), ("f", c_int), ("w", P), ("bias", P), ("x", P),
    ("dy", P), ("dx", P), ("dx_accumulate", c_int), ("dw", P), ("dbias", P),
    ("grad_accumulate", c_int), ("work", P), ("work_bytes", c_size)])

AdamwArgs = _struct("foxjit_adamw_args", [
    ("n", c_i64), ("param", P), ("grad", P), ("m", P), ("v", P), ("step", P),
    ("lr", c_f32), ("beta1", c_f32), ("beta2", c_f32), ("eps", c_f32),
    ("weight_decay", c_f32)])

_rt = ctypes.c_void_p
_st = c_int
_fn = ctypes.CFUNCTYPE


def _op(*args):
    return _fn(_st, _rt, *args)


_SP = ctypes.POINTER(c_size)
Api = _struct("foxjit_api", [
    ("struct_size", c_size), ("abi_major", ctypes.c_uint32), ("abi_minor", ctypes.c_uint32),
    ("version", _fn(ctypes.c_char_p)),
    ("status_string", _fn(ctypes.c_char_p, c_int)),
    ("last_error", _fn(ctypes.c_char_p)),
    ("runtime_default_params", _fn(None, ctypes.POINTER(RuntimeParams))),
    ("runtime_create", _fn(_st, ctypes.POINTER(RuntimeParams), ctypes.POINTER(_rt))),
    ("runtime_destroy", _fn(None, ctypes.POINTER(_rt))),
    ("runtime_get_counters", _op(ctypes.POINTER(Counters))),
    ("runtime_arch", _fn(ctypes.c_char_p, _rt)),
    ("column_sum", _op(P, c_i64, c_i64, P, c_int, CUstream)),
    ("bias_grad_reduce", _op(P, c_i64, c_i64, P, CUstream)),
    ("curiosity_bias_grad_reduce", _op(P, c_i64, c_i64, P, CUstream)),
    ("reduce_axis0", _op(P, c_i64, c_i64, P, CUstream)),
    ("column_sum_prepare", _op(c_i64, c_i64)),
    ("radix_sort_pairs_workspace_size", _op(c_i64, c_int, c_int, _SP)),
    ("radix_sort_pairs", _op(P, P, P, P, c_i64, c_int, c_int, P, c_size, CUstream)),
    ("radix_sort_prepare", _op()),
    ("rank_normalize_workspace_size", _op(c_i64, c_int, _SP)),
    ("rank_normalize", _op(P, c_i64, c_f32, c_f32, c_int, P, P, c_size, CUstream)),
    ("rank_normalize_prepare", _op(c_int)),
    ("cfc_forward", _op(ctypes.POINTER(CfcArgs), CUstream)),
    ("cfc_backward", _op(ctypes.POINTER(CfcArgs), CUstream)),
    ("cfc_prepare", _op(c_int, c_int)),
    ("heads_forward", _op(ctypes.POINTER(HeadsArgs), CUstream)),
    ("heads_backward", _op(ctypes.POINTER(HeadsArgs), CUstream)),
    ("heads_prepare", _op(c_int, c_int, c_int)),
    ("vsn_forward", _op(ctypes.POINTER(VsnArgs), CUstream)),
    ("vsn_backward", _op(ctypes.POINTER(VsnArgs), CUstream)),
    ("vsn_prepare", _op(c_int)),
    ("attn_pool_forward", _op(ctypes.POINTER(AttnPoolArgs), CUstream)),
    ("attn_pool_backward", _op(ctypes.POINTER(AttnPoolArgs), CUstream)),
    ("attn_pool_prepare", _op(c_int)),
    ("get_perception_limits", _fn(None, ctypes.POINTER(PerceptionLimits))),
    ("bce_with_logits", _op(P, P, c_i64, P, c_int, P, CUstream)),
    ("adamw", _op(ctypes.POINTER(AdamwArgs), CUstream)),
    ("increment_step", _op(P, CUstream)),
    ("training_prepare", _op()),
    ("heads_workspace_size", _fn(c_size, c_int, c_int, c_int, c_int)),
    ("cfc_seq_workspace_size", _op(c_int, c_int, c_int, c_int, _SP)),
    ("cfc_seq_forward", _op(ctypes.POINTER(CfcSeqArgs), CUstream)),
    ("cfc_seq_backward", _op(ctypes.POINTER(CfcSeqArgs), CUstream)),
    ("cfc_seq_prepare", _op(c_int, c_int)),
    ("heads_seq_workspace_size", _op(c_int, c_int, c_int, c_int, c_int, _SP)),
    ("heads_seq_forward", _op(ctypes.POINTER(HeadsSeqArgs), CUstream)),
    ("heads_seq_backward", _op(ctypes.POINTER(HeadsSeqArgs), CUstream)),
    ("heads_seq_prepare", _op(c_int, c_int, c_int)),
    ("vsn_seq_workspace_size", _op(c_int, c_int, c_int, _SP)),
    ("vsn_seq_backward", _op(ctypes.POINTER(VsnSeqArgs), CUstream)),
    ("vsn_seq_prepare", _op(c_int)),
    # ABI 2.3
    ("heads_seq_saved_size", _op(c_int, c_int, c_int, c_int, c_int, _SP)),
    ("heads_seq_forward_save", _op(ctypes.POINTER(HeadsSeqArgs), P, c_size, CUstream)),
    ("heads_seq_backward_saved", _op(ctypes.POINTER(HeadsSeqArgs), P, c_size, CUstream)),
    # ABI 2.4
    ("bce_with_logits_workspace_size", _op(c_i64, _SP)),
    ("bce_with_logits_wide", _op(P, P, c_i64, P, c_int, P, P, c_size, CUstream)),
    # ABI 2.5
    ("gae", _op(P, P, P, c_i64, c_i64, c_f32, c_f32, P, P, CUstream)),
    ("gae_prepare", _op()),
    # ABI 2.6
    ("set_precision", _op(c_int)),
    ("get_precision", _op(ctypes.POINTER(c_int))),
    # ABI 2.7
    ("column_sum_workspace_size", _op(c_i64, c_i64, _SP)),
    ("column_sum_split", _op(P, c_i64, c_i64, P, c_int, P, c_size, CUstream)),
    ("column_sum_split_prepare", _op(c_i64, c_i64)),
    # ABI 2.8 (foxjit_heads_seq_part as the C enum's int)
    ("heads_seq_backward_part", _op(ctypes.POINTER(HeadsSeqArgs), P, c_size, c_int, CUstream)),
])

STRUCTS = {s.__name__: s for s in (RuntimeParams, Counters, CfcArgs, HeadsArgs, VsnArgs,
                                   AttnPoolArgs, PerceptionLimits, CfcSeqArgs, HeadsSeqArgs,
                                   VsnSeqArgs, AdamwArgs, Api)}


def layout():
    """{"struct.field": offset, "struct.SIZE": size} of every struct here,
    for the test that compares them with the C compiler's."""
    out = {}
    for name, s in STRUCTS.items():
        out[name + ".SIZE"] = ctypes.sizeof(s)
        for f, _ in s._fields_:
            out["%s.%s" % (name, f)] = getattr(s, f).offset
    return out


class Library:
    """The loaded libfoxjit with its checked function table (.api)."""

    def __init__(self, path=None):
        if path is None:
            self._dll, path = _load_default()
        else:
            try:
                self._dll = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
            except OSError as e:
                raise LoadError("cannot load %s: %s (set FOXJIT_LIBRARY or pass the path)"
                                % (path, e)) from None
        self.path = path
        try:
            get = self._dll.foxjit_get_api
        except AttributeError:
            raise LoadError("%s: no foxjit_get_api symbol: this is not a fox-jit library"
                            % path) from None
        get.restype = ctypes.c_void_p
        get.argtypes = [ctypes.c_uint32]
        addr = get(ABI_MAJOR)
        if not addr:
            raise AbiError("%s: this fox-jit library does not implement ABI major %d "
                           "(foxjit_get_api(%d) returned NULL); use a library of the same "
                           "major version as this package (fox-jit 0.2, libfoxjit.so.1)"
                           % (path, ABI_MAJOR, ABI_MAJOR))
        head = ctypes.cast(addr, ctypes.POINTER(c_size * 2)).contents
        size = head[0]
        major = head[1] & 0xFFFFFFFF
        minor = head[1] >> 32
        if major != ABI_MAJOR:
            raise AbiError("%s: foxjit_get_api(%d) returned a table of ABI major %d; this "
                           "package needs %d" % (path, ABI_MAJOR, major, ABI_MAJOR))
        need = Api.heads_seq_saved_size.offset  # the ABI 2.1 table
        if size < need:
            raise AbiError("%s: the library's function table has %d bytes (ABI %d.%d), fewer "
                           "than the %d this package needs (ABI %d.%d): install a newer "
                           "fox-jit" % (path, size, major, minor, need, ABI_MAJOR, ABI_MINOR))
        self.api = ctypes.cast(addr, ctypes.POINTER(Api)).contents
        self.abi = (size, major, minor)
        self.path = path
        # The table's entries as Python objects, made once: reading a
        # function pointer field of a ctypes struct builds a new one each
        # time. Entries past the table's end (an older minor) are absent.
        self.fns = _Entries()
        for name, _t in Api._fields_[3:]:
            if self.has(name):
                setattr(self.fns, name, getattr(self.api, name))

    def has(self, entry):
        """Whether the library's table holds `entry` (an Api field name)."""
        f = getattr(Api, entry)
        return self.abi[0] >= f.offset + f.size

    def need(self, entry, minor):
        """Raises AbiError unless the table holds `entry` (new in ABI 2.minor)."""
        if not self.has(entry):
            raise AbiError("%s: foxjit_%s needs fox-jit ABI %d.%d; this library's table is "
                           "ABI %d.%d (%d bytes): install a newer fox-jit"
                           % (self.path, entry, ABI_MAJOR, minor, self.abi[1], self.abi[2],
                              self.abi[0]))

    def version(self):
        return self.api.version().decode()

    def status_string(self, status):
        return self.api.status_string(status).decode()

    def last_error(self):
        return (self.api.last_error() or b"").decode(errors="replace")

    def check(self, status):
        if status != 0:
            raise Error(status, self.last_error())

    def perception_limits(self):
        lim = PerceptionLimits()
        self.api.get_perception_limits(ctypes.byref(lim))
        return {f: getattr(lim, f) for f, _ in PerceptionLimits._fields_}

    def heads_workspace_size(self, batch, steps, e, h):
        return self.api.heads_workspace_size(batch, steps, e, h)


class _Entries:
    """The function table's entries by name (Library.fns)."""


def _load_default():
    """(CDLL, path) of the library to use when none is named: $FOXJIT_LIBRARY,
    else the one this package carries (a wheel), else libfoxjit.so.1 from the
    loader's search path. LoadError names every place tried."""
    env = os.environ.get("FOXJIT_LIBRARY")
    if env:
        try:
            return ctypes.CDLL(env, mode=os.RTLD_NOW | os.RTLD_LOCAL), env
        except OSError as e:
            # An explicit choice that fails is an error, not a reason to load
            # another library.
            raise LoadError("cannot load %s (FOXJIT_LIBRARY): %s; fix or unset FOXJIT_LIBRARY"
                            % (env, e)) from None
    tried = ["FOXJIT_LIBRARY: not set"]
    if os.path.exists(BUNDLED_LIBRARY):
        try:
            return ctypes.CDLL(BUNDLED_LIBRARY, mode=os.RTLD_NOW | os.RTLD_LOCAL), \
                BUNDLED_LIBRARY
        except OSError as e:
            tried.append("%s (in this package): %s" % (BUNDLED_LIBRARY, e))
    else:
        tried.append("%s: not there (this foxjit package carries no library: it was not "
                     "installed from a wheel)" % BUNDLED_LIBRARY)
    try:
        return ctypes.CDLL(DEFAULT_LIBRARY, mode=os.RTLD_NOW | os.RTLD_LOCAL), DEFAULT_LIBRARY
    except OSError as e:
        tried.append("%s on the loader's search path: %s" % (DEFAULT_LIBRARY, e))
    raise LoadError("cannot load fox-jit's library; tried: %s. Install the foxjit wheel "
                    "(pip install . at the repository root), or build the library (meson) and "
                    "set FOXJIT_LIBRARY to its path, or call foxjit.set_library(path)"
                    % "; ".join(tried))


_default = None
_default_lock = threading.Lock()


def library():
    """The process's Library ($FOXJIT_LIBRARY, else the one this package
    carries, else libfoxjit.so.1 from the loader's path), loaded on first
    use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Library()
        return _default


def set_library(path):
    """Loads the library at path and makes it the process's default."""
    global _default
    lib = Library(path)
    with _default_lock:
        _default = lib
    return lib
