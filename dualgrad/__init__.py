"""dualgrad: automatic differentiation on NumPy with the torch.autograd API.

>>> import dualgrad as dg
>>> x = dg.tensor([1., 2., 3.], requires_grad=True)
>>> y = (x ** 2).sum()
>>> y.backward()
>>> x.grad
tensor([2., 4., 6.])
"""

from . import ops as _ops  # noqa: F401 - builds the op table and Tensor methods
from .factories import (
    arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, linspace,
    manual_seed, ones, ones_like, rand, rand_like, randn, randn_like, tensor, zeros, zeros_like,
)
from .ops.elementwise import (
    abs, acos, acosh, add, angle, asin, asinh, atan, atan2, atanh, clamp, clip, clone, conj, cos,
    cosh, div, exp, expm1, floor_divide, hypot, imag, log, log1p, log2, log10, logaddexp,
    maximum, minimum, mul, neg, pow, real, reciprocal, relu, remainder, rsqrt, sgn, sigmoid, sign,
    sin, sinh, softplus, sqrt, square, sub, tan, tanh, to_dtype, where,
)
from .ops.indexing import getitem
from .ops.linalg import matmul
from .ops.reductions import mean, sum
from .ops.shape import broadcast_to, expand, permute, reshape, squeeze, swapaxes, transpose, unsqueeze
from .reverse import (
    backward, enable_grad, grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
    no_grad, set_grad_enabled,
)
from .tensor import Tensor
from .variable import Variable
from . import autograd  # noqa: E402 - needs the names above

float16 = __import__("numpy").dtype("float16")
float32 = __import__("numpy").dtype("float32")
float64 = __import__("numpy").dtype("float64")
complex64 = __import__("numpy").dtype("complex64")
complex128 = __import__("numpy").dtype("complex128")
int32 = __import__("numpy").dtype("int32")
int64 = __import__("numpy").dtype("int64")
bool_ = __import__("numpy").dtype("bool")
half, float, double = float16, float32, float64  # noqa: A001 - torch's aliases
cfloat, cdouble, long = complex64, complex128, int64

__version__ = "0.1.0"
