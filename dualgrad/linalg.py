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

from .ops import surface as _surface
from .ops.linalg.decompositions import (  # noqa: F401 - the result types and error, listed in __all__
    EighResult,
    LinAlgError,
    QRResult,
    SlogdetResult,
    SVDResult,
)
from .ops.linalg.matrix_functions import EigResult  # noqa: F401
from .ops.linalg.norms import LstsqResult  # noqa: F401

# the functions the ops declare in ``dualgrad.linalg`` (``namespaces={"linalg": ...}``, ``ops/surface.py``)
globals().update(_surface.namespace("linalg"))

__all__ = sorted(["EigResult", "EighResult", "LinAlgError", "LstsqResult", "QRResult", "SVDResult", "SlogdetResult",
                  *_surface.namespace("linalg")])
del _surface  # (not part of the namespace)
