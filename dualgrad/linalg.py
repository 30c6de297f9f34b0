"""``dualgrad.linalg``: NumPy's ``np.linalg`` (and torch.linalg's common names) on Tensors.

Every function keeps NumPy's name, signature and result types (named tuples
such as ``SVDResult(U, S, Vh)``), takes stacks of matrices in leading
dimensions, and is differentiable in reverse and forward mode and under vmap.
``solve``, ``qr(mode='r')`` and ``cross`` follow torch (see their docstrings).
Singular or non-positive-definite inputs raise ``LinAlgError`` in torch's words: a
RuntimeError, as torch's, that is also NumPy's ``LinAlgError``.

>>> import dualgrad as dg
>>> A = dg.tensor([[1., 0.], [0., 2.]], requires_grad=True)
>>> dg.linalg.slogdet(A).logabsdet.backward()
>>> A.grad  # the inverse transpose
tensor([[1.0000, 0.0000],
        [0.0000, 0.5000]])
"""

from .ops.linalg.decompositions import (
    EighResult,
    LinAlgError,
    QRResult,
    SlogdetResult,
    SVDResult,
    cholesky,
    det,
    eigh,
    eigvalsh,
    inv,
    qr,
    slogdet,
    solve,
    svd,
    svdvals,
)
from .ops.linalg.lu import (
    cholesky_ex,
    cond,
    inv_ex,
    lu_factor,
    lu_factor_ex,
    solve_ex,
)
from .ops.linalg.lu import linalg_lu as lu
from .ops.linalg.lu import linalg_lu_solve as lu_solve
from .ops.linalg.matrix_functions import (
    EigResult,
    eig,
    eigvals,
    matrix_exp,
    matrix_rank,
    solve_triangular,
    tensorinv,
    tensorsolve,
    vecdot,
)
from .ops.linalg.matrix_functions import linalg_vander as vander
from .ops.linalg.norms import (
    LstsqResult,
    cross,
    diagonal,
    lstsq,
    matrix_norm,
    matrix_power,
    matrix_transpose,
    multi_dot,
    norm,
    pinv,
    trace,
    vector_norm,
)
from .ops.linalg.products import matmul, outer, tensordot

__all__ = [
    "EigResult", "EighResult", "LinAlgError", "LstsqResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky",
    "cholesky_ex",
    "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "inv_ex", "lstsq", "lu",
    "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank",
    "matrix_transpose", "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve", "solve_ex",
    "solve_triangular", "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace", "vander", "vecdot",
    "vector_norm",
]
