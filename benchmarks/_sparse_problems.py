"""The problems of the sparse-derivative workloads (S1-S4, issue 28), with hand-written derivatives.

Each function is plain NumPy code: dualgrad differentiates it through NumPy dispatch.
"""

from __future__ import annotations

import numpy as np


def reaction_diffusion(u):
    """S1: ``u'' + u (1 - u)`` on a 1-D grid with zero Dirichlet boundaries (unit spacing)."""
    lap = np.concatenate([-2 * u[:1] + u[1:2], u[:-2] - 2 * u[1:-1] + u[2:], u[-2:-1] - 2 * u[-1:]])
    return lap + u * (1 - u)


class Brusselator:
    """S2: the 2-D Brusselator on an ``N x N`` periodic grid (Hairer and Wanner), state ``[u, v]``
    flattened (n = 2 N^2): ``u' = 1 + u^2 v - 4.4 u + a lap(u)``, ``v' = 3.4 u - u^2 v + a lap(v)``."""

    def __init__(self, N: int, alpha: float = 0.1):
        self.N = N
        self.a = alpha * (N - 1) ** 2

    def __call__(self, y):
        N, a = self.N, self.a
        u, v = y[:N * N].reshape(N, N), y[N * N:].reshape(N, N)

        def lap(w):
            return np.roll(w, 1, 0) + np.roll(w, -1, 0) + np.roll(w, 1, 1) + np.roll(w, -1, 1) - 4 * w

        uuv = u * u * v
        return np.concatenate([(1 + uuv - 4.4 * u + a * lap(u)).ravel(), (3.4 * u - uuv + a * lap(v)).ravel()])

    def rhs(self, t, y):
        return self(y)

    def initial(self) -> np.ndarray:
        N = self.N
        grid = np.linspace(0, 1, N)
        X, Y = np.meshgrid(grid, grid, indexing="ij")
        return np.concatenate([(22 * Y * (1 - Y) ** 1.5).ravel(), (27 * X * (1 - X) ** 1.5).ravel()])

    def jacobian(self, y):
        """The hand-written sparse Jacobian."""
        import scipy.sparse as sp

        N, n = self.N, self.N * self.N
        u, v = y[:n], y[n:]
        ring = sp.diags_array([1.0, 1.0, -2.0, 1.0, 1.0], offsets=[-(N - 1), -1, 0, 1, N - 1], shape=(N, N))
        lap = self.a * (sp.kron(ring, sp.eye_array(N)) + sp.kron(sp.eye_array(N), ring))
        return sp.csr_array(sp.block_array([[lap + sp.diags_array(2 * u * v - 4.4), sp.diags_array(u * u)],
                                            [sp.diags_array(3.4 - 2 * u * v), lap - sp.diags_array(u * u)]]))


def arrowhead(x):
    """S3: a dense first row (``sum(sin x)``) and a dense first column (``x_0 x_i^2``)."""
    return np.concatenate([np.sum(np.sin(x))[None], x[0] * x[1:] ** 2])


def arrowhead_jacobian(x):
    import scipy.sparse as sp

    n = x.size
    rows = np.concatenate([np.zeros(n, int), np.arange(1, n), np.arange(1, n)])
    cols = np.concatenate([np.arange(n), np.zeros(n - 1, int), np.arange(1, n)])
    values = np.concatenate([np.cos(x), x[1:] ** 2, 2 * x[0] * x[1:]])
    return sp.csr_array((values, (rows, cols)), shape=(n, n))


def rosenbrock(x):
    """S4: the chained Rosenbrock function."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    import scipy.sparse as sp

    head, tail = x[:-1], x[1:]
    diagonal = np.zeros_like(x)
    diagonal[:-1] += 1200.0 * head ** 2 - 400.0 * tail + 2.0
    diagonal[1:] += 200.0
    off = -400.0 * head
    return sp.csr_array(sp.diags_array([off, diagonal, off], offsets=[-1, 0, 1]))


def values(matrix) -> np.ndarray:
    """The nonzero values of a sparse matrix in CSR order (explicit zeros dropped: a hand-written matrix
    may keep them or not), for the harness's comparison of implementations."""
    import scipy.sparse as sp

    matrix = sp.csr_array(matrix)
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    return matrix.data


def reaction_diffusion_jacobian(u):
    """S1's hand-written Jacobian: tridiagonal, ``1 - 2 u - 2`` on the diagonal."""
    import scipy.sparse as sp

    n = u.size
    return sp.csr_array(sp.diags_array([np.ones(n - 1), 1.0 - 2.0 * u - 2.0, np.ones(n - 1)], offsets=[-1, 0, 1]))


# -- the same problems in JAX, for asdex ----------------------------------------------------------------------
def jax_reaction_diffusion(u):
    import jax.numpy as jnp

    lap = jnp.concatenate([-2 * u[:1] + u[1:2], u[:-2] - 2 * u[1:-1] + u[2:], u[-2:-1] - 2 * u[-1:]])
    return lap + u * (1 - u)


class JaxBrusselator(Brusselator):
    def __call__(self, y):
        import jax.numpy as jnp

        N, a = self.N, self.a
        u, v = y[:N * N].reshape(N, N), y[N * N:].reshape(N, N)

        def lap(w):
            return jnp.roll(w, 1, 0) + jnp.roll(w, -1, 0) + jnp.roll(w, 1, 1) + jnp.roll(w, -1, 1) - 4 * w

        uuv = u * u * v
        return jnp.concatenate([(1 + uuv - 4.4 * u + a * lap(u)).ravel(), (3.4 * u - uuv + a * lap(v)).ravel()])


def jax_arrowhead(x):
    import jax.numpy as jnp

    return jnp.concatenate([jnp.sum(jnp.sin(x))[None], x[0] * x[1:] ** 2])


def jax_rosenbrock(x):
    import jax.numpy as jnp

    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def asdex_prepare(f, x, hessian: bool = False):
    """asdex's detection and coloring (``*_sparsity`` then ``*_coloring_from_sparsity``): the coloring."""
    import warnings

    import jax

    jax.config.update("jax_enable_x64", True)
    import asdex

    xj = jax.numpy.asarray(x)
    with warnings.catch_warnings():  # (DenseColoringWarning on S3: the colors are reported instead)
        warnings.simplefilter("ignore", asdex.DenseColoringWarning)
        if hessian:
            return asdex.hessian_coloring_from_sparsity(asdex.hessian_sparsity(f, xj))
        return asdex.jacobian_coloring_from_sparsity(asdex.jacobian_sparsity(f, xj))


class AsdexPeer:
    """asdex (JAX) on one problem: prepared once (``prepare_s``, ``ncolors``); calling it evaluates the
    jitted sparse derivative at ``x`` and returns it as a CSR array (the BCOO values put in CSR order by an
    index computed once, on the CSR structure of the first result)."""

    def __init__(self, f, x, hessian: bool = False, chunk_size: int | None = None):
        import time

        import asdex
        import jax

        start = time.perf_counter()
        coloring = asdex_prepare(f, x, hessian)
        self.prepare_s = time.perf_counter() - start
        self.ncolors = int(coloring.num_colors)
        self.mode = coloring.mode
        build = asdex.hessian_from_coloring if hessian else asdex.jacobian_from_coloring
        self._fn = jax.jit(build(f, coloring, chunk_size=chunk_size))
        self._x = jax.numpy.asarray(x)
        first = self._fn(self._x)
        index = np.asarray(first.indices)
        rows, cols = index[:, 0].astype(np.int64), index[:, 1].astype(np.int64)
        self._order = np.lexsort((cols, rows))
        self.shape = tuple(first.shape)
        self._indices = cols[self._order].astype(np.int32)
        self._indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=self.shape[0]))]).astype(np.int32)

    def __call__(self):
        import scipy.sparse as sp

        data = np.asarray(self._fn(self._x).data)
        return sp.csr_array((data[self._order], self._indices.copy(), self._indptr.copy()), shape=self.shape)
