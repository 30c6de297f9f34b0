"""Discrete Fourier transforms (NumPy's ``np.fft``) as linear ops.

Four ops cover the family: ``fftn`` and ``ifftn`` (complex to complex), ``rfftn``
(real to half-spectrum) and ``irfftn`` (half-spectrum to real), each with
explicit sizes ``s``, negative ``axes`` and a ``norm`` in {"backward", "ortho",
"forward"}; ``fft``, ``fft2``, ``rfft``, ... are these with NumPy's defaults.
All are linear, so their jvp is the op on the tangent; the vjp is the adjoint:

* the adjoint of a transform with ``norm`` is the inverse transform with the
  *dual* norm ("backward" <-> "forward", "ortho" stays), because the unscaled
  DFT's adjoint is ``n`` times its inverse;
* padding or cropping the input to ``s`` becomes cropping or zero-padding the gradient;
* ``rfftn`` keeps the first ``n // 2 + 1`` bins of the last axis: its adjoint
  zero-pads them back and keeps the real part (the input is real);
* ``irfftn`` reads each bin ``k`` of the half-spectrum also as its mirror ``n - k``:
  its adjoint is ``rfftn`` of the gradient with bins other than 0 and ``n / 2``
  counted twice (the imaginary parts of those two bins are ignored by the transform).

Batching rules move the batch axis first; the axes are negative, so they stay valid.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor, _wrap, as_operand
from .batch_rules import to_front
from .dispatch import apply
from .registry import linear
from .shape.core import PAD, roll
from .surface import public

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _resize(g: Tensor, shape: tuple, axes: tuple) -> Tensor:
    """``g`` zero-padded or cropped at the end of ``axes`` to the sizes of ``shape``."""
    widths = [(0, 0)] * g.ndim
    changed = False
    for axis in axes:
        extra = shape[axis] - g.shape[axis]
        if extra:
            widths[axis] = (0, extra)
            changed = True
    return apply(PAD, g, widths=tuple(widths), value=0) if changed else g


def _fftn_vjp(g: Tensor, out: Any, x: Any, *, s: tuple, axes: tuple, norm: str) -> Tensor:
    return _resize(apply(IFFTN, g, s=s, axes=axes, norm=_DUAL[norm]), x.shape, axes)


def _ifftn_vjp(g: Tensor, out: Any, x: Any, *, s: tuple, axes: tuple, norm: str) -> Tensor:
    return _resize(apply(FFTN, g, s=s, axes=axes, norm=_DUAL[norm]), x.shape, axes)


def _rfftn_vjp(g: Tensor, out: Any, x: Any, *, s: tuple, axes: tuple, norm: str) -> Tensor:
    """Zero-pad the half-spectrum to the full one, inverse-transform, keep the real part."""
    full_shape = list(g.shape)
    full_shape[axes[-1]] = s[-1]
    full = _resize(g, tuple(full_shape), axes[-1:])
    return _resize(apply(IFFTN, full, s=s, axes=axes, norm=_DUAL[norm]).real, x.shape, axes)


def _mirror_weights(n: int, bins: int, dtype: np.dtype) -> np.ndarray:
    """1 for bin 0 (and bin ``n / 2`` when ``n`` is even), 2 for bins that stand for two."""
    weights = np.full(bins, 2.0, dtype=dtype)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    return weights


def _irfftn_vjp(g: Tensor, out: Any, x: Any, *, s: tuple, axes: tuple, norm: str) -> Tensor:
    """``rfftn`` of the gradient with the mirrored bins counted twice, resized to the input."""
    half = apply(RFFTN, g, s=s, axes=axes, norm=_DUAL[norm])
    weights = _mirror_weights(s[-1], half.shape[axes[-1]], g.dtype)
    weights = weights.reshape((-1,) + (1,) * (-axes[-1] - 1))
    return _resize(half * _wrap(weights), x.shape, axes)


def _batch(op: Any) -> Any:
    return lambda args, bdims, **params: (apply(op, to_front(args[0], bdims[0]), **params), 0)


def _fftn_name(node: Any) -> str:
    """torch transforms a real input along one dim as the first half of a real-to-complex one."""
    real = node.kept()[0].dtype.kind != "c"
    return "FftR2CBackward0" if real and len(node.params["axes"]) == 1 else "FftC2CBackward0"


FFTN = linear("fftn", lambda x, s, axes, norm: np.fft.fftn(x, s=s, axes=axes, norm=norm), (_fftn_vjp,),
              family="fft", grad_name="FftC2CBackward0", grad_name_for=_fftn_name)
IFFTN = linear("ifftn", lambda x, s, axes, norm: np.fft.ifftn(x, s=s, axes=axes, norm=norm), (_ifftn_vjp,),
               family="fft", grad_name="FftC2CBackward0")
RFFTN = linear("rfftn", lambda x, s, axes, norm: np.fft.rfftn(x, s=s, axes=axes, norm=norm), (_rfftn_vjp,),
               family="fft", grad_name="FftR2CBackward0")
IRFFTN = linear("irfftn", lambda x, s, axes, norm: np.fft.irfftn(x, s=s, axes=axes, norm=norm),
                (_irfftn_vjp,), family="fft", grad_name="FftC2RBackward0")
for _op in (FFTN, IFFTN, RFFTN, IRFFTN):
    _op.batch = _batch(_op)


# -- argument handling (NumPy's rules) ---------------------------------------------------------------
def _norm(norm: str | None) -> str:
    norm = "backward" if norm is None else norm
    if norm not in _DUAL:
        raise ValueError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or "forward".')
    return norm


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise TypeError(f"{name}: out= is not supported for dualgrad Tensors")


def _plan(name: str, x: Tensor, s: Any, axes: Any, half_input: bool = False) -> tuple:
    """``(s, axes)`` with every size explicit and every axis negative, as NumPy resolves them.

    ``half_input`` (irfft): the last axis holds ``n // 2 + 1`` bins and its default size is ``2 (m - 1)``.
    """
    if axes is None:
        axes = tuple(range(-(len(s) if s is not None else x.ndim), 0))
    else:
        axes = (axes,) if np.ndim(axes) == 0 else tuple(axes)
    if not axes and x.ndim == 0:
        raise ValueError(f"{name}: cannot transform a 0-dimensional array")
    normalized = []
    for axis in axes:
        axis = int(axis)
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"{name}: axis {axis} is out of bounds for an array of shape {x.shape}")
        normalized.append(axis - x.ndim if axis >= 0 else axis)
    if len(set(normalized)) != len(normalized):
        raise ValueError(f"{name}: repeated axes {axes} are not supported")
    if s is None:
        s = [-1] * len(normalized)
    s = [int(n) for n in s]
    if len(s) != len(normalized):
        raise ValueError(f"{name}: shape and axes have different lengths: s={tuple(s)}, axes={axes}")
    sizes = []
    for i, (n, axis) in enumerate(zip(s, normalized, strict=True)):
        if n == -1:
            n = 2 * (x.shape[axis] - 1) if half_input and i == len(s) - 1 else x.shape[axis]
        if n < 1:
            raise ValueError(f"{name}: Invalid number of FFT data points ({n}) specified (input shape "
                             f"{x.shape}, axis {axis}).")
        sizes.append(n)
    return tuple(sizes), tuple(normalized)


def _dim(name: str, axis: Any, dim: Any, default: Any) -> Any:
    """The axes to transform: torch's ``dim`` or NumPy's ``axis``/``axes`` (one of them, not both)."""
    if dim is None:
        return axis
    if axis is not default:
        raise TypeError(f"{name}() got both NumPy's axis/axes and torch's dim; pass one of them")
    return dim


def _one_axis(n: int | None, axis: int) -> tuple:
    return (None if n is None else (n,)), (axis,)


def _c2c(op: Any, name: str, a: Any, s: Any, axes: Any, norm: str | None, out: Any) -> Tensor:
    _no_out(name, out)
    a = as_operand(a)
    s, axes = _plan(name, a, s, axes)
    return apply(op, a, s=s, axes=axes, norm=_norm(norm))


def _r2c(name: str, a: Any, s: Any, axes: Any, norm: str | None, out: Any) -> Tensor:
    _no_out(name, out)
    a = as_operand(a)
    if a.dtype.kind == "c":
        raise TypeError(f"{name}: the input must be real, got dtype {a.dtype} (use fft/fftn for complex "
                        "input)")
    s, axes = _plan(name, a, s, axes)
    return apply(RFFTN, a, s=s, axes=axes, norm=_norm(norm))


def _c2r(name: str, a: Any, s: Any, axes: Any, norm: str | None, out: Any) -> Tensor:
    _no_out(name, out)
    a = as_operand(a)
    s, axes = _plan(name, a, s, axes, half_input=True)
    return apply(IRFFTN, a, s=s, axes=axes, norm=_norm(norm))


# -- public functions ----------------------------------------------------------------------------------
# (each is ``dualgrad.fft.<name>`` only: no top-level name, no Tensor method)
_FFT = {"top_level": False, "method": False}


@public(None, namespaces={"fft": ("fft",)}, **_FFT)
def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, out: Any = None, *,
        dim: int | None = None) -> Tensor:
    """The 1-D discrete Fourier transform along ``axis`` (input padded or cropped to ``n``).

    Each function here takes NumPy's ``axis``/``axes`` or, as torch.fft, the keyword ``dim``.

    >>> import dualgrad as dg
    >>> dg.fft.fft(dg.tensor([1., 0., 0., 0.]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _c2c(FFTN, "fft", a, *_one_axis(n, _dim("fft", axis, dim, -1)), norm, out)


@public(None, namespaces={"fft": ("ifft",)}, **_FFT)
def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, out: Any = None, *,
         dim: int | None = None) -> Tensor:
    """The inverse of ``fft``.

    >>> import dualgrad as dg
    >>> dg.fft.ifft(dg.tensor([4., 0., 0., 0.]))
    tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    return _c2c(IFFTN, "ifft", a, *_one_axis(n, _dim("ifft", axis, dim, -1)), norm, out)


@public(None, namespaces={"fft": ("rfft",)}, **_FFT)
def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, out: Any = None, *,
         dim: int | None = None) -> Tensor:
    """The ``n // 2 + 1`` non-negative-frequency terms of the DFT of a real input.

    >>> import dualgrad as dg
    >>> dg.fft.rfft(dg.tensor([1., 1., 1., 1.]))
    tensor([4.+0.j, 0.+0.j, 0.+0.j])
    """
    return _r2c("rfft", a, *_one_axis(n, _dim("rfft", axis, dim, -1)), norm, out)


@public(None, namespaces={"fft": ("irfft",)}, **_FFT)
def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None, out: Any = None, *,
          dim: int | None = None) -> Tensor:
    """The inverse of ``rfft``: a real signal of length ``n`` (default ``2 (m - 1)``).

    >>> import dualgrad as dg
    >>> dg.fft.irfft(dg.tensor([4., 0., 0.]))
    tensor([1., 1., 1., 1.])
    """
    return _c2r("irfft", a, *_one_axis(n, _dim("irfft", axis, dim, -1)), norm, out)


@public(None, namespaces={"fft": ("fft2",)}, **_FFT)
def fft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None, out: Any = None,
         *, dim: Any = None) -> Tensor:
    """The 2-D discrete Fourier transform over ``axes``.

    >>> import dualgrad as dg
    >>> dg.fft.fft2(dg.ones(2, 2)).real
    tensor([[4., 0.],
            [0., 0.]])
    """
    return _c2c(FFTN, "fft2", a, s, _dim("fft2", axes, dim, (-2, -1)), norm, out)


@public(None, namespaces={"fft": ("ifft2",)}, **_FFT)
def ifft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None, out: Any = None,
          *, dim: Any = None) -> Tensor:
    """The inverse of ``fft2``.

    >>> import dualgrad as dg
    >>> dg.fft.ifft2(dg.tensor([[4., 0.], [0., 0.]])).real
    tensor([[1., 1.],
            [1., 1.]])
    """
    return _c2c(IFFTN, "ifft2", a, s, _dim("ifft2", axes, dim, (-2, -1)), norm, out)


@public(None, namespaces={"fft": ("fftn",)}, **_FFT)
def fftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None, out: Any = None,
         *, dim: Any = None) -> Tensor:
    """The N-D discrete Fourier transform over ``axes`` (all, or the last ``len(s)``, when None).

    >>> import dualgrad as dg
    >>> dg.fft.fftn(dg.ones(2, 2, 2)).real.sum()
    tensor(8.)
    """
    return _c2c(FFTN, "fftn", a, s, _dim("fftn", axes, dim, None), norm, out)


@public(None, namespaces={"fft": ("ifftn",)}, **_FFT)
def ifftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None, out: Any = None,
          *, dim: Any = None) -> Tensor:
    """The inverse of ``fftn``.

    >>> import dualgrad as dg
    >>> dg.fft.ifftn(dg.ones(2, 2)).real
    tensor([[1., 0.],
            [0., 0.]])
    """
    return _c2c(IFFTN, "ifftn", a, s, _dim("ifftn", axes, dim, None), norm, out)


@public(None, namespaces={"fft": ("rfftn",)}, **_FFT)
def rfftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None, out: Any = None,
          *, dim: Any = None) -> Tensor:
    """The N-D DFT of a real input; the last axis keeps its ``n // 2 + 1`` non-negative frequencies.

    >>> import dualgrad as dg
    >>> dg.fft.rfftn(dg.ones(2, 4)).shape
    (2, 3)
    """
    return _r2c("rfftn", a, s, _dim("rfftn", axes, dim, None), norm, out)


@public(None, namespaces={"fft": ("irfftn",)}, **_FFT)
def irfftn(a: Any, s: Any = None, axes: Any = None, norm: str | None = None, out: Any = None,
           *, dim: Any = None) -> Tensor:
    """The inverse of ``rfftn``: a real output (last axis ``2 (m - 1)`` long unless ``s`` says).

    >>> import dualgrad as dg
    >>> dg.fft.irfftn(dg.fft.rfftn(dg.ones(2, 4)))
    tensor([[1., 1., 1., 1.],
            [1., 1., 1., 1.]])
    """
    return _c2r("irfftn", a, s, _dim("irfftn", axes, dim, None), norm, out)


@public(None, namespaces={"fft": ("rfft2",)}, **_FFT)
def rfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None, out: Any = None,
          *, dim: Any = None) -> Tensor:
    """``rfftn`` over the last two axes.

    >>> import dualgrad as dg
    >>> dg.fft.rfft2(dg.ones(2, 4)).shape
    (2, 3)
    """
    return _r2c("rfft2", a, s, _dim("rfft2", axes, dim, (-2, -1)), norm, out)


@public(None, namespaces={"fft": ("irfft2",)}, **_FFT)
def irfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: str | None = None, out: Any = None,
           *, dim: Any = None) -> Tensor:
    """``irfftn`` over the last two axes.

    >>> import dualgrad as dg
    >>> dg.fft.irfft2(dg.fft.rfft2(dg.ones(2, 4))).shape
    (2, 4)
    """
    return _c2r("irfft2", a, s, _dim("irfft2", axes, dim, (-2, -1)), norm, out)


def _shift(x: Any, axes: Any, sign: int) -> Tensor:
    x = as_operand(x)
    axes = tuple(range(x.ndim)) if axes is None else ((axes,) if np.ndim(axes) == 0 else tuple(axes))
    return roll(x, tuple(sign * (x.shape[a] // 2) for a in axes), axes)


@public(None, namespaces={"fft": ("fftshift",)}, **_FFT)
def fftshift(x: Any, axes: Any = None, *, dim: Any = None) -> Tensor:
    """Move the zero-frequency term to the center (a ``roll`` by half of each axis).

    >>> import dualgrad as dg
    >>> dg.fft.fftshift(dg.tensor([0., 1., 2., -2., -1.]))
    tensor([-2., -1.,  0.,  1.,  2.])
    """
    return _shift(x, _dim("fftshift", axes, dim, None), 1)


@public(None, namespaces={"fft": ("ifftshift",)}, **_FFT)
def ifftshift(x: Any, axes: Any = None, *, dim: Any = None) -> Tensor:
    """The inverse of ``fftshift``.

    >>> import dualgrad as dg
    >>> dg.fft.ifftshift(dg.tensor([-2., -1., 0., 1., 2.]))
    tensor([ 0.,  1.,  2., -2., -1.])
    """
    return _shift(x, _dim("ifftshift", axes, dim, None), -1)


@public(None, namespaces={"fft": ("fftfreq",)}, **_FFT)
def fftfreq(n: int, d: float = 1.0) -> Tensor:
    """The sample frequencies of ``fft`` (a constant, as ``np.fft.fftfreq``).

    >>> import dualgrad as dg
    >>> dg.fft.fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    return _wrap(np.fft.fftfreq(n, d))


@public(None, namespaces={"fft": ("rfftfreq",)}, **_FFT)
def rfftfreq(n: int, d: float = 1.0) -> Tensor:
    """The sample frequencies of ``rfft`` (a constant, as ``np.fft.rfftfreq``).

    >>> import dualgrad as dg
    >>> dg.fft.rfftfreq(4)
    tensor([0.0000, 0.2500, 0.5000])
    """
    return _wrap(np.fft.rfftfreq(n, d))


__all__: list[str] = []  # (public as ``dualgrad.fft``, built from the declarations)
