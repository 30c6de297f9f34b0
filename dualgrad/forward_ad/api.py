"""The public forward-mode API: dual levels, ``make_dual`` and ``unpack_dual``."""

from __future__ import annotations

from typing import Any, NamedTuple

from .._state import STATE
from ..tensor import Tensor, is_differentiable_dtype
from .engine import DualLevel, drop_dead, set_tangent, tangent_at


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal (a view) and the tangent (or None)."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> DualLevel:
    """Open a new forward-AD level (nested inside the active ones) and return it.

    Prefer the ``dual_level()`` context manager, which also closes it.

    >>> from dualgrad import forward_ad as fwAD
    >>> level = fwAD.enter_dual_level()
    >>> fwAD.exit_dual_level(level=level)
    """
    levels = STATE.dual_levels
    level = DualLevel(len(levels))
    STATE.dual_levels = levels + (level,)
    return level


def exit_dual_level(*, level: DualLevel | None = None) -> None:
    """Close ``level`` (the innermost one by default); its tangents are gone afterwards.

    >>> from dualgrad import forward_ad as fwAD
    >>> outer = fwAD.enter_dual_level()
    >>> inner = fwAD.enter_dual_level()
    >>> fwAD.exit_dual_level()
    >>> fwAD.exit_dual_level(level=outer)
    """
    levels = STATE.dual_levels
    if level is None:
        if not levels:
            raise RuntimeError("Trying to exit a forward AD level but no level exists.")
        level = levels[-1]
    _check_alive(level, "exit_dual_level")
    if level is not levels[-1]:
        raise RuntimeError(
            f"Trying to exit a forward AD level ({level!r}) that was not the last one that was "
            f"created ({levels[-1]!r}): levels must be exited innermost first."
        )
    level.close()
    STATE.dual_levels = levels[:-1]


class dual_level:  # noqa: N801 - torch's name
    """Context manager for a forward-AD level: tangents made inside are gone after it.

    Levels nest (beyond torch): each has its own tangents, and a tangent of an
    inner level carries the outer levels' tangents, giving exact second
    directional derivatives.

    >>> import dualgrad as dg
    >>> from dualgrad import forward_ad as fwAD
    >>> x = dg.tensor([0.0, 1.0])
    >>> with fwAD.dual_level():
    ...     y = dg.sin(fwAD.make_dual(x, dg.tensor([1.0, 1.0])))
    ...     fwAD.unpack_dual(y).tangent
    tensor([1.0000, 0.5403])
    >>> fwAD.unpack_dual(y).tangent is None
    True
    """

    def __enter__(self) -> DualLevel:
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level(level=self.level)


def _active_level(level: DualLevel | None, what: str) -> DualLevel | None:
    """The level to use: the innermost active one by default; None when there is none."""
    if level is None:
        levels = STATE.dual_levels
        return levels[-1] if levels else None
    _check_alive(level, what)
    return level


def _check_alive(level: Any, what: str) -> None:
    if not isinstance(level, DualLevel):
        raise TypeError(f"{what}: level must be a level returned by enter_dual_level, got {level!r}")
    if not level.alive or level not in STATE.dual_levels:
        raise RuntimeError(f"{what}: the forward AD level {level!r} has already exited and cannot be used")


def make_dual(tensor: Tensor, tangent: Tensor, *, level: DualLevel | None = None) -> Tensor:
    """A view of ``tensor`` carrying ``tangent`` at ``level`` (the innermost active one by default).

    Ops on the dual tensor compute the directional derivative along
    ``tangent`` alongside their values. A real tangent of another floating
    dtype is cast to ``tensor``'s dtype. If ``tensor`` requires grad, the dual
    stays differentiable with respect to it.

    >>> import dualgrad as dg
    >>> from dualgrad import forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(dg.tensor([1.0, 2.0]), dg.tensor([1.0, 0.0]))
    ...     fwAD.unpack_dual(x ** 2).tangent
    tensor([2., 0.])
    """
    level = _active_level(level, "make_dual")
    if level is None:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    _check_pair(tensor, tangent)
    if tangent_at(tensor, level) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            f"same level {level.depth} is not supported."
        )
    if tangent.dtype != tensor.dtype:
        tangent = tangent.to(tensor.dtype)
    dual = tensor.view(tensor.shape)
    set_tangent(dual, level, tangent)
    return dual


def _check_pair(tensor: Any, tangent: Any) -> None:
    """The errors of ``make_dual``: types, dtypes and shapes of the primal and the tangent."""
    for name, value in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(value, Tensor):
            raise TypeError(f"make_dual: expected the {name} to be a Tensor, got {type(value).__name__}")
        if not is_differentiable_dtype(value.dtype):
            raise ValueError(f"Expected {name} to be floating point or complex, but got: {value.dtype}")
    if tangent.dtype.kind == "c" and tensor.dtype.kind != "c":
        raise ValueError(
            f"make_dual: the tangent is complex ({tangent.dtype}) but the primal is real "
            f"({tensor.dtype}); a real primal needs a real tangent"
        )
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original "
            f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
            f"forward gradient is of size {list(tangent.shape)}."
        )


def unpack_dual(tensor: Any, *, level: DualLevel | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level`` (the innermost active one by default).

    The primal is a view sharing memory with ``tensor``, without the tangent at
    that level (tangents of other levels stay). Outside any level, or without a
    tangent, this is ``(tensor, None)`` / ``(primal, None)``.

    >>> import dualgrad as dg
    >>> from dualgrad import forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(dg.tensor([1.0]), dg.tensor([3.0]))
    ...     primal, tangent = fwAD.unpack_dual(x * 2)
    >>> primal, tangent
    (tensor([2.]), tensor([6.]))
    """
    level = _active_level(level, "unpack_dual")
    if level is None or not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    drop_dead(tensor)
    tangent = tangent_at(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = tensor.view(tensor.shape)
    set_tangent(primal, level, None)
    return UnpackedDualTensor(primal, tangent)
