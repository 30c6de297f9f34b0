"""``assert_close``: torch.testing's comparison of tensors, numbers and containers of them.

The inputs are walked first (sequences by position, mappings by key), pairing each leaf of
``actual`` with the one of ``expected``; a structure that differs, a leaf of a type that cannot
be compared, or half of a tolerance fails there, without ``msg``. The pairs are then compared
in turn, and the first that fails raises, with ``msg`` (a string, or a callable given the
message) if one was given.
"""

from __future__ import annotations

import cmath
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..ops.promotion import _promote_types
from ..tensor import Tensor

# {dtype name: (rtol, atol)} when neither is given; any other dtype compares exactly. In torch's table.
_TOLERANCES = {
    "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}
# The dtype whose tolerances a Python number takes, by its type.
_NUMBER_DTYPES = {int: "int64", float: "float64", complex: "complex128"}
_NUMBERS = (int, float, complex, np.number)


class Mismatch(Exception):
    """A failed check: the exception type to raise, its message and the path (keys and indices) to
    the pair of leaves that failed."""

    def __init__(self, kind: type[Exception], message: str, path: tuple = ()) -> None:
        super().__init__(message)
        self.kind, self.message, self.path = kind, message, path

    def error(self, msg: str | Callable[[str], str] | None = None) -> Exception:
        """The exception to raise: ``msg`` itself if a string, else the message (with the path)
        passed through ``msg`` if it is callable."""
        if isinstance(msg, str):
            return self.kind(msg)
        message = self.message
        if self.path:
            message += "\n\nThe failure occurred for item " + "".join(str([key]) for key in self.path)
        return self.kind(msg(message) if callable(msg) else message)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Raise ``AssertionError`` unless ``actual`` and ``expected`` are close, as ``torch.testing.assert_close``.

    Tensors (or two NumPy arrays) are close when they have the same shape, dtype (with
    ``check_dtype``; else both are promoted to a common one) and stride (with
    ``check_stride``) and every ``|actual - expected| <= atol + rtol * |expected|``;
    infinities must be equal, and NaNs match only with ``equal_nan``. Python numbers
    compare the same way (of the same type, with ``check_dtype``), ``None`` only with
    ``None``, and (nested) sequences and mappings element by element. Without ``rtol``
    and ``atol`` (give both or neither: ValueError), they are the loosest of the two
    dtypes': float16 ``1e-3, 1e-5``, float32 and complex64 ``1.3e-6, 1e-5``, float64
    and complex128 ``1e-7, 1e-7`` (the dtype of a Python float), other dtypes 0 (equality).
    ``check_device`` and ``check_layout`` are accepted: dualgrad's tensors are strided on
    the CPU. The error names the mismatched elements, the greatest absolute and relative
    differences and their indices, as torch's does; ``msg`` (a string, or a callable given
    the message) replaces it.

    >>> import dualgrad as dg
    >>> from dualgrad.testing import assert_close
    >>> assert_close(dg.tensor([1.0, 2.0]), dg.tensor([1.0, 2.0 + 1e-9]))
    >>> assert_close(dg.tensor([1.0, 2.0, 3.0]), dg.tensor([1.0, 2.5, 3.0]))
    Traceback (most recent call last):
    AssertionError: Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 3 (33.3%)
    Greatest absolute difference: 0.5 at index (1,) (up to 1e-07 allowed)
    Greatest relative difference: 0.2 at index (1,) (up to 1e-07 allowed)
    """
    __tracebackhide__ = True  # (pytest shows the caller's line)
    options = {"allow_subclasses": allow_subclasses, "rtol": rtol, "atol": atol, "equal_nan": equal_nan,
               "check_dtype": check_dtype, "check_stride": check_stride}
    try:
        comparisons = _pair(actual, expected, (), options)
    except Mismatch as mismatch:
        raise mismatch.error() from None
    for compare in comparisons:
        try:
            compare()
        except Mismatch as mismatch:
            raise mismatch.error(msg) from None


def _pair(actual: Any, expected: Any, path: tuple, options: dict) -> list[Callable[[], None]]:
    """The comparisons of the leaves of ``actual`` and ``expected``, walking their containers."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise Mismatch(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                           path)
        return [c for i, (a, e) in enumerate(zip(actual, expected, strict=True))
                for c in _pair(a, e, (*path, i), options)]
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        keys = _same_keys(actual, expected, path)
        return [c for key in keys for c in _pair(actual[key], expected[key], (*path, key), options)]
    return [_leaf_comparison(actual, expected, path, options)]


def _is_sequence(x: Any) -> bool:
    return isinstance(x, Sequence) and not isinstance(x, str)


def _same_keys(actual: Mapping, expected: Mapping, path: tuple) -> list:
    """The keys of both mappings (sorted when they can be), or a Mismatch naming the ones that differ."""
    keys, wanted = set(actual), set(expected)
    if keys != wanted:
        raise Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                       f"Missing keys in the actual mapping: {sorted(wanted - keys)}\n"
                       f"Additional keys in the actual mapping: {sorted(keys - wanted)}", path)
    try:
        return sorted(keys)
    except TypeError:
        return list(keys)


def _leaf_comparison(actual: Any, expected: Any, path: tuple, options: dict) -> Callable[[], None]:
    """The comparison of two leaves: None, booleans, numbers, or tensor-likes of related types."""
    if actual is None or expected is None:
        return lambda: _compare_none(actual, expected, path)
    if isinstance(actual, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
        return lambda: _compare_booleans(bool(actual), bool(expected), path)
    if isinstance(actual, _NUMBERS) and isinstance(expected, _NUMBERS):
        actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
        dtypes = [_NUMBER_DTYPES.get(type(x), "int64") for x in (actual, expected)]  # (a bool: as an int)
        tolerances = _tolerances(dtypes, options["rtol"], options["atol"], path)
        return lambda: _compare_numbers(actual, expected, tolerances, path, options)
    if _related_arrays(actual, expected, options["allow_subclasses"]):
        actual, expected = (x._data if isinstance(x, Tensor) else x for x in (actual, expected))
        tolerances = _tolerances([actual.dtype.name, expected.dtype.name], options["rtol"], options["atol"], path)
        return lambda: _compare_arrays(actual, expected, tolerances, path, options)
    raise Mismatch(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} "
                   f"and {type(expected)}.", path)


def _related_arrays(actual: Any, expected: Any, allow_subclasses: bool) -> bool:
    """True for two Tensors or two ndarrays, of the same type or (``allow_subclasses``) one's subclass."""
    if not (isinstance(actual, (Tensor, np.ndarray)) and isinstance(expected, (Tensor, np.ndarray))):
        return False
    if not allow_subclasses:
        return type(actual) is type(expected)
    return isinstance(actual, type(expected)) or isinstance(expected, type(actual))


def _tolerances(dtypes: list[str], rtol: float | None, atol: float | None, path: tuple) -> tuple:
    """``(rtol, atol)``: the given ones, or the loosest defaults of ``dtypes``; a Mismatch for only one given."""
    if (rtol is None) != (atol is None):
        raise Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                       f"but got no {'rtol' if rtol is None else 'atol'}.", path)
    if rtol is not None:
        return rtol, atol
    defaults = [_TOLERANCES.get(name, (0.0, 0.0)) for name in dtypes]
    return max(r for r, _ in defaults), max(a for _, a in defaults)


def _compare_none(actual: Any, expected: Any, path: tuple) -> None:
    if not (actual is None and expected is None):
        raise Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}", path)


def _compare_booleans(actual: bool, expected: bool, path: tuple) -> None:
    if actual is not expected:
        raise Mismatch(AssertionError, f"Booleans mismatch: {actual} is not {expected}", path)


def _compare_numbers(actual: Any, expected: Any, tolerances: tuple, path: tuple, options: dict) -> None:
    if options["check_dtype"] and type(actual) is not type(expected):
        raise Mismatch(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.", path)
    if actual == expected or (options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected)):
        return
    rtol, atol = tolerances
    difference = abs(actual - expected)
    if cmath.isfinite(difference) and difference <= atol + rtol * abs(expected):
        return
    raise Mismatch(AssertionError, _scalar_message(actual, expected, rtol, atol), path)


def _compare_arrays(actual: np.ndarray, expected: np.ndarray, tolerances: tuple, path: tuple,
                    options: dict) -> None:
    """Shapes, then strides and dtypes if asked, then the values (in a common dtype)."""
    _check_attribute("shape", actual.shape, expected.shape, path)
    if options["check_stride"]:
        _check_attribute("stride()", _element_strides(actual), _element_strides(expected), path)
    if options["check_dtype"]:
        _check_attribute("dtype", actual.dtype, expected.dtype, path)
    dtype = _promote_types(actual.dtype, expected.dtype)
    actual, expected = actual.astype(dtype, copy=False), expected.astype(dtype, copy=False)
    rtol, atol = tolerances
    matches = _matches(actual, expected, rtol, atol, options["equal_nan"])
    if matches.all():
        return
    message = (_scalar_message(actual.item(), expected.item(), rtol, atol) if actual.ndim == 0
               else _tensor_message(actual, expected, matches, rtol, atol))
    raise Mismatch(AssertionError, message, path)


def _check_attribute(name: str, actual: Any, expected: Any, path: tuple) -> None:
    if actual != expected:
        raise Mismatch(AssertionError, f"The values for attribute '{name}' do not match: {actual} != {expected}.",
                       path)


def _element_strides(array: np.ndarray) -> tuple:
    return tuple(step // array.itemsize for step in array.strides)


def _matches(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """Where ``|actual - expected| <= atol + rtol * |expected|`` (integers: exact without tolerances,
    which NumPy's isclose, computing in floating point, is not beyond 2**53)."""
    if actual.dtype.kind in "biu" and rtol == 0 and atol == 0:
        return actual == expected
    return np.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _scalar_message(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    difference = abs(actual - expected)
    relative = float("inf") if expected == 0 else difference / abs(expected)
    return _mismatch_message("Scalars", f"Expected {expected} but got {actual}.", rtol, atol,
                             (difference, None), (relative, None))


def _tensor_message(actual: np.ndarray, expected: np.ndarray, matches: np.ndarray, rtol: float,
                    atol: float) -> str:
    """The count of mismatched elements and the greatest differences among them, with their indices."""
    if actual.dtype.kind not in "fc":
        actual, expected = actual.astype(np.int64), expected.astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        difference = np.abs(actual - expected)
        relative = difference / np.abs(expected)
    mismatched = matches.size - int(matches.sum())
    count = f"Mismatched elements: {mismatched} / {matches.size} ({mismatched / matches.size:.1%})"
    return _mismatch_message("Tensor-likes", count, rtol, atol, _greatest(difference, matches),
                             _greatest(relative, matches))


def _greatest(differences: np.ndarray, matches: np.ndarray) -> tuple:
    """The greatest of ``differences`` where ``matches`` is False (a NaN first) and its index."""
    differences = np.where(matches, 0, differences)
    flat = int(np.argmax(differences))  # (NumPy's argmax, as torch's max, stops at the first NaN)
    return differences.flat[flat].item(), tuple(int(i) for i in np.unravel_index(flat, differences.shape))


def _mismatch_message(what: str, extra: str, rtol: float, atol: float, absolute: tuple, relative: tuple) -> str:
    equality = rtol == 0 and atol == 0
    lines = [f"{what} are not {'equal' if equality else 'close'}!", "", extra]
    for kind, (value, index), tolerance in (("absolute", absolute, atol), ("relative", relative, rtol)):
        line = f"{kind.title()} difference: {value}" if index is None else \
            f"Greatest {kind} difference: {value} at index {index}"
        lines.append(line if equality else f"{line} (up to {tolerance} allowed)")
    return "\n".join(lines)
