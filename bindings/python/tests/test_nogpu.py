"""No GPU needed: loading, the ABI checks, the version, errors with their
status and message, the package's own argument checks and every op's
argument checks in the library (a placeholder runtime pointer that the
library rejects arguments before looking at), and what the ops do with
torch tensors (device checks, the context around a launch, the ordering of
their allocations with another stream) against stand-ins of torch, the
driver and the runtime. Runs under pytest or `python3 -m unittest`."""

import contextlib
import ctypes
import os
import sys
import types
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
        self.abi_err("heads_seq_backward_part", 8, "2.2", rt.heads_seq_backward_part,
                     HeadsSeqArgs(), G, 1 << 20, "dx", 0)
        self.abi_err("bce_with_logits_workspace_size", 4, "2.2",
                     rt.bce_with_logits_workspace_size, 100)
        self.abi_err("bce_with_logits_wide", 4, "2.2", rt.bce_with_logits_wide, G, G * 2, 100,
                     G * 3, False, 0, G * 4, 8, 0)

    def test_older_minor_loads_without_the_wide_bce(self):
        lib = self.fake_library("abi_2_3")
        self.assertEqual(lib.abi[1:], (2, 3))
        self.assertTrue(lib.has("heads_seq_backward_saved"))
        self.assertFalse(lib.has("heads_seq_backward_part"))
        self.assertFalse(lib.has("bce_with_logits_workspace_size"))
        self.assertFalse(lib.has("bce_with_logits_wide"))
        rt = foxjit.Runtime.from_raw(0x1000, lib=lib)
        self.abi_err("bce_with_logits_workspace_size", 4, "2.3",
                     rt.bce_with_logits_workspace_size, 100)
        self.abi_err("bce_with_logits_wide", 4, "2.3", rt.bce_with_logits_wide, G, G * 2, 100,
                     G * 3, False, 0, G * 4, 8, 0)
        # The array-level helper: wide=True refuses; by default it takes the
        # one-block form, which the fake answers with its own message. Past
        # 8192 values (up to them the default is the one-block form whatever
        # the library), with a workspace: where the library has the wide
        # form, the default would take it.
        n = ops._BCE_WIDE_ONE_BLOCK + 2048
        self.assertGreater(n, 8192)
        z, y = FakeArray(G, (n // 8, 8)), FakeArray(G * 2, (n // 8, 8))
        loss, ws = FakeArray(G * 3, (1,)), FakeArray(G * 4, (8192,), "|u1")
        self.abi_err("bce_with_logits_workspace_size", 4, "2.3", ops.bce_with_logits, z, y,
                     loss=loss, want_dz=False, wide=True, workspace=ws, rt=rt)
        for kw in ({}, {"workspace": ws}):
            with self.assertRaises(foxjit.Error, msg=kw) as cm:
                ops.bce_with_logits(z, y, loss=loss, want_dz=False, rt=rt, **kw)
            self.assertEqual(cm.exception.status, foxjit.Status.UNSUPPORTED)
            self.assertIn("fake_foxjit: foxjit_bce_with_logits", cm.exception.message)

    def test_older_minor_loads_without_gae(self):
        lib = self.fake_library("abi_2_4")
        self.assertEqual(lib.abi[1:], (2, 4))
        self.assertTrue(lib.has("bce_with_logits_wide"))
        self.assertFalse(lib.has("gae"))
        self.assertFalse(lib.has("gae_prepare"))
        rt = foxjit.Runtime.from_raw(0x1000, lib=lib)
        for returns in (G * 5, 0):
            self.abi_err("gae", 5, "2.4", rt.gae, G, G * 2, G * 3, 16, 64, 0.99, 0.95, G * 4,
                         returns, 0)
        self.abi_err("gae_prepare", 5, "2.4", rt.gae_prepare)
        # The array-level op refuses before it looks at its outputs (here
        # none given, which interface arrays would need).
        r, v, d = FakeArray(G, (16, 64)), FakeArray(G * 2, (17, 64)), FakeArray(G * 3, (16, 64))
        self.abi_err("gae", 5, "2.4", ops.gae, r, v, d, rt=rt)
        self.abi_err("gae", 5, "2.4", ops.gae, r, v, d, advantages=FakeArray(G * 4, (16, 64)),
                     want_returns=False, rt=rt)
        # The tables of 2.2 and 2.3 lack it too.
        for mode, have in (("abi_2_2", "2.2"), ("abi_2_3", "2.3")):
            lib = self.fake_library(mode)
            self.assertFalse(lib.has("gae"), mode)
            self.abi_err("gae_prepare", 5, have,
                         foxjit.Runtime.from_raw(0x1000, lib=lib).gae_prepare)

    def test_older_minor_loads_without_the_precision(self):
        lib = self.fake_library("abi_2_5")
        self.assertEqual(lib.abi[1:], (2, 5))
        self.assertTrue(lib.has("gae_prepare"))
        self.assertFalse(lib.has("set_precision"))
        self.assertFalse(lib.has("get_precision"))
        rt = foxjit.Runtime.from_raw(0x1000, lib=lib)
        # float32 is what such a library computes: accepted without a call
        # (the placeholder runtime would not survive one), and reported.
        rt.set_precision("float32")
        self.assertEqual(rt.precision(), "float32")
        self.abi_err("set_precision", 6, "2.5", rt.set_precision, "tf32")
        with self.assertRaisesRegex(ValueError, "'float32' or 'tf32', not 'fp16'"):
            rt.set_precision("fp16")
        lib = self.fake_library("abi_2_2")
        self.abi_err("set_precision", 6, "2.2",
                     foxjit.Runtime.from_raw(0x1000, lib=lib).set_precision, "tf32")

    def test_older_minor_loads_without_the_split_column_sums(self):
        lib = self.fake_library("abi_2_6")
        self.assertEqual(lib.abi[1:], (2, 6))
        self.assertTrue(lib.has("get_precision"))
        for entry in ("column_sum_workspace_size", "column_sum_split",
                      "column_sum_split_prepare"):
            self.assertFalse(lib.has(entry), entry)
        rt = foxjit.Runtime.from_raw(0x1000, lib=lib)
        self.abi_err("column_sum_workspace_size", 7, "2.6", rt.column_sum_workspace_size,
                     8192, 42)
        self.abi_err("column_sum_split", 7, "2.6", rt.column_sum_split, G, 8192, 42, G * 2,
                     True, G * 3, 1 << 16, 0)
        self.abi_err("column_sum_split_prepare", 7, "2.6", rt.column_sum_split_prepare, 8192, 42)
        # The array-level op refuses before it looks at its outputs (here
        # none given, which interface arrays would need).
        self.abi_err("column_sum_workspace_size", 7, "2.6", ops.column_sum_split,
                     FakeArray(G, (8192, 42)), rt=rt)
        # The older tables lack it too.
        lib = self.fake_library("abi_2_5")
        self.abi_err("column_sum_split_prepare", 7, "2.5",
                     foxjit.Runtime.from_raw(0x1000, lib=lib).column_sum_split_prepare, 4, 4)

    def test_older_minor_loads_without_the_heads_parts(self):
        lib = self.fake_library("abi_2_7")
        self.assertEqual(lib.abi[1:], (2, 7))
        self.assertTrue(lib.has("column_sum_split_prepare"))
        self.assertTrue(lib.has("heads_seq_backward_saved"))
        self.assertFalse(lib.has("heads_seq_backward_part"))
        rt = foxjit.Runtime.from_raw(0x1000, lib=lib)
        # Every part by name and by value, and one that is none of them:
        # the table is checked before anything else.
        for part in ("dx", "params", "all", foxjit._lib.HEADS_SEQ_PART_DX,
                     foxjit._lib.HEADS_SEQ_PART_PARAMS, foxjit._lib.HEADS_SEQ_PART_ALL, 4):
            self.abi_err("heads_seq_backward_part", 8, "2.7", rt.heads_seq_backward_part,
                         HeadsSeqArgs(), G, 1 << 20, part, 0)
        self.abi_err("heads_seq_backward_part", 8, "2.7", rt.heads_seq_backward_part,
                     HeadsSeqArgs(), 0, 0, "params", 0)
        # The older tables lack it too.
        for mode, have in (("abi_2_6", "2.6"), ("abi_2_3", "2.3")):
            lib = self.fake_library(mode)
            self.assertFalse(lib.has("heads_seq_backward_part"), mode)
            self.abi_err("heads_seq_backward_part", 8, have,
                         foxjit.Runtime.from_raw(0x1000, lib=lib).heads_seq_backward_part,
                         HeadsSeqArgs(), 0, 0, "all", 0)

    def test_version_and_abi(self):
        need_library(self)
        self.assertEqual(foxjit.version(), foxjit.__version__)
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

    def test_heads_x_width(self):
        """x's width must be the parameters' D in the backward as in the
        forward: the kernels read D floats of every row of x."""
        h, e, d = 2, 4, 5
        shapes = {"w1": (h, e, d), "b1": (h, e), "w2": (h, e, e), "b2": (h, e),
                  "w_gate": (h, e), "b_gate": (h,), "w_main": (h, e), "b_main": (h,),
                  "w_skip": (h, d), "b_skip": (h,)}
        p = {n: FakeArray(G * (i + 1), shapes[n]) for i, n in enumerate(ops.HEADS_PARAMS)}
        x, dlogits = FakeArray(G * 20, (3, d - 2)), FakeArray(G * 21, (3, h))
        scratch = {"d" + n: FakeArray(G * (30 + i), (3,) + shapes[n])
                   for i, n in enumerate(ops.HEADS_PARAMS)}
        with self.assertRaisesRegex(ValueError, r"x: shape \(3, 3\), expected \(batch, 5\)"):
            ops.heads_forward(x, p, logits=FakeArray(G * 22, (3, h)), rt=self.rt)
        # dx over x: were x's width not checked, the library would refuse
        # the overlap (the placeholder runtime must not be reached).
        with self.assertRaisesRegex(ValueError, r"x: shape \(3, 3\), expected \(batch, 5\)"):
            ops.heads_backward(x, p, dlogits, dx=FakeArray(G * 20, (3, d)), scratch=scratch,
                               rt=self.rt)
        with self.assertRaisesRegex(ValueError, r"x: shape \(2, 3, 3\), expected"):
            ops.heads_seq_backward(FakeArray(G * 20, (2, 3, d - 2)), p,
                                   FakeArray(G * 21, (2, 3, h)), rt=self.rt)

    def test_byte_strides(self):
        """Contiguity in the typestr's item size: a dense byte workspace with
        strides (1,) passes (the library's own check answers), one with
        strides (4,) is refused; so is a masked array."""
        ws = self.rt.rank_normalize_workspace_size(1000, "max")
        r, out = FakeArray(G, (1000,)), FakeArray(G * 2, (1000,))
        with self.assertRaises(foxjit.Error) as cm:
            ops.rank_normalize(r, float("nan"), 0.0, out=out, rt=self.rt,
                               workspace=FakeArray(G * 100, (ws,), "|u1", strides=(1,)))
        self.assertIn("std_ema", cm.exception.message)
        with self.assertRaisesRegex(ValueError, r"workspace: strides \(4,\) are not "
                                    r"C-contiguous \(typestr '\|u1': 1-byte items\)"):
            ops.rank_normalize(r, 1.0, 0.0, out=out, rt=self.rt,
                               workspace=FakeArray(G * 100, (ws,), "|u1", strides=(4,)))
        # float32: strides in 4-byte steps; a dim of extent 1 is never stepped
        x = FakeArray(G, (1, 4), strides=(64, 4))
        with self.assertRaises(foxjit.Error) as cm:
            ops.column_sum(x, out=FakeArray(G, (4,)), rt=self.rt)
        self.assertIn("overlaps", cm.exception.message)
        with self.assertRaisesRegex(ValueError, "not C-contiguous"):
            ops.column_sum(FakeArray(G, (4, 4), strides=(4, 1)), out=FakeArray(G * 2, (4,)),
                           rt=self.rt)
        with self.assertRaisesRegex(ValueError, r"strides \(16,\) for shape \(4, 4\)"):
            ops.column_sum(FakeArray(G, (4, 4), strides=(16,)), out=FakeArray(G * 2, (4,)),
                           rt=self.rt)
        masked = FakeArray(G, (4, 4))
        masked.__cuda_array_interface__["mask"] = FakeArray(G * 3, (4, 4), "|b1")
        with self.assertRaisesRegex(ValueError, "x: a masked array"):
            ops.column_sum(masked, out=FakeArray(G * 2, (4,)), rt=self.rt)
        masked.__cuda_array_interface__["mask"] = None      # "mask": None is no mask
        with self.assertRaises(foxjit.Error):
            ops.column_sum(masked, out=FakeArray(G, (4,)), rt=self.rt)

    def test_target_needs_abi_2_2(self):
        """A target for an ABI 2.1 library (which reads params without the
        field) is refused before anything is called."""
        lib = foxjit.Library(library_path())
        self.assertGreaterEqual(lib.abi[2], 2)
        lib.abi = (lib.abi[0], 2, 1)        # as an ABI 2.1 library's table says
        with self.assertRaises(foxjit.AbiError) as cm:
            foxjit.Runtime(lib=lib, target="compute_89")
        self.assertIn("target needs fox-jit ABI 2.2", str(cm.exception))
        self.assertIn("ABI 2.1", str(cm.exception))
        # Without a target it goes on to the library (no GPU here: its error).
        with self.assertRaises(foxjit.Error):
            foxjit.Runtime(lib=lib)

    def test_row_blocks(self):
        """The heads' rows in [batch, steps] blocks within the limits: every
        row once, in order, no padding."""
        for mb, mt in ((1024, 4096), (3, 5), (1, 1), (2, 7)):
            for n in (0, 1, mt - 1, mt, mt + 1, 2 * mt + 3, mb * mt, mb * mt + 1,
                      3 * mb * mt + 2 * mt + 1, 10_000):
                blocks = list(ops._row_blocks(n, mb, mt))
                at = 0
                for start, b, st in blocks:
                    self.assertEqual(start, at, (n, mb, mt, blocks))
                    self.assertTrue(1 <= b <= mb and 1 <= st <= mt, (n, mb, mt, blocks))
                    at += b * st
                self.assertEqual(at, n, (n, mb, mt, blocks))
                # full blocks, then at most one partial one
                self.assertLessEqual(len(blocks), -(-n // (mb * mt)) + 1, (n, blocks))
        self.assertEqual(list(ops._row_blocks(4096 * 2 + 300, 1024, 4096)),
                         [(0, 2, 4096), (8192, 1, 300)])

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

    def test_gae_shapes_and_dtypes(self):
        """rewards [T, N], values [T + 1, N], dones [T, N], float32 each;
        the outputs [T, N], given when the inputs are not torch tensors."""
        T, N = 16, 64
        r, v, d = FakeArray(G, (T, N)), FakeArray(G * 2, (T + 1, N)), FakeArray(G * 3, (T, N))
        adv, ret = FakeArray(G * 4, (T, N)), FakeArray(G * 5, (T, N))
        with self.assertRaisesRegex(ValueError, r"rewards: expected 2 dims \[steps, envs\], "
                                    r"got shape \(1024,\)"):
            ops.gae(FakeArray(G, (T * N,)), v, d, advantages=adv, returns=ret, rt=self.rt)
        with self.assertRaisesRegex(ValueError, r"values: shape \(16, 64\), expected "
                                    r"\(17, 64\)"):
            ops.gae(r, FakeArray(G * 2, (T, N)), d, advantages=adv, returns=ret, rt=self.rt)
        with self.assertRaisesRegex(ValueError, r"dones: shape \(17, 64\), expected "
                                    r"\(16, 64\)"):
            ops.gae(r, v, FakeArray(G * 3, (T + 1, N)), advantages=adv, returns=ret, rt=self.rt)
        for typestr in ("|b1", "<f8", "<i4"):
            with self.assertRaisesRegex(TypeError, "dones: typestr %r; fox-jit needs float32"
                                        % typestr):
                ops.gae(r, v, FakeArray(G * 3, (T, N), typestr), advantages=adv, returns=ret,
                        rt=self.rt)
        with self.assertRaisesRegex(TypeError, "values: typestr '<f8'"):
            ops.gae(r, FakeArray(G * 2, (T + 1, N), "<f8"), d, advantages=adv, rt=self.rt)
        with self.assertRaisesRegex(ValueError, r"advantages: shape \(17, 64\), expected "
                                    r"\(16, 64\)"):
            ops.gae(r, v, d, advantages=FakeArray(G * 4, (T + 1, N)), returns=ret, rt=self.rt)
        with self.assertRaisesRegex(ValueError, r"returns: shape \(64, 16\), expected "
                                    r"\(16, 64\)"):
            ops.gae(r, v, d, advantages=adv, returns=FakeArray(G * 5, (N, T)), rt=self.rt)
        with self.assertRaisesRegex(ValueError, "returns: the array is read-only"):
            ops.gae(r, v, d, advantages=adv, returns=FakeArray(G * 5, (T, N), readonly=True),
                    rt=self.rt)
        with self.assertRaisesRegex(TypeError, r"advantages: pass it \(advantages=...\)"):
            ops.gae(r, v, d, rt=self.rt)
        with self.assertRaisesRegex(TypeError, r"returns: pass it \(returns=...\)"):
            ops.gae(r, v, d, advantages=adv, rt=self.rt)


# ---- the torch path without torch or a GPU ---------------------------------------------
#
# foxjit.ops finds torch in sys.modules and the driver in ops._driver; these
# stand-ins take their places to show what the ops do with torch tensors:
# the device checks of what the caller gives, the context made current
# around the launch and restored after, and the ordering of what the ops
# allocate when the op runs on another stream. Nothing reaches the library:
# the runtime is a recorder.

CUR, SIDE = 0x5000, 0x6000      # torch's current stream, another stream
CTX, OTHER = 0xC0, 0xAA         # the device's primary context, a foreign one


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


class _Stream:
    def __init__(self, log, handle):
        self.log, self.cuda_stream = log, handle

    def wait_stream(self, other):
        self.log.append(("wait_stream", self.cuda_stream, other.cuda_stream))


class FakeTorch(types.ModuleType):
    """torch as far as foxjit.ops and foxjit.arrays use it: CUDA tensors at
    made-up addresses, streams and allocations that only log."""

    def __init__(self, log):
        super().__init__("torch")
        self.log = log
        for n in ("float32", "int32", "uint32", "uint8", "int8"):
            setattr(self, n, _Dtype(n))
        self._next = 0x100000
        torch = self

        class Tensor:
            def __init__(self, shape, dtype=None, device=0, ptr=None):
                self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
                self.dtype = dtype or torch.float32
                self.device = types.SimpleNamespace(type="cuda", index=device)
                self._ptr = ptr if ptr is not None else torch._alloc()

            def data_ptr(self):
                return self._ptr

            def get_device(self):
                return self.device.index if self.device.type == "cuda" else -1

            def is_contiguous(self):
                return True

            def record_stream(self, stream):
                torch.log.append(("record_stream", self._ptr, stream.cuda_stream))

        self.Tensor = Tensor

        @contextlib.contextmanager
        def device(index):
            yield
        self.cuda = types.SimpleNamespace(
            current_stream=lambda device=None: _Stream(log, CUR),
            ExternalStream=lambda handle, device=None: _Stream(log, handle),
            current_device=lambda: 0, init=lambda: None, synchronize=lambda: None,
            device=device)

    def _alloc(self):
        self._next += 0x10000
        return self._next

    def _make(self, what, shape, dtype, device):
        # device: an index (what foxjit.ops passes) or "cuda:N"
        if isinstance(device, str):
            device = int(device.split(":")[1]) if ":" in device else 0
        t = self.Tensor(shape, dtype, device)
        self.log.append((what, t.data_ptr()))
        return t

    def empty(self, shape, dtype=None, device="cuda:0"):
        return self._make("empty", shape, dtype, device)

    def zeros(self, shape, dtype=None, device="cuda:0"):
        return self._make("zeros", shape, dtype, device)


class FakeDriver:
    """libcuda's context calls on one thread's stack of contexts; fail maps a
    call's name to the CUresult it returns instead of succeeding."""

    def __init__(self, log, current=0):
        self.log, self.stack, self.fail = log, [current], {}

    def current(self):
        return self.stack[-1]

    def cuCtxGetCurrent(self, ref):
        ref._obj.value = self.stack[-1] or None
        return 0

    def cuCtxSetCurrent(self, ctx):     # not for the ops: they push and pop
        self.log.append(("set", ctx))
        self.stack[-1] = ctx
        return 0

    def cuCtxPushCurrent_v2(self, ctx):
        if "push" in self.fail:
            return self.fail["push"]
        self.log.append(("push", ctx))
        self.stack.append(ctx)
        return 0

    def cuCtxPopCurrent_v2(self, ref):
        if "pop" in self.fail:
            return self.fail["pop"]
        ref._obj.value = self.stack.pop()
        self.log.append(("pop", ref._obj.value))
        return 0

    def cuDeviceGet(self, ref, ordinal):
        ref._obj.value = ordinal
        return 0

    def cuDevicePrimaryCtxRetain(self, ref, dev):
        if "retain" in self.fail:
            return self.fail["retain"]
        ref._obj.value = CTX
        return 0

    def cuGetErrorName(self, rc, ref):
        ref._obj.value = {201: b"CUDA_ERROR_INVALID_CONTEXT",
                          101: b"CUDA_ERROR_INVALID_DEVICE"}.get(rc, b"CUDA_ERROR_UNKNOWN")
        return 0


class RecordingRuntime:
    """A Runtime made in context ctx whose entries log each launch with the
    context current at it and return the library's statuses: the context
    errors when ctx is not current (the library's first check, before
    anything is launched), INVALID_ARGUMENT for the names in fail."""

    def __init__(self, log, driver, ctx, fail=()):
        self.log, self.driver, self.ctx, self.fail = log, driver, ctx, fail
        self.lib = types.SimpleNamespace(has=lambda entry: True, need=lambda entry, minor: None,
                                         last_error=lambda: "recorded failure")
        self._rt = ctypes.c_void_p(0x1000)
        self._sizes = {}
        self._fns = self

    def set_precision(self, precision):
        self.log.append(("precision", precision, self.ctx))

    def __getattr__(self, name):
        if name.endswith("_workspace_size"):
            return lambda *args: 256

        def entry(rt, *args):
            cur = self.driver.current()
            if not cur:
                return foxjit.Status.NO_CONTEXT
            if cur != self.ctx:
                return foxjit.Status.WRONG_CONTEXT
            self.log.append(("launch", name, cur, args[-1]))
            return INV if name in self.fail else 0
        return entry


class TorchPath(unittest.TestCase):
    def setUp(self):
        from foxjit import arrays
        self.log = []
        self.torch = FakeTorch(self.log)
        self.driver = FakeDriver(self.log, current=CTX)
        self.rt = RecordingRuntime(self.log, self.driver, CTX)
        self.rt1 = RecordingRuntime(self.log, self.driver, CTX + 1)
        saved_dtypes = dict(arrays._TORCH_DTYPES)
        saved = (sys.modules.get("torch"), ops._driver, dict(ops._runtimes), ops.Runtime,
                 ops._precision_name)

        def restore():
            if saved[0] is None:
                sys.modules.pop("torch", None)
            else:
                sys.modules["torch"] = saved[0]
            ops._driver = saved[1]
            ops._runtimes.clear()
            ops._runtimes.update(saved[2])
            ops.Runtime = saved[3]
            ops._precision_name = saved[4]
            arrays._TORCH_DTYPES.clear()
            arrays._TORCH_DTYPES.update(saved_dtypes)
        self.addCleanup(restore)
        arrays._TORCH_DTYPES.clear()
        sys.modules["torch"] = self.torch
        ops._driver = self.driver
        ops._runtimes.clear()
        ops._runtimes[0] = (self.rt, CTX)
        ops._runtimes[1] = (self.rt1, CTX + 1)

    def t(self, *shape, device=0, dtype=None):
        return self.torch.Tensor(shape, dtype, device)

    def launches(self):
        return [e for e in self.log if e[0] == "launch"]

    def test_given_outputs_on_another_gpu(self):
        """Outputs and workspaces given by the caller must be on the GPU of
        the inputs: the library would be handed another device's memory."""
        x = self.t(8, 4)
        with self.assertRaisesRegex(ValueError, "out: the tensor is on cuda:1, the op's inputs "
                                    "on cuda:0"):
            ops.column_sum(x, out=self.t(4, device=1))
        with self.assertRaisesRegex(ValueError, "out: the tensor is on cuda:1"):
            ops.reduce_axis0(self.t(2, 3, 4), out=self.t(12, device=1))
        r = self.t(100)
        with self.assertRaisesRegex(ValueError, "workspace: the tensor is on cuda:1"):
            ops.rank_normalize(r, 1.0, 0.0, out=self.t(100),
                               workspace=self.t(256, device=1, dtype=self.torch.uint8))
        with self.assertRaisesRegex(ValueError, "dz: the tensor is on cuda:1"):
            ops.bce_with_logits(self.t(64), self.t(64), dz=self.t(64, device=1))
        with self.assertRaisesRegex(ValueError, "tensors are on different GPUs"):
            ops.bias_grad_reduce(x, self.t(4, device=1))
        self.assertEqual(self.launches(), [])
        # On the inputs' GPU (the second one here): launched, in its context.
        x1 = self.t(8, 4, device=1)
        ops.column_sum(x1, out=self.t(4, device=1))
        self.assertEqual(self.launches(), [("launch", "column_sum", CTX + 1, CUR)])

    def test_context_around_the_launch(self):
        """The op's context is made current for the launch and the caller's
        (here a foreign one, then none) current again after it."""
        for before in (OTHER, 0):
            del self.log[:]
            self.driver.stack = [before]
            x, out = self.t(8, 4), self.t(4)
            ops.column_sum(x, out=out)
            self.assertEqual(self.log, [("push", CTX), ("launch", "column_sum", CTX, CUR),
                                        ("pop", CTX)])
            self.assertEqual(self.driver.stack, [before])
        # Already current: nothing to switch.
        del self.log[:]
        self.driver.stack = [CTX]
        ops.column_sum(self.t(8, 4), out=self.t(4))
        self.assertEqual(self.log, [("launch", "column_sum", CTX, CUR)])
        # A failing launch still gives the caller's context back.
        self.driver.stack = [OTHER]
        self.rt.fail = ("column_sum",)
        with self.assertRaisesRegex(foxjit.Error, "recorded failure"):
            ops.column_sum(self.t(8, 4), out=self.t(4))
        self.assertEqual(self.driver.stack, [OTHER])

    def test_prepared_call(self):
        """prepare() checks the arrays and launches nothing; each call of the
        result launches the op on the same arrays, on torch's current
        stream at that call unless prepare was given one, with the op's
        context made current when the caller's is another, and returns the
        same outputs; a launch the library refuses raises."""
        x, out = self.t(8, 4), self.t(4)
        with self.assertRaisesRegex(ValueError, "out"):
            ops.prepare(ops.column_sum, x, out=self.t(5))
        p = ops.prepare(ops.column_sum, x, out=out)
        self.assertEqual(self.launches(), [])
        self.assertIs(p(), out)
        self.assertIs(p(), out)
        self.assertEqual(self.launches(), [("launch", "column_sum", CTX, CUR)] * 2)
        del self.log[:]
        s = ops.prepare(ops.column_sum, x, out=out, stream=77)
        self.driver.stack = [OTHER]
        s()
        self.assertEqual(self.log, [("push", CTX), ("launch", "column_sum", CTX, 77),
                                    ("pop", CTX)])
        self.assertEqual(self.driver.stack, [OTHER])
        # Outputs it allocates are made once, at prepare.
        del self.log[:]
        self.driver.stack = [CTX]
        b, n_in, n_hid = 2, 3, 4
        r = ops.prepare(ops.cfc_forward, self.t(b, n_in), None, self.t(b),
                        self.t(n_hid, n_in), self.t(n_hid, n_hid), self.t(n_hid),
                        self.t(n_hid))
        made = [e for e in self.log if e[0] == "empty"]
        self.assertEqual(len(made), 2)
        first = r()
        self.assertIs(r()[0], first[0])
        self.assertEqual([e for e in self.log if e[0] == "empty"], made)
        self.assertEqual(len(self.launches()), 2)
        self.rt.fail = ("column_sum",)
        with self.assertRaisesRegex(foxjit.Error, "recorded failure"):
            p()

    def test_driver_errors_are_raised(self):
        self.driver.stack = [OTHER]
        self.driver.fail["push"] = 201
        with self.assertRaises(foxjit.Error) as cm:
            ops.column_sum(self.t(8, 4), out=self.t(4))
        self.assertEqual(cm.exception.status, foxjit.Status.CUDA)
        self.assertIn("cuCtxPushCurrent (of the tensors' GPU's primary context) failed: "
                      "CUDA_ERROR_INVALID_CONTEXT", str(cm.exception))
        self.assertEqual(self.launches(), [])
        self.assertEqual(self.driver.stack, [OTHER])
        del self.driver.fail["push"]
        self.driver.fail["pop"] = 201
        with self.assertRaisesRegex(foxjit.Error, "cuCtxPopCurrent failed"):
            ops.column_sum(self.t(8, 4), out=self.t(4))

    def test_runtime_made_in_the_primary_context(self):
        """runtime_for makes the runtime with the device's primary context
        current and leaves the caller's current; a driver failure on the
        way is an error that names the call."""
        made = []
        ops.Runtime = lambda: made.append(self.driver.current()) or self.rt
        ops._runtimes.clear()
        self.driver.stack = [0]
        self.driver.fail["retain"] = 101
        with self.assertRaises(foxjit.Error) as cm:
            ops.runtime_for(0)
        self.assertIn("cuDevicePrimaryCtxRetain(device 0) failed: CUDA_ERROR_INVALID_DEVICE",
                      str(cm.exception))
        self.assertEqual((made, ops._runtimes), ([], {}))
        del self.driver.fail["retain"]
        self.assertIs(ops.runtime_for(0), self.rt)
        self.assertEqual(made, [CTX])
        self.assertEqual(ops._runtimes, {0: (self.rt, CTX)})
        self.assertEqual(self.driver.stack, [0])
        self.assertIs(ops.runtime_for(self.torch.Tensor((1,)).device.index), self.rt)
        self.assertEqual(made, [CTX])       # made once

    def test_set_precision(self):
        """foxjit.ops.set_precision reaches every runtime foxjit.ops has made
        and every one it makes later; a bad name, or a library too old for
        TF32 behind any of them, changes none."""
        self.assertEqual(ops.get_precision(), "float32")
        ops.set_precision("tf32")
        self.assertEqual(ops.get_precision(), "tf32")
        self.assertEqual(sorted(e for e in self.log if e[0] == "precision"),
                         [("precision", "tf32", CTX), ("precision", "tf32", CTX + 1)])
        self.log.clear()
        later = RecordingRuntime(self.log, self.driver, CTX)
        ops.Runtime = lambda: later
        del ops._runtimes[0]
        self.assertIs(ops.runtime_for(0), later)
        self.assertEqual([e for e in self.log if e[0] == "precision"],
                         [("precision", "tf32", CTX)])
        self.log.clear()
        with self.assertRaisesRegex(ValueError, "'float32' or 'tf32', not 'bf16'"):
            ops.set_precision("bf16")

        def too_old(entry, minor):
            raise foxjit.AbiError("foxjit_%s needs fox-jit ABI 2.%d" % (entry, minor))
        self.rt1.lib = types.SimpleNamespace(has=lambda entry: False, need=too_old)
        with self.assertRaisesRegex(foxjit.AbiError, "foxjit_set_precision needs fox-jit ABI 2.6"):
            ops.set_precision("tf32")
        self.assertEqual(self.log, [])
        self.assertEqual(ops.get_precision(), "tf32")
        ops.set_precision("float32")
        self.assertEqual(ops.get_precision(), "float32")
        self.assertEqual(len([e for e in self.log if e[1] == "float32"]), 2)

    def test_nothing_asked_of_the_driver_on_the_common_path(self):
        """With the runtime's context current, a call asks the driver
        nothing (the library's own check answers); torch's current stream
        comes from its raw query when torch has one; a workspace size is
        asked of the library once per runtime and shape."""
        calls = []
        get = self.driver.cuCtxGetCurrent
        self.driver.cuCtxGetCurrent = lambda ref: calls.append("get") or get(ref)
        self.torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: SIDE + d)
        ops.column_sum(self.t(8, 4), out=self.t(4))
        ops.column_sum(self.t(8, 4, device=1), out=self.t(4, device=1))  # cuda:1's context?
        self.assertEqual(self.launches(), [("launch", "column_sum", CTX, SIDE),
                                           ("launch", "column_sum", CTX + 1, SIDE + 1)])
        self.assertEqual(calls, ["get"])    # only after cuda:1's runtime was refused
        asked = []
        self.rt.cfc_seq_workspace_size = lambda *dims: asked.append(dims) or 512
        b, k, n_in, n_hid = 2, 3, 4, 5
        for _ in range(3):
            ops.cfc_seq_backward(self.t(b, k, n_in), self.t(b, k), self.t(n_hid, n_in),
                                 self.t(n_hid, n_hid), self.t(n_hid), self.t(n_hid),
                                 self.t(b, k, n_hid), self.t(b, k, n_hid), self.t(b, k, n_hid))
        self.assertEqual(asked, [(b, k, n_in, n_hid)])

    def test_allocations_ordered_before_the_op_on_another_stream(self):
        """With stream= another stream than torch's current one, the op waits
        for the current stream after the outputs and workspace it allocates
        there (torch.zeros fills on it) and records each as used by the op's
        stream; on the current stream neither is needed."""
        x = self.t(8, 4)
        out = ops.column_sum(x, accumulate=True, stream=SIDE)
        p = out.data_ptr()
        self.assertEqual(self.log, [("zeros", p), ("wait_stream", SIDE, CUR),
                                    ("record_stream", p, SIDE),
                                    ("launch", "column_sum", CTX, SIDE)])
        del self.log[:]
        o = ops.rank_normalize(self.t(100), 1.0, 0.0, stream=SIDE)
        ws = [e[1] for e in self.log if e[0] == "empty"][1]
        self.assertEqual(self.log, [("empty", o.data_ptr()), ("empty", ws),
                                    ("wait_stream", SIDE, CUR),
                                    ("record_stream", o.data_ptr(), SIDE),
                                    ("record_stream", ws, SIDE),
                                    ("launch", "rank_normalize", CTX, SIDE)])
        # Every output of a backward (zeros for the per-batch scratch).
        del self.log[:]
        b, n_in, n_hid = 2, 3, 4
        r = ops.cfc_backward(self.t(b, n_in), self.t(b, n_hid), self.t(b),
                             self.t(n_hid, n_in), self.t(n_hid, n_hid), self.t(n_hid),
                             self.t(n_hid), self.t(b, n_hid), self.t(b, n_hid), stream=SIDE)
        made = [e[1] for e in self.log if e[0] in ("empty", "zeros")]
        self.assertEqual(sorted(made), sorted(t.data_ptr() for t in r.values()))
        waits = [i for i, e in enumerate(self.log) if e[0] == "wait_stream"]
        self.assertEqual(len(waits), 1)
        self.assertGreater(waits[0], max(i for i, e in enumerate(self.log)
                                          if e[0] in ("empty", "zeros")))
        self.assertEqual(sorted(e[1] for e in self.log if e[0] == "record_stream"),
                         sorted(made))
        self.assertEqual(self.log[-1], ("launch", "cfc_backward", CTX, SIDE))
        # The current stream, named or not, or nothing allocated: no ordering.
        for kw in ({}, {"stream": CUR}):
            del self.log[:]
            out = ops.column_sum(x, accumulate=True, **kw)
            self.assertEqual(self.log, [("zeros", out.data_ptr()),
                                        ("launch", "column_sum", CTX, CUR)])
        del self.log[:]
        ops.column_sum(x, out=self.t(4), stream=SIDE)
        self.assertEqual(self.log, [("launch", "column_sum", CTX, SIDE)])


    def test_gae(self):
        """For torch inputs: the outputs made on the inputs' GPU ([T, N]
        float32, not zeroed: the op overwrites them), returns only when
        wanted (0 to the library otherwise), the arguments in the C order,
        and the checks of what the caller gives."""
        calls = []
        entry = self.rt.gae
        self.rt.gae = lambda rt, *args: calls.append(args) or entry(rt, *args)
        T, N = 8, 5
        r, v, d = self.t(T, N), self.t(T + 1, N), self.t(T, N)
        adv, ret = ops.gae(r, v, d, gamma=0.9, lambda_=0.8)
        self.assertEqual((adv.shape, ret.shape), ((T, N), (T, N)))
        self.assertEqual((adv.dtype, ret.dtype), (self.torch.float32, self.torch.float32))
        self.assertEqual((adv.device.index, ret.device.index), (0, 0))
        self.assertEqual(self.log, [("empty", adv.data_ptr()), ("empty", ret.data_ptr()),
                                    ("launch", "gae", CTX, CUR)])
        self.assertEqual(calls[-1], (r.data_ptr(), v.data_ptr(), d.data_ptr(), T, N, 0.9, 0.8,
                                     adv.data_ptr(), ret.data_ptr(), CUR))
        # Not wanted: none made, 0 passed; the defaults gamma 0.99, lambda 0.95.
        del self.log[:]
        adv, ret = ops.gae(r, v, d, want_returns=False)
        self.assertIsNone(ret)
        self.assertEqual(self.log, [("empty", adv.data_ptr()), ("launch", "gae", CTX, CUR)])
        self.assertEqual(calls[-1][5:], (0.99, 0.95, adv.data_ptr(), 0, CUR))
        # Given outputs are written (returns too, want_returns or not).
        a, q = self.t(T, N), self.t(T, N)
        got = ops.gae(r, v, d, advantages=a, returns=q, want_returns=False)
        self.assertIs(got[0], a)
        self.assertIs(got[1], q)
        self.assertEqual(calls[-1][7:], (a.data_ptr(), q.data_ptr(), CUR))
        # On another stream: the op waits for its allocations and records them.
        del self.log[:]
        adv, ret = ops.gae(r, v, d, stream=SIDE)
        self.assertEqual(self.log, [("empty", adv.data_ptr()), ("empty", ret.data_ptr()),
                                    ("wait_stream", SIDE, CUR),
                                    ("record_stream", adv.data_ptr(), SIDE),
                                    ("record_stream", ret.data_ptr(), SIDE),
                                    ("launch", "gae", CTX, SIDE)])
        # The second GPU's inputs: its runtime, in its context.
        r1, v1, d1 = self.t(T, N, device=1), self.t(T + 1, N, device=1), self.t(T, N, device=1)
        adv1, _ = ops.gae(r1, v1, d1)
        self.assertEqual(adv1.device.index, 1)
        self.assertEqual(self.launches()[-1], ("launch", "gae", CTX + 1, CUR))
        # Refused before anything is launched.
        del self.log[:]
        with self.assertRaisesRegex(TypeError, "dones: dtype torch.int32; fox-jit needs "
                                    "float32"):
            ops.gae(r, v, self.t(T, N, dtype=self.torch.int32))
        with self.assertRaisesRegex(ValueError, r"values: shape \(8, 5\), expected \(9, 5\)"):
            ops.gae(r, self.t(T, N), d)
        with self.assertRaisesRegex(ValueError, r"gae: the tensors are on different GPUs "
                                    r"\(cuda:0, cuda:1\)"):
            ops.gae(r, self.t(T + 1, N, device=1), d)
        with self.assertRaisesRegex(ValueError, "advantages: the tensor is on cuda:1, the op's "
                                    "inputs on cuda:0"):
            ops.gae(r, v, d, advantages=self.t(T, N, device=1))
        with self.assertRaisesRegex(ValueError, "returns: the tensor is on cuda:1"):
            ops.gae(r, v, d, returns=self.t(T, N, device=1))
        self.assertEqual(self.launches(), [])


    def test_column_sum_split(self):
        """For torch inputs: the output made (zeroed to accumulate), the
        workspace made zeroed when not given (the op needs zeros on entry),
        the arguments in the C order, and a given workspace passed as is."""
        calls = []
        entry = self.rt.column_sum_split
        self.rt.column_sum_split = lambda rt, *args: calls.append(args) or entry(rt, *args)
        x = self.t(64, 8)
        out = ops.column_sum_split(x)
        self.assertEqual(out.shape, (8,))
        ws_ptr = self.log[1][1]
        self.assertEqual(self.log, [("empty", out.data_ptr()), ("zeros", ws_ptr),
                                    ("launch", "column_sum_split", CTX, CUR)])
        self.assertEqual(calls[-1], (x.data_ptr(), 64, 8, out.data_ptr(), 0, ws_ptr, 256, CUR))
        del self.log[:]
        out = ops.column_sum_split(x, accumulate=True)
        self.assertEqual(self.log[0], ("zeros", out.data_ptr()))
        self.assertEqual(calls[-1][4], 1)
        del self.log[:]
        ws = self.t(1024, dtype=self.torch.uint8)
        o = self.t(8)
        self.assertIs(ops.column_sum_split(x, out=o, workspace=ws), o)
        self.assertEqual(self.log, [("launch", "column_sum_split", CTX, CUR)])
        self.assertEqual(calls[-1], (x.data_ptr(), 64, 8, o.data_ptr(), 0, ws.data_ptr(), 1024,
                                     CUR))
        with self.assertRaisesRegex(ValueError, "workspace: the tensor is on cuda:1"):
            ops.column_sum_split(x, workspace=self.t(1024, device=1, dtype=self.torch.uint8))


class _FakeGuards:
    """torch's TensorGuards as _fastcall uses it, over FakeTorch's tensors:
    the class, dtype, device and shape of each."""

    def __init__(self, *tensors, dynamic_dims_sizes=None, dynamic_dims_strides=None):
        self.want = [self._meta(t) for t in tensors]

    @staticmethod
    def _meta(t):
        return (type(t), t.dtype, t.get_device(), tuple(t.shape))

    def check(self, *tensors):
        if len(tensors) != len(self.want):
            raise TypeError("wrong length")
        return all(hasattr(t, "shape") and self._meta(t) == w
                   for t, w in zip(tensors, self.want))


class FastPath(TorchPath):
    """The plain wrappers' fast path (foxjit/_fastcall.py): a call like a
    recent one launches what that one launched, with the current tensors'
    addresses in place of the old ones, and nothing else changes; a call
    that differs in anything the checks look at runs them again."""

    def setUp(self):
        super().setUp()
        from foxjit import _fastcall
        saved = list(_fastcall._guard_state)

        def make(tensors):
            return _FakeGuards(*tensors, dynamic_dims_sizes=[], dynamic_dims_strides=[])
        _fastcall._guard_state[:] = [self.torch, self.torch.Tensor, make]
        _fastcall.forget()
        # Remember calls of any number of tensors (column_sum's two too).
        saved_min = _fastcall._MIN_TENSORS
        _fastcall._MIN_TENSORS = 1

        def restore():
            _fastcall._guard_state[:] = saved
            _fastcall._MIN_TENSORS = saved_min
            _fastcall.forget()
        self.addCleanup(restore)
        self.torch._next = 1 << 40        # device addresses are above 2**32
        self.args = []
        entry = RecordingRuntime.__getattr__

        def logging(rt, name):            # each launch's arguments too
            fn = entry(rt, name)
            if name.endswith("_workspace_size"):
                return fn

            def launch(rtp, *args):
                self.args.append((name, tuple(
                    {f: getattr(a._obj, f) for f, _ in a._obj._fields_}
                    if isinstance(a, type(ctypes.byref(ctypes.c_int()))) else a
                    for a in args)))
                return fn(rtp, *args)
            return launch
        for rt in (self.rt, self.rt1):
            rt.__class__ = type("LoggingRuntime", (RecordingRuntime,),
                                {"__getattr__": logging})

    def test_same_and_new_tensors(self):
        x, out = self.t(64, 5), self.t(5)
        for _ in range(3):
            ops.column_sum(x, out=out)
        (e,) = ops.column_sum.entries()
        self.assertEqual(e.hits, 2)
        x2, out2 = self.t(64, 5), self.t(5)
        self.assertIs(ops.column_sum(x2, out=out2), out2)
        self.assertEqual(e.hits, 3)
        want = [("column_sum", (x.data_ptr(), 64, 5, out.data_ptr(), 0, CUR))] * 3
        want.append(("column_sum", (x2.data_ptr(), 64, 5, out2.data_ptr(), 0, CUR)))
        self.assertEqual(self.args, want)

    def test_anything_else_changed_runs_the_checks(self):
        x, out = self.t(64, 5), self.t(5)
        ops.column_sum(x, out=out)
        ops.column_sum(x, out=out, accumulate=True)        # another keyword
        ops.column_sum(x, out, True)                       # the same, by position
        ops.column_sum(x, out, False)                      # another value
        ops.column_sum(self.t(32, 5), out=out)             # another shape
        ops.column_sum(self.t(64, 5, device=1), out=self.t(5, device=1))  # another GPU
        self.assertEqual([a for _, a in self.args], [
            (x.data_ptr(), 64, 5, out.data_ptr(), 0, CUR),
            (x.data_ptr(), 64, 5, out.data_ptr(), 1, CUR),
            (x.data_ptr(), 64, 5, out.data_ptr(), 1, CUR),
            (x.data_ptr(), 64, 5, out.data_ptr(), 0, CUR),
            (self.args[4][1][0], 32, 5, out.data_ptr(), 0, CUR),
            # cuda:1's runtime: refused in cuda:0's context, then again in its own
            (self.args[5][1][0], 64, 5, self.args[5][1][3], 0, CUR),
            (self.args[5][1][0], 64, 5, self.args[5][1][3], 0, CUR)])
        self.assertEqual([e[2] for e in self.launches()], [CTX] * 5 + [CTX + 1])
        self.assertTrue(all(e.hits == 0 for e in ops.column_sum.entries()))
        self.args.clear()
        ops.column_sum(x, out=out, accumulate=False)
        ops.column_sum(x, out=out, accumulate=False)       # remembered
        ops.column_sum(x, out=out, accumulate=True)        # the same keyword, another value
        self.assertEqual([a[4] for _, a in self.args], [0, 0, 1])
        with self.assertRaisesRegex(ValueError, r"out: shape \(6,\), expected \(5,\)"):
            ops.column_sum(x, out=self.t(6))               # checked, not remembered
        with self.assertRaisesRegex(ValueError, "aligned"):
            bad = self.t(5)
            bad._ptr += 2
            ops.column_sum(x, out=bad)                     # matches but for alignment

    def test_struct_arguments_follow_the_tensors(self):
        b, n_in, n_hid = 4, 3, 5
        def call():
            ts = [self.t(b, n_in), self.t(b, n_hid), self.t(b), self.t(n_hid, n_in),
                  self.t(n_hid, n_hid), self.t(n_hid), self.t(n_hid), self.t(b, n_hid),
                  self.t(b, n_hid)]
            r = ops.cfc_forward(*ts[:7], h_out=ts[7], u=ts[8])
            self.assertEqual(r, (ts[7], ts[8]))
            return ts
        for _ in range(3):
            ts = call()
            fields = self.args[-1][1][0]
            self.assertEqual([fields[n] for n in ("x", "h", "dt", "w_in", "w_rec", "bias",
                                                  "tau", "h_out", "u")],
                             [t.data_ptr() for t in ts])
            self.assertEqual((fields["batch"], fields["n_in"], fields["n_hid"]),
                             (b, n_in, n_hid))
        self.assertEqual(ops.cfc_forward.entries()[0].hits, 2)
        # A call with one new address and one misaligned one is checked
        # (and refused) and changes nothing a later call launches.
        bad = list(ts)
        bad[0] = self.t(b, n_in)
        bad[1] = self.t(b, n_hid)
        bad[1]._ptr += 2
        with self.assertRaisesRegex(ValueError, "aligned"):
            ops.cfc_forward(*bad[:7], h_out=bad[7], u=bad[8])
        ops.cfc_forward(*ts[:7], h_out=ts[7], u=ts[8])
        fields = self.args[-1][1][0]
        self.assertEqual([fields[n] for n in ("x", "h")], [ts[0].data_ptr(), ts[1].data_ptr()])
        self.assertEqual(ops.cfc_forward.entries()[0].hits, 3)

    def test_not_remembered(self):
        """A tensor object passed twice, two tensors at one address, a call
        that allocates and a tensor read for its value (a 0-d tensor as
        gamma): checked on every call."""
        r, ws = self.t(100), self.t(256, dtype=self.torch.uint8)
        for _ in range(2):
            ops.rank_normalize(r, 1.0, 0.0, out=r, workspace=ws)
        r2 = self.t(100)
        ops.rank_normalize(r2, 1.0, 0.0, out=r2, workspace=ws)
        self.assertEqual([(a[0], a[5]) for _, a in self.args],
                         [(r.data_ptr(), r.data_ptr())] * 2 + [(r2.data_ptr(), r2.data_ptr())])
        self.assertEqual(ops.rank_normalize.entries(), [])
        # Two tensor objects at one address (views of one buffer).
        self.args.clear()
        out = self.torch.Tensor((100,), ptr=r.data_ptr())
        for _ in range(2):
            ops.rank_normalize(r, 1.0, 0.0, out=out, workspace=ws)
        out2 = self.torch.Tensor((100,), ptr=r2.data_ptr())
        ops.rank_normalize(r2, 1.0, 0.0, out=out2, workspace=ws)
        self.assertEqual([(a[0], a[5]) for _, a in self.args],
                         [(r.data_ptr(), r.data_ptr())] * 2 + [(r2.data_ptr(), r2.data_ptr())])
        self.assertEqual(ops.rank_normalize.entries(), [])
        x = self.t(64, 5)
        first = ops.column_sum(x)
        second = ops.column_sum(x)
        self.assertIsNot(first, second)
        self.assertEqual(ops.column_sum.entries(), [])
        self.args.clear()
        rw, d, adv, v = self.t(4, 3), self.t(4, 3), self.t(4, 3), self.t(5, 3)
        gamma = self.t(1)
        type(gamma).__float__ = lambda t: t.value
        for g in (0.9, 0.9, 0.5):
            gamma.value = g
            ops.gae(rw, v, d, gamma=gamma, advantages=adv, want_returns=False)
        self.assertEqual([a[5] for _, a in self.args], [0.9, 0.9, 0.5])
        self.assertEqual(ops.gae.entries(), [])

    def test_tuples_compared_bit_for_bit(self):
        p, g, m, v = (self.t(10) for _ in range(4))
        step = self.t(1, dtype=self.torch.int32)
        for b1 in (0.0, 0.0, -0.0):
            ops.adamw(p, g, m, v, step, betas=(b1, 0.999))
        import math
        self.assertEqual([math.copysign(1, a[0]["beta1"]) for _, a in self.args], [1, 1, -1])
        self.assertEqual([e.hits for e in ops.adamw.entries()], [1, 0])
        with self.assertRaises(Exception):      # the checked op's error, not =='s
            ops.adamw(p, g, m, v, step, betas=(self.t(2), 0.999))

    def test_another_torch_is_checked(self):
        """A call after sys.modules["torch"] changed is checked in full:
        the old module's tensors are foreign to the new one."""
        x, out, ws = self.t(64, 5), self.t(5), self.t(256, dtype=self.torch.uint8)
        for _ in range(2):
            ops.column_sum_split(x, out=out, workspace=ws)
        self.assertEqual(ops.column_sum_split.entries()[0].hits, 1)
        sys.modules["torch"] = FakeTorch(self.log)
        with self.assertRaisesRegex(TypeError, "neither a CUDA torch.Tensor"):
            ops.column_sum_split(x, out=out, workspace=ws)
        self.assertEqual(ops.column_sum_split.entries()[0].hits, 1)

    def test_stream_and_context(self):
        x, out = self.t(64, 5), self.t(5)
        ops.column_sum(x, out=out, stream=SIDE)
        ops.column_sum(x, out=out, stream=SIDE)
        ops.column_sum(x, out=out)
        ops.column_sum(x, out=out)
        self.assertEqual([e[3] for e in self.launches()], [SIDE, SIDE, CUR, CUR])
        self.driver.stack[-1] = OTHER       # another context current: made current around
        ops.column_sum(x, out=out)
        self.assertEqual(self.log[-3:], [("push", CTX), ("launch", "column_sum", CTX, CUR),
                                         ("pop", CTX)])
        self.assertEqual(self.driver.current(), OTHER)
        self.assertEqual([e.hits for e in ops.column_sum.entries()], [1, 2])

    def test_equal_values_of_other_bits(self):
        """-0.0 == 0.0 and 1 == True, but the launch would differ: not a match."""
        import math
        r, d, a = self.t(4, 3), self.t(4, 3), self.t(4, 3)
        v = self.t(5, 3)
        for g in (0.0, 0.0, -0.0):
            ops.gae(r, v, d, gamma=g, advantages=a, want_returns=False)
        self.assertEqual([math.copysign(1, a[5]) for _, a in self.args], [1, 1, -1])
        x, out = self.t(64, 5), self.t(5)
        for acc in (1, 1, True):
            ops.column_sum(x, out=out, accumulate=acc)
        self.assertEqual([e.hits for e in ops.column_sum.entries()], [1, 0])

    def test_few_tensors_go_straight_to_the_op(self):
        """Calls of fewer than _MIN_TENSORS tensors are not remembered: the
        op runs with its checks, and the recording that could remember it
        is tried on every _RETRY-th call only."""
        from foxjit import _fastcall
        _fastcall._MIN_TENSORS = 3
        x, out = self.t(64, 5), self.t(5)
        seen = []
        record = ops._Recording.__init__

        def counting(rec, stream):
            seen.append(stream)
            record(rec, stream)
        ops._Recording.__init__ = counting
        try:
            for _ in range(2 * _fastcall._RETRY):
                ops.column_sum(x, out=out)
        finally:
            ops._Recording.__init__ = record
        self.assertEqual(len(seen), 2)
        self.assertEqual(ops.column_sum.entries(), [])
        self.assertEqual(len(self.launches()), 2 * _fastcall._RETRY)

    def test_retries_back_off(self):
        """Each failed try doubles the calls before the next one, up to
        _RETRY_MAX: recordings at calls 1, 1 + 16, 1 + 16 + 32, ..."""
        from foxjit import _fastcall
        _fastcall._MIN_TENSORS = 3
        x, out = self.t(64, 5), self.t(5)
        seen = []
        record = ops._Recording.__init__

        def counting(rec, stream):
            seen.append(len(self.launches()))
            record(rec, stream)
        ops._Recording.__init__ = counting
        retry, top = _fastcall._RETRY, _fastcall._RETRY_MAX
        _fastcall._RETRY, _fastcall._RETRY_MAX = 2, 8
        try:
            for _ in range(40):
                ops.column_sum(x, out=out)
        finally:
            ops._Recording.__init__ = record
            _fastcall._RETRY, _fastcall._RETRY_MAX = retry, top
        # Calls made before each recording: waits of 2, 4, 8, 8, 8, ...
        self.assertEqual(seen, [0, 2, 6, 14, 22, 30, 38])
        self.assertEqual(len(self.launches()), 40)

    def test_low_addresses_match_only_themselves(self):
        """Below 2**32 an address could be taken for a dim: a call with
        such tensors is replayed only with the same addresses."""
        self.torch._next = 0x100000
        x, out, ws = self.t(64, 5), self.t(5), self.t(256, dtype=self.torch.uint8)
        for _ in range(2):
            ops.column_sum_split(x, out=out, workspace=ws)
        x2 = self.t(64, 5)
        ops.column_sum_split(x2, out=out, workspace=ws)
        self.assertEqual([a[0] for _, a in self.args], [x.data_ptr()] * 2 + [x2.data_ptr()])
        self.assertEqual([e.hits for e in ops.column_sum_split.entries()], [1, 0])

    def test_threads_keep_their_own(self):
        import threading
        x, out = self.t(64, 5), self.t(5)
        ops.column_sum(x, out=out)
        seen = []
        th = threading.Thread(target=lambda: seen.append(ops.column_sum.entries()))
        th.start()
        th.join()
        self.assertEqual(seen, [[]])
        self.assertEqual(len(ops.column_sum.entries()), 1)


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

    def test_split_column_sums(self):
        rt, S = self.rt, 0
        name = "foxjit_column_sum_split"
        O, W = G << 8, G << 9   # out and workspace, clear of x's 1.3 MB
        self.assertEqual(rt.column_sum_workspace_size(32, 40960), 512)
        ws = rt.column_sum_workspace_size(8192, 42)
        self.assertGreater(ws, 512)
        self.err(rt.column_sum_workspace_size, 0, 4, needles=["foxjit_column_sum_workspace_size",
                                                              "rows is 0"])
        self.err(rt.column_sum_workspace_size, 1 << 20, 1 << 20,
                 status=foxjit.Status.UNSUPPORTED, needles=["2^40"])
        self.err(rt.column_sum_split, G, 8192, 42, O, True, 0, ws, S,
                 needles=[name, "workspace is NULL"])
        self.err(rt.column_sum_split, G, 8192, 42, O, True, W + 8, ws, S,
                 needles=[name, "16-byte"])
        self.err(rt.column_sum_split, G, 8192, 42, O, False, W, ws - 16, S,
                 status=foxjit.Status.WORKSPACE_TOO_SMALL,
                 needles=[name, "foxjit_column_sum_workspace_size"])
        self.err(rt.column_sum_split, G, 8192, 42, O, False, G + 4096, ws, S,
                 needles=[name, "workspace overlaps x"])
        self.err(rt.column_sum_split_prepare, 4, 0, needles=["foxjit_column_sum_split_prepare"])
        # through the array-level function: a workspace given (bytes, or
        # float32 words) is passed with its size; none, without torch, is
        # an error before the library is called.
        x = FakeArray(G, (8192, 42))
        self.err(ops.column_sum_split, x, out=FakeArray(O, (42,)),
                 workspace=FakeArray(W, (ws - 16,), "|u1"), rt=rt,
                 status=foxjit.Status.WORKSPACE_TOO_SMALL, needles=[name])
        self.err(ops.column_sum_split, x, out=FakeArray(G, (42,)),
                 workspace=FakeArray(W, (ws // 4,)), rt=rt, needles=[name, "out overlaps x"])
        with self.assertRaisesRegex(TypeError, "workspace: pass a device buffer of %d bytes" % ws):
            ops.column_sum_split(x, out=FakeArray(O, (42,)), rt=rt)

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
        self.assertTrue(rt.lib.has("heads_seq_backward_part"))
        for part in ("dx", "params", "all"):
            self.err(rt.heads_seq_backward_part, HeadsSeqArgs(), 0, 0, part, S,
                     needles=["foxjit_heads_seq_backward_part"])
        self.err(rt.vsn_seq_prepare, -2, needles=["foxjit_vsn_seq_prepare"])
        big = 1 << 20
        self.err(ops.cfc_seq_forward, FakeArray(G, (big, 2, 4)), FakeArray(G, (big, 2)),
                 FakeArray(G, (8, 4)), FakeArray(G, (8, 8)), FakeArray(G, (8,)),
                 FakeArray(G, (8,)), h=FakeArray(G * 2, (big, 2, 8)),
                 u=FakeArray(G * 3, (big, 2, 8)), rt=rt, status=foxjit.Status.UNSUPPORTED)

    def test_heads_seq_backward_part(self):
        rt, S, name = self.rt, 0, "foxjit_heads_seq_backward_part"
        small = foxjit.Status.WORKSPACE_TOO_SMALL
        lib = foxjit._lib

        def P(i):
            return 0x100000 + i * 0x10000     # 256-byte aligned and distinct

        params = {n: P(i + 1) for i, n in enumerate(lib._HEADS_PARAMS)}
        grads = {"d" + n: P(i + 15) for i, n in enumerate(lib._HEADS_PARAMS)}
        SV = P(40)

        def args(**kw):
            # Dims, parameters, x, dlogits and dx, and a workspace too
            # small: the library refuses it after every pointer check.
            a = dict(batch=32, steps=64, d=128, e=64, h=5, x=P(11), logits=P(12),
                     dlogits=P(13), dx=P(14), work=P(30), work_bytes=100, **params)
            a.update(kw)
            return HeadsSeqArgs(**a)

        too_small = dict(status=small, needles=[name, "work_bytes is 100"])
        no_dw1 = dict(needles=[name, "dw1 is NULL"])
        no_dlogits = dict(needles=[name, "dlogits is NULL"])
        # Each part checks what it reads and writes, so the refusals tell
        # the parts apart: "dx" reads no gradient pointer, "params" neither
        # dlogits nor the save. By name and by the C enum's value alike.
        parts = (("dx", lib.HEADS_SEQ_PART_DX, too_small, no_dlogits),
                 ("params", lib.HEADS_SEQ_PART_PARAMS, no_dw1, too_small),
                 ("all", lib.HEADS_SEQ_PART_ALL, no_dw1, no_dlogits))
        for part_name, value, without_grads, without_dlogits in parts:
            for part in (part_name, value):
                self.err(rt.heads_seq_backward_part, args(), 0, 0, part, S, **without_grads)
                self.err(rt.heads_seq_backward_part, args(dlogits=0, **grads), 0, 0, part, S,
                         **without_dlogits)
        self.assertEqual(lib.HEADS_SEQ_PART_ALL,
                         lib.HEADS_SEQ_PART_DX | lib.HEADS_SEQ_PART_PARAMS)
        # saved and saved_bytes reach the library in their places; "params"
        # does not read the save.
        self.err(rt.heads_seq_backward_part, args(), SV, 64, "dx", S, status=small,
                 needles=[name, "saved_bytes is 64"])
        self.err(rt.heads_seq_backward_part, args(), SV + 4, 1 << 30, "dx", S,
                 needles=[name, "saved"])
        self.err(rt.heads_seq_backward_part, args(**grads), SV + 4, 8, "params", S,
                 **too_small)
        self.err(rt.heads_seq_backward_part, args(work=SV, work_bytes=1 << 30, **grads), SV,
                 1 << 30, "all", S,
                 needles=[name, "work and saved are the same buffer"])
        # A value that is none of the three reaches the library, which
        # refuses it naming them.
        for bad in (0, 4, -1, 7):
            self.err(rt.heads_seq_backward_part, args(**grads), 0, 0, bad, S,
                     needles=[name + ": part is %d" % bad, "FOXJIT_HEADS_SEQ_PART_DX (1)",
                              "FOXJIT_HEADS_SEQ_PART_ALL (3)"])
        # What is no foxjit_heads_seq_part is refused before the call (an
        # int past C's int would wrap to another part).
        for bad in ("DX", "both", "", True, 1.0, None, 2**32 + 1, -2**31 - 1):
            with self.assertRaisesRegex(ValueError, "'dx', 'params' or 'all'", msg=repr(bad)):
                rt.heads_seq_backward_part(args(**grads), 0, 0, bad, S)
        null = foxjit.Runtime.from_raw(0, owned=False)
        self.err(null.heads_seq_backward_part, args(**grads), 0, 0, "dx", S,
                 needles=[name, "runtime is NULL"])

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

    def test_gae(self):
        rt, S, name = self.rt, 0, "foxjit_gae"
        unsup = foxjit.Status.UNSUPPORTED
        self.assertTrue(rt.lib.has("gae") and rt.lib.has("gae_prepare"))
        # rewards, values, dones, advantages, returns: far apart, none overlapping
        r, v, d, a, q = G, G * 2, G * 3, G * 4, G * 5
        T, N, g, lam = 16, 64, 0.99, 0.95
        self.err(rt.gae, r, v, d, 0, N, g, lam, a, q, S, needles=[name, "steps is 0"])
        self.err(rt.gae, r, v, d, T, -1, g, lam, a, q, S, needles=[name, "envs is -1"])
        self.err(rt.gae, r, v, d, 1 << 32, N, g, lam, a, q, S, status=unsup,
                 needles=[name, "steps", "limit"])
        self.err(rt.gae, r, v, d, 1 << 21, 1 << 20, g, lam, a, q, S, status=unsup,
                 needles=[name, "(steps + 1) x envs"])
        for i, arg in enumerate(("rewards", "values", "dones", "advantages")):
            ptrs = [r, v, d, a]
            ptrs[i] = 0
            self.err(rt.gae, *ptrs[:3], T, N, g, lam, ptrs[3], q, S,
                     needles=[name, arg + " is NULL"])
        self.err(rt.gae, r + 2, v, d, T, N, g, lam, a, q, S, needles=[name, "rewards", "aligned"])
        self.err(rt.gae, r, v, d, T, N, g, lam, a, q + 1, S, needles=[name, "returns", "aligned"])
        self.err(rt.gae, r, v, d, T, N, -0.1, lam, a, q, S, needles=[name, "gamma", "[0, 1]"])
        self.err(rt.gae, r, v, d, T, N, float("nan"), lam, a, q, S, needles=[name, "gamma"])
        self.err(rt.gae, r, v, d, T, N, g, float("inf"), a, q, S, needles=[name, "lambda"])
        self.err(rt.gae, r, v, d, T, N, g, lam, r, q, S, needles=["advantages overlaps rewards"])
        self.err(rt.gae, r, v, d, T, N, g, lam, a, v + 4 * T * N, S,
                 needles=["returns overlaps values"])
        self.err(rt.gae, r, v, d, T, N, g, lam, a, a + 4, S,
                 needles=["returns overlaps advantages"])
        # gae_prepare checks nothing but the runtime (one kernel for every shape).
        null = foxjit.Runtime.from_raw(0, owned=False)
        self.err(null.gae_prepare, needles=["foxjit_gae_prepare", "runtime is NULL"])
        self.err(null.gae, r, v, d, T, N, g, lam, a, q, S, needles=[name, "runtime is NULL"])
        # Through the array-level op: gamma and lambda_ reach the library as
        # given, returns as 0 when not wanted.
        R, V, D = FakeArray(r, (T, N)), FakeArray(v, (T + 1, N)), FakeArray(d, (T, N))
        A, Q = FakeArray(a, (T, N)), FakeArray(q, (T, N))
        self.err(ops.gae, R, V, D, gamma=1.5, advantages=A, returns=Q, rt=rt,
                 needles=[name, "gamma is 1.5"])
        self.err(ops.gae, R, V, D, lambda_=-0.25, advantages=A, returns=Q, rt=rt,
                 needles=[name, "lambda is -0.25"])
        self.err(ops.gae, R, V, D, advantages=FakeArray(d, (T, N)), returns=Q, rt=rt,
                 needles=[name, "advantages overlaps dones"])
        self.err(ops.gae, R, V, D, advantages=A, returns=FakeArray(a + 8, (T, N)), rt=rt,
                 needles=[name, "returns overlaps advantages"])
        self.err(ops.gae, FakeArray(r, (0, N)), FakeArray(v, (1, N)), FakeArray(d, (0, N)),
                 advantages=FakeArray(a, (0, N)), want_returns=False, rt=rt,
                 needles=[name, "steps is 0"])
        # want_returns=False and none given: no returns to ask for (interface
        # arrays), the library's own checks answer.
        self.err(ops.gae, R, V, D, gamma=2.0, advantages=A, want_returns=False, rt=rt,
                 needles=[name, "gamma is 2"])

    def test_precision(self):
        rt = self.rt
        self.assertTrue(rt.lib.has("set_precision") and rt.lib.has("get_precision"))
        # A value that is no foxjit_precision, past the package's own check.
        status = rt._api.set_precision(rt._rt, 7)
        self.assertEqual(status, INV)
        self.assertIn("foxjit_set_precision: precision is 7", rt.lib.last_error())
        self.assertIn("FOXJIT_PRECISION_TF32", rt.lib.last_error())
        for bad in ("TF32", "fp16", 1, None):
            with self.assertRaises(ValueError):
                rt.set_precision(bad)
        null = foxjit.Runtime.from_raw(0, owned=False)
        self.err(null.set_precision, "tf32", needles=["foxjit_set_precision", "runtime is NULL"])
        self.err(null.set_precision, "float32", needles=["runtime is NULL"])
        self.err(null.precision, needles=["foxjit_get_precision"])

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
