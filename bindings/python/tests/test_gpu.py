"""On a GPU with torch: every op against a torch float64 reference, the
autograd wrappers' gradients against float64 autograd (gradcheck-style:
the kernels are float32, so the check compares with the float64 analytic
gradient instead of finite differences), torch.compile and CUDA graph
capture of the custom ops, and a short training loop of the reference
model. Runs under pytest or `python3 -m unittest tests.test_gpu`."""

import ctypes
import math
import threading
import unittest

try:
    import torch
except ImportError:          # the runner reports the skip
    torch = None

import foxjit
from foxjit import ops

from ._common import need_library

HAVE_GPU = torch is not None and torch.cuda.is_available()
if HAVE_GPU:
    import foxjit.torch as ft


def setUpModule():
    if not HAVE_GPU:
        raise unittest.SkipTest("needs torch with a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def rnd(*shape, lo=-1.0, hi=1.0, gen=None):
    return (torch.rand(shape, generator=gen, device="cuda") * (hi - lo) + lo).float()


def close(test, what, got, want, atol=1e-4, rtol=1e-3):
    got, want = got.detach().double(), want.detach().double()
    test.assertEqual(tuple(got.shape), tuple(want.shape), what)
    err = (got - want).abs()
    bound = atol + rtol * want.abs()
    bad = (err > bound).sum().item()
    test.assertEqual(bad, 0, "%s: %d values off, worst error %.3e" % (what, bad, err.max().item()))


# ---- float64 references (kernels.md) ---------------------------------------

def ref_cfc_step(x, h, dt, w_in, w_rec, bias, tau):
    u = torch.tanh(bias + x @ w_in.t() + h @ w_rec.t())
    decay = torch.exp(-dt.unsqueeze(-1) / tau)
    return decay * h + (1 - decay) * u


def ref_cfc_seq(x, dt, w_in, w_rec, bias, tau, h0):
    h, out = h0, []
    for t in range(x.shape[1]):
        h = ref_cfc_step(x[:, t], h, dt[:, t], w_in, w_rec, bias, tau)
        out.append(h)
    return torch.stack(out, 1)


def ref_heads(x, w1, b1, w2, b2, w_gate, b_gate, w_main, b_main, w_skip, b_skip):
    a = torch.einsum("...d,hed->...he", x, w1) + b1
    eta = torch.nn.functional.elu(a)
    c = torch.einsum("...he,hfe->...hf", eta, w2) + b2
    g = torch.sigmoid((c * w_gate).sum(-1) + b_gate)
    m = (c * w_main).sum(-1) + b_main
    s = x @ w_skip.t() + b_skip
    return s + g * m


def ref_vsn(x, w, bias):
    return torch.softmax(x @ w.t() + bias, dim=-1) * x


def ref_attn(hs, q):
    alpha = torch.softmax(hs @ q / math.sqrt(hs.shape[-1]), dim=1)
    return (alpha.unsqueeze(-1) * hs).sum(1)


def ref_gae(rewards, values, dones, gamma, lam):
    """GAE's recurrence (kernels.md 9) in float64 over [T, N] rollouts:
    (advantages, returns, their error bounds). The bound is ops/gae/test.c's:
    with u = 2^-24 and c = gamma lambda keep, a step's rounding is at most
    u (3 (|r| + gamma |V'| + |V|) + 3 c |A'| + 2 |delta|), and the error of
    A' is carried by c; returns add u (|A| + |V|). gamma and lam are taken
    as the float32 values the kernel gets."""
    u = 2.0 ** -24
    g = torch.tensor(gamma, dtype=torch.float32).item()
    l = torch.tensor(lam, dtype=torch.float32).item()
    r, v = rewards.double(), values.double()
    keep = (dones == 0).double()
    adv, ret, adv_err, ret_err = (torch.empty_like(r) for _ in range(4))
    a, e, next_v = torch.zeros_like(r[0]), torch.zeros_like(r[0]), v[-1]
    for t in range(r.shape[0] - 1, -1, -1):
        c = g * l * keep[t]
        delta = r[t] + g * keep[t] * next_v - v[t]
        e = c * e + u * (3 * (r[t].abs() + g * next_v.abs() + v[t].abs()) + 3 * c * a.abs()
                         + 2 * delta.abs())
        a = delta + c * a
        adv[t], adv_err[t] = a, e
        ret[t], ret_err[t] = a + v[t], e + u * (a.abs() + v[t].abs())
        next_v = v[t]
    return adv, ret, adv_err, ret_err


def within(test, what, got, want, bound):
    """Every element of got within twice its bound of want."""
    test.assertEqual(tuple(got.shape), tuple(want.shape), what)
    err = (got.detach().double() - want).abs()
    allowed = 2 * bound + 1e-30
    bad = (~(err <= allowed)).sum().item()     # NaN is bad too
    test.assertEqual(bad, 0, "%s: %d values off, worst error %.3e of %.3e allowed"
                     % (what, bad, err.max().item(), allowed.max().item()))


def heads_params(d, e, h, gen=None):
    s1, s2 = 1 / math.sqrt(d), 1 / math.sqrt(e)
    return [rnd(h, e, d, lo=-s1, hi=s1, gen=gen), rnd(h, e, lo=-.1, hi=.1, gen=gen),
            rnd(h, e, e, lo=-s2, hi=s2, gen=gen), rnd(h, e, lo=-.1, hi=.1, gen=gen),
            rnd(h, e, lo=-s2, hi=s2, gen=gen), rnd(h, lo=-.1, hi=.1, gen=gen),
            rnd(h, e, lo=-s2, hi=s2, gen=gen), rnd(h, lo=-.1, hi=.1, gen=gen),
            rnd(h, d, lo=-s1, hi=s1, gen=gen), rnd(h, lo=-.1, hi=.1, gen=gen)]


def cfc_params(n_in, n_hid):
    return [rnd(n_hid, n_in, lo=-.3, hi=.3), rnd(n_hid, n_hid, lo=-.3, hi=.3),
            rnd(n_hid, lo=-.1, hi=.1), rnd(n_hid, lo=1.0, hi=8.0)]


def f64_grads(fn, inputs, gout):
    """Output and d(sum(out * gout))/d input of fn in float64."""
    xs = [t.detach().double().requires_grad_(True) for t in inputs]
    out = fn(*xs)
    grads = torch.autograd.grad((out * gout.double()).sum(), xs, allow_unused=True)
    return out, grads


class Cai:
    """Only __cuda_array_interface__: the path of CuPy, Numba and others."""

    def __init__(self, t):
        self.t = t
        self.__cuda_array_interface__ = t.__cuda_array_interface__


class Ops(unittest.TestCase):
    def setUp(self):
        need_library(self)
        torch.manual_seed(1234)

    def test_column_sums(self):
        for rows, cols in ((8192, 42), (32, 5000), (1000, 3)):
            x = rnd(rows, cols)
            want = x.double().sum(0)
            atol = 2e-6 * rows
            close(self, "column_sum", ops.column_sum(x), want, atol)
            out = rnd(cols)
            close(self, "column_sum acc", ops.column_sum(x, out=out.clone(), accumulate=True),
                  want + out.double(), atol)
            db = rnd(cols)
            want_db = want + db.double()
            close(self, "bias_grad_reduce", ops.bias_grad_reduce(x, db), want_db, atol)
            close(self, "curiosity", ops.curiosity_bias_grad_reduce(x), want, atol)
        s = rnd(32, 5, 64)
        close(self, "reduce_axis0", ops.reduce_axis0(s), s.double().sum(0), 1e-4)

    def test_split_column_sums(self):
        rt = ops.runtime_for(0)
        for rows, cols in ((8192, 42), (8192, 256), (1000, 77), (32, 5000)):
            x = rnd(rows, cols)
            want = x.double().sum(0)
            atol = 2e-6 * rows
            got = ops.column_sum_split(x)          # a zeroed workspace made for the call
            close(self, "column_sum_split", got, want, atol)
            # One workspace, zeroed once, for every call after: the same bits,
            # and the same again from x at another alignment.
            ws = torch.zeros(rt.column_sum_workspace_size(rows, cols), dtype=torch.uint8,
                             device=x.device)
            for _ in range(3):
                self.assertTrue(torch.equal(ops.column_sum_split(x, workspace=ws), got))
            shifted = torch.empty(rows * cols + 1, device=x.device)[1:].view(rows, cols)
            shifted.copy_(x)
            self.assertTrue(torch.equal(ops.column_sum_split(shifted, workspace=ws), got))
            base = rnd(cols)
            acc = ops.column_sum_split(x, out=base.clone(), accumulate=True, workspace=ws)
            self.assertTrue(torch.equal(acc, base + got))
            self.assertFalse(bool(ws[:512].any()))    # its counters back at zero

    def test_sort(self):
        n = 100_000
        keys = torch.randint(0, 5000, (n,), device="cuda", dtype=torch.int32)
        values = torch.arange(n, device="cuda", dtype=torch.int32)
        ko, vo = ops.radix_sort_pairs(keys, values)
        sk, order = torch.sort(keys.long(), stable=True)
        self.assertTrue(torch.equal(ko.long(), sk))
        self.assertTrue(torch.equal(vo.long(), order))

    def ref_rank(self, r, std, mean, ties):
        # A tensor divisor: torch divides by a Python number as a product
        # with its reciprocal, one ulp off the kernel's (and the spec's)
        # division for some values, which can split or merge a tie.
        s = (r - mean) / torch.full_like(r, std)
        a = s.abs()
        n = r.numel()
        if ties == "max":
            rank = torch.searchsorted(torch.sort(a).values, a, right=True).double()
        else:
            order = torch.argsort(a, stable=True)
            rank = torch.empty(n, dtype=torch.float64, device=r.device)
            rank[order] = torch.arange(1, n + 1, dtype=torch.float64, device=r.device)
        return torch.where(a > 0.001, torch.sign(s).double() * rank / n,
                           torch.zeros_like(rank))

    def test_rank_normalize(self):
        n = 20_000
        r = rnd(n, lo=-3, hi=3)
        r[::97] = 0.25
        r[1::53] = r[5].item()      # ties
        for ties in ("max", "ordinal"):
            got = ops.rank_normalize(r, 1.5, 0.25, ties=ties)
            close(self, "rank_normalize " + ties, got, self.ref_rank(r, 1.5, 0.25, ties), 1e-6, 1e-6)
        # in place
        r2 = r.clone()
        ops.rank_normalize(r2, 1.5, 0.25, out=r2)
        close(self, "rank_normalize in place", r2, self.ref_rank(r, 1.5, 0.25, "max"), 1e-6, 1e-6)

    def test_cuda_array_interface(self):
        x = rnd(4096, 42)
        out = torch.zeros(42, device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        ops.column_sum(Cai(x), out=Cai(out), stream=stream)
        torch.cuda.synchronize()
        close(self, "column_sum (CAI)", out, x.double().sum(0), 1e-2)
        r = rnd(5000, lo=-2, hi=2)
        rt = ops.runtime_for(0)
        ws = torch.empty(rt.rank_normalize_workspace_size(5000), dtype=torch.uint8,
                         device="cuda")
        o = torch.empty_like(r)
        ops.rank_normalize(Cai(r), 1.0, 0.0, out=Cai(o), workspace=Cai(ws), stream=stream)
        torch.cuda.synchronize()
        close(self, "rank_normalize (CAI)", o, self.ref_rank(r, 1.0, 0.0, "max"), 1e-6, 1e-6)

    def test_checks_on_tensors(self):
        with self.assertRaisesRegex(ValueError, "CUDA tensor"):
            ops.column_sum(torch.zeros(4, 4))
        with self.assertRaisesRegex(TypeError, "dtype"):
            ops.column_sum(torch.zeros(4, 4, device="cuda", dtype=torch.float64))
        with self.assertRaisesRegex(ValueError, "contiguous"):
            ops.column_sum(torch.zeros(4, 8, device="cuda")[:, ::2])
        # The heads' backward checks x's width as the forward does.
        p = heads_params(8, 4, 2)
        with self.assertRaisesRegex(ValueError, r"x: shape \(3, 6\), expected \(batch, 8\)"):
            ops.heads_backward(rnd(3, 6), p, rnd(3, 2))

    def test_context_restored_after_an_op(self):
        """An op makes its GPU's primary context current for the call only:
        a thread's own context is current again after it (before, the op
        left the primary one current)."""
        x, out = rnd(4096, 42), torch.empty(42, device="cuda")
        ops.column_sum(x, out=out)          # the runtime exists
        torch.cuda.synchronize()
        cu = ops._cuda()
        create = getattr(cu, "cuCtxCreate_v2", None)
        if create is None:
            self.skipTest("the driver has no cuCtxCreate_v2")
        create.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint, ctypes.c_int]
        cu.cuCtxDestroy_v2.argtypes = [ctypes.c_void_p]
        found, errors = [], []

        def work():
            try:
                torch.cuda.current_stream(x.device)     # torch's per-thread setup, first
                dev = ctypes.c_int()
                self.assertEqual(cu.cuDeviceGet(ctypes.byref(dev), x.device.index), 0)
                own = ctypes.c_void_p()
                self.assertEqual(create(ctypes.byref(own), 0, dev.value), 0)  # now current
                try:
                    ops.column_sum(x, out=out)
                    found.append((ops._current_ctx(), own.value))
                finally:
                    cu.cuCtxDestroy_v2(own)
            except BaseException as e:          # noqa: B902 (reported below)
                errors.append(e)
        t = threading.Thread(target=work)
        t.start()
        t.join()
        if errors:
            raise errors[0]
        torch.cuda.synchronize()
        self.assertEqual(found[0][0], found[0][1], "the thread's own context is not current")
        close(self, "column_sum (another thread)", out, x.double().sum(0), 1e-2)

    @unittest.skipUnless(HAVE_GPU and torch.cuda.device_count() >= 2, "needs two GPUs")
    def test_two_gpus(self):
        """Outputs given on another GPU than the inputs are refused; an op on
        another GPU's tensors leaves torch's current device as it was."""
        x1 = rnd(1000, 42).to("cuda:1")
        with self.assertRaisesRegex(ValueError, "out: the tensor is on cuda:0, the op's "
                                    "inputs on cuda:1"):
            ops.column_sum(x1, out=torch.empty(42, device="cuda:0"))
        r1 = rnd(5000).to("cuda:1")
        with self.assertRaisesRegex(ValueError, "workspace: the tensor is on cuda:0"):
            ops.rank_normalize(r1, 1.0, 0.0, workspace=torch.empty(1 << 20, dtype=torch.uint8,
                                                                   device="cuda:0"))
        with torch.cuda.device(0):
            before = ops._current_ctx()
            got = ops.column_sum(x1)
            self.assertEqual(torch.cuda.current_device(), 0)
            self.assertEqual(ops._current_ctx(), before)
        torch.cuda.synchronize(1)
        self.assertEqual(got.device, x1.device)
        close(self, "column_sum on cuda:1", got, x1.double().sum(0), 1e-2)

    def test_zeroed_output_on_another_stream(self):
        """An output the helper makes with zeros (accumulate=True) is filled
        on torch's current stream; an op on another stream waits for the
        fill. The current stream is kept busy so that the fill comes late:
        without the wait, the op's sums would be overwritten with zeros."""
        if not hasattr(torch.cuda, "_sleep"):
            self.skipTest("torch.cuda._sleep is missing")
        x = rnd(4096, 42)
        want = x.double().sum(0)
        side = torch.cuda.Stream()
        torch.cuda.synchronize()
        torch.cuda._sleep(200_000_000)          # about 0.1 s of the current stream
        out = ops.column_sum(x, accumulate=True, stream=side.cuda_stream)
        torch.cuda.synchronize()
        close(self, "column_sum accumulate=True on a side stream", out, want, 1e-2)

    def test_cfc_step(self):
        b, n_in, n_hid = 6, 12, 20
        p = cfc_params(n_in, n_hid)
        x, h, dt = rnd(b, n_in), rnd(b, n_hid), rnd(b, lo=0.25, hi=1.75)
        h_out, u = ops.cfc_forward(x, h, dt, *p)
        g = rnd(b, n_hid)
        want, grads = f64_grads(lambda x, h, w_in, w_rec, bias, tau:
                                ref_cfc_step(x, h, dt.double(), w_in, w_rec, bias, tau),
                                [x, h] + p, g)
        close(self, "cfc h_out", h_out, want)
        r = ops.cfc_backward(x, h, dt, *p, u, g)
        for name, got, w in (("dx", r["dx"], grads[0]), ("dh", r["dh"], grads[1]),
                             ("dw_in", r["dw_in"].sum(0), grads[2]),
                             ("dw_rec", r["dw_rec"].sum(0), grads[3]),
                             ("dbias", r["dbias"].sum(0), grads[4]),
                             ("dtau", r["dtau"].sum(0), grads[5])):
            close(self, "cfc " + name, got, w)

    def test_prepared_calls(self):
        """A prepared call runs the op on the arrays' current contents: the
        same results as the plain wrapper, bitwise, on every call."""
        x = rnd(8192, 42)
        p = ops.prepare(ops.column_sum, x)
        for _ in range(2):
            x.copy_(rnd(8192, 42))
            self.assertTrue(torch.equal(p(), ops.column_sum(x)))
        b, n_in, n_hid = 6, 12, 20
        params = cfc_params(n_in, n_hid)
        x, h, dt = rnd(b, n_in), rnd(b, n_hid), rnd(b, lo=0.25, hi=1.75)
        q = ops.prepare(ops.cfc_forward, x, h, dt, *params)
        for _ in range(2):
            h.copy_(rnd(b, n_hid))
            got, want = q(), ops.cfc_forward(x, h, dt, *params)
            self.assertTrue(torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]))

    def test_fast_path(self):
        """A plain wrapper's call like a recent one (foxjit/_fastcall.py)
        gives the checked call's bits on new tensors of the same shapes,
        and anything its checks look at, changed even behind the same
        tensor object's back, runs them again."""
        from foxjit import _fastcall
        if _fastcall._torch_state()[2] is None:
            self.skipTest("this torch has no usable TensorGuards: the fast path is off")
        _fastcall.forget()
        saved_min = _fastcall._MIN_TENSORS
        _fastcall._MIN_TENSORS = 1        # column_sum's two tensors remembered too
        self.addCleanup(setattr, _fastcall, "_MIN_TENSORS", saved_min)
        self.addCleanup(_fastcall.forget)
        b, n_in, n_hid = 6, 12, 20
        params = cfc_params(n_in, n_hid)
        outs = [torch.empty(b, n_hid, device="cuda") for _ in range(2)]
        for i in range(4):
            x, h, dt = rnd(b, n_in), rnd(b, n_hid), rnd(b, lo=0.25, hi=1.75)
            got = ops.cfc_forward(x, h, dt, *params, h_out=outs[0], u=outs[1])
            want = ops.cfc_forward.__wrapped__(x, h, dt, *params)
            self.assertTrue(torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]))
        self.assertEqual([e.hits for e in ops.cfc_forward.entries()], [3])
        x = rnd(64, 5)
        out = torch.empty(5, device="cuda")
        for _ in range(2):
            ops.column_sum(x, out=out)
        self.assertEqual(ops.column_sum.entries()[0].hits, 1)
        # The same tensor object, now a view of its own memory with another
        # shape (.data = ... moves neither its address nor its version).
        x.data = x.data[:32]
        ops.column_sum(x, out=out)
        close(self, "column_sum after .data", out, x.double().sum(0), 1e-4)
        x.data = x.data.t()
        with self.assertRaisesRegex(ValueError, "contiguous"):
            ops.column_sum(x, out=out)
        y = rnd(64, 5).requires_grad_(True)    # requires_grad: checked again, still fine
        close(self, "column_sum of a leaf", ops.column_sum(y, out=out),
              y.detach().double().sum(0), 1e-4)

    def test_heads(self):
        b, d, e, h = 16, 32, 16, 5
        p = heads_params(d, e, h)
        x = rnd(b, d)
        g = rnd(b, h)
        want, grads = f64_grads(ref_heads, [x] + p, g)
        close(self, "heads logits", ops.heads_forward(x, p), want)
        r = ops.heads_backward(x, p, g)
        close(self, "heads dx", r["dx"], grads[0])
        for i, n in enumerate(ops.HEADS_PARAMS):
            close(self, "heads d" + n, r["d" + n].sum(0), grads[i + 1])
        # the sequence form over [B, S, D]
        xs = rnd(4, 7, d)
        gs = rnd(4, 7, h)
        want, grads = f64_grads(ref_heads, [xs] + p, gs)
        close(self, "heads_seq logits", ops.heads_seq_forward(xs, p), want)
        r = ops.heads_seq_backward(xs, p, gs)
        close(self, "heads_seq dx", r["dx"], grads[0])
        for i, n in enumerate(ops.HEADS_PARAMS):
            close(self, "heads_seq d" + n, r["d" + n], grads[i + 1], 1e-3)

    def test_vsn_and_attention(self):
        b, t, f, d = 4, 9, 10, 24
        x, w, bias = rnd(b, t, f), rnd(f, f, lo=-.3, hi=.3), rnd(f, lo=-.1, hi=.1)
        g = rnd(b, t, f)
        want, grads = f64_grads(ref_vsn, [x, w, bias], g)
        close(self, "vsn y", ops.vsn_forward(x, w, bias), want)
        r = ops.vsn_backward(x, w, bias, g)
        close(self, "vsn dx", r["dx"], grads[0])
        close(self, "vsn dw", r["dw"].sum(0), grads[1])
        close(self, "vsn dbias", r["dbias"].sum(0), grads[2])
        r = ops.vsn_seq_backward(x, w, bias, g)
        close(self, "vsn_seq dx", r["dx"], grads[0])
        close(self, "vsn_seq dw", r["dw"], grads[1])
        close(self, "vsn_seq dbias", r["dbias"], grads[2])
        hs, q = rnd(b, t, d), rnd(d, lo=-.3, hi=.3)
        gp = rnd(b, d)
        want, grads = f64_grads(ref_attn, [hs, q], gp)
        close(self, "attn pooled", ops.attn_pool_forward(hs, q), want)
        r = ops.attn_pool_backward(hs, q, gp)
        close(self, "attn dhs", r["dhs"], grads[0])
        close(self, "attn dq", r["dq"].sum(0), grads[1])

    def test_cfc_seq(self):
        b, k, n_in, n_hid = 5, 12, 8, 16
        p = cfc_params(n_in, n_hid)
        x, dt, h0 = rnd(b, k, n_in), rnd(b, k, lo=0.25, hi=1.75), rnd(b, n_hid)
        g = rnd(b, k, n_hid)
        want, grads = f64_grads(lambda x, h0, *p: ref_cfc_seq(x, dt.double(), *p, h0),
                                [x, h0] + p, g)
        h, u = ops.cfc_seq_forward(x, dt, *p, h_init=h0)
        close(self, "cfc_seq h", h, want)
        r = ops.cfc_seq_backward(x, dt, *p, h, u, g, h_init=h0)
        close(self, "cfc_seq dx", r["dx"], grads[0], 1e-3)
        close(self, "cfc_seq dh_init", r["dh_init"], grads[1], 1e-3)
        for i, n in enumerate(("dw_in", "dw_rec", "dbias", "dtau")):
            close(self, "cfc_seq " + n, r[n], grads[i + 2], 1e-3)

    def test_training_kernels(self):
        z, y = rnd(64, 5, lo=-3, hi=3), (torch.rand(64, 5, device="cuda") < 0.5).float()
        loss, dz = ops.bce_with_logits(z, y)
        zd = z.double().requires_grad_(True)
        ref = torch.nn.functional.binary_cross_entropy_with_logits(zd, y.double())
        (gref,) = torch.autograd.grad(ref, zd)
        close(self, "bce loss", loss, ref.reshape(1), 1e-6)
        close(self, "bce dz", dz, gref, 1e-7)
        n = 1000
        prm, grad = rnd(n), rnd(n)
        m, v = torch.zeros(n, device="cuda"), torch.zeros(n, device="cuda")
        step = torch.ones(1, dtype=torch.int32, device="cuda")
        ref = prm.clone().requires_grad_(True)
        opt = torch.optim.AdamW([ref], lr=1e-2, betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=0.01)
        for _ in range(3):
            ops.adamw(prm, grad, m, v, step, lr=1e-2, weight_decay=0.01)
            ops.increment_step(step)
            ref.grad = grad.clone()
            opt.step()
        self.assertEqual(step.item(), 4)
        close(self, "adamw", prm, ref.detach(), 1e-6, 1e-5)

    def test_allocations_on_another_stream(self):
        """What the helpers allocate for torch inputs (outputs and workspace)
        is recorded on the op's stream when that is not torch's current one
        (so the caching allocator does not reuse it while the op runs), and
        not otherwise."""
        rt = ops.runtime_for(0)
        if not rt.lib.has("bce_with_logits_wide"):
            self.skipTest("the library predates ABI 2.4 (no foxjit_bce_with_logits_wide)")
        n = 100_000
        z, y = rnd(n, lo=-4, hi=4), (torch.rand(n, device="cuda") < 0.5).float()
        want, want_dz = ops.bce_with_logits(z, y, wide=True)
        side = torch.cuda.Stream()
        recorded = []
        original = torch.Tensor.record_stream

        def spy(tensor, stream):
            recorded.append((tensor.dtype, tensor.data_ptr(), stream.cuda_stream))
            return original(tensor, stream)
        torch.Tensor.record_stream = spy
        try:
            torch.cuda.synchronize()
            loss, dz = ops.bce_with_logits(z, y, wide=True, stream=side.cuda_stream)
            side.synchronize()
            # loss and dz, then the workspace
            self.assertEqual([(d, s) for d, _, s in recorded],
                             [(torch.float32, side.cuda_stream), (torch.float32, side.cuda_stream),
                              (torch.uint8, side.cuda_stream)])
            self.assertEqual([p for _, p, _ in recorded[:2]], [loss.data_ptr(), dz.data_ptr()])
            self.assertTrue(torch.equal(loss, want) and torch.equal(dz, want_dz))
            del recorded[:]
            ops.bce_with_logits(z, y, wide=True)  # torch's current stream
            self.assertEqual(recorded, [])
            # Given outputs and workspace are the caller's to order and keep.
            ws = torch.empty(rt.bce_with_logits_workspace_size(n), dtype=torch.uint8,
                             device="cuda")
            ops.bce_with_logits(z, y, loss=loss, dz=dz, workspace=ws, wide=True,
                                stream=side.cuda_stream)
            self.assertEqual(recorded, [])
        finally:
            torch.Tensor.record_stream = original
        torch.cuda.synchronize()

    def test_bce_wide(self):
        """The wide BCE (ABI 2.4): dz bitwise the one-block form's, the loss
        close to float64's and the same bits on every call."""
        rt = ops.runtime_for(0)
        if not rt.lib.has("bce_with_logits_wide"):
            self.skipTest("the library predates ABI 2.4 (no foxjit_bce_with_logits_wide)")
        bce = torch.nn.functional.binary_cross_entropy_with_logits
        # The one-block sizes and their edge, several blocks, the 1024-block cap.
        for n in (1, 5, 2049, 8192, 8193, 10_240, 300_001, 5_000_000):
            z = rnd(n, lo=-8, hi=8)
            y = (torch.rand(n, device="cuda") < 0.5).float()
            y[::7] = 0.25                                   # soft labels too
            zd = z.double().requires_grad_(True)
            ref = bce(zd, y.double())
            (gref,) = torch.autograd.grad(ref, zd)
            loss_n, dz_n = ops.bce_with_logits(z, y, wide=False)
            loss_w, dz_w = ops.bce_with_logits(z, y, wide=True)
            what = "bce n = %d" % n
            self.assertTrue(torch.equal(dz_w, dz_n), what + ": wide dz != one-block dz")
            close(self, what + " wide loss", loss_w, ref.reshape(1), 1e-6, 1e-6)
            close(self, what + " one-block loss", loss_n, ref.reshape(1), 1e-6, 1e-6)
            close(self, what + " wide dz", dz_w, gref, 1e-6 / n, 1e-4)
            # up to 8192 values the wide form is the one-block form
            if n <= 8192:
                self.assertTrue(torch.equal(loss_w, loss_n), what + ": wide != one-block")
            # the default: the wide form past 8192 values, the one-block form
            # (the same bits) up to it; its bits repeat
            loss_d, dz_d = ops.bce_with_logits(z, y)
            self.assertTrue(torch.equal(loss_d, loss_w), what + ": default != wide")
            self.assertTrue(torch.equal(dz_d, dz_w), what)
            # accumulate, without dz
            acc = torch.full((1,), 0.5, device="cuda")
            _, none = ops.bce_with_logits(z, y, loss=acc, accumulate=True, want_dz=False,
                                          wide=True)
            self.assertIsNone(none)
            close(self, what + " accumulated", acc, ref.reshape(1) + 0.5, 1e-6, 1e-6)

        # Through Runtime on raw addresses: a workspace sized for a larger n,
        # poisoned (its contents on entry are ignored), dz in place of z.
        n = 100_000
        z = rnd(n, lo=-4, hi=4)
        y = (torch.rand(n, device="cuda") < 0.3).float()
        _, dz_n = ops.bce_with_logits(z, y, wide=False)
        ref = bce(z.double(), y.double())
        nbytes = rt.bce_with_logits_workspace_size(1 << 24)
        self.assertLessEqual(nbytes, 8192)
        ws = torch.full((nbytes,), 0xFF, dtype=torch.uint8, device="cuda")
        loss = torch.zeros(1, device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        rt.bce_with_logits_wide(z.data_ptr(), y.data_ptr(), n, loss.data_ptr(), False,
                                z.data_ptr(), ws.data_ptr(), nbytes, stream)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(z, dz_n), "dz written over z")
        close(self, "bce wide loss (Runtime)", loss, ref.reshape(1), 1e-6, 1e-6)

        # __cuda_array_interface__ arrays: the wide form only with a workspace.
        z = rnd(50_000, lo=-4, hi=4)
        y = (torch.rand(50_000, device="cuda") < 0.5).float()
        want, want_dz = ops.bce_with_logits(z, y, wide=True)
        loss, dz = torch.zeros(1, device="cuda"), torch.empty_like(z)
        ws = torch.empty(rt.bce_with_logits_workspace_size(50_000), dtype=torch.uint8,
                         device="cuda")
        ops.bce_with_logits(Cai(z), Cai(y), loss=Cai(loss), dz=Cai(dz), workspace=Cai(ws),
                            stream=stream)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(loss, want))
        self.assertTrue(torch.equal(dz, want_dz))

    def test_gae(self):
        """Generalized advantage estimation (ABI 2.5) against the float64
        recurrence within ops/gae/test.c's rounding bound, with and without
        returns (the same advantages' bits), through Runtime on raw
        addresses and on __cuda_array_interface__ arrays."""
        rt = ops.runtime_for(0)
        if not rt.lib.has("gae"):
            self.skipTest("the library predates ABI 2.5 (no foxjit_gae)")
        rt.gae_prepare()
        # (T, N, gamma, lambda, the share of steps that end an episode)
        for T, N, gamma, lam, done_rate in (
                (128, 1024, 0.99, 0.95, 0.02),     # a PPO rollout
                (2048, 64, 0.999, 0.95, 0.001), (1, 1, 0.99, 0.95, 0.5),
                (37, 1000, 1.0, 1.0, 0.0),         # no discount, no episode end: plain sums
                (50, 300, 0.0, 0.9, 0.1),          # gamma 0: A = r - V
                (5, 100_003, 0.9, 0.0, 0.3),       # lambda 0: one-step TD errors
                (300, 129, 0.97, 0.9, 1.0)):       # every step ends an episode
            r, v = rnd(T, N), rnd(T + 1, N, lo=-3, hi=3)
            d = (torch.rand(T, N, device="cuda") < done_rate).float()
            want_adv, want_ret, adv_err, ret_err = ref_gae(r, v, d, gamma, lam)
            what = "gae %dx%d gamma %g lambda %g" % (T, N, gamma, lam)
            adv, ret = ops.gae(r, v, d, gamma=gamma, lambda_=lam)
            within(self, what + " advantages", adv, want_adv, adv_err)
            within(self, what + " returns", ret, want_ret, ret_err)
            adv2, none = ops.gae(r, v, d, gamma=gamma, lambda_=lam, want_returns=False)
            self.assertIsNone(none)
            self.assertTrue(torch.equal(adv2, adv), what + ": without returns, other bits")

        # Through Runtime on raw addresses, returns = 0: nothing written there.
        T, N, gamma, lam = 64, 500, 0.99, 0.95
        r, v = rnd(T, N), rnd(T + 1, N, lo=-3, hi=3)
        d = (torch.rand(T, N, device="cuda") < 0.05).float()
        want, _ = ops.gae(r, v, d, gamma=gamma, lambda_=lam)
        adv = torch.full((T, N), float("nan"), device="cuda")
        ret = torch.full((T, N), float("nan"), device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        rt.gae(r.data_ptr(), v.data_ptr(), d.data_ptr(), T, N, gamma, lam, adv.data_ptr(), 0,
               stream)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(adv, want))
        self.assertTrue(torch.isnan(ret).all().item(), "returns written with returns = 0")
        # __cuda_array_interface__ arrays: the outputs given.
        ret = torch.empty_like(r)
        ops.gae(Cai(r), Cai(v), Cai(d), gamma=gamma, lambda_=lam, advantages=Cai(adv),
                returns=Cai(ret), stream=stream)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(adv, want))
        self.assertTrue(torch.equal(ret, want + v[:T]), "returns != advantages + values")


    def test_precision(self):
        """foxjit.ops.set_precision("tf32") (ABI 2.6): the heads' products in
        TF32, within TF32's error of float64 (heads_seq/test.c: 2^-9 of the
        scale), not float32's bits; "float32" again gives the first bits."""
        rt = ops.runtime_for(0)
        if not rt.lib.has("set_precision"):
            self.skipTest("the library predates ABI 2.6 (no foxjit_set_precision)")
        d, e, h = 128, 64, 5
        p = heads_params(d, e, h)
        xs, gs = rnd(8, 16, d), rnd(8, 16, h)
        want, _ = f64_grads(ref_heads, [xs] + p, gs)
        first = ops.heads_seq_forward(xs, p)
        try:
            ops.set_precision("tf32")
            self.assertEqual((ops.get_precision(), rt.precision()), ("tf32", "tf32"))
            tf = ops.heads_seq_forward(xs, p)
        finally:
            ops.set_precision("float32")
        self.assertEqual(rt.precision(), "float32")
        scale = want.abs().max().item()
        close(self, "heads_seq logits (TF32)", tf, want, 2.0 ** -9 * scale, 2.0 ** -9)
        self.assertFalse(torch.equal(tf, first), "TF32 gave float32's bits")
        self.assertTrue(torch.equal(ops.heads_seq_forward(xs, p), first),
                        "float32 after TF32 is not float32's bits")


@unittest.skipUnless(HAVE_GPU, "needs a GPU")
class Autograd(unittest.TestCase):
    """The custom ops' gradients against float64 autograd of the reference."""

    def setUp(self):
        need_library(self)
        self.ft = ft
        torch.manual_seed(99)

    def grads_match(self, name, fn, ref, inputs, atol=1e-4, rtol=1e-3):
        xs = [t.detach().clone().requires_grad_(True) for t in inputs]
        out = fn(*xs)
        g = rnd(*out.shape)
        got = torch.autograd.grad((out * g).sum(), xs)
        want_out, want = f64_grads(ref, inputs, g)
        close(self, name + " out", out, want_out, atol, rtol)
        for i, (a, b) in enumerate(zip(got, want)):
            close(self, "%s grad %d" % (name, i), a, b, atol, rtol)

    def test_cfc_step(self):
        p = cfc_params(8, 16)
        dt = rnd(4, lo=0.25, hi=1.75)
        self.grads_match("cfc_step",
                         lambda x, h, *p: self.ft.cfc_step(x, h, dt, *p),
                         lambda x, h, *p: ref_cfc_step(x, h, dt.double(), *p),
                         [rnd(4, 8), rnd(4, 16)] + p)

    def test_cfc_seq(self):
        p = cfc_params(8, 16)
        dt = rnd(3, 10, lo=0.25, hi=1.75)
        self.grads_match("cfc_seq",
                         lambda x, h0, *p: self.ft.cfc_seq(x, dt, *p, h_init=h0),
                         lambda x, h0, *p: ref_cfc_seq(x, dt.double(), *p, h0),
                         [rnd(3, 10, 8), rnd(3, 16)] + p, 1e-3)

    def test_heads(self):
        p = heads_params(16, 8, 3)
        self.grads_match("heads", self.ft.heads, ref_heads, [rnd(5, 6, 16)] + p, 1e-3)
        self.grads_match("heads 2-D", self.ft.heads, ref_heads, [rnd(7, 16)] + p, 1e-3)

    def test_heads_many_rows(self):
        """Rows past the sequence ops' limits (steps <= 4096, batch <= 1024 a
        call) go through in several calls: before, 2-D x of more than 4096
        rows was refused by the library. The parameter gradients sum
        thousands of rows: a looser atol."""
        p = heads_params(16, 8, 3)
        for what, x in (("2-D, 2 x 4096 + 300 rows", rnd(2 * 4096 + 300, 16)),
                        ("3-D, 4500 steps", rnd(2, 4500, 16)),
                        ("3-D, 1100 batch rows", rnd(1100, 5, 16)),
                        ("1-D, one row", rnd(16))):
            self.grads_match("heads " + what, self.ft.heads, ref_heads, [x] + p, 1e-2)
        # No rows: empty logits, zero gradients.
        xs = [t.detach().clone().requires_grad_(True) for t in [rnd(0, 16)] + p]
        out = self.ft.heads(*xs)
        self.assertEqual(tuple(out.shape), (0, 3))
        for g in torch.autograd.grad(out.sum(), xs):
            self.assertEqual(g.abs().sum().item() if g.numel() else 0.0, 0.0)

    def test_vsn(self):
        self.grads_match("vsn", self.ft.vsn, ref_vsn,
                         [rnd(3, 7, 6), rnd(6, 6, lo=-.3, hi=.3), rnd(6, lo=-.1, hi=.1)])

    def test_attn_pool(self):
        self.grads_match("attn_pool", self.ft.attn_pool, ref_attn,
                         [rnd(3, 7, 12), rnd(12, lo=-.3, hi=.3)])


@unittest.skipUnless(HAVE_GPU, "needs a GPU")
class Modules(unittest.TestCase):
    """foxjit.modules: each block equals its float64 reference with its own
    parameters, gradients included; a net of them compiles whole
    (torch.compile(fullgraph=True): no graph break) to the eager result."""

    def setUp(self):
        need_library(self)
        torch.manual_seed(5)
        from foxjit import modules
        self.m = modules

    def check(self, name, mod, ref, x, atol=1e-4):
        params = list(mod.parameters())
        out = mod(x)
        g = rnd(*out.shape)
        got = torch.autograd.grad((out * g).sum(), params)
        want_out, want = f64_grads(ref, params, g)
        close(self, name + " out", out, want_out, atol)
        for i, (a, b) in enumerate(zip(got, want)):
            close(self, "%s grad %d" % (name, i), a, b, atol)

    def test_blocks_match_the_reference(self):
        B, K, F, D, E, H = 3, 9, 6, 16, 8, 3
        x, dt = rnd(B, K, F), rnd(B, K, lo=0.25, hi=1.75)
        vsn = self.m.VariableSelection(F).cuda()
        self.check("VariableSelection", vsn, lambda w, b: ref_vsn(x.double(), w, b), x)
        cfc = self.m.CfCSequence(F, D).cuda()
        h0 = torch.zeros(B, D, device="cuda", dtype=torch.float64)
        out = cfc(x, dt)
        g = rnd(*out.shape)
        got = torch.autograd.grad((out * g).sum(), list(cfc.parameters()))
        want_out, want = f64_grads(lambda *p: ref_cfc_seq(x.double(), dt.double(), *p, h0),
                                   list(cfc.parameters()), g)
        close(self, "CfCSequence out", out, want_out, 1e-3)
        for i, (a, b) in enumerate(zip(got, want)):
            close(self, "CfCSequence grad %d" % i, a, b, 1e-3)
        hs = rnd(B, K, D)
        pool = self.m.AttentionPooling(D).cuda()
        self.check("AttentionPooling", pool, lambda q: ref_attn(hs.double(), q), hs)
        heads = self.m.GRNHeads(D, E, H).cuda()
        self.check("GRNHeads", heads, lambda *p: ref_heads(hs.double(), *p), hs, 1e-3)

    def test_a_net_of_them_compiles_whole(self):
        B, K, F, D, E, H = 4, 8, 6, 16, 8, 3
        m = self.m

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.vsn, self.cfc = m.VariableSelection(F), m.CfCSequence(F, D)
                self.pool, self.heads = m.AttentionPooling(D), m.GRNHeads(D, E, H)

            def forward(self, x, dt):
                hs = self.cfc(self.vsn(x), dt)
                return self.heads(hs).sum() + self.heads(self.pool(hs)).sum()

        net = Net().cuda()
        x, dt = rnd(B, K, F), rnd(B, K, lo=0.25, hi=1.75)
        eager = net(x, dt)
        eager_grads = torch.autograd.grad(eager, list(net.parameters()))
        compiled = torch.compile(net, fullgraph=True)    # a graph break raises
        got = compiled(x, dt)
        got_grads = torch.autograd.grad(got, list(net.parameters()))
        close(self, "compiled", got, eager, 1e-5)
        for i, (a, b) in enumerate(zip(got_grads, eager_grads)):
            close(self, "compiled grad %d" % i, a, b, 1e-5)


# ---- the reference model (kernels.md "The reference perception model") ----------

class Model(torch.nn.Module if torch is not None else object):
    """VSN -> CfC over K steps -> attention pooling -> GRN heads on every
    step's state and on the pooled state; loss = BCE over the per-step
    logits + BCE over the sequence logits. fox=True runs fox-jit's custom
    ops, else plain torch (the float32 peer)."""

    def __init__(self, f, d, e, h, fox, gen):
        super().__init__()
        g = torch.Generator(device="cuda").manual_seed(gen)
        P = torch.nn.Parameter
        self.vsn_w = P(rnd(f, f, lo=-1 / math.sqrt(f), hi=1 / math.sqrt(f), gen=g))
        self.vsn_b = P(torch.zeros(f, device="cuda"))
        s = 0.5 * math.sqrt(3.0 / f)
        self.w_in = P(rnd(d, f, lo=-s, hi=s, gen=g))
        self.w_rec = P(rnd(d, d, lo=-1 / math.sqrt(d), hi=1 / math.sqrt(d), gen=g))
        self.bias = P(torch.zeros(d, device="cuda"))
        self.tau = P(torch.exp(rnd(d, lo=0, hi=math.log(16.0), gen=g)))
        self.q = P(rnd(d, lo=-1 / math.sqrt(d), hi=1 / math.sqrt(d), gen=g))
        # Plain attributes, not a ParameterList: torch.compile (fullgraph)
        # cannot unpack a ParameterList with *.
        self.head_names = []
        for i, t in enumerate(heads_params(d, e, h, gen=g)):
            self.register_parameter("head%d" % i, P(t))
            self.head_names.append("head%d" % i)
        self.fox = fox

    def forward(self, x, dt, labels):
        if self.fox:
            y = ft.vsn(x, self.vsn_w, self.vsn_b)
            hs = ft.cfc_seq(y, dt, self.w_in, self.w_rec, self.bias, self.tau)
            pooled = ft.attn_pool(hs, self.q)
            hp = [getattr(self, n) for n in self.head_names]
            z_steps = ft.heads(hs, *hp)
            z_seq = ft.heads(pooled, *hp)
        else:
            y = ref_vsn(x, self.vsn_w, self.vsn_b)
            h0 = x.new_zeros(x.shape[0], self.w_rec.shape[0])
            hs = ref_cfc_seq(y, dt, self.w_in, self.w_rec, self.bias, self.tau, h0)
            pooled = ref_attn(hs, self.q)
            hp = [getattr(self, n) for n in self.head_names]
            z_steps = ref_heads(hs, *hp)
            z_seq = ref_heads(pooled, *hp)
        bce = torch.nn.functional.binary_cross_entropy_with_logits
        return bce(z_steps, labels[:, :-1]) + bce(z_seq, labels[:, -1])


@unittest.skipUnless(HAVE_GPU, "needs a GPU")
class Training(unittest.TestCase):
    def setUp(self):
        need_library(self)

    def batch(self, b, k, f, h, seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(b, k, f, generator=g, device="cuda")
        dt = 0.25 + 1.5 * torch.rand(b, k, generator=g, device="cuda")
        # a learnable target: the sign of a running sum of the first variable
        run = torch.cumsum(x[:, :, 0], dim=1)
        lab = (run > 0).float().unsqueeze(-1).expand(b, k, h).contiguous()
        labels = torch.cat([lab, lab[:, -1:]], dim=1)          # [B, K+1, H]
        return x, dt, labels

    def test_short_training_loop(self):
        b, k, f, d, e, h = 16, 24, 8, 32, 16, 3
        fox = Model(f, d, e, h, fox=True, gen=7)
        peer = Model(f, d, e, h, fox=False, gen=7)
        opt_f = torch.optim.Adam(fox.parameters(), lr=3e-3)
        opt_p = torch.optim.Adam(peer.parameters(), lr=3e-3)
        losses_f, losses_p = [], []
        for step in range(60):
            x, dt, labels = self.batch(b, k, f, h, step)
            for model, opt, losses in ((fox, opt_f, losses_f), (peer, opt_p, losses_p)):
                opt.zero_grad()
                loss = model(x, dt, labels)
                loss.backward()
                opt.step()
                losses.append(loss.item())
        # Same model, same data, float32 both: the trajectories stay close,
        # and training lowers the loss.
        for i in range(5):
            self.assertAlmostEqual(losses_f[i], losses_p[i], delta=2e-3 * max(1, losses_p[i]),
                                   msg="step %d: fox %.6f torch %.6f" % (i, losses_f[i],
                                                                         losses_p[i]))
        first, last = sum(losses_f[:5]) / 5, sum(losses_f[-5:]) / 5
        print("\ntraining loop: loss %.4f -> %.4f (torch peer %.4f -> %.4f)"
              % (first, last, sum(losses_p[:5]) / 5, sum(losses_p[-5:]) / 5))
        self.assertLess(last, first * 0.9)

    def test_torch_compile(self):
        b, k, f, d, e, h = 8, 16, 8, 32, 16, 3
        model = Model(f, d, e, h, fox=True, gen=3)
        x, dt, labels = self.batch(b, k, f, h, 0)
        eager = model(x, dt, labels)
        eager_grads = torch.autograd.grad(eager, list(model.parameters()))
        compiled = torch.compile(model, fullgraph=True)
        got = compiled(x, dt, labels)
        got_grads = torch.autograd.grad(got, list(model.parameters()))
        close(self, "compiled loss", got, eager, 1e-5)
        for i, (a, c) in enumerate(zip(got_grads, eager_grads)):
            close(self, "compiled grad %d" % i, a, c, 1e-5)

    def test_cuda_graph_of_forward_and_backward(self):
        self.capture_and_replay(Model(8, 32, 16, 3, fox=True, gen=3))

    def test_cuda_graph_after_compiling_the_same_module(self):
        """The capture of a module whose compiled form ran (forward and
        backward, on the default stream) first in the process: the case
        that once failed with cudaErrorStreamCaptureImplicit
        (tools/torch_capture_probe.py, bindings/python/README.md)."""
        model = Model(8, 32, 16, 3, fox=True, gen=3)
        x, dt, labels = self.batch(8, 16, 8, 3, 2)
        torch.compile(model, fullgraph=True)(x, dt, labels).backward()
        torch.cuda.synchronize()
        self.capture_and_replay(model)

    def capture_and_replay(self, model):
        """Captures model's forward and backward in one CUDA graph, replays
        it on another batch and compares with eager."""
        b, k, f, h = 8, 16, 8, 3
        x, dt, labels = self.batch(b, k, f, h, 0)
        # The whole-network capture pattern of torch's CUDA graphs notes:
        # warm-up on a side stream (kernels compile on first use and are
        # refused during capture), gradients left in .grad by backward() and
        # set to None before capture.
        params = list(model.parameters())
        static = [t.clone() for t in (x, dt, labels)]
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                model.zero_grad(set_to_none=True)
                model(*static).backward()
        torch.cuda.current_stream().wait_stream(s)
        model.zero_grad(set_to_none=True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            g_loss = model(*static)
            g_loss.backward()
        x2, dt2, labels2 = self.batch(b, k, f, h, 1)
        for dst, src in zip(static, (x2, dt2, labels2)):
            dst.copy_(src)
        graph.replay()
        torch.cuda.synchronize()
        g_grads = [p.grad.clone() for p in params]
        want = model(x2, dt2, labels2)
        want_grads = torch.autograd.grad(want, params)
        close(self, "graph loss", g_loss, want, 1e-6)
        for i, (a, c) in enumerate(zip(g_grads, want_grads)):
            close(self, "graph grad %d" % i, a, c, 1e-6)

    def test_cuda_graph_of_forward(self):
        """The forward alone captures and replays bitwise."""
        b, k, f, d, e, h = 8, 16, 8, 32, 16, 3
        model = Model(f, d, e, h, fox=True, gen=3)
        x, dt, labels = self.batch(b, k, f, h, 0)
        static = [t.clone() for t in (x, dt, labels)]
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(s):
            for _ in range(2):
                model(*static)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            g_loss = model(*static)
        x2, dt2, labels2 = self.batch(b, k, f, h, 1)
        for dst, src in zip(static, (x2, dt2, labels2)):
            dst.copy_(src)
        graph.replay()
        torch.cuda.synchronize()
        with torch.no_grad():
            want = model(x2, dt2, labels2)
        self.assertEqual(g_loss.item(), want.item())


if __name__ == "__main__":
    unittest.main()
