"""Every op on arrays: CUDA torch.Tensors or __cuda_array_interface__ objects.

With torch tensors, the op runs on the tensors' GPU, on torch's current
stream unless `stream` names another, with the runtime of that GPU
(foxjit.ops.runtime_for), made in that device's primary context; when
another context is current on the calling thread, that one is made current
for the call and the caller's made current again after it. Outputs and
workspaces come from torch's caching allocator when not given (on another
`stream`, the op waits for their allocation and they are recorded as used
by it); given ones must be on the inputs' GPU. A runtime passed as rt= is
used in the calling thread's current context, as it is. With other arrays,
outputs and workspaces must be passed (out=..., workspace=...), the runtime
is foxjit.ops.default_runtime() (made on the context current at first use)
and the stream is the `stream` argument, else the producer's stream from
__cuda_array_interface__, else the legacy default stream. Shapes and dtypes
are checked here, everything else by the library (foxjit.Error with its
message).

The wrappers are meant to cost little more than the library call itself
(python3 -m foxjit.overhead): a call like a recent one of the same op
launches what that one did with the tensors' current addresses, without
the checks (the fast path at the end of this file, foxjit/_fastcall.py);
otherwise a torch tensor is checked with a handful of attribute reads,
workspace sizes are asked once per shape, and the calling
thread's context is looked at only when the library says it is not the
runtime's (FOXJIT_ERROR_NO_CONTEXT / _WRONG_CONTEXT come from its first check,
before anything is launched)."""

import ctypes
import sys
import threading

from . import _fastcall
from . import _lib
from . import arrays as _arrays
from .arrays import arg, _torch
from .runtime import (AdamwArgs, AttnPoolArgs, CfcArgs, CfcSeqArgs, HeadsArgs, HeadsSeqArgs,
                      Runtime, VsnArgs, VsnSeqArgs, _precision, _ties)

HEADS_PARAMS = ("w1", "b1", "w2", "b2", "w_gate", "b_gate", "w_main", "b_main", "w_skip",
                "b_skip")

_byref = ctypes.byref
_TD = _arrays._TORCH_DTYPES     # the same dict: filled and cleared in place
_CONTEXT_STATUSES = (_lib.Status.NO_CONTEXT, _lib.Status.WRONG_CONTEXT)

# ---- runtimes and contexts ----------------------------------------------------

_lock = threading.Lock()
_runtimes = {}          # device index -> (Runtime, CUcontext as int)
_default_rt = None
_driver = None
_precision_name = "float32"   # set_precision's, for every runtime made here


def _cuda():
    global _driver
    if _driver is None:
        d = ctypes.CDLL("libcuda.so.1")
        # The versioned names cuda.h maps these to (the unversioned push and
        # pop are the CUDA 3 ones).
        d.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        d.cuCtxPushCurrent_v2.argtypes = [ctypes.c_void_p]
        d.cuCtxPopCurrent_v2.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        d.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        d.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
        d.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _driver = d
    return _driver


def _cu_check(what, rc):
    """Raises foxjit.Error (FOXJIT_ERROR_CUDA) naming the driver call and
    its error when rc is not CUDA_SUCCESS."""
    if rc == 0:
        return
    name = ctypes.c_char_p()
    try:
        known = _cuda().cuGetErrorName(rc, ctypes.byref(name)) == 0 and name.value
    except Exception:
        known = False
    err = name.value.decode() if known else "CUDA error %d" % rc
    raise _lib.Error(_lib.Status.CUDA, "foxjit.ops: %s failed: %s" % (what, err))


def _current_ctx():
    c = ctypes.c_void_p()
    _cu_check("cuCtxGetCurrent", _cuda().cuCtxGetCurrent(ctypes.byref(c)))
    return c.value or 0


def _primary_ctx(device):
    """The primary context of a device (the one torch uses), retained for
    good: the runtime made in it lives as long as the process."""
    dev, c = ctypes.c_int(), ctypes.c_void_p()
    _cu_check("cuDeviceGet(%d)" % device, _cuda().cuDeviceGet(ctypes.byref(dev), device))
    _cu_check("cuDevicePrimaryCtxRetain(device %d)" % device,
              _cuda().cuDevicePrimaryCtxRetain(ctypes.byref(c), dev.value))
    if not c.value:
        raise _lib.Error(_lib.Status.CUDA, "foxjit.ops: cuDevicePrimaryCtxRetain(device %d) "
                         "returned no context" % device)
    return c.value


def _in_context(ctx, fn, *args):
    """fn(*args) with ctx current on the calling thread, and the context
    that was current before (or none) current again afterwards, also when fn
    raises: an op on another GPU's tensors must not move the caller's (and
    torch's) current device. ctx None or already current: fn(*args) alone."""
    if not ctx or _current_ctx() == ctx:
        return fn(*args)
    _cu_check("cuCtxPushCurrent (of the tensors' GPU's primary context)",
              _cuda().cuCtxPushCurrent_v2(ctx))
    try:
        r = fn(*args)
    except BaseException:
        _cuda().cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))  # fn's error wins
        raise
    _cu_check("cuCtxPopCurrent", _cuda().cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p())))
    return r


def _launch_failed(st, fn, rtp, args, s, ctx, rt):
    """A launch's failure status st (fn(rtp, *args, s) returned it). When
    another context (or none) is current on this thread, the library
    refused before launching anything: again, with the runtime's context
    ctx current and the caller's back afterwards. Else foxjit.Error with
    the runtime rt's message."""
    if st in _CONTEXT_STATUSES and ctx:
        st = _in_context(ctx, fn, rtp, *args, s)
        if not st:
            return
    raise _lib.Error(st, rt.lib.last_error())


def _device_index(device):
    torch = _torch()
    if device is None:
        return torch.cuda.current_device()
    if not isinstance(device, int):
        device = torch.device(device).index
        if device is None:
            device = torch.cuda.current_device()
    return device


def _runtime_entry(device):
    """(Runtime, its context) of a torch device index, made on first use."""
    entry = _runtimes.get(device)
    if entry is None:
        with _lock:
            entry = _runtimes.get(device)
            if entry is None:
                torch = _torch()
                torch.cuda.init()
                with torch.cuda.device(device):
                    torch.empty(1, device="cuda")       # torch's primary context, active
                    torch.cuda.synchronize()
                ctx = _primary_ctx(device)
                entry = (_in_context(ctx, Runtime), ctx)
                entry[0].set_precision(_precision_name)
                _runtimes[device] = entry
    return entry


def runtime_for(device=None):
    """The runtime of a torch CUDA device (index, torch.device or None for
    the current one), made on first use in that device's primary context
    (the one torch uses). The ops make that context current around each
    call when another one is current, and restore the caller's afterwards;
    this function leaves the calling thread's context as it is. To call the
    Runtime's methods yourself, have that device current
    (torch.cuda.device(i), or torch work on it on this thread)."""
    return _runtime_entry(_device_index(device))[0]


def default_runtime():
    """The runtime for __cuda_array_interface__ arrays: made on the context
    current at first use (CuPy, Numba and torch all use the primary one)."""
    global _default_rt
    with _lock:
        if _default_rt is None:
            rt = Runtime()
            rt.set_precision(_precision_name)
            _default_rt = rt
        return _default_rt


def set_precision(precision):
    """The precision of the heads' and the CfC's matrix products on every
    runtime foxjit.ops uses, those made already and those made later (the
    runtime of each GPU, runtime_for, and default_runtime): "float32" (the
    default: 3xTF32, float32 accuracy) or "tf32" (one TF32 product a step,
    as torch.backends.cuda.matmul.allow_tf32 = True). foxjit.torch and
    foxjit.modules run on these runtimes. A runtime passed as rt= keeps its
    own (Runtime.set_precision). Capture CUDA graphs after setting it (a
    graph keeps the kernels it captured); "tf32" needs a library of ABI 2.6
    (foxjit.AbiError, and nothing changed, on an older one)."""
    global _precision_name
    _precision(precision)                    # ValueError before anything changes
    with _lock:
        made = [rt for rt, _ctx in _runtimes.values()]
        if _default_rt is not None:
            made.append(_default_rt)
        if precision != "float32":
            for rt in made:                  # every runtime can, or none changes
                rt.lib.need("set_precision", 6)
        for rt in made:
            rt.set_precision(precision)
        _precision_name = precision


def get_precision():
    """The precision set_precision gave foxjit.ops' runtimes ("float32"
    until then)."""
    return _precision_name


# ---- torch, looked up once per module object ------------------------------------
#
# The package never imports torch: it serves torch tensors when the program
# has imported it. What it needs of torch (the Tensor class, the dtypes, the
# current-stream query) is looked up again only when sys.modules["torch"] is
# another object than last time (the tests put stand-ins there).

_tm = [None, None, None]        # torch module, torch.Tensor, raw current-stream query


def _tensor_class():
    t = sys.modules.get("torch")
    if t is not _tm[0]:
        _refresh_torch(t)
    return _tm[1]


def _refresh_torch(t):
    _arrays._TORCH_DTYPES.clear()
    _torch()
    if t is not None:
        _torch_u1()
    raw = getattr(getattr(t, "_C", None), "_cuda_getCurrentRawStream", None)
    _tm[:] = [t, getattr(t, "Tensor", None) if t is not None else None, raw]


def _current_stream(device):
    """torch's current stream on a device, as a CUstream handle (an int)."""
    raw = _tm[2]
    if raw is not None:
        return raw(device)
    return _torch().cuda.current_stream(device).cuda_stream


def _torch_u1():
    t = _torch()
    if t is not None and "u1" not in _arrays._TORCH_DTYPES:
        _arrays._TORCH_DTYPES["u1"] = (t.uint8, t.int8)


# Workspaces given as byte arrays: accept typestr |u1 too.
_arrays._CAI_TYPES["u1"] = ("|u1", "<u1", "|i1")
_arrays._NAMES["u1"] = "uint8"

class _Call:
    """One op call: its inputs' device, then its runtime, context and stream,
    and what it allocated. Checked arrays are handed on as device addresses
    (ints); `shape` is the shape of the array checked last."""
    __slots__ = ("what", "device", "torch", "cai_stream", "shape", "rt", "ctx", "stream",
                 "made", "rec")

    def __init__(self, what):
        self.what = what
        self.device = None      # the inputs' GPU, None until a torch tensor says
        self.torch = False      # a torch tensor among the inputs
        self.cai_stream = None  # the first producer stream of an interface array
        self.shape = None
        self.made = None        # the tensors allocated here
        self.rec = None         # a _Recording: prepare() is asking, launch nothing

    # -- arrays ------------------------------------------------------------------
    def inp(self, obj, name, kind="f4", shape=None, output=False, writable=False):
        """The device address of a checked array: an input (writable: one
        the op writes in place), or with output a caller-given output
        (writable, on the inputs' GPU; it does not decide their GPU)."""
        # A tensor of exactly the class looked up last is torch's (a torch
        # module swapped in since has another Tensor class): no lookup.
        T = _tm[1]
        if type(obj) is not T or T is None:
            T = _tm[1] if sys.modules.get("torch") is _tm[0] else _tensor_class()
        if T is not None and isinstance(obj, T):
            # The whole check of a torch tensor: dtype, contiguity, device,
            # shape and alignment, in as few attribute reads as there are.
            if obj.dtype in _TD[kind] and obj.is_contiguous():
                d = obj.get_device()
                s = obj.shape
                if d >= 0 and (shape is None or s == shape):
                    p = obj.data_ptr()
                    if not p & 3:
                        dev = self.device
                        if d != dev:
                            if dev is None:
                                if not output:      # the inputs' GPU
                                    self.device = d
                            else:
                                self._other_device(d, name, output)
                        if not output:
                            self.torch = True
                        self.shape = s
                        return p
            arg(obj, name, kind, shape, writable=output or writable)  # raises: what is wrong
            raise AssertionError("foxjit.ops: %s passed the checks it failed" % name)
        a = arg(obj, name, kind, shape, writable=output or writable)
        if a.device is not None and a.device != self.device:
            self._other_device(a.device, name, output)
        if a.stream and self.cai_stream is None and not output:
            self.cai_stream = a.stream
        self.shape = a.shape
        return a.ptr

    def opt(self, obj, name, kind="f4", shape=None):
        """inp() of an optional input: 0 for None."""
        return 0 if obj is None else self.inp(obj, name, kind, shape)

    def _other_device(self, d, name, output):
        """An array on GPU d where the inputs so far were on self.device."""
        if self.device is None:
            # The first known device: the inputs'. An output tells nothing
            # of the inputs' (interface arrays: unknown, unchecked).
            if not output:
                self.device = d
            return
        if output:
            raise ValueError("%s: the tensor is on cuda:%d, the op's inputs on cuda:%d; pass "
                             "one on cuda:%d" % (name, d, self.device, self.device))
        raise ValueError("%s: the tensors are on different GPUs (%s)"
                         % (self.what, ", ".join("cuda:%d" % i
                                                 for i in sorted((d, self.device)))))

    def bind(self, rt, stream):
        """After the inputs: the runtime, its context and the stream."""
        if stream is not None and type(stream) is _Recording:
            self.rec = stream
            stream = stream.stream
        if self.torch:
            if rt is None:
                entry = _runtimes.get(self.device) or _runtime_entry(self.device)
                self.rt, self.ctx = entry
            else:
                self.rt, self.ctx = rt, None    # the caller's runtime, in the caller's context
            if stream is None:
                raw = _tm[2]
                stream = raw(self.device) if raw is not None else _current_stream(self.device)
            self.stream = stream
        else:
            self.rt = rt if rt is not None else default_runtime()
            self.ctx = None
            self.stream = stream if stream is not None else (self.cai_stream or 0)
        return self

    def out(self, given, name, shape, kind="f4", zero=False):
        """A checked output: (the given array, its address), or a new torch
        tensor of the inputs' GPU and its address."""
        if given is not None:
            return given, self.inp(given, name, kind, shape, output=True)
        if not self.torch:
            raise TypeError("%s: pass it (%s=...) when the inputs are not torch tensors"
                            % (name, name))
        torch = _tm[0]
        dtype = {"f4": torch.float32, "i4": torch.int32,
                 "u4": getattr(torch, "uint32", torch.int32)}[kind]
        t = (torch.zeros if zero else torch.empty)(shape, dtype=dtype, device=self.device)
        if self.made is None:
            self.made = [t]
        else:
            self.made.append(t)
        return t, t.data_ptr()

    def workspace(self, given, nbytes, zero=False):
        """(what to keep alive, address, bytes) of the op's workspace (one
        made here is zeroed with zero)."""
        if given is not None:
            kind = _ws_kind(given)
            p = self.inp(given, "workspace", kind, output=True)
            have = _numel(self.shape)
            return given, p, have * 4 if kind != "u1" else have
        if not self.torch:
            raise TypeError("workspace: pass a device buffer of %d bytes (workspace=...) when "
                            "the inputs are not torch tensors" % nbytes)
        torch = _tm[0]
        t = (torch.zeros if zero else torch.empty)(max(nbytes, 1), dtype=torch.uint8,
                                                   device=self.device)
        if self.made is None:
            self.made = [t]
        else:
            self.made.append(t)
        return t, t.data_ptr(), nbytes

    def size(self, query, *dims):
        """A size query of the runtime (a Runtime method's name), asked once
        per runtime and dims (the runtime keeps the answers)."""
        sizes = self.rt._sizes
        key = (query,) + dims
        n = sizes.get(key)
        if n is None:
            n = getattr(self.rt, query)(*dims)
            if len(sizes) >= 1024:      # a program sweeping shapes: start over
                sizes.clear()
            sizes[key] = n
        return n

    # -- the call --------------------------------------------------------------------
    def launch(self, entry, *args):
        """The library's `entry` with the runtime and args, on the op's
        context, after the work that made its new tensors."""
        if self.made is not None:
            self._order_allocations()
        rt = self.rt
        fn = getattr(rt._fns, entry, None)
        if fn is None:
            raise _lib.AbiError("%s: foxjit_%s is not in this library's function table (ABI "
                                "%d.%d): install a newer fox-jit" % (rt.lib.path, entry,
                                                                     rt.lib.abi[1],
                                                                     rt.lib.abi[2]))
        if self.rec is not None:
            self.rec.add(self, fn, args)
            return
        st = fn(rt._rt, *args)
        if st:      # the stream is the last argument of every entry
            _launch_failed(st, fn, rt._rt, args[:-1], args[-1], self.ctx, rt)

    def _order_allocations(self):
        torch = _tm[0]
        cur = torch.cuda.current_stream(self.device)
        if self.stream != cur.cuda_stream:
            # The outputs and workspace made here come from the caching
            # allocator on torch's current stream, and torch.zeros fills
            # them there. The op runs on another stream: it waits for
            # that work (the fill, and the block's last use before it was
            # freed). And since the allocator reuses a freed block for
            # the next allocation on its own stream, each is recorded as
            # in use by the op's stream: when the caller drops it (the
            # workspace as soon as this returns), the block waits for the
            # op before it is handed out again.
            op = torch.cuda.ExternalStream(self.stream, device=self.device)
            op.wait_stream(cur)
            for t in self.made:
                t.record_stream(op)


class _Recording:
    """What prepare() passes as an op's `stream`: the op checks its arrays,
    allocates what it must and, instead of launching, hands each library
    call here (launch)."""
    __slots__ = ("stream", "launches", "call", "made", "query")

    def __init__(self, stream):
        self.stream = stream    # the caller's stream, or None for torch's current one
        self.launches = []
        self.call = None
        self.made = False       # an output or workspace was allocated for the call
        self.query = None       # set by _recorder: how a replay finds its stream

    def add(self, c, fn, args):
        # The stream is the last argument of every entry: replaced on replay.
        self.launches.append((fn, c.rt._rt, args[:-1]))
        self.call = c
        if c.made is not None:
            self.made = True


class Prepared:
    """An op call checked once, launched again on each call: see prepare()."""
    __slots__ = ("what", "result", "_launches", "_stream", "_query", "_device", "_ctx",
                 "_keep")

    def __call__(self):
        """Launches the op again on the same arrays; returns what the op
        returned when prepared (the same output arrays)."""
        s = self._stream if self._query is None else self._query(self._device)
        for fn, rtp, args in self._launches:
            st = fn(rtp, *args, s)
            if st:
                _launch_failed(st, fn, rtp, args, s, self._ctx, self._keep[0])
        return self.result

    def __repr__(self):
        return "<foxjit.ops.Prepared %s: %d launch%s>" % (
            self.what, len(self._launches), "" if len(self._launches) == 1 else "es")


def prepare(op, *args, **kwargs):
    """op (a function of this module) on these arrays, checked now and
    launched on each call of the result: p = prepare(ops.cfc_forward, x,
    h, dt, *params); then p() runs it and returns what op returns (the same
    output arrays each time, allocated here when not given, and zeroed
    here once where the op zeroes new ones: an op that adds into its
    output, accumulate=True, adds onto the last call's result). For loops that
    run an op on the same buffers, as a CUDA graph does: a call costs about
    what the raw ctypes call does, the plain wrapper's checks of every
    array are done once. The arrays are kept alive; their contents may
    change between calls, their addresses, shapes and dtypes must not (do
    not resize or reassign them). Each call runs on the stream given to
    prepare (stream=), else on torch's current stream of the arrays' GPU
    at that call (interface arrays: their producer's stream, else the
    legacy default stream, as when prepared). Nothing is launched by
    prepare itself; errors the library finds at launch are raised by the
    call that launches."""
    rec = _Recording(kwargs.pop("stream", None))
    result = getattr(op, "__wrapped__", op)(*args, stream=rec, **kwargs)
    c = rec.call
    p = Prepared()
    p.what = getattr(op, "__name__", str(op))
    p.result = result
    p._launches = tuple(rec.launches)
    p._device = None if c is None else c.device
    p._ctx = None if c is None else c.ctx
    p._stream = None if c is None else c.stream
    p._query = None
    if c is not None and c.torch and rec.stream is None:
        p._query = _tm[2] if _tm[2] is not None else _current_stream
    # The runtime (for its errors), the arrays and what was allocated.
    p._keep = (None if c is None else c.rt, args, kwargs, None if c is None else c.made)
    return p


def _ws_kind(obj):
    T = _tensor_class()
    if T is not None and isinstance(obj, T):
        # By dtype: a tensor's __cuda_array_interface__ is built on each
        # access (and refused for one that requires grad).
        _torch_u1()
        return "u1" if obj.dtype in _arrays._TORCH_DTYPES["u1"] else "f4"
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None and cai.get("typestr") in ("|u1", "<u1", "|i1"):
        return "u1"
    return "f4"


def _dims(c, name, n):
    """The shape of the array checked last, which must have n dims."""
    s = c.shape
    if len(s) != n:
        raise ValueError("%s: expected %d dims, got shape %s" % (name, n, tuple(s)))
    return s


def _dims2(c, name):
    s = c.shape
    if len(s) != 2:
        raise ValueError("%s: expected 2 dims [rows, cols], got shape %s" % (name, tuple(s)))
    return s


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n

# ---- column sums ------------------------------------------------------------------

def column_sum(x, out=None, accumulate=False, rt=None, stream=None):
    """out[j] (+)= sum_b x[b, j]; x [rows, cols] float32. Returns out."""
    c = _Call("column_sum")
    xp = c.inp(x, "x")
    if len(c.shape) != 2:
        _dims2(c, "x")      # raises: what is wrong
    rows, cols = c.shape
    c.bind(rt, stream)
    out, op = c.out(out, "out", (cols,), zero=accumulate)
    c.launch("column_sum", xp, rows, cols, op, 1 if accumulate else 0, c.stream)
    return out


def column_sum_split(x, out=None, accumulate=False, workspace=None, rt=None, stream=None):
    """out[j] (+)= sum_b x[b, j] by the split form (foxjit_column_sum_split,
    ABI 2.7: foxjit.AbiError on an older library): the rows spread over
    the whole GPU without clusters, one pairwise tree a column, the same
    bits on every GPU and at every alignment (not column_sum's bits). x
    [rows, cols] float32. Returns out.

    The workspace must hold zeros before its first use, and each call leaves
    it so: pass one (workspace=, column_sum_workspace_size(rows, cols) bytes
    or more, e.g. torch.zeros(n, dtype=torch.uint8, device=x.device)) made
    once for the calls of a stream; without one, one is allocated and zeroed
    for the call."""
    c = _Call("column_sum_split")
    xp = c.inp(x, "x")
    rows, cols = _dims2(c, "x")
    c.bind(rt, stream)
    need = c.size("column_sum_workspace_size", rows, cols)   # AbiError before ABI 2.7
    out, op = c.out(out, "out", (cols,), zero=accumulate)
    _keep, wsp, wsb = c.workspace(workspace, need, zero=True)
    c.launch("column_sum_split", xp, rows, cols, op, 1 if accumulate else 0, wsp, wsb, c.stream)
    return out


def bias_grad_reduce(dy, db, rt=None, stream=None):
    """db[out_dim] += sum over the batch of dy[batch, out_dim]. Returns db."""
    c = _Call("bias_grad_reduce")
    yp = c.inp(dy, "dy")
    batch, out_dim = _dims2(c, "dy")
    dp = c.inp(db, "db", shape=(out_dim,), writable=True)
    c.bind(rt, stream).launch("bias_grad_reduce", yp, batch, out_dim, dp, c.stream)
    return db


def curiosity_bias_grad_reduce(dy, out=None, rt=None, stream=None):
    """out[out_dim] = sum over rows of dy[rows, out_dim]. Returns out."""
    c = _Call("curiosity_bias_grad_reduce")
    yp = c.inp(dy, "dy")
    rows, out_dim = _dims2(c, "dy")
    c.bind(rt, stream)
    out, op = c.out(out, "out", (out_dim,))
    c.launch("curiosity_bias_grad_reduce", yp, rows, out_dim, op, c.stream)
    return out


def reduce_axis0(x, out=None, rt=None, stream=None):
    """out[...] = sum over the first dim of x[n_batch, ...]. Returns out."""
    c = _Call("reduce_axis0")
    xp = c.inp(x, "x")
    shape = tuple(c.shape)
    if len(shape) < 2:
        raise ValueError("x: expected at least 2 dims [n_batch, ...], got %s" % (shape,))
    tail = shape[1:]
    n_tail = _numel(tail)
    c.bind(rt, stream)
    if out is None:
        out, op = c.out(None, "out", tail)
    else:
        op = c.inp(out, "out", output=True)
        if _numel(c.shape) != n_tail:
            raise ValueError("out: %d elements, expected %d" % (_numel(c.shape), n_tail))
    c.launch("reduce_axis0", xp, shape[0], n_tail, op, c.stream)
    return out


# ---- sort and rank normalization ------------------------------------------------------

def radix_sort_pairs(keys, values, begin_bit=0, end_bit=32, keys_out=None, values_out=None,
                     workspace=None, rt=None, stream=None):
    """Stable ascending sort of uint32 keys (int32 tensors are read as their
    bits) with uint32 values. Returns (keys_out, values_out)."""
    c = _Call("radix_sort_pairs")
    kp = c.inp(keys, "keys", "u4")
    ks = tuple(c.shape)
    vp = c.inp(values, "values", "u4")
    if len(ks) != 1 or tuple(c.shape) != ks:
        raise ValueError("keys and values: expected two 1-D arrays of one length, got %s and %s"
                         % (ks, tuple(c.shape)))
    n = ks[0]
    c.bind(rt, stream)
    keys_out, kop = c.out(keys_out, "keys_out", (n,), "u4")
    values_out, vop = c.out(values_out, "values_out", (n,), "u4")
    need = c.size("radix_sort_pairs_workspace_size", n, begin_bit, end_bit)
    _keep, wp, wb = c.workspace(workspace, need)
    c.launch("radix_sort_pairs", kp, vp, kop, vop, n, begin_bit, end_bit, wp, wb, c.stream)
    return keys_out, values_out


def rank_normalize(rewards, std_ema, mean_ema, ties="max", out=None, workspace=None, rt=None,
                   stream=None):
    """out[i] = trade_i ? sign(s_i) * rank_i / n : 0 (kernels.md 2); out may
    be rewards. Returns out."""
    t = _ties(ties)
    c = _Call("rank_normalize")
    rp = c.inp(rewards, "rewards")
    if len(c.shape) != 1:
        raise ValueError("rewards: expected 1 dim, got shape %s" % (tuple(c.shape),))
    n = c.shape[0]
    c.bind(rt, stream)
    out, op = c.out(out, "out", (n,))
    need = c.size("rank_normalize_workspace_size", n, t)
    _keep, wp, wb = c.workspace(workspace, need)
    c.launch("rank_normalize", rp, n, float(std_ema), float(mean_ema), t, op, wp, wb, c.stream)
    return out


# ---- perception ops, one step ---------------------------------------------------------

def _cfc_inputs(c, x, h, dt, w_in, w_rec, bias, tau):
    xp = c.inp(x, "x")
    batch, n_in = _dims(c, "x", 2)
    wp = c.inp(w_in, "w_in")
    n_hid = _dims(c, "w_in", 2)[0]
    if c.shape[1] != n_in:
        raise ValueError("w_in: shape %s, expected (n_hid, %d)" % (tuple(c.shape), n_in))
    return (batch, n_in, n_hid, xp, c.opt(h, "h", shape=(batch, n_hid)),
            c.inp(dt, "dt", shape=(batch,)), wp, c.inp(w_rec, "w_rec", shape=(n_hid, n_hid)),
            c.inp(bias, "bias", shape=(n_hid,)), c.inp(tau, "tau", shape=(n_hid,)))


def cfc_forward(x, h, dt, w_in, w_rec, bias, tau, h_out=None, u=None, rt=None, stream=None):
    """One CfC step: returns (h_out [B, n_hid], u [B, n_hid]). h may be None
    (zeros)."""
    c = _Call("cfc_forward")
    batch, n_in, n_hid, xp, hp, dp, wp, rp, bp, tp = _cfc_inputs(c, x, h, dt, w_in, w_rec,
                                                                 bias, tau)
    c.bind(rt, stream)
    h_out, hop = c.out(h_out, "h_out", (batch, n_hid))
    u, up = c.out(u, "u", (batch, n_hid))
    a = CfcArgs(batch, n_in, n_hid, wp, rp, bp, tp, xp, 0, hp, 0, dp, 0, up, 0, hop)
    c.launch("cfc_forward", _byref(a), c.stream)
    return h_out, u


def cfc_backward(x, h, dt, w_in, w_rec, bias, tau, u, dh_out, dh=None, dx=None, dw_in=None,
                 dw_rec=None, dbias=None, dtau=None, rt=None, stream=None):
    """One CfC step backward: returns dict dh, dx [B, ...] (overwritten) and
    the per-batch scratch dw_in [B, n_hid, n_in], dw_rec [B, n_hid, n_hid],
    dbias, dtau [B, n_hid] (added to; new ones are zeros)."""
    c = _Call("cfc_backward")
    batch, n_in, n_hid, xp, hp, dp, wp, rp, bp, tp = _cfc_inputs(c, x, h, dt, w_in, w_rec,
                                                                 bias, tau)
    up = c.inp(u, "u", shape=(batch, n_hid))
    gp = c.inp(dh_out, "dh_out", shape=(batch, n_hid))
    c.bind(rt, stream)
    r = {}
    r["dh"], dhp = c.out(dh, "dh", (batch, n_hid))
    r["dx"], dxp = c.out(dx, "dx", (batch, n_in))
    r["dw_in"], g1 = c.out(dw_in, "dw_in", (batch, n_hid, n_in), zero=True)
    r["dw_rec"], g2 = c.out(dw_rec, "dw_rec", (batch, n_hid, n_hid), zero=True)
    r["dbias"], g3 = c.out(dbias, "dbias", (batch, n_hid), zero=True)
    r["dtau"], g4 = c.out(dtau, "dtau", (batch, n_hid), zero=True)
    a = CfcArgs(batch=batch, n_in=n_in, n_hid=n_hid, w_in=wp, w_rec=rp, bias=bp, tau=tp, x=xp,
                h=hp, dt=dp, u=up, dh_out=gp, dh=dhp, dx=dxp, dw_in=g1, dw_rec=g2, dbias=g3,
                dtau=g4)
    c.launch("cfc_backward", _byref(a), c.stream)
    return r


def _heads_params(c, params):
    """params: a dict or a sequence in HEADS_PARAMS order. Returns their
    addresses by name, their shapes by name and (d, e, h)."""
    if not isinstance(params, dict):
        params = dict(zip(HEADS_PARAMS, params))
    missing = [n for n in HEADS_PARAMS if n not in params]
    if missing:
        raise ValueError("heads parameters: missing %s" % ", ".join(missing))
    w1 = c.inp(params["w1"], "w1")
    h, e, d = _dims(c, "w1", 3)
    shapes = {"w1": (h, e, d), "b1": (h, e), "w2": (h, e, e), "b2": (h, e), "w_gate": (h, e),
              "b_gate": (h,), "w_main": (h, e), "b_main": (h,), "w_skip": (h, d),
              "b_skip": (h,)}
    ptrs = {"w1": w1}
    for n in HEADS_PARAMS[1:]:
        ptrs[n] = c.inp(params[n], n, shape=shapes[n])
    return ptrs, shapes, (d, e, h)


def _heads_x(c, x, d):
    """x [batch, D] of the one-step heads, D the parameters' (w1 [H, E, D]):
    the kernels read D floats of every row."""
    xp = c.inp(x, "x")
    batch, dd = _dims(c, "x", 2)
    if dd != d:
        raise ValueError("x: shape %s, expected (batch, %d)" % (tuple(c.shape), d))
    return xp, batch


def heads_forward(x, params, logits=None, rt=None, stream=None):
    """GRN heads on x [B, D] (one step): returns logits [B, H]."""
    c = _Call("heads_forward")
    pa, _shapes, (d, e, h) = _heads_params(c, params)
    xp, batch = _heads_x(c, x, d)
    c.bind(rt, stream)
    logits, lp = c.out(logits, "logits", (batch, h))
    a = HeadsArgs(batch=batch, d=d, e=e, h=h, x=xp, logits=lp, **pa)
    c.launch("heads_forward", _byref(a), c.stream)
    return logits


def heads_backward(x, params, dlogits, dx=None, scratch=None, rt=None, stream=None):
    """GRN heads backward (one step): returns dict dx [B, D] and the
    per-batch scratch d<param> [B, *param.shape] (added to; new ones zeros)."""
    c = _Call("heads_backward")
    pa, shapes, (d, e, h) = _heads_params(c, params)
    xp, batch = _heads_x(c, x, d)
    gp = c.inp(dlogits, "dlogits", shape=(batch, h))
    c.bind(rt, stream)
    r = {}
    r["dx"], dxp = c.out(dx, "dx", (batch, d))
    scratch = scratch or {}
    sa = {}
    for n in HEADS_PARAMS:
        r["d" + n], sa["d" + n] = c.out(scratch.get("d" + n), "d" + n, (batch,) + shapes[n],
                                        zero=True)
    a = HeadsArgs(batch=batch, d=d, e=e, h=h, x=xp, dlogits=gp, dx=dxp, **pa, **sa)
    c.launch("heads_backward", _byref(a), c.stream)
    return r


def _vsn_inputs(c, x, w, bias):
    xp = c.inp(x, "x")
    batch, t, f = _dims(c, "x", 3)
    return (xp, c.inp(w, "w", shape=(f, f)), c.inp(bias, "bias", shape=(f,)), batch, t, f)


def vsn_forward(x, w, bias, y=None, rt=None, stream=None):
    """Variable selection on x [B, T, F]: returns y [B, T, F]."""
    c = _Call("vsn_forward")
    xp, wp, bp, batch, t, f = _vsn_inputs(c, x, w, bias)
    c.bind(rt, stream)
    y, yp = c.out(y, "y", (batch, t, f))
    a = VsnArgs(batch=batch, t=t, f=f, w=wp, bias=bp, x=xp, y=yp)
    c.launch("vsn_forward", _byref(a), c.stream)
    return y


def vsn_backward(x, w, bias, dy, dx=None, dw=None, dbias=None, rt=None, stream=None):
    """Variable selection backward: dict dx [B, T, F] and the per-batch
    scratch dw [B, F, F], dbias [B, F] (added to; new ones zeros)."""
    c = _Call("vsn_backward")
    xp, wp, bp, batch, t, f = _vsn_inputs(c, x, w, bias)
    gp = c.inp(dy, "dy", shape=(batch, t, f))
    c.bind(rt, stream)
    r = {}
    r["dx"], dxp = c.out(dx, "dx", (batch, t, f))
    r["dw"], dwp = c.out(dw, "dw", (batch, f, f), zero=True)
    r["dbias"], dbp = c.out(dbias, "dbias", (batch, f), zero=True)
    a = VsnArgs(batch=batch, t=t, f=f, w=wp, bias=bp, x=xp, dy=gp, dx=dxp, dw=dwp, dbias=dbp)
    c.launch("vsn_backward", _byref(a), c.stream)
    return r


def attn_pool_forward(hs, q, pooled=None, rt=None, stream=None):
    """Attention pooling of hs [B, T, D] with query q [D]: returns pooled [B, D]."""
    c = _Call("attn_pool_forward")
    hp = c.inp(hs, "hs")
    batch, t, d = _dims(c, "hs", 3)
    qp = c.inp(q, "q", shape=(d,))
    c.bind(rt, stream)
    pooled, pp = c.out(pooled, "pooled", (batch, d))
    a = AttnPoolArgs(batch=batch, t=t, d=d, q=qp, hs=hp, pooled=pp)
    c.launch("attn_pool_forward", _byref(a), c.stream)
    return pooled


def attn_pool_backward(hs, q, dpooled, dhs=None, dq=None, rt=None, stream=None):
    """Attention pooling backward: dict dhs [B, T, D] and the per-batch
    scratch dq [B, D] (added to; a new one is zeros)."""
    c = _Call("attn_pool_backward")
    hp = c.inp(hs, "hs")
    batch, t, d = _dims(c, "hs", 3)
    qp = c.inp(q, "q", shape=(d,))
    gp = c.inp(dpooled, "dpooled", shape=(batch, d))
    c.bind(rt, stream)
    r = {}
    r["dhs"], dhp = c.out(dhs, "dhs", (batch, t, d))
    r["dq"], dqp = c.out(dq, "dq", (batch, d), zero=True)
    a = AttnPoolArgs(batch=batch, t=t, d=d, q=qp, hs=hp, dpooled=gp, dhs=dhp, dq=dqp)
    c.launch("attn_pool_backward", _byref(a), c.stream)
    return r


# ---- whole-sequence ops ------------------------------------------------------------------

def _cfc_seq_inputs(c, x, dt, w_in, w_rec, bias, tau, h_init):
    xp = c.inp(x, "x")
    batch, k, n_in = _dims(c, "x", 3)
    wp = c.inp(w_in, "w_in")
    n_hid = _dims(c, "w_in", 2)[0]
    if c.shape[1] != n_in:
        raise ValueError("w_in: shape %s, expected (n_hid, %d)" % (tuple(c.shape), n_in))
    hi = c.opt(h_init, "h_init", shape=(batch, n_hid))
    return (xp, c.inp(dt, "dt", shape=(batch, k)), wp,
            c.inp(w_rec, "w_rec", shape=(n_hid, n_hid)), c.inp(bias, "bias", shape=(n_hid,)),
            c.inp(tau, "tau", shape=(n_hid,)), hi, batch, k, n_in, n_hid)


def cfc_seq_forward(x, dt, w_in, w_rec, bias, tau, h_init=None, h=None, u=None, rt=None,
                    stream=None):
    """CfC over x [B, K, n_in], dt [B, K]: returns (h, u), each [B, K, n_hid]."""
    c = _Call("cfc_seq_forward")
    xp, dp, wp, rp, bp, tp, hi, batch, k, n_in, n_hid = _cfc_seq_inputs(
        c, x, dt, w_in, w_rec, bias, tau, h_init)
    c.bind(rt, stream)
    h, hp = c.out(h, "h", (batch, k, n_hid))
    u, up = c.out(u, "u", (batch, k, n_hid))
    a = CfcSeqArgs(batch=batch, k=k, n_in=n_in, n_hid=n_hid, w_in=wp, w_rec=rp, bias=bp,
                   tau=tp, x=xp, dt=dp, h_init=hi, h=hp, u=up)
    c.launch("cfc_seq_forward", _byref(a), c.stream)
    return h, u


def cfc_seq_backward(x, dt, w_in, w_rec, bias, tau, h, u, dh, h_init=None, dx=None,
                     dh_init=None, grads=None, grad_accumulate=False, workspace=None, rt=None,
                     stream=None):
    """CfC over a sequence, backward from dh [B, K, n_hid] (dL/dh_t from
    outside the recurrence): dict dx, dh_init (None without h_init) and the
    parameter gradients dw_in, dw_rec, dbias, dtau (overwritten, or added to
    with grad_accumulate)."""
    c = _Call("cfc_seq_backward")
    xp, dp, wp, rp, bp, tp, hi, batch, k, n_in, n_hid = _cfc_seq_inputs(
        c, x, dt, w_in, w_rec, bias, tau, h_init)
    sh = (batch, k, n_hid)
    hp, up, gp = c.inp(h, "h", shape=sh), c.inp(u, "u", shape=sh), c.inp(dh, "dh", shape=sh)
    c.bind(rt, stream)
    grads = grads or {}
    r = {}
    r["dx"], dxp = c.out(dx, "dx", (batch, k, n_in))
    dhip = 0
    r["dh_init"] = None
    if h_init is not None:
        r["dh_init"], dhip = c.out(dh_init, "dh_init", (batch, n_hid))
    g = {}
    for n, shape in (("dw_in", (n_hid, n_in)), ("dw_rec", (n_hid, n_hid)), ("dbias", (n_hid,)),
                     ("dtau", (n_hid,))):
        r[n], g[n] = c.out(grads.get(n), n, shape)
    need = c.size("cfc_seq_workspace_size", batch, k, n_in, n_hid)
    _keep, wsp, wsb = c.workspace(workspace, need)
    a = CfcSeqArgs(
        batch=batch, k=k, n_in=n_in, n_hid=n_hid, w_in=wp, w_rec=rp, bias=bp, tau=tp, x=xp,
        dt=dp, h_init=hi, h=hp, u=up, dh=gp, dx=dxp, dh_init=dhip, dw_in=g["dw_in"],
        dw_rec=g["dw_rec"], dbias=g["dbias"], dtau=g["dtau"],
        grad_accumulate=1 if grad_accumulate else 0, work=wsp, work_bytes=wsb)
    c.launch("cfc_seq_backward", _byref(a), c.stream)
    return r


def _heads_seq_x(c, x, d):
    xp = c.inp(x, "x")
    batch, steps, dd = _dims(c, "x", 3)
    if dd != d:
        raise ValueError("x: shape %s, expected (batch, steps, %d)" % (tuple(c.shape), d))
    return xp, batch, steps


def _row_blocks(n, max_batch, max_t):
    """Splits n rows into the [batch, steps] blocks the heads' sequence ops
    take (batch <= max_batch, steps <= max_t: the perception limits, 1024
    and 4096 in docs/dims.md): (first row, batch, steps) of each, in order,
    covering rows 0 to n - 1 once with no padding; full blocks of max_t
    steps, then one [1, n % max_t] block. Each row's outputs depend on that
    row alone, so any split gives them."""
    start = 0
    while n - start >= max_t:
        batch = min(max_batch, (n - start) // max_t)
        yield start, batch, max_t
        start += batch * max_t
    if start < n:
        yield start, 1, n - start


def heads_seq_forward(x, params, logits=None, rt=None, stream=None):
    """GRN heads on every row of x [B, S, D]: returns logits [B, S, H]."""
    c = _Call("heads_seq_forward")
    pa, _shapes, (d, e, h) = _heads_params(c, params)
    xp, batch, steps = _heads_seq_x(c, x, d)
    c.bind(rt, stream)
    logits, lp = c.out(logits, "logits", (batch, steps, h))
    a = HeadsSeqArgs(batch=batch, steps=steps, d=d, e=e, h=h, x=xp, logits=lp, **pa)
    c.launch("heads_seq_forward", _byref(a), c.stream)
    return logits


def heads_seq_backward(x, params, dlogits, dx=None, grads=None, grad_accumulate=False,
                       workspace=None, rt=None, stream=None):
    """GRN heads over [B, S] rows, backward: dict dx [B, S, D] and
    d<param> (parameter-shaped, summed over every row)."""
    c = _Call("heads_seq_backward")
    pa, shapes, (d, e, h) = _heads_params(c, params)
    xp, batch, steps = _heads_seq_x(c, x, d)
    gp = c.inp(dlogits, "dlogits", shape=(batch, steps, h))
    c.bind(rt, stream)
    grads = grads or {}
    r, g = {}, {}
    r["dx"], dxp = c.out(dx, "dx", (batch, steps, d))
    for n in HEADS_PARAMS:
        r["d" + n], g["d" + n] = c.out(grads.get("d" + n), "d" + n, shapes[n])
    need = c.size("heads_seq_workspace_size", batch, steps, d, e, h)
    _keep, wsp, wsb = c.workspace(workspace, need)
    a = HeadsSeqArgs(batch=batch, steps=steps, d=d, e=e, h=h, x=xp, dlogits=gp, dx=dxp,
                     grad_accumulate=1 if grad_accumulate else 0, work=wsp, work_bytes=wsb,
                     **pa, **g)
    c.launch("heads_seq_backward", _byref(a), c.stream)
    return r


def vsn_seq_backward(x, w, bias, dy, dx=None, dw=None, dbias=None, grad_accumulate=False,
                     workspace=None, rt=None, stream=None):
    """Variable selection backward over all rows: dict dx [B, T, F], dw
    [F, F], dbias [F] (summed over every row)."""
    c = _Call("vsn_seq_backward")
    xp, wp, bp, batch, t, f = _vsn_inputs(c, x, w, bias)
    gp = c.inp(dy, "dy", shape=(batch, t, f))
    c.bind(rt, stream)
    r = {}
    r["dx"], dxp = c.out(dx, "dx", (batch, t, f))
    r["dw"], dwp = c.out(dw, "dw", (f, f))
    r["dbias"], dbp = c.out(dbias, "dbias", (f,))
    need = c.size("vsn_seq_workspace_size", batch, t, f)
    _keep, wsp, wsb = c.workspace(workspace, need)
    a = VsnSeqArgs(batch=batch, t=t, f=f, w=wp, bias=bp, x=xp, dy=gp, dx=dxp, dw=dwp,
                   dbias=dbp, grad_accumulate=1 if grad_accumulate else 0, work=wsp,
                   work_bytes=wsb)
    c.launch("vsn_seq_backward", _byref(a), c.stream)
    return r


# ---- training step ------------------------------------------------------------------------

# foxjit_bce_with_logits_wide runs the one-block form up to this many values
# (ops/train/op.h, FJ_BCE_WIDE_ONE_BLOCK_MAX).
_BCE_WIDE_ONE_BLOCK = 8192


def bce_with_logits(z, y, loss=None, accumulate=False, dz=None, want_dz=True, wide=None,
                    workspace=None, rt=None, stream=None):
    """loss[0] (+)= mean BCE-with-logits(z, y); returns (loss [1], dz or None).

    wide=True runs the wide form (foxjit_bce_with_logits_wide, ABI 2.4:
    past 8192 values, blocks over the whole GPU write float64 partial sums
    to a workspace of at most 8 KiB, added in a fixed order; up to 8192 it
    is the one-block form; foxjit.AbiError on an older library), wide=False
    the one-block (or one-cluster) form. wide=None, the default, takes the
    wide form past 8192 values when the library has it and a workspace is
    at hand (torch inputs, or workspace=), else the one-block form. dz has
    the same bits either way; the loss may differ in its last bits."""
    c = _Call("bce_with_logits")
    zp = c.inp(z, "z")
    zs = tuple(c.shape)
    yp = c.inp(y, "y", shape=zs)
    n = _numel(zs)
    c.bind(rt, stream)
    if wide is None:
        # Up to _BCE_WIDE_ONE_BLOCK the wide form is the one-block form:
        # no workspace to allocate for it.
        wide = (n > _BCE_WIDE_ONE_BLOCK and c.rt.lib.has("bce_with_logits_wide")
                and (c.torch or workspace is not None))
    loss, lp = c.out(loss, "loss", (1,), zero=accumulate)
    dzp = 0
    if want_dz or dz is not None:
        dz, dzp = c.out(dz, "dz", zs)
    acc = 1 if accumulate else 0
    if wide:
        need = c.size("bce_with_logits_workspace_size", n)   # AbiError before ABI 2.4
        _keep, wsp, wsb = c.workspace(workspace, need)
        c.launch("bce_with_logits_wide", zp, yp, n, lp, acc, dzp, wsp, wsb, c.stream)
    else:
        c.launch("bce_with_logits", zp, yp, n, lp, acc, dzp, c.stream)
    return loss, dz


def adamw(param, grad, m, v, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
          rt=None, stream=None):
    """Fused AdamW over one float32 tensor in place; step is one int32 on
    the device (1-based)."""
    c = _Call("adamw")
    pp = c.inp(param, "param", writable=True)
    ps = tuple(c.shape)
    gp = c.inp(grad, "grad", shape=ps)
    mp = c.inp(m, "m", shape=ps, writable=True)
    vp = c.inp(v, "v", shape=ps, writable=True)
    sp = c.inp(step, "step", "i4")
    if _numel(c.shape) != 1:
        raise ValueError("step: one int32 expected, got shape %s" % (tuple(c.shape),))
    c.bind(rt, stream)
    a = AdamwArgs(n=_numel(ps), param=pp, grad=gp, m=mp, v=vp, step=sp, lr=lr,
                  beta1=betas[0], beta2=betas[1], eps=eps, weight_decay=weight_decay)
    c.launch("adamw", _byref(a), c.stream)
    return param


def increment_step(step, rt=None, stream=None):
    """step[0] += 1 on the device (one int32)."""
    c = _Call("increment_step")
    sp = c.inp(step, "step", "i4")
    if _numel(c.shape) != 1:
        raise ValueError("step: one int32 expected, got shape %s" % (tuple(c.shape),))
    c.bind(rt, stream).launch("increment_step", sp, c.stream)
    return step


# ---- generalized advantage estimation ----------------------------------------------------

def gae(rewards, values, dones, gamma=0.99, lambda_=0.95, advantages=None, returns=None,
        want_returns=True, rt=None, stream=None):
    """Generalized advantage estimation of time-major rollouts (kernels.md 9;
    ABI 2.5: foxjit.AbiError on an older library). rewards [T, N], dones
    [T, N] (nonzero where the episode ended at that step: no bootstrap
    across it) and values [T + 1, N] (its last row the value of the state
    after the last step), all float32. `lambda_` is GAE's lambda (Python
    reserves `lambda`); gamma and lambda_ in [0, 1]. Returns (advantages
    [T, N], returns [T, N] or None), both overwritten: returns =
    advantages + values[:T], written when want_returns or returns= is
    given. Neither output may overlap an input or the other."""
    c = _Call("gae")
    rp = c.inp(rewards, "rewards")
    s = c.shape
    if len(s) != 2:
        raise ValueError("rewards: expected 2 dims [steps, envs], got shape %s" % (tuple(s),))
    steps, envs = s
    vp = c.inp(values, "values", shape=(steps + 1, envs))
    dp = c.inp(dones, "dones", shape=(steps, envs))
    c.bind(rt, stream)
    if getattr(c.rt._fns, "gae", None) is None:
        c.rt.lib.need("gae", 5)     # refused before anything is allocated
    advantages, ap = c.out(advantages, "advantages", (steps, envs))
    qp = 0
    if want_returns or returns is not None:
        returns, qp = c.out(returns, "returns", (steps, envs))
    c.launch("gae", rp, vp, dp, steps, envs, float(gamma), float(lambda_), ap, qp, c.stream)
    return advantages, returns


# ---- the plain wrappers' fast path ---------------------------------------------------------
#
# A call like one of the thread's recent calls of the same op (the same
# argument kinds and values, tensors of the same dtypes, shapes, strides
# and GPU) skips the checks and launches what that call launched with the
# tensors' current addresses: foxjit/_fastcall.py says when, and why that
# is what the checks would have launched.

def _recorder(op):
    """How _fastcall runs op's checks: with a _Recording as its stream (a
    stream passed by position: op launches itself, nothing is remembered)."""
    code = op.__code__
    stream_pos = code.co_varnames[:code.co_argcount].index("stream")

    def record(op, args, kwargs):
        if len(args) > stream_pos:
            return op(*args, **kwargs), None
        rec = _Recording(kwargs.get("stream"))
        kw = dict(kwargs)
        kw["stream"] = rec
        result = op(*args, **kw)
        c = rec.call
        if c is not None and c.torch and rec.stream is None:
            rec.query = _tm[2] if _tm[2] is not None else _current_stream
        return result, rec
    return record


def _fast(op):
    return _fastcall.remember(op, _recorder(op), _launch_failed)


# The ops whose launches take the checked tensors' addresses as they are
# (no address derived from another, no list or dict of tensors).
column_sum = _fast(column_sum)
column_sum_split = _fast(column_sum_split)
bias_grad_reduce = _fast(bias_grad_reduce)
curiosity_bias_grad_reduce = _fast(curiosity_bias_grad_reduce)
reduce_axis0 = _fast(reduce_axis0)
radix_sort_pairs = _fast(radix_sort_pairs)
rank_normalize = _fast(rank_normalize)
cfc_forward = _fast(cfc_forward)
cfc_backward = _fast(cfc_backward)
vsn_forward = _fast(vsn_forward)
vsn_backward = _fast(vsn_backward)
attn_pool_forward = _fast(attn_pool_forward)
attn_pool_backward = _fast(attn_pool_backward)
cfc_seq_forward = _fast(cfc_seq_forward)
cfc_seq_backward = _fast(cfc_seq_backward)
vsn_seq_backward = _fast(vsn_seq_backward)
bce_with_logits = _fast(bce_with_logits)
adamw = _fast(adamw)
increment_step = _fast(increment_step)
gae = _fast(gae)
