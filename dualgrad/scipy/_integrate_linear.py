"""SciPy's implicit solvers (BDF, Radau) on a state made of ``k`` blocks of size ``n`` plus ``extra`` entries.

The forward sensitivity system ``[y, s_1, ..., s_c]`` and the adjoint system
``[λ, μ]`` have block lower triangular Jacobians::

    [[J,   0, ..., 0],            [[-J^T,   0],
     [C_1, J, ..., 0],     and     [-J_p^T, 0]]
     [C_c, 0, ..., J]]

with ``C_j = d(J s_j + J_p d_j)/dy`` (second derivatives of ``fun``). Newton's
matrix ``shift I - c Jac`` is then block lower triangular too, and these solvers
solve with it by substitution: one LU of the ``n x n`` matrix ``shift I - c J``
serves every block (``x_0 = A^-1 b_0``, ``x_j = A^-1 (b_j + c C_j x_0)``, and
``(b_e + c K x_0) / shift`` for the trailing entries coupled by ``K``). SciPy
never sees an ``n (1 + c)`` matrix. Couplings may be left out (``None``): Newton
then converges more slowly, to the same solution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class BlockJacobian:
    """The Jacobian of a block system: the diagonal block ``block`` (``n x n``), the couplings ``couplings``
    (``(c, n, n)`` or a list of ``n x n`` matrices, of blocks ``1..c`` to block 0) and ``extra`` (``(e, n)``:
    of the trailing entries to block 0). Scaling by a number scales all of them, as SciPy does with ``c * J``."""

    __slots__ = ("block", "couplings", "extra", "scale")

    def __init__(self, block: Any, couplings: Any = None, extra: Any = None, scale: complex = 1.0):
        self.block, self.couplings, self.extra, self.scale = block, couplings, extra, scale

    def __rmul__(self, c: complex) -> BlockJacobian:
        return BlockJacobian(self.block, self.couplings, self.extra, c * self.scale)

    __mul__ = __rmul__


class _NewtonMatrix:
    """``shift I - scale Jac``: the ``n x n`` block to factorise, and the scaled couplings."""

    __slots__ = ("shift", "matrix", "jacobian")

    def __init__(self, shift: complex, matrix: Any, jacobian: BlockJacobian):
        self.shift, self.matrix, self.jacobian = shift, matrix, jacobian


class _BlockIdentity:
    """Stands for the solver's identity matrix: ``c * I`` and ``I - J`` give the pieces ``lu`` factorises."""

    def __init__(self, n: int, sparse: bool, shift: complex = 1.0):
        self.n, self.sparse, self.shift = n, sparse, shift

    def __rmul__(self, c: complex) -> _BlockIdentity:
        return _BlockIdentity(self.n, self.sparse, c * self.shift)

    __mul__ = __rmul__

    def __sub__(self, jacobian: BlockJacobian) -> _NewtonMatrix:
        scaled = jacobian.scale * jacobian.block
        if self.sparse:
            import scipy.sparse

            identity = scipy.sparse.eye(self.n, format="csc")
            return _NewtonMatrix(self.shift, (self.shift * identity - scaled).tocsc(), jacobian)
        return _NewtonMatrix(self.shift, self.shift * np.eye(self.n) - scaled, jacobian)


def block_solver(base: type, n: int, k: int, extra: int, jacobian: Callable) -> type:
    """A subclass of SciPy's ``base`` (BDF or Radau) solving Newton's systems by block substitution;
    ``jacobian(t, y)`` (``y`` the whole state) returns a ``BlockJacobian`` whose ``block`` is a dense array or a
    ``scipy.sparse`` matrix, as its first call decides."""
    import scipy.linalg
    import scipy.sparse
    from scipy.sparse.linalg import splu

    size = n * k + extra

    class BlockNewton(base):
        def __init__(self, fun: Callable, t0: float, y0: np.ndarray, t_bound: float, **options: Any):
            first = jacobian(t0, np.asarray(y0, dtype=np.float64))
            self._sparse = scipy.sparse.issparse(first.block)
            options["jac"] = scipy.sparse.csc_matrix((size, size))  # (SciPy checks its shape; replaced below)
            super().__init__(fun, t0, y0, t_bound, **options)
            self.I = _BlockIdentity(n, self._sparse)
            self.J = first
            self.lu, self.solve_lu, self.jac = self._block_lu, self._block_solve, self._block_jacobian

        def _block_jacobian(self, t: float, y: np.ndarray, *_: Any) -> BlockJacobian:
            self.njev += 1
            return jacobian(t, y)

        def _block_lu(self, a: _NewtonMatrix) -> tuple:
            self.nlu += 1
            if self._sparse:
                return splu(a.matrix), a, True
            return scipy.linalg.lu_factor(a.matrix, overwrite_a=True, check_finite=False), a, False

        @staticmethod
        def _block_solve(lu: tuple, b: np.ndarray) -> np.ndarray:
            factor, a, sparse = lu
            jac = a.jacobian

            def solve(rhs: np.ndarray) -> np.ndarray:
                if sparse:
                    return factor.solve(np.ascontiguousarray(rhs.T)).T
                # (one right-hand side at a time: OpenBLAS threads a multi-column solve, ~1000x slower when small)
                return np.array([scipy.linalg.lu_solve(factor, row, check_finite=False) for row in rhs])

            blocks = b[:n * k].reshape(k, n)
            first = solve(blocks[:1])[0]
            x = np.empty_like(b, dtype=np.result_type(b, first))
            x[:n] = first
            if k > 1:
                rest = blocks[1:]
                if jac.couplings is not None:
                    rest = rest + jac.scale * _apply(jac.couplings, first)
                x[n:n * k] = solve(rest).reshape(-1)
            if extra:
                tail = b[n * k:]
                if jac.extra is not None:
                    tail = tail + jac.scale * (jac.extra @ first)
                x[n * k:] = tail / a.shift
            return x

    BlockNewton.__name__ = base.__name__
    return BlockNewton


def _apply(couplings: Any, x: np.ndarray) -> np.ndarray:
    """``[C_j x for each j]`` as a ``(c, n)`` array."""
    if isinstance(couplings, np.ndarray):
        return couplings @ x
    return np.stack([c @ x for c in couplings])


def block_matrix(jacobian: BlockJacobian, k: int, extra: int) -> np.ndarray:
    """The whole Jacobian as one dense matrix (for LSODA, which takes a dense Jacobian)."""
    def dense(m: Any) -> np.ndarray:
        return m.toarray() if hasattr(m, "toarray") else np.asarray(m)

    block = dense(jacobian.block)
    n = block.shape[0]
    full = np.zeros((n * k + extra, n * k + extra))
    for i in range(k):
        full[i * n:(i + 1) * n, i * n:(i + 1) * n] = block
        if i and jacobian.couplings is not None:
            full[i * n:(i + 1) * n, :n] = dense(jacobian.couplings[i - 1])
    if extra and jacobian.extra is not None:
        full[n * k:, :n] = dense(jacobian.extra)
    return full


def recording(base: type, checkpoints: list, every: int) -> type:
    """``base`` recording ``(t, y, last step)`` every ``every`` accepted steps into ``checkpoints``."""

    class Recording(base):
        def step(self) -> Any:
            message = super().step()
            if self.status != "failed":
                self._accepted = getattr(self, "_accepted", 0) + 1
                if self._accepted % every == 0:
                    checkpoints.append((float(self.t), np.array(self.y, dtype=np.float64),
                                        abs(float(self.t) - float(self.t_old))))
            return message

    Recording.__name__ = base.__name__
    return Recording
