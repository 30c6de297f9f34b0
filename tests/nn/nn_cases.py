"""Layer, loss and functional cases run identically by torch and by dualgrad (``tests/nn/test_nn_parity.py``).

Each case builds a module (or calls a functional form) from a namespace ``lib`` (``torch`` or ``dualgrad``)
and runs it on float64 inputs drawn from a seeded generator; parameters are set to seeded values. The
outputs and the gradients of ``sum(output * cotangent)`` with respect to the floating inputs and the
parameters are the compared numbers. Without torch, the test reads them from ``data/nn_reference.npz``,
which ``python tests/nn/nn_cases.py`` regenerates (with torch installed).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REFERENCE = Path(__file__).resolve().parent / "data" / "nn_reference.npz"


# -- input specifications ---------------------------------------------------------------------------------
def normal(*shape: int) -> tuple:
    return ("normal", shape)


def unit(*shape: int) -> tuple:
    """Values in (0.05, 0.95) (probabilities)."""
    return ("unit", shape)


def simplex(*shape: int) -> tuple:
    """Probabilities summing to one along dimension 1."""
    return ("simplex", shape)


def index(high: int, *shape: int) -> tuple:
    return ("index", shape, high)


def draw(spec: tuple, rng: np.random.Generator) -> np.ndarray:
    kind, shape = spec[0], spec[1]
    if kind == "normal":
        return rng.standard_normal(shape)
    if kind == "unit":
        return rng.uniform(0.05, 0.95, shape)
    if kind == "simplex":
        raw = rng.uniform(0.1, 1.0, shape)
        return raw / raw.sum(axis=1, keepdims=True)
    return rng.integers(0, spec[2], shape)


# -- the cases ----------------------------------------------------------------------------------------------
def _m(build: Callable, *inputs: tuple, train: bool = True) -> dict:
    return {"module": build, "inputs": inputs, "train": train}


def _f(call: Callable, *inputs: tuple) -> dict:
    return {"function": call, "inputs": inputs}


CASES: dict[str, dict] = {
    # layers
    "Linear": _m(lambda nn: nn.Linear(3, 4), normal(5, 3)),
    "Linear_nobias_3d": _m(lambda nn: nn.Linear(3, 2, bias=False), normal(2, 4, 3)),
    "Bilinear": _m(lambda nn: nn.Bilinear(2, 3, 4), normal(5, 2), normal(5, 3)),
    "Conv1d": _m(lambda nn: nn.Conv1d(2, 4, 3, stride=2, padding=1), normal(2, 2, 9)),
    "Conv1d_same_dilated_groups": _m(lambda nn: nn.Conv1d(4, 6, 3, padding="same", dilation=2, groups=2),
                                     normal(2, 4, 7)),
    "Conv1d_unbatched_reflect": _m(lambda nn: nn.Conv1d(2, 3, 3, padding=2, padding_mode="reflect"), normal(2, 6)),
    "Conv2d": _m(lambda nn: nn.Conv2d(3, 4, 3), normal(2, 3, 6, 5)),
    "Conv2d_stride_pad_groups": _m(lambda nn: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2),
                                                        dilation=(1, 2), groups=2, bias=False), normal(2, 4, 7, 6)),
    "Conv2d_same_circular": _m(lambda nn: nn.Conv2d(2, 3, 4, padding="same", padding_mode="circular"),
                               normal(1, 2, 5, 6)),
    "Conv2d_valid_unbatched": _m(lambda nn: nn.Conv2d(2, 2, 2, padding="valid"), normal(2, 4, 4)),
    "MaxPool2d": _m(lambda nn: nn.MaxPool2d(2), normal(2, 3, 6, 5)),
    "MaxPool2d_ceil_dilation": _m(lambda nn: nn.MaxPool2d(3, stride=2, padding=1, dilation=1, ceil_mode=True),
                                  normal(2, 2, 7, 6)),
    "MaxPool2d_dilation": _m(lambda nn: nn.MaxPool2d(2, stride=1, padding=1, dilation=2), normal(1, 2, 5, 5)),
    "AvgPool2d": _m(lambda nn: nn.AvgPool2d(3, stride=2, padding=1), normal(2, 2, 7, 6)),
    "AvgPool2d_ceil_nopad": _m(lambda nn: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                                       count_include_pad=False), normal(1, 2, 6, 6)),
    "AvgPool2d_divisor": _m(lambda nn: nn.AvgPool2d(2, divisor_override=3), normal(2, 4, 4)),
    "MaxPool1d": _m(lambda nn: nn.MaxPool1d(3, stride=2, padding=1), normal(2, 3, 8)),
    "AvgPool1d": _m(lambda nn: nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False), normal(2, 3, 8)),
    "Flatten": _m(lambda nn: nn.Flatten(), normal(2, 3, 4)),
    "Unflatten": _m(lambda nn: nn.Unflatten(1, (2, 3)), normal(4, 6)),
    "Dropout_eval": _m(lambda nn: nn.Dropout(0.3), normal(4, 3), train=False),
    "LayerNorm": _m(lambda nn: nn.LayerNorm(4), normal(3, 4)),
    "LayerNorm_2d_noaffine": _m(lambda nn: nn.LayerNorm((3, 4), elementwise_affine=False), normal(2, 3, 4)),
    "LayerNorm_nobias": _m(lambda nn: nn.LayerNorm(4, bias=False), normal(2, 4)),
    "BatchNorm1d": _m(lambda nn: nn.BatchNorm1d(3), normal(5, 3)),
    "BatchNorm1d_3d": _m(lambda nn: nn.BatchNorm1d(3, momentum=0.3), normal(4, 3, 5)),
    "BatchNorm1d_eval": _m(lambda nn: nn.BatchNorm1d(3), normal(5, 3), train=False),
    "BatchNorm2d": _m(lambda nn: nn.BatchNorm2d(2, affine=False), normal(3, 2, 4, 3)),
    "BatchNorm2d_untracked": _m(lambda nn: nn.BatchNorm2d(2, track_running_stats=False), normal(3, 2, 2, 3)),
    "Embedding": _m(lambda nn: nn.Embedding(6, 3), index(6, 2, 4)),
    "Embedding_padding": _m(lambda nn: nn.Embedding(6, 3, padding_idx=2), index(6, 3, 5)),
    "AdaptiveAvgPool2d": _m(lambda nn: nn.AdaptiveAvgPool2d((3, 2)), normal(2, 2, 7, 5)),
    "AdaptiveAvgPool2d_none": _m(lambda nn: nn.AdaptiveAvgPool2d((None, 4)), normal(2, 5, 6)),
    "AdaptiveAvgPool1d": _m(lambda nn: nn.AdaptiveAvgPool1d(4), normal(2, 3, 9)),
    # activations
    "Mish": _m(lambda nn: nn.Mish(), normal(3, 4)),
    "ReLU": _m(lambda nn: nn.ReLU(), normal(3, 4)),
    "Tanh": _m(lambda nn: nn.Tanh(), normal(3, 4)),
    "Sigmoid": _m(lambda nn: nn.Sigmoid(), normal(3, 4)),
    "GELU": _m(lambda nn: nn.GELU(), normal(3, 4)),
    "GELU_tanh": _m(lambda nn: nn.GELU("tanh"), normal(3, 4)),
    "SiLU": _m(lambda nn: nn.SiLU(), normal(3, 4)),
    "Softplus": _m(lambda nn: nn.Softplus(), normal(3, 4)),
    "Softplus_beta_threshold": _m(lambda nn: nn.Softplus(beta=2.0, threshold=1.0), normal(3, 4)),
    "ELU": _m(lambda nn: nn.ELU(), normal(3, 4)),
    "ELU_alpha": _m(lambda nn: nn.ELU(alpha=0.5), normal(3, 4)),
    "LeakyReLU": _m(lambda nn: nn.LeakyReLU(0.2), normal(3, 4)),
    "Softmax": _m(lambda nn: nn.Softmax(dim=1), normal(3, 4)),
    "LogSoftmax": _m(lambda nn: nn.LogSoftmax(dim=0), normal(3, 4)),
    "Identity": _m(lambda nn: nn.Identity(), normal(3, 4)),
    "Threshold": _m(lambda nn: nn.Threshold(0.1, 20.0), normal(3, 4)),
    "ReLU6": _m(lambda nn: nn.ReLU6(), normal(3, 4)),
    "Hardtanh": _m(lambda nn: nn.Hardtanh(-0.5, 0.8), normal(3, 4)),
    "CELU": _m(lambda nn: nn.CELU(0.5), normal(3, 4)),  # (1/alpha exact in float32: torch's gradient rounds it)
    "SELU": _m(lambda nn: nn.SELU(), normal(3, 4)),
    # (torch's gradient of hardsigmoid multiplies by 1/6 rounded to float32: 3e-8 off; ours is exact)
    "Hardsigmoid": {**_m(lambda nn: nn.Hardsigmoid(), normal(3, 4)), "rtol": 1e-7},
    "Hardswish": _m(lambda nn: nn.Hardswish(), normal(3, 4)),
    "Softsign": _m(lambda nn: nn.Softsign(), normal(3, 4)),
    "Tanhshrink": _m(lambda nn: nn.Tanhshrink(), normal(3, 4)),
    "LogSigmoid": _m(lambda nn: nn.LogSigmoid(), normal(3, 4)),
    "Softmin": _m(lambda nn: nn.Softmin(dim=1), normal(3, 4)),
    "PReLU": _m(lambda nn: nn.PReLU(), normal(3, 4)),
    "PReLU_channels": _m(lambda nn: nn.PReLU(3, 0.1), normal(2, 3, 4)),
    # losses
    **{f"MSELoss_{r}": _m(lambda nn, r=r: nn.MSELoss(reduction=r), normal(3, 4), normal(3, 4))
       for r in ("mean", "sum", "none")},
    **{f"L1Loss_{r}": _m(lambda nn, r=r: nn.L1Loss(reduction=r), normal(3, 4), normal(3, 4))
       for r in ("mean", "sum", "none")},
    **{f"HuberLoss_{r}": _m(lambda nn, r=r: nn.HuberLoss(reduction=r, delta=0.7), normal(3, 4), normal(3, 4))
       for r in ("mean", "sum", "none")},
    **{f"SmoothL1Loss_{r}": _m(lambda nn, r=r: nn.SmoothL1Loss(reduction=r, beta=0.6), normal(3, 4), normal(3, 4))
       for r in ("mean", "sum", "none")},
    "SmoothL1Loss_beta0": _m(lambda nn: nn.SmoothL1Loss(beta=0.0), normal(3, 4), normal(3, 4)),
    **{f"CrossEntropyLoss_{r}": _m(lambda nn, r=r: nn.CrossEntropyLoss(reduction=r), normal(5, 4), index(4, 5))
       for r in ("mean", "sum", "none")},
    **{f"CrossEntropyLoss_smooth_{r}": _m(lambda nn, r=r: nn.CrossEntropyLoss(reduction=r, label_smoothing=0.2),
                                          normal(5, 4), index(4, 5)) for r in ("mean", "sum", "none")},
    "CrossEntropyLoss_weight_ignore_smooth": _m(
        lambda nn: nn.CrossEntropyLoss(weight=nn.lib.tensor([0.5, 1.0, 2.0, 1.5], dtype=nn.lib.float64),
                                       ignore_index=1, label_smoothing=0.1), normal(6, 4), index(4, 6)),
    "CrossEntropyLoss_spatial": _m(lambda nn: nn.CrossEntropyLoss(), normal(2, 3, 4, 2), index(3, 2, 4, 2)),
    "CrossEntropyLoss_unbatched": _m(lambda nn: nn.CrossEntropyLoss(), normal(4), index(4)),
    **{f"CrossEntropyLoss_probs_{r}": _m(lambda nn, r=r: nn.CrossEntropyLoss(reduction=r, label_smoothing=0.15),
                                         normal(5, 4), simplex(5, 4)) for r in ("mean", "sum", "none")},
    "CrossEntropyLoss_probs_weight": _m(
        lambda nn: nn.CrossEntropyLoss(weight=nn.lib.tensor([0.5, 1.0, 2.0, 1.5], dtype=nn.lib.float64)),
        normal(5, 4), simplex(5, 4)),
    **{f"NLLLoss_{r}": _m(lambda nn, r=r: nn.NLLLoss(reduction=r), normal(5, 4), index(4, 5))
       for r in ("mean", "sum", "none")},
    "NLLLoss_weight_ignore": _m(
        lambda nn: nn.NLLLoss(weight=nn.lib.tensor([0.5, 1.0, 2.0, 1.5], dtype=nn.lib.float64), ignore_index=0),
        normal(6, 4), index(4, 6)),
    **{f"BCELoss_{r}": _m(lambda nn, r=r: nn.BCELoss(reduction=r), unit(3, 4), unit(3, 4))
       for r in ("mean", "sum", "none")},
    "BCELoss_weight": _m(lambda nn: nn.BCELoss(weight=nn.lib.tensor([1.0, 2.0, 0.5, 1.0], dtype=nn.lib.float64)),
                         unit(3, 4), unit(3, 4)),
    **{f"BCEWithLogitsLoss_{r}": _m(lambda nn, r=r: nn.BCEWithLogitsLoss(reduction=r), normal(3, 4), unit(3, 4))
       for r in ("mean", "sum", "none")},
    "BCEWithLogitsLoss_pos_weight": _m(
        lambda nn: nn.BCEWithLogitsLoss(pos_weight=nn.lib.tensor([1.0, 3.0, 0.5, 2.0], dtype=nn.lib.float64),
                                        weight=nn.lib.tensor([2.0, 1.0, 1.0, 0.5], dtype=nn.lib.float64)),
        normal(3, 4), unit(3, 4)),
    **{f"KLDivLoss_{r}": _m(lambda nn, r=r: nn.KLDivLoss(reduction=r), normal(3, 4), simplex(3, 4))
       for r in ("batchmean", "sum", "none")},
    "KLDivLoss_log_target": _m(lambda nn: nn.KLDivLoss(reduction="batchmean", log_target=True), normal(3, 4),
                               normal(3, 4)),
    # functional forms
    "F.normalize": _f(lambda F, x: F.normalize(x, p=3.0, dim=0), normal(3, 4)),
    "F.cosine_similarity": _f(lambda F, x, y: F.cosine_similarity(x, y, dim=-1), normal(3, 4), normal(1, 4)),
    "F.adaptive_avg_pool2d": _f(lambda F, x: F.adaptive_avg_pool2d(x, 2), normal(1, 2, 5, 3)),
    "F.linear": _f(lambda F, x, w, b: F.linear(x, w, b), normal(4, 3), normal(5, 3), normal(5)),
    "F.conv2d": _f(lambda F, x, w: F.conv2d(x, w, stride=2, padding=1), normal(1, 2, 5, 5), normal(3, 2, 3, 3)),
    "F.conv1d": _f(lambda F, x, w, b: F.conv1d(x, w, b, dilation=2), normal(2, 2, 8), normal(3, 2, 2), normal(3)),
    "F.max_pool2d": _f(lambda F, x: F.max_pool2d(x, 2, 1), normal(1, 2, 4, 4)),
    "F.avg_pool2d": _f(lambda F, x: F.avg_pool2d(x, 2), normal(1, 2, 4, 4)),
    "F.layer_norm": _f(lambda F, x, w, b: F.layer_norm(x, (3,), w, b, eps=1e-3), normal(4, 3), normal(3), normal(3)),
    "F.batch_norm_training": _f(lambda F, x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                                normal(4, 3), normal(3), normal(3)),
    "F.embedding": _f(lambda F, i, w: F.embedding(i, w, padding_idx=0), index(5, 3), normal(5, 2)),
    "F.gelu": _f(lambda F, x: F.gelu(x, approximate="tanh"), normal(5)),
    "F.silu": _f(lambda F, x: F.silu(x), normal(5)),
    "F.elu": _f(lambda F, x: F.elu(x, 0.3), normal(5)),
    "F.leaky_relu": _f(lambda F, x: F.leaky_relu(x), normal(5)),
    "F.softplus": _f(lambda F, x: F.softplus(x, beta=0.5, threshold=2.0), normal(5)),
    "F.relu6": _f(lambda F, x: F.relu6(4 * x), normal(5)),
    "F.hardtanh": _f(lambda F, x: F.hardtanh(2 * x, -1.5, 0.5), normal(5)),
    "F.selu": _f(lambda F, x: F.selu(x), normal(5)),
    "F.threshold": _f(lambda F, x: F.threshold(x, -0.2, -3.0), normal(6)),
    "F.celu": _f(lambda F, x: F.celu(x, 2.0), normal(6)),
    "F.hardsigmoid": {**_f(lambda F, x: F.hardsigmoid(4 * x), normal(6)), "rtol": 1e-7},
    "F.hardswish": _f(lambda F, x: F.hardswish(4 * x), normal(6)),
    "F.softsign": _f(lambda F, x: F.softsign(x), normal(6)),
    "F.tanhshrink": _f(lambda F, x: F.tanhshrink(x), normal(6)),
    "F.prelu": _f(lambda F, x, w: F.prelu(x, w), normal(2, 3), normal(3)),
    "F.logsigmoid": _f(lambda F, x: F.logsigmoid(x), normal(5)),
    "F.softmin": _f(lambda F, x: F.softmin(x, dim=1), normal(2, 3)),
    "F.softmax": _f(lambda F, x: F.softmax(x, dim=-1), normal(2, 3)),
    "F.log_softmax": _f(lambda F, x: F.log_softmax(x, dim=-1), normal(2, 3)),
    "F.pad_constant": _f(lambda F, x: F.pad(x, (1, 2, 0, 1), value=0.5), normal(2, 3)),
    "F.pad_reflect": _f(lambda F, x: F.pad(x, (2, 1), mode="reflect"), normal(2, 3, 4)),
    "F.pad_replicate": _f(lambda F, x: F.pad(x, (2, 1, 1, 3), mode="replicate"), normal(1, 2, 3)),
    "F.pad_circular": _f(lambda F, x: F.pad(x, (2, 1), mode="circular"), normal(1, 2, 3)),
    "F.mse_loss": _f(lambda F, x, y: F.mse_loss(x, y), normal(3), normal(3)),
    "F.l1_loss": _f(lambda F, x, y: F.l1_loss(x, y, reduction="sum"), normal(3), normal(3)),
    "F.huber_loss": _f(lambda F, x, y: F.huber_loss(x, y, delta=0.5), normal(4), normal(4)),
    "F.smooth_l1_loss": _f(lambda F, x, y: F.smooth_l1_loss(x, y, beta=0.5), normal(4), normal(4)),
    "F.cross_entropy": _f(lambda F, x, t: F.cross_entropy(x, t, label_smoothing=0.3), normal(4, 3), index(3, 4)),
    "F.nll_loss": _f(lambda F, x, t: F.nll_loss(x, t, reduction="sum"), normal(4, 3), index(3, 4)),
    "F.binary_cross_entropy": _f(lambda F, x, y: F.binary_cross_entropy(x, y), unit(4), unit(4)),
    "F.binary_cross_entropy_with_logits": _f(
        lambda F, x, y, p: F.binary_cross_entropy_with_logits(x, y, pos_weight=p.detach().abs()), normal(4), unit(4),
        normal(4)),
    "F.bilinear": _f(lambda F, x, y, w, b: F.bilinear(x, y, w, b), normal(3, 2), normal(3, 4), normal(5, 2, 4),
                     normal(5)),
}


class _Namespace:
    """``torch.nn`` or ``dualgrad.nn`` with the library itself as ``.lib``."""

    def __init__(self, lib: Any):
        self.lib = lib
        self._nn = lib.nn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._nn, name)


def run(lib: Any, name: str) -> dict[str, np.ndarray]:
    """Outputs and gradients of case ``name`` in library ``lib`` (``torch`` or ``dualgrad``), as arrays."""
    case = CASES[name]
    rng = np.random.default_rng(_seed(name))
    arrays = [draw(spec, rng) for spec in case["inputs"]]
    inputs = [lib.tensor(a, dtype=lib.float64, requires_grad=True) if a.dtype.kind == "f" else lib.tensor(a)
              for a in arrays]
    if "module" in case:
        module = case["module"](_Namespace(lib)).double()
        params = dict(module.named_parameters())
        with lib.no_grad():
            for p in params.values():
                p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)), dtype=lib.float64))
        module.train(case["train"])
        if name.endswith("_eval"):
            for b in module.buffers():
                if b.dtype == lib.float64:
                    with lib.no_grad():
                        b.copy_(lib.tensor(rng.uniform(0.5, 1.5, tuple(b.shape)), dtype=lib.float64))
        out = module(*inputs)
    else:
        params = {}
        out = case["function"](lib.nn.functional, *inputs)
    cotangent = lib.tensor(rng.standard_normal(tuple(out.shape)), dtype=lib.float64)
    (out * cotangent).sum().backward()
    result = {"out": out.detach().numpy()}
    for i, t in enumerate(inputs):
        if t.requires_grad and t.grad is not None:  # (an input used only detached has none, in both)
            result[f"grad_input{i}"] = t.grad.numpy()
    for pname, p in params.items():
        result[f"grad_{pname}"] = p.grad.numpy()
    if "module" in case:
        for bname, b in module.named_buffers():
            result[f"buffer_{bname}"] = b.detach().numpy()
    return result


def _seed(name: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(name))


def reference(name: str) -> dict[str, np.ndarray]:
    """torch's numbers for case ``name``: computed when torch is installed, else read from the pinned file."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        with np.load(REFERENCE) as data:
            prefix = name + "/"
            return {k[len(prefix):]: data[k] for k in data.files if k.startswith(prefix)}
    return run(torch, name)


if __name__ == "__main__":
    import torch

    REFERENCE.parent.mkdir(exist_ok=True)
    np.savez_compressed(REFERENCE, **{f"{name}/{k}": v for name in CASES for k, v in run(torch, name).items()})
    print(f"wrote {REFERENCE} ({len(CASES)} cases)")
