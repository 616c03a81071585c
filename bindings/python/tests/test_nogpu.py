"""No GPU needed: loading, the ABI checks, the version, errors with their
status and message, the package's own argument checks and every op's
argument checks in the library (a placeholder runtime pointer that the
library rejects arguments before looking at). Runs under pytest or
`python3 -m unittest`."""

import ctypes
import os
import unittest

import foxjit
from foxjit import ops
from foxjit.runtime import (AdamwArgs, AttnPoolArgs, CfcArgs, CfcSeqArgs, HeadsArgs,
                            HeadsSeqArgs, VsnArgs, VsnSeqArgs)

from ._common import FakeArray, library_path, need_library

G = 0x10000   # an aligned placeholder device address
INV = foxjit.Status.INVALID_ARGUMENT


def placeholder():
    return foxjit.Runtime.from_raw(0x1000, owned=False)


class Loading(unittest.TestCase):
    def test_missing_library(self):
        with self.assertRaises(foxjit.LoadError) as cm:
            foxjit.Library("/nonexistent/dir/libfoxjit.so.1")
        self.assertIn("/nonexistent/dir/libfoxjit.so.1", str(cm.exception))

    def test_foreign_library(self):
        with self.assertRaises(foxjit.LoadError) as cm:
            foxjit.Library("libm.so.6")
        self.assertIn("foxjit_get_api", str(cm.exception))
        self.assertNotIsInstance(cm.exception, foxjit.AbiError)

    def test_env_variable_picks_the_library(self):
        old = os.environ.get("FOXJIT_LIBRARY")
        os.environ["FOXJIT_LIBRARY"] = "/nonexistent/from-env.so"
        try:
            with self.assertRaises(foxjit.LoadError) as cm:
                foxjit.Library()
            self.assertIn("from-env.so", str(cm.exception))
        finally:
            if old is None:
                del os.environ["FOXJIT_LIBRARY"]
            else:
                os.environ["FOXJIT_LIBRARY"] = old

    def test_library_of_another_abi_is_refused(self):
        fake = os.environ.get("FOXJIT_TEST_FAKE_LIBRARY")
        if not fake:
            self.skipTest("the fake library is built by meson (FOXJIT_TEST_FAKE_LIBRARY)")
        for mode, needle in (("other_major", "does not implement ABI major 2"),
                             ("wrong_field", "table of ABI major 1"),
                             ("short_table", "install a newer fox-jit")):
            os.environ["FOXJIT_FAKE_MODE"] = mode
            try:
                with self.assertRaises(foxjit.AbiError, msg=mode) as cm:
                    foxjit.Library(fake)
            finally:
                del os.environ["FOXJIT_FAKE_MODE"]
            self.assertIn(needle, str(cm.exception), mode)

    def fake_library(self, mode):
        """The fake library in an older-minor mode (its table is one static:
        the next load of the fake rewrites it)."""
        fake = os.environ.get("FOXJIT_TEST_FAKE_LIBRARY")
        if not fake:
            self.skipTest("the fake library is built by meson (FOXJIT_TEST_FAKE_LIBRARY)")
        os.environ["FOXJIT_FAKE_MODE"] = mode
        try:
            return foxjit.Library(fake)
        finally:
            del os.environ["FOXJIT_FAKE_MODE"]

    def abi_err(self, entry, minor, have, fn, *args, **kw):
        """fn refuses with AbiError before calling the missing entry."""
        with self.assertRaises(foxjit.AbiError, msg=entry) as cm:
            fn(*args, **kw)
        self.assertIn("foxjit_%s needs fox-jit ABI 2.%d" % (entry, minor), str(cm.exception))
        self.assertIn("table is ABI %s" % have, str(cm.exception))

    def test_older_minor_loads_without_the_save(self):
        lib = self.fake_library("abi_2_2")
        self.assertEqual(lib.abi[1:], (2, 2))
        self.assertTrue(lib.has("vsn_seq_prepare"))
        self.assertFalse(lib.has("heads_seq_saved_size"))
        self.assertFalse(lib.has("bce_with_logits_wide"))
        with self.assertRaises(foxjit.AbiError) as cm:
            lib.need("heads_seq_forward_save", 3)
        self.assertIn("needs fox-jit ABI 2.3", str(cm.exception))
        # The table's entries past its size are never called.
        rt = foxjit.Runtime.from_raw(0x1000, lib=lib)
        self.abi_err("heads_seq_saved_size", 3, "2.2", rt.heads_seq_saved_size, 2, 4, 8, 8, 2)
        self.abi_err("heads_seq_forward_save", 3, "2.2", rt.heads_seq_forward_save,
                     HeadsSeqArgs(), G, 1 << 20, 0)
        self.abi_err("heads_seq_backward_saved", 3, "2.2", rt.heads_seq_backward_saved,
                     HeadsSeqArgs(), G, 1 << 20, 0)
        self.abi_err("bce_with_logits_workspace_size", 4, "2.2",
                     rt.bce_with_logits_workspace_size, 100)
        self.abi_err("bce_with_logits_wide", 4, "2.2", rt.bce_with_logits_wide, G, G * 2, 100,
                     G * 3, False, 0, G * 4, 8, 0)

    def test_older_minor_loads_without_the_wide_bce(self):
        lib = self.fake_library("abi_2_3")
        self.assertEqual(lib.abi[1:], (2, 3))
        self.assertTrue(lib.has("heads_seq_backward_saved"))
        self.assertFalse(lib.has("bce_with_logits_workspace_size"))
        self.assertFalse(lib.has("bce_with_logits_wide"))
        rt = foxjit.Runtime.from_raw(0x1000, lib=lib)
        self.abi_err("bce_with_logits_workspace_size", 4, "2.3",
                     rt.bce_with_logits_workspace_size, 100)
        self.abi_err("bce_with_logits_wide", 4, "2.3", rt.bce_with_logits_wide, G, G * 2, 100,
                     G * 3, False, 0, G * 4, 8, 0)
        # The array-level helper: wide=True refuses; by default it takes the
        # one-block form, which the fake answers with its own message.
        z, y, loss = FakeArray(G, (64, 5)), FakeArray(G * 2, (64, 5)), FakeArray(G * 3, (1,))
        ws = FakeArray(G * 4, (64,), "|u1")
        self.abi_err("bce_with_logits_workspace_size", 4, "2.3", ops.bce_with_logits, z, y,
                     loss=loss, want_dz=False, wide=True, workspace=ws, rt=rt)
        for kw in ({}, {"workspace": ws}):
            with self.assertRaises(foxjit.Error, msg=kw) as cm:
                ops.bce_with_logits(z, y, loss=loss, want_dz=False, rt=rt, **kw)
            self.assertEqual(cm.exception.status, foxjit.Status.UNSUPPORTED)
            self.assertIn("fake_foxjit: foxjit_bce_with_logits", cm.exception.message)

    def test_version_and_abi(self):
        need_library(self)
        self.assertEqual(foxjit.version(), "0.2.0")
        self.assertEqual(foxjit.version(), foxjit.__version__)
        size, major, minor = foxjit.library().abi
        self.assertEqual(major, foxjit.ABI_MAJOR)
        self.assertGreaterEqual(minor, foxjit.ABI_MINOR)
        self.assertGreaterEqual(size, ctypes.sizeof(foxjit._lib.Api))
        for s in range(13):
            self.assertEqual(foxjit.library().status_string(s), foxjit.Status.name(s))
        self.assertEqual(foxjit.Status.name(42), "FOXJIT_STATUS_42")
        lim = foxjit.library().perception_limits()
        self.assertGreaterEqual(lim["max_batch"], 1024)

    def test_struct_layouts_match_the_c_header(self):
        path = os.environ.get("FOXJIT_TEST_LAYOUT")
        if not path:
            self.skipTest("the C layout listing is written by meson (FOXJIT_TEST_LAYOUT)")
        c = {}
        with open(path) as f:
            for line in f:
                name, value = line.split()
                c[name] = int(value)
        mine = foxjit._lib.layout()
        checked = 0
        for name, value in mine.items():
            if name not in c:
                continue    # fields the C listing does not print (the table's middle)
            if name == "foxjit_api.SIZE":
                self.assertLessEqual(value, c[name], name)
            else:
                self.assertEqual(value, c[name], name)
            checked += 1
        missing = [n for n in c if n not in mine]
        self.assertEqual(missing, [])
        self.assertGreater(checked, 150)

    def test_runtime_without_a_context(self):
        need_library(self)
        with self.assertRaises(foxjit.Error) as cm:
            foxjit.Runtime()
        e = cm.exception
        self.assertIn(e.status, (foxjit.Status.DRIVER_NOT_FOUND, foxjit.Status.NO_CONTEXT,
                                 foxjit.Status.CUDA))
        self.assertTrue(e.message)
        self.assertTrue(str(e).startswith(e.status_name))


class PackageChecks(unittest.TestCase):
    """What the package refuses before calling the library."""

    def setUp(self):
        need_library(self)
        self.rt = placeholder()

    def test_not_an_array(self):
        with self.assertRaisesRegex(TypeError, "x: a list is neither"):
            ops.column_sum([1.0, 2.0], rt=self.rt)

    def test_wrong_dtype(self):
        with self.assertRaisesRegex(TypeError, "x: typestr '<f8'"):
            ops.column_sum(FakeArray(G, (4, 4), "<f8"), out=FakeArray(G * 2, (4,)), rt=self.rt)
        with self.assertRaisesRegex(TypeError, "keys: typestr '<f4'"):
            ops.radix_sort_pairs(FakeArray(G, (8,)), FakeArray(G * 2, (8,), "<u4"), rt=self.rt)

    def test_not_contiguous(self):
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            ops.column_sum(FakeArray(G, (4, 4), strides=(4, 16)), out=FakeArray(G * 2, (4,)),
                           rt=self.rt)

    def test_shapes(self):
        with self.assertRaisesRegex(ValueError, "x: expected 2 dims"):
            ops.column_sum(FakeArray(G, (4,)), rt=self.rt)
        with self.assertRaisesRegex(ValueError, r"out: shape \(5,\), expected \(4,\)"):
            ops.column_sum(FakeArray(G, (3, 4)), out=FakeArray(G * 2, (5,)), rt=self.rt)
        with self.assertRaisesRegex(ValueError, "w_rec: shape"):
            ops.cfc_forward(FakeArray(G, (2, 3)), None, FakeArray(G, (2,)),
                            FakeArray(G, (5, 3)), FakeArray(G, (5, 4)), FakeArray(G, (5,)),
                            FakeArray(G, (5,)), rt=self.rt)
        with self.assertRaisesRegex(ValueError, "heads parameters: missing"):
            ops.heads_forward(FakeArray(G, (2, 3)), {"w1": FakeArray(G, (2, 3, 3))}, rt=self.rt)

    def test_outputs_and_workspaces_must_be_given_without_torch(self):
        with self.assertRaisesRegex(TypeError, r"out: pass it \(out=...\)"):
            ops.column_sum(FakeArray(G, (4, 4)), rt=self.rt)

    def test_read_only_output(self):
        with self.assertRaisesRegex(ValueError, "read-only"):
            ops.column_sum(FakeArray(G, (4, 4)), out=FakeArray(G * 2, (4,), readonly=True),
                           rt=self.rt)

    def test_misaligned(self):
        with self.assertRaisesRegex(ValueError, "not 4-byte aligned"):
            ops.column_sum(FakeArray(G + 2, (4, 4)), out=FakeArray(G * 2, (4,)), rt=self.rt)

    def test_ties(self):
        with self.assertRaisesRegex(ValueError, "ties must be"):
            self.rt.rank_normalize_workspace_size(10, "min")


class LibraryChecks(unittest.TestCase):
    """Every op's errors from the library, through the package: the status
    and the library's message (which names the C function)."""

    def setUp(self):
        need_library(self)
        self.rt = placeholder()

    def err(self, fn, *args, status=INV, needles=(), **kw):
        with self.assertRaises(foxjit.Error) as cm:
            fn(*args, **kw)
        self.assertEqual(cm.exception.status, status, cm.exception)
        for n in needles:
            self.assertIn(n, cm.exception.message)

    def test_column_sums(self):
        rt, S = self.rt, 0
        self.err(rt.column_sum, G, 0, 4, G * 2, False, S, needles=["foxjit_column_sum", "rows"])
        self.err(rt.column_sum, G, 1 << 31, 4, G * 2, False, S,
                 status=foxjit.Status.UNSUPPORTED, needles=["limit"])
        self.err(rt.bias_grad_reduce, G, 4, -3, G * 2, S, needles=["foxjit_bias_grad_reduce"])
        self.err(rt.curiosity_bias_grad_reduce, G, 4, 4, 0, S,
                 needles=["foxjit_curiosity_bias_grad_reduce"])
        self.err(rt.reduce_axis0, 0, 4, 4, G, S, needles=["foxjit_reduce_axis0"])
        self.err(rt.column_sum_prepare, 0, 1, needles=["foxjit_column_sum_prepare"])
        # through the array-level functions
        self.err(ops.column_sum, FakeArray(G, (4, 4)), out=FakeArray(G, (4,)), rt=rt,
                 needles=["overlaps"])
        self.err(ops.bias_grad_reduce, FakeArray(G, (0, 4)), FakeArray(G * 2, (4,)), rt=rt,
                 needles=["rows is 0"])
        self.err(ops.curiosity_bias_grad_reduce, FakeArray(G, (4, 4)),
                 out=FakeArray(G, (4,)), rt=rt, needles=["overlaps"])
        self.err(ops.reduce_axis0, FakeArray(G, (2, 3, 4)), out=FakeArray(G, (3, 4)), rt=rt,
                 needles=["foxjit_reduce_axis0"])

    def test_sort_and_rank(self):
        rt, S = self.rt, 0
        self.err(rt.radix_sort_pairs_workspace_size, 0, 0, 32,
                 needles=["foxjit_radix_sort_pairs_workspace_size"])
        self.err(rt.radix_sort_pairs_workspace_size, 16, 8, 4, needles=["bit"])
        self.assertGreater(rt.radix_sort_pairs_workspace_size(1000), 0)
        self.err(rt.rank_normalize_workspace_size, 0, "max",
                 needles=["foxjit_rank_normalize_workspace_size"])
        ws = rt.rank_normalize_workspace_size(1000, "ordinal")
        self.assertGreater(ws, 0)
        self.err(rt.radix_sort_pairs, 0, G, G * 2, G * 3, 16, 0, 32, G * 4, 1 << 20, S,
                 needles=["foxjit_radix_sort_pairs", "NULL"])
        self.err(rt.rank_normalize, G, 1000, float("nan"), 0.0, "max", G, G * 100, ws, S,
                 needles=["foxjit_rank_normalize", "std_ema"])
        self.err(rt.rank_normalize, G, 1000, 1.0, 0.0, "max", G, G * 100, ws // 2, S,
                 status=foxjit.Status.WORKSPACE_TOO_SMALL)
        self.err(ops.rank_normalize, FakeArray(G, (1000,)), float("inf"), 0.0,
                 out=FakeArray(G, (1000,)), workspace=FakeArray(G * 100, (ws,), "|u1"), rt=rt,
                 needles=["std_ema"])
        self.err(ops.radix_sort_pairs, FakeArray(G, (8,), "<u4"), FakeArray(G * 2, (8,), "<u4"),
                 begin_bit=0, end_bit=33, keys_out=FakeArray(G * 3, (8,), "<u4"),
                 values_out=FakeArray(G * 4, (8,), "<u4"),
                 workspace=FakeArray(G * 5, (64,), "|u1"), rt=rt, needles=["bit"])

    def test_perception(self):
        rt, S = self.rt, 0
        for fn, name in ((rt.cfc_forward, "foxjit_cfc_forward"),
                         (rt.cfc_backward, "foxjit_cfc_backward")):
            self.err(fn, CfcArgs(), S, needles=[name, "batch"])
        for fn, name in ((rt.heads_forward, "foxjit_heads_forward"),
                         (rt.heads_backward, "foxjit_heads_backward")):
            self.err(fn, HeadsArgs(batch=4, d=8, e=8, h=0), S, needles=[name])
        for fn, name in ((rt.vsn_forward, "foxjit_vsn_forward"),
                         (rt.vsn_backward, "foxjit_vsn_backward")):
            self.err(fn, VsnArgs(batch=2, t=3, f=4), S, needles=[name, "NULL"])
        for fn, name in ((rt.attn_pool_forward, "foxjit_attn_pool_forward"),
                         (rt.attn_pool_backward, "foxjit_attn_pool_backward")):
            self.err(fn, AttnPoolArgs(batch=2, t=3, d=-1), S, needles=[name])
        self.err(rt.cfc_forward, CfcArgs(batch=1 << 20, n_in=8, n_hid=8), S,
                 status=foxjit.Status.UNSUPPORTED, needles=["limit"])
        self.err(rt.cfc_prepare, 0, 8, needles=["foxjit_cfc_prepare"])
        self.err(rt.heads_prepare, 8, 0, 2, needles=["foxjit_heads_prepare"])
        self.err(rt.vsn_prepare, 0, needles=["foxjit_vsn_prepare"])
        self.err(rt.attn_pool_prepare, 0, needles=["foxjit_attn_pool_prepare"])
        self.assertEqual(rt.heads_workspace_size(4, 1, 8, 2), 0)
        self.assertGreater(rt.heads_workspace_size(4, 8, 8, 2), 0)
        # array level: a batch past the limit reaches the library
        big = 1 << 20
        self.err(ops.vsn_forward, FakeArray(G, (big, 2, 4)), FakeArray(G, (4, 4)),
                 FakeArray(G, (4,)), y=FakeArray(G * 2, (big, 2, 4)), rt=rt,
                 status=foxjit.Status.UNSUPPORTED)
        self.err(ops.attn_pool_forward, FakeArray(G, (big, 2, 4)), FakeArray(G, (4,)),
                 pooled=FakeArray(G * 2, (big, 4)), rt=rt, status=foxjit.Status.UNSUPPORTED)

    def test_sequence_ops(self):
        rt, S = self.rt, 0
        self.err(rt.cfc_seq_workspace_size, 0, 4, 8, 8,
                 needles=["foxjit_cfc_seq_workspace_size"])
        self.assertGreater(rt.cfc_seq_workspace_size(2, 4, 8, 8), 0)
        self.err(rt.heads_seq_workspace_size, 2, 0, 8, 8, 2,
                 needles=["foxjit_heads_seq_workspace_size"])
        self.assertGreater(rt.heads_seq_workspace_size(2, 4, 8, 8, 2), 0)
        self.err(rt.vsn_seq_workspace_size, 2, 4, 0, needles=["foxjit_vsn_seq_workspace_size"])
        self.assertGreater(rt.vsn_seq_workspace_size(2, 4, 8), 0)
        self.err(rt.cfc_seq_forward, CfcSeqArgs(), S, needles=["foxjit_cfc_seq_forward"])
        self.err(rt.cfc_seq_backward, CfcSeqArgs(), S, needles=["foxjit_cfc_seq_backward"])
        self.err(rt.heads_seq_forward, HeadsSeqArgs(), S, needles=["foxjit_heads_seq_forward"])
        self.err(rt.heads_seq_backward, HeadsSeqArgs(), S,
                 needles=["foxjit_heads_seq_backward"])
        self.err(rt.vsn_seq_backward, VsnSeqArgs(), S, needles=["foxjit_vsn_seq_backward"])
        self.err(rt.cfc_seq_prepare, 8, 0, needles=["foxjit_cfc_seq_prepare"])
        self.err(rt.heads_seq_prepare, 0, 8, 2, needles=["foxjit_heads_seq_prepare"])
        self.assertTrue(rt.lib.has("heads_seq_backward_saved"))
        self.err(rt.heads_seq_saved_size, 2, 4, 8, 0, 2,
                 needles=["foxjit_heads_seq_saved_size"])
        self.assertGreaterEqual(rt.heads_seq_saved_size(2, 4, 8, 7, 2), 2 * 4 * 16 * 4)
        self.err(rt.heads_seq_forward_save, HeadsSeqArgs(), 0, 0, S,
                 needles=["foxjit_heads_seq_forward_save"])
        self.err(rt.heads_seq_backward_saved, HeadsSeqArgs(), 0, 0, S,
                 needles=["foxjit_heads_seq_backward_saved"])
        self.err(rt.vsn_seq_prepare, -2, needles=["foxjit_vsn_seq_prepare"])
        big = 1 << 20
        self.err(ops.cfc_seq_forward, FakeArray(G, (big, 2, 4)), FakeArray(G, (big, 2)),
                 FakeArray(G, (8, 4)), FakeArray(G, (8, 8)), FakeArray(G, (8,)),
                 FakeArray(G, (8,)), h=FakeArray(G * 2, (big, 2, 8)),
                 u=FakeArray(G * 3, (big, 2, 8)), rt=rt, status=foxjit.Status.UNSUPPORTED)

    def test_training(self):
        rt, S = self.rt, 0
        self.err(rt.bce_with_logits, G, G * 2, 0, G * 3, False, 0, S,
                 needles=["foxjit_bce_with_logits"])
        self.err(rt.adamw, AdamwArgs(), S, needles=["foxjit_adamw"])
        self.err(rt.adamw, AdamwArgs(n=16, param=G, grad=G * 2, m=G * 3, v=G * 4, step=G * 5,
                                     lr=-1.0, beta1=0.9, beta2=0.999, eps=1e-8), S,
                 needles=["lr"])
        self.err(rt.increment_step, 0, S, needles=["foxjit_increment_step"])
        a = FakeArray(G, (16,))
        self.err(ops.adamw, a, FakeArray(G * 2, (16,)), FakeArray(G * 3, (16,)),
                 FakeArray(G * 4, (16,)), FakeArray(G * 5, (1,), "<i4"), lr=float("nan"),
                 rt=rt, needles=["foxjit_adamw"])
        with self.assertRaisesRegex(ValueError, "step: one int32"):
            ops.increment_step(FakeArray(G, (2,), "<i4"), rt=rt)

    def test_wide_bce(self):
        rt, S = self.rt, 0
        small = foxjit.Status.WORKSPACE_TOO_SMALL
        self.assertTrue(rt.lib.has("bce_with_logits_wide"))
        self.err(rt.bce_with_logits_workspace_size, 0,
                 needles=["foxjit_bce_with_logits_workspace_size", "n is 0"])
        self.err(rt.bce_with_logits_workspace_size, 1 << 31, status=foxjit.Status.UNSUPPORTED,
                 needles=["limit"])
        # At most 8 KiB, whole doubles, and a size for n serves every smaller n.
        sizes = [rt.bce_with_logits_workspace_size(n)
                 for n in (1, 2048, 2049, 100_000, (1 << 31) - 1)]
        self.assertGreater(sizes[0], 0)
        self.assertEqual(sizes, sorted(sizes))
        self.assertTrue(all(b % 8 == 0 and b <= 8192 for b in sizes), sizes)
        n = 100_000
        ws = rt.bce_with_logits_workspace_size(n)
        W, name = G * 4, "foxjit_bce_with_logits_wide"
        self.err(rt.bce_with_logits_wide, G, G * 2, 0, G * 3, False, 0, W, ws, S,
                 needles=[name, "n is 0"])
        self.err(rt.bce_with_logits_wide, 0, G * 2, n, G * 3, False, 0, W, ws, S,
                 needles=[name, "z is NULL"])
        self.err(rt.bce_with_logits_wide, G, G * 2, n, 0, False, 0, W, ws, S,
                 needles=[name, "loss is NULL"])
        self.err(rt.bce_with_logits_wide, G, G * 2, n, G * 3, False, G + 2, W, ws, S,
                 needles=[name, "dz", "aligned"])
        self.err(rt.bce_with_logits_wide, G, G * 2, n, G * 3, False, G, 0, ws, S, status=small,
                 needles=[name, "workspace is NULL"])
        self.err(rt.bce_with_logits_wide, G, G * 2, n, G * 3, True, G, W + 4, ws, S,
                 needles=[name, "8-byte aligned"])
        self.err(rt.bce_with_logits_wide, G, G * 2, n, G * 3, False, 0, W, ws - 8, S,
                 status=small, needles=[name, "workspace_bytes"])
        # Array level: with a workspace the default is the wide form, whose
        # checks answer; wide=True without torch needs the workspace given.
        z, y, loss = FakeArray(G, (n,)), FakeArray(G * 2, (n,)), FakeArray(G * 3, (1,))
        self.err(ops.bce_with_logits, z, y, loss=loss, want_dz=False,
                 workspace=FakeArray(W + 4, (ws,), "|u1"), rt=rt, needles=[name, "aligned"])
        self.err(ops.bce_with_logits, z, y, loss=loss, want_dz=False, wide=True,
                 workspace=FakeArray(W, (ws - 8,), "|u1"), rt=rt, status=small,
                 needles=[name, "workspace_bytes is %d" % (ws - 8)])
        self.err(ops.bce_with_logits, z, y, loss=loss, want_dz=False,
                 workspace=FakeArray(W, (ws // 4 - 2,)), rt=rt, status=small,
                 needles=[name, "workspace_bytes is %d" % (ws - 8)])
        with self.assertRaisesRegex(TypeError, "workspace: pass a device buffer of %d bytes"
                                    % ws):
            ops.bce_with_logits(z, y, loss=loss, want_dz=False, wide=True, rt=rt)
        # Without torch or a workspace (or with wide=False): the one-block form.
        z0, y0 = FakeArray(G, (0,)), FakeArray(G * 2, (0,))
        self.err(ops.bce_with_logits, z0, y0, loss=loss, want_dz=False, rt=rt,
                 needles=["foxjit_bce_with_logits: n is 0"])
        self.err(ops.bce_with_logits, z0, y0, loss=loss, want_dz=False, wide=False,
                 workspace=FakeArray(W, (64,), "|u1"), rt=rt,
                 needles=["foxjit_bce_with_logits: n is 0"])


if __name__ == "__main__":
    unittest.main()
