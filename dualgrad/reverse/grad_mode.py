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
import warnings
from collections.abc import Callable
from typing import Any

from ..base.state import STATE


def is_grad_enabled() -> bool:
    """True when grad mode is on in this thread.

    Inside ``inference_mode`` no operation is recorded even if ``enable_grad`` turned
    grad mode back on (as in torch): this reports the mode, not whether ops record.
    """
    return STATE.inference_grad_mode if STATE.inference_mode else STATE.grad_enabled


def _set_grad_mode(mode: bool) -> None:
    """Set the grad mode ``is_grad_enabled`` reports; inside ``inference_mode`` ops still do not record."""
    if STATE.inference_mode:
        STATE.inference_grad_mode = mode
    else:
        STATE.grad_enabled = mode


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()`` in this thread."""
    return STATE.inference_mode


class _GradModeContext:
    """Base for context managers that are also decorators (of functions, methods and generators)."""

    def _enter(self) -> None:
        raise NotImplementedError

    def _exit(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> None:
        self._enter()

    def __exit__(self, *exc: Any) -> None:
        self._exit()

    def clone(self) -> _GradModeContext:
        return self.__class__()

    def __call__(self, func: Callable) -> Callable:
        """Run ``func`` in the mode; a generator function runs in it each time it resumes, as in torch."""
        if inspect.isclass(func):
            warnings.warn(
                "Decorating classes is deprecated and will be disabled in future versions. You should only "
                "decorate functions or methods. To preserve the current behavior of class decoration, you can "
                "directly decorate the `__init__` method and nothing else.",
                FutureWarning, stacklevel=2,
            )
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, func: Callable) -> Callable:
        """A generator function whose body runs in the mode: each ``send``, ``throw`` and ``close`` is
        made inside it, the caller's code between two of them outside it."""

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            gen = func(*args, **kwargs)
            resume, value = gen.send, None
            while True:
                with self.clone():
                    try:
                        out = resume(value)
                    except StopIteration as stop:
                        return stop.value
                try:
                    value, resume = (yield out), gen.send
                except GeneratorExit:
                    with self.clone():
                        gen.close()
                    raise
                except BaseException as exc:  # (as torch: KeyboardInterrupt thrown in goes to the generator too)
                    value, resume = exc, gen.throw

        return wrapper


class _SetGrad(_GradModeContext):
    """``no_grad`` and ``enable_grad``: the previous mode is kept in ``prev`` while inside."""

    mode = True

    def __new__(cls, func: Callable | None = None) -> Any:
        """``@no_grad`` without parentheses decorates ``func`` directly, as in torch."""
        self = super().__new__(cls)
        return self if func is None else self(func)

    def _enter(self) -> None:
        self.prev = is_grad_enabled()
        _set_grad_mode(self.mode)

    def _exit(self) -> None:
        _set_grad_mode(self.prev)


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

    Decorating a generator function disables recording while its body runs (each
    resumption), not in the code that iterates it.
    """

    mode = False


class enable_grad(_SetGrad):
    """Context manager and decorator that enables gradient recording (inside ``no_grad``).

    Inside ``inference_mode`` it turns grad mode on (``is_grad_enabled()``) but ops
    are still not recorded, as in torch.
    """

    mode = True


class _SwitchedOnCall(_GradModeContext):
    """A setting switched as soon as the object is made (so a plain call works), restored on leaving
    a ``with`` block or a decorated call; ``clone`` switches it again, as torch's does.

    Subclasses name the setting's reader and writer (``_read``, ``_write``).
    """

    _read: Callable[[], bool]
    _write: Callable[[bool], None]

    def __init__(self, mode: bool):
        self.prev = self._read()
        self.mode = mode
        self._write(mode)

    def _enter(self) -> None:
        self._write(self.mode)

    def _exit(self) -> None:
        self._write(self.prev)

    def clone(self) -> _SwitchedOnCall:
        return type(self)(self.mode)

    def __call__(self, func: Callable) -> Callable:
        self._write(self.prev)  # decorating does not switch the setting
        return super().__call__(func)

    def __repr__(self) -> str:
        return f"{type(self).__module__}.{type(self).__qualname__}(mode={self.mode})"


class set_grad_enabled(_SwitchedOnCall):
    """Set grad mode on or off: as a plain call, a context manager, or a decorator.

    ``mode`` must be a ``bool`` (torch's ``TypeError`` otherwise). The call switches
    the mode at once; leaving a ``with`` block (or a decorated call) restores the
    mode from before the call.

    >>> import dualgrad as dg
    >>> dg.set_grad_enabled(False)
    dualgrad.reverse.grad_mode.set_grad_enabled(mode=False)
    >>> dg.is_grad_enabled()
    False
    >>> _ = dg.set_grad_enabled(True)
    >>> with dg.set_grad_enabled(False):
    ...     dg.is_grad_enabled()
    False
    """

    _read = staticmethod(is_grad_enabled)
    _write = staticmethod(_set_grad_mode)

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(
                f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not {type(mode).__name__}"
            )
        super().__init__(mode)


class inference_mode(_GradModeContext):
    """Like ``no_grad``, and ``is_inference_mode_enabled()`` reports True inside.

    Tensors made inside are inference tensors (``Tensor.is_inference()``): outside
    the mode they cannot be saved for backward, require grad or change in place.
    Inside, no op is recorded even if ``enable_grad`` turns grad mode back on.

    ``inference_mode(False)`` (or ``mode=False``) turns inference mode off and grad
    mode on, also inside an enclosing ``inference_mode()``, as in torch. Used without
    parentheses, ``@inference_mode`` decorates the function directly.

    >>> import dualgrad as dg
    >>> with dg.inference_mode():
    ...     with dg.inference_mode(False):
    ...         dg.is_inference_mode_enabled(), dg.is_grad_enabled()
    (False, True)
    """

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True):
        self.mode = mode

    def clone(self) -> inference_mode:
        return inference_mode(self.mode)

    def _enter(self) -> None:
        self._prev = (STATE.grad_enabled, STATE.inference_mode, STATE.inference_grad_mode,
                      STATE.multithreading_enabled)
        on = self.mode
        STATE.grad_enabled, STATE.inference_mode, STATE.multithreading_enabled = not on, on, not on
        STATE.inference_grad_mode = False

    def _exit(self) -> None:
        (STATE.grad_enabled, STATE.inference_mode, STATE.inference_grad_mode,
         STATE.multithreading_enabled) = self._prev


def is_multithreading_enabled() -> bool:
    """The mode last set by ``set_multithreading_enabled`` (True by default)."""
    return STATE.multithreading_enabled


def _set_multithreading(mode: bool) -> None:
    STATE.multithreading_enabled = bool(mode)


class set_multithreading_enabled(_SwitchedOnCall):
    """Accepted for torch compatibility: the backward engine always runs in the calling thread.

    torch uses it to turn off its per-device worker threads; dualgrad's engine has
    none, so the setting only records ``mode`` (see ``is_multithreading_enabled``).

    >>> import dualgrad as dg
    >>> with dg.autograd.set_multithreading_enabled(False):
    ...     dg.autograd.is_multithreading_enabled()
    False
    """

    _read = staticmethod(is_multithreading_enabled)
    _write = staticmethod(_set_multithreading)
