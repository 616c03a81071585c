"""What the array-level ops accept: a CUDA torch.Tensor, or any object with
__cuda_array_interface__ (CuPy, Numba, ...). Each argument is checked for
dtype, contiguity, device and shape before anything reaches the library
(an interface array's device is not in the interface: unknown, unchecked;
a masked one is refused)."""

import ctypes
import sys

_TORCH_DTYPES = {}     # "f4" -> torch.float32 etc., filled when torch is imported
_CAI_TYPES = {"f4": ("<f4",), "u4": ("<u4", "<i4"), "i4": ("<i4",)}
_NAMES = {"f4": "float32", "u4": "uint32 (or int32)", "i4": "int32"}


def _torch():
    """torch if the program imported it (the package never imports it for
    the caller)."""
    t = sys.modules.get("torch")
    if t is not None and not _TORCH_DTYPES:
        _TORCH_DTYPES.update({"f4": (t.float32,),
                              "u4": tuple(d for d in (getattr(t, "uint32", None), t.int32) if d),
                              "i4": (t.int32,)})
    return t


def is_torch(obj):
    t = _torch()
    return t is not None and isinstance(obj, t.Tensor)


class Arg:
    """A checked device array: .ptr (int), .shape (tuple), .device (int or
    None when unknown), .torch (the tensor or None), .stream (int or None:
    the producer's stream from __cuda_array_interface__)."""
    __slots__ = ("ptr", "shape", "device", "torch", "stream")

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n


def arg(obj, name, kind="f4", shape=None, writable=False):
    """Checks obj and returns an Arg; TypeError/ValueError say what is wrong."""
    a = Arg()
    if is_torch(obj):
        if obj.device.type != "cuda":
            raise ValueError("%s: the tensor is on %s; fox-jit needs a CUDA tensor (.cuda())"
                             % (name, obj.device))
        if obj.dtype not in _TORCH_DTYPES[kind]:
            raise TypeError("%s: dtype %s; fox-jit needs %s" % (name, obj.dtype, _NAMES[kind]))
        if not obj.is_contiguous():
            raise ValueError("%s: the tensor is not contiguous; pass .contiguous()" % name)
        a.ptr, a.shape, a.device, a.torch, a.stream = (obj.data_ptr(), tuple(obj.shape),
                                                       obj.device.index, obj, None)
    else:
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is None:
            raise TypeError("%s: a %s is neither a CUDA torch.Tensor nor an object with "
                            "__cuda_array_interface__" % (name, type(obj).__name__))
        typestr = cai.get("typestr")
        if typestr not in _CAI_TYPES[kind]:
            raise TypeError("%s: typestr %r; fox-jit needs %s" % (name, typestr, _NAMES[kind]))
        if cai.get("mask") is not None:
            # A masked array's invalid elements hold anything: the kernels
            # would read them as values.
            raise ValueError("%s: a masked array (a mask in __cuda_array_interface__); "
                             "fox-jit needs every element valid" % name)
        shp = tuple(int(s) for s in cai["shape"])
        strides = cai.get("strides")
        if strides is not None and _numel(shp) > 1:
            # C-contiguous in bytes of the typestr's item size ('|u1': 1);
            # the stride of a dim of extent 1 is never stepped over.
            if len(strides) != len(shp):
                raise ValueError("%s: strides %s for shape %s" % (name, tuple(strides), shp))
            want = _itemsize(typestr)
            for s, st in zip(reversed(shp), reversed(tuple(strides))):
                if s != 1 and st != want:
                    raise ValueError("%s: strides %s are not C-contiguous (typestr %r: "
                                     "%d-byte items)" % (name, tuple(strides), typestr,
                                                         _itemsize(typestr)))
                want *= s
        ptr, readonly = cai["data"]
        if writable and readonly:
            raise ValueError("%s: the array is read-only but fox-jit writes it" % name)
        a.ptr, a.shape, a.device, a.torch = int(ptr or 0), shp, None, None
        a.stream = cai.get("stream")
    if shape is not None and a.shape != tuple(shape):
        raise ValueError("%s: shape %s, expected %s" % (name, a.shape, tuple(shape)))
    if a.ptr % 4:
        raise ValueError("%s: address 0x%x is not 4-byte aligned" % (name, a.ptr))
    return a


def _itemsize(typestr):
    """Bytes of one element of a typestr ('<f4': 4, '|u1': 1)."""
    return int(typestr[2:])


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def same_device(args, what):
    devs = {a.device for a in args if a is not None and a.device is not None}
    if len(devs) > 1:
        raise ValueError("%s: the tensors are on different GPUs (%s)"
                         % (what, ", ".join("cuda:%d" % d for d in sorted(devs))))
    return devs.pop() if devs else None


def ptr(a):
    return a.ptr if a is not None else 0


_ = ctypes  # ctypes is the transport of every call (runtime.py)
