"""torch's other spellings of dualgrad's ops, for code ported from torch.

* the top-level forms of in-place methods (``torch.abs_(x)`` is ``x.abs_()``), ``detach``, ``fill``,
  ``threshold``/``threshold_``, ``igamma``/``igammac`` (``special.gammainc``/``gammaincc``);
* the in-place method ``float_power_`` (``renorm_``, ``igamma_``, ``igammac_`` and ``conj_physical_``
  come from the declarations);
* the ``*_copy`` forms of view ops (a new tensor, not a view; torch's node names ``<view's>_copy``),
  ``split_with_sizes`` and the ``unsafe_`` splits (pieces that are not views);
* torch's deprecated ``range``, ``frobenius_norm`` and ``nuclear_norm``, and ``asarray``,
  ``empty_strided``, ``typename`` and ``gradient``;
* process settings that have no effect here (threads, deterministic algorithms, warnings, devices).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.devices import CPU, check_device
from ..base.dtypes import torch_dtype_name
from ..factories import _default_float, as_tensor, empty
from ..tensor import Tensor
from . import surface
from ._axes import normalize_axis
from .dispatch import apply, tensor_arg
from .elementwise import special
from .elementwise.core import selecting, to_dtype
from .elementwise.functions import float_power
from .indexing import GETITEM
from .inplace import COPY, _method, update_
from .linalg.norms import matrix_norm
from .reductions import NORM, _reduce_args
from .registry import ALL_OPS, name_by_operands, overload
from .shape.core import SPLIT, SPLIT_EVEN, cat, split
from .shape.views import view_as_complex, view_as_real
from .surface import exported, public


# -- top-level forms of Tensor methods ---------------------------------------------------------------
def _signature(spec: str) -> inspect.Signature:
    """The signature ``(input, <spec>)``: ``spec`` lists parameters as ``name`` or ``name=default``, with
    ``*`` before keyword-only ones."""
    params, kind = [inspect.Parameter("input", inspect.Parameter.POSITIONAL_OR_KEYWORD)], None
    for item in filter(None, spec.split(", ")):
        if item == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        name, _, default = item.partition("=")
        params.append(inspect.Parameter(name, kind or inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        default=ast.literal_eval(default) if default else inspect.Parameter.empty))
    return inspect.Signature(params)


def _bind(name: str, signature: inspect.Signature, args: tuple, kwargs: dict) -> inspect.BoundArguments:
    """``args`` and ``kwargs`` bound to ``signature``, or Python's TypeError for a call of ``name``."""
    try:
        return signature.bind(*args, **kwargs)
    except TypeError as error:
        positional = sum(p.kind is p.POSITIONAL_OR_KEYWORD for p in signature.parameters.values())
        if len(args) > positional:
            raise TypeError(f"{name}() takes {positional} positional argument{'s' * (positional != 1)} but "
                            f"{len(args)} were given") from None
        raise TypeError(f"{name}(): {error}") from None


def _of_method(name: str, spec: str) -> Callable:
    """``name(input, ...)``: ``input.name(...)``, with torch's signature ``(input, <spec>)``."""
    signature = _signature(spec)

    def function(*args: Any, **kwargs: Any) -> Any:
        bound = _bind(name, signature, args, kwargs)
        input = bound.arguments["input"]  # noqa: A001 - torch's name
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        return getattr(input, name)(*bound.args[1:], **bound.kwargs)

    function.__name__ = function.__qualname__ = name
    function.__signature__ = signature
    function.__doc__ = f"""``input.{name}(...)`` (torch's top-level form).

    >>> import dualgrad as dg
    >>> callable(dg.{name})
    True
    """
    return function


# torch's top-level forms of Tensor methods, by the parameters after ``input``
_TOP_LEVEL = {
    "": "conj_physical_ zero_ detach_ detach",  # (and the declared ops': top_level_inplace, below)
    "min=None, max=None": "clamp_ clip_",
    "max": "clamp_max_",
    "min": "clamp_min_",
    "value": "fill_",
    "other": "gcd_ lcm_ ldexp_ xlogy_",
    "indices, values, accumulate=False": "index_put_",
    "eps=None": "logit_",
    "nan=None, posinf=None, neginf=None": "nan_to_num_",
    "*, decimals=0": "round_",
    "the_template, *, memory_format=None": "resize_as_",
}
TOP_LEVEL = {name: _of_method(name, spec) for spec, names in _TOP_LEVEL.items() for name in names.split()}
# the one-input ops declared with ``top_level_inplace`` (``ops/surface.py``; the op modules are imported above)
TOP_LEVEL.update({f"{name}_": _of_method(f"{name}_", "") for s in surface.DECLARED for name in s.top_level_inplace})
globals().update(TOP_LEVEL)


# -- fill, threshold ---------------------------------------------------------------------------------
FILL = overload(COPY, "fill_like", "FillBackward0",  # (not "fill": the op reliability tests call dg.<op name>)
                grad_name_for=name_by_operands({(True, True): "FillBackward1"}))


@public(None, method=False)
def fill(input: Tensor, value: Any) -> Tensor:  # noqa: A002 - torch's names
    """A tensor of ``input``'s shape and dtype holding ``value`` (a number or a 0-d Tensor, whose gradient
    is the sum of the result's; ``input``'s is zero).

    >>> import dualgrad as dg
    >>> dg.fill(dg.zeros(2), 7)
    tensor([7., 7.])
    """
    input = tensor_arg(input, "fill")  # noqa: A001 - torch's name
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
    return apply(FILL, input, value)


# (the gradient is selected where ``x > threshold``, as torch's: 0 elsewhere even where it is inf or NaN)
THRESHOLD = selecting(
    "threshold", lambda x, threshold, value: np.where(x > threshold, x, np.asarray(value).astype(x.dtype)),
    (lambda out, x, threshold, value: x > threshold,), save_inputs=True)
THRESHOLD_ = overload(THRESHOLD, "threshold_", "ThresholdBackward1")


@public(None, method=False)
def threshold(input: Tensor, threshold: Any, value: Any) -> Tensor:  # noqa: A002 - torch's names
    """``input`` where it is greater than ``threshold``, else ``value``; the gradient passes where
    ``input > threshold`` (ThresholdBackward0).

    >>> import dualgrad as dg
    >>> dg.threshold(dg.tensor([0.5, 2.]), 1., -1.)
    tensor([-1.,  2.])
    """
    return apply(THRESHOLD, tensor_arg(input, "threshold"), threshold=threshold, value=value)


@public(None, method=False)
def threshold_(input: Tensor, threshold: Any, value: Any) -> Tensor:  # noqa: A002 - torch's names
    """In-place ``threshold`` (ThresholdBackward1).

    >>> import dualgrad as dg
    >>> x = dg.tensor([0.5, 2.])
    >>> dg.threshold_(x, 1., -1.) is x
    True
    """
    return update_(tensor_arg(input, "threshold_"), lambda x: apply(THRESHOLD_, x, threshold=threshold, value=value),
                   "threshold_")


# -- in-place methods --------------------------------------------------------------------------------
def float_power_(self: Tensor, exponent: Any) -> Tensor:
    """In-place ``float_power``: ``self`` must be float64 (complex128 for a complex result), as torch.

    >>> import dualgrad as dg
    >>> dg.tensor([2., 3.]).float_power_(2)
    tensor([4., 9.])
    """
    complex_exponent = exponent.is_complex() if isinstance(exponent, Tensor) else isinstance(exponent, complex)
    wanted = np.dtype(np.complex128 if self.is_complex() or complex_exponent else np.float64)
    if self.dtype != wanted:
        raise RuntimeError(f"the base given to float_power_ has dtype {torch_dtype_name(self.dtype)} but the "
                           f"operation's result requires dtype {torch_dtype_name(wanted)}")
    return update_(self, float_power, "float_power_", exponent)


@public(None)
def igamma(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """``special.gammainc`` (torch's name), differentiable in ``other`` only.

    >>> import dualgrad as dg
    >>> dg.igamma(dg.tensor([1.]), dg.tensor([1.]))
    tensor([0.6321])
    """
    return special.gammainc(input, other)


@public(None)
def igammac(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """``special.gammaincc`` (torch's name), differentiable in ``other`` only.

    >>> import dualgrad as dg
    >>> dg.igammac(dg.tensor([1.]), dg.tensor([1.]))
    tensor([0.3679])
    """
    return special.gammaincc(input, other)


# -- copies of views and pieces that are not views ---------------------------------------------------
def _copying(impl: Callable) -> Callable:
    def copied(*args: Any, **params: Any) -> Any:
        out = impl(*args, **params)
        return tuple(np.array(o, order="C") for o in out) if isinstance(out, tuple) else np.array(out, order="C")

    return copied


def _not_a_view(op: Any, name: str, grad_name_for: Callable) -> Any:
    """``op`` (a view op) as an op whose result is new memory, its node named by ``grad_name_for``."""
    twin = overload(op, name, op.grad_name, grad_name_for=grad_name_for)
    twin.impl, twin.view = _copying(op.impl), False
    twin.plain = twin.differentiable and not twin.multi_output
    twin.jvp = lambda tangents, out, x, **params: apply(twin, tangents[0], **params)
    return twin


_UNSAFE_TWINS = {SPLIT: _not_a_view(SPLIT, "unsafe_split_with_sizes", lambda node: "UnsafeSplitWithSizesBackward0"),
                 SPLIT_EVEN: _not_a_view(SPLIT_EVEN, "unsafe_split", lambda node: "UnsafeSplitBackward0")}


def _name_as(op: Any, node: Any) -> str:
    return op.grad_name if op.grad_name_for is None else op.grad_name_for(node)


def _copy_twin(op: Any) -> Any:
    """The ``copy_of_<op>`` op: the view op ``op``'s result as new memory, its node named ``<op's>_copy``."""
    return _not_a_view(op, f"copy_of_{op.name}", lambda node: f"{_name_as(op, node)}_copy")


# the view ops that the ``*_copy`` functions call (``view`` is ``reshape``; ``select`` and ``slice_copy``
# index, ``split_copy`` is ``split_even``)
_COPY_TWINS = {ALL_OPS[name]: _copy_twin(ALL_OPS[name]) for name in (
    "reshape", "permute", "t", "transpose", "expand", "diagonal", "getitem", "squeeze", "squeeze_dim",
    "squeeze_dims", "unsqueeze", "unbind", "split_even", "split", "unfold", "view_as_real", "view_as_complex")}


def _again_as(result: Any, input: Tensor, twin_of: Callable) -> Any:  # noqa: A002
    """``result`` of a view function of ``input``, computed again by ``twin_of(op)`` of its node's op when
    one op made it from ``input``, else a contiguous copy of it."""
    first = result[0] if isinstance(result, tuple) else result
    node = first._grad_fn if type(first) is Tensor else None  # (not under vmap: a BatchedTensor)
    twin = twin_of(node.op) if node is not None and len(node.edges) == 1 else None
    if twin is not None and node.edges[0][0] is (input._grad_fn or input):
        return apply(twin, input, **node.params)
    return tuple(map(_fresh, result)) if isinstance(result, tuple) else _fresh(result)


def _fresh(t: Tensor) -> Tensor:
    """A C-contiguous copy of ``t`` that is not a view (under vmap, a copy of its physical value)."""
    if type(t) is Tensor and not t._data.flags.c_contiguous:
        return empty(t.shape, dtype=t.dtype).copy_(t)
    return t.clone()


def _copy_of(name: str, view: Callable, spec: str) -> Callable:
    """``name(input, ...)``: the result of ``view`` as a new tensor (torch's ``*_copy`` functions)."""
    signature = _signature(spec)

    def function(*args: Any, **kwargs: Any) -> Any:
        bound = _bind(name, signature, args, kwargs)
        input = tensor_arg(bound.arguments["input"], name)  # noqa: A001 - torch's name
        return _again_as(view(input, *bound.args[1:], **bound.kwargs), input, _COPY_TWINS.get)

    function.__name__ = function.__qualname__ = name
    function.__signature__ = signature
    function.__doc__ = f"""``{name.removesuffix("_copy")}`` as a new tensor rather than a view.

    >>> import dualgrad as dg
    >>> callable(dg.{name})
    True
    """
    return function


def _slice(input: Tensor, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Tensor:  # noqa: A002
    dim = normalize_axis(dim, input.ndim, "slice_copy")
    return apply(GETITEM, input, index=(slice(None),) * dim + (slice(start, end, step),))


@public(SPLIT, inplace=False)
def split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple:  # noqa: A002 - torch's names
    """``split`` into pieces (views) of the sizes ``split_sizes``, which must sum to the size of ``dim``.

    >>> import dualgrad as dg
    >>> [p.shape for p in dg.split_with_sizes(dg.zeros(5, 2), [1, 4])]
    [(1, 2), (4, 2)]
    """
    if not isinstance(split_sizes, (list, tuple)):
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not "
                        f"{type(split_sizes).__name__}")
    return split(input, list(split_sizes), dim)


_COPIES = {
    "view_copy": (_method("view"), "size"), "permute_copy": (_method("permute"), "dims"),
    "t_copy": (_method("t"), ""), "transpose_copy": (_method("transpose"), "dim0, dim1"),
    "expand_copy": (lambda x, size, implicit=False: _method("expand")(x, size), "size, *, implicit=False"),
    "diagonal_copy": (_method("diagonal"), "offset=0, dim1=0, dim2=1"),
    "select_copy": (_method("select"), "dim, index"), "slice_copy": (_slice, "dim=0, start=None, end=None, step=1"),
    "squeeze_copy": (_method("squeeze"), "dim=None"), "unsqueeze_copy": (_method("unsqueeze"), "dim"),
    "unbind_copy": (_method("unbind"), "dim=0"), "split_copy": (_method("split"), "split_size, dim=0"),
    "split_with_sizes_copy": (split_with_sizes, "split_sizes, dim=0"),
    "unfold_copy": (_method("unfold"), "dimension, size, step"),
    "detach_copy": (_method("detach"), ""),
    "view_as_real_copy": (view_as_real, ""), "view_as_complex_copy": (view_as_complex, ""),
}
COPIES = {name: _copy_of(name, view, spec) for name, (view, spec) in _COPIES.items()}
globals().update(COPIES)


@public(None, method=False)
def unsafe_split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """``split`` whose pieces are new tensors, not views (UnsafeSplitBackward0).

    >>> import dualgrad as dg
    >>> [p.shape for p in dg.unsafe_split(dg.zeros(5), 2)]
    [(2,), (2,), (1,)]
    """
    tensor = tensor_arg(tensor, "unsafe_split")
    return _again_as(split(tensor, split_size_or_sections, dim), tensor, _UNSAFE_TWINS.get)


@public(None, method=False)
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:  # noqa: A002 - torch's names
    """``chunk`` whose pieces are new tensors, not views (UnsafeSplitBackward0).

    >>> import dualgrad as dg
    >>> [p.shape for p in dg.unsafe_chunk(dg.zeros(5), 3)]
    [(2,), (2,), (1,)]
    """
    input = tensor_arg(input, "unsafe_chunk")  # noqa: A001 - torch's name
    return _again_as(input.chunk(chunks, dim), input, _UNSAFE_TWINS.get)


@public(None, method=False)
def unsafe_split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> tuple:  # noqa: A002
    """``split_with_sizes`` whose pieces are new tensors, not views (UnsafeSplitWithSizesBackward0).

    >>> import dualgrad as dg
    >>> [p.shape for p in dg.unsafe_split_with_sizes(dg.zeros(5), [1, 4])]
    [(1,), (4,)]
    """
    input = tensor_arg(input, "unsafe_split_with_sizes")  # noqa: A001 - torch's name
    return _again_as(split_with_sizes(input, split_sizes, dim), input, _UNSAFE_TWINS.get)


# -- deprecated norms and factories ------------------------------------------------------------------
FROBENIUS_NORM = overload(NORM, "frobenius_norm", "NormBackward1")


@public(None, method=False)
def frobenius_norm(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:  # noqa: A002 - torch's names
    """torch's deprecated ``frobenius_norm``: the 2-norm over ``dim`` (``linalg.vector_norm(input, 2, dim,
    keepdim)``); warns as torch.

    >>> import dualgrad as dg, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     dg.frobenius_norm(dg.tensor([[3., 4.]]), (0, 1))
    tensor(5.)
    """
    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed "
                  "in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    x = tensor_arg(input, "frobenius_norm")
    return apply(FROBENIUS_NORM, x, p=2.0, **_reduce_args(x, dim, None, keepdim, None, "frobenius_norm"))


@public(None, method=False)
def nuclear_norm(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A002 - torch's names
    """torch's deprecated ``nuclear_norm``: the sum of the singular values of the matrices over ``dim``
    (the last two by default; ``nuclear_norm(input, True)`` is ``keepdim``, as torch's overloads); warns as
    torch.

    >>> import dualgrad as dg, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     dg.nuclear_norm(dg.tensor([[3., 0.], [0., -4.]]))
    tensor(7.)
    """
    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed "
                  "in a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return matrix_norm(tensor_arg(input, "nuclear_norm"), "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)


@public(None, method=False)
def range(start: Any = 0, end: Any = None, step: Any = 1, *, dtype: Any = None,  # noqa: A001 - torch's name
          requires_grad: bool = False, **_device: Any) -> Tensor:
    """torch's deprecated ``range``: ``start`` to ``end`` *inclusive* by ``step`` (``floor((end - start) /
    step) + 1`` values), of the default floating dtype unless ``dtype`` is given; warns as torch.

    >>> import dualgrad as dg, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     dg.range(1, 4)
    tensor([1., 2., 3., 4.])
    """
    check_device("range", _device.get("device"))
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = int((end - start) / step) + 1
    values = start + np.arange(count, dtype=np.float64) * step
    return empty(0).new_tensor(values, dtype=dtype or _default_float[0], requires_grad=requires_grad)


@public(None, method=False)
def empty_strided(size: Any, stride: Any, *, dtype: Any = None, requires_grad: bool = False,
                  **_device: Any) -> Tensor:
    """An uninitialized tensor of ``size`` whose memory steps are ``stride`` (in elements, as torch's).

    >>> import dualgrad as dg
    >>> dg.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    check_device("empty_strided", _device.get("device"))
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    item = empty(0, dtype=dtype).dtype
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    data = np.lib.stride_tricks.as_strided(np.empty(span, item), size, tuple(s * item.itemsize for s in stride))
    return as_tensor(data).requires_grad_(requires_grad)


@public(None, method=False)
def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """``obj`` as a Tensor (torch.asarray): a Tensor or ndarray is shared when neither ``copy=True`` nor
    another ``dtype`` asks for new memory (``copy=False`` with another dtype raises ValueError); a
    Tensor's cast or copy is recorded (ToCopyBackward0, CloneBackward0). ``requires_grad`` defaults to
    ``obj``'s (warning as torch when ``obj`` is a leaf that requires grad and is returned) and, when
    given, is set on the result (``requires_grad_``, on ``obj`` itself when it is shared, as torch).

    >>> import dualgrad as dg, numpy as np
    >>> a = np.zeros(2)
    >>> dg.asarray(a)[0] = 1.
    >>> a
    array([1., 0.])
    """
    check_device("asarray", device)
    source = obj._data if isinstance(obj, Tensor) else obj
    current = np.asarray(source).dtype if isinstance(source, np.ndarray) else None
    if copy is False and dtype is not None and current is not None and np.dtype(dtype) != current:
        raise ValueError(f"can't alias tensor with dtype '{torch_dtype_name(current)}' into dtype "
                         f"'{torch_dtype_name(np.dtype(dtype))}'.")
    if copy is False and not isinstance(source, np.ndarray):
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    if isinstance(obj, Tensor):
        if requires_grad is None and obj.requires_grad and obj.is_leaf and dtype in (None, obj.dtype) and not copy:
            warnings.warn("torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
                          "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
                          "warning.", UserWarning, stacklevel=2)
        result = to_dtype(obj, dtype) if dtype is not None else obj
        result = result.clone() if copy and result is obj else result
    else:
        result = as_tensor(np.array(source, copy=True) if copy else source, dtype=dtype)
    return result if requires_grad is None else result.requires_grad_(requires_grad)


@public(None, method=False)
def typename(obj: Any, /) -> str:
    """torch's name of ``obj``'s type: ``'torch.DoubleTensor'`` for a float64 Tensor, else the qualified
    class name (``'int'``, ``'numpy.ndarray'``).

    >>> import dualgrad as dg
    >>> dg.typename(dg.zeros(2)), dg.typename(3)
    ('torch.DoubleTensor', 'int')
    """
    if isinstance(obj, Tensor):
        return obj.type()
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", "__builtin__", None) else f"{module}.{cls.__qualname__}"


# -- gradient ----------------------------------------------------------------------------------------
def _at(f: Tensor, dim: int, i: int, n: int = 1) -> Tensor:
    """``n`` entries of ``f`` along ``dim`` from ``i`` (counted from the end when negative)."""
    return f.narrow(dim, i % f.shape[dim], n)


def _uniform_difference(f: Tensor, dim: int, h: Any, edge_order: int) -> Tensor:
    inner = f.shape[dim] - 2
    interior = (_at(f, dim, 2, inner) - _at(f, dim, 0, inner)) / (2 * h)
    if edge_order == 1:
        first = (_at(f, dim, 1) - _at(f, dim, 0)) / h
        last = (_at(f, dim, -1) - _at(f, dim, -2)) / h
    else:
        first = (-1.5 * _at(f, dim, 0) + 2 * _at(f, dim, 1) - 0.5 * _at(f, dim, 2)) / h
        last = (0.5 * _at(f, dim, -3) - 2 * _at(f, dim, -2) + 1.5 * _at(f, dim, -1)) / h
    return cat((first, interior, last), dim)


def _coordinate_difference(f: Tensor, dim: int, x: Tensor, edge_order: int) -> Tensor:
    """The derivative along ``dim`` at the coordinates ``x`` (second order inside, NumPy's and torch's
    formulas)."""
    inner, dx = f.shape[dim] - 2, x[1:] - x[:-1]
    a, b = (step.reshape([-1 if d == dim else 1 for d in builtins.range(f.ndim)]) for step in (dx[:-1], dx[1:]))
    interior = (-b / (a * (a + b)) * _at(f, dim, 0, inner) + (b - a) / (a * b) * _at(f, dim, 1, inner)
                + a / (b * (a + b)) * _at(f, dim, 2, inner))
    if edge_order == 1:
        first = (_at(f, dim, 1) - _at(f, dim, 0)) / dx[0]
        last = (_at(f, dim, -1) - _at(f, dim, -2)) / dx[-1]
    else:
        a, b = dx[0], dx[1]
        first = (-(2 * a + b) / (a * (a + b)) * _at(f, dim, 0) + (a + b) / (a * b) * _at(f, dim, 1)
                 - a / (b * (a + b)) * _at(f, dim, 2))
        a, b = dx[-2], dx[-1]
        last = (b / (a * (a + b)) * _at(f, dim, -3) - (a + b) / (a * b) * _at(f, dim, -2)
                + (2 * b + a) / (b * (a + b)) * _at(f, dim, -1))
    return cat((first, interior, last), dim)


def _spacings(spacing: Any, dims: tuple, given_dim: bool, ndim: int) -> list:
    """One spacing (a number, or a Tensor of coordinates) per dimension in ``dims``."""
    if not isinstance(spacing, (list, tuple)):
        return [spacing] * len(dims)
    if len(spacing) != len(dims):
        if given_dim:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal "
                           f"to 'self.dim() = {ndim}', since dim argument was not given, but got a list of length "
                           f"{len(spacing)}")
    for h in spacing:
        if isinstance(h, Tensor) and h.ndim != 1:
            raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but got an "
                               f"element with {h.ndim} dimensions!")
    return list(spacing)


@public(None, method=False)
def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None, edge_order: int = 1) -> tuple:  # noqa: A002
    """Estimates of the derivatives of ``input`` along ``dim`` (all dimensions by default), one Tensor per
    dimension: central differences inside, one-sided ones of order ``edge_order`` (1 or 2) at the edges.
    ``spacing`` is a number (the step of every dimension), a list of numbers (one step per dimension) or a
    list of 1-D Tensors (the coordinates along each dimension). Differentiable; an integer ``input`` gives
    the default floating dtype, as torch.

    >>> import dualgrad as dg
    >>> dg.gradient(dg.tensor([1., 4., 9., 16.]))
    (tensor([3., 4., 6., 7.]),)
    """
    f = tensor_arg(input, "gradient")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = tuple(builtins.range(f.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    dims = tuple(normalize_axis(d, f.ndim, "gradient") for d in dims)
    spacings = _spacings(spacing, dims, dim is not None, f.ndim)
    if any(f.shape[d] < edge_order + 1 for d in dims):
        raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    if not (f.is_floating_point() or f.is_complex()):
        f = f.to(_default_float[0])
    return tuple(_coordinate_difference(f, d, h, edge_order) if isinstance(h, Tensor) and h.ndim
                 else _uniform_difference(f, d, h, edge_order) for d, h in zip(dims, spacings))


# -- process settings without effect -------------------------------------------------------------------
_SETTINGS = {"num_threads": 1, "num_interop_threads": 1, "deterministic": False, "warn_always": False}


@public(None, method=False)
def get_num_threads() -> int:
    """The number of threads torch would use; dualgrad runs on NumPy's and reports what was set (1 by default).

    >>> import dualgrad as dg
    >>> dg.get_num_threads() >= 1
    True
    """
    return _SETTINGS["num_threads"]


@public(None, method=False)
def set_num_threads(int: Any) -> None:  # noqa: A002 - torch's name
    """Accepted for torch code and recorded for ``get_num_threads``; NumPy's threads are not changed.

    >>> import dualgrad as dg
    >>> dg.set_num_threads(dg.get_num_threads())
    """
    _SETTINGS["num_threads"] = builtins.int(int)


@public(None, method=False)
def get_num_interop_threads() -> int:
    """As ``get_num_threads``, for torch's inter-op threads (which dualgrad does not have).

    >>> import dualgrad as dg
    >>> dg.get_num_interop_threads() >= 1
    True
    """
    return _SETTINGS["num_interop_threads"]


@public(None, method=False)
def set_num_interop_threads(int: Any) -> None:  # noqa: A002 - torch's name
    """Accepted for torch code and recorded for ``get_num_interop_threads``; no effect.

    >>> import dualgrad as dg
    >>> dg.set_num_interop_threads(dg.get_num_interop_threads())
    """
    _SETTINGS["num_interop_threads"] = builtins.int(int)


@public(None, method=False)
def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted for torch code and recorded: dualgrad's ops are deterministic whatever ``mode`` is.

    >>> import dualgrad as dg
    >>> dg.use_deterministic_algorithms(False)
    """
    _SETTINGS["deterministic"] = builtins.bool(mode)


@public(None, method=False)
def are_deterministic_algorithms_enabled() -> bool:
    """What ``use_deterministic_algorithms`` last set (False by default).

    >>> import dualgrad as dg
    >>> dg.are_deterministic_algorithms_enabled()
    False
    """
    return _SETTINGS["deterministic"]


@public(None, method=False)
def set_warn_always(b: bool, /) -> None:
    """Accepted for torch code and recorded; dualgrad's warnings follow Python's ``warnings`` filters.

    >>> import dualgrad as dg
    >>> dg.set_warn_always(False)
    """
    _SETTINGS["warn_always"] = builtins.bool(b)


@public(None, method=False)
def is_warn_always_enabled() -> bool:
    """What ``set_warn_always`` last set (False by default).

    >>> import dualgrad as dg
    >>> dg.is_warn_always_enabled()
    False
    """
    return _SETTINGS["warn_always"]


@public(None, method=False)
def set_default_device(device: Any) -> None:
    """Accepted for torch code: dualgrad has the CPU only, so ``'cpu'`` (or None) is the only device taken.

    >>> import dualgrad as dg
    >>> dg.set_default_device("cpu")
    """
    check_device("set_default_device", device)


@public(None, method=False)
def get_default_device() -> Any:
    """``device(type='cpu')``, the only device dualgrad has.

    >>> import dualgrad as dg
    >>> dg.get_default_device()
    device(type='cpu')
    """
    return CPU


METHODS: dict[str, Any] = {
    "float_power_": float_power_,
}
# (the generated top-level in-place forms and ``*_copy`` functions, and the declared functions)
__all__ = exported(__name__, [*TOP_LEVEL, *COPIES])
