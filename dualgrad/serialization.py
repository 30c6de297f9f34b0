"""``save`` and ``load``: tensors, containers of them, state dicts and optimizer states in torch's file format.

A file is torch's zip archive: ``<name>/data.pkl`` (a pickle in which each tensor is
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`` and each storage a
persistent id ``('storage', torch.DoubleStorage, key, 'cpu', numel)``), the raw little-endian bytes of each
storage in ``<name>/data/<key>``, and ``byteorder`` / ``version`` records. So ``torch.load`` reads a file
written by ``dg.save`` and ``dg.load`` reads (CPU) checkpoints written by ``torch.save``; dualgrad never
imports torch for either.

What a round trip keeps: values, dtype, shape, ``requires_grad`` (every tensor comes back as a leaf, as
in torch), and shared memory: tensors that are views of one array (``x`` and ``x[1:]``, ``x.T``) are saved
as views of one storage and loaded as views of one array. Not kept, as in torch: ``.grad``, the graph
and hooks; a Tensor subclass other than ``nn.Parameter`` loads as a Tensor.

``load`` defaults to ``weights_only=True``, as torch >= 2.6: its unpickler builds only tensors, numbers,
strings, bytes, ``None``, lists, tuples, dicts, ``OrderedDict``, ``Counter``, sets, complex numbers,
devices, dtypes and the globals allowed with ``add_safe_globals``; any other global is refused with
torch's ``UnpicklingError`` before anything runs. A file executes code on load only with
``weights_only=False``.
"""

from __future__ import annotations

import _compat_pickle
import contextlib
import io
import os
import pickle
import sys
import zipfile
from collections import Counter, OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np

from .base.devices import check_device, device
from .tensor import Tensor, _wrap

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals", "save"]

# torch's storage classes <-> dtypes
_STORAGE_DTYPES = {
    "DoubleStorage": "float64", "FloatStorage": "float32", "HalfStorage": "float16", "LongStorage": "int64",
    "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
}
_STORAGE_OF_DTYPE = {np.dtype(dtype): name for name, dtype in _STORAGE_DTYPES.items()}
_TORCH_DTYPES = {
    "float64": "float64", "double": "float64", "float32": "float32", "float": "float32", "float16": "float16",
    "half": "float16", "int64": "int64", "long": "int64", "int32": "int32", "int": "int32", "int16": "int16",
    "short": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool", "complex64": "complex64",
    "cfloat": "complex64", "complex128": "complex128", "cdouble": "complex128",
}
_DTYPE_NAMES = {np.dtype(v): k for k, v in _TORCH_DTYPES.items() if k == v}

DOCS_MESSAGE = ("\n\nCheck the documentation of dualgrad.load to learn more about types accepted by default with "
                "weights_only.")
UNSAFE_MESSAGE = ("Re-running `dualgrad.load` with `weights_only` set to `False` will likely succeed, but it can "
                  "result in arbitrary code execution. Do it only if you got the file from a trusted source.")

_user_safe_globals: list[Any] = []


# -- globals written by name ------------------------------------------------------------------------

class _Global:
    """A reference to ``module.name`` that the pickler writes as a GLOBAL opcode by name, so that the file
    names torch's functions and classes without importing torch."""

    def __init__(self, module: str, name: str):
        self.module = module
        self.name = name

    def __call__(self, *args: Any) -> Any:  # pickle asks a reduction's function to be callable
        raise TypeError(f"{self.module}.{self.name} is only a name written into files")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_DEVICE = _Global("torch", "device")


class _StorageRef:
    """One array saved as a storage: the persistent id ``('storage', type, key, 'cpu', numel)``."""

    def __init__(self, key: str, array: np.ndarray, owner: np.ndarray):
        self.key = key
        self.array = array
        self.owner = owner  # the array whose id keys this storage: kept alive while pickling


class _Pickler(pickle._Pickler):  # the Python pickler: it lets ``save_global`` write names of our choosing
    def __init__(self, file: Any, protocol: int):
        super().__init__(file, protocol)
        self.storages: dict[int, _StorageRef] = {}

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _StorageRef):
            storage_type = _Global("torch", _STORAGE_OF_DTYPE[obj.array.dtype])
            return ("storage", storage_type, obj.key, "cpu", obj.array.size)
        return None

    def save_global(self, obj: Any, name: str | None = None) -> None:
        if isinstance(obj, _Global):
            self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
            self.memoize(obj)
            return
        super().save_global(obj, name)

    def save_dtype(self, obj: np.dtype) -> None:
        if obj.isnative and obj in _DTYPE_NAMES:
            self.save_global(_Global("torch", _DTYPE_NAMES[obj]))
        else:
            self.save_reduce(*obj.__reduce__(), obj=obj)

    dispatch = dict(pickle._Pickler.dispatch)
    dispatch[_Global] = save_global

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, device):
            return (_DEVICE, (str(obj),))
        return NotImplemented

    def _reduce_tensor(self, t: Tensor) -> tuple:
        array = t._data if t._data.dtype.isnative else t._data.astype(t._data.dtype.newbyteorder("="))
        if array.dtype not in _STORAGE_OF_DTYPE:
            raise TypeError(f"save(): tensors of dtype {array.dtype} cannot be saved (torch's file format has no "
                            f"storage type for it)")
        owner, storage, offset = _storage_of(array)
        ref = self.storages.get(id(owner))
        if ref is None:
            ref = self.storages[id(owner)] = _StorageRef(str(len(self.storages)), storage, owner)
        strides = tuple(s // array.itemsize for s in array.strides)
        rebuilt = (_REBUILD_TENSOR, (ref, offset, tuple(array.shape), strides, t._requires_grad, OrderedDict()))
        if type(t).__name__ == "Parameter":
            return (_REBUILD_PARAMETER, (_Rebuilt(rebuilt), t._requires_grad, OrderedDict()))
        return rebuilt


_Pickler.dispatch.update({type(np.dtype(name)): _Pickler.save_dtype for name in _TORCH_DTYPES.values()})


class _Rebuilt:
    """A nested tensor reduction (a Parameter's data), pickled as its ``(callable, args)``."""

    def __init__(self, reduction: tuple):
        self.reduction = reduction

    def __reduce__(self) -> tuple:
        return self.reduction


def _storage_of(array: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``(owner, storage, offset)``: the array owning the memory ``array`` views (the same for all its views),
    that memory as a one-dimensional array, and ``array``'s offset in it, in elements; ``array`` copied on its
    own when it views memory that is not a contiguous array of its dtype."""
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root.dtype == array.dtype and root.flags.c_contiguous and array.size:
        start = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        if start % array.itemsize == 0:
            return root, root.reshape(-1), start // array.itemsize
    copy = np.ascontiguousarray(array)
    return copy, copy.reshape(-1), 0


def save(obj: Any, f: Any, pickle_module: Any = pickle, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False) -> None:
    """Write ``obj`` (tensors, and containers and objects holding them) to ``f``, a path or a binary file,
    in torch's zip format (see the module's description).

    >>> import dualgrad as dg, io
    >>> x = dg.arange(4.0, requires_grad=True)
    >>> buffer = io.BytesIO()
    >>> dg.save({"x": x, "tail": x[2:], "lr": 0.1}, buffer)
    >>> _ = buffer.seek(0)
    >>> loaded = dg.load(buffer)
    >>> loaded["x"], loaded["tail"], loaded["lr"]
    (tensor([0., 1., 2., 3.], requires_grad=True), tensor([2., 3.], requires_grad=True), 0.1)
    """
    if pickle_module is not pickle:
        raise NotImplementedError("save(): only the standard pickle module is supported (pickle_module)")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("save(): the legacy (non-zip) format is not supported "
                                  "(_use_new_zipfile_serialization=False)")
    data = io.BytesIO()
    pickler = _Pickler(data, pickle_protocol)
    pickler.dump(obj)
    name = _archive_name(f)
    with _open(f, "wb") as stream, zipfile.ZipFile(stream, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{name}/data.pkl", data.getvalue())
        if not _disable_byteorder_record:
            archive.writestr(f"{name}/byteorder", sys.byteorder)
        for ref in pickler.storages.values():
            archive.writestr(f"{name}/data/{ref.key}", ref.array.tobytes())
        archive.writestr(f"{name}/version", "3\n")


def _archive_name(f: Any) -> str:
    """torch's name of the archive's folder: the file's stem (``archive`` for an unnamed stream)."""
    if isinstance(f, (str, os.PathLike)):
        return os.path.splitext(os.path.basename(os.fspath(f)))[0] or "archive"
    return "archive"


@contextlib.contextmanager
def _open(f: Any, mode: str) -> Iterator[Any]:
    if isinstance(f, (str, os.PathLike)):
        with open(f, mode) as stream:
            yield stream
        return
    if "w" in mode and not hasattr(f, "write"):  # (torch's error, before anything is written)
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a 'write' attribute")
    yield f


# -- load -------------------------------------------------------------------------------------------

def _rebuild_tensor_v2(storage: np.ndarray, storage_offset: int, size: tuple, stride: tuple, requires_grad: bool,
                       backward_hooks: Any, metadata: Any = None) -> Tensor:
    """A leaf viewing ``storage`` (one array per storage key, so views stay views)."""
    itemsize = storage.itemsize
    data = np.ndarray(tuple(size), storage.dtype, buffer=storage, offset=storage_offset * itemsize,
                      strides=tuple(s * itemsize for s in stride))
    t = _wrap(data)
    t._requires_grad = bool(requires_grad)
    return t


def _rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks: Any) -> Tensor:
    """``nn.Parameter(data, requires_grad)`` when ``dualgrad.nn`` exists, else the tensor itself."""
    parameter = getattr(sys.modules.get("dualgrad.nn"), "Parameter", None)
    if parameter is None:
        data._requires_grad = bool(requires_grad)
        return data
    return parameter(data, requires_grad)


class _StorageType:
    """A storage class named in a file (``torch.DoubleStorage``): its dtype."""

    def __init__(self, dtype: str):
        self.dtype = np.dtype(dtype)


def _allowed_globals() -> dict[tuple[str, str], Any]:
    allowed: dict[tuple[str, str], Any] = {
        ("collections", "OrderedDict"): OrderedDict, ("collections", "Counter"): Counter,
        ("builtins", "set"): set, ("builtins", "frozenset"): frozenset, ("builtins", "complex"): complex,
        ("builtins", "bytearray"): bytearray, ("_codecs", "encode"): _encode,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch", "device"): device, ("torch", "Size"): tuple, ("dualgrad._devices", "device"): device,
        ("dualgrad.base.devices", "device"): device,
    }
    allowed.update({("torch", name): _StorageType(dtype) for name, dtype in _STORAGE_DTYPES.items()})
    allowed.update({("torch", name): np.dtype(dtype) for name, dtype in _TORCH_DTYPES.items()})
    for obj in _user_safe_globals:
        target, name = obj if isinstance(obj, tuple) else (obj, f"{obj.__module__}.{obj.__qualname__}")
        module, _, qualname = name.rpartition(".")
        allowed[(module, qualname)] = target
    return allowed


def _encode(text: str, encoding: str = "latin1") -> bytes:
    """How protocol-2 pickles spell ``bytes`` (``_codecs.encode``), limited to that use."""
    return text.encode(encoding)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: Any, archive: zipfile.ZipFile, prefix: str, weights_only: bool, **options: Any):
        super().__init__(file, **options)
        self.archive = archive
        self.prefix = prefix
        self.weights_only = weights_only
        self.allowed = _allowed_globals()
        self.storages: dict[str, np.ndarray] = {}
        self.byteorder = "little"

    def find_class(self, module: str, name: str) -> Any:
        # Python 2 names, as protocol-2 pickles write them (``__builtin__.set``)
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        if (module, name) in self.allowed:
            return self.allowed[(module, name)]
        if self.weights_only:
            raise pickle.UnpicklingError(
                f"Unsupported global: GLOBAL {module}.{name} was not an allowed global by default. Please use "
                f"`dualgrad.serialization.add_safe_globals([{module}.{name}])` or the "
                f"`dualgrad.serialization.safe_globals([{module}.{name}])` context manager to allowlist this "
                f"global if you trust this class/function.")
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> np.ndarray:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"
                and isinstance(pid[1], _StorageType)):
            raise pickle.UnpicklingError(f"Unsupported persistent id in the file: {pid!r}")
        _, storage_type, key, location, numel = pid
        check_device("load", location.partition(":")[0] if isinstance(location, str) else location)
        if key not in self.storages:
            raw = self.archive.read(f"{self.prefix}/data/{key}")
            dtype = storage_type.dtype.newbyteorder("<" if self.byteorder == "little" else ">")
            array = np.frombuffer(bytearray(raw), dtype=dtype)
            if array.size != numel:
                raise pickle.UnpicklingError(f"storage {key} holds {array.size} elements, the file says {numel}")
            self.storages[key] = array.astype(storage_type.dtype, copy=False)
        return self.storages[key]


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *, weights_only: bool | None = None,
         mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Read an object written by ``save`` (or by ``torch.save``, CPU tensors) from ``f``, a path or a binary
    file. With ``weights_only=True`` (the default) only data is built (see the module's description); a file
    naming any other global raises ``pickle.UnpicklingError`` ("Weights only load failed...").

    ``map_location`` may be None, ``'cpu'`` or a CPU device (dualgrad has no other device).

    >>> import dualgrad as dg, io
    >>> buffer = io.BytesIO()
    >>> dg.save([dg.tensor([1.0, 2.0]), dg.tensor([3])], buffer)
    >>> _ = buffer.seek(0)
    >>> dg.load(buffer)
    [tensor([1., 2.]), tensor([3])]
    """
    if mmap:
        raise NotImplementedError("load(): mmap=True is not supported by dualgrad (mmap)")
    if map_location is not None and not isinstance(map_location, dict):
        if callable(map_location):
            raise NotImplementedError("load(): a callable map_location is not supported by dualgrad (map_location)")
        check_device("load", map_location)
    weights_only = True if weights_only is None else weights_only
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("load(): only the standard pickle module is supported (pickle_module)")
    with _open(f, "rb") as stream:
        if not zipfile.is_zipfile(stream):
            raise RuntimeError("load(): the file is not a zip archive written by dualgrad.save or torch.save "
                               "(torch's legacy format is not supported)")
        stream.seek(0)
        with zipfile.ZipFile(stream) as archive:
            names = archive.namelist()
            pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
            if not pickles:
                raise RuntimeError("load(): the archive has no data.pkl record (not written by dualgrad.save or "
                                   "torch.save)")
            prefix = pickles[0].rpartition("/")[0]
            unpickler = _Unpickler(io.BytesIO(archive.read(pickles[0])), archive, prefix, weights_only,
                                   **pickle_load_args)
            if f"{prefix}/byteorder" in names:
                unpickler.byteorder = archive.read(f"{prefix}/byteorder").decode().strip()
            try:
                return unpickler.load()
            except pickle.UnpicklingError as error:
                if not weights_only:
                    raise
                raise pickle.UnpicklingError(_weights_only_message(str(error))) from None


def _weights_only_message(message: str) -> str:
    """torch's explanation around the unpickler's refusal."""
    return ("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
            f"steps only if you trust the source of the checkpoint. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, "
            "to load with `weights_only=True` please check the recommended steps in the following error "
            f"message.\n\tWeightsUnpickler error: {message}{DOCS_MESSAGE}")


# -- the allow-list ---------------------------------------------------------------------------------

def add_safe_globals(safe_globals: list[Any]) -> None:
    """Allow ``weights_only`` loads to build these classes/functions (or ``(obj, "module.name")`` pairs).

    >>> import dualgrad as dg, io, fractions
    >>> buffer = io.BytesIO()
    >>> dg.save(fractions.Fraction(1, 3), buffer)
    >>> dg.serialization.add_safe_globals([fractions.Fraction])
    >>> _ = buffer.seek(0)
    >>> dg.load(buffer)
    Fraction(1, 3)
    >>> dg.serialization.clear_safe_globals()
    """
    _user_safe_globals.extend(safe_globals)


def get_safe_globals() -> list[Any]:
    """The globals added with ``add_safe_globals``."""
    return list(_user_safe_globals)


def clear_safe_globals() -> None:
    """Forget the globals added with ``add_safe_globals``."""
    _user_safe_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list[Any]) -> Iterator[None]:
    """``add_safe_globals`` for the duration of a ``with`` block."""
    before = list(_user_safe_globals)
    _user_safe_globals.extend(safe_globals)
    try:
        yield
    finally:
        _user_safe_globals[:] = before
