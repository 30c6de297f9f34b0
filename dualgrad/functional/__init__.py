"""The functional API of ``torch.autograd.functional``: jacobian, hessian, vjp, jvp, vhp, hvp.

Each takes a function of Tensors and the point (a Tensor or a tuple of them),
and returns results with torch's nesting. ``jvp`` and ``hvp`` use forward mode
(one pass each); ``jacobian``/``hessian`` with ``vectorize=True`` are one
batched pass (see ``dualgrad.vmap.batching``). Arguments are a Tensor or a tuple
of Tensors (not a list), and errors, strict mode and ``requires_grad`` of the
results follow torch 2.13 (docs/guides/transforms.md lists the deliberate
differences).

>>> import dualgrad as dg
>>> from dualgrad.autograd.functional import hessian
>>> hessian(lambda x, y: (x * y).sum(), (dg.tensor([1.]), dg.tensor([2.])))
((tensor([[0.]]), tensor([[1.]])), (tensor([[1.]]), tensor([[0.]])))
"""

from .jacobians import hessian, jacobian
from .products import hvp, jvp, vhp, vjp

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]
