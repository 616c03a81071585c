"""Shared by the tests: where the library under test is, and fake arrays."""

import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def library_path():
    """$FOXJIT_TEST_LIBRARY (meson sets it), else the repository's build."""
    p = os.environ.get("FOXJIT_TEST_LIBRARY")
    if p:
        return p
    p = os.path.join(REPO, "build", "runtime", "libfoxjit.so.1")
    return p if os.path.exists(p) else None


def need_library(test):
    p = library_path()
    if not p:
        raise unittest.SkipTest("libfoxjit.so.1 is not built (set FOXJIT_TEST_LIBRARY)")
    import foxjit
    if foxjit._lib._default is None or foxjit._lib._default.path != p:
        foxjit.set_library(p)
    return p


class FakeArray:
    """An object with __cuda_array_interface__ (version 3) at an address that
    is never dereferenced: the tests use it only on calls that fail their
    argument checks."""

    def __init__(self, addr, shape, typestr="<f4", strides=None, readonly=False, stream=None):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": typestr, "data": (addr, readonly),
            "strides": strides, "version": 3}
        if stream is not None:
            self.__cuda_array_interface__["stream"] = stream
