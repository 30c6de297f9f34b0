"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Each is a context manager and a decorator; ``set_grad_enabled`` also works as a
plain call. The state is per thread.

>>> import dualgrad as dg
>>> x = dg.ones(2, requires_grad=True)
>>> with dg.no_grad():
...     (x * 2).requires_grad
False
>>> (x * 2).requires_grad
True
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from .._state import STATE


def is_grad_enabled() -> bool:
    """True when operations are recorded for reverse mode in this thread."""
    return STATE.grad_enabled


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` in this thread."""
    return STATE.inference_mode


class _GradModeContext:
    """Base for context managers that are also decorators."""

    def _enter(self) -> None:
        raise NotImplementedError

    def _exit(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> _GradModeContext:
        self._enter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._exit()

    def clone(self) -> _GradModeContext:
        return self.__class__()

    def __call__(self, func: Callable) -> Callable:
        if inspect.isgeneratorfunction(func):
            raise TypeError("grad-mode decorators do not support generator functions")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper


class _SetGrad(_GradModeContext):
    _mode = True

    def __new__(cls, func: Callable | None = None) -> Any:
        """``@no_grad`` without parentheses decorates ``func`` directly, as in torch."""
        self = super().__new__(cls)
        return self if func is None else self(func)

    def _enter(self) -> None:
        self._prev = STATE.grad_enabled
        STATE.grad_enabled = self._mode

    def _exit(self) -> None:
        STATE.grad_enabled = self._prev


class no_grad(_SetGrad):
    """Context manager and decorator (with or without parentheses) that disables gradient recording.

    >>> import dualgrad as dg
    >>> @dg.no_grad()
    ... def double(t):
    ...     return t * 2
    >>> double(dg.ones(1, requires_grad=True)).requires_grad
    False
    >>> @dg.no_grad
    ... def triple(t):
    ...     return t * 3
    >>> triple(dg.ones(1, requires_grad=True)).requires_grad
    False
    """

    _mode = False


class enable_grad(_SetGrad):
    """Context manager and decorator that enables gradient recording (inside ``no_grad``)."""

    _mode = True


class set_grad_enabled(_SetGrad):
    """Set grad mode on or off: as a plain call, a context manager, or a decorator.

    >>> import dualgrad as dg
    >>> _ = dg.set_grad_enabled(False)
    >>> dg.is_grad_enabled()
    False
    >>> _ = dg.set_grad_enabled(True)
    >>> with dg.set_grad_enabled(False):
    ...     dg.is_grad_enabled()
    False
    """

    def __new__(cls, mode: bool) -> set_grad_enabled:
        return object.__new__(cls)

    def __init__(self, mode: bool):
        self._mode = bool(mode)
        self._prev = STATE.grad_enabled
        STATE.grad_enabled = self._mode

    def _enter(self) -> None:
        STATE.grad_enabled = self._mode

    def clone(self) -> set_grad_enabled:
        prev = STATE.grad_enabled
        clone = set_grad_enabled(self._mode)
        STATE.grad_enabled = prev
        clone._prev = prev
        return clone

    def __exit__(self, *exc: Any) -> None:
        STATE.grad_enabled = self._prev

    def __call__(self, func: Callable) -> Callable:
        STATE.grad_enabled = self._prev
        return super().__call__(func)


class inference_mode(_GradModeContext):
    """Like ``no_grad``, and ``is_inference_mode_enabled()`` reports True inside.

    Tensors made inside are inference tensors (``Tensor.is_inference()``): outside
    the mode they cannot be saved for backward, require grad or change in place.

    ``inference_mode(False)`` is a no-op context, as in torch.
    """

    def __init__(self, mode: bool = True):
        self._mode = bool(mode)

    def clone(self) -> inference_mode:
        return inference_mode(self._mode)

    def _enter(self) -> None:
        self._prev = (STATE.grad_enabled, STATE.inference_mode)
        if self._mode:
            STATE.grad_enabled = False
            STATE.inference_mode = True

    def _exit(self) -> None:
        STATE.grad_enabled, STATE.inference_mode = self._prev


class set_multithreading_enabled(_GradModeContext):
    """Accepted for torch compatibility: the backward engine always runs in the calling thread.

    torch uses it to turn off its per-device worker threads; dualgrad's engine has
    none, so the setting only records ``mode`` (see ``is_multithreading_enabled``).

    >>> import dualgrad as dg
    >>> with dg.autograd.set_multithreading_enabled(False):
    ...     dg.autograd.is_multithreading_enabled()
    False
    """

    def __init__(self, mode: bool):
        self._mode = bool(mode)
        self._prev = STATE.multithreading_enabled
        STATE.multithreading_enabled = self._mode

    def clone(self) -> set_multithreading_enabled:
        prev = STATE.multithreading_enabled
        clone = set_multithreading_enabled(self._mode)
        clone._prev = STATE.multithreading_enabled = prev
        return clone

    def _enter(self) -> None:
        STATE.multithreading_enabled = self._mode

    def _exit(self) -> None:
        STATE.multithreading_enabled = self._prev


def is_multithreading_enabled() -> bool:
    """The mode last set by ``set_multithreading_enabled`` (True by default)."""
    return STATE.multithreading_enabled
