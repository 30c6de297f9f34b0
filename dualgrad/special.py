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

from .ops import surface

# the functions the ops declare in ``dualgrad.special`` (``namespaces={"special": ...}``, ``ops/surface.py``)
globals().update(surface.namespace("special"))

__all__ = sorted(surface.namespace("special"))
