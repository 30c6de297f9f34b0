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
* ``minimize``/``minimize_scalar``: ``grad fun(x, *args) = 0``; with ``bounds``
  or ``constraints`` (SLSQP, trust-constr, ...), the KKT conditions of the
  active set at the solution, with the multipliers solved for there
  (``DegenerateActiveSetError`` when strict complementarity fails: the
  solution then has only one-sided derivatives);
* ``least_squares``: the gradient of SciPy's cost ``0.5 * sum(f_scale^2 rho((r / f_scale)^2))``
  is zero (``J^T r = 0`` for ``loss="linear"``; robust losses too), with the
  same KKT rule for active ``bounds``.

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

from ..implicit import NonConvergedError, Parameters, RootProblem, SingularJacobianError, root_node
from ..implicit._linear import check_method
from ..tensor import Tensor
from ..transforms import func
from ._kkt import Constraints, DegenerateActiveSetError, KKTSystem, trust_constr_hints
from ._problems import MinimizeProblem, ResidualProblem, point, scipy_module, sparse_hessian, sparse_jacobian

HESS_METHODS = ("dogleg", "trust-exact")
HESSP_METHODS = ("newton-cg", "trust-ncg", "trust-krylov", "trust-constr")
JAC_ROOT_METHODS = ("hybr", "lm")
ROBUST_LOSSES = ("linear", "soft_l1", "huber", "cauchy", "arctan")


def _values(t: Any) -> np.ndarray:
    return np.asarray(t.detach().numpy() if isinstance(t, Tensor) else t, dtype=np.float64)


def _as_args(args: Any) -> tuple:
    return args if isinstance(args, tuple) else (args,)


def _solved(name: str, optimality: Callable, run: Callable, x0: Any, params: Any, *, symmetric: bool,
            allow_nonconverged: bool, solve: str, unsupported: str = "", potential: Callable | None = None) -> tuple:
    """Run ``run(x0, *params) -> (x, success, message, raw result)`` as an implicit node.

    Returns ``(x Tensor, raw result of the (last) run)``.
    """
    runs: list = []

    def solver(init: Any, *plain: Any) -> np.ndarray:
        x, success, message, raw = run(_values(init), *plain)
        if getattr(optimality, "refusal", ""):
            problem.refusal = (DegenerateActiveSetError, optimality.refusal)
        if not success:
            problem.converged = False
            problem.failure = message
        runs.append(raw)
        return x

    problem = RootProblem(optimality, solver, x0, Parameters(_as_args(params)), method=check_method(solve, name),
                          symmetric=symmetric, name=name, potential=potential)
    problem.allow_nonconverged = allow_nonconverged
    problem.unsupported = unsupported
    return root_node(problem), runs[-1]


# -- bounds -----------------------------------------------------------------------------------------
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
    so ``dx/dargs = -H^{-1} d(grad)/dargs``. With ``bounds`` or ``constraints``
    (dicts, whose ``args`` Tensors are differentiated too, ``NonlinearConstraint``,
    ``LinearConstraint``) the solution is differentiated through the KKT
    conditions of its active set (``dualgrad.scipy._kkt``); an ambiguous active
    set raises ``DegenerateActiveSetError`` when differentiated.

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
        objective = lambda x: fun(x.reshape(shape), *plain)  # noqa: E731
        problem = MinimizeProblem(objective)
        raw = optimize.minimize(problem.fun, init.reshape(-1), method=method, jac=jac if callable(jac) else problem.jac,
                                **_second_derivatives(name, problem, objective, init, hess, hessp), bounds=bounds,
                                constraints=constraints, tol=tol, callback=callback, options=options)
        return raw.x.reshape(shape), bool(raw.success), str(raw.message), raw

    if constrained or bound_arrays is not None:
        return _constrained_minimize(optimize, fun, start, args, method, name, bounds, bound_arrays, constraints,
                                     run_options=dict(jac=jac, hess=hess, hessp=hessp, tol=tol, callback=callback,
                                                      options=options),
                                     allow_nonconverged=allow_nonconverged, solve=solve)
    gradient = lambda x, *a: func.grad(lambda y: fun(y, *a))(x)
    x, raw = _solved("minimize", gradient, run, x0, args, symmetric=True, allow_nonconverged=allow_nonconverged,
                     solve=solve, potential=fun)
    return _result(optimize, raw, x=x)


def _second_derivatives(name: str, problem: MinimizeProblem, objective: Callable, init: np.ndarray, hess: Any,
                        hessp: Any) -> dict:
    """SciPy's ``hess`` and ``hessp``: the user's if given, else dualgrad's exact ones where the method takes
    them (for trust-constr a sparse Hessian when ``dualgrad.sparse`` finds one worth it)."""
    if hess is not None or hessp is not None:
        return {"hess": hess, "hessp": hessp}
    if name in HESS_METHODS:
        return {"hess": problem.hess, "hessp": None}
    if name in HESSP_METHODS:
        sparse = sparse_hessian(objective, init.reshape(-1)) if name == "trust-constr" else None
        return {"hess": sparse, "hessp": None} if sparse is not None else {"hess": None, "hessp": problem.hessp}
    return {"hess": None, "hessp": None}


def _constrained_minimize(optimize: Any, fun: Callable, start: np.ndarray, args: Any, method: str | None, name: str,
                          bounds: Any, bound_arrays: tuple | None, constraints: Any, run_options: dict, *,
                          allow_nonconverged: bool, solve: str) -> Any:
    """``minimize`` with ``bounds`` or ``constraints``: ``x`` of the KKT system's solution ``(x, multipliers)``."""
    shape = start.shape
    args = _as_args(args)
    constraint_set = Constraints(constraints or [], start, shape)
    kkt = KKTSystem(lambda x, *a: fun(x, *a), constraint_set, bound_arrays, shape)
    hess, hessp = run_options.pop("hess"), run_options.pop("hessp")
    jac = run_options.pop("jac")

    def run(init: np.ndarray, plain_args: tuple, extra: tuple) -> tuple:
        objective = lambda x: fun(x.reshape(shape), *plain_args)  # noqa: E731
        problem = MinimizeProblem(objective)
        raw = optimize.minimize(problem.fun, init.reshape(-1), method=method, jac=jac if callable(jac) else problem.jac,
                                **_second_derivatives(name, problem, objective, init, hess, hessp), bounds=bounds,
                                constraints=constraint_set.for_scipy(name, extra) or (), **run_options)
        hints = trust_constr_hints(raw, constraint_set, bound_arrays, start.size) if name == "trust-constr" else None
        z = kkt.solution(raw.x, plain_args, extra, hints)
        return z, bool(raw.success), str(raw.message), raw

    extra = tuple(constraint_set.args)
    z, raw = _solved("minimize", kkt, run, start.reshape(-1), (args, extra), symmetric=False,
                     allow_nonconverged=allow_nonconverged, solve=solve)
    return _result(optimize, raw, x=z[:start.size].reshape(shape))


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
    derivative of the fit is exact, also for a nonzero residual. The robust
    losses (``loss="soft_l1"``, ``"huber"``, ``"cauchy"``, ``"arctan"``, with
    ``f_scale``) are differentiated through the gradient of SciPy's robust cost
    (``robust_cost``); a callable ``loss`` raises ``NotImplementedError`` when
    differentiated. Tensors in ``kwargs`` are differentiated too.

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
        residuals = lambda x: fun(x.reshape(shape), *plain_args, **plain_kwargs)
        problem = ResidualProblem(residuals)
        exact = problem.jac
        if options.get("method", "trf") != "lm":
            exact = sparse_jacobian(lambda x: residuals(x).reshape(-1), init.reshape(-1)) or exact
        raw = optimize.least_squares(problem.fun, init.reshape(-1), jac=exact if jac is None else jac,
                                     bounds=bounds, loss=loss, **options)
        return raw.x.reshape(shape), bool(raw.status > 0), str(raw.message), raw

    f_scale = float(options.get("f_scale", 1.0))
    if callable(loss) or loss not in ROBUST_LOSSES:
        unsupported = f"only the losses {', '.join(map(repr, ROBUST_LOSSES))} are differentiable, got {loss!r}"
    else:
        unsupported = ""

    def objective(x: Tensor, a: tuple, k: dict) -> Tensor:
        return robust_cost(fun(x, *a, **k), loss if isinstance(loss, str) else "linear", f_scale)

    params = (_as_args(args), kwargs)
    if bound_arrays is None:
        optimality = lambda x, a, k: func.grad(lambda y: objective(y, a, k))(x)
        x, raw = _solved("least_squares", optimality, run, x0, params, symmetric=True,
                         allow_nonconverged=allow_nonconverged, solve=solve, unsupported=unsupported,
                         potential=objective)
        return _result(optimize, raw, x=x)
    kkt = KKTSystem(objective, Constraints([], start, shape), bound_arrays, shape)

    def run_kkt(init: np.ndarray, plain: tuple, extra: tuple) -> tuple:
        x, success, message, raw = run(init, *plain)
        return kkt.solution(x, plain, extra), success, message, raw

    z, raw = _solved("least_squares", kkt, run_kkt, x0, (params, ()), symmetric=False,
                     allow_nonconverged=allow_nonconverged, solve=solve, unsupported=unsupported)
    return _result(optimize, raw, x=z.reshape(shape))


def robust_cost(residuals: Tensor, loss: str, f_scale: float = 1.0) -> Tensor:
    """SciPy's ``least_squares`` cost ``0.5 * sum(f_scale^2 * rho((r / f_scale)^2))`` for a named ``loss``.

    ``rho(z)`` is ``z`` (linear), ``2 (sqrt(1 + z) - 1)`` (soft_l1), ``z`` for
    ``z <= 1`` else ``2 sqrt(z) - 1`` (huber), ``log(1 + z)`` (cauchy) or
    ``arctan(z)`` (arctan).

    >>> import dualgrad as dg
    >>> r = dg.tensor([0.5, 3.0])
    >>> robust_cost(r, "linear"), robust_cost(r, "huber")     # huber: 0.5 * (0.25 + (2 * 3 - 1))
    (tensor(4.6250), tensor(2.6250))
    """
    from ..ops.elementwise.core import where

    z = (residuals / f_scale) ** 2
    if loss == "linear":
        rho = z
    elif loss == "soft_l1":
        rho = 2 * ((1 + z) ** 0.5 - 1)
    elif loss == "huber":
        rho = where(z <= 1, z, 2 * z.clamp(min=1.0) ** 0.5 - 1)
    elif loss == "cauchy":
        rho = (1 + z).log()
    elif loss == "arctan":
        rho = z.arctan()
    else:
        raise ValueError(f"least_squares: loss must be one of {', '.join(map(repr, ROBUST_LOSSES))}, got {loss!r}")
    return 0.5 * f_scale ** 2 * rho.sum()


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
    if bound_arrays is None:
        x, raw = _solved("minimize_scalar", gradient, run, 0.0, args, symmetric=True,
                         allow_nonconverged=allow_nonconverged, solve="dense")
        return _result(optimize, raw, x=x)
    kkt = KKTSystem(lambda x, *a: fun(x, *a), Constraints([], np.zeros(()), ()), bound_arrays, ())

    def run_kkt(init: Any, plain: tuple, extra: tuple) -> tuple:
        x, success, message, raw = run(init, *plain)
        return kkt.solution(x, plain, extra).reshape(()), success, message, raw

    x, raw = _solved("minimize_scalar", kkt, run_kkt, 0.0, (_as_args(args), ()), symmetric=False,
                     allow_nonconverged=allow_nonconverged, solve="dense")
    return _result(optimize, raw, x=x)


__all__ = ["DegenerateActiveSetError", "NonConvergedError", "SingularJacobianError", "least_squares", "minimize",
           "minimize_scalar", "robust_cost", "root", "root_scalar"]
