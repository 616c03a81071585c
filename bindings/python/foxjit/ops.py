"""Every op on arrays: CUDA torch.Tensors or __cuda_array_interface__ objects.

With torch tensors, the op runs on the tensors' GPU, on torch's current
stream unless `stream` names another, with the runtime of that GPU
(foxjit.ops.runtime_for), whose context is made current for the call and
the caller's made current again after it. Outputs and workspaces come from
torch's caching allocator when not given (on another `stream`, the op
waits for their allocation and they are recorded as used by it); given
ones must be on the inputs' GPU. A runtime passed as rt= is used in the
calling thread's current context, as it is. With other arrays, outputs
and workspaces must be passed (out=..., workspace=...), the runtime is
foxjit.ops.default_runtime() (made on the context current at first use)
and the stream is the `stream` argument, else the producer's stream from
__cuda_array_interface__, else the legacy default stream. Shapes and dtypes
are checked here, everything else by the library (foxjit.Error with its
message)."""

import ctypes
import threading

from . import _lib
from .arrays import arg, is_torch, same_device, ptr, _torch
from .runtime import (AdamwArgs, AttnPoolArgs, CfcArgs, CfcSeqArgs, HeadsArgs, HeadsSeqArgs,
                      Runtime, VsnArgs, VsnSeqArgs)

HEADS_PARAMS = ("w1", "b1", "w2", "b2", "w_gate", "b_gate", "w_main", "b_main", "w_skip",
                "b_skip")

# ---- runtimes and contexts ----------------------------------------------------

_lock = threading.Lock()
_runtimes = {}          # device index -> (Runtime, CUcontext as int)
_default_rt = None
_driver = None


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
                _runtimes[device] = entry
    return entry


def runtime_for(device=None):
    """The runtime of a torch CUDA device (index, torch.device or None for
    the current one), made on first use in that device's primary context
    (the one torch uses). The ops make that context current around each
    call and restore the caller's afterwards; this function leaves the
    calling thread's context as it is. To call the Runtime's methods
    yourself, have that device current (torch.cuda.device(i), or torch
    work on it on this thread)."""
    return _runtime_entry(_device_index(device))[0]


def default_runtime():
    """The runtime for __cuda_array_interface__ arrays: made on the context
    current at first use (CuPy, Numba and torch all use the primary one)."""
    global _default_rt
    with _lock:
        if _default_rt is None:
            _default_rt = Runtime()
        return _default_rt


class _Call:
    """The runtime, stream, context and allocator of one op call."""
    __slots__ = ("rt", "stream", "device", "torch", "ctx", "_made")

    def __init__(self, args, rt, stream, what):
        self.device = same_device(args, what)
        self.torch = any(a is not None and a.torch is not None for a in args)
        self.ctx = None     # None: the caller's current context is the op's
        self._made = []     # the tensors allocated here
        if self.torch:
            torch = _torch()
            if rt is not None:
                self.rt = rt    # the caller's runtime, in the caller's context
            else:
                self.rt, self.ctx = _runtime_entry(self.device)
            self.stream = (stream if stream is not None
                           else torch.cuda.current_stream(self.device).cuda_stream)
        else:
            self.rt = rt if rt is not None else default_runtime()
            if stream is None:
                stream = next((a.stream for a in args if a is not None and a.stream), 0)
            self.stream = stream

    def _on_device(self, a, name):
        """A caller-given array must be on the GPU of the op's inputs: the
        library cannot tell a pointer of another device's memory."""
        if a.device is not None and self.device is not None and a.device != self.device:
            raise ValueError("%s: the tensor is on cuda:%d, the op's inputs on cuda:%d; pass "
                             "one on cuda:%d" % (name, a.device, self.device, self.device))
        return a

    def given(self, obj, name, kind="f4", shape=None):
        """A checked output given by the caller, on the op's device."""
        return self._on_device(arg(obj, name, kind, shape, writable=True), name)

    def out(self, given, name, shape, kind="f4", zero=False):
        """A checked output: the given array, or a new torch tensor."""
        if given is not None:
            return given, self.given(given, name, kind, shape)
        if not self.torch:
            raise TypeError("%s: pass it (%s=...) when the inputs are not torch tensors"
                            % (name, name))
        torch = _torch()
        dtype = {"f4": torch.float32, "i4": torch.int32,
                 "u4": getattr(torch, "uint32", torch.int32)}[kind]
        make = torch.zeros if zero else torch.empty
        t = make(shape, dtype=dtype, device="cuda:%d" % self.device)
        self._made.append(t)
        return t, arg(t, name, kind)

    def workspace(self, given, nbytes):
        if given is not None:
            a = self._on_device(arg(given, "workspace", _ws_kind(given)), "workspace")
            have = a.numel() * 4 if _ws_kind(given) != "u1" else a.numel()
            return given, a.ptr, have
        if not self.torch:
            raise TypeError("workspace: pass a device buffer of %d bytes (workspace=...) when "
                            "the inputs are not torch tensors" % nbytes)
        torch = _torch()
        t = torch.empty(max(nbytes, 1), dtype=torch.uint8, device="cuda:%d" % self.device)
        self._made.append(t)
        return t, t.data_ptr(), nbytes

    def run(self, fn, *args):
        """fn(*args): the op's launch (a Runtime method), with the op's
        context current, after the work that made its new tensors."""
        if self._made:
            torch = _torch()
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
                for t in self._made:
                    t.record_stream(op)
        return _in_context(self.ctx, fn, *args)


def _ws_kind(obj):
    if is_torch(obj):
        # By dtype: a tensor's __cuda_array_interface__ is built on each
        # access (and refused for one that requires grad).
        _torch_u1()
        return "u1" if obj.dtype in _arrays._TORCH_DTYPES["u1"] else "f4"
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None and cai.get("typestr") in ("|u1", "<u1", "|i1"):
        return "u1"
    return "f4"


# Workspaces given as byte arrays: accept typestr |u1 too.
from . import arrays as _arrays  # noqa: E402
_arrays._CAI_TYPES["u1"] = ("|u1", "<u1", "|i1")
_arrays._NAMES["u1"] = "uint8"


def _torch_u1():
    t = _torch()
    if t is not None and "u1" not in _arrays._TORCH_DTYPES:
        _arrays._TORCH_DTYPES["u1"] = (t.uint8, t.int8)


def _dims2(x, name):
    if len(x.shape) != 2:
        raise ValueError("%s: expected 2 dims [rows, cols], got shape %s" % (name, x.shape))
    return x.shape


# ---- column sums ------------------------------------------------------------------

def column_sum(x, out=None, accumulate=False, rt=None, stream=None):
    """out[j] (+)= sum_b x[b, j]; x [rows, cols] float32. Returns out."""
    xa = arg(x, "x")
    rows, cols = _dims2(xa, "x")
    c = _Call([xa], rt, stream, "column_sum")
    out, oa = c.out(out, "out", (cols,), zero=accumulate)
    c.run(c.rt.column_sum, xa.ptr, rows, cols, oa.ptr, accumulate, c.stream)
    return out


def bias_grad_reduce(dy, db, rt=None, stream=None):
    """db[out_dim] += sum over the batch of dy[batch, out_dim]. Returns db."""
    ya = arg(dy, "dy")
    batch, out_dim = _dims2(ya, "dy")
    da = arg(db, "db", shape=(out_dim,), writable=True)
    c = _Call([ya, da], rt, stream, "bias_grad_reduce")
    c.run(c.rt.bias_grad_reduce, ya.ptr, batch, out_dim, da.ptr, c.stream)
    return db


def curiosity_bias_grad_reduce(dy, out=None, rt=None, stream=None):
    """out[out_dim] = sum over rows of dy[rows, out_dim]. Returns out."""
    ya = arg(dy, "dy")
    rows, out_dim = _dims2(ya, "dy")
    c = _Call([ya], rt, stream, "curiosity_bias_grad_reduce")
    out, oa = c.out(out, "out", (out_dim,))
    c.run(c.rt.curiosity_bias_grad_reduce, ya.ptr, rows, out_dim, oa.ptr, c.stream)
    return out


def reduce_axis0(x, out=None, rt=None, stream=None):
    """out[...] = sum over the first dim of x[n_batch, ...]. Returns out."""
    xa = arg(x, "x")
    if len(xa.shape) < 2:
        raise ValueError("x: expected at least 2 dims [n_batch, ...], got %s" % (xa.shape,))
    tail = xa.shape[1:]
    n_tail = xa.numel() // xa.shape[0] if xa.shape[0] else 0
    c = _Call([xa], rt, stream, "reduce_axis0")
    if out is None:
        out, oa = c.out(None, "out", tail)
    else:
        oa = c.given(out, "out")
        if oa.numel() != n_tail:
            raise ValueError("out: %d elements, expected %d" % (oa.numel(), n_tail))
    c.run(c.rt.reduce_axis0, xa.ptr, xa.shape[0], n_tail, oa.ptr, c.stream)
    return out


# ---- sort and rank normalization ------------------------------------------------------

def radix_sort_pairs(keys, values, begin_bit=0, end_bit=32, keys_out=None, values_out=None,
                     workspace=None, rt=None, stream=None):
    """Stable ascending sort of uint32 keys (int32 tensors are read as their
    bits) with uint32 values. Returns (keys_out, values_out)."""
    _torch_u1()
    ka, va = arg(keys, "keys", "u4"), arg(values, "values", "u4")
    if len(ka.shape) != 1 or va.shape != ka.shape:
        raise ValueError("keys and values: expected two 1-D arrays of one length, got %s and %s"
                         % (ka.shape, va.shape))
    n = ka.shape[0]
    c = _Call([ka, va], rt, stream, "radix_sort_pairs")
    keys_out, koa = c.out(keys_out, "keys_out", (n,), "u4")
    values_out, voa = c.out(values_out, "values_out", (n,), "u4")
    need = c.rt.radix_sort_pairs_workspace_size(n, begin_bit, end_bit)
    _keep, wp, wb = c.workspace(workspace, need)
    c.run(c.rt.radix_sort_pairs, ka.ptr, va.ptr, koa.ptr, voa.ptr, n, begin_bit, end_bit, wp,
          wb, c.stream)
    return keys_out, values_out


def rank_normalize(rewards, std_ema, mean_ema, ties="max", out=None, workspace=None, rt=None,
                   stream=None):
    """out[i] = trade_i ? sign(s_i) * rank_i / n : 0 (kernels.md 2); out may
    be rewards. Returns out."""
    _torch_u1()
    ra = arg(rewards, "rewards")
    if len(ra.shape) != 1:
        raise ValueError("rewards: expected 1 dim, got shape %s" % (ra.shape,))
    n = ra.shape[0]
    c = _Call([ra], rt, stream, "rank_normalize")
    out, oa = c.out(out, "out", (n,))
    need = c.rt.rank_normalize_workspace_size(n, ties)
    _keep, wp, wb = c.workspace(workspace, need)
    c.run(c.rt.rank_normalize, ra.ptr, n, float(std_ema), float(mean_ema), ties, oa.ptr, wp,
          wb, c.stream)
    return out


# ---- perception ops, one step ---------------------------------------------------------

def _dims(a, name, n):
    if len(a.shape) != n:
        raise ValueError("%s: expected %d dims, got shape %s" % (name, n, a.shape))
    return a.shape


def _cfc_common(x, h, dt, w_in, w_rec, bias, tau):
    xa = arg(x, "x")
    batch, n_in = _dims(xa, "x", 2)
    wa = arg(w_in, "w_in")
    n_hid = _dims(wa, "w_in", 2)[0]
    if wa.shape[1] != n_in:
        raise ValueError("w_in: shape %s, expected (n_hid, %d)" % (wa.shape, n_in))
    ha = arg(h, "h", shape=(batch, n_hid)) if h is not None else None
    return (xa, ha, arg(dt, "dt", shape=(batch,)), wa,
            arg(w_rec, "w_rec", shape=(n_hid, n_hid)), arg(bias, "bias", shape=(n_hid,)),
            arg(tau, "tau", shape=(n_hid,)), batch, n_in, n_hid)


def cfc_forward(x, h, dt, w_in, w_rec, bias, tau, h_out=None, u=None, rt=None, stream=None):
    """One CfC step: returns (h_out [B, n_hid], u [B, n_hid]). h may be None
    (zeros)."""
    xa, ha, da, wa, ra, ba, ta, batch, n_in, n_hid = _cfc_common(x, h, dt, w_in, w_rec, bias,
                                                                 tau)
    c = _Call([xa, ha, da, wa, ra, ba, ta], rt, stream, "cfc_forward")
    h_out, hoa = c.out(h_out, "h_out", (batch, n_hid))
    u, ua = c.out(u, "u", (batch, n_hid))
    a = CfcArgs(batch=batch, n_in=n_in, n_hid=n_hid, w_in=wa.ptr, w_rec=ra.ptr, bias=ba.ptr,
                tau=ta.ptr, x=xa.ptr, h=ptr(ha), dt=da.ptr, u=ua.ptr, h_out=hoa.ptr)
    c.run(c.rt.cfc_forward, a, c.stream)
    return h_out, u


def cfc_backward(x, h, dt, w_in, w_rec, bias, tau, u, dh_out, dh=None, dx=None, dw_in=None,
                 dw_rec=None, dbias=None, dtau=None, rt=None, stream=None):
    """One CfC step backward: returns dict dh, dx [B, ...] (overwritten) and
    the per-batch scratch dw_in [B, n_hid, n_in], dw_rec [B, n_hid, n_hid],
    dbias, dtau [B, n_hid] (added to; new ones are zeros)."""
    xa, ha, da, wa, ra, ba, ta, batch, n_in, n_hid = _cfc_common(x, h, dt, w_in, w_rec, bias,
                                                                 tau)
    ua = arg(u, "u", shape=(batch, n_hid))
    ga = arg(dh_out, "dh_out", shape=(batch, n_hid))
    c = _Call([xa, ha, da, wa, ra, ba, ta, ua, ga], rt, stream, "cfc_backward")
    r = {}
    r["dh"], dha = c.out(dh, "dh", (batch, n_hid))
    r["dx"], dxa = c.out(dx, "dx", (batch, n_in))
    r["dw_in"], g1 = c.out(dw_in, "dw_in", (batch, n_hid, n_in), zero=True)
    r["dw_rec"], g2 = c.out(dw_rec, "dw_rec", (batch, n_hid, n_hid), zero=True)
    r["dbias"], g3 = c.out(dbias, "dbias", (batch, n_hid), zero=True)
    r["dtau"], g4 = c.out(dtau, "dtau", (batch, n_hid), zero=True)
    a = CfcArgs(batch=batch, n_in=n_in, n_hid=n_hid, w_in=wa.ptr, w_rec=ra.ptr, bias=ba.ptr,
                tau=ta.ptr, x=xa.ptr, h=ptr(ha), dt=da.ptr, u=ua.ptr, dh_out=ga.ptr,
                dh=dha.ptr, dx=dxa.ptr, dw_in=g1.ptr, dw_rec=g2.ptr, dbias=g3.ptr, dtau=g4.ptr)
    c.run(c.rt.cfc_backward, a, c.stream)
    return r


def _heads_params(params):
    """params: a dict or a sequence in HEADS_PARAMS order. Returns the Args
    and (d, e, h)."""
    if not isinstance(params, dict):
        params = dict(zip(HEADS_PARAMS, params))
    missing = [n for n in HEADS_PARAMS if n not in params]
    if missing:
        raise ValueError("heads parameters: missing %s" % ", ".join(missing))
    w1 = arg(params["w1"], "w1")
    h, e, d = _dims(w1, "w1", 3)
    shapes = {"w1": (h, e, d), "b1": (h, e), "w2": (h, e, e), "b2": (h, e), "w_gate": (h, e),
              "b_gate": (h,), "w_main": (h, e), "b_main": (h,), "w_skip": (h, d),
              "b_skip": (h,)}
    return {n: arg(params[n], n, shape=shapes[n]) for n in HEADS_PARAMS}, (d, e, h)


def _heads_x(x, d):
    """x [batch, D] of the one-step heads, D the parameters' (w1 [H, E, D]):
    the kernels read D floats of every row."""
    xa = arg(x, "x")
    batch, dd = _dims(xa, "x", 2)
    if dd != d:
        raise ValueError("x: shape %s, expected (batch, %d)" % (xa.shape, d))
    return xa, batch


def heads_forward(x, params, logits=None, rt=None, stream=None):
    """GRN heads on x [B, D] (one step): returns logits [B, H]."""
    pa, (d, e, h) = _heads_params(params)
    xa, batch = _heads_x(x, d)
    c = _Call([xa] + list(pa.values()), rt, stream, "heads_forward")
    logits, la = c.out(logits, "logits", (batch, h))
    a = HeadsArgs(batch=batch, d=d, e=e, h=h, x=xa.ptr, logits=la.ptr,
                  **{n: v.ptr for n, v in pa.items()})
    c.run(c.rt.heads_forward, a, c.stream)
    return logits


def heads_backward(x, params, dlogits, dx=None, scratch=None, rt=None, stream=None):
    """GRN heads backward (one step): returns dict dx [B, D] and the
    per-batch scratch d<param> [B, *param.shape] (added to; new ones zeros)."""
    pa, (d, e, h) = _heads_params(params)
    xa, batch = _heads_x(x, d)
    ga = arg(dlogits, "dlogits", shape=(batch, h))
    c = _Call([xa, ga] + list(pa.values()), rt, stream, "heads_backward")
    r = {}
    r["dx"], dxa = c.out(dx, "dx", (batch, d))
    scratch = scratch or {}
    sa = {}
    for n in HEADS_PARAMS:
        r["d" + n], sa["d" + n] = c.out(scratch.get("d" + n), "d" + n,
                                        (batch,) + pa[n].shape, zero=True)
    a = HeadsArgs(batch=batch, d=d, e=e, h=h, x=xa.ptr, dlogits=ga.ptr, dx=dxa.ptr,
                  **{n: v.ptr for n, v in pa.items()}, **{n: v.ptr for n, v in sa.items()})
    c.run(c.rt.heads_backward, a, c.stream)
    return r


def _vsn_common(x, w, bias):
    xa = arg(x, "x")
    batch, t, f = _dims(xa, "x", 3)
    return xa, arg(w, "w", shape=(f, f)), arg(bias, "bias", shape=(f,)), batch, t, f


def vsn_forward(x, w, bias, y=None, rt=None, stream=None):
    """Variable selection on x [B, T, F]: returns y [B, T, F]."""
    xa, wa, ba, batch, t, f = _vsn_common(x, w, bias)
    c = _Call([xa, wa, ba], rt, stream, "vsn_forward")
    y, ya = c.out(y, "y", (batch, t, f))
    a = VsnArgs(batch=batch, t=t, f=f, w=wa.ptr, bias=ba.ptr, x=xa.ptr, y=ya.ptr)
    c.run(c.rt.vsn_forward, a, c.stream)
    return y


def vsn_backward(x, w, bias, dy, dx=None, dw=None, dbias=None, rt=None, stream=None):
    """Variable selection backward: dict dx [B, T, F] and the per-batch
    scratch dw [B, F, F], dbias [B, F] (added to; new ones zeros)."""
    xa, wa, ba, batch, t, f = _vsn_common(x, w, bias)
    ga = arg(dy, "dy", shape=(batch, t, f))
    c = _Call([xa, wa, ba, ga], rt, stream, "vsn_backward")
    r = {}
    r["dx"], dxa = c.out(dx, "dx", (batch, t, f))
    r["dw"], dwa = c.out(dw, "dw", (batch, f, f), zero=True)
    r["dbias"], dba = c.out(dbias, "dbias", (batch, f), zero=True)
    a = VsnArgs(batch=batch, t=t, f=f, w=wa.ptr, bias=ba.ptr, x=xa.ptr, dy=ga.ptr, dx=dxa.ptr,
                dw=dwa.ptr, dbias=dba.ptr)
    c.run(c.rt.vsn_backward, a, c.stream)
    return r


def attn_pool_forward(hs, q, pooled=None, rt=None, stream=None):
    """Attention pooling of hs [B, T, D] with query q [D]: returns pooled [B, D]."""
    ha = arg(hs, "hs")
    batch, t, d = _dims(ha, "hs", 3)
    qa = arg(q, "q", shape=(d,))
    c = _Call([ha, qa], rt, stream, "attn_pool_forward")
    pooled, pa = c.out(pooled, "pooled", (batch, d))
    a = AttnPoolArgs(batch=batch, t=t, d=d, q=qa.ptr, hs=ha.ptr, pooled=pa.ptr)
    c.run(c.rt.attn_pool_forward, a, c.stream)
    return pooled


def attn_pool_backward(hs, q, dpooled, dhs=None, dq=None, rt=None, stream=None):
    """Attention pooling backward: dict dhs [B, T, D] and the per-batch
    scratch dq [B, D] (added to; a new one is zeros)."""
    ha = arg(hs, "hs")
    batch, t, d = _dims(ha, "hs", 3)
    qa = arg(q, "q", shape=(d,))
    ga = arg(dpooled, "dpooled", shape=(batch, d))
    c = _Call([ha, qa, ga], rt, stream, "attn_pool_backward")
    r = {}
    r["dhs"], dha = c.out(dhs, "dhs", (batch, t, d))
    r["dq"], dqa = c.out(dq, "dq", (batch, d), zero=True)
    a = AttnPoolArgs(batch=batch, t=t, d=d, q=qa.ptr, hs=ha.ptr, dpooled=ga.ptr, dhs=dha.ptr,
                     dq=dqa.ptr)
    c.run(c.rt.attn_pool_backward, a, c.stream)
    return r


# ---- whole-sequence ops ------------------------------------------------------------------

def _cfc_seq_common(x, dt, w_in, w_rec, bias, tau, h_init):
    xa = arg(x, "x")
    batch, k, n_in = _dims(xa, "x", 3)
    wa = arg(w_in, "w_in")
    n_hid = _dims(wa, "w_in", 2)[0]
    if wa.shape[1] != n_in:
        raise ValueError("w_in: shape %s, expected (n_hid, %d)" % (wa.shape, n_in))
    hi = arg(h_init, "h_init", shape=(batch, n_hid)) if h_init is not None else None
    return (xa, arg(dt, "dt", shape=(batch, k)), wa, arg(w_rec, "w_rec", shape=(n_hid, n_hid)),
            arg(bias, "bias", shape=(n_hid,)), arg(tau, "tau", shape=(n_hid,)), hi,
            batch, k, n_in, n_hid)


def cfc_seq_forward(x, dt, w_in, w_rec, bias, tau, h_init=None, h=None, u=None, rt=None,
                    stream=None):
    """CfC over x [B, K, n_in], dt [B, K]: returns (h, u), each [B, K, n_hid]."""
    xa, da, wa, ra, ba, ta, hi, batch, k, n_in, n_hid = _cfc_seq_common(
        x, dt, w_in, w_rec, bias, tau, h_init)
    c = _Call([xa, da, wa, ra, ba, ta, hi], rt, stream, "cfc_seq_forward")
    h, ha = c.out(h, "h", (batch, k, n_hid))
    u, ua = c.out(u, "u", (batch, k, n_hid))
    a = CfcSeqArgs(batch=batch, k=k, n_in=n_in, n_hid=n_hid, w_in=wa.ptr, w_rec=ra.ptr,
                   bias=ba.ptr, tau=ta.ptr, x=xa.ptr, dt=da.ptr, h_init=ptr(hi), h=ha.ptr,
                   u=ua.ptr)
    c.run(c.rt.cfc_seq_forward, a, c.stream)
    return h, u


def cfc_seq_backward(x, dt, w_in, w_rec, bias, tau, h, u, dh, h_init=None, dx=None,
                     dh_init=None, grads=None, grad_accumulate=False, workspace=None, rt=None,
                     stream=None):
    """CfC over a sequence, backward from dh [B, K, n_hid] (dL/dh_t from
    outside the recurrence): dict dx, dh_init (None without h_init) and the
    parameter gradients dw_in, dw_rec, dbias, dtau (overwritten, or added to
    with grad_accumulate)."""
    _torch_u1()
    xa, da, wa, ra, ba, ta, hi, batch, k, n_in, n_hid = _cfc_seq_common(
        x, dt, w_in, w_rec, bias, tau, h_init)
    sh = (batch, k, n_hid)
    ha, ua, ga = arg(h, "h", shape=sh), arg(u, "u", shape=sh), arg(dh, "dh", shape=sh)
    c = _Call([xa, da, wa, ra, ba, ta, hi, ha, ua, ga], rt, stream, "cfc_seq_backward")
    grads = grads or {}
    r = {}
    r["dx"], dxa = c.out(dx, "dx", (batch, k, n_in))
    dhia = None
    r["dh_init"] = None
    if hi is not None:
        r["dh_init"], dhia = c.out(dh_init, "dh_init", (batch, n_hid))
    g = {}
    for n, shape in (("dw_in", (n_hid, n_in)), ("dw_rec", (n_hid, n_hid)), ("dbias", (n_hid,)),
                     ("dtau", (n_hid,))):
        r[n], g[n] = c.out(grads.get(n), n, shape)
    need = c.rt.cfc_seq_workspace_size(batch, k, n_in, n_hid)
    _keep, wp, wb = c.workspace(workspace, need)
    a = CfcSeqArgs(
        batch=batch, k=k, n_in=n_in, n_hid=n_hid, w_in=wa.ptr, w_rec=ra.ptr, bias=ba.ptr,
        tau=ta.ptr, x=xa.ptr, dt=da.ptr, h_init=ptr(hi), h=ha.ptr, u=ua.ptr, dh=ga.ptr,
        dx=dxa.ptr, dh_init=ptr(dhia), dw_in=g["dw_in"].ptr, dw_rec=g["dw_rec"].ptr,
        dbias=g["dbias"].ptr, dtau=g["dtau"].ptr, grad_accumulate=int(bool(grad_accumulate)),
        work=wp, work_bytes=wb)
    c.run(c.rt.cfc_seq_backward, a, c.stream)
    return r


def _heads_seq_x(x, d):
    xa = arg(x, "x")
    batch, steps, dd = _dims(xa, "x", 3)
    if dd != d:
        raise ValueError("x: shape %s, expected (batch, steps, %d)" % (xa.shape, d))
    return xa, batch, steps


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
    pa, (d, e, h) = _heads_params(params)
    xa, batch, steps = _heads_seq_x(x, d)
    c = _Call([xa] + list(pa.values()), rt, stream, "heads_seq_forward")
    logits, la = c.out(logits, "logits", (batch, steps, h))
    a = HeadsSeqArgs(batch=batch, steps=steps, d=d, e=e, h=h, x=xa.ptr, logits=la.ptr,
                     **{n: v.ptr for n, v in pa.items()})
    c.run(c.rt.heads_seq_forward, a, c.stream)
    return logits


def heads_seq_backward(x, params, dlogits, dx=None, grads=None, grad_accumulate=False,
                       workspace=None, rt=None, stream=None):
    """GRN heads over [B, S] rows, backward: dict dx [B, S, D] and
    d<param> (parameter-shaped, summed over every row)."""
    _torch_u1()
    pa, (d, e, h) = _heads_params(params)
    xa, batch, steps = _heads_seq_x(x, d)
    ga = arg(dlogits, "dlogits", shape=(batch, steps, h))
    c = _Call([xa, ga] + list(pa.values()), rt, stream, "heads_seq_backward")
    grads = grads or {}
    r, g = {}, {}
    r["dx"], dxa = c.out(dx, "dx", (batch, steps, d))
    for n in HEADS_PARAMS:
        r["d" + n], g["d" + n] = c.out(grads.get("d" + n), "d" + n, pa[n].shape)
    need = c.rt.heads_seq_workspace_size(batch, steps, d, e, h)
    _keep, wp, wb = c.workspace(workspace, need)
    a = HeadsSeqArgs(
        batch=batch, steps=steps, d=d, e=e, h=h, x=xa.ptr, dlogits=ga.ptr, dx=dxa.ptr,
        grad_accumulate=int(bool(grad_accumulate)), work=wp, work_bytes=wb,
        **{n: v.ptr for n, v in pa.items()}, **{n: v.ptr for n, v in g.items()})
    c.run(c.rt.heads_seq_backward, a, c.stream)
    return r


def vsn_seq_backward(x, w, bias, dy, dx=None, dw=None, dbias=None, grad_accumulate=False,
                     workspace=None, rt=None, stream=None):
    """Variable selection backward over all rows: dict dx [B, T, F], dw
    [F, F], dbias [F] (summed over every row)."""
    _torch_u1()
    xa, wa, ba, batch, t, f = _vsn_common(x, w, bias)
    ga = arg(dy, "dy", shape=(batch, t, f))
    c = _Call([xa, wa, ba, ga], rt, stream, "vsn_seq_backward")
    r = {}
    r["dx"], dxa = c.out(dx, "dx", (batch, t, f))
    r["dw"], dwa = c.out(dw, "dw", (f, f))
    r["dbias"], dba = c.out(dbias, "dbias", (f,))
    need = c.rt.vsn_seq_workspace_size(batch, t, f)
    _keep, wp, wb = c.workspace(workspace, need)
    a = VsnSeqArgs(batch=batch, t=t, f=f, w=wa.ptr, bias=ba.ptr, x=xa.ptr, dy=ga.ptr,
                   dx=dxa.ptr, dw=dwa.ptr, dbias=dba.ptr,
                   grad_accumulate=int(bool(grad_accumulate)), work=wp, work_bytes=wb)
    c.run(c.rt.vsn_seq_backward, a, c.stream)
    return r


# ---- training step ------------------------------------------------------------------------

# foxjit_bce_with_logits_wide runs the one-block form up to this many values
# (runtime/ops/train.h, FJ_BCE_WIDE_ONE_BLOCK_MAX).
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
    _torch_u1()
    za = arg(z, "z")
    ya = arg(y, "y", shape=za.shape)
    n = za.numel()
    c = _Call([za, ya], rt, stream, "bce_with_logits")
    if wide is None:
        # Up to _BCE_WIDE_ONE_BLOCK the wide form is the one-block form:
        # no workspace to allocate for it.
        wide = (n > _BCE_WIDE_ONE_BLOCK and c.rt.lib.has("bce_with_logits_wide")
                and (c.torch or workspace is not None))
    loss, la = c.out(loss, "loss", (1,), zero=accumulate)
    dza = None
    if want_dz or dz is not None:
        dz, dza = c.out(dz, "dz", za.shape)
    if wide:
        need = c.rt.bce_with_logits_workspace_size(n)
        _keep, wp, wb = c.workspace(workspace, need)
        c.run(c.rt.bce_with_logits_wide, za.ptr, ya.ptr, n, la.ptr, accumulate, ptr(dza), wp,
              wb, c.stream)
    else:
        c.run(c.rt.bce_with_logits, za.ptr, ya.ptr, n, la.ptr, accumulate, ptr(dza), c.stream)
    return loss, dz


def adamw(param, grad, m, v, step, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
          rt=None, stream=None):
    """Fused AdamW over one float32 tensor in place; step is one int32 on
    the device (1-based)."""
    pa = arg(param, "param", writable=True)
    ga = arg(grad, "grad", shape=pa.shape)
    ma = arg(m, "m", shape=pa.shape, writable=True)
    va = arg(v, "v", shape=pa.shape, writable=True)
    sa = arg(step, "step", "i4")
    if sa.numel() != 1:
        raise ValueError("step: one int32 expected, got shape %s" % (sa.shape,))
    c = _Call([pa, ga, ma, va, sa], rt, stream, "adamw")
    a = AdamwArgs(n=pa.numel(), param=pa.ptr, grad=ga.ptr, m=ma.ptr, v=va.ptr, step=sa.ptr,
                  lr=lr, beta1=betas[0], beta2=betas[1], eps=eps, weight_decay=weight_decay)
    c.run(c.rt.adamw, a, c.stream)
    return param


def increment_step(step, rt=None, stream=None):
    """step[0] += 1 on the device (one int32)."""
    sa = arg(step, "step", "i4")
    if sa.numel() != 1:
        raise ValueError("step: one int32 expected, got shape %s" % (sa.shape,))
    c = _Call([sa], rt, stream, "increment_step")
    c.run(c.rt.increment_step, sa.ptr, c.stream)
    return step


_ = _lib
