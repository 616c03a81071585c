#!/usr/bin/env python3
"""torch_peer.py: the PyTorch peer of fox-train.

fox-train (tools/fox-train/) trains the reference perception model of
kernels.md ("The reference perception model and its K-loop") with fox-jit's
kernels. This script implements the same model independently in PyTorch,
twice: the literal formulation (the math as kernels.md writes it, autograd
through every step; the float64 reference) and the strong formulation (what
a PyTorch engineer writes for speed: whole-sequence GEMMs, the heads
reassociated into one batched matmul, a hand-written CfC recurrence
backward; see "The strong formulation" below). It uses them for:

  check   correctness. Runs `fox-train --dump-step` (one forward + loss +
          backward on the first training batch at the initial parameters, no
          update) for both of fox-train's K-loop paths (the default
          whole-sequence ops and --per-step; with --fox-tf32 also
          --precision tf32), reads the dump, recomputes loss and the 17
          parameter gradients with autograd of the literal formulation in
          float64 and compares. Next to fox-train's error it shows PyTorch's
          own against the same reference: the literal and the strong
          formulation in float32 and, on a GPU, the strong one in TF32; and
          it requires fox-train's worst tensor error to be within
          --torch-factor (2) of PyTorch's own float32 worst. Exit status 1 if
          any tensor is outside a bound. About a minute (mostly fox-train's
          first kernel compile when its cache is cold).
  bench   speed. Runs `fox-train --bench` on the batch sizes first (alone on
          the machine), then for each batch size (K = 64) times one whole
          training step (batch copy, forward, BCE, backward, AdamW, loss
          copy) in PyTorch, in every --modes entry and precision (float32,
          and TF32 tensor-core products): each formulation eager and with
          the whole step captured in one CUDA graph; the literal one under
          torch.compile(mode="reduce-overhead"); the strong one under
          torch.compile's default mode and "max-autotune-no-cudagraphs",
          each timed as launched and with the compiled step captured in one
          CUDA graph. Each batch size lives in its own worker process:
          timings run one worker at a time; compiles run in all workers at
          once (max-autotune one at a time: it times its kernel choices on
          the GPU); two timings never share the GPU or the CPU. Prints one
          table per batch size with the ratio of every mode to fox-train's
          graph step from the same run. Minutes (see --help).
  all     check, then bench.
  selftest  the script's own test, no fox-train needed (CPU or GPU): writes
          a dump in fox-train's format from the float32 PyTorch model, checks
          that it passes, that a perturbed gradient fails (also one within
          the absolute bounds but 3x PyTorch's float32 error) and that
          malformed dumps are refused with a clear message; checks the
          strong formulation's CfC backward against finite differences and
          the whole strong formulation against autograd of the literal one
          in float64 (bound 1e-10 relative). Seconds.

The dump format (tools/fox-train/dump.h), little-endian:
  8 bytes "FJSTEP1\\n"; int32[6] batch, k, f, d, e, h; then float32 arrays
  back to back: the 17 parameter tensors (order below), x [B,K,F], dt [B,K],
  labels [K+1,B,H] (K per-bar blocks of [B,H], then the sequence labels),
  loss [1], the 17 gradients d loss / d parameter (same order and shapes).

Standard library and torch only. Run from the repository root, e.g.
  python3 tools/torch_peer.py all --fox-train build/tools/fox-train/fox-train
"""

import argparse
import gc
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

# Every mode needs torch, but --help and argument errors do not: without it
# main() stops after parsing the arguments, saying so. (Spawned bench
# workers import this module again and need torch at the top level.)
try:
    import torch
    import torch.nn.functional as tnf
    TORCH_MISSING = None
except (ImportError, OSError) as e:   # OSError: a torch whose CUDA libraries are missing
    torch = tnf = None
    TORCH_MISSING = e

# ---------------------------------------------------------------------------
# The model's parameters (tools/fox-train/params.h order)
# ---------------------------------------------------------------------------

PARAM_NAMES = [
    "cfc.w_in", "cfc.w_rec", "cfc.bias", "cfc.tau",
    "heads.w1", "heads.b1", "heads.w2", "heads.b2", "heads.w_gate", "heads.b_gate",
    "heads.w_main", "heads.b_main", "heads.w_skip", "heads.b_skip",
    "vsn.w", "vsn.bias", "attn.q",
]

# AdamW weight decay applies to these; biases and cfc.tau get none.
DECAYED = {"cfc.w_in", "cfc.w_rec", "heads.w1", "heads.w2", "heads.w_gate",
           "heads.w_main", "heads.w_skip", "vsn.w", "attn.q"}

# fox-train's AdamW hyper-parameters (its defaults; kernels.md section 7).
ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)

DEFAULT_FOX_TRAIN = "build/tools/fox-train/fox-train"
F_VARS, D_HID, E_HID, H_HEADS = 40, 128, 64, 5   # the trainer's dims (kernels.md)


def param_shapes(f, d, e, h):
    """Shapes of the 17 tensors, in PARAM_NAMES order."""
    return [(d, f), (d, d), (d,), (d,),
            (h, e, d), (h, e), (h, e, e), (h, e), (h, e), (h,),
            (h, e), (h,), (h, d), (h,),
            (f, f), (f,), (d,)]


def numel(shape):
    return math.prod(shape)


def set_precision(prec):
    """fp32: float32 products in full float32; tf32: TF32 tensor-core
    products, as torch.set_float32_matmul_precision("high") (=
    torch.backends.cuda.matmul.allow_tf32 = True) gives them. Only the
    set_float32_matmul_precision call is used for matmuls: newer torch refuses
    a mix of it and the allow_tf32 setter. Returns the flags as read back."""
    tf32 = prec == "tf32"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.set_float32_matmul_precision("high" if tf32 else "highest")
        torch.backends.cudnn.allow_tf32 = tf32
        return {"precision": prec,
                "float32_matmul_precision": torch.get_float32_matmul_precision(),
                "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
                "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32)}


# ---------------------------------------------------------------------------
# The model (kernels.md sections 3-7), written independently of fox-jit
# ---------------------------------------------------------------------------

def heads_forward(p, rows):
    """Multi-horizon GRN heads on rows [N, D] -> logits [N, H] (kernels.md 4).

    Per head j: a = W1[j] x + b1[j]; eta = ELU(a); c = W2[j] eta + b2[j];
    g = sigmoid(w_gate[j].c + b_gate[j]); m = w_main[j].c + b_main[j];
    s = w_skip[j].x + b_skip[j]; logit_j = s + g * m."""
    h, e, d = p["heads.w1"].shape
    # All H heads' first layer in one GEMM: [N, D] x [D, H*E].
    a = torch.addmm(p["heads.b1"].reshape(h * e), rows, p["heads.w1"].reshape(h * e, d).t())
    eta = tnf.elu(a.view(-1, h, e))                                   # [N, H, E]
    # c[n, j, :] = W2[j] @ eta[n, j, :]  (a batched GEMM over the heads)
    c = torch.einsum("nje,jfe->njf", eta, p["heads.w2"]) + p["heads.b2"]
    g = torch.sigmoid((c * p["heads.w_gate"]).sum(-1) + p["heads.b_gate"])   # [N, H]
    m = (c * p["heads.w_main"]).sum(-1) + p["heads.b_main"]                  # [N, H]
    s = torch.addmm(p["heads.b_skip"], rows, p["heads.w_skip"].t())          # [N, H]
    return s + g * m


def model_loss(p, x, dt, labels):
    """loss = mean BCE over the K*B*H per-bar logits + mean BCE over the B*H
    sequence logits, for x [B,K,F], dt [B,K], labels [K+1,B,H]; p maps the
    PARAM_NAMES to tensors."""
    batch, k, _ = x.shape
    d = p["cfc.w_rec"].shape[0]
    # Variable selection (kernels.md 5): softmax over F (torch subtracts the max).
    w = torch.softmax(torch.matmul(x, p["vsn.w"].t()) + p["vsn.bias"], dim=-1)
    y = w * x                                                          # [B, K, F]
    # CfC (kernels.md 3). What does not feed the recurrence is batched over
    # all bars: the input projection and the decays.
    xin = torch.matmul(y, p["cfc.w_in"].t()) + p["cfc.bias"]           # [B, K, D]
    decay = torch.exp(-dt.unsqueeze(-1) / p["cfc.tau"])                # [B, K, D]
    w_rec_t = p["cfc.w_rec"].t()
    states = []
    h = None                                                           # h_{-1} = 0
    for t in range(k):
        pre = xin[:, t] if h is None else torch.addmm(xin[:, t], h, w_rec_t)
        u = torch.tanh(pre)
        # h_t = decay * h_{t-1} + (1 - decay) * u  ==  lerp(u, h_{t-1}, decay)
        h = (1.0 - decay[:, t]) * u if h is None else torch.lerp(u, h, decay[:, t])
        states.append(h)
    hs = torch.stack(states, dim=1)                                    # [B, K, D]
    # Attention pooling (kernels.md 6).
    alpha = torch.softmax(torch.matmul(hs, p["attn.q"]) / math.sqrt(d), dim=1)   # [B, K]
    pooled = torch.bmm(alpha.unsqueeze(1), hs).squeeze(1)              # [B, D]
    # The same heads on every bar's state and on the pooled state: one call.
    z = heads_forward(p, torch.cat([hs.reshape(batch * k, d), pooled], dim=0))
    nh = z.shape[1]
    z_bars = z[: batch * k].view(batch, k, nh).transpose(0, 1)         # [K, B, H]
    z_seq = z[batch * k:]                                              # [B, H]
    return (tnf.binary_cross_entropy_with_logits(z_bars, labels[:k])
            + tnf.binary_cross_entropy_with_logits(z_seq, labels[k]))


# Without torch, object stands in: main() stops before any model is made.
class PerceptionModel(torch.nn.Module if torch is not None else object):
    """The 17 tensors as nn.Parameters (named with '_' for '.'); forward
    returns the loss. A module, so torch.compile treats the parameters as
    static inputs of its CUDA graphs."""

    def __init__(self, tensors):
        super().__init__()
        for name, t in zip(PARAM_NAMES, tensors):
            self.register_parameter(name.replace(".", "_"),
                                    torch.nn.Parameter(t.detach().clone()))

    def tensors(self):
        return [getattr(self, n.replace(".", "_")) for n in PARAM_NAMES]

    def forward(self, x, dt, labels):
        return model_loss(dict(zip(PARAM_NAMES, self.tensors())), x, dt, labels)


def make_adamw(model, fused, capturable=False):
    """torch.optim.AdamW with fox-train's settings: decay on DECAYED only."""
    decay, no_decay = [], []
    for name, prm in zip(PARAM_NAMES, model.tensors()):
        (decay if name in DECAYED else no_decay).append(prm)
    groups = [{"params": decay, "weight_decay": ADAMW["weight_decay"]},
              {"params": no_decay, "weight_decay": 0.0}]
    kw = dict(lr=ADAMW["lr"], betas=ADAMW["betas"], eps=ADAMW["eps"], capturable=capturable)
    if fused:
        kw["fused"] = True
    else:
        kw["foreach"] = True
    return torch.optim.AdamW(groups, **kw)


def loss_and_grads(tensors, x, dt, labels, dtype, device, formulation="literal",
                   precision="fp32"):
    """Loss and the 17 gradients of the model at these values, in dtype, by
    the formulation (literal or strong) with float32 products in precision
    (fp32 or tf32: only float32 products on a GPU differ). Leaves the
    precision at fp32."""
    model = FORMULATIONS[formulation]([t.to(device=device, dtype=dtype) for t in tensors])
    cast = [v.to(device=device, dtype=dtype) for v in (x, dt, labels)]
    set_precision(precision)
    try:
        loss = model(*cast)
        loss.backward()
    finally:
        set_precision("fp32")
    grads = [prm.grad.detach().double().cpu() for prm in model.tensors()]
    return loss.detach().double().cpu(), grads


def init_like_fox(f, d, e, h, gen):
    """Initial parameters with fox-train's distributions (params.h; not its
    RNG stream): matrices U(+-1/sqrt(fan_in)), cfc.w_in U(+-0.5 sqrt(3F)),
    tau log-uniform in [1, 16], biases 0."""
    def uni(shape, a):
        return (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * a
    out = []
    for name, shape in zip(PARAM_NAMES, param_shapes(f, d, e, h)):
        if name == "cfc.w_in":
            t = uni(shape, 0.5 * math.sqrt(3.0 * f))
        elif name in ("cfc.w_rec", "attn.q", "heads.w1", "heads.w_skip"):
            t = uni(shape, 1 / math.sqrt(d))
        elif name in ("heads.w2", "heads.w_gate", "heads.w_main"):
            t = uni(shape, 1 / math.sqrt(e))
        elif name == "vsn.w":
            t = uni(shape, 1 / math.sqrt(f))
        elif name == "cfc.tau":
            t = torch.exp(torch.rand(shape, generator=gen, dtype=torch.float64) * math.log(16.0))
        else:
            t = torch.zeros(shape, dtype=torch.float64)
        out.append(t.float())
    return out


def random_batch(batch, k, f, h, gen):
    """x ~ N(0,1), dt ~ U[0.25, 1.75], labels in {0, 1} (fox-train's data ranges)."""
    x = torch.randn((batch, k, f), generator=gen)
    dt = 0.25 + 1.5 * torch.rand((batch, k), generator=gen)
    labels = (torch.rand((k + 1, batch, h), generator=gen) < 0.5).float()
    return x, dt, labels


# ---------------------------------------------------------------------------
# The strong formulation: the same model as a PyTorch engineer would write it
# for speed (same parameters, same loss up to rounding)
# ---------------------------------------------------------------------------
#
# What differs from model_loss above (the literal formulation, kept as the
# float64 reference):
#   - time-major layout [K, B, .] from the start (one transpose of x), so a
#     bar's rows are contiguous and the bar logits come out in the labels'
#     [K, B, H] order;
#   - every product that does not feed the recurrence is one GEMM over all
#     K*B rows: the VSN logits, the CfC input projection of all K steps, the
#     heads' first layer with the skip weights as H extra columns;
#   - the heads reassociated (kernels.md section 8): c = W2 eta + b2 is never
#     formed, the gate and main logits come from eta through q = W2^T w_gate
#     and p = W2^T w_main, one batched matmul [H, N, E] x [H, E, 2];
#   - the CfC recurrence is a torch.autograd.Function whose backward runs the
#     reverse recurrence itself (three kernels a step, into preallocated
#     buffers) and takes dW_rec as one GEMM over all steps, instead of
#     autograd through K small steps; dxin and ddecay go back to autograd,
#     which gives dW_in, dbias and dtau as whole-sequence ops;
#   - the bars and the pooled row go through the heads in two calls sharing
#     the prepared weights (no [K*B + B, D] concatenation of the states).
# The optimizer (AdamW, fused) and the capture are chosen by the bench modes.


class CfCRecurrence(torch.autograd.Function if torch is not None else object):
    """hs = CfCRecurrence.apply(xin, decay, w_rec), all [K, B, D] time-major
    except w_rec [D, D]:

        u_t = tanh(xin_t + h_{t-1} W_rec^T),  h_t = lerp(u_t, h_{t-1}, decay_t),
        h_{-1} = 0

    (h_t = decay_t h_{t-1} + (1 - decay_t) u_t). Backward, carrying
    G_t = dL/dh_t (the outside gradient plus the recurrence's):

        d_pre_t   = G_t (1 - decay_t)(1 - u_t^2)
        G_{t-1}   = dhs_{t-1} + G_t decay_t + d_pre_t W_rec
        dxin      = d_pre                          (all t)
        ddecay_t  = G_t (h_{t-1} - u_t)            (all t at once)
        dW_rec    = sum_{t>=1} d_pre_t^T h_{t-1}   (one GEMM over K-1 steps)"""

    @staticmethod
    def forward(ctx, xin, decay, w_rec):
        k = xin.shape[0]
        w_rec_t = w_rec.t()
        u = torch.empty_like(xin)
        h = torch.empty_like(xin)
        torch.tanh(xin[0], out=u[0])
        torch.mul(u[0], 1.0 - decay[0], out=h[0])
        for t in range(1, k):
            torch.addmm(xin[t], h[t - 1], w_rec_t, out=u[t])
            u[t].tanh_()
            torch.lerp(u[t], h[t - 1], decay[t], out=h[t])
        ctx.save_for_backward(u, h, decay, w_rec)
        return h

    @staticmethod
    def backward(ctx, dhs):
        u, h, decay, w_rec = ctx.saved_tensors
        k, _, d = u.shape
        coef = (1.0 - decay) * (1.0 - u * u)          # dh_t / dpre_t, every step at once
        g = torch.empty_like(u)
        d_pre = torch.empty_like(u)
        g[k - 1].copy_(dhs[k - 1])
        for t in range(k - 1, 0, -1):
            torch.mul(g[t], coef[t], out=d_pre[t])
            torch.addcmul(dhs[t - 1], g[t], decay[t], out=g[t - 1])
            g[t - 1].addmm_(d_pre[t], w_rec)
        torch.mul(g[0], coef[0], out=d_pre[0])
        # h_{t-1} - u_t, with h_{-1} = 0.
        h_prev_minus_u = torch.empty_like(u)
        torch.neg(u[0], out=h_prev_minus_u[0])
        torch.sub(h[:-1], u[1:], out=h_prev_minus_u[1:])
        d_decay = g * h_prev_minus_u
        d_w_rec = d_pre[1:].reshape(-1, d).t() @ h[:-1].reshape(-1, d)
        return d_pre, d_decay, d_w_rec


def strong_heads_weights(p):
    """What every heads call of a step shares, from the ten heads tensors:
    w_first [H*E + H, D] and b_first (W1 with w_skip as H more rows), pq
    [H, E, 2] (q = W2^T w_gate, p = W2^T w_main) and bpq [H, 2] (w_gate.b2 +
    b_gate, w_main.b2 + b_main)."""
    h, e, d = p["heads.w1"].shape
    w_first = torch.cat([p["heads.w1"].reshape(h * e, d), p["heads.w_skip"]])
    b_first = torch.cat([p["heads.b1"].reshape(h * e), p["heads.b_skip"]])
    vecs = torch.stack([p["heads.w_gate"], p["heads.w_main"]], dim=-1)      # [H, E, 2]
    pq = torch.bmm(p["heads.w2"].transpose(1, 2), vecs)                      # [H, E, 2]
    bpq = (torch.bmm(p["heads.b2"].unsqueeze(1), vecs).squeeze(1)
           + torch.stack([p["heads.b_gate"], p["heads.b_main"]], dim=-1))    # [H, 2]
    return w_first, b_first, pq, bpq


def strong_heads(rows, weights):
    """Logits [N, H] of rows [N, D]: one GEMM for the first layer and the
    skip, ELU, one batched matmul for the gate and main logits."""
    w_first, b_first, pq, bpq = weights
    h, e, _ = pq.shape
    n = rows.shape[0]
    a = torch.addmm(b_first, rows, w_first.t())                              # [N, H*E + H]
    eta = tnf.elu(a[:, : h * e]).view(n, h, e)
    gm = torch.baddbmm(bpq.unsqueeze(1), eta.transpose(0, 1), pq)            # [H, N, 2]
    return a[:, h * e:] + (torch.sigmoid(gm[..., 0]) * gm[..., 1]).t()


def strong_loss(p, x, dt, labels):
    """model_loss's value, as the strong formulation computes it."""
    batch, k, f = x.shape
    d = p["cfc.w_rec"].shape[0]
    nh = labels.shape[-1]
    xt = x.transpose(0, 1).reshape(k * batch, f)                             # rows (t, b)
    w = torch.softmax(torch.addmm(p["vsn.bias"], xt, p["vsn.w"].t()), dim=-1)
    xin = torch.addmm(p["cfc.bias"], w * xt, p["cfc.w_in"].t()).view(k, batch, d)
    decay = torch.exp(-dt.t().unsqueeze(-1) / p["cfc.tau"])                  # [K, B, D]
    hs = CfCRecurrence.apply(xin, decay, p["cfc.w_rec"])                     # [K, B, D]
    alpha = torch.softmax(torch.matmul(hs, p["attn.q"]) / math.sqrt(d), dim=0)   # [K, B]
    pooled = torch.bmm(alpha.t().unsqueeze(1), hs.transpose(0, 1)).squeeze(1)    # [B, D]
    weights = strong_heads_weights(p)
    z_bars = strong_heads(hs.view(k * batch, d), weights)                    # [K*B, H]
    z_seq = strong_heads(pooled, weights)                                    # [B, H]
    return (tnf.binary_cross_entropy_with_logits(z_bars, labels[:k].reshape(k * batch, nh))
            + tnf.binary_cross_entropy_with_logits(z_seq, labels[k]))


class StrongModel(PerceptionModel):
    """PerceptionModel with the strong formulation's forward."""

    def forward(self, x, dt, labels):
        return strong_loss(dict(zip(PARAM_NAMES, self.tensors())), x, dt, labels)


FORMULATIONS = {"literal": PerceptionModel, "strong": StrongModel}


# ---------------------------------------------------------------------------
# fox-train's --dump-step file
# ---------------------------------------------------------------------------

MAGIC = b"FJSTEP1\n"
HEADER = struct.Struct("<8s6i")


class DumpError(Exception):
    pass


def dump_fields(dims):
    """(field name, shape) of every float32 array of a dump, in file order."""
    batch, k, f, d, e, h = dims
    shapes = param_shapes(f, d, e, h)
    fields = [("param " + n, s) for n, s in zip(PARAM_NAMES, shapes)]
    fields += [("x", (batch, k, f)), ("dt", (batch, k)), ("labels", (k + 1, batch, h)),
               ("loss", (1,))]
    fields += [("grad " + n, s) for n, s in zip(PARAM_NAMES, shapes)]
    return fields


def read_dump(path, expect_batch=None, expect_k=None):
    """Reads and validates a dump. Returns a dict: dims, params (17 float32
    tensors), x, dt, labels, loss (float), grads (17). Raises DumpError
    naming the field at fault."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as err:
        raise DumpError(f"{path}: cannot read: {err}") from err
    if len(data) < HEADER.size:
        raise DumpError(f"{path}: {len(data)} bytes, shorter than the {HEADER.size}-byte header "
                        "(magic + int32[6] dims)")
    magic, *dims = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise DumpError(f"{path}: magic is {magic!r}, expected {MAGIC!r} (not a fox-train "
                        "--dump-step file, or another version)")
    for name, v in zip(("batch", "k", "f", "d", "e", "h"), dims):
        if not 0 < v <= 1 << 20:
            raise DumpError(f"{path}: header field {name} = {v} is out of range (1 .. 2^20)")
    if expect_batch is not None and dims[0] != expect_batch:
        raise DumpError(f"{path}: header batch = {dims[0]}, but fox-train was asked for "
                        f"--batch {expect_batch}")
    if expect_k is not None and dims[1] != expect_k:
        raise DumpError(f"{path}: header k = {dims[1]}, but fox-train was asked for --k {expect_k}")
    fields = dump_fields(dims)
    expected = HEADER.size + 4 * sum(numel(s) for _, s in fields)
    arrays, off = {}, HEADER.size
    for name, shape in fields:
        n = 4 * numel(shape)
        if off + n > len(data):
            raise DumpError(
                f"{path}: truncated in field '{name}' {list(shape)}: it needs bytes "
                f"{off} .. {off + n}, the file has {len(data)} (expected {expected} bytes for "
                f"dims batch,k,f,d,e,h = {dims})")
        t = torch.frombuffer(bytearray(data[off:off + n]), dtype=torch.float32).reshape(shape)
        if sys.byteorder != "little":
            t = t.view(torch.int32).byteswap().view(torch.float32)   # pragma: no cover
        if not torch.isfinite(t).all():
            bad = int((~torch.isfinite(t)).sum())
            raise DumpError(f"{path}: field '{name}' has {bad} non-finite value(s) (NaN/Inf)")
        arrays[name] = t
        off += n
    if off != len(data):
        raise DumpError(f"{path}: {len(data) - off} unexpected trailing bytes: expected "
                        f"{expected} bytes for dims batch,k,f,d,e,h = {dims}, the file has "
                        f"{len(data)} (a field was written with another size)")
    # Sanity of the inputs: the model is defined for these ranges.
    if not (arrays["dt"] > 0).all():
        raise DumpError(f"{path}: field 'dt' has values <= 0")
    if not (arrays["param cfc.tau"] > 0).all():
        raise DumpError(f"{path}: field 'param cfc.tau' has values <= 0")
    lab = arrays["labels"]
    if not ((lab >= 0) & (lab <= 1)).all():
        raise DumpError(f"{path}: field 'labels' has values outside [0, 1]")
    return {
        "path": path, "dims": tuple(dims),
        "params": [arrays["param " + n] for n in PARAM_NAMES],
        "x": arrays["x"], "dt": arrays["dt"], "labels": arrays["labels"],
        "loss": float(arrays["loss"][0]),
        "grads": [arrays["grad " + n] for n in PARAM_NAMES],
    }


def write_dump(path, dims, params, x, dt, labels, loss, grads):
    """Writes a dump in fox-train's format (used by selftest)."""
    with open(path, "wb") as fh:
        fh.write(HEADER.pack(MAGIC, *dims))
        for t in list(params) + [x, dt, labels, torch.tensor([float(loss)])] + list(grads):
            flat = t.detach().to(device="cpu", dtype=torch.float32).reshape(-1)
            fh.write(struct.pack(f"<{flat.numel()}f", *flat.tolist()))


# ---------------------------------------------------------------------------
# check: fox-train's gradients against float64 autograd
# ---------------------------------------------------------------------------

TINY = 1e-30


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def times(v):
    """A ratio as '1.23x', or '-'."""
    return f"{v:.2f}x" if isinstance(v, (int, float)) else "-"


def ratio(num, den):
    """num / den when both are positive numbers, else None."""
    ok = all(isinstance(v, (int, float)) and v > 0 for v in (num, den))
    return num / den if ok else None


def compare(ref, got, rtol, atol):
    """Error of one tensor against its float64 reference:
      err   max |got - ref| / max |ref|  (the check's main figure)
      bad   elements with |got - ref| > rtol |ref| + atol max|ref|
      rel   max |got - ref| / |ref| over elements with |ref| >= 1e-3 max|ref|"""
    scale = float(ref.abs().max()) if ref.numel() else 0.0
    diff = (got.double() - ref).abs()
    err = float(diff.max()) / (scale + TINY)
    bad = int((diff > rtol * ref.abs() + atol * scale).sum())
    big = ref.abs() >= 1e-3 * scale
    rel = float((diff[big] / ref.abs()[big]).max()) if bool(big.any()) else 0.0
    return {"scale": scale, "err": err, "bad": bad, "rel": rel}


def worst_of(rows, key):
    """(tensor, err) of the largest err in rows[i][key], or (None, None)."""
    rows = [r for r in rows if r.get(key) is not None]
    if not rows:
        return None, None
    r = max(rows, key=lambda r: r[key]["err"])
    return r["tensor"], r[key]["err"]


def check_dump(dump, device, a, label, fox_precision="fp32"):
    """Compares one dump with float64 autograd of the literal formulation
    (the reference), next to PyTorch's own errors against it: the literal
    and the strong formulation in float32 and, on a GPU, the strong one in
    TF32. Prints a table; returns a JSON-able dict with "pass". A dump made
    with fox-train --precision tf32 is not held to the float32 bounds: its
    error is stated next to PyTorch TF32's."""
    args = (dump["params"], dump["x"], dump["dt"], dump["labels"])
    t0 = time.perf_counter()
    loss64, g64 = loss_and_grads(*args, torch.float64, device)
    loss32, g32 = loss_and_grads(*args, torch.float32, device)
    sloss64, s64 = loss_and_grads(*args, torch.float64, device, "strong")
    _, s32 = loss_and_grads(*args, torch.float32, device, "strong")
    tf32 = None
    if device.type == "cuda":
        _, tf32 = loss_and_grads(*args, torch.float32, device, "strong", "tf32")
    secs = time.perf_counter() - t0
    loss64 = float(loss64)
    loss_err = abs(dump["loss"] - loss64) / (abs(loss64) + TINY)
    loss_err32 = abs(float(loss32) - loss64) / (abs(loss64) + TINY)
    b, k, f, d, e, h = dump["dims"]
    float32_bounds = fox_precision == "fp32"
    print(f"\n== {label}: B = {b}, K = {k}, F = {f}, D = {d}, E = {e}, H = {h}  "
          f"(reference: float64 autograd of the literal formulation on {device}, {secs:.1f} s "
          f"with PyTorch's own)")
    loss_ok = loss_err <= a.loss_tol or not float32_bounds
    print(f"loss: fox-train {dump['loss']:.9g}, float64 {loss64:.12g}: rel err {loss_err:.2e} "
          f"(torch float32 {loss_err32:.2e}; bound {a.loss_tol:.0e}"
          f"{'' if float32_bounds else ', not applied to TF32'}) {'ok' if loss_ok else 'FAIL'}")
    print("err: max|g - g_f64| / max|g_f64|; rel: max|g - g_f64| / |g_f64| over the elements "
          "with |g_f64| >= 1e-3 max|g_f64|; PyTorch's own: literal float32, strong float32, "
          "strong TF32 (GPU only)")
    hdr = (f"{'tensor':14} {'shape':>9} {'max|g|':>9} | {'fox err':>8} {'fox rel':>8} "
           f"{'bad':>4} | {'lit32 err':>9} {'rel':>8} | {'str32 err':>9} {'rel':>8} | "
           f"{'tf32 err':>8} {'rel':>8} | verdict")
    print(hdr)
    print("-" * len(hdr))
    rows, ok_all = [], loss_ok
    for i, name in enumerate(PARAM_NAMES):
        ref = g64[i]
        cf = compare(ref, dump["grads"][i], a.rtol, a.atol)
        ct = compare(ref, g32[i], a.rtol, a.atol)
        cs = compare(ref, s32[i], a.rtol, a.atol)
        cx = compare(ref, tf32[i], a.rtol, a.atol) if tf32 is not None else None
        c64 = compare(ref, s64[i], a.rtol, a.atol)
        ok = (cf["err"] <= a.tol and cf["bad"] == 0) or not float32_bounds
        ok_all &= ok
        shape = "x".join(str(s) for s in ref.shape)
        tcell = (f"{cx['err']:8.2e} {cx['rel']:8.2e}" if cx else f"{'-':>8} {'-':>8}")
        print(f"{name:14} {shape:>9} {cf['scale']:9.3e} | {cf['err']:8.2e} {cf['rel']:8.2e} "
              f"{cf['bad']:4d} | {ct['err']:9.2e} {ct['rel']:8.2e} | {cs['err']:9.2e} "
              f"{cs['rel']:8.2e} | {tcell} | "
              f"{('ok' if ok else 'FAIL') if float32_bounds else 'stated'}")
        rows.append({"tensor": name, "shape": list(ref.shape), "fox": cf, "torch_f32": ct,
                     "strong_f32": cs, "strong_tf32": cx, "strong_f64": c64, "pass": ok})
    worst = worst_of(rows, "fox")
    w32 = worst_of(rows, "torch_f32")
    ws32 = worst_of(rows, "strong_f32")
    wtf = worst_of(rows, "strong_tf32")
    w64 = worst_of(rows, "strong_f64")
    print(f"worst gradient: fox-train {worst[1]:.2e} ({worst[0]}); PyTorch float32 literal "
          f"{w32[1]:.2e} ({w32[0]}), strong {ws32[1]:.2e} ({ws32[0]})"
          + (f"; PyTorch TF32 strong {wtf[1]:.2e} ({wtf[0]})" if wtf[0] else ""))
    vs32, vss, vstf = (ratio(worst[1], w32[1]), ratio(worst[1], ws32[1]),
                       ratio(worst[1], wtf[1]) if wtf[0] else None)
    torch_ok = True
    if float32_bounds:
        torch_ok = a.torch_factor <= 0 or (vs32 is not None and vs32 <= a.torch_factor)
        ok_all &= torch_ok
        bound = (f"bound {a.torch_factor:g}x: {'ok' if torch_ok else 'FAIL'}"
                 if a.torch_factor > 0 else "no bound (--torch-factor 0)")
        print(f"fox-train / PyTorch's own float32 (literal): {times(vs32)} ({bound}); "
              f"against the strong float32: {times(vss)}")
    else:
        print(f"fox-train {fox_precision} / PyTorch TF32 (strong): "
              f"{times(vstf) if vstf else '- (PyTorch TF32 needs a GPU)'} (stated, no bound)")
    print(f"strong formulation in float64 against the literal one: worst {w64[1]:.2e} "
          f"({w64[0]}); loss {abs(float(sloss64) - loss64) / (abs(loss64) + TINY):.2e}")
    print(f"{label}: {'PASS' if ok_all else 'FAIL'}")
    return {"label": label, "dims": list(dump["dims"]), "fox_precision": fox_precision,
            "loss_fox": dump["loss"], "loss_f64": loss64, "loss_f32": float(loss32),
            "loss_rel_err": loss_err, "loss_rel_err_f32": loss_err32, "tensors": rows,
            "worst": worst[0], "worst_err": worst[1],
            "worst_torch_f32": w32[1], "worst_strong_f32": ws32[1],
            "worst_strong_tf32": wtf[1], "worst_strong_f64": w64[1],
            "fox_vs_torch_f32": vs32, "fox_vs_strong_f32": vss, "fox_vs_strong_tf32": vstf,
            "torch_factor_pass": bool(torch_ok), "pass": bool(ok_all)}


def fox_common_args(a):
    """Flags passed through to every fox-train run."""
    out = []
    if a.library:
        out += ["--library", a.library]
    if a.cache_dir:
        out += ["--cache-dir", a.cache_dir]
    if a.device is not None:
        out += ["--device", str(a.device)]
    return out


def require_fox_train(path):
    if not os.path.exists(path):
        sys.exit(f"torch_peer: fox-train not found at '{path}'. Build it (meson setup build "
                 "-Dtoolkit=/usr/local/cuda && ninja -C build) or pass --fox-train PATH "
                 "(run from the repository root for the default path).")
    if not os.access(path, os.X_OK) or os.path.isdir(path):
        sys.exit(f"torch_peer: '{path}' is not an executable file (--fox-train)")


FOX_EXIT = {1: "failed while running", 2: "bad usage (is this fox-train too old for the flag?)",
            3: "no CUDA driver or GPU", 4: "libfoxjit.so not loadable (--library?)",
            5: "NCCL not loadable"}


def run_fox(cmd, what, capture=True):
    """Runs fox-train; exits with its output on failure."""
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE if capture else None,
                           stderr=subprocess.PIPE if capture else None, text=True)
    except OSError as err:
        sys.exit(f"torch_peer: cannot run fox-train ({what}): {err}")
    if r.returncode != 0:
        if capture:
            sys.stderr.write((r.stdout or "") + (r.stderr or ""))
        sys.exit(f"torch_peer: fox-train {what} exited {r.returncode} "
                 f"({FOX_EXIT.get(r.returncode, 'unexpected status')})")
    if capture and r.stderr:
        sys.stderr.write(r.stderr)
    return time.perf_counter() - t0


def check_device(a):
    if a.cpu or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda", a.device or 0)


def mode_check(a, report):
    device = check_device(a)
    set_precision("fp32")
    if a.dump:
        return check_dumps(a, report, device,
                           [(f"dump {p}", p, None, None, "fp32") for p in a.dump])
    require_fox_train(a.fox_train)
    if a.keep_dumps:
        os.makedirs(a.keep_dumps, exist_ok=True)
        return check_dumps(a, report, device, fox_dumps(a, a.keep_dumps))
    with tempfile.TemporaryDirectory(prefix="torch_peer_") as tmp:
        return check_dumps(a, report, device, fox_dumps(a, tmp))


def fox_dumps(a, out_dir):
    """Runs fox-train --dump-step for every --batch value on both paths (and,
    with --fox-tf32, the sequence path with --precision tf32); returns
    (label, file, expected batch, expected k, fox-train's precision) per
    dump."""
    jobs = []
    variants = [("sequence", [], "fp32"), ("per-step", ["--per-step"], "fp32")]
    if a.fox_tf32:
        variants.append(("sequence tf32", ["--precision", "tf32"], "tf32"))
    for b in a.batch:
        for path_name, flags, prec in variants:
            file = os.path.join(out_dir, f"step_b{b}_k{a.k}_{path_name.replace(' ', '_')}.bin")
            cmd = [a.fox_train, "--dump-step", file, "--batch", str(b), "--k", str(a.k)]
            if a.seed is not None:
                cmd += ["--seed", str(a.seed)]
            cmd += flags + fox_common_args(a)
            secs = run_fox(cmd, f"--dump-step (B = {b}, {path_name} path)")
            print(f"  ({secs:.1f} s)")
            label = f"fox-train {path_name.replace(' tf32', '')} path" + \
                (", --precision tf32" if prec == "tf32" else "")
            jobs.append((label, file, b, a.k, prec))
    return jobs


def check_dumps(a, report, device, jobs):
    """Checks every dump; prints the tables and the verdict; returns pass."""
    results, ok = [], True
    by_batch = {}
    for label, path, b, k, prec in jobs:
        try:
            dump = read_dump(path, b, k)
        except DumpError as err:
            sys.exit(f"torch_peer: bad dump: {err}")
        r = check_dump(dump, device, a, label, prec)
        results.append(r)
        ok &= r["pass"]
        if prec == "fp32":
            by_batch.setdefault(dump["dims"], []).append((label, dump))
    # The two fox-train paths against each other (same batch, same parameters).
    for dims, pair in by_batch.items():
        if len(pair) == 2:
            (l1, d1), (l2, d2) = pair
            gap = max(float((g1.double() - g2.double()).abs().max())
                      / (float(g1.abs().max()) + TINY) for g1, g2 in zip(d1["grads"], d2["grads"]))
            print(f"\nB = {dims[0]}: {l1} vs {l2}: largest gradient gap {gap:.2e} of the "
                  f"tensor's max; loss gap {abs(d1['loss'] - d2['loss']):.2e}")
    factor = (f"; fox-train's worst within {a.torch_factor:g}x PyTorch's own float32 worst"
              if a.torch_factor > 0 else "")
    print(f"\ncheck: {'PASS' if ok else 'FAIL'} ({len(results)} dump(s); bound: max|g_fox - "
          f"g_f64| <= {a.tol:.0e} max|g_f64| and every element within {a.rtol:.0e} relative "
          f"or {a.atol:.0e} max|g_f64| absolute; loss within {a.loss_tol:.0e} relative"
          f"{factor}; --precision tf32 dumps: stated only)")
    report["check"] = {"device": str(device), "tol": a.tol, "rtol": a.rtol, "atol": a.atol,
                       "loss_tol": a.loss_tol, "torch_factor": a.torch_factor,
                       "results": results, "pass": bool(ok)}
    return ok


# ---------------------------------------------------------------------------
# bench: one worker process per batch size
# ---------------------------------------------------------------------------

# name -> (formulation, how the step runs). Compiled modes compile the model's
# forward (and its AOT-autograd backward); the fused AdamW step stays eager.
BENCH_MODES = {
    "literal-eager": ("literal", "eager"),
    "literal-graph": ("literal", "graph"),
    "literal-compile": ("literal", "reduce-overhead"),
    "strong-eager": ("strong", "eager"),
    "strong-graph": ("strong", "graph"),
    "strong-compile": ("strong", "default"),
    "strong-autotune": ("strong", "max-autotune-no-cudagraphs"),
}
COMPILED = {"reduce-overhead", "default", "max-autotune-no-cudagraphs"}
# torch.compile modes whose compiled step is then also captured in one CUDA graph.
CAPTURED_AFTER_COMPILE = {"default", "max-autotune-no-cudagraphs"}
PRECISIONS = ("fp32", "tf32")
# fox-jit and fox-train say float32 where PyTorch's users say fp32: both spell it.
PRECISION_ALIASES = {"float32": "fp32"}
# The slowest compiles are opt-in: the literal formulation's (the reference,
# minutes per precision) and max-autotune (minutes per batch size).
DEFAULT_MODES = [m for m in BENCH_MODES if m not in ("literal-compile", "strong-autotune")]

# Row labels of the summary, per (mode, variant): "ms" is the mode's own
# figure, "graph_ms" a compiled mode's step captured in one CUDA graph.
ROW_LABELS = {
    ("literal-eager", "ms"): "literal, eager",
    ("literal-graph", "ms"): "literal, CUDA graph",
    ("literal-compile", "ms"): "literal, compile reduce-overhead",
    ("strong-eager", "ms"): "strong, eager",
    ("strong-graph", "ms"): "strong, CUDA graph",
    ("strong-compile", "ms"): "strong, compile default",
    ("strong-compile", "graph_ms"): "strong, compile default, CUDA graph",
    ("strong-autotune", "ms"): "strong, max-autotune-no-cudagraphs",
    ("strong-autotune", "graph_ms"): "strong, max-autotune, CUDA graph",
}


def parse_modes(text):
    """--modes: comma-separated MODE or MODE:PRECISION entries, or 'all'.
    Returns [(mode, [precisions])] in the order given, or raises
    argparse.ArgumentTypeError."""
    out = []
    for item in (v.strip() for v in text.split(",")):
        if not item:
            continue
        name, _, prec = item.partition(":")
        prec = PRECISION_ALIASES.get(prec, prec)
        names = list(BENCH_MODES) if name == "all" else \
            list(DEFAULT_MODES) if name == "default" else [name]
        for n in names:
            if n not in BENCH_MODES:
                raise argparse.ArgumentTypeError(
                    f"unknown mode '{n}' in --modes {text!r}; the modes are "
                    f"{', '.join(BENCH_MODES)} (or all, default), each optionally "
                    f":fp32 or :tf32")
            if prec and prec not in PRECISIONS:
                raise argparse.ArgumentTypeError(
                    f"unknown precision '{prec}' in --modes entry {item!r}: fp32 (or "
                    f"float32) or tf32")
            out.append((n, [prec] if prec else None))
    if not out:
        raise argparse.ArgumentTypeError(f"no mode in --modes {text!r}")
    return out


def bench_stages(modes, precisions):
    """The (mode, precision) pairs to time, without repeats, in --modes order."""
    out = []
    for mode, precs in modes:
        for p in precs or precisions:
            if (mode, p) not in out:
                out.append((mode, p))
    return out


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(step, warmup, reps, steps_per_rep, device):
    """Median ms per step over reps repetitions of steps_per_rep steps, timed
    with CUDA events on the current stream (after warmup steps); on the CPU
    (a dry run of the script) with the host clock."""
    for i in range(warmup):
        step(i)
    sync(device)
    times = []
    for _ in range(reps):
        if device.type == "cuda":
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for i in range(steps_per_rep):
                step(i)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / steps_per_rep)
        else:
            t0 = time.perf_counter()
            for i in range(steps_per_rep):
                step(i)
            times.append((time.perf_counter() - t0) * 1e3 / steps_per_rep)
    return statistics.median(times), times


class BenchSetup:
    """Everything one batch size needs: initial parameters, a pool of random
    batches on the device (each step copies one into static input tensors, as
    fox-train copies its batch) and a host float for the loss copy (pinned on
    a GPU)."""

    POOL = 4

    def __init__(self, batch, k, device, seed):
        gen = torch.Generator().manual_seed(seed)
        self.device = device
        self.init = [t.to(device) for t in init_like_fox(F_VARS, D_HID, E_HID, H_HEADS, gen)]
        pool = [random_batch(batch, k, F_VARS, H_HEADS, gen) for _ in range(self.POOL)]
        self.pool = [[t.to(device) for t in b] for b in pool]
        self.static = [t.clone() for t in self.pool[0]]     # x, dt, labels
        self.loss_host = torch.zeros((), dtype=torch.float32)
        if device.type == "cuda":
            self.loss_host = self.loss_host.pin_memory()

    def feed(self, i):
        for dst, src in zip(self.static, self.pool[i % self.POOL]):
            dst.copy_(src, non_blocking=True)


def step_body(loss_fn, opt, static):
    """Forward, BCE, backward, AdamW on the static batch; the loss tensor.
    The gradients must be None on entry (zero_grad(set_to_none=True)):
    backward then writes them, so a captured body overwrites them on replay."""
    loss = loss_fn(*static)
    loss.backward()
    opt.step()
    return loss


def launched_step(s, loss_fn, opt):
    """One step per call, every kernel launched from Python."""
    def step(i):
        s.feed(i)
        opt.zero_grad(set_to_none=True)
        loss = step_body(loss_fn, opt, s.static)
        s.loss_host.copy_(loss.detach(), non_blocking=True)
    return step


def captured_step(s, loss_fn, opt):
    """The whole step (forward, BCE, backward, AdamW) in one CUDA graph, the
    PyTorch docs' whole-network recipe: warm-up on a side stream (AdamW state,
    autograd, cuBLAS handles, a compiled step's first runs), then capture;
    each call copies the batch in, replays, copies the loss out. opt must be
    capturable."""
    if s.device.type != "cuda":
        raise RuntimeError("a CUDA graph needs a CUDA device")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            step_body(loss_fn, opt, s.static)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)        # backward allocates .grad from the graph's pool
    with torch.cuda.graph(graph):
        static_loss = step_body(loss_fn, opt, s.static)
    torch.cuda.synchronize()

    def step(i):
        s.feed(i)
        graph.replay()
        s.loss_host.copy_(static_loss, non_blocking=True)
    step.graph = graph
    return step


def new_model_and_adamw(s, formulation, fused, capturable):
    model = FORMULATIONS[formulation](s.init)
    return model, make_adamw(model, fused, capturable=capturable)


def compiled_step(s, formulation, how, fused):
    """torch.compile of the model in mode `how`; returns (launched step, the
    compiled model, the optimizer). reduce-overhead: Inductor's code replayed
    as CUDA graphs by cudagraph trees (each step marks its start); default and
    max-autotune-no-cudagraphs: Inductor's kernels launched from Python, and
    captured_step can then capture the whole step."""
    model = FORMULATIONS[formulation](s.init)
    opt = make_adamw(model, fused, capturable=how != "reduce-overhead"
                     and s.device.type == "cuda")
    cmodel = torch.compile(model, mode=None if how == "default" else how, dynamic=False)
    if how == "reduce-overhead":
        def loss_fn(*static):
            torch.compiler.cudagraph_mark_step_begin()
            return cmodel(*static)
    else:
        loss_fn = cmodel
    return launched_step(s, loss_fn, opt), loss_fn, opt


def say(msg):
    """A progress line on stderr (the tables go to stdout)."""
    print(msg, file=sys.stderr, flush=True)


class Worker:
    """The state of one batch size's worker process (bench_worker)."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.res = {"batch": cfg["batch"], "k": cfg["k"]}
        self.setup = None
        self.compiled = None      # (mode, precision, launched step, loss_fn, opt)

    def do_setup(self):
        torch.set_num_threads(1)
        # AdamW(capturable=True) warns when it steps uncaptured: the warm-ups
        # of every graph mode and the launched timing of compiled modes.
        warnings.filterwarnings("ignore", message=".*capturable=True.*")
        dev = self.cfg["device"]
        device = torch.device("cpu") if dev == "cpu" else torch.device("cuda", dev)
        if device.type == "cuda":
            torch.cuda.set_device(device)
            name = torch.cuda.get_device_name(device)
        else:
            name = "CPU (dry run)"
        self.setup = BenchSetup(self.cfg["batch"], self.cfg["k"], device, self.cfg["seed"])
        return {"device": name}

    def timing(self):
        return self.cfg["warmup"], self.cfg["reps"], self.cfg["steps"], self.setup.device

    def do_time(self, mode, prec):
        """Times one (mode, precision); needs the GPU and the CPU to itself.
        Eager and graph modes build their step here; a compiled mode times
        the step do_compile made, then (default, max-autotune) captures it in
        one CUDA graph and times that too."""
        out = {"flags": set_precision(prec)}
        formulation, how = BENCH_MODES[mode]
        fused = self.cfg["fused"]
        try:
            if how == "eager":
                model, opt = new_model_and_adamw(self.setup, formulation, fused, False)
                step = launched_step(self.setup, model, opt)
            elif how == "graph":
                model, opt = new_model_and_adamw(self.setup, formulation, fused, True)
                step = captured_step(self.setup, model, opt)
            else:
                if self.compiled is None or self.compiled[:2] != (mode, prec):
                    return out          # its compile failed: already recorded
                step = self.compiled[2]
            out["ms"], out["samples"] = time_steps(step, *self.timing())
        except Exception:
            out["error"] = traceback.format_exc(limit=8)
            return out
        if how in CAPTURED_AFTER_COMPILE and self.setup.device.type == "cuda":
            try:
                _, _, _, loss_fn, opt = self.compiled
                step = captured_step(self.setup, loss_fn, opt)
                out["graph_ms"], out["graph_samples"] = time_steps(step, *self.timing())
            except Exception:
                out["graph_error"] = traceback.format_exc(limit=8)
        sync(self.setup.device)
        return out

    def do_compile(self, mode, prec):
        """Compiles one (mode, precision): the first step (forward and
        backward compiled; max-autotune benchmarks its kernel choices on the
        GPU) is the compile time; three more let every lazily built part
        (cudagraph trees, AdamW state) settle."""
        set_precision(prec)
        formulation, how = BENCH_MODES[mode]
        out = {}
        say(f"torch B = {self.cfg['batch']}: compiling {mode} ({how}, {prec})...")
        try:
            step, loss_fn, opt = compiled_step(self.setup, formulation, how, self.cfg["fused"])
            t0 = time.perf_counter()
            step(0)
            sync(self.setup.device)
            out["compile_s"] = time.perf_counter() - t0
            for i in range(3):
                step(i)
            sync(self.setup.device)
            self.compiled = (mode, prec, step, loss_fn, opt)
        except Exception:
            out["compile_error"] = traceback.format_exc(limit=8)
            self.compiled = None
        return out

    def do_release(self):
        """Drops the compiled step and Dynamo's caches before the next compile."""
        self.compiled = None
        torch._dynamo.reset()
        gc.collect()
        if self.setup is not None and self.setup.device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        return {}


def bench_worker(conn, cfg):
    """One batch size, in its own (spawned) process. Obeys the parent's
    commands (("setup",), ("time", mode, precision), ("compile", mode,
    precision), ("release",), ("exit",)) one at a time and answers each with
    ("ok", figures) or ("error", traceback). The parent decides what runs in
    parallel (set-up, some compiles) and what runs alone (every timing)."""
    w = Worker(cfg)
    try:
        while True:
            cmd = conn.recv()
            if cmd[0] == "exit":
                break
            try:
                out = getattr(w, "do_" + cmd[0])(*cmd[1:])
                conn.send(("ok", out))
            except Exception:
                conn.send(("error", traceback.format_exc()))
                break
    except (EOFError, KeyboardInterrupt):
        pass
    finally:
        conn.close()


def stage_key(mode, prec):
    return f"{mode}:{prec}"


class WorkerPool:
    """The parent's side: one spawned bench_worker per batch size."""

    PROGRESS_S = 30      # a progress line on stderr this often while waiting

    def __init__(self, a, device):
        ctx = multiprocessing.get_context("spawn")
        self.workers = []
        for b in a.batches:
            parent, child = ctx.Pipe()
            cfg = {"batch": b, "k": a.k, "device": device, "seed": 1234 + b,
                   "fused": a.adamw == "fused",
                   "warmup": a.warmup, "reps": a.reps, "steps": a.steps}
            # Not a daemon: Inductor starts its own compile-worker processes.
            proc = ctx.Process(target=bench_worker, args=(child, cfg), name=f"torch_peer_B{b}")
            proc.start()
            child.close()
            self.workers.append({"batch": b, "proc": proc, "conn": parent, "alive": True,
                                 "res": {"batch": b, "k": a.k, "modes": {}}})

    def _fail(self, w, why):
        w["alive"] = False
        w["res"]["error"] = why
        print(f"torch B = {w['batch']}: worker failed:\n{why}", flush=True)
        if w["proc"].is_alive():
            w["proc"].kill()

    def _merge(self, w, cmd, val):
        if len(cmd) == 3:
            w["res"]["modes"].setdefault(stage_key(cmd[1], cmd[2]), {}).update(val)
        else:
            w["res"].update(val)

    def _collect(self, ws, cmd, timeout):
        """Waits for one answer from each of ws; merges it into their results."""
        what = " ".join(cmd)
        deadline = time.monotonic() + timeout
        pending = list(ws)
        t0 = time.perf_counter()
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                for w in pending:
                    self._fail(w, f"no answer to '{what}' after {timeout:.0f} s")
                return
            ready = multiprocessing.connection.wait(
                [w["conn"] for w in pending] + [w["proc"].sentinel for w in pending],
                timeout=min(left, self.PROGRESS_S))
            if not ready:
                say(f"torch_peer: {what}: still running for B = "
                    f"{','.join(str(w['batch']) for w in pending)} "
                    f"({time.perf_counter() - t0:.0f} s)")
                continue
            for w in list(pending):
                if w["conn"] in ready:
                    try:
                        kind, val = w["conn"].recv()
                    except EOFError:
                        w["proc"].join(5)
                        kind, val = "error", (f"worker exited (status {w['proc'].exitcode}) "
                                              f"during '{what}'")
                elif w["proc"].sentinel in ready:
                    w["proc"].join(5)
                    kind, val = "error", (f"worker exited (status {w['proc'].exitcode}) "
                                          f"during '{what}'")
                else:
                    continue
                pending.remove(w)
                if kind != "ok":
                    self._fail(w, val)
                    continue
                self._merge(w, cmd, val)
                if "compile_s" in val:
                    say(f"torch B = {w['batch']}: {cmd[1]} ({cmd[2]}) compiled in "
                        f"{val['compile_s']:.0f} s ({time.perf_counter() - t0:.0f} s elapsed)")
                for err in ("compile_error", "error", "graph_error"):
                    if err in val:
                        print(f"torch B = {w['batch']}: {what}: {err.replace('_', ' ')}:\n"
                              f"{val[err]}", flush=True)

    def alive(self):
        return [w for w in self.workers if w["alive"]]

    def parallel(self, cmd, timeout):
        """Every live worker runs cmd at the same time."""
        ws = self.alive()
        for w in ws:
            w["conn"].send(cmd)
        self._collect(ws, cmd, timeout)

    def serial(self, cmd, timeout, after=None):
        """Live workers run cmd one after the other (never two at once)."""
        for w in self.alive():
            w["conn"].send(cmd)
            self._collect([w], cmd, timeout)
            if after and w["alive"]:
                after(w["res"], cmd)

    def close(self):
        for w in self.workers:
            try:
                if w["alive"]:
                    w["conn"].send(("exit",))
            except OSError:
                pass
        for w in self.workers:
            w["proc"].join(30)
            if w["proc"].is_alive():
                w["proc"].kill()
                w["proc"].join()
            w["conn"].close()

    def results(self):
        return [w["res"] for w in self.workers]


def run_torch_bench(a, report, device):
    """The PyTorch figures for every batch size: set-up (parallel); the eager
    and graph modes, timed one worker at a time; then per compiled (mode,
    precision): the compile (in parallel, except max-autotune, whose kernel
    choices are timed on the GPU and must not share it), the timings (one
    worker at a time), the release. Each stage's figures are printed, and
    written to --json, as soon as they exist."""
    n = len(a.batches)
    stages = a.stages
    compiled = [st for st in stages if BENCH_MODES[st[0]][1] in COMPILED]
    parallel_compile = n > 1 and any(BENCH_MODES[m][1] != "max-autotune-no-cudagraphs"
                                     for m, _ in compiled)
    # Share the cores among parallel Inductor compiles (workers inherit this).
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS",
                          str(max(1, (os.cpu_count() or 1) // (n if parallel_compile else 1))))
    pool = WorkerPool(a, device)
    report["bench"]["torch"] = pool.results()
    try:
        print(f"torch: {n} worker process(es), B = {','.join(map(str, a.batches))}; "
              f"{', '.join(stage_key(*st) for st in stages)}", flush=True)
        pool.parallel(("setup",), a.time_timeout)
        for st in stages:
            if st not in compiled:
                pool.serial(("time",) + st, a.time_timeout, after=print_torch_row)
                write_report(a, report)
        for mode, prec in compiled:
            if not pool.alive():
                break
            how = BENCH_MODES[mode][1]
            alone = how == "max-autotune-no-cudagraphs"
            many = len(pool.alive()) > 1
            say(f"torch: torch.compile(mode={how!r}) of the {BENCH_MODES[mode][0]} formulation, "
                f"{prec}, B = {','.join(str(w['batch']) for w in pool.alive())}"
                f"{(' one at a time' if alone else ' in parallel') if many else ''} (cold: "
                f"{'4-8 min per batch size' if alone else 'minutes'})...")
            if alone:
                pool.serial(("compile", mode, prec), a.compile_timeout)
            else:
                pool.parallel(("compile", mode, prec), a.compile_timeout)
            pool.serial(("time", mode, prec), a.time_timeout, after=print_torch_row)
            pool.parallel(("release",), a.time_timeout)
            write_report(a, report)
    finally:
        pool.close()
    return pool.results()


def print_torch_row(r, cmd):
    key = stage_key(cmd[1], cmd[2])
    m = r.get("modes", {}).get(key, {})
    parts = [f"{fmt(m.get('ms'), '.3f')} ms"]
    if "graph_ms" in m:
        parts.append(f"in one CUDA graph {m['graph_ms']:.3f} ms")
    if "compile_s" in m:
        parts.append(f"compile {m['compile_s']:.0f} s")
    print(f"torch B = {r['batch']}: {key}: " + ", ".join(parts), flush=True)


def run_fox_bench(a, precision=None):
    """fox-train --bench on the same batch sizes (with --precision when
    given); returns its JSON."""
    if a.fox_json and precision is None:
        try:
            with open(a.fox_json) as fh:
                return json.load(fh)
        except (OSError, ValueError) as err:
            sys.exit(f"torch_peer: cannot read --fox-json {a.fox_json}: {err}")
    fd, tmp = tempfile.mkstemp(prefix="torch_peer_fox_", suffix=".json")
    os.close(fd)
    try:
        cmd = [a.fox_train, "--bench", "--bench-batches", ",".join(map(str, a.batches)),
               "--k", str(a.k), "--json", tmp] + fox_common_args(a)
        if precision:
            cmd += ["--precision", precision]
        run_fox(cmd, "--bench" + (f" --precision {precision}" if precision else ""),
                capture=False)
        try:
            with open(tmp) as fh:
                return json.load(fh)
        except (OSError, ValueError) as err:
            sys.exit(f"torch_peer: fox-train --bench wrote no readable JSON ({tmp}): {err}")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def fox_rows_by_batch(fox, k):
    """{batch: row} of fox-train's train_step rows at this K. Where a batch
    has rows for several paths, the default (whole-sequence) path's row."""
    out = {}
    for row in (fox or {}).get("rows", []):
        if row.get("group", "train_step") != "train_step" or row.get("k", k) != k:
            continue
        b = row.get("batch")
        if b not in out or (out[b].get("path", "sequence") != "sequence"
                            and row.get("path", "sequence") == "sequence"):
            out[b] = row
    return out


def summary_rows(torch_row, precisions):
    """(label, mode, variant, {precision: (ms, compile_s)}) of one batch size,
    in BENCH_MODES order, for the (mode, variant) pairs that have a figure or
    an error."""
    modes = torch_row.get("modes", {})
    out = []
    for (mode, variant), label in ROW_LABELS.items():
        cells, seen = {}, False
        for p in precisions:
            m = modes.get(stage_key(mode, p))
            if m is not None:
                cells[p] = (m.get(variant), m.get("compile_s"))
                # A compiled step not captured (on the CPU) has no graph row.
                seen |= variant == "ms" or "graph_ms" in m or "graph_error" in m
        if seen:
            out.append((label, mode, variant, cells))
    return out


def print_summary(a, torch_rows, fox, fox_tf32):
    """One table per batch size; returns their rows for the JSON."""
    fox_by = fox_rows_by_batch(fox, a.k)
    fox_tf32_by = fox_rows_by_batch(fox_tf32, a.k) if fox_tf32 else {}
    torch_by = {r["batch"]: r for r in torch_rows}
    precisions = [p for p in PRECISIONS if any(p == st[1] for st in a.stages)]
    dev = next((r["device"] for r in torch_rows if r.get("device")), None) or \
        (fox or {}).get("device", "?")
    paths = sorted({str(r["path"]) for r in (fox or {}).get("rows", []) if "path" in r})
    cols = [("mode", 37)]
    for p in precisions:
        cols += [(f"{p} ms", 9), ("vs fox", 8)]
    cols += [("compile s" if len(precisions) == 1 else "/".join(precisions) + " compile s", 20)]
    line = " ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(cols))
    print("\n" + "=" * len(line))
    print(f"one training step, K = {a.k}, {dev}; median ms per step; 'vs fox' = PyTorch ms / "
          f"fox-train graph ms (> 1: fox-train faster)"
          + (f"; fox-train path: {', '.join(paths)}" if paths else ""))
    print("fp32: float32 products (set_float32_matmul_precision('highest')); tf32: TF32 "
          "tensor-core products ('high')"
          + ("; tf32 ratios against fox-train --precision tf32" if fox_tf32 else
             "; every ratio against fox-train's default (float32-accurate) step"))
    summary = []
    for b in a.batches:
        f, ft = fox_by.get(b, {}), fox_tf32_by.get(b, {})
        fg = f.get("graph_ms")
        den = {"fp32": fg, "tf32": ft.get("graph_ms") if fox_tf32 else fg}
        head = (f"B = {b}: fox-train graph {fmt(fg, '.3f')} ms, "
                f"eager {fmt(f.get('eager_ms'), '.3f')}")
        if fox_tf32:
            head += f"; --precision tf32 graph {fmt(ft.get('graph_ms'), '.3f')}"
        print("\n" + head)
        print(line)
        print("-" * len(line))
        rows, best = [], {}
        for label, mode, variant, cells in summary_rows(torch_by.get(b, {}), precisions):
            out = [label]
            comp = []
            for p in precisions:
                ms, cs = cells.get(p, (None, None))
                r = ratio(ms, den[p])
                out += [fmt(ms, ".3f"), times(r)]
                comp.append(fmt(cs, ".0f"))
                if ms is not None:
                    rows.append({"mode": mode, "variant": variant, "label": label,
                                 "precision": p, "ms": ms, "vs_fox": r, "compile_s": cs})
                    if p not in best or ms < best[p]["ms"]:
                        best[p] = rows[-1]
            if variant != "ms" or all(c == "-" for c in comp):
                comp = []
            out.append("/".join(comp) if comp else "")
            print(" ".join(c.ljust(w) if i == 0 else c.rjust(w)
                           for i, (c, (_, w)) in enumerate(zip(out, cols))))
        for p in precisions:
            if p in best:
                r = best[p]
                print(f"best {p} PyTorch: {r['ms']:.3f} ms ({r['label']}); fox-train "
                      + (f"{r['vs_fox']:.2f}x faster" if r["vs_fox"] else "not timed"))
        summary.append({"batch": b, "fox_graph_ms": fg, "fox_eager_ms": f.get("eager_ms"),
                        "fox_tf32_graph_ms": ft.get("graph_ms") if fox_tf32 else None,
                        "rows": rows, "best": best})
    print("=" * len(line))
    return summary


def bench_device(a):
    if a.cpu:
        return "cpu"
    if not torch.cuda.is_available():
        sys.exit("torch_peer: bench needs a CUDA GPU (torch.cuda.is_available() is False); "
                 "--cpu runs it on the CPU as a dry run of the script (no CUDA graphs)")
    return a.device or 0


def mode_bench(a, report):
    device = bench_device(a)
    if device == "cpu":
        graphs = [st for st in a.stages if BENCH_MODES[st[0]][1] == "graph"]
        a.stages = [st for st in a.stages if st not in graphs]
        if graphs:
            print(f"torch_peer: --cpu: skipping {', '.join(stage_key(*st) for st in graphs)} "
                  f"(CUDA graphs need a GPU)", flush=True)
        if not a.stages:
            sys.exit("torch_peer: --cpu leaves no mode of --modes to time")
    if not a.fox_json and not a.torch_only:
        require_fox_train(a.fox_train)
    report["bench"] = {"k": a.k, "batches": a.batches, "adamw": a.adamw, "warmup": a.warmup,
                       "reps": a.reps, "steps_per_rep": a.steps,
                       "stages": [stage_key(*st) for st in a.stages]}
    # fox-train first, while nothing else uses the CPU or the GPU (its eager
    # figure is launch-bound), so its figures exist even if a later stage is
    # cut short.
    fox = fox_tf32 = None
    if not a.torch_only:
        fox = run_fox_bench(a)
        report["bench"]["fox_train"] = fox
        if a.fox_tf32:
            fox_tf32 = run_fox_bench(a, "tf32")
            report["bench"]["fox_train_tf32"] = fox_tf32
        write_report(a, report)
    torch_rows = run_torch_bench(a, report, device)
    report["bench"]["summary"] = print_summary(a, torch_rows, fox, fox_tf32)
    ok = len(torch_rows) == len(a.batches)
    for r in torch_rows:
        ok &= "error" not in r and all(
            not any(k in m for k in ("error", "graph_error", "compile_error"))
            for m in r.get("modes", {}).values())
    return ok


# ---------------------------------------------------------------------------
# selftest: the checker against dumps written here
# ---------------------------------------------------------------------------

def selftest_strong(a, device, params, x, dt, labels):
    """The strong formulation against the literal one: the CfC Function's
    backward against finite differences (torch.autograd.gradcheck, float64,
    small sizes; a backward with dW_rec transposed must fail it), then the
    whole model's loss and 17 gradients in float64 against autograd of the
    literal formulation (bound --strong-tol, default 1e-10, relative), and
    in float32 within the check's bounds. Returns pass."""
    ok = True
    gen = torch.Generator().manual_seed(11)
    k, b, d = 5, 3, 4
    xin = torch.randn((k, b, d), generator=gen, dtype=torch.float64)
    decay = torch.rand((k, b, d), generator=gen, dtype=torch.float64)
    w_rec = torch.randn((d, d), generator=gen, dtype=torch.float64) * 0.5
    inputs = tuple(t.to(device).requires_grad_() for t in (xin, decay, w_rec))
    good = torch.autograd.gradcheck(CfCRecurrence.apply, inputs, raise_exception=False)

    class TransposedCfC(CfCRecurrence):
        @staticmethod
        def backward(ctx, dhs):
            d_pre, d_decay, d_w_rec = CfCRecurrence.backward(ctx, dhs)
            return d_pre, d_decay, d_w_rec.t()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")        # gradcheck's own warning on failure
        skewed = torch.autograd.gradcheck(TransposedCfC.apply, inputs, raise_exception=False)
    print(f"selftest: CfCRecurrence backward against finite differences (K = {k}, B = {b}, "
          f"D = {d}, float64): {'ok' if good else 'FAIL'}; with dW_rec transposed: "
          f"{'refused' if not skewed else 'ACCEPTED: FAIL'}")
    ok &= good and not skewed

    loss64, g64 = loss_and_grads(params, x, dt, labels, torch.float64, device)
    sloss64, s64 = loss_and_grads(params, x, dt, labels, torch.float64, device, "strong")
    _, s32 = loss_and_grads(params, x, dt, labels, torch.float32, device, "strong")
    loss_err = abs(float(sloss64) - float(loss64)) / abs(float(loss64))
    bsz, kk = x.shape[0], x.shape[1]
    print(f"\nselftest: strong formulation against autograd of the literal one, B = {bsz}, "
          f"K = {kk}, on {device}\nloss: float64 rel err {loss_err:.2e} (bound {a.strong_tol:.0e})")
    hdr = (f"{'tensor':14} | {'f64 err':>8} {'f64 rel':>8} | {'f32 err':>8} {'f32 rel':>8} "
           f"{'bad':>4} | verdict")
    print(hdr)
    print("-" * len(hdr))
    ok &= loss_err <= a.strong_tol
    worst = (0.0, "")
    for name, ref, g, g32 in zip(PARAM_NAMES, g64, s64, s32):
        c = compare(ref, g, a.rtol, a.atol)
        c32 = compare(ref, g32, a.rtol, a.atol)
        row_ok = (max(c["err"], c["rel"]) <= a.strong_tol and c32["err"] <= a.tol
                  and c32["bad"] == 0)
        ok &= row_ok
        worst = max(worst, (max(c["err"], c["rel"]), name))
        print(f"{name:14} | {c['err']:8.2e} {c['rel']:8.2e} | {c32['err']:8.2e} "
              f"{c32['rel']:8.2e} {c32['bad']:4d} | {'ok' if row_ok else 'FAIL'}")
    print(f"selftest: strong vs literal, float64: worst {worst[0]:.2e} ({worst[1]}; "
          f"bound {a.strong_tol:.0e}): {'ok' if worst[0] <= a.strong_tol else 'FAIL'}")
    return ok, {"gradcheck": bool(good), "gradcheck_skewed_refused": not skewed,
                "loss_rel_err_f64": loss_err, "worst_f64": worst[0], "worst_tensor": worst[1]}


def mode_selftest(a, report):
    """Writes fox-train-format dumps from PyTorch and checks that the checker
    accepts a float32 implementation, rejects a wrong gradient and refuses
    malformed files."""
    device = check_device(a)
    set_precision("fp32")
    b, k = a.batch[0], a.k
    gen = torch.Generator().manual_seed(7)
    params = init_like_fox(F_VARS, D_HID, E_HID, H_HEADS, gen)
    x, dt, labels = random_batch(b, k, F_VARS, H_HEADS, gen)
    loss32, g32 = loss_and_grads(params, x, dt, labels, torch.float32, device)
    dims = (b, k, F_VARS, D_HID, E_HID, H_HEADS)
    ok = True
    with tempfile.TemporaryDirectory(prefix="torch_peer_selftest_") as tmp:
        good = os.path.join(tmp, "good.bin")
        write_dump(good, dims, params, x, dt, labels, float(loss32), g32)
        r = check_dump(read_dump(good, b, k), device, a,
                       "selftest: float32 PyTorch as the implementation (must pass)")
        ok &= r["pass"]
        # One wrong gradient element, 1e-3 of the tensor's max: must fail.
        bad_g = [g.clone() for g in g32]
        i = PARAM_NAMES.index("cfc.tau")
        bad_g[i].view(-1)[3] += 1e-3 * float(bad_g[i].abs().max())
        bad = os.path.join(tmp, "bad.bin")
        write_dump(bad, dims, params, x, dt, labels, float(loss32), bad_g)
        r = check_dump(read_dump(bad, b, k), device, a,
                       "selftest: one cfc.tau gradient element off by 1e-3 (must fail)")
        ok &= not r["pass"]
        # Within the absolute bounds but 3x PyTorch's own float32 worst: must
        # fail the --torch-factor bound (and pass with it off).
        _, g64 = loss_and_grads(params, x, dt, labels, torch.float64, device)
        worst32 = max(compare(r64, r32, a.rtol, a.atol)["err"] for r64, r32 in zip(g64, g32))
        far_g = [g.clone() for g in g64]
        far_g[i].view(-1)[3] += 3 * worst32 * float(far_g[i].abs().max())
        far = os.path.join(tmp, "far.bin")
        write_dump(far, dims, params, x, dt, labels, float(loss32), far_g)
        label = "selftest: one cfc.tau element 3x PyTorch's float32 worst off"
        r = check_dump(read_dump(far, b, k), device, a, label + " (must fail)")
        ok &= not r["pass"] and not r["torch_factor_pass"]
        r = check_dump(read_dump(far, b, k), device, argparse.Namespace(**{**vars(a),
                       "torch_factor": 0.0}), label + ", --torch-factor 0 (must pass)")
        ok &= r["pass"]
        # Malformed files: each must raise DumpError naming the problem.
        with open(good, "rb") as fh:
            raw = fh.read()
        cases = {"truncated": raw[:-4], "trailing bytes": raw + b"\0" * 4,
                 "bad magic": b"FJSTEP2\n" + raw[8:], "short header": raw[:20],
                 "bad dims": HEADER.pack(MAGIC, b, k, F_VARS, 0, E_HID, H_HEADS) + raw[32:]}
        print()
        for name, blob in cases.items():
            p = os.path.join(tmp, "m.bin")
            with open(p, "wb") as fh:
                fh.write(blob)
            try:
                read_dump(p, b, k)
                print(f"selftest: malformed ({name}) was ACCEPTED: FAIL")
                ok = False
            except DumpError as err:
                print(f"selftest: malformed ({name}) refused: {err}")
        try:
            read_dump(good, b + 1, k)
            ok = False
            print("selftest: batch mismatch ACCEPTED: FAIL")
        except DumpError as err:
            print(f"selftest: batch mismatch refused: {err}")
    print()
    strong_ok, strong = selftest_strong(a, device, params, x, dt, labels)
    ok &= strong_ok
    print(f"\nselftest: {'PASS' if ok else 'FAIL'}")
    report["selftest"] = {"strong": strong, "pass": bool(ok)}
    return ok


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------

EPILOG = """\
modes and how long they take on the GPU machine (16 cores):
  check     2 fox-train --dump-step runs per --batch value (whole-sequence and
            --per-step paths; a third with --fox-tf32) + float64/float32
            autograd of both formulations: ~1 min (fox-jit's NVRTC compile
            dominates when its kernel cache is cold).
  bench     fox-train --bench (~0.5 min), then per --batches value and
            precision each --modes entry. Eager and graph modes: ~10 s each.
            literal-compile: ~4-6 min per precision cold (the batch sizes
            compile in parallel), ~1 min with a warm Inductor cache
            (/tmp/torchinductor_$USER). strong-compile: minutes per
            precision, in parallel. strong-autotune: 4-8 min per batch size
            and precision, one batch size at a time (its kernel choices are
            timed on the GPU); run it alone, e.g. one batch size and one
            precision per command. Figures are printed, and written to
            --json, after each stage; progress lines go to stderr.
  all       check then bench.
  selftest  the checker on dumps it writes itself, and the strong
            formulation against the literal one (no fox-train, no GPU: CPU
            is fine; seconds).

bench modes (--modes, comma-separated; MODE:fp32 or MODE:tf32 picks one
precision, else every --precisions one; 'default' = all but
literal-compile and strong-autotune, 'all' = every mode):
  literal-eager    the literal formulation (the check's float64 reference),
                   kernels launched from Python, fused AdamW
  literal-graph    the same, the whole step captured in one CUDA graph
  literal-compile  torch.compile(mode="reduce-overhead") of its forward and
                   backward (cudagraph trees), AdamW eager
  strong-eager     the strong formulation: whole-sequence GEMMs, the heads
                   reassociated in one batched matmul, a hand-written CfC
                   recurrence backward, fused AdamW
  strong-graph     the same, the whole step in one CUDA graph
  strong-compile   torch.compile (default mode) of the strong forward and
                   backward; timed as launched and, captured with AdamW, in
                   one CUDA graph
  strong-autotune  torch.compile(mode="max-autotune-no-cudagraphs"); timed
                   as launched and in one CUDA graph
precisions: fp32 = float32 products (set_float32_matmul_precision
("highest")); tf32 = TF32 tensor-core products ("high", i.e.
torch.backends.cuda.matmul.allow_tf32). Every ratio is PyTorch's ms over
fox-train's graph step from the same run (with --fox-tf32, the TF32 column
over fox-train --precision tf32's).

pass/fail (check): per gradient tensor, max|g_fox - g_f64| <= --tol (1e-4)
times max|g_f64|, and every element within --rtol (1e-3) of its reference or
within --atol (2e-5) times max|g_f64|; the loss within --loss-tol (1e-4)
relative; and fox-train's worst tensor error at most --torch-factor (2) times
PyTorch's own float32 worst (the literal formulation in float32 against the
float64 reference; the strong formulation's float32 and TF32 errors are
shown next to it). Why these: float32's unit roundoff is u = 6e-8; every
gradient is a sum over B*K = 2048 rows (the CfC ones also through the
64-step recurrence), whose float32 error is at worst about N*u = 1.2e-4 of
the sum of |terms| and typically sqrt(N)*u = 3e-6 or less; float32 PyTorch
lands at ~1e-7..1e-6. A missing or wrong term shows as 1e-3..1. Exit status:
0 pass, 1 a check (or a bench stage) failed, 2 usage.

examples:
  python3 tools/torch_peer.py all --fox-train build/tools/fox-train/fox-train
  python3 tools/torch_peer.py check --batch 32,128
  python3 tools/torch_peer.py bench --no-compile --json bench.json
  python3 tools/torch_peer.py bench --batches 512 --modes strong-autotune:tf32
  python3 tools/torch_peer.py bench --fox-json fox.json   # fox figures already measured
  python3 tools/torch_peer.py check --dump step.bin        # a dump you already have
  python3 tools/torch_peer.py selftest --cpu
  python3 tools/torch_peer.py bench --cpu --torch-only --batches 4 --k 8 --modes strong-eager
"""


def int_list(s):
    try:
        out = [int(v) for v in s.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {s!r}")
    if not out or any(v <= 0 for v in out):
        raise argparse.ArgumentTypeError(f"need positive integers: {s!r}")
    return out


def precision_list(s):
    out = [PRECISION_ALIASES.get(v.strip(), v.strip()) for v in s.split(",") if v.strip()]
    bad = [v for v in out if v not in PRECISIONS]
    if not out or bad:
        raise argparse.ArgumentTypeError(
            f"--precisions takes fp32 (or float32) and/or tf32, not {s!r}")
    return list(dict.fromkeys(out))


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="torch_peer.py",
        description="The PyTorch peer of fox-train: checks fox-train's gradients against "
                    "float64 autograd (check) and times the same training step in PyTorch, "
                    "as written literally and as a strong PyTorch formulation, eager, in a "
                    "CUDA graph and under torch.compile, float32 and TF32, next to fox-train "
                    "(bench).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["check", "bench", "all", "selftest"],
                    help="what to run (see below)")
    g = ap.add_argument_group("fox-train")
    g.add_argument("--fox-train", default=DEFAULT_FOX_TRAIN, metavar="PATH",
                   help=f"fox-train binary (default {DEFAULT_FOX_TRAIN}, from the repository root)")
    g.add_argument("--library", metavar="PATH", help="passed to fox-train: libfoxjit.so to load")
    g.add_argument("--cache-dir", metavar="DIR", help="passed to fox-train: fox-jit kernel cache")
    g.add_argument("--device", type=int, default=None, metavar="N",
                   help="CUDA device for PyTorch and fox-train (default 0)")
    g.add_argument("--k", type=int, default=64, help="bars per sequence (default 64)")
    g.add_argument("--fox-tf32", action="store_true",
                   help="also run fox-train with --precision tf32: check states its gradient "
                        "error next to PyTorch TF32's, bench takes the TF32 ratios against it")
    ap.add_argument("--cpu", action="store_true",
                    help="PyTorch on the CPU: check's and selftest's references, and bench as "
                         "a dry run of the script (no CUDA graphs, host-clock timings)")
    g = ap.add_argument_group("check")
    g.add_argument("--batch", type=int_list, default=[32], metavar="B[,B...]",
                   help="batch sizes to check (default 32)")
    g.add_argument("--seed", type=int, default=None,
                   help="passed to fox-train --dump-step (default: fox-train's)")
    g.add_argument("--dump", action="append", metavar="FILE",
                   help="check this existing dump instead of running fox-train (repeatable)")
    g.add_argument("--keep-dumps", metavar="DIR", help="write the dumps here and keep them")
    g.add_argument("--tol", type=float, default=1e-4,
                   help="max |g_fox - g_f64| / max |g_f64| per tensor (default 1e-4)")
    g.add_argument("--rtol", type=float, default=1e-3, help="elementwise relative (default 1e-3)")
    g.add_argument("--atol", type=float, default=2e-5,
                   help="elementwise absolute, times the tensor's max |g| (default 2e-5)")
    g.add_argument("--loss-tol", type=float, default=1e-4, help="loss relative (default 1e-4)")
    g.add_argument("--torch-factor", type=float, default=2.0,
                   help="fox-train's worst tensor error at most this times PyTorch's own "
                        "float32 worst (default 2; 0: no such bound)")
    g.add_argument("--strong-tol", type=float, default=1e-10,
                   help="selftest: the strong formulation's float64 gradients against the "
                        "literal one's, relative (default 1e-10)")
    g = ap.add_argument_group("bench")
    g.add_argument("--batches", type=int_list, default=[32, 128, 512], metavar="B[,B...]",
                   help="batch sizes to time (default 32,128,512)")
    g.add_argument("--modes", type=parse_modes, default=parse_modes("default"),
                   metavar="MODE[:PREC],...",
                   help="what to time (default: every mode but literal-compile and "
                        "strong-autotune; see below)")
    g.add_argument("--precisions", type=precision_list, default=list(PRECISIONS),
                   metavar="P[,P]", help="fp32 and/or tf32 (default fp32,tf32)")
    g.add_argument("--no-compile", action="store_true",
                   help="drop the torch.compile modes from --modes (they take minutes)")
    g.add_argument("--adamw", choices=["fused", "foreach"], default="fused",
                   help="torch AdamW implementation (default fused: one kernel per group)")
    g.add_argument("--warmup", type=int, default=10, help="warm-up steps (default 10)")
    g.add_argument("--reps", type=int, default=7, help="timed repetitions, median (default 7)")
    g.add_argument("--steps", type=int, default=20, help="steps per repetition (default 20)")
    g.add_argument("--compile-timeout", type=float, default=900,
                   help="seconds to wait for one compile stage (default 900)")
    g.add_argument("--time-timeout", type=float, default=600,
                   help="seconds one worker may take to time (default 600)")
    g.add_argument("--fox-json", metavar="FILE",
                   help="fox-train --bench --json results already measured (skips running it)")
    g.add_argument("--torch-only", action="store_true", help="do not run fox-train --bench")
    ap.add_argument("--json", metavar="FILE", help="write every result as JSON")
    a = ap.parse_args(argv)
    if a.k <= 0:
        ap.error("--k must be positive")
    if min(a.warmup, a.reps - 1, a.steps - 1) < 0:
        ap.error("--warmup >= 0, --reps >= 1, --steps >= 1")
    modes = [(m, p) for m, p in a.modes
             if not (a.no_compile and BENCH_MODES[m][1] in COMPILED)]
    if not modes:
        ap.error("--no-compile leaves no mode of --modes to time")
    a.stages = bench_stages(modes, a.precisions)
    if a.fox_tf32 and a.fox_json:
        ap.error("--fox-tf32 runs fox-train --bench --precision tf32, which --fox-json does "
                 "not hold: give one of them")
    return a


def write_report(a, report):
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(report, fh, indent=1)


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if torch is None:
        sys.exit(f"torch_peer: {a.mode} needs PyTorch, which cannot be imported "
                 f"({TORCH_MISSING}); install it (pip install torch)")
    report = {"tool": "tools/torch_peer.py", "mode": a.mode, "torch": torch.__version__,
              "python": sys.version.split()[0],
              "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(a.device or 0)
              if torch.cuda.is_available() and not a.cpu else None}
    print(f"torch_peer: PyTorch {torch.__version__}, "
          f"{report['gpu'] or 'no GPU (CPU)'}", flush=True)
    ok = False
    try:
        ok = True
        if a.mode == "selftest":
            ok = mode_selftest(a, report)
        if a.mode in ("check", "all"):
            ok &= mode_check(a, report)
            write_report(a, report)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        if a.mode in ("bench", "all"):
            ok &= mode_bench(a, report)
    except BaseException:
        ok = False
        raise
    finally:
        report["pass"] = bool(ok)
        write_report(a, report)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
