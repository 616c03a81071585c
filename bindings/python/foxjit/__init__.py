"""fox-jit from Python: ctypes over libfoxjit.so.1's plugin table.

    import foxjit
    foxjit.version()                   # the library's version
    foxjit.ops.column_sum(x)           # x: a CUDA torch.Tensor or any
                                       # __cuda_array_interface__ array
    import foxjit.torch as ft          # autograd + torch.library custom ops
    ft.cfc_seq(x, dt, w_in, w_rec, bias, tau)

The library is $FOXJIT_LIBRARY, else libfoxjit.so.1 from the loader's path;
foxjit.set_library(path) picks another. A library of another ABI major
version, or one older than ABI 2.1, is refused with foxjit.AbiError; calls
of entries newer than the library's table (Library.has) raise it too.
"""

from ._lib import (ABI_MAJOR, ABI_MINOR, AbiError, Error, Library, LoadError, Status, library,
                   set_library)
from .runtime import Runtime
from . import ops

__version__ = "0.3.0"

__all__ = ["ABI_MAJOR", "ABI_MINOR", "AbiError", "Error", "Library", "LoadError", "Status",
           "Runtime", "library", "set_library", "ops", "version"]


def version():
    """The loaded library's version ("0.3.0")."""
    return library().version()
