"""An ODE's right-hand side ``fun(t, y, *args)`` and its derivatives, as NumPy callables for SciPy's solvers.

SciPy calls the right-hand side hundreds of times per solve, so each call must
cost little more than ``fun``'s own NumPy work. When ``fun`` provably never reads
``t`` (``is_autonomous``, a static look at its bytecode) and ``args`` holds only
Tensors and Python scalars, the callables are ``dualgrad.compile`` replays:
``fun``, the batched jvps of the forward sensitivity equations, the vjp of the
adjoint and the Jacobian are each traced once and then run as plain NumPy calls
(compile's guards and its first-replay check keep them exact; anything it cannot
replay runs eagerly). Otherwise every call runs ``fun`` eagerly on Tensors.

The Jacobian ``d fun / dy`` for stiff methods is dense (``jacfwd``) or, for a
large state with a sparse pattern, a ``scipy.sparse`` matrix from
``dualgrad.sparse.jacobian_fn`` (pattern detection plus coloring). The
Jacobian only steers SciPy's Newton iterations: it never enters a derivative
that is returned.
"""

from __future__ import annotations

import dis
import inspect
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ..base.state import STATE
from ..factories import tensor
from ..implicit import Parameters
from ..tensor import Tensor
from ..transforms import func

# a state at least this large, with at most this fraction of its Jacobian's entries nonzero, gets a sparse Jacobian
SPARSE_MIN_STATES = 64
SPARSE_MAX_DENSITY = 0.1
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec", "_getframe", "currentframe", "f_locals"})
_SCALARS = (bool, int, float, complex, str, type(None))


def is_autonomous(fun: Callable) -> bool:
    """Whether ``fun(t, y, ...)`` provably never reads ``t``: a Python function (or bound method) whose code
    neither loads, stores nor captures its first parameter and does not look at its own frame.

    >>> is_autonomous(lambda t, y, k: -k * y), is_autonomous(lambda t, y: -t * y)
    (True, False)
    """
    index = 0
    if inspect.ismethod(fun):
        fun, index = fun.__func__, 1
    if not isinstance(fun, types.FunctionType):
        return False
    code = fun.__code__
    if code.co_argcount <= index:
        return False
    name = code.co_varnames[index]
    if name in code.co_cellvars or _FRAME_READERS.intersection(code.co_names):
        return False
    for instruction in dis.get_instructions(code):
        if any(kind in instruction.opname for kind in ("FAST", "DEREF", "CLOSURE", "CELL")):
            names = instruction.argval if isinstance(instruction.argval, tuple) else (instruction.argval,)
            if name in names:
                return False
    return True


@contextmanager
def plain_state() -> Iterator[None]:
    """No transform active and grad mode off, for evaluations on detached, plain Tensors.

    The solver's callbacks may run inside a backward pass or under an outer
    ``jacfwd``; their inputs never carry tangents or require grad, so the outer
    levels are irrelevant to them, and hiding them lets ``dualgrad.compile``
    replay instead of running eagerly.
    """
    state = STATE
    saved = (state.dual_levels, state.vmap_levels, state.vmap_depth, state.reverse_levels, state.graph_task,
             state.grad_enabled)
    state.dual_levels, state.vmap_levels, state.vmap_depth, state.reverse_levels = (), (), 0, ()
    state.graph_task, state.grad_enabled = None, False
    try:
        yield
    finally:
        (state.dual_levels, state.vmap_levels, state.vmap_depth, state.reverse_levels, state.graph_task,
         state.grad_enabled) = saved


def _array(value: Any) -> np.ndarray:
    return np.asarray(value.detach().numpy() if isinstance(value, Tensor) else value, dtype=np.float64)


# compiled closures by (id(fun), kind, args structure): the entry holds fun itself (compile guards what fun
# reads through it); the last COMPILED_KEPT are kept
_COMPILED: dict = {}
COMPILED_KEPT = 32


def _compiled(fun: Callable, params: Parameters, kind: str, build: Callable) -> Callable:
    """``dualgrad.compile(build(g))`` for ``g(y, *tensors) = fun(0.0, y, *args)``, made once per ``fun``, ``kind``
    and structure of ``args`` (its non-Tensor leaves by value)."""
    from ..compile import compile as dg_compile

    constants = tuple((i, type(leaf).__name__, repr(leaf)) for i, leaf in enumerate(params.leaves)
                      if not isinstance(leaf, Tensor))
    key = (id(fun), kind, repr(params.spec), constants)
    entry = _COMPILED.get(key)
    if entry is not None and entry[0] is fun:
        _COMPILED[key] = _COMPILED.pop(key)  # (most recently used last)
        return entry[1]
    rebuild = params.rebuild
    closure = dg_compile(build(lambda y, *tensors: _as_tensor(fun(0.0, y, *rebuild(tensors)))))
    _COMPILED[key] = (fun, closure)
    while len(_COMPILED) > COMPILED_KEPT:
        _COMPILED.pop(next(iter(_COMPILED)))
    return closure


def _as_tensor(out: Any) -> Tensor:
    return out if isinstance(out, Tensor) else tensor(np.asarray(out, dtype=np.float64))


class OdeFunctions:
    """``fun`` at fixed ``args``, and its derivatives, on NumPy arrays (``t`` a float, ``y`` of shape ``(n,)``)."""

    def __init__(self, fun: Callable, params: Parameters, tensors: tuple, n: int):
        self.fun = fun
        self.params = params
        self.tensors = tuple(t.detach() for t in tensors)
        self.n = n
        self.compiled = (is_autonomous(fun) and all(isinstance(leaf, (Tensor, *_SCALARS))
                                                    for leaf in params.leaves))
        self._cache: dict = {}
        self._sparse: Any = None  # (None: not decided; False: dense; else the prepared SparseJacobian)

    # -- building blocks ---------------------------------------------------------------------------
    def call(self, t: Any, y: Tensor, tensors: tuple) -> Tensor:
        """``fun(t, y, *args)`` with the Tensors of ``args`` replaced by ``tensors`` (a Tensor result)."""
        return _as_tensor(self.fun(t, y, *self.params.rebuild(tensors)))

    def _closure(self, kind: str, build: Callable) -> Callable:
        """``build(g)`` for ``g(y, *tensors) = fun(t, y, ...)``, compiled when ``fun`` ignores ``t``: kept across
        solves of the same ``fun`` and ``args`` structure (``_COMPILED``), so repeated solves replay at once."""
        closure = self._cache.get(kind)
        if closure is None:
            if self.compiled:
                closure = _compiled(self.fun, self.params, kind, build)
            else:
                closure = build
            self._cache[kind] = closure
        return closure

    def _run(self, kind: str, build: Callable, t: float, *arrays: Any) -> Any:
        if self.compiled and not (STATE.observers or STATE.saved_tensor_hooks):
            closure = self._closure(kind, build)
            with plain_state(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # (compile's notice that a call ran eagerly: still exact)
                return closure(*arrays, *self.tensors)
        with plain_state():
            return build(lambda y, *tensors: self.call(t, y, tensors))(*arrays, *self.tensors)

    # -- what the solvers call ---------------------------------------------------------------------
    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        """``fun(t, y)``."""
        return _array(self._run("rhs", lambda g: g, t, tensor(np.asarray(y, dtype=np.float64)))).reshape(-1)

    def moved(self, t: float, y: np.ndarray, s: np.ndarray, directions: tuple) -> tuple:
        """``(fun(t, y), J_y S + J_p D)``: the right-hand side and, row by row, the sensitivity derivatives of the
        ``(c, n)`` columns ``s`` with parameter directions ``directions`` (one batched jvp)."""
        k = len(self.tensors)

        def build(g: Callable) -> Callable:
            def both(y: Tensor, s: Tensor, *rest: Tensor) -> tuple:
                directions, tensors = rest[:k], rest[k:]
                primal, tangent = func.vmap(lambda col, *dp: func.jvp(g, (y, *tensors), (col, *dp)))(s, *directions)
                return primal[0], tangent
            return both

        value, tangent = self._run("moved", build, t, tensor(np.asarray(y, dtype=np.float64)), tensor(s),
                                   *directions)
        return _array(value).reshape(-1), _array(tangent).reshape(s.shape)

    def pullback(self, t: float, y: np.ndarray, cotangent: np.ndarray) -> tuple:
        """``(J_y^T w, J_p^T w)`` (the second flat over the Tensors of ``args``) for the cotangent ``w``."""
        def build(g: Callable) -> Callable:
            def pull(y: Tensor, w: Tensor, *tensors: Tensor) -> tuple:
                return func.vjp(g, y, *tensors)[1](w)
            return pull

        grads = self._run("pullback", build, t, tensor(np.asarray(y, dtype=np.float64)), tensor(cotangent))
        flat = [np.zeros(a.numel()) if gr is None else _array(gr).reshape(-1)
                for a, gr in zip(self.tensors, grads[1:], strict=True)]
        return _array(grads[0]).reshape(-1), (np.concatenate(flat) if flat else np.zeros(0))

    def jacobian(self, t: float, y: np.ndarray) -> Any:
        """The exact ``d fun / dy`` at ``(t, y)``: a ``scipy.sparse`` CSC matrix when the state is large and the
        pattern sparse, else a dense array."""
        if self._sparse is None:
            self._sparse = self._prepare_sparse(t, y)
        if self._sparse is not False:
            tensors = self.tensors
            self._sparse.f = lambda z: self.call(t, z, tensors)  # (the pattern holds for every t; values at t)
            with plain_state():
                return self._sparse(np.asarray(y, dtype=np.float64)).tocsc()

        def build(g: Callable) -> Callable:
            return func.jacfwd(g)

        return _array(self._run("jacobian", build, t, tensor(np.asarray(y, dtype=np.float64)))).reshape(
            self.n, self.n)

    def couplings(self, t: float, y: np.ndarray, s: np.ndarray, directions: tuple) -> Any:
        """``C_j = d(J_y s_j + J_p d_j)/dy`` for the ``(c, n)`` columns ``s``: a ``(c, n, n)`` array, or a list of
        ``scipy.sparse`` matrices when ``jacobian`` is sparse (their pattern is within ``J_y``'s)."""
        k = len(self.tensors)
        c = s.shape[0]

        def moved(y: Tensor, g: Callable, s: Tensor, directions: tuple, tensors: tuple) -> Tensor:
            return func.vmap(lambda col, *dp: func.jvp(g, (y, *tensors), (col, *dp))[1])(s, *directions)

        if self.sparse:
            tensors = self.tensors
            prepared = self._stacked_pattern(c)
            at = tensor(s)
            prepared.f = lambda z: moved(z, lambda y, *p: self.call(t, y, p), at, directions, tensors).reshape(-1)
            with plain_state():
                stacked = prepared(np.asarray(y, dtype=np.float64)).tocsr()
            return [stacked[j * self.n:(j + 1) * self.n].tocsc() for j in range(c)]

        def build(g: Callable) -> Callable:
            def coupling(y: Tensor, s: Tensor, *rest: Tensor) -> Tensor:
                return func.jacfwd(lambda z: moved(z, g, s, rest[:k], rest[k:]))(y)
            return coupling

        return _array(self._run("couplings", build, t, tensor(np.asarray(y, dtype=np.float64)), tensor(s),
                                *directions)).reshape(c, self.n, self.n)

    def _stacked_pattern(self, c: int) -> Any:
        """A prepared sparse Jacobian of ``c`` stacked copies of ``J_y``'s pattern (column coloring)."""
        prepared = self._cache.get(("stacked", c))
        if prepared is None:
            import scipy.sparse

            from ..sparse.coloring import choose
            from ..sparse.prepared import SparseJacobian

            pattern = scipy.sparse.csr_array(scipy.sparse.vstack([self._sparse.sparsity] * c), dtype=bool)
            prepared = self._cache[("stacked", c)] = SparseJacobian(None, pattern, choose(pattern, "forward"), "csr")
        return prepared

    def parameter_jacobian(self, t: float, y: np.ndarray) -> np.ndarray:
        """``J_p = d fun / d args`` at ``(t, y)``, shape ``(n, P)`` (the Tensors of ``args``, flattened)."""
        k = len(self.tensors)
        if not k:
            return np.zeros((self.n, 0))

        def build(g: Callable) -> Callable:
            return func.jacfwd(g, argnums=tuple(range(1, k + 1)))

        blocks = self._run("parameter_jacobian", build, t, tensor(np.asarray(y, dtype=np.float64)))
        return np.concatenate([_array(b).reshape(self.n, -1) for b in blocks], axis=1)

    @property
    def sparse(self) -> bool:
        """Whether ``jacobian`` returns sparse matrices (decided at its first call)."""
        return self._sparse not in (None, False)

    def _prepare_sparse(self, t: float, y: np.ndarray) -> Any:
        if self.n < SPARSE_MIN_STATES:
            return False
        try:
            from ..sparse import jacobian_fn
            from ..sparse.tracer import SparsityDetectionError
        except ImportError:  # (dualgrad.sparse needs SciPy, which is here: only a broken install lands here)
            return False
        tensors = self.tensors
        try:
            with plain_state():
                prepared = jacobian_fn(lambda z: self.call(t, z, tensors), np.asarray(y, dtype=np.float64),
                                       format="csc")
        except SparsityDetectionError:  # (fun branches on values: the dense Jacobian is still exact)
            return False
        return prepared if prepared.sparsity.nnz <= SPARSE_MAX_DENSITY * self.n * self.n else False
