"""dualgrad: automatic differentiation on NumPy with the torch.autograd API.

>>> import dualgrad as dg
>>> x = dg.tensor([1., 2., 3.], requires_grad=True)
>>> y = (x ** 2).sum()
>>> y.backward()
>>> x.grad
tensor([2., 4., 6.])
"""

from . import (  # the public namespaces
    accelerator,
    autograd,
    backends,
    cuda,
    fft,
    func,
    functional,
    graph,
    implicit,
    linalg,
    nn,
    numpy_dispatch,  # NumPy calls on Tensors (NEP 13/18)
    optim,
    profiler,
    serialization,
    special,
    testing,  # torch.testing's name; Hypothesis is imported only when a strategy is built
    utils,
)
from . import ops as _ops  # noqa: F401 - builds the op table and Tensor methods
from .base.devices import device
from .compile import compile  # noqa: A004 - dualgrad.compile (trace and replay)
from .factories import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    finfo,
    from_numpy,
    full,
    full_like,
    get_default_dtype,
    get_rng_state,
    iinfo,
    initial_seed,
    linspace,
    logspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    scalar_tensor,
    seed,
    set_default_dtype,
    set_rng_state,
    tensor,
    zeros,
    zeros_like,
)
from .ops.counting import *  # noqa: F403
from .ops.einsum import *  # noqa: F403 - the public op functions
from .ops.elementwise.core import *  # noqa: F403
from .ops.elementwise.functions import *  # noqa: F403
from .ops.elementwise.special import *  # noqa: F403
from .ops.indexing import *  # noqa: F403
from .ops.integration import *  # noqa: F403
from .ops.layout import *  # noqa: F403
from .ops.linalg.decompositions import *  # noqa: F403
from .ops.linalg.lu import *  # noqa: F403
from .ops.linalg.matrix_functions import *  # noqa: F403
from .ops.linalg.products import *  # noqa: F403
from .ops.random import *  # noqa: F403
from .ops.reductions import *  # noqa: F403
from .ops.scatter import *  # noqa: F403
from .ops.shape.compositions import *  # noqa: F403
from .ops.shape.core import *  # noqa: F403
from .ops.shape.views import *  # noqa: F403
from .ops.sorting import *  # noqa: F403
from .ops.statistics import *  # noqa: F403
from .ops.torch_names import *  # noqa: F403
from .queries import (
    allclose,
    can_cast,
    equal,
    is_complex,
    is_floating_point,
    is_inference,
    is_nonzero,
    is_tensor,
    isclose,
    numel,
    promote_types,
    result_type,
)
from .reverse import (
    backward,
    enable_grad,
    grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .reverse.anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .serialization import load, save
from .tensor import Tensor
from .tools.gradcheck import GradcheckError, gradcheck, gradgradcheck
from .tools.printing import set_printoptions
from .transforms.function import Function, FunctionCtx, once_differentiable
from .variable import Variable
from .vmap.batching import vmap

# torch's dtype names, as NumPy dtypes (``x.dtype == dg.float64``; they print as NumPy's, ``float64``)
float16 = __import__("numpy").dtype("float16")
float32 = __import__("numpy").dtype("float32")
float64 = __import__("numpy").dtype("float64")
complex64 = __import__("numpy").dtype("complex64")
complex128 = __import__("numpy").dtype("complex128")
uint8 = __import__("numpy").dtype("uint8")
int8 = __import__("numpy").dtype("int8")
int16 = __import__("numpy").dtype("int16")
int32 = __import__("numpy").dtype("int32")
int64 = __import__("numpy").dtype("int64")
bool_ = bool = __import__("numpy").dtype("bool")  # noqa: A001 - torch's name
half, float, double = float16, float32, float64  # noqa: A001 - torch's aliases
cfloat, cdouble, long, int, short = complex64, complex128, int64, int32, int16  # noqa: A001

# NumPy's functions with NumPy's signatures: they read the finished namespace, so they come last
from .numpy_dispatch import functions as _numpy_functions  # noqa: E402
from .numpy_dispatch import numerical as _numpy_numerical  # noqa: E402
from .numpy_dispatch import statistics as _numpy_statistics  # noqa: E402

__version__ = "0.1.0"
