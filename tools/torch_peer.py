#!/usr/bin/env python3
"""torch_peer.py: the PyTorch peer of fox-train.

fox-train (tools/fox-train/) trains the reference perception model of
kernels.md ("The reference perception model and its K-loop") with fox-jit's
kernels. This script implements the same model independently in PyTorch and
uses it for two things:

  check   correctness. Runs `fox-train --dump-step` (one forward + loss +
          backward on the first training batch at the initial parameters, no
          update) for both of fox-train's K-loop paths (the default
          whole-sequence ops and --per-step), reads the dump, recomputes loss
          and the 17 parameter gradients with autograd in float64 and
          compares. Also runs the model in float32 in PyTorch and shows its
          error against float64 next to fox-train's: the honest baseline of
          what float32 rounding alone gives. Exit status 1 if any tensor is
          outside the bound. About a minute (mostly fox-train's first kernel
          compile when its cache is cold).
  bench   speed. Runs `fox-train --bench` on the batch sizes first (alone on
          the machine), then for each batch size (K = 64) times one whole
          training step (batch copy, forward, BCE, backward, AdamW, loss
          copy) in PyTorch, float32 with TF32 off, three ways: (a) eager,
          (b) the step captured in one CUDA graph and replayed, (c)
          torch.compile(mode="reduce-overhead") of the model (forward and
          backward compiled and CUDA-graphed; the fused AdamW step eager).
          Each batch size lives in its own worker process: (a) and (b) are
          timed one worker at a time, then all workers compile at once
          (torch.compile unrolls the 64-step loop: minutes per shape when
          cold), then (c) is timed one worker at a time; two timings never
          share the GPU or the CPU. Prints one table comparing everything,
          last. About 5-8 minutes cold with torch.compile, about 1 minute
          with --no-compile.
  all     check, then bench.
  selftest  the script's own test, no fox-train needed (CPU or GPU): writes
          a dump in fox-train's format from the float32 PyTorch model, checks
          that it passes, that a perturbed gradient fails and that malformed
          dumps are refused with a clear message. Seconds.

The dump format (tools/fox-train/dump.h), little-endian:
  8 bytes "FJSTEP1\\n"; int32[6] batch, k, f, d, e, h; then float32 arrays
  back to back: the 17 parameter tensors (order below), x [B,K,F], dt [B,K],
  labels [K+1,B,H] (K per-bar blocks of [B,H], then the sequence labels),
  loss [1], the 17 gradients d loss / d parameter (same order and shapes).

Standard library and torch only. Run from the repository root, e.g.
  python3 tools/torch_peer.py all --fox-train build/tools/fox-train/fox-train
"""

import argparse
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


def set_fp32_matmul_exact():
    """TF32 off: float32 matmuls and cuDNN in full float32. Returns the flags
    as read back (recorded in the JSON)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # newer torch prefers fp32_precision; these still work
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        return {"matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
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


def loss_and_grads(tensors, x, dt, labels, dtype, device):
    """Loss and the 17 gradients of the model at these values, in dtype."""
    model = PerceptionModel([t.to(device=device, dtype=dtype) for t in tensors])
    cast = [v.to(device=device, dtype=dtype) for v in (x, dt, labels)]
    loss = model(*cast)
    loss.backward()
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


def check_dump(dump, device, tol, rtol, atol, loss_tol, label):
    """Compares one dump with float64 (and float32) PyTorch. Prints a table;
    returns a JSON-able dict with "pass"."""
    args = (dump["params"], dump["x"], dump["dt"], dump["labels"])
    t0 = time.perf_counter()
    loss64, g64 = loss_and_grads(*args, torch.float64, device)
    loss32, g32 = loss_and_grads(*args, torch.float32, device)
    secs = time.perf_counter() - t0
    loss64 = float(loss64)
    loss_err = abs(dump["loss"] - loss64) / (abs(loss64) + TINY)
    loss_err32 = abs(float(loss32) - loss64) / (abs(loss64) + TINY)
    b, k, f, d, e, h = dump["dims"]
    print(f"\n== {label}: B = {b}, K = {k}, F = {f}, D = {d}, E = {e}, H = {h}  "
          f"(reference: float64 autograd on {device}, {secs:.1f} s)")
    loss_ok = loss_err <= loss_tol
    print(f"loss: fox-train {dump['loss']:.9g}, float64 {loss64:.12g}: rel err {loss_err:.2e} "
          f"(torch float32 {loss_err32:.2e}; bound {loss_tol:.0e}) {'ok' if loss_ok else 'FAIL'}")
    hdr = (f"{'tensor':14} {'shape':>12} {'max|g|':>10} | {'fox err':>9} {'fox rel':>9} "
           f"{'bad':>5} | {'f32 err':>9} {'f32 rel':>9} {'bad':>5} | verdict")
    print(hdr)
    print("-" * len(hdr))
    rows, ok_all, worst = [], loss_ok, (0.0, "")
    for name, ref, fox, t32 in zip(PARAM_NAMES, g64, dump["grads"], g32):
        cf = compare(ref, fox, rtol, atol)
        ct = compare(ref, t32, rtol, atol)
        ok = cf["err"] <= tol and cf["bad"] == 0
        ok_all &= ok
        if cf["err"] >= worst[0]:
            worst = (cf["err"], name)
        shape = "x".join(str(s) for s in ref.shape)
        print(f"{name:14} {shape:>12} {cf['scale']:10.3e} | {cf['err']:9.2e} {cf['rel']:9.2e} "
              f"{cf['bad']:5d} | {ct['err']:9.2e} {ct['rel']:9.2e} {ct['bad']:5d} | "
              f"{'ok' if ok else 'FAIL'}")
        rows.append({"tensor": name, "shape": list(ref.shape), "fox": cf, "torch_f32": ct,
                     "pass": ok})
    worst32 = max(rows, key=lambda r: r["torch_f32"]["err"])
    print(f"worst fox-train tensor: {worst[1]} at {worst[0]:.2e} of its max (bound {tol:.0e}); "
          f"worst float32 PyTorch: {worst32['tensor']} at {worst32['torch_f32']['err']:.2e}")
    print(f"{label}: {'PASS' if ok_all else 'FAIL'}")
    return {"label": label, "dims": list(dump["dims"]), "loss_fox": dump["loss"],
            "loss_f64": loss64, "loss_f32": float(loss32), "loss_rel_err": loss_err,
            "loss_rel_err_f32": loss_err32, "tensors": rows, "worst": worst[1],
            "worst_err": worst[0], "pass": bool(ok_all)}


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
    set_fp32_matmul_exact()
    if a.dump:
        return check_dumps(a, report, device, [(f"dump {p}", p, None, None) for p in a.dump])
    require_fox_train(a.fox_train)
    if a.keep_dumps:
        os.makedirs(a.keep_dumps, exist_ok=True)
        return check_dumps(a, report, device, fox_dumps(a, a.keep_dumps))
    with tempfile.TemporaryDirectory(prefix="torch_peer_") as tmp:
        return check_dumps(a, report, device, fox_dumps(a, tmp))


def fox_dumps(a, out_dir):
    """Runs fox-train --dump-step for every --batch value on both paths;
    returns (label, file, expected batch, expected k) per dump."""
    jobs = []
    for b in a.batch:
        for per_step in (False, True):
            path_name = "per-step" if per_step else "sequence"
            file = os.path.join(out_dir, f"step_b{b}_k{a.k}_{path_name}.bin")
            cmd = [a.fox_train, "--dump-step", file, "--batch", str(b), "--k", str(a.k)]
            if a.seed is not None:
                cmd += ["--seed", str(a.seed)]
            cmd += (["--per-step"] if per_step else []) + fox_common_args(a)
            secs = run_fox(cmd, f"--dump-step (B = {b}, {path_name} path)")
            print(f"  ({secs:.1f} s)")
            jobs.append((f"fox-train {path_name} path", file, b, a.k))
    return jobs


def check_dumps(a, report, device, jobs):
    """Checks every dump; prints the tables and the verdict; returns pass."""
    results, ok = [], True
    by_batch = {}
    for label, path, b, k in jobs:
        try:
            dump = read_dump(path, b, k)
        except DumpError as err:
            sys.exit(f"torch_peer: bad dump: {err}")
        r = check_dump(dump, device, a.tol, a.rtol, a.atol, a.loss_tol, label)
        results.append(r)
        ok &= r["pass"]
        by_batch.setdefault(dump["dims"], []).append((label, dump))
    # The two fox-train paths against each other (same batch, same parameters).
    for dims, pair in by_batch.items():
        if len(pair) == 2:
            (l1, d1), (l2, d2) = pair
            gap = max(float((g1.double() - g2.double()).abs().max())
                      / (float(g1.abs().max()) + TINY) for g1, g2 in zip(d1["grads"], d2["grads"]))
            print(f"\nB = {dims[0]}: {l1} vs {l2}: largest gradient gap {gap:.2e} of the "
                  f"tensor's max; loss gap {abs(d1['loss'] - d2['loss']):.2e}")
    print(f"\ncheck: {'PASS' if ok else 'FAIL'} ({len(results)} dump(s); bound: max|g_fox - "
          f"g_f64| <= {a.tol:.0e} max|g_f64| and every element within {a.rtol:.0e} relative "
          f"or {a.atol:.0e} max|g_f64| absolute; loss within {a.loss_tol:.0e} relative)")
    report["check"] = {"device": str(device), "tol": a.tol, "rtol": a.rtol, "atol": a.atol,
                       "loss_tol": a.loss_tol, "results": results, "pass": bool(ok)}
    return ok


# ---------------------------------------------------------------------------
# bench: one worker process per batch size
# ---------------------------------------------------------------------------

def time_steps(step, warmup, reps, steps_per_rep):
    """Median ms per step over reps repetitions of steps_per_rep steps, timed
    with CUDA events on the current stream (after warmup steps)."""
    for i in range(warmup):
        step(i)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(steps_per_rep):
            step(i)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / steps_per_rep)
    return statistics.median(times), times


class BenchSetup:
    """Everything one batch size needs: initial parameters, a pool of random
    batches on the GPU (each step copies one into static input tensors, as
    fox-train copies its batch) and a pinned host float for the loss copy."""

    POOL = 4

    def __init__(self, batch, k, device, seed):
        gen = torch.Generator().manual_seed(seed)
        self.device = device
        self.init = [t.to(device) for t in init_like_fox(F_VARS, D_HID, E_HID, H_HEADS, gen)]
        pool = [random_batch(batch, k, F_VARS, H_HEADS, gen) for _ in range(self.POOL)]
        self.pool = [[t.to(device) for t in b] for b in pool]
        self.static = [t.clone() for t in self.pool[0]]     # x, dt, labels
        self.loss_host = torch.zeros((), dtype=torch.float32).pin_memory()

    def feed(self, i):
        for dst, src in zip(self.static, self.pool[i % self.POOL]):
            dst.copy_(src, non_blocking=True)


def eager_step_fn(s, fused):
    model = PerceptionModel(s.init)
    opt = make_adamw(model, fused)

    def step(i):
        s.feed(i)
        opt.zero_grad(set_to_none=True)
        loss = model(*s.static)
        loss.backward()
        opt.step()
        s.loss_host.copy_(loss.detach(), non_blocking=True)
    return step


def graph_step_fn(s, fused):
    """The whole step (forward, BCE, backward, AdamW) in one CUDA graph: the
    PyTorch docs' whole-network capture recipe."""
    model = PerceptionModel(s.init)
    opt = make_adamw(model, fused, capturable=True)
    with warnings.catch_warnings():
        # capturable=True warns when step() runs uncaptured (the warm-up).
        warnings.filterwarnings("ignore", message=".*capturable=True.*")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):      # warm-up: AdamW state, autograd, cuBLAS handles
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                model(*s.static).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)        # backward allocates .grad from the graph's pool
    with torch.cuda.graph(graph):
        static_loss = model(*s.static)
        static_loss.backward()
        opt.step()
    torch.cuda.synchronize()

    def step(i):
        s.feed(i)
        graph.replay()
        s.loss_host.copy_(static_loss, non_blocking=True)
    step.graph = graph
    return step


def compiled_step_fn(s, fused):
    """torch.compile(model, mode="reduce-overhead"): the forward and its
    AOT-autograd backward are compiled by Inductor and replayed as CUDA graphs
    (cudagraph trees); the fused AdamW step runs eagerly (one multi-tensor
    kernel per parameter group)."""
    model = PerceptionModel(s.init)
    opt = make_adamw(model, fused)
    cmodel = torch.compile(model, mode="reduce-overhead", dynamic=False)

    def step(i):
        s.feed(i)
        torch.compiler.cudagraph_mark_step_begin()
        opt.zero_grad(set_to_none=True)
        loss = cmodel(*s.static)
        loss.backward()
        opt.step()
        s.loss_host.copy_(loss.detach(), non_blocking=True)
    return step


class Worker:
    """The state of one batch size's worker process (bench_worker)."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.res = {"batch": cfg["batch"], "k": cfg["k"]}
        self.setup = None
        self.compiled = None

    def do_setup(self):
        torch.set_num_threads(1)
        self.res["tf32"] = set_fp32_matmul_exact()
        device = torch.device("cuda", self.cfg["device"])
        torch.cuda.set_device(device)
        self.res["device"] = torch.cuda.get_device_name(device)
        self.setup = BenchSetup(self.cfg["batch"], self.cfg["k"], device, self.cfg["seed"])
        return {"device": self.res["device"]}

    def timing(self):
        return self.cfg["warmup"], self.cfg["reps"], self.cfg["steps"]

    def do_time_eager_graph(self):
        """(a) eager and (b) CUDA graph; needs the GPU and the CPU to itself."""
        out = {}
        fused = self.cfg["fused"]
        out["eager_ms"], out["eager_samples"] = time_steps(eager_step_fn(self.setup, fused),
                                                           *self.timing())
        try:
            out["graph_ms"], out["graph_samples"] = time_steps(
                graph_step_fn(self.setup, fused), *self.timing())
        except Exception:
            out["graph_error"] = traceback.format_exc(limit=6)
        torch.cuda.synchronize()
        return out

    def do_compile(self):
        """(c) torch.compile: the first step (compiles the forward and the
        backward) is the compile time; three more let the cudagraph trees
        warm up and record. Runs in all workers at once."""
        out = {}
        try:
            self.compiled = compiled_step_fn(self.setup, self.cfg["fused"])
            t0 = time.perf_counter()
            self.compiled(0)
            torch.cuda.synchronize()
            out["compile_s"] = time.perf_counter() - t0
            for i in range(3):
                self.compiled(i)
            torch.cuda.synchronize()
        except Exception:
            out["compile_error"] = traceback.format_exc(limit=6)
            self.compiled = None
        return out

    def do_time_compiled(self):
        if self.compiled is None:
            return {}
        try:
            ms, samples = time_steps(self.compiled, *self.timing())
            return {"compile_ms": ms, "compile_samples": samples}
        except Exception:
            return {"compile_error": traceback.format_exc(limit=6)}


def bench_worker(conn, cfg):
    """One batch size, in its own (spawned) process. Obeys the parent's
    commands ("setup", "time_eager_graph", "compile", "time_compiled",
    "exit") one at a time and answers each with ("ok", figures) or ("error",
    traceback). The parent decides what runs in parallel (compile) and what
    runs alone (every timing)."""
    w = Worker(cfg)
    try:
        while True:
            cmd = conn.recv()
            if cmd == "exit":
                break
            try:
                out = getattr(w, "do_" + cmd)()
                conn.send(("ok", out))
            except Exception:
                conn.send(("error", traceback.format_exc()))
                break
    except (EOFError, KeyboardInterrupt):
        pass
    finally:
        conn.close()


class WorkerPool:
    """The parent's side: one spawned bench_worker per batch size."""

    def __init__(self, a):
        ctx = multiprocessing.get_context("spawn")
        self.workers = []
        for b in a.batches:
            parent, child = ctx.Pipe()
            cfg = {"batch": b, "k": a.k, "device": a.device or 0, "seed": 1234 + b,
                   "fused": a.adamw == "fused",
                   "warmup": a.warmup, "reps": a.reps, "steps": a.steps}
            # Not a daemon: Inductor starts its own compile-worker processes.
            proc = ctx.Process(target=bench_worker, args=(child, cfg), name=f"torch_peer_B{b}")
            proc.start()
            child.close()
            self.workers.append({"batch": b, "proc": proc, "conn": parent, "alive": True,
                                 "res": {"batch": b, "k": a.k}})

    def _fail(self, w, why):
        w["alive"] = False
        w["res"]["error"] = why
        print(f"torch B = {w['batch']}: worker failed:\n{why}", flush=True)
        if w["proc"].is_alive():
            w["proc"].kill()

    def _collect(self, ws, timeout, what):
        """Waits for one answer from each of ws; merges it into their results."""
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
                timeout=left)
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
                if kind == "ok":
                    w["res"].update(val)
                    if what == "compile" and "compile_s" in val:
                        print(f"torch B = {w['batch']}: compiled in {val['compile_s']:.0f} s "
                              f"({time.perf_counter() - t0:.0f} s elapsed)", flush=True)
                    if "compile_error" in val:
                        print(f"torch B = {w['batch']}: torch.compile failed:\n"
                              f"{val['compile_error']}", flush=True)
                else:
                    self._fail(w, val)

    def alive(self):
        return [w for w in self.workers if w["alive"]]

    def parallel(self, cmd, timeout):
        """Every live worker runs cmd at the same time."""
        ws = self.alive()
        for w in ws:
            w["conn"].send(cmd)
        self._collect(ws, timeout, cmd)

    def serial(self, cmd, timeout, after=None):
        """Live workers run cmd one after the other (never two at once)."""
        for w in self.alive():
            w["conn"].send(cmd)
            self._collect([w], timeout, cmd)
            if after and w["alive"]:
                after(w["res"])

    def close(self):
        for w in self.workers:
            try:
                if w["alive"]:
                    w["conn"].send("exit")
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


def run_torch_bench(a, report):
    """The PyTorch figures for every batch size: set-up (parallel), eager and
    CUDA graph timings (one worker at a time), torch.compile (parallel: the
    minutes-long part), compiled timings (one at a time). Each stage's
    figures are printed, and written to --json, as soon as they exist."""
    n = len(a.batches)
    # Share the cores among the parallel Inductor compiles (workers inherit this).
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS",
                          str(max(1, (os.cpu_count() or 1) // n)))
    pool = WorkerPool(a)
    report["bench"]["torch"] = pool.results()
    try:
        print(f"torch: {n} worker process(es), B = {','.join(map(str, a.batches))}", flush=True)
        pool.parallel("setup", a.time_timeout)
        pool.serial("time_eager_graph", a.time_timeout, after=print_torch_row)
        write_report(a, report)
        if not a.no_compile and pool.alive():
            print(f"torch: torch.compile(mode=\"reduce-overhead\") of B = "
                  f"{','.join(str(w['batch']) for w in pool.alive())} in parallel "
                  f"(cold: minutes; --no-compile skips)...", flush=True)
            pool.parallel("compile", a.compile_timeout)
            pool.serial("time_compiled", a.time_timeout, after=print_torch_row)
            write_report(a, report)
    finally:
        pool.close()
    return pool.results()


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def print_torch_row(r):
    parts = [f"eager {fmt(r.get('eager_ms'), '.3f')} ms",
             f"CUDA graph {fmt(r.get('graph_ms'), '.3f')} ms"]
    if "compile_ms" in r:
        parts.append(f"torch.compile {r['compile_ms']:.3f} ms (compile {r['compile_s']:.0f} s)")
    print(f"torch B = {r['batch']}: " + ", ".join(parts), flush=True)
    if "graph_error" in r:
        print(f"torch B = {r['batch']}: CUDA graph failed:\n{r['graph_error']}", flush=True)


def run_fox_bench(a):
    """fox-train --bench on the same batch sizes; returns its JSON."""
    if a.fox_json:
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
        run_fox(cmd, "--bench", capture=False)
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


def ratio(num, den):
    """num / den when both are positive numbers, else None."""
    ok = all(isinstance(v, (int, float)) and v > 0 for v in (num, den))
    return num / den if ok else None


def print_summary(a, torch_rows, fox):
    """The final table; returns its rows for the JSON."""
    fox_by = fox_rows_by_batch(fox, a.k)
    torch_by = {r["batch"]: r for r in torch_rows}
    cols = [("B", 5), ("fox graph ms", 12), ("fox eager ms", 12), ("torch eager ms", 14),
            ("torch graph ms", 14), ("torch.compile ms", 16), ("compile s", 9),
            ("fox vs eager", 12), ("fox vs graph", 12), ("fox vs compile", 14)]
    line = " ".join(c.rjust(w) for c, w in cols)
    dev = next((r["device"] for r in torch_rows if r.get("device")), None) or \
        (fox or {}).get("device", "?")
    print("\n" + "=" * len(line))
    print(f"one training step, K = {a.k}, float32, TF32 off, {dev}; "
          f"'fox vs X' = X ms / fox-train graph ms (> 1: fox-train faster)")
    paths = sorted({str(r["path"]) for r in (fox or {}).get("rows", []) if "path" in r})
    if paths:
        print("fox-train path: " + ", ".join(paths))
    print(line)
    summary = []
    for b in a.batches:
        t, f = torch_by.get(b, {}), fox_by.get(b, {})
        fg = f.get("graph_ms")
        row = {"batch": b, "fox_graph_ms": fg, "fox_eager_ms": f.get("eager_ms"),
               "torch_eager_ms": t.get("eager_ms"), "torch_graph_ms": t.get("graph_ms"),
               "torch_compile_ms": t.get("compile_ms"), "compile_s": t.get("compile_s"),
               "speedup_vs_eager": ratio(t.get("eager_ms"), fg),
               "speedup_vs_graph": ratio(t.get("graph_ms"), fg),
               "speedup_vs_compile": ratio(t.get("compile_ms"), fg)}
        summary.append(row)
        cells = [str(b)] + [fmt(row[key], ".3f") for key in
                            ("fox_graph_ms", "fox_eager_ms", "torch_eager_ms", "torch_graph_ms",
                             "torch_compile_ms")]
        cells.append(fmt(row["compile_s"], ".0f"))
        cells += [fmt(row[key], ".2f") + ("x" if row[key] is not None else "") for key in
                  ("speedup_vs_eager", "speedup_vs_graph", "speedup_vs_compile")]
        print(" ".join(c.rjust(w) for c, (_, w) in zip(cells, cols)))
    print("=" * len(line))
    return summary


def mode_bench(a, report):
    if not torch.cuda.is_available():
        sys.exit("torch_peer: bench needs a CUDA GPU (torch.cuda.is_available() is False)")
    if not a.fox_json and not a.torch_only:
        require_fox_train(a.fox_train)
    report["bench"] = {"k": a.k, "batches": a.batches, "adamw": a.adamw, "warmup": a.warmup,
                       "reps": a.reps, "steps_per_rep": a.steps,
                       "compile": not a.no_compile}
    # fox-train first, while nothing else uses the CPU or the GPU (its eager
    # figure is launch-bound), so its figures exist even if a later stage is
    # cut short.
    fox = None
    if not a.torch_only:
        fox = run_fox_bench(a)
        report["bench"]["fox_train"] = fox
        write_report(a, report)
    torch_rows = run_torch_bench(a, report)
    report["bench"]["summary"] = print_summary(a, torch_rows, fox)
    return all("error" not in r and "graph_error" not in r and "compile_error" not in r
               for r in torch_rows) and len(torch_rows) == len(a.batches)


# ---------------------------------------------------------------------------
# selftest: the checker against dumps written here
# ---------------------------------------------------------------------------

def mode_selftest(a, report):
    """Writes fox-train-format dumps from PyTorch and checks that the checker
    accepts a float32 implementation, rejects a wrong gradient and refuses
    malformed files."""
    device = check_device(a)
    set_fp32_matmul_exact()
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
        r = check_dump(read_dump(good, b, k), device, a.tol, a.rtol, a.atol, a.loss_tol,
                       "selftest: float32 PyTorch as the implementation (must pass)")
        ok &= r["pass"]
        # One wrong gradient element, 1e-3 of the tensor's max: must fail.
        bad_g = [g.clone() for g in g32]
        i = PARAM_NAMES.index("cfc.tau")
        bad_g[i].view(-1)[3] += 1e-3 * float(bad_g[i].abs().max())
        bad = os.path.join(tmp, "bad.bin")
        write_dump(bad, dims, params, x, dt, labels, float(loss32), bad_g)
        r = check_dump(read_dump(bad, b, k), device, a.tol, a.rtol, a.atol, a.loss_tol,
                       "selftest: one cfc.tau gradient element off by 1e-3 (must fail)")
        ok &= not r["pass"]
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
    print(f"\nselftest: {'PASS' if ok else 'FAIL'}")
    report["selftest"] = {"pass": bool(ok)}
    return ok


# ---------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------

EPILOG = """\
modes and how long they take on the GPU machine (H200, 16 cores):
  check     2 fox-train --dump-step runs per --batch value (whole-sequence and
            --per-step paths) + float64/float32 autograd: ~1 min (fox-jit's
            NVRTC compile dominates when its kernel cache is cold).
  bench     fox-train --bench (~0.5 min), then per --batches value torch
            eager and CUDA graph (~10 s each), the parallel torch.compile
            (~4-6 min cold, about 4 min per shape on its own; ~1 min with a
            warm Inductor cache in /tmp/torchinductor_$USER), the compiled
            timings (~5 s each): ~5-8 min in all; ~1 min with --no-compile.
            Figures are printed, and written to --json, after each stage.
  all       check then bench.
  selftest  the checker on dumps it writes itself (no fox-train, CPU is fine).

pass/fail (check): per gradient tensor, max|g_fox - g_f64| <= --tol (1e-4)
times max|g_f64|, and every element within --rtol (1e-3) of its reference or
within --atol (2e-5) times max|g_f64|; the loss within --loss-tol (1e-4)
relative. Why these: float32's unit roundoff is u = 6e-8; every gradient is a
sum over B*K = 2048 rows (the CfC ones also through the 64-step recurrence),
whose float32 error is at worst about N*u = 1.2e-4 of the sum of |terms| and
typically sqrt(N)*u = 3e-6 or less; float32 PyTorch lands at ~1e-7..1e-6 (its
columns in the table: the honest baseline). A missing or wrong term shows as
1e-3..1. Exit status: 0 pass, 1 a check (or a bench stage) failed, 2 usage.

examples:
  python3 tools/torch_peer.py all --fox-train build/tools/fox-train/fox-train
  python3 tools/torch_peer.py check --batch 32,128
  python3 tools/torch_peer.py bench --no-compile --json bench.json
  python3 tools/torch_peer.py bench --fox-json fox.json   # fox figures already measured
  python3 tools/torch_peer.py check --dump step.bin        # a dump you already have
"""


def int_list(s):
    try:
        out = [int(v) for v in s.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {s!r}")
    if not out or any(v <= 0 for v in out):
        raise argparse.ArgumentTypeError(f"need positive integers: {s!r}")
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="torch_peer.py",
        description="The PyTorch peer of fox-train: checks fox-train's gradients against "
                    "float64 autograd (check) and times the same training step in PyTorch "
                    "eager, CUDA graph and torch.compile next to fox-train (bench).",
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
    g.add_argument("--cpu", action="store_true", help="float64 reference on the CPU")
    g = ap.add_argument_group("bench")
    g.add_argument("--batches", type=int_list, default=[32, 128, 512], metavar="B[,B...]",
                   help="batch sizes to time (default 32,128,512)")
    g.add_argument("--no-compile", action="store_true", help="skip torch.compile (minutes)")
    g.add_argument("--adamw", choices=["fused", "foreach"], default="fused",
                   help="torch AdamW implementation (default fused: one kernel per group)")
    g.add_argument("--warmup", type=int, default=10, help="warm-up steps (default 10)")
    g.add_argument("--reps", type=int, default=7, help="timed repetitions, median (default 7)")
    g.add_argument("--steps", type=int, default=20, help="steps per repetition (default 20)")
    g.add_argument("--compile-timeout", type=float, default=900,
                   help="seconds to wait for the parallel compiles (default 900)")
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
              if torch.cuda.is_available() else None}
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
