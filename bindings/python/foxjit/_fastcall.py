"""The plain wrappers' fast path: a call that matches one of the calling
thread's recent calls of the same op launches what that call launched,
with the tensors' current addresses, instead of running the op's checks
again.

A call matches a remembered one when it passes the same arguments by
position and keyword, its non-tensor arguments are the same values bit
for bit (None, bools, numbers, strings, tuples of those), torch is the
same module, and its torch tensors pass torch's own C++ tensor check
(torch._C._dynamo.guards.TensorGuards, what torch.compile's guards use:
the same Python class, dtype, device, requires_grad, sizes and strides).
Those decide every dimension the op derived and every check it made, so
only the addresses can differ: they are read again on each call
(Tensor.data_ptr), put where the remembered call had them, and checked
for alignment. A match launches on torch's current stream (or the stream
the call names) through the remembered runtime, exactly as the op would
have.

What is not remembered: calls with fewer than _MIN_TENSORS tensors (their
checks cost less than this), calls with arrays other than torch tensors,
with other argument types (lists, dicts, a Runtime passed as rt=), with a
tensor object passed twice or with a tensor whose address no launch takes
(the op read it some other way, as a 0-d tensor given for lr or a flag:
its value, which no check here sees), calls that allocated an output or a
workspace (a fast call must return new ones), and calls with two tensors
at one address. Calls whose launch arguments hold an address the op
derived rather than read, or an address below 2**32, match only with
every address unchanged. When torch has no usable
TensorGuards, no call is remembered: each is checked in full.

The memory is per thread and per op, at most _ENTRIES calls each; it keeps
no tensor or runtime alive (addresses and metadata only; a runtime of
foxjit.ops, made per GPU, lives as long as the process anyway)."""

import ctypes
import functools
import sys
import threading

_ENTRIES = 4
# Calls with fewer tensors are not remembered: checking those few costs less
# than the fast path's own work. On an H100 host with PyTorch 2.11 the
# two-tensor column_sum took 7.97 us checked and 9.00 us on the fast path,
# the nine-tensor cfc_forward 18.86 and 10.24 (python3 -m foxjit.overhead).
_MIN_TENSORS = 3
# A thread whose calls of an op are not remembered calls it directly, and
# tries again after _RETRY calls, then after twice as many each time it
# fails again, up to _RETRY_MAX: a recording costs about a checked call,
# and calls that cannot be remembered (fewer than _MIN_TENSORS tensors)
# would otherwise pay a sixteenth of one on every call.
_RETRY = 16
_RETRY_MAX = 1024
_SCALARS = (type(None), bool, int, float, str)
_CARG = type(ctypes.byref(ctypes.c_int()))
_BIG = 1 << 32          # device addresses are above this; dims and flags below
_modules = sys.modules

# Per torch module object: (the module, its Tensor class, a TensorGuards
# factory or None). Looked up again when sys.modules["torch"] changes.
_guard_state = [None, None, None]


def _guards_for(torch):
    """A factory of C++ tensor checks of this torch, or None when it has
    none that behaves as expected (checked once, on CPU tensors)."""
    try:
        tg = torch._C._dynamo.guards.TensorGuards

        def make(tensors):
            return tg(*tensors, dynamic_dims_sizes=[list(t.shape) for t in tensors],
                      dynamic_dims_strides=[list(t.stride()) for t in tensors])
        a = torch.zeros(2, 3)
        g = make((a,))
        if not g.check(a):
            return None
        for other in (torch.zeros(3, 2), a.t(), a[:1], torch.zeros(2, 3, dtype=torch.float64),
                      torch.zeros(2, 3).requires_grad_(True)):
            if g.check(other):
                return None
        return make
    except Exception:       # no TensorGuards, or another signature: full checks
        return None


def _torch_state():
    t = sys.modules.get("torch")
    st = _guard_state
    if t is not st[0]:
        T = getattr(t, "Tensor", None) if t is not None else None
        make = _guards_for(t) if T is not None else None
        st[:] = [t, T, make]
    return st


_MISS = object()        # what an entry's fast() returns for a call it does not match


class _Entry:
    """One remembered call of an op (see the module's doc): `fast`, the
    function written for it (_write_fast), and the state it shares with
    it: the addresses the argument structs hold now (ptrs)."""
    __slots__ = ("fast", "ptrs", "torch", "hits")


def _simple(v):
    t = type(v)
    return t in _SCALARS or t is tuple and all(type(e) in _SCALARS for e in v)


def _same_value(expr, k, env):
    """Python source that is true when expr's value is k, bit for bit: the
    same object for singletons and float zeros (0.0 == -0.0, but their bits
    differ), else the same type and ==, element by element in a tuple (a
    tensor never meets ==). Constants go into env."""
    name = "k%d" % len(env)
    env[name] = k
    if k is None or type(k) is bool or type(k) is float and k == 0.0:
        return "%s is %s" % (expr, name)
    if type(k) is tuple:
        parts = ["type(%s) is tuple" % expr, "len(%s) == %d" % (expr, len(k))]
        parts += [_same_value("%s[%d]" % (expr, j), e, env) for j, e in enumerate(k)]
        return "(%s is %s or %s)" % (expr, name, " and ".join(parts))
    env["t" + name] = type(k)
    return "(%s is %s or type(%s) is t%s and %s == %s)" % (expr, name, expr, name, expr, name)


def _result_expr(result, tensor_var):
    """Python source giving what the op returns, made of the call's own
    tensors (tensor_var: id -> variable), or None when it is not."""
    if result is None:
        return "None"
    if id(result) in tensor_var:
        return tensor_var[id(result)]
    if type(result) is tuple:
        parts = [_result_expr(r, tensor_var) for r in result]
        return None if None in parts else "(%s)" % "".join(p + ", " for p in parts)
    if type(result) is dict and all(type(k) is str for k in result):
        parts = [_result_expr(r, tensor_var) for r in result.values()]
        if None in parts:
            return None
        return "{%s}" % ", ".join("%r: %s" % (k, p) for k, p in zip(result, parts))
    return None


def _write_fast(e, nargs, kwkeys, tpos, consts, check, launches, int_slots, struct_slots,
                exact, query, device, stream, errors, ctx, rt, result):
    """e.fast: for the call's arguments (args, kwargs), _MISS unless they
    match, else the launches with the current addresses and the op's
    result. Written out for this call's layout: this runs on every call,
    so no loops and no tuples built but the addresses'."""
    env = {"MISS": _MISS, "check": check, "E": e, "errors": errors, "CTX": ctx, "RT": rt}
    src = ["def fast(a, kw):",
           "    if len(a) != %d or len(kw) != %d:" % (nargs, len(kwkeys)),
           "        return MISS"]
    get = ["v%d = a[%d]" % (i, i) for i in range(nargs)]
    get += ["v%d = kw[%r]" % (nargs + j, k) for j, k in enumerate(kwkeys)]
    if kwkeys:
        src += ["    try:", "        " + "; ".join(get), "    except KeyError:",
                "        return MISS"]
    elif get:
        src += ["    " + "; ".join(get)]
    cond = [_same_value("v%d" % i, k, env) for i, k in consts.items()]
    if cond:
        src += ["    if not (%s):" % " and ".join(cond), "        return MISS"]
    tv = ["v%d" % i for i in tpos]
    src += ["    try:",
            "        if not check(%s):" % ", ".join(tv),
            "            return MISS",
            "    except Exception:       # a non-tensor where a tensor was",
            "        return MISS",
            "    " + "; ".join("p%d = %s.data_ptr()" % (ti, v) for ti, v in enumerate(tv)),
            "    pt = (%s)" % "".join("p%d, " % ti for ti in range(len(tv))),
            "    if pt != E.ptrs:"]
    if exact:
        src += ["        return MISS"]
    else:
        # New addresses: all aligned as the checks demand (before any is
        # written: a call that misses leaves the structs as they were),
        # then into the argument structs where the old ones were.
        src += ["        if (%s) & 3:" % " | ".join("p%d" % ti for ti in range(len(tv))),
                "            return MISS",
                "        q = E.ptrs"]
        for ti in range(len(tv)):
            sets = []
            for si, (struct, field, owner) in enumerate(struct_slots):
                if owner == ti:
                    env["s%d" % si] = struct
                    sets.append("            s%d.%s = p%d" % (si, field, ti))
            if sets:
                src += ["        if p%d != q[%d]:" % (ti, ti)] + sets
        src += ["        E.ptrs = pt"]
    if query is None:
        env["S"] = stream
        src += ["    s = S"]
    else:
        env["Q"], env["DEV"] = query, device
        src += ["    s = Q(DEV)"]
    for li, (fn, rtp, largs) in enumerate(launches):
        env["f%d" % li], env["r%d" % li] = fn, rtp
        args = []
        for ai, v in enumerate(largs):
            ti = int_slots.get((li, ai))
            if ti is not None:
                args.append("p%d" % ti)
            else:
                env["c%d_%d" % (li, ai)] = v
                args.append("c%d_%d" % (li, ai))
        call_args = "".join(x + ", " for x in args)
        src += ["    st = f%d(r%d, %ss)" % (li, li, call_args),
                "    if st:",
                "        errors(st, f%d, r%d, (%s), s, CTX, RT)" % (li, li, call_args)]
    src += ["    E.hits += 1",
            "    return " + result]
    exec("\n".join(src), env)
    e.fast = env["fast"]


def build(args, kwargs, rec, result, errors):
    """An _Entry of a recorded call (the ops module's _Recording), or None
    when the call cannot be remembered."""
    st = _torch_state()
    T, make = st[1], st[2]
    c = rec.call
    if make is None or c is None or not c.torch or rec.made or not rec.launches:
        return None
    vals = args + tuple(kwargs.values())
    tpos, cpos = [], []
    for i, v in enumerate(vals):
        if isinstance(v, T):
            tpos.append(i)
        elif _simple(v):
            cpos.append(i)
        else:
            return None
    if len(tpos) < _MIN_TENSORS:
        return None
    tensors = tuple(vals[i] for i in tpos)
    try:
        guard = make(tensors)
    except Exception:
        return None
    ptrs = tuple(t.data_ptr() for t in tensors)
    if len(set(ptrs)) != len(ptrs):
        return None             # two tensors at one address: which is which is unclear
    exact = min(ptrs) < _BIG
    owner = {p: i for i, p in enumerate(ptrs)}
    owned = set()
    int_slots, struct_slots = {}, []
    for li, (fn, rtp, largs) in enumerate(rec.launches):
        for ai, a in enumerate(largs):
            ta = type(a)
            if ta is int:
                if a in owner:
                    int_slots[(li, ai)] = owner[a]
                    owned.add(owner[a])
                elif a >= _BIG:
                    exact = True            # an address the op derived
            elif ta is _CARG:
                s = a._obj
                if not isinstance(s, ctypes.Structure):
                    return None
                for name, ctype in type(s)._fields_:
                    if issubclass(ctype, (ctypes.Structure, ctypes.Array, ctypes.Union)):
                        return None
                    v = getattr(s, name)
                    if not name.isidentifier() or type(v) not in (int, float, type(None)):
                        return None         # a pointer object: not followed here
                    if type(v) is int:
                        if v in owner:
                            struct_slots.append((s, name, owner[v]))
                            owned.add(owner[v])
                        elif v >= _BIG:
                            exact = True
            elif ta is not float:
                return None
    if len(owned) != len(tpos):
        # A tensor whose address no launch takes was read some other way
        # (a 0-d tensor for lr or a flag: its value, which no check sees).
        return None
    tensor_var = {id(vals[i]): "v%d" % i for i in tpos}
    if len(tensor_var) != len(tpos):
        return None         # an object passed twice: which one a result is, is unclear
    rexpr = _result_expr(result, tensor_var)
    if rexpr is None:
        return None
    e = _Entry()
    e.ptrs, e.torch, e.hits = ptrs, st[0], 0
    _write_fast(e, len(args), tuple(kwargs), tpos, {i: vals[i] for i in cpos}, guard.check,
                rec.launches, int_slots, struct_slots, exact, rec.query, c.device, c.stream,
                errors, c.ctx, c.rt, rexpr)
    return e


_locals = []             # every op's threading.local, for forget()


def forget():
    """Drops the calling thread's remembered calls of every op (tests that
    swap torch for a stand-in)."""
    for tl in _locals:
        tl.__dict__.clear()


def remember(op, record, errors):
    """op (a function of foxjit.ops) with the fast path in front: a function
    called as op is. record(op, args, kwargs) runs op's checks and returns
    (its result, the _Recording of its launches), or (result, None) when it
    launched the op itself; errors(status, fn, rt, args, stream, ctx,
    runtime) handles a launch's failure status."""
    tl = threading.local()
    _locals.append(tl)

    def call(*args, **kwargs):
        entries = getattr(tl, "e", None)
        if entries:
            tm = _modules.get("torch")
            for e in entries:
                if e.torch is tm:
                    r = e.fast(args, kwargs)
                    if r is not _MISS:
                        return r
        elif entries is not None and tl.direct:
            tl.direct -= 1
            return op(*args, **kwargs)
        return _slow(entries, args, kwargs)

    def _slow(entries, args, kwargs):
        result, rec = record(op, args, kwargs)
        if rec is None:
            return result
        # Launch what the checks recorded, as the op would have.
        c = rec.call
        for fn, rtp, largs in rec.launches:
            st = fn(rtp, *largs, c.stream)
            if st:
                errors(st, fn, rtp, largs, c.stream, c.ctx, c.rt)
        if entries is None:
            entries = tl.e = []
            tl.skip = tl.direct = tl.wait = 0
        # A thread whose calls keep missing (shapes that change on every
        # call) makes entries less often.
        if len(entries) >= 2 and all(e.hits == 0 for e in entries):
            tl.skip += 1
            if tl.skip % _RETRY:
                return result
        e = build(args, kwargs, rec, result, errors)
        if e is not None:
            if len(entries) >= _ENTRIES:
                entries.pop(0)
            entries.append(e)
            tl.wait = 0
        elif not entries:
            tl.wait = min(2 * tl.wait, _RETRY_MAX) if tl.wait else _RETRY
            tl.direct = tl.wait - 1
        return result

    functools.update_wrapper(call, op)
    call.entries = lambda: list(getattr(tl, "e", None) or ())   # for tests
    return call
