"""Tensor factories: ``tensor``, ``zeros``, ``randn``, ... and their ``*_like`` forms.

Floating factories default to float64 (NumPy's and scientific users' default);
pass ``dtype=`` for another, or change the default with ``set_default_dtype``.
Random factories draw from one generator seeded by ``manual_seed``.

>>> import dualgrad as dg
>>> dg.zeros(2, 3).shape
(2, 3)
>>> dg.ones(2, dtype="float32", requires_grad=True)
tensor([1., 1.], dtype=float32, requires_grad=True)
"""

from __future__ import annotations

import math
import operator
import secrets
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .base.checks import as_size, check_number_fits, is_number
from .base.devices import check_device
from .base.dtypes import DEFAULT_DTYPES, _complex_of, _default_float, _number_dtype, _promote_types, torch_dtype_name
from .base.dtypes import get_default_dtype as get_default_dtype  # (public here: dualgrad.get_default_dtype)
from .base.random import _generator, _initial_seed
from .base.state import STATE
from .tensor import (
    COPY_CONSTRUCT_WARNING,
    SCALAR_OF_GRAD_WARNING,
    Tensor,
    _wrap,
    new_leaf,
    numeric_array,
    untracked_number,
)
from .vmap.batching import BatchedTensor, make_batched, random_under_vmap


def _dtype(dtype: Any) -> np.dtype | None:
    return None if dtype is None else np.dtype(dtype)


def finfo(dtype: Any = None) -> np.finfo:
    """Machine limits of a floating dtype (the default one if omitted): NumPy's ``finfo``, with torch's
    ``eps``, ``max``, ``min``, ``tiny``, ``resolution`` and ``bits``.

    >>> import dualgrad as dg
    >>> float(dg.finfo(dg.float32).eps), float(dg.finfo().eps) == 2.0 ** -52
    (1.1920928955078125e-07, True)
    """
    return np.finfo(_float_dtype(dtype))


def iinfo(dtype: Any) -> np.iinfo:
    """Machine limits of an integer dtype: NumPy's ``iinfo`` (``min``, ``max``, ``bits``).

    >>> import dualgrad as dg
    >>> dg.iinfo(dg.int32).max
    2147483647
    """
    return np.iinfo(dtype)


def set_default_dtype(d: Any) -> None:
    """Make ``d`` (a floating dtype) the dtype of floating factories and of tensors made from
    Python floats (and its complex counterpart that of Python complex numbers), as torch's;
    type promotion gives it to ops that mix integers with Python floats, and to the
    true division of integers.

    dualgrad starts with float64 (torch: float32). Arrays keep their own dtype.

    >>> import dualgrad as dg
    >>> dg.set_default_dtype(dg.float32)
    >>> dg.tensor([1.5]).dtype, dg.zeros(2).dtype, dg.tensor([1j]).dtype
    (dtype('float32'), dtype('float32'), dtype('complex64'))
    >>> (dg.tensor([1, 2]) * 0.5).dtype, (dg.tensor([1, 2]) / 2).dtype
    (dtype('float32'), dtype('float32'))
    >>> dg.set_default_dtype(dg.float64)
    """
    dtype = np.dtype(d)
    if dtype.kind != "f" and dtype.name != "bfloat16":
        raise TypeError(f"only floating-point types are supported as the default type (got {dtype})")
    DEFAULT_DTYPES.difference_update((_default_float[0], _complex_of(_default_float[0])))
    DEFAULT_DTYPES.update((dtype, _complex_of(dtype)))  # a repr names only dtypes that differ from these
    _default_float[0] = dtype


def _float_dtype(dtype: Any) -> np.dtype:
    """``dtype``, or the default floating dtype when it is None."""
    return _default_float[0] if dtype is None else np.dtype(dtype)


def _inferred(array: np.ndarray, source: Any, dtype: Any) -> np.ndarray:
    """``array``, made from ``source`` with ``dtype``; when NumPy chose float64 / complex128 for
    Python numbers (not arrays: they keep their dtype), the default dtypes instead."""
    default = _default_float[0]
    if (default.itemsize == 8 or dtype is not None or array.dtype.kind not in "fc"
            or isinstance(source, (Tensor, np.ndarray, np.generic))):
        return array
    return array.astype(default if array.dtype.kind == "f" else _complex_of(default))


def manual_seed(seed: int) -> np.random.Generator:
    """Seed the generator behind every random draw: ``rand``, ``randn``, ``randint``, ``normal``,
    ``bernoulli``, ``multinomial``, ``randperm``, the ``*_like`` forms and the in-place fills
    (``uniform_``, ``random_``, ...).

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0); a = dg.rand(2)
    >>> _ = dg.manual_seed(0); bool((a == dg.rand(2)).all())
    True
    """
    _generator[0] = np.random.default_rng(seed)
    _initial_seed[0] = seed
    return _generator[0]


def seed() -> int:
    """Seed the generator of ``manual_seed`` with a random 64-bit number (from the operating
    system), and return it.

    >>> import dualgrad as dg
    >>> s = dg.seed()
    >>> s == dg.initial_seed(), 0 <= s < 2 ** 64
    (True, True)
    """
    number = secrets.randbits(64)
    manual_seed(number)
    return number


def initial_seed() -> int:
    """The seed of the generator: the last one given to ``manual_seed`` (or drawn by ``seed``), else the
    one drawn when dualgrad was imported (torch's is a fixed number).

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(7)
    >>> dg.initial_seed()
    7
    """
    return _initial_seed[0]


# get_rng_state's bytes: PCG64's 128-bit state and increment, its buffered 32-bit draw (a flag and the
# value), then the initial seed (modulo 2**64).
_STATE_FIELDS = (("state", 16), ("inc", 16), ("has_uint32", 1), ("uinteger", 4), ("seed", 8))
_STATE_SIZE = sum(size for _, size in _STATE_FIELDS)


def get_rng_state() -> Tensor:
    """The state of the generator behind every random draw, as a uint8 tensor for ``set_rng_state``.

    >>> import dualgrad as dg
    >>> state = dg.get_rng_state()
    >>> a = dg.rand(3)
    >>> dg.set_rng_state(state)
    >>> bool((a == dg.rand(3)).all()), state.dtype
    (True, dtype('uint8'))
    """
    pcg = _generator[0].bit_generator.state
    values = {**pcg["state"], "has_uint32": pcg["has_uint32"], "uinteger": pcg["uinteger"],
              "seed": _initial_seed[0] % 2 ** 64}
    data = b"".join(int(values[name]).to_bytes(size, "little") for name, size in _STATE_FIELDS)
    return _wrap(np.frombuffer(data, np.uint8).copy())


def set_rng_state(new_state: Tensor) -> None:
    """Restore the generator (and ``initial_seed``) to a state from ``get_rng_state``.

    TypeError for anything but a uint8 Tensor, RuntimeError for one of another size (torch's errors).
    """
    if not isinstance(new_state, Tensor):
        raise TypeError(f"expected a uint8 Tensor, but got {type(new_state).__module__}.{type(new_state).__name__}")
    if new_state.dtype != np.uint8:
        raise TypeError("RNG state must be a uint8 Tensor")
    data = new_state._data.tobytes()
    if len(data) != _STATE_SIZE:
        raise RuntimeError(f"Expected an RNG state of size {_STATE_SIZE} but found the input RNG state size "
                           f"to be {len(data)}")
    values, start = {}, 0
    for name, size in _STATE_FIELDS:
        values[name] = int.from_bytes(data[start:start + size], "little")
        start += size
    _generator[0].bit_generator.state = {
        "bit_generator": "PCG64", "state": {"state": values["state"], "inc": values["inc"]},
        "has_uint32": values["has_uint32"], "uinteger": values["uinteger"]}
    _initial_seed[0] = values["seed"]


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False, **_device: Any) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, arrays or Tensors).

    >>> import dualgrad as dg
    >>> dg.tensor([[1, 2], [3, 4]])
    tensor([[1, 2],
            [3, 4]])

    Python bools give bool, ints int64, floats the default dtype (float64); a list holding
    Tensors promotes their dtypes with those of its numbers as torch does (``[t32, 2]`` is
    float32 for a float32 ``t32``). From a Tensor, it warns as torch does (use
    ``t.detach().clone()``); so does a list holding a Tensor that requires grad (the copy is a new
    leaf, detached from it: ``stack`` keeps the graph). Torch's errors for lists that are not rectangular (ValueError
    "expected sequence of length ..."), for values of no dtype (RuntimeError "Could not infer
    dtype of NoneType"), for integers beyond int64 (ValueError "Overflow") and for numbers an
    integer ``dtype`` cannot hold (RuntimeError "value cannot be converted to type int8 without
    overflow").

    >>> dg.tensor([dg.tensor(1., dtype=dg.float32), 2])
    tensor([1., 2.], dtype=float32)
    """
    check_device("tensor", _device.get("device"))
    if isinstance(data, Tensor):
        warnings.warn(COPY_CONSTRUCT_WARNING.format(fn="dualgrad.tensor"), UserWarning, stacklevel=2)
    tensors: list = []
    nested = _nested_to_array(data, tensors)
    if tensors and isinstance(data, (list, tuple)) and _holds_grad_tensor(data):
        warnings.warn(SCALAR_OF_GRAD_WARNING, UserWarning, stacklevel=2)
    if dtype is None and tensors and isinstance(data, (list, tuple)):
        dtype = _promoted_leaf_dtype(nested)
    try:
        array = np.array(nested, dtype=_dtype(dtype), copy=True)
    except (OverflowError, ValueError) as error:  # (NaN, inf or too large a number for an integer dtype)
        raise _not_rectangular(nested) or _not_fitting(error, dtype) from None
    if array.dtype.kind in "OSU":  # objects and strings (bfloat16 and other extension dtypes pass)
        raise _no_dtype(data, nested)
    if array.dtype.kind == "u" and dtype is None and not _holds_arrays(data):  # ints over int64's maximum
        raise ValueError("Overflow when unpacking long long")
    return new_leaf(_inferred(array, data, dtype), requires_grad)


def _holds_grad_tensor(data: list | tuple) -> bool:
    return any(d.requires_grad if isinstance(d, Tensor) else isinstance(d, (list, tuple)) and _holds_grad_tensor(d)
               for d in data)


def _nested_to_array(data: Any, tensors: list | None = None) -> Any:
    """``data`` with its Tensors replaced by their arrays (appended to ``tensors`` if given)."""
    if isinstance(data, Tensor):
        if tensors is not None:
            tensors.append(data._data)
        return data._data
    if isinstance(data, (list, tuple)):
        return [_nested_to_array(d, tensors) for d in data]
    return data


def _leaves(nested: Any) -> Iterator:
    """The numbers and arrays of nested lists, depth first."""
    if isinstance(nested, list):
        for item in nested:
            yield from _leaves(item)
    else:
        yield nested


def _promoted_leaf_dtype(nested: list) -> np.dtype | None:
    """torch's dtype for nested lists of numbers and arrays: their dtypes (a Python number's: bool, int64 or
    the default dtypes) promoted by torch's ``promote_types``; None if some leaf is neither."""
    dtype = None
    for leaf in _leaves(nested):
        if isinstance(leaf, np.ndarray):
            dtype = _promote_types(dtype, leaf.dtype)
        elif is_number(leaf):
            dtype = _promote_types(dtype, _number_dtype(leaf))
        else:
            return None
    return dtype


def _holds_arrays(data: Any) -> bool:
    """True if ``data`` is or holds (in nested lists) a Tensor, an ndarray or a NumPy scalar."""
    return isinstance(data, (Tensor, np.ndarray, np.generic)) or (
        isinstance(data, (list, tuple)) and any(_holds_arrays(d) for d in data))


def _is_sequence(item: Any) -> bool:
    return isinstance(item, list) or (isinstance(item, np.ndarray) and item.ndim > 0)


def _not_rectangular(nested: Any) -> Exception | None:
    """torch's error for nested lists that are not rectangular (the shape is read along the first
    items), None for rectangular ones."""
    shape = []
    item = nested
    while _is_sequence(item):
        shape.append(len(item))
        item = item[0] if len(item) else None

    def check(item: Any, dim: int) -> Exception | None:
        if dim == len(shape):
            return None
        if not _is_sequence(item):
            return TypeError("not a sequence")
        if len(item) != shape[dim]:
            return ValueError(f"expected sequence of length {shape[dim]} at dim {dim} (got {len(item)})")
        return next((error for error in (check(i, dim + 1) for i in item) if error is not None), None)

    return check(nested, 0)


def _not_fitting(error: Exception, dtype: Any) -> Exception:
    """torch's RuntimeError for numbers an integer ``dtype`` cannot hold, else NumPy's ``error``."""
    if dtype is None or np.dtype(dtype).kind not in "iu":
        return error
    return RuntimeError(f"value cannot be converted to type {np.dtype(dtype)} without overflow")


def _no_dtype(data: Any, nested: Any) -> Exception:
    """torch's error for ``data`` holding strings (TypeError), integers beyond NumPy's (ValueError) or other
    values of no dtype (RuntimeError)."""
    if isinstance(data, np.ndarray):
        return _unsupported_array(data)
    odd = [leaf for leaf in _leaves(nested) if not (is_number(leaf) or isinstance(leaf, np.ndarray))][:1]
    if not odd:
        return ValueError("Overflow when unpacking long long")
    leaf = odd[0]
    if isinstance(leaf, (str, bytes, np.str_, np.bytes_)) or isinstance(data, np.ndarray):
        return TypeError(f"new(): invalid data type '{type(data).__name__}'")
    return RuntimeError(f"Could not infer dtype of {type(leaf).__name__}")


def as_tensor(data: Any, dtype: Any = None, **_device: Any) -> Tensor:
    """``data`` as a Tensor, sharing memory with an ndarray or Tensor when the dtype allows."""
    check_device("as_tensor", _device.get("device"))
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype == np.dtype(dtype) else data.to(dtype)
    nested = _nested_to_array(data)
    array = np.asarray(nested, dtype=_dtype(dtype))
    if array.dtype.kind in "OSU":  # objects and strings, as in ``tensor``
        raise _no_dtype(data, nested)
    return _wrap(_inferred(array, data, dtype))


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``array``: an ndarray of bools or numbers (torch's TypeError for
    anything else).

    >>> import numpy as np, dualgrad as dg
    >>> a = np.zeros(2)
    >>> t = dg.from_numpy(a)
    >>> a[0] = 1
    >>> t
    tensor([1., 0.])
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    if array.dtype.kind not in "biufc":
        raise _unsupported_array(array)
    return _wrap(array)


def _unsupported_array(array: np.ndarray) -> TypeError:
    """torch's error for an ndarray of objects or strings."""
    return TypeError(f"can't convert np.ndarray of type {array.dtype.type.__module__}.{array.dtype.type.__name__}. "
                     "The only supported types are: float64, float32, float16, complex64, complex128, int64, int32, "
                     "int16, int8, uint64, uint32, uint16, uint8, and bool.")


def zeros(*size: Any, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """A tensor of zeros of the given size: ints, one tuple or ``size=``."""
    return new_leaf(np.zeros(_size("zeros", size, kwargs), dtype=_float_dtype(dtype)), requires_grad)


def ones(*size: Any, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """A tensor of ones of the given size: ints, one tuple or ``size=``."""
    return new_leaf(np.ones(_size("ones", size, kwargs), dtype=_float_dtype(dtype)), requires_grad)


def empty(*size: Any, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """An uninitialized tensor of the given size: ints, one tuple or ``size=``."""
    return new_leaf(np.empty(_size("empty", size, kwargs), dtype=_float_dtype(dtype)), requires_grad)


def full(size: Any, fill_value: Any, dtype: Any = None, requires_grad: bool = False,
         **_device: Any) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value``, a number (or a one-element Tensor, read as its
    number).

    Its dtype is inferred from the number as torch's: bool, int64, or the default floating or
    complex dtype (NumPy scalars and Tensors count as Python numbers: ``np.float32(1.5)`` gives
    the default dtype). Torch's errors for anything else (TypeError) and for a number
    ``dtype`` cannot hold (RuntimeError).

    >>> import dualgrad as dg
    >>> dg.full((2,), 3.5), dg.full((2,), 3)
    (tensor([3.5000, 3.5000]), tensor([3, 3]))
    """
    check_device("full", _device.get("device"))
    if isinstance(fill_value, Tensor):
        fill_value = untracked_number(fill_value, "full")
    elif isinstance(fill_value, np.generic):
        fill_value = fill_value.item()
    elif not isinstance(fill_value, (int, float, complex)):
        raise TypeError(f"full(): argument 'fill_value' (position 2) must be Number, not {type(fill_value).__name__}")
    if dtype is not None:
        check_number_fits(fill_value, np.dtype(dtype))
    data = np.full(as_size((size,), fn="full"), fill_value, dtype=_dtype(dtype))
    return new_leaf(_inferred(data, fill_value, dtype), requires_grad)


def arange(start: Any = None, end: Any = None, step: Any = 1, dtype: Any = None,
           requires_grad: bool = False, **_device: Any) -> Tensor:
    """Values from ``start`` (inclusive, 0 by default) to ``end`` (exclusive) by ``step``.

    int64 when all three are ints, else the default floating dtype (as torch). As torch's, the
    values are ``start + i * step`` computed in double precision, then cast to ``dtype``; an integer
    ``dtype`` truncates ``start``, ``end`` and ``step`` toward zero first (int64 counts its length
    from the truncated values, the other integer dtypes from the given ones).

    >>> import dualgrad as dg
    >>> dg.arange(3), dg.arange(1, 2, 0.5), dg.arange(0, 5, 1.5, dtype=dg.int64)
    (tensor([0, 1, 2]), tensor([1.0000, 1.5000]), tensor([0, 1, 2, 3, 4]))
    """
    check_device("arange", _device.get("device"))
    if end is None:
        start, end = 0, start
    elif start is None:
        start = 0
    start, end, step = (v.item() if isinstance(v, (Tensor, np.generic)) else v for v in (start, end, step))
    for bound in (start, end, step):
        check_number_fits(bound, np.dtype(np.float64))
    if not (np.isfinite(start) and np.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    integral = all(isinstance(v, int) for v in (start, end, step))
    dtype = np.dtype(np.int64 if integral else _default_float[0]) if dtype is None else np.dtype(dtype)
    if dtype.kind in "bc":
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{torch_dtype_name(dtype)}\'')
    return new_leaf(_range_values(start, end, step, dtype), requires_grad)


def _range_values(start: Any, end: Any, step: Any, dtype: np.dtype) -> np.ndarray:
    """``start + i * step`` for ``i`` below ``arange``'s length, computed as torch's (see ``arange``)."""
    if dtype.kind not in "iu":
        return (start + step * np.arange(math.ceil((end - start) / step), dtype=np.float64)).astype(dtype)
    first, last, stride = int(start), int(end), int(step)
    if stride == 0:
        raise RuntimeError("step must be nonzero")
    length = -((first - last) // stride) if dtype == np.int64 else math.ceil((end - start) / step)
    return (first + stride * np.arange(max(length, 0), dtype=np.int64)).astype(dtype)


def linspace(start: float, end: float, steps: int, dtype: Any = None,
             requires_grad: bool = False, **_device: Any) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive, of the default floating dtype
    (its complex counterpart if ``start`` or ``end`` is complex) unless ``dtype`` is given; an integer
    ``dtype`` truncates the values toward zero, as torch's.

    >>> import dualgrad as dg
    >>> dg.linspace(0, 1, 3), dg.linspace(-1, 1, 4, dtype=dg.int64)
    (tensor([0.0000, 0.5000, 1.0000]), tensor([-1,  0,  0,  1]))
    """
    check_device("linspace", _device.get("device"))
    return new_leaf(_spaced(np.linspace, start, end, steps, dtype), requires_grad)


def _spaced(space: Callable, start: Any, end: Any, steps: int, dtype: Any, **options: Any) -> np.ndarray:
    """``space(start, end, steps)`` (``np.linspace`` or ``np.logspace``) computed in float64 or complex128,
    then cast to ``dtype`` (by default the default floating dtype, or its complex counterpart)."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start, end = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    values = space(start, end, steps, **options)
    if dtype is None:
        dtype = _complex_of(_default_float[0]) if values.dtype.kind == "c" else _default_float[0]
    return values.astype(dtype)


def logspace(start: float, end: float, steps: int, base: float = 10.0, dtype: Any = None,
             requires_grad: bool = False, **_device: Any) -> Tensor:
    """``steps`` values ``base ** v`` for ``v`` evenly spaced from ``start`` to ``end`` inclusive
    (computed in floating point, then cast to an integer ``dtype`` if given).

    >>> import dualgrad as dg
    >>> dg.logspace(0, 2, 3), dg.logspace(0, 2, 3, base=2)
    (tensor([  1.,  10., 100.]), tensor([1., 2., 4.]))
    """
    check_device("logspace", _device.get("device"))
    return new_leaf(_spaced(np.logspace, start, end, steps, dtype, base=base), requires_grad)


def scalar_tensor(s: Any, dtype: Any = None, requires_grad: bool = False, **_device: Any) -> Tensor:
    """A 0-d tensor of the number ``s``, of the default floating dtype unless ``dtype`` is given.

    >>> import dualgrad as dg
    >>> dg.scalar_tensor(3), dg.scalar_tensor(True, dtype=dg.int64)
    (tensor(3.), tensor(1))
    """
    check_device("scalar_tensor", _device.get("device"))
    value = s.item() if isinstance(s, Tensor) else s
    dtype = _float_dtype(dtype)
    if isinstance(value, complex) and dtype.kind != "c":
        raise RuntimeError(f"value cannot be converted to type {dtype} without overflow")
    return new_leaf(np.array(value, dtype=dtype), requires_grad)


def eye(n: int, m: int | None = None, dtype: Any = None, requires_grad: bool = False,
        **_device: Any) -> Tensor:
    """The ``n x m`` identity matrix (``n x n`` without ``m``); torch's RuntimeError for a negative size.

    >>> import dualgrad as dg
    >>> dg.eye(2, 3)
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    check_device("eye", _device.get("device"))
    for name, size in (("n", n), ("m", m)):
        if size is not None and size < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {size}")
    return new_leaf(np.eye(n, m, dtype=_float_dtype(dtype)), requires_grad)


def _size(fn: str, size: tuple, kwargs: dict) -> tuple:
    """The size of a factory given ints, one tuple or ``size=`` (other keywords: device arguments, ignored)."""
    check_device(fn, kwargs.get("device"))
    return as_size(size, kwargs.get("size"), fn)


def _random(sample: Callable[[tuple], np.ndarray], shape: tuple, requires_grad: bool) -> Tensor:
    """A tensor of ``sample(shape)``; inside vmap, drawn as the vmap's ``randomness`` says."""
    if STATE.vmap_depth:
        return random_under_vmap(lambda s: new_leaf(sample(s), requires_grad), shape)
    return new_leaf(sample(shape), requires_grad)


def _floating(fn: str, dtype: Any) -> np.dtype:
    """``dtype`` (default: the default floating dtype), which must be floating or complex (torch's error type)."""
    dtype = _float_dtype(dtype)
    if dtype.kind not in "fc":
        raise NotImplementedError(f"{fn}: not implemented for dtype {dtype} (a floating or complex dtype is needed)")
    return dtype


def rand(*size: Any, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """Uniform samples on [0, 1) of the given size (ints, one tuple or ``size=``)."""
    dtype = _floating("rand", dtype)
    return _random(lambda shape: _generator[0].random(shape).astype(dtype), _size("rand", size, kwargs),
                   requires_grad)


def randn(*size: Any, dtype: Any = None, requires_grad: bool = False, **kwargs: Any) -> Tensor:
    """Standard normal samples of the given size (ints, one tuple or ``size=``); complex dtypes get
    variance 1 split over both parts."""
    dtype = _floating("randn", dtype)

    def sample(shape: tuple) -> np.ndarray:
        data = _generator[0].standard_normal(shape)
        if dtype.kind == "c":
            data = (data + 1j * _generator[0].standard_normal(shape)) / np.sqrt(2)
        return data.astype(dtype)

    return _random(sample, _size("randn", size, kwargs), requires_grad)


def randint(low: int = 0, high: int | None = None, size: Any = None, *, dtype: Any = None,
            requires_grad: bool = False, **_device: Any) -> Tensor:
    """Integers drawn uniformly from ``[low, high)``, int64 unless ``dtype`` is given.

    As torch: ``randint(high, size)`` or ``randint(low, high, size)``, ``size`` a tuple.

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> dg.randint(10, (3,)).dtype, dg.randint(3, 5, (2, 2)).shape
    (dtype('int64'), (2, 2))
    """
    check_device("randint", _device.get("device"))
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=size)
        low, high = 0, low
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    low, high = operator.index(low), operator.index(high)
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dtype = np.dtype(np.int64) if dtype is None else np.dtype(dtype)
    return _random(lambda shape: _generator[0].integers(low, high, shape).astype(dtype), as_size((size,)),
                   requires_grad)


def _like(factory: Any, name: str, random: bool = False) -> Any:
    def like(x: Any, *args: Any, dtype: Any = None, requires_grad: bool = False,
             **_device: Any) -> Tensor:
        check_device(name, _device.get("device"))
        if not random and type(x) is BatchedTensor:  # one result per batch member, batched like ``x``
            value = like(x.value, *args, dtype=dtype or x.dtype, requires_grad=requires_grad)
            return make_batched(value, x.bdim, x.level)
        data = x if isinstance(x, Tensor) else numeric_array(x)
        if data is None:
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
        if args and isinstance(args[0], Tensor):  # (full_like's fill value: torch's error names full_like)
            args = (untracked_number(args[0], name), *args[1:])
        return factory(data.shape, *args, dtype=dtype or data.dtype, requires_grad=requires_grad)

    like.__name__ = like.__qualname__ = name
    inside = "drawn as the vmap's ``randomness`` says" if random else "batched wherever ``x`` is"
    like.__doc__ = (f"``{factory.__name__}`` with the shape and dtype of ``x``.\n\n"
                    f"    Inside ``vmap`` the result is per batch member, {inside}.")
    return like


zeros_like = _like(zeros, "zeros_like")
ones_like = _like(ones, "ones_like")
empty_like = _like(empty, "empty_like")
full_like = _like(full, "full_like")
rand_like = _like(rand, "rand_like", random=True)
randn_like = _like(randn, "randn_like", random=True)


def randint_like(x: Any, low: int = 0, high: int | None = None, *, dtype: Any = None,
                 requires_grad: bool = False, **_device: Any) -> Tensor:
    """``randint`` with the shape and dtype of ``x``: ``randint_like(x, high)`` or ``randint_like(x, low, high)``.

    >>> import dualgrad as dg
    >>> dg.randint_like(dg.zeros(2), 5).dtype
    dtype('float64')
    """
    check_device("randint_like", _device.get("device"))
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(np.shape(x)), dtype=dtype or np.asarray(x).dtype, requires_grad=requires_grad)
