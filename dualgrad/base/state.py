"""Per-thread autograd state: grad mode, active dual levels, vmap depth, observers.

Every mode switch in dualgrad (``no_grad``, ``dual_level``, ``vmap``, the profiler,
anomaly detection) reads and writes this one object, so each thread has its own
modes and the dispatcher reads them with a single attribute access each.
"""

from __future__ import annotations

import threading


class _State(threading.local):
    """Thread-local flags; class attributes are each new thread's defaults."""

    # Whether ops are recorded: grad mode, except inside inference mode, where it stays False and
    # ``inference_grad_mode`` holds the grad mode ``is_grad_enabled()`` reports (``enable_grad`` in it).
    grad_enabled: bool = True
    inference_mode: bool = False
    inference_grad_mode: bool = False
    multithreading_enabled: bool = True  # recorded only (``set_multithreading_enabled``)
    # Active forward-AD levels, outermost first (a tuple, replaced on change).
    dual_levels: tuple = ()
    # Number of enclosing vmap calls, and their levels (``batching.VmapLevel``), outermost first.
    vmap_depth: int = 0
    vmap_levels: tuple = ()
    # Alive reverse-mode transform levels (``transform_levels.ReverseLevel``), outermost first.
    reverse_levels: tuple = ()
    # True while the profiler or anomaly mode wants to see every op call.
    observed: bool = False
    anomaly_enabled: bool = False
    anomaly_check_nan: bool = True
    # Saved-tensor hooks: stack of (pack, unpack) pairs, innermost last, and the
    # message of an enclosing ``disable_saved_tensors_hooks`` (None when allowed).
    saved_tensor_hooks: tuple = ()
    saved_hooks_disabled: str | None = None
    # The backward pass running in this thread (``reverse.engine.GraphTask``) or None.
    graph_task: object = None
    # Objects with ``wrap_op`` / ``wrap_node`` (profiler, anomaly mode); see install_observer.
    observers: tuple = ()

    def __init__(self) -> None:
        """Copy the defaults into this thread's own attributes: found there, a read skips the class."""
        for name in _State.__annotations__:
            setattr(self, name, getattr(_State, name))


STATE = _State()


def install_observer(observer: object) -> None:
    """Let ``observer`` (profiler, anomaly mode) wrap every op call and node of this thread."""
    STATE.observers = STATE.observers + (observer,)
    STATE.observed = True


def remove_observer(observer: object) -> None:
    """Undo ``install_observer``; the per-op cost drops back to one flag check when none is left."""
    observers = list(STATE.observers)
    observers.remove(observer)
    STATE.observers = tuple(observers)
    STATE.observed = bool(observers)
