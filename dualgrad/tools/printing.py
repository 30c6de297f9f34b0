"""Tensor printing as torch 2.13's: ``repr(x)`` lays out and formats numbers as ``torch.Tensor``'s.

The numbers of a tensor share one format, chosen from its finite nonzero values
(from the printed ones only, for a summarised tensor): integral values print as
``3.``, others with ``precision`` decimals, and in scientific notation
(``1.0000e+10``) when the largest is over 1e8 or over 1000 times the smallest,
or (non-integral values only) the smallest is under 1e-4. Every number is
right-aligned to the widest. A complex tensor formats its real and imaginary
parts each in its own way. Rows wrap at ``linewidth``; a tensor of more than
``threshold`` elements shows ``edgeitems`` items at each end of each dimension.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .. import tensor as tensor_module
from ..base.dtypes import DEFAULT_DTYPES
from ..base.state import STATE
from ..forward_ad.engine import tangent_at
from ..reverse.node import short_name


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


OPTIONS = _PrintOptions()
_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set how tensors print, as ``torch.set_printoptions``.

    ``precision``: decimals (4); ``threshold``: element count over which a tensor
    is summarised (1000); ``edgeitems``: items kept at each end of each
    dimension of a summarised tensor (3); ``linewidth``: characters per line
    (80); ``profile``: ``"default"``, ``"short"`` (precision 2, edgeitems 2) or
    ``"full"`` (never summarise), overridden by the other arguments;
    ``sci_mode``: ``True``/``False`` forces scientific notation on or off,
    ``None`` (also what every call without it sets) lets the values choose.

    >>> import dualgrad as dg
    >>> dg.set_printoptions(precision=2)
    >>> dg.tensor([1.12345])
    tensor([1.12])
    >>> dg.set_printoptions(threshold=5)
    >>> dg.arange(10)
    tensor([0, 1, 2,  ..., 7, 8, 9])
    >>> dg.set_printoptions(profile="default")
    >>> dg.tensor([1.12345])
    tensor([1.1235])
    """
    options = dict(_PROFILES.get(profile, {}))
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems, "linewidth": linewidth}
    options.update({name: value for name, value in given.items() if value is not None})
    for name, value in options.items():
        setattr(OPTIONS, name, value)
    OPTIONS.sci_mode = sci_mode


class _Formatter:
    """One number format for all the values of a (real) array: ``format(v)`` is ``v`` right-aligned."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        if not self.floating:
            shown = values.ravel().tolist()
        else:
            shown = values[np.isfinite(values) & (values != 0)].tolist()
            if shown:
                magnitudes = np.abs(np.array(shown, dtype=np.float64))
                low, high = magnitudes.min(), magnitudes.max()
                self.int_mode = all(v == math.ceil(v) for v in shown)
                self.sci_mode = (bool(high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4)
                                 if OPTIONS.sci_mode is None else OPTIONS.sci_mode)
        self.width = max((len(self.text(v)) for v in shown), default=1)

    def text(self, value: Any) -> str:
        if not self.floating:
            return str(value)
        if self.sci_mode:
            return f"{value:.{OPTIONS.precision}e}"
        if self.int_mode:
            return f"{value:.0f}" + ("." if math.isfinite(value) else "")
        return f"{value:.{OPTIONS.precision}f}"

    def format(self, value: Any) -> str:
        return self.text(value).rjust(self.width)


def _summarised(data: np.ndarray) -> np.ndarray:
    """The values a summarised ``data`` shows: ``edgeitems`` at each end of each long dimension."""
    e = OPTIONS.edgeitems
    for axis, n in enumerate(data.shape):
        if n > 2 * e:
            data = np.take(data, [*range(e), *range(n - e, n)], axis=axis)
    return data


class _Printer:
    """The bracketed body of a nonempty array, with one formatter (two for complex values)."""

    def __init__(self, data: np.ndarray) -> None:
        self.summarise = data.size > OPTIONS.threshold
        shown = _summarised(data) if self.summarise else data
        self.formatters = ([_Formatter(shown.real), _Formatter(shown.imag)] if data.dtype.kind == "c"
                           else [_Formatter(shown)])
        self.element_width = sum(f.width + 2 for f in self.formatters) + len(self.formatters) - 1

    def element(self, value: Any) -> str:
        if len(self.formatters) == 1:
            return self.formatters[0].format(value)
        real, imag = (f.format(part) for f, part in zip(self.formatters, (value.real, value.imag), strict=True))
        imag = imag.lstrip() + "j"
        return real + (imag if imag[0] in "+-" else "+" + imag)

    def body(self, data: np.ndarray, indent: int) -> str:
        if data.ndim == 0:
            return self.element(data.item())
        e = OPTIONS.edgeitems
        cut = self.summarise and len(data) > 2 * e
        if data.ndim == 1:
            if self.summarise and not e:
                items = ["..."]
            elif cut:
                items = [*map(self.element, data[:e].tolist()), " ...", *map(self.element, data[-e:].tolist())]
            else:
                items = [self.element(v) for v in data.tolist()]
            per_line = max(1, math.floor((OPTIONS.linewidth - indent) / self.element_width))
            lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
            return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
        rows = [*range(e), None, *range(len(data) - e, len(data))] if cut else range(len(data))
        slices = ["..." if i is None else self.body(data[i], indent + 1) for i in rows]
        return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """``text`` closed with ``, suffix`` for each suffix, one going to a new line where the line would pass
    ``linewidth`` (counting as torch, which adds 2 to the last line's length)."""
    parts = [text]
    line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line + len(suffix) + 2 > OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            line += len(suffix) + 2
    return "".join(parts) + ")"


def format_tensor(t: Any) -> str:
    """torch-style repr of Tensor ``t``: ``tensor([1., 2.], grad_fn=<AddBackward0>)``."""
    data = t._data
    prefix = "tensor("
    suffixes = []
    if data.size == 0:
        body = "[]"
        if data.ndim != 1:
            suffixes.append(f"size={data.shape}")
        if data.dtype.kind != "f" or data.dtype not in DEFAULT_DTYPES:  # not the default floating dtype
            suffixes.append(f"dtype={data.dtype}")
    else:
        body = _Printer(data).body(data, len(prefix))
        if not OPTIONS.edgeitems:
            suffixes.append(f"size={data.shape}")
        if data.dtype not in DEFAULT_DTYPES:
            suffixes.append(f"dtype={data.dtype}")
    node = t._node()
    if node is not None:
        suffixes.append(f"grad_fn=<{short_name(node)}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    tangent = tangent_at(t, STATE.dual_levels[-1]) if STATE.dual_levels else None
    if tangent is not None:
        suffixes.append(f"tangent={format_tensor(tangent)}")
    return _with_suffixes(prefix + body, suffixes, len(prefix))


tensor_module.FORMAT[0] = format_tensor  # Tensor.__repr__ (tensor.py imports no printing)
