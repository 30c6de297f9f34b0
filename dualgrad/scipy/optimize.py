"""``scipy.optimize`` with exact derivatives in, and differentiable solutions out.

``root``, ``minimize``, ``least_squares``, ``root_scalar`` and ``minimize_scalar``
take SciPy's arguments. SciPy does the solving; dualgrad gives it the exact
``jac`` (and ``hess``/``hessp`` or ``fprime``/``fprime2`` to the methods that use
them). The solution in the result (``x``, or ``root`` for ``root_scalar``) is a
Tensor that is differentiable with respect to every Tensor in ``args`` (nested
in tuples, lists and dicts too), in reverse and forward mode, to any order and
under ``vmap``, by implicit differentiation (``dualgrad.implicit``) of the
optimality condition:

* ``root``/``root_scalar``: ``fun(x, *args) = 0``;
* ``minimize``/``minimize_scalar``: ``grad fun(x, *args) = 0`` (with ``bounds``:
  the coordinates held at a bound by a gradient pointing out stay there);
* ``least_squares``: ``J^T r = 0``, the gradient of ``0.5 * sum(r ** 2)`` (with
  the same rule for bounds).

``fun`` is written with dualgrad ops or NumPy calls on Tensors and is called
with a Tensor ``x``. Every Tensor it depends on must be passed in ``args``: a
closed-over Tensor that requires grad raises ``ValueError`` (its derivative
would be silently missing).

A solver that reports failure (``success`` False) still returns its result,
but differentiating it raises ``NonConvergedError`` unless
``allow_nonconverged=True``. Differentiating a solution whose optimality
condition is singular raises ``SingularJacobianError``. ``solve`` picks the
linear solver of the derivative (see ``dualgrad.implicit``).

Under ``vmap`` over ``args`` SciPy runs once per batch member; the other fields
of the result are those of the last member's run.

>>> import dualgrad as dg
>>> from dualgrad.scipy.optimize import minimize
>>> a = dg.tensor([1.0, 2.0], requires_grad=True)
>>> result = minimize(lambda x, a: ((x - a) ** 2).sum() + (x ** 4).sum(), dg.zeros(2), args=(a,))
>>> x = result.x                                    # 2 (x - a) + 4 x^3 = 0
>>> dg.autograd.grad(x.sum(), a)[0]                 # dx/da = 2 / (2 + 12 x^2)
tensor([0.3240, 0.1929])
>>> 2 / (2 + 12 * x.detach() ** 2)
tensor([0.3240, 0.1929])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import func
from ..implicit import NonConvergedError, Parameters, RootProblem, SingularJacobianError, root_node
from ..implicit._linear import check_method
from ..ops.elementwise.core import where
from ..tensor import Tensor
from ._problems import MinimizeProblem, ResidualProblem, point, scipy_module

HESS_METHODS = ("dogleg", "trust-exact")
HESSP_METHODS = ("newton-cg", "trust-ncg", "trust-krylov", "trust-constr")
JAC_ROOT_METHODS = ("hybr", "lm")
BOUND_TOLERANCE = 1e-6  # (relative) a coordinate this close to a bound, pushed outward by the gradient, is held there


def _values(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy() if isinstance(t, Tensor) else t, dtype=np.float64)


def _as_args(args: Any) -> tuple:
    return args if isinstance(args, tuple) else (args,)


def _solved(name: str, optimality: Callable, run: Callable, x0: Any, params: Any, *, symmetric: bool,
            allow_nonconverged: bool, solve: str, unsupported: str = "") -> tuple:
    """Run ``run(x0, *params) -> (x, success, message, raw result)`` as an implicit node.

    Returns ``(x Tensor, raw result of the (last) run)``.
    """
    runs: list = []

    def solver(init: Any, *plain: Any) -> np.ndarray:
        x, success, message, raw = run(_values(init), *plain)
        if isinstance(optimality, ActiveSet):
            optimality.record(np.asarray(x, dtype=np.float64), plain)
        if not success:
            problem.converged = False
            problem.failure = message
        runs.append(raw)
        return x

    problem = RootProblem(optimality, solver, x0, Parameters(_as_args(params)), method=check_method(solve, name),
                          symmetric=symmetric, name=name)
    problem.allow_nonconverged = allow_nonconverged
    problem.unsupported = unsupported
    return root_node(problem), runs[-1]


# -- bounds: the active set at the solution --------------------------------------------------------
def _bound_arrays(bounds: Any, n: int, pairs: bool) -> tuple | None:
    """``(lower, upper)`` arrays of ``n`` entries; ``pairs``: a sequence of ``(min, max)`` (``minimize``'s form)."""
    if bounds is None:
        return None
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        lower, upper = bounds.lb, bounds.ub
    elif pairs:
        rows = [(-np.inf if lo is None else lo, np.inf if hi is None else hi) for lo, hi in bounds]
        lower, upper = zip(*rows, strict=True) if rows else ((), ())
    else:
        lower, upper = bounds
    lower = np.broadcast_to(_values(lower), (n,))
    upper = np.broadcast_to(_values(upper), (n,))
    if not (np.isfinite(lower).any() or np.isfinite(upper).any()):
        return None
    return lower, upper


class ActiveSet:
    """The optimality function ``gradient`` with coordinates held at a bound replaced by ``x - bound``.

    A coordinate is held at its lower (upper) bound when it sits there (to a
    relative ``BOUND_TOLERANCE``) and the gradient is positive (negative): the
    bound, not the gradient, fixes it, and it does not move with the parameters.
    The active set is decided once per solution, on the values (``record``, called
    by the solve), and looked up by the solution's values when differentiating.
    """

    def __init__(self, gradient: Callable, bounds: tuple | None):
        self.gradient = gradient
        self.bounds = bounds
        self.masks: dict = {}

    def _mask(self, x: np.ndarray, g: np.ndarray) -> tuple:
        lower, upper = self.bounds
        at_lower = (x <= lower + BOUND_TOLERANCE * (1 + np.abs(lower))) & (g > 0)
        at_upper = (x >= upper - BOUND_TOLERANCE * (1 + np.abs(upper))) & (g < 0)
        return at_lower | at_upper, np.where(at_lower, lower, np.where(at_upper, upper, 0.0))

    def record(self, x: np.ndarray, params: tuple) -> None:
        if self.bounds is not None:
            g = _values(self.gradient(point(x), *params)).reshape(-1)
            self.masks[np.ascontiguousarray(x, dtype=np.float64).tobytes()] = self._mask(x.reshape(-1), g)

    def __call__(self, x: Tensor, *args: Any) -> Tensor:
        g = self.gradient(x, *args)
        if self.bounds is None:
            return g
        values = _values(x)
        held = self.masks.get(np.ascontiguousarray(values).tobytes())
        if held is None:
            held = self._mask(values.reshape(-1), _values(g).reshape(-1))
        active, bound = held
        if not active.any():
            return g
        return where(point(active.reshape(x.shape)) > 0, x - point(bound.reshape(x.shape)), g)


# -- root -------------------------------------------------------------------------------------------
def root(fun: Callable, x0: Any, args: Any = (), method: str = "hybr", jac: Any = None, tol: float | None = None,
         callback: Callable | None = None, options: dict | None = None, *, allow_nonconverged: bool = False,
         solve: str = "auto") -> Any:
    """``scipy.optimize.root`` of ``fun(x, *args)`` with its exact Jacobian; ``result.x`` is differentiable.

    The Jacobian (forward mode) is given to the methods that use one (``hybr``,
    ``lm``) unless ``jac`` is a callable. ``dx/dargs = -J_x^{-1} J_args``.

    >>> import dualgrad as dg
    >>> c = dg.tensor(3.0, requires_grad=True)
    >>> result = root(lambda x, c: dg.stack([x[0] + x[1] - c, x[0] * x[1] - 1.0]), dg.tensor([2.0, 0.1]), args=(c,))
    >>> x = result.x                               # x0 = (c + sqrt(c^2 - 4)) / 2
    >>> round(float(dg.autograd.grad(x[0], c)[0]), 6), round(0.5 + 1.5 / 5 ** 0.5, 6)
    (1.17082, 1.17082)
    """
    optimize = scipy_module("optimize")
    if jac is True:
        raise ValueError("root: jac=True (fun returning its Jacobian) is not supported: dualgrad computes the exact "
                         "Jacobian; leave jac=None")
    shape = np.shape(_values(x0))

    def run(init: np.ndarray, *plain: Any) -> tuple:
        f = lambda x: _values(fun(point(x).reshape(shape), *plain)).reshape(-1)
        exact = lambda x: func.jacfwd(lambda y: fun(y.reshape(shape), *plain).reshape(-1))(point(x)).numpy()
        jacobian = jac if callable(jac) else (exact if method.lower() in JAC_ROOT_METHODS else None)
        raw = optimize.root(f, init.reshape(-1), method=method, jac=jacobian, tol=tol, callback=callback,
                            options=options)
        return raw.x.reshape(shape), bool(raw.success), str(raw.message), raw

    x, raw = _solved("root", fun, run, x0, args, symmetric=False, allow_nonconverged=allow_nonconverged,
                     solve=solve)
    return _result(optimize, raw, x=x)


def _result(optimize: Any, raw: Any, **fields: Any) -> Any:
    result = optimize.OptimizeResult(raw)
    result.update(fields)
    return result


# -- minimize ---------------------------------------------------------------------------------------
def minimize(fun: Callable, x0: Any, args: Any = (), method: str | None = None, jac: Any = None, hess: Any = None,
             hessp: Any = None, bounds: Any = None, constraints: Any = (), tol: float | None = None,
             callback: Callable | None = None, options: dict | None = None, *, allow_nonconverged: bool = False,
             solve: str = "auto") -> Any:
    """``scipy.optimize.minimize`` of scalar ``fun(x, *args)`` with exact derivatives; ``result.x`` is differentiable.

    SciPy gets the exact gradient (one reverse pass, cached with the value), and
    ``hessp`` (Newton-CG, trust-ncg, trust-krylov, trust-constr) or ``hess``
    (dogleg, trust-exact) unless given. The optimality condition is ``grad fun = 0``
    (with active bounds held), so ``dx/dargs = -H^{-1} d(grad)/dargs``. Constrained
    problems (``constraints``) solve but their solution has no derivative here
    (``NotImplementedError`` when differentiated).

    >>> import dualgrad as dg
    >>> result = minimize(lambda x: ((x - 3.0) ** 2).sum(), dg.zeros(2), method="Newton-CG")
    >>> result.x
    tensor([3., 3.])
    """
    optimize = scipy_module("optimize")
    if jac is True:
        raise ValueError("minimize: jac=True (fun returning its gradient) is not supported: dualgrad computes the "
                         "exact gradient; leave jac=None")
    start = _values(x0)
    shape = start.shape
    name = (method or "").lower()
    bound_arrays = _bound_arrays(bounds, start.size, pairs=True)
    constrained = bool(constraints) if not isinstance(constraints, dict) else True

    def run(init: np.ndarray, *plain: Any) -> tuple:
        problem = MinimizeProblem(lambda x: fun(x.reshape(shape), *plain))
        extra = {}
        if name in HESS_METHODS and hess is None and hessp is None:
            extra["hess"] = problem.hess
        elif name in HESSP_METHODS and hess is None and hessp is None:
            extra["hessp"] = problem.hessp
        raw = optimize.minimize(problem.fun, init.reshape(-1), method=method, jac=jac if callable(jac) else problem.jac,
                                hess=extra.get("hess", hess), hessp=extra.get("hessp", hessp), bounds=bounds,
                                constraints=constraints, tol=tol, callback=callback, options=options)
        return raw.x.reshape(shape), bool(raw.success), str(raw.message), raw

    gradient = lambda x, *a: func.grad(lambda y: fun(y, *a))(x)
    x, raw = _solved("minimize", ActiveSet(gradient, bound_arrays), run, x0, args, symmetric=True,
                     allow_nonconverged=allow_nonconverged, solve=solve,
                     unsupported="derivatives through constraints are not supported (only bounds)" if constrained
                     else "")
    return _result(optimize, raw, x=x)


# -- least_squares ----------------------------------------------------------------------------------
def least_squares(fun: Callable, x0: Any, jac: Any = None, bounds: Any = (-np.inf, np.inf), *, args: Any = (),
                  kwargs: dict | None = None, loss: str = "linear", allow_nonconverged: bool = False,
                  solve: str = "auto", **options: Any) -> Any:
    """``scipy.optimize.least_squares`` of residuals ``fun(x, *args, **kwargs)``; ``result.x`` is differentiable.

    SciPy gets the exact Jacobian (forward or reverse mode, whichever is
    cheaper) unless ``jac`` is given (a callable, or ``"2-point"`` etc. for
    finite differences). Other keywords (``method``, ``ftol``, ``x_scale``...) go to
    SciPy. The optimality condition is ``J^T r = 0`` (with active bounds held);
    its Jacobian is the exact Gauss-Newton-plus-curvature matrix, so the
    derivative of the fit is exact, also for a nonzero residual. Only
    ``loss="linear"`` is differentiable (``NotImplementedError`` otherwise).
    Tensors in ``kwargs`` are differentiated too.

    >>> import dualgrad as dg
    >>> t = dg.tensor([0.0, 1.0, 2.0, 3.0])
    >>> y = dg.tensor([1.0, 3.0, 5.2, 6.9], requires_grad=True)
    >>> fit = least_squares(lambda p, t, y: p[0] + p[1] * t - y, dg.zeros(2), args=(t, y))
    >>> dg.autograd.grad(fit.x[1], y)[0]           # the slope of a linear fit is linear in y
    tensor([-0.3000, -0.1000,  0.1000,  0.3000])
    """
    optimize = scipy_module("optimize")
    kwargs = {} if kwargs is None else kwargs
    start = _values(x0)
    shape = start.shape
    bound_arrays = _bound_arrays(bounds, start.size, pairs=False)

    def run(init: np.ndarray, plain_args: tuple, plain_kwargs: dict) -> tuple:
        problem = ResidualProblem(lambda x: fun(x.reshape(shape), *plain_args, **plain_kwargs))
        raw = optimize.least_squares(problem.fun, init.reshape(-1), jac=problem.jac if jac is None else jac,
                                     bounds=bounds, loss=loss, **options)
        return raw.x.reshape(shape), bool(raw.status > 0), str(raw.message), raw

    def optimality(x: Tensor, a: tuple, k: dict) -> Tensor:
        return func.grad(lambda y: 0.5 * (fun(y, *a, **k) ** 2).sum())(x)

    x, raw = _solved("least_squares", ActiveSet(optimality, bound_arrays), run, x0,
                     (_as_args(args), kwargs), symmetric=True, allow_nonconverged=allow_nonconverged, solve=solve,
                     unsupported="" if loss == "linear" else f"only loss='linear' is differentiable, got {loss!r}")
    return _result(optimize, raw, x=x)


# -- scalar problems --------------------------------------------------------------------------------
def root_scalar(f: Callable, args: Any = (), method: str | None = None, bracket: Any = None, fprime: Any = None,
                fprime2: Any = None, x0: Any = None, x1: Any = None, xtol: float | None = None,
                rtol: float | None = None, maxiter: int | None = None, options: dict | None = None, *,
                allow_nonconverged: bool = False) -> Any:
    """``scipy.optimize.root_scalar`` of ``f(x, *args)``; ``result.root`` is a differentiable 0-d Tensor.

    Started from ``x0`` without a bracket, Newton's method (Halley's for
    ``method="halley"``) gets the exact ``fprime`` (and ``fprime2``); a bracket
    uses SciPy's bracketing methods. ``d root/d args = -f_args / f_x``.

    >>> import dualgrad as dg
    >>> a = dg.tensor(2.0, requires_grad=True)
    >>> result = root_scalar(lambda x, a: x ** 2 - a, args=(a,), bracket=[0.0, 2.0])
    >>> dg.autograd.grad(result.root, a)[0]             # 1 / (2 sqrt(2))
    tensor(0.3536)
    """
    optimize = scipy_module("optimize")
    name = (method or "").lower()
    newton_like = x0 is not None and bracket is None and name in ("", "newton", "halley")

    def run(init: Any, *plain: Any) -> tuple:
        value = lambda x: float(_values(f(point(x), *plain)))
        derivative = lambda x: float(func.grad(lambda y: f(y, *plain))(point(x)).numpy())
        second = lambda x: float(func.grad(func.grad(lambda y: f(y, *plain)))(point(x)).numpy())
        raw = optimize.root_scalar(
            value, method=method, bracket=None if bracket is None else [float(_values(b)) for b in bracket],
            fprime=fprime if fprime is not None else (derivative if newton_like else None),
            fprime2=fprime2 if fprime2 is not None else (second if newton_like and name == "halley" else None),
            x0=None if x0 is None else float(_values(x0)), x1=None if x1 is None else float(_values(x1)),
            xtol=xtol, rtol=rtol, maxiter=maxiter, options=options)
        return np.float64(raw.root), bool(raw.converged), str(raw.flag), raw

    root_value, raw = _solved("root_scalar", f, run, 0.0 if x0 is None else x0, args, symmetric=True,
                              allow_nonconverged=allow_nonconverged, solve="dense")
    raw.root = root_value
    return raw


def minimize_scalar(fun: Callable, bracket: Any = None, bounds: Any = None, args: Any = (), method: str | None = None,
                    tol: float | None = None, options: dict | None = None, *, allow_nonconverged: bool = False) -> Any:
    """``scipy.optimize.minimize_scalar`` of ``fun(x, *args)``; ``result.x`` is a differentiable 0-d Tensor.

    ``dx/dargs = -f_x,args / f_xx`` at an interior minimum; a minimum on a bound
    (``method="bounded"``) does not move with ``args``.

    >>> import dualgrad as dg
    >>> a = dg.tensor(3.0, requires_grad=True)
    >>> result = minimize_scalar(lambda x, a: (x - a) ** 2 + x ** 4 / 10, args=(a,))
    >>> x = result.x.detach()                      # 2 (x - a) + 0.4 x^3 = 0
    >>> dg.autograd.grad(result.x, a)[0], 2 / (2 + 1.2 * x ** 2)
    (tensor(0.3369), tensor(0.3369))
    """
    optimize = scipy_module("optimize")

    def run(init: Any, *plain: Any) -> tuple:
        value = lambda x: float(_values(fun(point(x), *plain)))
        raw = optimize.minimize_scalar(value, bracket=bracket, bounds=bounds, args=(), method=method, tol=tol,
                                       options=options)
        return np.float64(raw.x), bool(raw.success), str(raw.message), raw

    gradient = lambda x, *a: func.grad(lambda y: fun(y, *a))(x)
    bound_arrays = None if bounds is None else _bound_arrays((bounds[0], bounds[1]), 1, pairs=False)
    x, raw = _solved("minimize_scalar", ActiveSet(gradient, bound_arrays), run, 0.0, args, symmetric=True,
                     allow_nonconverged=allow_nonconverged, solve="dense")
    return _result(optimize, raw, x=x)


__all__ = ["NonConvergedError", "SingularJacobianError", "least_squares", "minimize", "minimize_scalar", "root",
           "root_scalar"]
