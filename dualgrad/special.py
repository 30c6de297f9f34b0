"""``dualgrad.special``: torch.special's functions on Tensors, differentiable in every mode.

torch.special's names for what dualgrad also has at the top level (``expit`` is ``sigmoid``,
``gammaln`` is ``lgamma``, ``psi`` is ``digamma``, ``multigammaln`` is ``mvlgamma``, ``erf``,
``logsumexp``, ``softmax``, ...) are the same functions; the others (``ndtr``, ``log_ndtr``,
``ndtri``, ``erfcx``, ``i0e``, ``i1``, ``i1e``, ``xlog1py``, ``entr``, ``zeta``, ``gammainc``,
``gammaincc``) live here only, as in torch. The numerics are NumPy code (no SciPy), accurate to
about 1e-15 relative in float64 (see ``dualgrad/ops/elementwise/_special_math.py`` for the methods).

>>> import dualgrad as dg
>>> x = dg.tensor([0.5, 3.], requires_grad=True)
>>> dg.special.gammaln(x).sum().backward()
>>> x.grad  # digamma
tensor([-1.9635,  0.9228])
"""

from .ops.elementwise.core import expm1, log1p, round, sigmoid
from .ops.elementwise.functions import erf, erfc, erfinv, exp2, sinc, xlogy
from .ops.elementwise.special import (
    digamma,
    entr,
    erfcx,
    gammainc,
    gammaincc,
    i0,
    i0e,
    i1,
    i1e,
    lgamma,
    log_ndtr,
    logit,
    mvlgamma,
    ndtr,
    ndtri,
    polygamma,
    xlog1py,
    zeta,
)
from .ops.reductions import log_softmax, logsumexp, softmax

expit = sigmoid
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
           "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
           "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy",
           "zeta"]
