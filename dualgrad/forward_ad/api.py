"""The public forward-mode API: dual levels, ``make_dual`` and ``unpack_dual``.

A level is named by an int, its depth, as in torch (0 for the outermost);
``STATE.dual_levels[depth]`` is the ``DualLevel`` object that keys the tangents,
so a level entered after another exited has the same number but none of its tangents.
"""

from __future__ import annotations

import numbers
from typing import Any, NamedTuple

from ..base.dtypes import is_differentiable_dtype
from ..base.state import STATE
from ..reverse.grad_mode import _GradModeContext
from ..tensor import Tensor
from .engine import DualLevel, drop_dead, set_tangent, tangent_at


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal (a view) and the tangent (or None)."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Open a new forward-AD level (nested inside the active ones) and return its number.

    The number is the level's depth: 0 for the outermost one, as torch's (which
    allows only that one). Prefer the ``dual_level()`` context manager, which
    also closes it.

    >>> from dualgrad import forward_ad as fwAD
    >>> level = fwAD.enter_dual_level()
    >>> level
    0
    >>> fwAD.exit_dual_level(level=level)
    """
    levels = STATE.dual_levels
    STATE.dual_levels = levels + (DualLevel(len(levels)),)
    return len(levels)


def exit_dual_level(*, level: int | None = None) -> None:
    """Close ``level`` (the innermost one by default); its tangents are gone afterwards.

    Only the innermost level can exit (torch's error otherwise).

    >>> from dualgrad import forward_ad as fwAD
    >>> outer = fwAD.enter_dual_level()
    >>> inner = fwAD.enter_dual_level()
    >>> fwAD.exit_dual_level()
    >>> fwAD.exit_dual_level(level=outer)
    """
    levels = STATE.dual_levels
    last = len(levels) - 1
    level = _number(level, "exit_dual_level")
    if level != last:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This is "
            f"not supported (level {level}; the last one is {last})."
        )
    if level < 0:
        raise RuntimeError("Dual level must be a positive number: no forward AD level exists to exit.")
    levels[-1].close()
    STATE.dual_levels = levels[:-1]


class dual_level(_GradModeContext):  # noqa: N801 - torch's name
    """Context manager (or decorator) for a forward-AD level: tangents made inside are gone after it.

    ``with dual_level() as level`` gives the level's number (0 outside any
    other). Levels nest (beyond torch): each has its own tangents, and a tangent
    of an inner level carries the outer levels' tangents, giving exact second
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

    def __enter__(self) -> int:
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level(level=self.level)


def _check_int(level: Any, what: str) -> None:
    if isinstance(level, bool) or not isinstance(level, numbers.Integral):
        raise TypeError(f"{what}(): argument 'level' must be int, not {type(level).__name__}")


def _number(level: Any, what: str) -> int:
    """``level`` checked, the innermost active level's number if None (-1 if there is none)."""
    if level is None:
        return len(STATE.dual_levels) - 1
    _check_int(level, what)
    return int(level)


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` carrying ``tangent`` at ``level`` (the innermost active one by default).

    Ops on the dual tensor compute the directional derivative along
    ``tangent`` alongside their values. ``tangent`` is kept as it is, of its
    own dtype, as in torch; the tangents that ops give their outputs have the
    outputs' dtypes. A complex tangent for a real primal is refused (torch
    takes it, but here every op would drop its imaginary part). If ``tensor``
    requires grad, the dual stays differentiable with respect to it.

    >>> import dualgrad as dg
    >>> from dualgrad import forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(dg.tensor([1.0, 2.0]), dg.tensor([1.0, 0.0]))
    ...     fwAD.unpack_dual(x ** 2).tangent
    tensor([2., 0.])
    """
    number = _number(level, "make_dual")
    if number < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    levels = STATE.dual_levels
    if number >= len(levels):
        raise RuntimeError(
            f"Trying to access a forward AD level with an invalid index ({number}). This index was "
            "either not created or is already deleted."
        )
    level = levels[number]
    _check_pair(tensor, tangent)
    if tangent_at(tensor, level) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
            f"level {number} is not supported."
        )
    if tangent_at(tangent, level) is not None:
        raise RuntimeError(
            f"Setting a forward grad that itself has a forward gradient at the same level {number} is "
            "not supported."
        )
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


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level`` (the innermost active one by default).

    The primal is a view sharing memory with ``tensor``, without the tangent at
    that level (tangents of other levels stay). The tangent is None if
    ``tensor`` has none at that level, or if the level is not active (it
    exited, say). Outside any level (and for a negative ``level``) this is
    ``(tensor, None)``, whatever ``tensor`` is.

    >>> import dualgrad as dg
    >>> from dualgrad import forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(dg.tensor([1.0]), dg.tensor([3.0]))
    ...     primal, tangent = fwAD.unpack_dual(x * 2)
    >>> primal, tangent
    (tensor([2.]), tensor([6.]))
    """
    number = _number(level, "unpack_dual")
    if number < 0:
        return UnpackedDualTensor(tensor, None)
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"unpack_dual(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}"
        )
    levels = STATE.dual_levels
    drop_dead(tensor)
    primal = tensor.view(tensor.shape)
    if number >= len(levels):
        return UnpackedDualTensor(primal, None)
    tangent = tangent_at(tensor, levels[number])
    set_tangent(primal, levels[number], None)
    return UnpackedDualTensor(primal, tangent)
