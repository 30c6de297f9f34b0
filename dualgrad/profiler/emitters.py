"""``emit_nvtx`` and ``emit_itt``: one NVTX / ITT range per op and backward node.

Forward ranges are named ``"mul, seq=N"`` where N is the sequence number the
op's backward node gets if one is recorded; backward ranges are named
``"MulBackward0, stashed seq=N"`` with the sequence number of the node, so the
two can be matched in Nsight / nvvp / VTune. With ``record_shapes`` the input
shapes are appended: ``"mul, seq=3, sizes = [[2, 3], []]"``.

The ranges go through the optional ``nvtx`` and ``ittapi`` packages.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ..base.state import install_observer, remove_observer
from ..reverse import node as _node
from .profile import _shapes

__all__ = ["emit_itt", "emit_nvtx"]


def _next_sequence_number() -> int:
    """The sequence number the next graph node will get (read without consuming it)."""
    return int(repr(_node._sequence)[len("count("):-1])


def _require(package: str, who: str) -> Any:
    try:
        return importlib.import_module(package)
    except ImportError as error:
        raise ModuleNotFoundError(
            f"{who} needs the optional package '{package}', which is not installed: "
            f"pip install {package}", name=package) from error


class _RangeEmitter:
    """Observer pushing one named range per op call and per backward node."""

    package = ""

    def __init__(self, enabled: bool = True, record_shapes: bool = False):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self._module: Any = None

    def __enter__(self) -> _RangeEmitter:
        if self.enabled:
            self._module = _require(self.package, type(self).__name__)
            self._setup()
            install_observer(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            remove_observer(self)

    def _setup(self) -> None:
        """Prepare the backend after import (nothing by default)."""

    def _message(self, name: str, values: Any) -> str:
        if self.record_shapes:
            return f"{name}, sizes = {_shapes(values)}"
        return name

    def wrap_op(self, run: Callable) -> Callable:
        def observed(op: Any, args: tuple, params: dict) -> Any:
            token = self.push_range(self._message(f"{op.name}, seq={_next_sequence_number()}", args))
            try:
                return run(op, args, params)
            finally:
                self.pop_range(token)

        return observed

    def wrap_node(self, node: Any, run: Callable) -> Callable:
        def observed(node: Any, grads: Any) -> Any:
            seq = getattr(node, "seq", None)
            name = node.name() if seq is None else f"{node.name()}, stashed seq={seq}"
            values = grads if isinstance(grads, (list, tuple)) else (grads,)
            token = self.push_range(self._message(name, values))
            try:
                return run(node, grads)
            finally:
                self.pop_range(token)

        return observed

    def push_range(self, message: str) -> Any:
        raise NotImplementedError

    def pop_range(self, token: Any) -> None:
        raise NotImplementedError


class emit_nvtx(_RangeEmitter):  # noqa: N801 - torch's name
    """Context manager making every op and backward node emit an NVTX range (for nvprof / Nsight).

    Needs the optional ``nvtx`` package; without it entering raises
    ModuleNotFoundError naming the package.

    >>> import dualgrad as dg
    >>> with dg.profiler.emit_nvtx(enabled=False):
    ...     y = dg.ones(2) * 2
    """

    package = "nvtx"

    def push_range(self, message: str) -> None:
        self._module.push_range(message)

    def pop_range(self, token: Any) -> None:
        self._module.pop_range()


class emit_itt(_RangeEmitter):  # noqa: N801 - torch's name
    """Context manager making every op and backward node emit an ITT task (for Intel VTune).

    Needs the optional ``ittapi`` package; without it entering raises
    ModuleNotFoundError naming the package.

    >>> import dualgrad as dg
    >>> with dg.profiler.emit_itt(enabled=False):
    ...     y = dg.ones(2) * 2
    """

    package = "ittapi"

    def _setup(self) -> None:
        self._domain = self._module.domain("dualgrad")

    def push_range(self, message: str) -> Any:
        task = self._module.task(message, domain=self._domain)
        task.begin()
        return task

    def pop_range(self, token: Any) -> None:
        token.end()
