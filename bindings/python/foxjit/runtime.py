"""Runtime: a foxjit_runtime and every C call on raw device addresses (ints)
and raw CUstream handles (ints). The array-level functions in foxjit.ops
call these; they are also the cheapest way in when you have addresses."""

import ctypes

from . import _lib
from ._lib import (AdamwArgs, AttnPoolArgs, CfcArgs, CfcSeqArgs, Counters, HeadsArgs,
                   HeadsSeqArgs, RuntimeParams, VsnArgs, VsnSeqArgs)

__all__ = ["Runtime", "AdamwArgs", "AttnPoolArgs", "CfcArgs", "CfcSeqArgs", "HeadsArgs",
           "HeadsSeqArgs", "VsnArgs", "VsnSeqArgs"]


def _precision(precision):
    """foxjit_precision's value of a name: "float32" or "tf32"."""
    if precision in _lib.PRECISIONS:
        return _lib.PRECISIONS.index(precision)
    raise ValueError("precision must be 'float32' or 'tf32', not %r" % (precision,))


def _ties(ties):
    if ties in (0, "max"):
        return _lib.TIES_MAX
    if ties in (1, "ordinal"):
        return _lib.TIES_ORDINAL
    raise ValueError("ties must be 'max' or 'ordinal', not %r" % (ties,))


def _part(part):
    """foxjit_heads_seq_part's value of "dx", "params" or "all"; an int
    (HEADS_SEQ_PART_DX and the like) is passed as it is, and the library
    refuses one that is none of the three."""
    if isinstance(part, str):
        if part in _lib.HEADS_SEQ_PARTS:
            return _lib.HEADS_SEQ_PARTS[part]
    elif isinstance(part, int) and not isinstance(part, bool) and -2**31 <= part < 2**31:
        return part
    raise ValueError("part must be 'dx', 'params' or 'all' (or foxjit_heads_seq_part's int: "
                     "1, 2 or 3), not %r" % (part,))


class Runtime:
    """A fox-jit runtime bound to the CUDA context current when it is made.

    close() (or the end of a with block, or garbage collection) destroys it;
    the context must still exist then. Ops need that context current.
    target (a testing aid: plan and compile as for an older arch, e.g.
    "compute_89") needs a library of ABI 2.2 or newer: foxjit.AbiError on
    an older one, which would ignore it.
    """

    def __init__(self, lib=None, cache_dir=None, readonly_cache_dirs=None, cache_max_bytes=0,
                 disable_disk_cache=False, target=None, _raw=None, _owned=True):
        self.lib = lib if lib is not None else _lib.library()
        self._api = self.lib.api
        self._fns = self.lib.fns     # the entries, for foxjit.ops' calls
        self._sizes = {}             # size queries' answers by dims (foxjit.ops)
        self._owned = _owned
        if _raw is not None:
            self._rt = ctypes.c_void_p(_raw)
            return
        if target is not None and self.lib.abi[2] < 2:
            # foxjit_runtime_params.target is ABI 2.2's: an older library
            # reads the struct_size its own params have, which ends before
            # it, and would plan for the GPU's arch without a word.
            raise _lib.AbiError("%s: target needs fox-jit ABI 2.2 (foxjit_runtime_params."
                                "target); this library is ABI %d.%d, which would ignore it: "
                                "install a newer fox-jit, or leave target unset"
                                % (self.lib.path, self.lib.abi[1], self.lib.abi[2]))
        self._rt = ctypes.c_void_p()
        params = RuntimeParams()
        self._api.runtime_default_params(ctypes.byref(params))
        if cache_dir is not None:
            params.cache_dir = str(cache_dir).encode()
        if readonly_cache_dirs is not None:
            params.readonly_cache_dirs = str(readonly_cache_dirs).encode()
        if cache_max_bytes:
            params.cache_max_bytes = int(cache_max_bytes)
        if disable_disk_cache:
            params.disable_disk_cache = 1
        if target is not None:  # a testing aid: e.g. "compute_89" (kernels.md, dims.md)
            params.target = str(target).encode()     # ABI 2.2, checked above
        self.lib.check(self._api.runtime_create(ctypes.byref(params), ctypes.byref(self._rt)))

    @classmethod
    def from_raw(cls, ptr, lib=None, owned=False):
        """Wraps a foxjit_runtime * (an int) made elsewhere in the process."""
        return cls(lib=lib, _raw=ptr, _owned=owned)

    @property
    def raw(self):
        """The foxjit_runtime * as an int."""
        return self._rt.value or 0

    def close(self):
        if self._owned and self._rt.value:
            self._api.runtime_destroy(ctypes.byref(self._rt))
        self._rt = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _call(self, status):
        if status != 0:
            raise _lib.Error(status, self.lib.last_error())

    def arch(self):
        return self._api.runtime_arch(self._rt).decode()

    def counters(self):
        c = Counters()
        self._call(self._api.runtime_get_counters(self._rt, ctypes.byref(c)))
        return {f: getattr(c, f) for f, _ in Counters._fields_}

    def perception_limits(self):
        return self.lib.perception_limits()

    def set_precision(self, precision):
        """The precision of the heads' and the CfC's matrix products on
        this runtime (foxjit_set_precision), for the calls that start
        after it: "float32" (the default: 3xTF32 on tensor cores, float32
        accuracy) or "tf32" (one TF32 product a step, as PyTorch's
        torch.backends.cuda.matmul.allow_tf32 = True: faster, each product
        term to about 2^-10). Each precision is a kernel variant of its
        own: prepare after setting it; a captured CUDA graph keeps the
        kernels it captured. "tf32" needs a library of ABI 2.6
        (foxjit.AbiError on an older one); "float32" is what an older
        library computes, and is accepted there without a call."""
        p = _precision(precision)
        if p == 0 and not self.lib.has("set_precision"):
            return
        self.lib.need("set_precision", 6)
        self._call(self._api.set_precision(self._rt, p))

    def precision(self):
        """The runtime's precision: "float32" or "tf32" ("float32" on a
        library older than ABI 2.6, the only one it has; "precision N" for
        a value a newer library knows and this package does not)."""
        if not self.lib.has("get_precision"):
            return _lib.PRECISIONS[0]
        p = ctypes.c_int()
        self._call(self._api.get_precision(self._rt, ctypes.byref(p)))
        if 0 <= p.value < len(_lib.PRECISIONS):
            return _lib.PRECISIONS[p.value]
        return "precision %d" % p.value

    # ---- column sums -------------------------------------------------------
    def column_sum(self, x, rows, cols, out, accumulate, stream):
        self._call(self._api.column_sum(self._rt, x, rows, cols, out, int(bool(accumulate)),
                                        stream))

    def bias_grad_reduce(self, dy, batch, out_dim, db, stream):
        self._call(self._api.bias_grad_reduce(self._rt, dy, batch, out_dim, db, stream))

    def curiosity_bias_grad_reduce(self, dy, rows, out_dim, db, stream):
        self._call(self._api.curiosity_bias_grad_reduce(self._rt, dy, rows, out_dim, db, stream))

    def reduce_axis0(self, x, n_batch, n_tail, out, stream):
        self._call(self._api.reduce_axis0(self._rt, x, n_batch, n_tail, out, stream))

    def column_sum_prepare(self, rows, cols):
        self._call(self._api.column_sum_prepare(self._rt, rows, cols))

    def column_sum_workspace_size(self, rows, cols):
        """Bytes of workspace column_sum_split needs for x [rows, cols] (ABI
        2.7)."""
        self.lib.need("column_sum_workspace_size", 7)
        b = ctypes.c_size_t()
        self._call(self._api.column_sum_workspace_size(self._rt, rows, cols, ctypes.byref(b)))
        return b.value

    def column_sum_split(self, x, rows, cols, out, accumulate, workspace, workspace_bytes,
                         stream):
        """The split column sums (kernels.md 1): column_sum's sums over the
        whole GPU without clusters, one pairwise tree a column, the same
        bits on every GPU. The workspace (16-byte aligned,
        column_sum_workspace_size bytes or more) must be zeroed before its
        first use; each call leaves it ready for the next. ABI 2.7:
        foxjit.AbiError on an older library."""
        self.lib.need("column_sum_split", 7)
        self._call(self._api.column_sum_split(self._rt, x, rows, cols, out, int(bool(accumulate)),
                                              workspace, workspace_bytes, stream))

    def column_sum_split_prepare(self, rows, cols):
        """Compiles and loads column_sum_split's kernels for this shape, for
        use before CUDA graph capture. ABI 2.7: foxjit.AbiError on an older
        library."""
        self.lib.need("column_sum_split_prepare", 7)
        self._call(self._api.column_sum_split_prepare(self._rt, rows, cols))

    # ---- sort and rank normalization ----------------------------------------
    def radix_sort_pairs_workspace_size(self, n, begin_bit=0, end_bit=32):
        b = ctypes.c_size_t()
        self._call(self._api.radix_sort_pairs_workspace_size(self._rt, n, begin_bit, end_bit,
                                                             ctypes.byref(b)))
        return b.value

    def radix_sort_pairs(self, keys_in, values_in, keys_out, values_out, n, begin_bit, end_bit,
                         workspace, workspace_bytes, stream):
        self._call(self._api.radix_sort_pairs(self._rt, keys_in, values_in, keys_out,
                                              values_out, n, begin_bit, end_bit, workspace,
                                              workspace_bytes, stream))

    def radix_sort_prepare(self):
        self._call(self._api.radix_sort_prepare(self._rt))

    def rank_normalize_workspace_size(self, n, ties="max"):
        b = ctypes.c_size_t()
        self._call(self._api.rank_normalize_workspace_size(self._rt, n, _ties(ties),
                                                           ctypes.byref(b)))
        return b.value

    def rank_normalize(self, rewards, n, std_ema, mean_ema, ties, out, workspace,
                       workspace_bytes, stream):
        self._call(self._api.rank_normalize(self._rt, rewards, n, std_ema, mean_ema, _ties(ties),
                                            out, workspace, workspace_bytes, stream))

    def rank_normalize_prepare(self, ties="max"):
        self._call(self._api.rank_normalize_prepare(self._rt, _ties(ties)))

    # ---- perception ops (args: the ctypes structs of foxjit._lib) ----------------
    def _args(self, fn, args, stream):
        self._call(fn(self._rt, ctypes.byref(args), stream))

    def cfc_forward(self, args, stream):
        self._args(self._api.cfc_forward, args, stream)

    def cfc_backward(self, args, stream):
        self._args(self._api.cfc_backward, args, stream)

    def cfc_prepare(self, n_in, n_hid):
        self._call(self._api.cfc_prepare(self._rt, n_in, n_hid))

    def heads_forward(self, args, stream):
        self._args(self._api.heads_forward, args, stream)

    def heads_backward(self, args, stream):
        self._args(self._api.heads_backward, args, stream)

    def heads_prepare(self, d, e, h):
        self._call(self._api.heads_prepare(self._rt, d, e, h))

    def heads_workspace_size(self, batch, steps, e, h):
        return self.lib.heads_workspace_size(batch, steps, e, h)

    def vsn_forward(self, args, stream):
        self._args(self._api.vsn_forward, args, stream)

    def vsn_backward(self, args, stream):
        self._args(self._api.vsn_backward, args, stream)

    def vsn_prepare(self, f):
        self._call(self._api.vsn_prepare(self._rt, f))

    def attn_pool_forward(self, args, stream):
        self._args(self._api.attn_pool_forward, args, stream)

    def attn_pool_backward(self, args, stream):
        self._args(self._api.attn_pool_backward, args, stream)

    def attn_pool_prepare(self, d):
        self._call(self._api.attn_pool_prepare(self._rt, d))

    # ---- whole-sequence ops ---------------------------------------------------------
    def cfc_seq_workspace_size(self, batch, k, n_in, n_hid):
        b = ctypes.c_size_t()
        self._call(self._api.cfc_seq_workspace_size(self._rt, batch, k, n_in, n_hid,
                                                    ctypes.byref(b)))
        return b.value

    def cfc_seq_forward(self, args, stream):
        self._args(self._api.cfc_seq_forward, args, stream)

    def cfc_seq_backward(self, args, stream):
        self._args(self._api.cfc_seq_backward, args, stream)

    def cfc_seq_prepare(self, n_in, n_hid):
        self._call(self._api.cfc_seq_prepare(self._rt, n_in, n_hid))

    def heads_seq_workspace_size(self, batch, steps, d, e, h):
        b = ctypes.c_size_t()
        self._call(self._api.heads_seq_workspace_size(self._rt, batch, steps, d, e, h,
                                                      ctypes.byref(b)))
        return b.value

    def heads_seq_forward(self, args, stream):
        self._args(self._api.heads_seq_forward, args, stream)

    def heads_seq_backward(self, args, stream):
        self._args(self._api.heads_seq_backward, args, stream)

    def heads_seq_saved_size(self, batch, steps, d, e, h):
        self.lib.need("heads_seq_saved_size", 3)
        b = ctypes.c_size_t()
        self._call(self._api.heads_seq_saved_size(self._rt, batch, steps, d, e, h,
                                                  ctypes.byref(b)))
        return b.value

    def heads_seq_forward_save(self, args, saved, saved_bytes, stream):
        self.lib.need("heads_seq_forward_save", 3)
        self._call(self._api.heads_seq_forward_save(self._rt, ctypes.byref(args), saved,
                                                    saved_bytes, stream))

    def heads_seq_backward_saved(self, args, saved, saved_bytes, stream):
        self.lib.need("heads_seq_backward_saved", 3)
        self._call(self._api.heads_seq_backward_saved(self._rt, ctypes.byref(args), saved,
                                                      saved_bytes, stream))

    def heads_seq_backward_part(self, args, saved, saved_bytes, part, stream):
        """One part of the heads' backward (foxjit_heads_seq_backward_part,
        kernels.md): part "dx" (the rows' backward and dx; the ten
        gradient pointers are not read), "params" (the ten parameter
        gradients, from what the "dx" call of the same args left in work;
        dlogits, dx and the save are not read) or "all" (both: the one
        call's launches), or foxjit_heads_seq_part's int (_lib's
        HEADS_SEQ_PART_DX, _PARAMS, _ALL), passed as it is. saved not 0
        reads A from the forward's save, as heads_seq_backward_saved does;
        0 recomputes it. "params" follows the "dx" call of the same args
        and workspace exactly once, on its stream or after an event
        recorded after it, and the workspace is the pair's until "params"
        has finished (the C header says why). ABI 2.8: foxjit.AbiError on
        an older library."""
        self.lib.need("heads_seq_backward_part", 8)
        self._call(self._api.heads_seq_backward_part(self._rt, ctypes.byref(args), saved,
                                                     saved_bytes, _part(part), stream))

    def heads_seq_prepare(self, d, e, h):
        self._call(self._api.heads_seq_prepare(self._rt, d, e, h))

    def vsn_seq_workspace_size(self, batch, t, f):
        b = ctypes.c_size_t()
        self._call(self._api.vsn_seq_workspace_size(self._rt, batch, t, f, ctypes.byref(b)))
        return b.value

    def vsn_seq_backward(self, args, stream):
        self._args(self._api.vsn_seq_backward, args, stream)

    def vsn_seq_prepare(self, f):
        self._call(self._api.vsn_seq_prepare(self._rt, f))

    # ---- training step --------------------------------------------------------------
    def bce_with_logits(self, z, y, n, loss, loss_accumulate, dz, stream):
        self._call(self._api.bce_with_logits(self._rt, z, y, n, loss, int(bool(loss_accumulate)),
                                             dz, stream))

    def bce_with_logits_workspace_size(self, n):
        """Bytes of workspace bce_with_logits_wide needs for n values (at most
        8 KiB; ABI 2.4)."""
        self.lib.need("bce_with_logits_workspace_size", 4)
        b = ctypes.c_size_t()
        self._call(self._api.bce_with_logits_workspace_size(self._rt, n, ctypes.byref(b)))
        return b.value

    def bce_with_logits_wide(self, z, y, n, loss, loss_accumulate, dz, workspace,
                             workspace_bytes, stream):
        """bce_with_logits over the whole GPU: the same dz bits, the loss a
        fixed-order sum of per-block partials kept in the workspace (8-byte
        aligned, bce_with_logits_workspace_size(n) bytes or more; ABI 2.4)."""
        self.lib.need("bce_with_logits_wide", 4)
        self._call(self._api.bce_with_logits_wide(self._rt, z, y, n, loss,
                                                  int(bool(loss_accumulate)), dz, workspace,
                                                  workspace_bytes, stream))

    def adamw(self, args, stream):
        self._args(self._api.adamw, args, stream)

    def increment_step(self, step, stream):
        self._call(self._api.increment_step(self._rt, step, stream))

    def training_prepare(self):
        self._call(self._api.training_prepare(self._rt))

    # ---- generalized advantage estimation ----------------------------------------
    def gae(self, rewards, values, dones, steps, envs, gamma, lambda_, advantages, returns,
            stream):
        """Advantages (and returns, unless `returns` is 0) of time-major
        rollouts (kernels.md 9): rewards and dones [steps, envs], values
        [steps + 1, envs] (the last row the bootstrap), advantages and
        returns [steps, envs], all float32; dones nonzero where an episode
        ended. `lambda_` is GAE's lambda (Python reserves `lambda`); gamma
        and lambda_ in [0, 1]. ABI 2.5: foxjit.AbiError on an older
        library."""
        self.lib.need("gae", 5)
        self._call(self._api.gae(self._rt, rewards, values, dones, steps, envs, gamma, lambda_,
                                 advantages, returns, stream))

    def gae_prepare(self):
        """Compiles and loads gae's kernel (one for every shape), for use
        before CUDA graph capture. ABI 2.5: foxjit.AbiError on an older
        library."""
        self.lib.need("gae_prepare", 5)
        self._call(self._api.gae_prepare(self._rt))
