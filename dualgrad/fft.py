"""``dualgrad.fft``: NumPy's ``np.fft`` on Tensors, differentiable in every mode.

Same names, signatures (``n``/``s``, ``axis``/``axes``, ``norm`` in {"backward",
"ortho", "forward"}) and dtypes as NumPy; torch.fft's keyword ``dim`` is accepted
for ``axis``/``axes``. Complex gradients follow the conjugate-Wirtinger convention.

>>> import dualgrad as dg
>>> x = dg.tensor([1., 2., 3., 4.], requires_grad=True)
>>> (dg.fft.rfft(x).abs() ** 2).sum().backward()
>>> x.grad
tensor([12., 20., 20., 28.])
"""

from .ops import surface

# the functions the ops declare in ``dualgrad.fft`` (``namespaces={"fft": ...}``, ``ops/surface.py``)
globals().update(surface.namespace("fft"))

__all__ = sorted(surface.namespace("fft"))
