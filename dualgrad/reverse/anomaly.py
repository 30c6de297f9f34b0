"""Anomaly detection: forward tracebacks for failing backward nodes, and NaN checks.

While enabled, an observer (see ``docs/architecture.md``, "Observers") stores in
``node.metadata["traceback_"]`` the Python stack of the forward call that created
each node (as torch: a list of ``traceback.format_list`` strings, outermost
first). When that node's backward raises, the stack is shown as a warning
("Traceback of forward call that caused the error") before the error goes on.
With ``check_nan``, a node whose backward returns NaN raises a RuntimeError that
names it and the output index.
"""

from __future__ import annotations

import os
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base.state import STATE, install_observer, remove_observer
from ..tensor import Tensor
from .node import Node

__all__ = ["detect_anomaly", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
           "set_detect_anomaly"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TRACE_KEY = "traceback_"


def _in_package(frame: traceback.FrameSummary) -> bool:
    return os.path.abspath(frame.filename).startswith(_PACKAGE_DIR)


def _user_stack() -> list:
    """The current stack without the innermost dualgrad frames (dispatch, observers)."""
    frames = traceback.extract_stack()
    while frames and _in_package(frames[-1]):
        frames.pop()
    return frames


def _user_stacklevel() -> int:
    """The ``stacklevel`` that attributes a warning to the innermost frame outside dualgrad."""
    frames = traceback.extract_stack()
    level = 0
    while frames and _in_package(frames.pop()):
        level += 1
    return level


class _AnomalyObserver:
    """Remembers forward stacks in new nodes; reports failing and NaN-producing backward nodes."""

    def wrap_op(self, run: Callable) -> Callable:
        def observed(op: Any, args: tuple, params: dict) -> Any:
            out = run(op, args, params)
            for o in out if isinstance(out, tuple) else (out,):
                node = o._node() if isinstance(o, Tensor) else None
                if isinstance(node, Node):
                    remember_forward_stack(node)
            return out

        return observed

    def wrap_node(self, node: Any, run: Callable) -> Callable:
        if not isinstance(node, Node):
            return run

        def observed(node: Node, grads: list) -> Any:
            try:
                grad_inputs = run(node, grads)
                if STATE.anomaly_check_nan:
                    _check_nan(node, grad_inputs)
            except Exception:
                _warn_forward_stack(node)
                raise
            return grad_inputs

        return observed


_OBSERVER = _AnomalyObserver()


def remember_forward_stack(node: Node) -> None:
    """Store the current forward stack in ``node`` (once) while anomaly mode is on.

    Custom Functions and other code that makes nodes outside the op table call this.
    """
    if STATE.anomaly_enabled and _TRACE_KEY not in node.metadata:
        node.metadata[_TRACE_KEY] = traceback.format_list(_user_stack())


def _check_nan(node: Node, grad_inputs: Any) -> None:
    for i, g in enumerate(grad_inputs):
        if isinstance(g, Tensor) and g.dtype.kind in "fc" and np.isnan(g._data).any():
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")


def _warn_forward_stack(node: Node) -> None:
    stack = node._metadata.get(_TRACE_KEY) if node._metadata else None
    if stack is None:
        message = (f"Error detected in {node.name()}. No forward pass information available. "
                   "Enable detect anomaly during forward pass for more information.")
    else:
        message = (f"Error detected in {node.name()}. Traceback of forward call that caused the "
                   f"error:\n{''.join(stack)}")
    warnings.warn(message, UserWarning, stacklevel=_user_stacklevel())


def _set_anomaly(enabled: bool, check_nan: bool) -> None:
    for position, (name, value) in enumerate((("enabled", enabled), ("check_nan", check_nan)), 1):
        if type(value) is not bool:
            raise TypeError(f"set_anomaly_enabled(): argument '{name}' (position {position}) must be bool, "
                            f"not {type(value).__name__}")
    was_enabled = STATE.anomaly_enabled
    STATE.anomaly_enabled = enabled
    STATE.anomaly_check_nan = check_nan
    if enabled and not was_enabled:
        install_observer(_OBSERVER)
    elif was_enabled and not enabled:
        remove_observer(_OBSERVER)


def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on in this thread.

    >>> import dualgrad as dg
    >>> dg.autograd.is_anomaly_enabled()
    False
    """
    return STATE.anomaly_enabled


def is_anomaly_check_nan_enabled() -> bool:
    """True while anomaly detection also checks backward results for NaN.

    >>> import dualgrad as dg
    >>> dg.autograd.is_anomaly_check_nan_enabled()
    True
    """
    return STATE.anomaly_check_nan


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Turn anomaly detection on or off: a plain call, or a context manager that restores.

    ``mode`` switches it; ``check_nan`` makes NaN in a backward result an error.
    Both must be ``bool`` (TypeError otherwise, as in torch).

    >>> import dualgrad as dg
    >>> with dg.set_detect_anomaly(True):
    ...     dg.autograd.is_anomaly_enabled()
    True
    >>> dg.autograd.is_anomaly_enabled()
    False
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = STATE.anomaly_enabled
        self.prev_check_nan = STATE.anomaly_check_nan
        _set_anomaly(mode, check_nan)  # (no warning: torch warns only in detect_anomaly)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        _set_anomaly(self.prev, self.prev_check_nan)


class detect_anomaly:  # noqa: N801 - torch's name
    """Context manager (or decorator) enabling anomaly detection for the autograd engine.

    Nodes created inside remember the traceback of their forward call: if their
    backward raises, "Traceback of forward call that caused the error" and that
    traceback are shown (as a warning on stderr) and the error is re-raised.
    With ``check_nan=True`` a backward result with NaN raises RuntimeError
    "Function 'DivBackward0' returned nan values in its 0th output." (the result
    after the node's post-hooks, as torch checks it). This mode
    slows the program down: use it only for debugging.

    >>> import warnings, dualgrad as dg
    >>> x = dg.tensor([1.], requires_grad=True)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     with dg.detect_anomaly():
    ...         y = (x / dg.tensor([0.])) * 0
    ...         y.backward()
    Traceback (most recent call last):
      ...
    RuntimeError: Function 'DivBackward0' returned nan values in its 0th output.
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.prev = STATE.anomaly_enabled
        self.prev_check_nan = STATE.anomaly_check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self.prev = STATE.anomaly_enabled
        self.prev_check_nan = STATE.anomaly_check_nan
        _set_anomaly(True, self.check_nan)

    def __exit__(self, *exc: Any) -> None:
        _set_anomaly(self.prev, self.prev_check_nan)

    def __call__(self, fn: Callable) -> Callable:
        import functools

        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapped
