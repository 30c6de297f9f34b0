"""Sparse Jacobians and Hessians: sparsity detection, coloring, one batched evaluation, SciPy arrays.

>>> import numpy as np, dualgrad.sparse as dgs
>>> def residual(u):
...     return u[:-2] - 2 * u[1:-1] + u[2:] + u[1:-1] ** 3
>>> jac = dgs.jacobian_fn(residual, np.zeros(6))
>>> jac.ncolors, jac.mode
(3, 'forward')
>>> jac(np.ones(6)).toarray()
array([[1., 1., 1., 0., 0., 0.],
       [0., 1., 1., 1., 0., 0.],
       [0., 0., 1., 1., 1., 0.],
       [0., 0., 0., 1., 1., 1.]])

SciPy is needed here only (the ``sparse`` extra); ``import dualgrad`` does not import it.
"""

from .detection import hessian_sparsity, jacobian_sparsity
from .prepared import SparseHessian, SparseJacobian, SparsityCheckError, hessian, hessian_fn, jacobian, jacobian_fn
from .tracer import SparsityDetectionError

__all__ = ["jacobian_sparsity", "hessian_sparsity", "jacobian_fn", "hessian_fn", "jacobian", "hessian",
           "SparseJacobian", "SparseHessian", "SparsityDetectionError", "SparsityCheckError"]
