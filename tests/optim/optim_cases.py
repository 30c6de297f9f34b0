"""Optimizer and scheduler scenarios run identically with dualgrad and with torch (``run_optimizer``,
``run_scheduler`` take the library as an argument); ``optim_torch_pinned.json`` holds torch 2.13's results
(written by ``python tests/optim/optim_cases.py`` with torch installed), for machines without torch."""

from __future__ import annotations

import json
import math
import pathlib
from typing import Any

import numpy as np

PINNED_PATH = pathlib.Path(__file__).with_name("optim_torch_pinned.json")

X0 = [0.5, -1.2, 2.0]
Y0 = [[0.3, -0.7], [1.1, 0.4]]
Z0 = [0.2 + 0.5j, -1.0 + 0.1j]


def _loss(lib: Any, x: Any, y: Any) -> Any:
    """A smooth non-quadratic loss of a vector and a matrix."""
    return (lib.sin(x) * x ** 2).sum() + 0.1 * ((y @ y) ** 2).sum() + (x[0] * y[1, 0]) ** 2


OPTIMIZER_CASES: dict[str, tuple[str, dict, int]] = {
    "sgd": ("SGD", {"lr": 0.05}, 5),
    "sgd_momentum": ("SGD", {"lr": 0.05, "momentum": 0.9}, 5),
    "sgd_dampening_wd": ("SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.05}, 5),
    "sgd_nesterov_max": ("SGD", {"lr": 0.01, "momentum": 0.5, "nesterov": True, "maximize": True}, 5),
    "adam": ("Adam", {"lr": 0.05}, 6),
    "adam_amsgrad_wd": ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1, "betas": (0.8, 0.9)}, 6),
    "adam_maximize": ("Adam", {"lr": 0.01, "maximize": True, "eps": 1e-3}, 4),
    "adamw": ("AdamW", {"lr": 0.05, "weight_decay": 0.2}, 6),
    "adamw_amsgrad": ("AdamW", {"lr": 0.05, "amsgrad": True}, 6),
    "rmsprop": ("RMSprop", {"lr": 0.01}, 6),
    "rmsprop_centered_momentum": ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.7,
                                              "weight_decay": 0.1, "alpha": 0.9}, 6),
    "rmsprop_maximize": ("RMSprop", {"lr": 0.001, "maximize": True}, 3),
    "adagrad": ("Adagrad", {"lr": 0.1}, 5),
    "adagrad_all": ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1,
                                "initial_accumulator_value": 0.5, "eps": 1e-6}, 5),
    "lbfgs": ("LBFGS", {"lr": 0.5, "max_iter": 6}, 2),
    "lbfgs_wolfe": ("LBFGS", {"line_search_fn": "strong_wolfe", "max_iter": 8, "history_size": 3}, 3),
}


def run_optimizer(lib: Any, name: str, kwargs: dict, steps: int, groups: bool = False) -> dict:
    """``steps`` steps of ``lib.optim.<name>`` on ``_loss``; the parameters and the tensors of the state dict
    after them, as nested lists."""
    x = lib.tensor(X0, dtype=lib.float64, requires_grad=True)
    y = lib.tensor(Y0, dtype=lib.float64, requires_grad=True)
    params: Any = ([{"params": [x]}, {"params": [y], "lr": kwargs["lr"] / 2}] if groups else [x, y])
    opt = getattr(lib.optim, name)(params, **kwargs)

    def closure() -> Any:
        opt.zero_grad()
        loss = _loss(lib, x, y)
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    state = opt.state_dict()["state"]
    return {"x": x.tolist(), "y": y.tolist(), "losses": losses,
            "state": {str(index): {key: _plain(value) for key, value in buffers.items()}
                      for index, buffers in state.items()}}


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return float(value) if isinstance(value, float) else value


def run_complex(lib: Any, name: str, kwargs: dict) -> list:
    """Three steps on a complex parameter (real and imaginary parts as independent parameters)."""
    z = lib.tensor(Z0, dtype=lib.complex128, requires_grad=True)
    opt = getattr(lib.optim, name)([z], **kwargs)
    for _ in range(3):
        opt.zero_grad()
        (z * z.conj() * (1 + z.real)).real.sum().backward()
        opt.step()
    return [[v.real, v.imag] for v in z.tolist()]


SCHEDULER_CASES: dict[str, tuple[str, dict]] = {
    "step": ("StepLR", {"step_size": 3, "gamma": 0.5}),
    "multistep": ("MultiStepLR", {"milestones": [2, 5, 5, 9], "gamma": 0.3}),
    "exponential": ("ExponentialLR", {"gamma": 0.8}),
    "cosine": ("CosineAnnealingLR", {"T_max": 4, "eta_min": 0.01}),
    "cosine_default": ("CosineAnnealingLR", {"T_max": 5}),
}
METRICS = [1.0, 0.9, 0.95, 0.96, 0.97, 0.9, 0.899995, 0.91, 0.92, 0.93, 0.94, 0.5, 0.6, 0.7, 0.8]
PLATEAU_CASES: dict[str, dict] = {
    "plateau": {"patience": 2},
    "plateau_abs_max_cooldown": {"mode": "max", "threshold_mode": "abs", "threshold": 0.01, "cooldown": 2,
                                 "patience": 1, "factor": 0.5, "min_lr": 0.02},
}


def run_scheduler(lib: Any, name: str, kwargs: dict, epochs: int = 14) -> list:
    """The learning rates of two groups (lr 0.1 and 0.5) after each of ``epochs`` scheduler steps."""
    w = lib.zeros(1, requires_grad=True)
    v = lib.zeros(1, requires_grad=True)
    opt = lib.optim.SGD([{"params": [w]}, {"params": [v], "lr": 0.5}], lr=0.1)
    sched = getattr(lib.optim.lr_scheduler, name)(opt, **kwargs)
    lrs = [list(sched.get_last_lr())]
    for _ in range(epochs):
        opt.step()
        sched.step()
        lrs.append(list(sched.get_last_lr()))
    return lrs


def run_plateau(lib: Any, kwargs: dict) -> list:
    w = lib.zeros(1, requires_grad=True)
    opt = lib.optim.SGD([w], lr=0.1)
    sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
    lrs = []
    for metric in METRICS:
        opt.step()
        sched.step(metric)
        lrs.append(sched.get_last_lr()[0])
    return lrs


def run_lambda(lib: Any) -> list:
    w = lib.zeros(1, requires_grad=True)
    opt = lib.optim.SGD([{"params": [w]}, {"params": [lib.zeros(1, requires_grad=True)]}], lr=0.2)
    sched = lib.optim.lr_scheduler.LambdaLR(opt, [lambda e: 0.9 ** e, lambda e: 1 / (1 + e)])
    lrs = []
    for _ in range(6):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
    return lrs


def run_all(lib: Any) -> dict:
    results: dict[str, Any] = {}
    for key, (name, kwargs, steps) in OPTIMIZER_CASES.items():
        results[key] = run_optimizer(lib, name, kwargs, steps)
        if name != "LBFGS":
            results[key + "_groups"] = run_optimizer(lib, name, kwargs, 3, groups=True)
    for name, kwargs in (("SGD", {"lr": 0.1, "momentum": 0.5}), ("Adam", {"lr": 0.1}),
                         ("RMSprop", {"lr": 0.01, "centered": True}), ("Adagrad", {"lr": 0.1})):
        results[f"complex_{name}"] = run_complex(lib, name, kwargs)
    for key, (name, kwargs) in SCHEDULER_CASES.items():
        results[key] = run_scheduler(lib, name, kwargs)
    for key, kwargs in PLATEAU_CASES.items():
        results[key] = run_plateau(lib, kwargs)
    results["lambda"] = run_lambda(lib)
    return results


def assert_same(got: Any, expected: Any, where: str = "", rtol: float = 1e-12, atol: float = 1e-14) -> None:
    """Nested lists/dicts of numbers equal to ``rtol`` relative or ``atol`` absolute."""
    if isinstance(expected, dict):
        assert sorted(got) == sorted(expected), where
        for key in expected:
            assert_same(got[key], expected[key], f"{where}.{key}", rtol, atol)
    elif isinstance(expected, list) and expected and isinstance(expected[0], (list, dict)):
        assert len(got) == len(expected), where
        for i, (g, e) in enumerate(zip(got, expected)):
            assert_same(g, e, f"{where}[{i}]", rtol, atol)
    else:
        np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float),
                                   rtol=rtol, atol=atol, err_msg=where)


if __name__ == "__main__":
    import torch

    torch.set_default_dtype(torch.float64)
    PINNED_PATH.write_text(json.dumps(run_all(torch), indent=0, sort_keys=True) + "\n")
    print(f"wrote {PINNED_PATH} ({math.ceil(PINNED_PATH.stat().st_size / 1024)} KiB)")
