"""``dualgrad.fft``: NumPy's ``np.fft`` on Tensors, differentiable in every mode.

Same names, signatures (``n``/``s``, ``axis``/``axes``, ``norm`` in {"backward",
"ortho", "forward"}) and dtypes as NumPy; complex gradients follow the
conjugate-Wirtinger convention.

>>> import dualgrad as dg
>>> x = dg.tensor([1., 2., 3., 4.], requires_grad=True)
>>> (dg.fft.rfft(x).abs() ** 2).sum().backward()
>>> x.grad
tensor([12., 20., 20., 28.])
"""

from .ops.fft import (
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "ifft", "ifft2", "ifftn", "ifftshift", "irfft",
           "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]
