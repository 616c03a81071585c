"""torch.nn modules of the perception model's blocks on fox-jit's custom ops.

    from foxjit.modules import VariableSelection, CfCSequence, AttentionPooling, GRNHeads
    vsn = VariableSelection(f)                 # x [B, T, F] -> [B, T, F]
    cfc = CfCSequence(n_in=f, n_hid=d)         # x [B, K, F], dt [B, K] -> hs [B, K, D]
    pool = AttentionPooling(d)                 # hs [B, T, D] -> [B, D]
    heads = GRNHeads(d, e, h)                  # x [..., D] -> logits [..., H]

Each holds its parameters as nn.Parameters (float32; move the module to a
CUDA device before use, e.g. .cuda()): matrices and the query uniform in
+-1/sqrt(fan_in), biases zero, the CfC's time constants log-uniform in
[1, 16] (fox-train does the same, except that it scales W_in up by F
behind the VSN, whose outputs are about x / F: tools/fox-train/params.h).
Each runs the matching foxjit.torch op: differentiable, traceable by torch.compile(fullgraph=True)
and capturable in CUDA graphs (run a step before capturing: kernels compile
on first use). The math of each block is in docs/kernels.md.
"""

import math

import torch
from torch import nn

from . import torch as ft

__all__ = ["VariableSelection", "CfCSequence", "AttentionPooling", "GRNHeads"]


def _uniform(shape, bound):
    return nn.Parameter(torch.empty(shape).uniform_(-bound, bound))


class VariableSelection(nn.Module):
    """y = softmax(W x + b) * x over the last dim of x [B, T, F]."""

    def __init__(self, f):
        super().__init__()
        self.f = f
        self.weight = _uniform((f, f), 1 / math.sqrt(f))
        self.bias = nn.Parameter(torch.zeros(f))

    def forward(self, x):
        return ft.vsn(x, self.weight, self.bias)

    def extra_repr(self):
        return "f=%d" % self.f


class CfCSequence(nn.Module):
    """The closed-form continuous-time recurrence over all K steps of
    x [B, K, n_in] with step lengths dt [B, K] (in one call each way):
    returns every step's state hs [B, K, n_hid]. h_init [B, n_hid] (zeros
    when None) is differentiable too."""

    def __init__(self, n_in, n_hid):
        super().__init__()
        self.n_in, self.n_hid = n_in, n_hid
        self.w_in = _uniform((n_hid, n_in), 1 / math.sqrt(n_in))
        self.w_rec = _uniform((n_hid, n_hid), 1 / math.sqrt(n_hid))
        self.bias = nn.Parameter(torch.zeros(n_hid))
        # time constants spread log-uniformly over [1, 16]
        self.tau = nn.Parameter(torch.exp(torch.empty(n_hid).uniform_(0, math.log(16.0))))

    def forward(self, x, dt, h_init=None):
        return ft.cfc_seq(x, dt, self.w_in, self.w_rec, self.bias, self.tau, h_init=h_init)

    def extra_repr(self):
        return "n_in=%d, n_hid=%d" % (self.n_in, self.n_hid)


class AttentionPooling(nn.Module):
    """pooled = sum_t softmax_t(hs_t . q / sqrt(D)) hs_t over hs [B, T, D]."""

    def __init__(self, d):
        super().__init__()
        self.d = d
        self.query = _uniform((d,), 1 / math.sqrt(d))

    def forward(self, hs):
        return ft.attn_pool(hs, self.query)

    def extra_repr(self):
        return "d=%d" % self.d


class GRNHeads(nn.Module):
    """H gated residual heads of width E on rows x [..., D] -> logits [..., H]
    (any number of rows: the per-step states and the pooled one alike)."""

    NAMES = ("w1", "b1", "w2", "b2", "w_gate", "b_gate", "w_main", "b_main", "w_skip",
             "b_skip")

    def __init__(self, d, e, h):
        super().__init__()
        self.d, self.e, self.h = d, e, h
        s1, s2 = 1 / math.sqrt(d), 1 / math.sqrt(e)
        shapes = {"w1": ((h, e, d), s1), "b1": ((h, e), 0), "w2": ((h, e, e), s2),
                  "b2": ((h, e), 0), "w_gate": ((h, e), s2), "b_gate": ((h,), 0),
                  "w_main": ((h, e), s2), "b_main": ((h,), 0), "w_skip": ((h, d), s1),
                  "b_skip": ((h,), 0)}
        for n in self.NAMES:
            shape, bound = shapes[n]
            setattr(self, n, _uniform(shape, bound))

    def forward(self, x):
        return ft.heads(x, self.w1, self.b1, self.w2, self.b2, self.w_gate, self.b_gate,
                        self.w_main, self.b_main, self.w_skip, self.b_skip)

    def extra_repr(self):
        return "d=%d, e=%d, h=%d" % (self.d, self.e, self.h)
