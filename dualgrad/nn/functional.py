"""``dualgrad.nn.functional``: torch's functional forms of layers, activations and losses, composed of
dualgrad ops (so each one differentiates to any order, in both modes, and runs under ``vmap``).

>>> import dualgrad as dg
>>> import dualgrad.nn.functional as F
>>> F.relu(dg.tensor([-1., 1.])), F.mse_loss(dg.tensor([1.]), dg.tensor([0.]))
(tensor([0., 1.]), tensor(1.))
"""

from ..ops.elementwise.core import sigmoid, tanh
from ._activations import (
    celu,
    elu,
    gelu,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    prelu,
    relu,
    relu6,
    selu,
    silu,
    softmax,
    softmin,
    softplus,
    softsign,
    tanhshrink,
    threshold,
)
from ._convolution import bilinear, conv1d, conv2d, linear, pad
from ._extras import adaptive_avg_pool1d, adaptive_avg_pool2d, cosine_similarity, kl_div, mish, normalize
from ._losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from ._normalization import batch_norm, dropout, embedding, layer_norm, one_hot
from ._pooling import avg_pool1d, avg_pool2d, max_pool1d, max_pool2d

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d", "batch_norm", "bilinear",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "celu", "conv1d", "conv2d",
           "cosine_similarity", "cross_entropy", "dropout", "elu", "embedding", "gelu", "hardsigmoid",
           "hardswish", "hardtanh", "huber_loss", "kl_div", "l1_loss", "layer_norm", "leaky_relu", "linear",
           "log_softmax", "logsigmoid", "max_pool1d", "max_pool2d", "mish", "mse_loss", "nll_loss", "normalize",
           "one_hot", "pad", "prelu", "relu", "relu6", "selu", "sigmoid", "silu", "smooth_l1_loss", "softmax",
           "softmin", "softplus", "softsign", "tanh", "tanhshrink", "threshold"]
