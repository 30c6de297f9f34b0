"""``dualgrad.nn``: torch.nn's modules, layers, losses, ``functional``, ``init`` and ``utils``, built from
dualgrad's ops (no derivative rule of their own), so that models differentiate in both modes, to any order,
and run under ``vmap`` (with ``dualgrad.func.functional_call``).

>>> import dualgrad as dg
>>> from dualgrad import nn
>>> _ = dg.manual_seed(0)
>>> model = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1))
>>> loss = nn.MSELoss()(model(dg.ones(4, 1)), dg.zeros(4, 1))
>>> loss.backward()
>>> model[0].weight.grad.shape
(8, 1)
"""

from . import functional, init, utils
from .activation import (
    CELU,
    ELU,
    GELU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    LogSoftmax,
    Mish,
    PReLU,
    ReLU,
    ReLU6,
    Sigmoid,
    SiLU,
    Softmax,
    Softmin,
    Softplus,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
)
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d
from .dropout import Dropout
from .embedding import Embedding
from .flatten import Flatten, Unflatten
from .linear import Bilinear, Identity, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .parameter import Buffer, Parameter
from .pooling import AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss",
           "BatchNorm1d", "BatchNorm2d", "Bilinear", "Buffer", "CELU", "Conv1d", "Conv2d", "CrossEntropyLoss",
           "Dropout", "ELU", "Embedding", "Flatten", "GELU", "Hardsigmoid", "Hardswish", "Hardtanh", "HuberLoss",
           "Identity", "KLDivLoss", "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSigmoid", "LogSoftmax",
           "MSELoss", "MaxPool1d", "MaxPool2d", "Mish", "Module", "ModuleDict", "ModuleList", "NLLLoss", "PReLU",
           "Parameter", "ParameterDict", "ParameterList", "ReLU", "ReLU6", "SELU", "Sequential", "SiLU", "Sigmoid",
           "SmoothL1Loss", "Softmax", "Softmin", "Softplus", "Softsign", "Tanh", "Tanhshrink", "Threshold",
           "Unflatten", "functional", "init", "utils"]
