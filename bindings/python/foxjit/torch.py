"""PyTorch autograd for fox-jit's model ops, as torch.library custom ops.

    import foxjit.torch as ft
    h = ft.cfc_seq(x, dt, w_in, w_rec, bias, tau)          # [B, K, n_hid]
    y = ft.vsn(x, w, bias)                                  # [B, T, F]
    pooled = ft.attn_pool(hs, q)                            # [B, D]
    logits = ft.heads(rows, w1, b1, w2, b2, w_gate, b_gate,
                      w_main, b_main, w_skip, b_skip)       # rows [..., D] -> [..., H]
    h_next = ft.cfc_step(x, h, dt, w_in, w_rec, bias, tau)  # one step [B, n_hid]

Each is a custom op in the "foxjit" namespace (torch.ops.foxjit.*) with a
fake (meta) implementation and a registered backward that is itself a
custom op, so they trace under torch.compile (fullgraph) and capture into
CUDA graphs. Before capturing a graph, run the step once eagerly: fox-jit
compiles a kernel on first use and refuses to compile during capture
(FOXJIT_ERROR_NOT_PREPARED). Tensors must be float32, contiguous, on one
CUDA device; the ops run on torch's current stream. They run on
foxjit.ops' runtimes: foxjit.ops.set_precision("tf32") puts the heads' and
the CfC's matrix products in TF32, as torch.backends.cuda.matmul.allow_tf32
does for torch's own (the default, "float32", is 3xTF32: float32 accuracy).

Needs torch >= 2.4 (torch.library.custom_op).
"""

from typing import Tuple

import torch
from torch import Tensor

from . import ops

__all__ = ["cfc_step", "cfc_seq", "heads", "vsn", "attn_pool"]

_lib = torch.library


def _c(t):
    return t.contiguous()


# ---- CfC, one step ----------------------------------------------------------

@_lib.custom_op("foxjit::cfc_step", mutates_args=(), device_types="cuda")
def _cfc_step(x: Tensor, h: Tensor, dt: Tensor, w_in: Tensor, w_rec: Tensor, bias: Tensor,
              tau: Tensor) -> Tuple[Tensor, Tensor]:
    return ops.cfc_forward(x, h, dt, w_in, w_rec, bias, tau)


@_cfc_step.register_fake
def _(x, h, dt, w_in, w_rec, bias, tau):
    shape = (x.shape[0], w_in.shape[0])
    return x.new_empty(shape), x.new_empty(shape)


@_lib.custom_op("foxjit::cfc_step_backward", mutates_args=(), device_types="cuda")
def _cfc_step_backward(x: Tensor, h: Tensor, dt: Tensor, w_in: Tensor, w_rec: Tensor,
                       bias: Tensor, tau: Tensor, u: Tensor, dh_out: Tensor
                       ) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    r = ops.cfc_backward(x, h, dt, w_in, w_rec, bias, tau, u, dh_out)
    # dt's gradient is not computed by the kernels (dt is data): zeros.
    return (r["dx"], r["dh"], torch.zeros_like(dt), r["dw_in"].sum(0), r["dw_rec"].sum(0),
            r["dbias"].sum(0), r["dtau"].sum(0))


@_cfc_step_backward.register_fake
def _(x, h, dt, w_in, w_rec, bias, tau, u, dh_out):
    return (torch.empty_like(x), torch.empty_like(h), torch.empty_like(dt),
            torch.empty_like(w_in), torch.empty_like(w_rec), torch.empty_like(bias),
            torch.empty_like(tau))


def _cfc_step_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs, output[1])


def _cfc_step_bwd(ctx, dh_out, du):
    x, h, dt, w_in, w_rec, bias, tau, u = ctx.saved_tensors
    return torch.ops.foxjit.cfc_step_backward(x, h, dt, w_in, w_rec, bias, tau, u,
                                              _c(dh_out))


_cfc_step.register_autograd(_cfc_step_bwd, setup_context=_cfc_step_setup)


def cfc_step(x, h, dt, w_in, w_rec, bias, tau):
    """One CfC step (kernels.md 3): x [B, n_in], h [B, n_hid] (None = zeros),
    dt [B] -> h' [B, n_hid]. Differentiable in x, h and the four parameters."""
    if h is None:
        h = x.new_zeros((x.shape[0], w_in.shape[0]))
    return _cfc_step(_c(x), _c(h), _c(dt), _c(w_in), _c(w_rec), _c(bias), _c(tau))[0]


# ---- CfC over a sequence -------------------------------------------------------

@_lib.custom_op("foxjit::cfc_seq", mutates_args=(), device_types="cuda")
def _cfc_seq(x: Tensor, dt: Tensor, h_init: Tensor, w_in: Tensor, w_rec: Tensor, bias: Tensor,
             tau: Tensor) -> Tuple[Tensor, Tensor]:
    return ops.cfc_seq_forward(x, dt, w_in, w_rec, bias, tau, h_init=h_init)


@_cfc_seq.register_fake
def _(x, dt, h_init, w_in, w_rec, bias, tau):
    shape = (x.shape[0], x.shape[1], w_in.shape[0])
    return x.new_empty(shape), x.new_empty(shape)


@_lib.custom_op("foxjit::cfc_seq_backward", mutates_args=(), device_types="cuda")
def _cfc_seq_backward(x: Tensor, dt: Tensor, h_init: Tensor, w_in: Tensor, w_rec: Tensor,
                      bias: Tensor, tau: Tensor, h: Tensor, u: Tensor, dh: Tensor
                      ) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    r = ops.cfc_seq_backward(x, dt, w_in, w_rec, bias, tau, h, u, dh, h_init=h_init)
    return (r["dx"], torch.zeros_like(dt), r["dh_init"], r["dw_in"], r["dw_rec"], r["dbias"],
            r["dtau"])


@_cfc_seq_backward.register_fake
def _(x, dt, h_init, w_in, w_rec, bias, tau, h, u, dh):
    return (torch.empty_like(x), torch.empty_like(dt), torch.empty_like(h_init),
            torch.empty_like(w_in), torch.empty_like(w_rec), torch.empty_like(bias),
            torch.empty_like(tau))


def _cfc_seq_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs, output[0], output[1])


def _cfc_seq_bwd(ctx, dh, du):
    x, dt, h_init, w_in, w_rec, bias, tau, h, u = ctx.saved_tensors
    return torch.ops.foxjit.cfc_seq_backward(x, dt, h_init, w_in, w_rec, bias, tau, h, u,
                                             _c(dh))


_cfc_seq.register_autograd(_cfc_seq_bwd, setup_context=_cfc_seq_setup)


def cfc_seq(x, dt, w_in, w_rec, bias, tau, h_init=None):
    """CfC over a whole sequence (one launch for all K steps): x [B, K, n_in],
    dt [B, K], h_init [B, n_hid] (None = zeros) -> h [B, K, n_hid], the state
    after every step. Differentiable in x, h_init and the parameters."""
    if h_init is None:
        h_init = x.new_zeros((x.shape[0], w_in.shape[0]))
    return _cfc_seq(_c(x), _c(dt), _c(h_init), _c(w_in), _c(w_rec), _c(bias), _c(tau))[0]


# ---- GRN heads -----------------------------------------------------------------------

_limits = {}    # Library -> (max_batch, max_t) of the heads' sequence ops


def _heads_blocks(t, width):
    """t [..., width] (contiguous) as [batch, steps, width] views that the
    heads' sequence ops take, covering its rows in order: t itself when it
    is 3-D within the limits (batch <= 1024, steps <= 4096), else its rows
    in blocks of ops._row_blocks (no copies: views of one tensor)."""
    lib = ops.runtime_for(t.device).lib
    lim = _limits.get(lib)
    if lim is None:
        p = lib.perception_limits()
        lim = _limits[lib] = (p["max_batch"], p["max_t"])
    if t.dim() == 3 and 0 < t.shape[0] <= lim[0] and 0 < t.shape[1] <= lim[1]:
        return [t]
    rows = t.reshape(-1, width)
    return [rows[start:start + b * s].view(b, s, width)
            for start, b, s in ops._row_blocks(rows.shape[0], lim[0], lim[1])]


@_lib.custom_op("foxjit::heads", mutates_args=(), device_types="cuda")
def _heads(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, w_gate: Tensor,
           b_gate: Tensor, w_main: Tensor, b_main: Tensor, w_skip: Tensor,
           b_skip: Tensor) -> Tensor:
    params = (w1, b1, w2, b2, w_gate, b_gate, w_main, b_main, w_skip, b_skip)
    logits = x.new_empty((*x.shape[:-1], w1.shape[0]))
    for xb, lb in zip(_heads_blocks(x, x.shape[-1]), _heads_blocks(logits, w1.shape[0])):
        ops.heads_seq_forward(xb, params, logits=lb)
    return logits


@_heads.register_fake
def _(x, w1, b1, w2, b2, w_gate, b_gate, w_main, b_main, w_skip, b_skip):
    return x.new_empty((*x.shape[:-1], w1.shape[0]))


@_lib.custom_op("foxjit::heads_backward", mutates_args=(), device_types="cuda")
def _heads_backward(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor, b2: Tensor, w_gate: Tensor,
                    b_gate: Tensor, w_main: Tensor, b_main: Tensor, w_skip: Tensor,
                    b_skip: Tensor, dlogits: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor,
                                                              Tensor, Tensor, Tensor, Tensor,
                                                              Tensor, Tensor, Tensor]:
    params = (w1, b1, w2, b2, w_gate, b_gate, w_main, b_main, w_skip, b_skip)
    dx = torch.empty_like(x)
    blocks = list(zip(_heads_blocks(x, x.shape[-1]), _heads_blocks(dlogits, w1.shape[0]),
                      _heads_blocks(dx, x.shape[-1])))
    # The first block overwrites the parameter gradients and the others add
    # to them; with no rows at all they are zeros.
    make = torch.empty_like if blocks else torch.zeros_like
    grads = {"d" + n: make(p) for n, p in zip(ops.HEADS_PARAMS, params)}
    for i, (xb, gb, dxb) in enumerate(blocks):
        ops.heads_seq_backward(xb, params, gb, dx=dxb, grads=grads, grad_accumulate=i > 0)
    return (dx,) + tuple(grads["d" + n] for n in ops.HEADS_PARAMS)


@_heads_backward.register_fake
def _(x, w1, b1, w2, b2, w_gate, b_gate, w_main, b_main, w_skip, b_skip, dlogits):
    return (torch.empty_like(x),) + tuple(torch.empty_like(p) for p in (
        w1, b1, w2, b2, w_gate, b_gate, w_main, b_main, w_skip, b_skip))


def _heads_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _heads_bwd(ctx, dlogits):
    return torch.ops.foxjit.heads_backward(*ctx.saved_tensors, _c(dlogits))


_heads.register_autograd(_heads_bwd, setup_context=_heads_setup)


def heads(x, w1, b1, w2, b2, w_gate, b_gate, w_main, b_main, w_skip, b_skip):
    """Multi-horizon GRN heads (kernels.md 4) on every row of x [..., D]
    -> logits [..., H], any number of rows: past the sequence ops' limits
    (batch 1024, steps 4096 a call; docs/dims.md) the rows go through in
    several calls (views, no copies), each row's logits and dx computed from
    that row alone as in one call, the parameter gradients summed over the
    calls. Differentiable in x and the ten parameters."""
    return _heads(_c(x), *(_c(p) for p in (w1, b1, w2, b2, w_gate, b_gate, w_main, b_main,
                                           w_skip, b_skip)))


# ---- variable selection ---------------------------------------------------------------

@_lib.custom_op("foxjit::vsn", mutates_args=(), device_types="cuda")
def _vsn(x: Tensor, w: Tensor, bias: Tensor) -> Tensor:
    return ops.vsn_forward(x, w, bias)


@_vsn.register_fake
def _(x, w, bias):
    return torch.empty_like(x)


@_lib.custom_op("foxjit::vsn_backward", mutates_args=(), device_types="cuda")
def _vsn_backward(x: Tensor, w: Tensor, bias: Tensor, dy: Tensor
                  ) -> Tuple[Tensor, Tensor, Tensor]:
    r = ops.vsn_seq_backward(x, w, bias, dy)
    return r["dx"], r["dw"], r["dbias"]


@_vsn_backward.register_fake
def _(x, w, bias, dy):
    return torch.empty_like(x), torch.empty_like(w), torch.empty_like(bias)


def _vsn_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _vsn_bwd(ctx, dy):
    return torch.ops.foxjit.vsn_backward(*ctx.saved_tensors, _c(dy))


_vsn.register_autograd(_vsn_bwd, setup_context=_vsn_setup)


def vsn(x, w, bias):
    """Variable selection (kernels.md 5): x [B, T, F] -> softmax(W x + b) * x."""
    return _vsn(_c(x), _c(w), _c(bias))


# ---- attention pooling ----------------------------------------------------------------

@_lib.custom_op("foxjit::attn_pool", mutates_args=(), device_types="cuda")
def _attn_pool(hs: Tensor, q: Tensor) -> Tensor:
    return ops.attn_pool_forward(hs, q)


@_attn_pool.register_fake
def _(hs, q):
    return hs.new_empty((hs.shape[0], hs.shape[2]))


@_lib.custom_op("foxjit::attn_pool_backward", mutates_args=(), device_types="cuda")
def _attn_pool_backward(hs: Tensor, q: Tensor, dpooled: Tensor) -> Tuple[Tensor, Tensor]:
    r = ops.attn_pool_backward(hs, q, dpooled)
    return r["dhs"], r["dq"].sum(0)


@_attn_pool_backward.register_fake
def _(hs, q, dpooled):
    return torch.empty_like(hs), torch.empty_like(q)


def _attn_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _attn_bwd(ctx, dpooled):
    return torch.ops.foxjit.attn_pool_backward(*ctx.saved_tensors, _c(dpooled))


_attn_pool.register_autograd(_attn_bwd, setup_context=_attn_setup)


def attn_pool(hs, q):
    """Attention pooling (kernels.md 6): hs [B, T, D], q [D] -> [B, D]."""
    return _attn_pool(_c(hs), _c(q))
