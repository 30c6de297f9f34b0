"""The callables SciPy's optimizers take (``fun``, ``jac``, ``hess``, ``hessp``), with exact derivatives.

``minimize_problem(f)`` gives the callables ``scipy.optimize.minimize`` takes
for a scalar function ``f`` of a 1-D Tensor; ``residual_problem(r)`` gives
``fun`` and ``jac`` for ``scipy.optimize.least_squares``. ``f`` and ``r`` may be
plain NumPy code (NumPy calls on Tensors are differentiated, see
``dualgrad.numpy_dispatch``). Extra ``args`` that SciPy passes are forwarded to
them unchanged. The value and the gradient come from one reverse pass, cached
for the last point, since SciPy asks for ``fun(x)`` and ``jac(x)`` at the same
``x``. These builders do not need SciPy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..factories import tensor
from ..tensor import Tensor
from ..transforms import func


def scipy_module(name: str) -> Any:
    """``scipy.<name>``, or ImportError saying how to install it."""
    try:
        return __import__(f"scipy.{name}", fromlist=[name])  # (not importlib: tests hide SciPy from __import__)
    except ImportError as err:
        raise ImportError(
            "dualgrad.scipy needs SciPy, which is not installed: pip install 'dualgrad[scipy]'"
        ) from err


def point(x: Any) -> Tensor:
    return tensor(np.asarray(x, dtype=np.float64))


class MinimizeProblem:
    """``fun``, ``jac``, ``hess`` and ``hessp`` of a scalar function, for ``scipy.optimize.minimize``.

    >>> import numpy as np
    >>> problem = minimize_problem(lambda x: np.sum(x ** 3))
    >>> problem.fun([1.0, 2.0]), problem.jac([1.0, 2.0]), problem.hessp([1.0, 2.0], [1.0, 1.0])
    (9.0, array([ 3., 12.]), array([ 6., 12.]))
    """

    def __init__(self, f: Callable[..., Any]):
        self.f = f
        self._cached_at: bytes | None = None
        self._cached: tuple = ()

    def _value_and_grad(self, x: Any, args: tuple) -> tuple:
        key = np.asarray(x, dtype=np.float64).tobytes() + repr(args).encode()
        if key != self._cached_at:
            gradient, value = func.grad_and_value(lambda p: self.f(p, *args))(point(x))
            self._cached = (float(value.item()), gradient.numpy().copy())
            self._cached_at = key
        return self._cached

    def fun(self, x: Any, *args: Any) -> float:
        """``f(x)`` as a float."""
        return self._value_and_grad(x, args)[0]

    def jac(self, x: Any, *args: Any) -> np.ndarray:
        """The gradient of ``f`` at ``x`` (reverse mode)."""
        return self._value_and_grad(x, args)[1].copy()

    def hess(self, x: Any, *args: Any) -> np.ndarray:
        """The Hessian matrix of ``f`` at ``x``."""
        return func.hessian(lambda p: self.f(p, *args))(point(x)).numpy().copy()

    def hessp(self, x: Any, p: Any, *args: Any) -> np.ndarray:
        """The Hessian of ``f`` at ``x`` times ``p``, without forming the Hessian (forward over reverse)."""
        gradient = func.grad(lambda q: self.f(q, *args))
        return func.jvp(gradient, (point(x),), (point(p),))[1].numpy().copy()


class ResidualProblem:
    """``fun`` (residuals) and ``jac`` (their Jacobian) for ``scipy.optimize.least_squares``.

    The Jacobian uses forward mode when there are at least as many residuals as
    parameters (one jvp per parameter), reverse mode otherwise.

    >>> import numpy as np
    >>> problem = residual_problem(lambda x: np.stack([x[0] * x[1], x[0] - 1.0, x[1] ** 2]))
    >>> problem.jac([2.0, 3.0])
    array([[3., 2.],
           [1., 0.],
           [0., 6.]])
    """

    def __init__(self, residuals: Callable[..., Any]):
        self.residuals = residuals
        self._n_residuals: int | None = None

    def fun(self, x: Any, *args: Any) -> np.ndarray:
        """The residual vector at ``x``."""
        value = np.asarray(self.residuals(point(x), *args).detach().numpy(), dtype=np.float64).copy()
        self._n_residuals = value.size  # (SciPy asks for fun before jac: jac need not evaluate it again)
        return value

    def jac(self, x: Any, *args: Any) -> np.ndarray:
        """The Jacobian matrix ``d residuals / d x`` at ``x``."""
        at = point(x)
        f = lambda p: self.residuals(p, *args)
        n_residuals = self._n_residuals if self._n_residuals is not None else f(at).numel()
        jacobian = func.jacfwd(f) if n_residuals >= at.numel() else func.jacrev(f)
        return jacobian(at).numpy().reshape(n_residuals, at.numel()).copy()


SPARSE_MIN_SIZE = 500  # below this many unknowns SciPy gets dense derivatives (its exact dense solvers)
# UNFOLLOWED_NOTE: sparsity detection raises SparsityDetectionError for a function it cannot follow (a branch
# on a value, a reverse pass inside), NotImplementedError for an op without a rule and MemoryError for a
# pattern too large to hold; the dense path is taken then. Any other error is a bug and propagates.
SPARSE_DENSITY = 0.05  # a derivative with at most this fraction of nonzeros is given to SciPy as a sparse matrix


def sparse_jacobian(f: Callable[[Tensor], Tensor], x0: np.ndarray) -> Callable | None:
    """``x -> dualgrad.sparse`` Jacobian of ``f`` (1-D in and out) as a CSR matrix, or None where that does not pay
    (few unknowns, a dense pattern, no SciPy or a function sparsity detection cannot follow)."""
    if x0.size < SPARSE_MIN_SIZE:
        return None
    try:
        import dualgrad.sparse as sparse
    except ImportError:  # (no SciPy: the dense Jacobian is used)
        return None
    try:
        prepared = sparse.jacobian_fn(f, x0, format="csr")
    except (sparse.SparsityDetectionError, NotImplementedError, MemoryError):  # (see UNFOLLOWED_NOTE)
        return None
    if prepared.sparsity.nnz > SPARSE_DENSITY * prepared.shape[0] * prepared.shape[1]:
        return None
    return lambda x: prepared(np.asarray(x, dtype=np.float64))


def sparse_hessian(f: Callable[[Tensor], Tensor], x0: np.ndarray) -> Callable | None:
    """``x -> dualgrad.sparse`` Hessian of the scalar ``f`` as a CSR matrix, or None (as ``sparse_jacobian``)."""
    if x0.size < SPARSE_MIN_SIZE:
        return None
    try:
        import dualgrad.sparse as sparse
    except ImportError:  # (no SciPy: Hessian-vector products are used)
        return None
    try:
        prepared = sparse.hessian_fn(f, x0, format="csr")
    except (sparse.SparsityDetectionError, NotImplementedError, MemoryError):  # (see UNFOLLOWED_NOTE)
        return None
    if prepared.sparsity.nnz > SPARSE_DENSITY * x0.size ** 2:
        return None
    return lambda x, *args: prepared(np.asarray(x, dtype=np.float64))


def minimize_problem(f: Callable[..., Any]) -> MinimizeProblem:
    """The ``fun``/``jac``/``hess``/``hessp`` callables of scalar ``f`` for ``scipy.optimize.minimize``.

    >>> import numpy as np, scipy.optimize
    >>> problem = minimize_problem(lambda x: np.sum((x - 3.0) ** 2))
    >>> result = scipy.optimize.minimize(problem.fun, np.zeros(2), jac=problem.jac, hess=problem.hess,
    ...                                  method="trust-exact")
    >>> np.round(result.x, 6)
    array([3., 3.])
    """
    return MinimizeProblem(f)


def residual_problem(residuals: Callable[..., Any]) -> ResidualProblem:
    """The ``fun``/``jac`` callables of a residual function for ``scipy.optimize.least_squares``.

    >>> import numpy as np, scipy.optimize
    >>> t = np.array([0.0, 1.0, 2.0])
    >>> measured = 2.0 * np.exp(t)
    >>> problem = residual_problem(lambda p: p[0] * np.exp(p[1] * t) - measured)
    >>> fit = scipy.optimize.least_squares(problem.fun, [1.0, 0.0], jac=problem.jac)
    >>> np.round(fit.x, 6)
    array([2., 1.])
    """
    return ResidualProblem(residuals)


__all__ = ["MinimizeProblem", "ResidualProblem", "minimize_problem", "residual_problem"]
