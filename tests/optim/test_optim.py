"""dualgrad.optim against torch 2.13 (float64): parameters, losses and state buffers after several steps of
each optimizer and each schedule; torch's errors. torch runs live when installed; its results are also
pinned in ``optim_torch_pinned.json`` (``python tests/optim/optim_cases.py`` rewrites them)."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pytest
from optim_cases import (
    METRICS,
    OPTIMIZER_CASES,
    PINNED_PATH,
    PLATEAU_CASES,
    SCHEDULER_CASES,
    assert_same,
    run_all,
)

import dualgrad as dg

PINNED = json.loads(PINNED_PATH.read_text())


@pytest.fixture(scope="module")
def ours() -> dict:
    return run_all(dg)


@pytest.fixture(scope="module")
def torch_results() -> dict:
    torch = pytest.importorskip("torch")
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_all(torch)
    finally:
        torch.set_default_dtype(default)


CASE_KEYS = sorted(PINNED)


@pytest.mark.parametrize("key", CASE_KEYS)
def test_matches_pinned_torch(ours, key):
    assert_same(ours[key], PINNED[key], key, *_tolerance(key))


@pytest.mark.parametrize("key", CASE_KEYS)
def test_matches_live_torch(ours, torch_results, key):
    assert_same(ours[key], torch_results[key], key, *_tolerance(key))


def _tolerance(key: str) -> tuple[float, float]:
    """(rtol, atol): 1e-12 relative, but 1e-9 (and 1e-10 absolute) for L-BFGS: its line search and two-loop
    recursion amplify the last-bit differences of dot products summed in another order."""
    return (1e-9, 1e-10) if key.startswith("lbfgs") else (1e-12, 1e-14)


def test_every_case_is_pinned():
    assert set(OPTIMIZER_CASES) <= set(PINNED)
    assert set(SCHEDULER_CASES) | set(PLATEAU_CASES) <= set(PINNED)
    assert len(METRICS) == len(PINNED["plateau"])


# -- the Optimizer base: groups, zero_grad, state dicts, repr ---------------------------------------

def _quadratic_step(opt, *params):
    opt.zero_grad()
    sum((p ** 2).sum() for p in params).backward()
    opt.step()


def test_state_dict_layout_and_round_trip():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    y = dg.tensor([3.0], requires_grad=True)
    opt = dg.optim.Adam([{"params": [x]}, {"params": [y], "lr": 0.5}], lr=0.1)
    _quadratic_step(opt, x, y)
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert [g["params"] for g in sd["param_groups"]] == [[0], [1]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert float(sd["state"][0]["step"]) == 1.0
    # a fresh optimizer over copies of the parameters continues exactly as the original
    x2, y2 = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    opt2 = dg.optim.Adam([{"params": [x2]}, {"params": [y2]}], lr=0.3)
    opt2.load_state_dict(pickle.loads(pickle.dumps(sd)))
    assert opt2.param_groups[1]["lr"] == 0.5 and opt2.param_groups[0]["params"][0] is x2
    assert opt2.state[x2]["exp_avg"] is not opt.state[x]["exp_avg"]  # copied, not shared
    for _ in range(3):
        _quadratic_step(opt, x, y)
        _quadratic_step(opt2, x2, y2)
    assert x.tolist() == x2.tolist() and y.tolist() == y2.tolist()


def test_load_state_dict_casts_buffers_to_the_parameter_dtype():
    x = dg.tensor([1.0], requires_grad=True)
    opt = dg.optim.SGD([x], lr=0.1, momentum=0.9)
    _quadratic_step(opt, x)
    x32 = dg.tensor([1.0], dtype=dg.float32, requires_grad=True)
    opt32 = dg.optim.SGD([x32], lr=0.1, momentum=0.9)
    opt32.load_state_dict(opt.state_dict())
    assert opt32.state[x32]["momentum_buffer"].dtype == dg.float32


def test_load_state_dict_errors():
    x = dg.zeros(2, requires_grad=True)
    opt = dg.optim.SGD([x], lr=0.1)
    two = dg.optim.SGD([{"params": [dg.zeros(1, requires_grad=True)]},
                        {"params": [dg.zeros(1, requires_grad=True)]}], lr=0.1)
    with pytest.raises(ValueError, match="^loaded state dict has a different number of parameter groups$"):
        opt.load_state_dict(two.state_dict())
    bigger = dg.optim.SGD([dg.zeros(1, requires_grad=True), dg.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="^loaded state dict contains a parameter group that doesn't match the "
                                         "size of optimizer's group$"):
        opt.load_state_dict(bigger.state_dict())
    assert opt.param_groups[0]["params"][0] is x  # unchanged


def test_zero_grad():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    opt = dg.optim.SGD([x], lr=0.1)
    (x * 3).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert x.grad is not None and x.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert x.grad is None


def test_step_skips_parameters_without_grad_and_returns_the_closure_loss():
    x = dg.tensor([1.0], requires_grad=True)
    frozen = dg.tensor([5.0])  # requires_grad=False is accepted silently, as torch
    opt = dg.optim.SGD([x, frozen], lr=0.1)

    def closure():
        assert dg.is_grad_enabled()
        opt.zero_grad()
        loss = (x ** 2).sum()
        loss.backward()
        return loss

    with dg.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 1.0 and x.tolist() == [0.8] and frozen.tolist() == [5.0]


def test_step_is_in_place_bumps_the_version_and_records_no_graph():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    data = x._data
    opt = dg.optim.Adam([x], lr=0.1)
    y = x * x  # saves x
    (x ** 2).sum().backward()
    version = x._version
    opt.step()
    assert x._data is data and x._version == version + 1 and x.is_leaf and x.grad_fn is None
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_repr_as_torch():
    opt = dg.optim.SGD([dg.zeros(1, requires_grad=True)], lr=0.1)
    assert repr(opt) == ("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n"
                         "    foreach: None\n    fused: None\n    lr: 0.1\n    maximize: False\n"
                         "    momentum: 0\n    nesterov: False\n    weight_decay: 0\n)")
    assert repr(dg.optim.LBFGS([dg.zeros(1, requires_grad=True)])) == (
        "LBFGS (\nParameter Group 0\n    history_size: 100\n    line_search_fn: None\n    lr: 1\n"
        "    max_eval: 25\n    max_iter: 20\n    tolerance_change: 1e-09\n    tolerance_grad: 1e-07\n)")


def test_defaults_as_torch():
    p = [dg.zeros(1, requires_grad=True)]
    assert dg.optim.AdamW(p).defaults["weight_decay"] == 0.01
    assert dg.optim.AdamW(p).defaults["decoupled_weight_decay"] is True
    assert dg.optim.Adam(p).defaults["lr"] == 0.001
    assert dg.optim.RMSprop(p).defaults["alpha"] == 0.99
    assert dg.optim.Adagrad(p).defaults["eps"] == 1e-10


def test_adagrad_creates_its_state_with_the_optimizer():
    x = dg.zeros(2, requires_grad=True)
    opt = dg.optim.Adagrad([x], initial_accumulator_value=0.25)
    assert opt.state[x]["sum"].tolist() == [0.25, 0.25] and float(opt.state[x]["step"]) == 0.0


def test_lbfgs_reaches_the_minimum_of_rosenbrock():
    w = dg.tensor([-1.2, 1.0], requires_grad=True)
    opt = dg.optim.LBFGS([w], line_search_fn="strong_wolfe", max_iter=100, tolerance_grad=1e-10,
                         tolerance_change=1e-14)

    def closure():
        opt.zero_grad()
        loss = (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(w.tolist(), [1.0, 1.0], atol=1e-8)


# -- errors (torch's types and messages) ------------------------------------------------------------

def test_parameter_errors():
    a = dg.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        dg.optim.SGD([a * 2], lr=0.1)
    with pytest.raises(TypeError, match="^params argument given to the optimizer should be an iterable of "
                                        "Tensors or dicts, but got torch.DoubleTensor$"):
        dg.optim.SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        dg.optim.Adam([])
    with pytest.raises(TypeError, match="^optimizer can only optimize Tensors, but one of the params is "
                                        "builtins.int|int$"):
        dg.optim.SGD([1], lr=0.1)
    with pytest.raises(TypeError, match="^optimizer parameters need to be organized in ordered collections"):
        dg.optim.SGD([{"params": {a}}], lr=0.1)
    opt = dg.optim.SGD([a], lr=0.1)
    with pytest.raises(ValueError, match="^some parameters appear in more than one parameter group$"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="^param_group must be a dict, but got <class 'list'>$"):
        opt.add_param_group([a])
    assert len(opt.param_groups) == 1
    with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate parameters"):
        dg.optim.SGD([a, a], lr=0.1)
    with pytest.raises(ValueError, match=r"^LBFGS doesn't support per-parameter options \(parameter groups\)$"):
        dg.optim.LBFGS([{"params": [a]}, {"params": [dg.zeros(1, requires_grad=True)]}])


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: dg.optim.SGD(p, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda p: dg.optim.SGD(p, momentum=-1), "Invalid momentum value: -1"),
    (lambda p: dg.optim.SGD(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: dg.optim.SGD(p, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: dg.optim.SGD(p, momentum=0.9, dampening=0.1, nesterov=True),
     "Nesterov momentum requires a momentum and zero dampening"),
    (lambda p: dg.optim.Adam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: dg.optim.Adam(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda p: dg.optim.AdamW(p, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda p: dg.optim.Adam(p, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda p: dg.optim.RMSprop(p, alpha=-1), "Invalid alpha value: -1"),
    (lambda p: dg.optim.RMSprop(p, momentum=-1), "Invalid momentum value: -1"),
    (lambda p: dg.optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda p: dg.optim.Adagrad(p, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    (lambda p: dg.optim.LBFGS(p, lr=-1), "Invalid learning rate: -1"),
])
def test_hyperparameter_errors(make, message):
    with pytest.raises(ValueError, match=f"^{message.replace('(', '[(]').replace(')', '[)]')}$"):
        make([dg.zeros(1, requires_grad=True)])


def test_tensor_lr_is_refused_naming_the_argument():
    with pytest.raises(TypeError, match=r"^Adam\(\): a Tensor lr is not supported by dualgrad \(lr\); pass a float$"):
        dg.optim.Adam([dg.zeros(1, requires_grad=True)], lr=dg.tensor(0.1))


def test_lbfgs_unknown_line_search():
    w = dg.zeros(1, requires_grad=True)
    opt = dg.optim.LBFGS([w], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = ((w - 1) ** 2).sum()
        loss.backward()
        return loss

    with pytest.raises(RuntimeError, match="^only 'strong_wolfe' is supported$"):
        opt.step(closure)


# -- schedulers ---------------------------------------------------------------------------------------

def test_scheduler_state_dict_round_trip():
    opt = dg.optim.SGD([dg.zeros(1, requires_grad=True)], lr=1.0)
    sched = dg.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(3):
        opt.step()
        sched.step()
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 3 and state["base_lrs"] == [1.0]
    opt2 = dg.optim.SGD([dg.zeros(1, requires_grad=True)], lr=1.0)
    sched2 = dg.optim.lr_scheduler.StepLR(opt2, step_size=5)
    sched2.load_state_dict(state)
    assert sched2.step_size == 2 and sched2.last_epoch == 3 and sched2.get_last_lr() == [0.5]


def test_scheduler_step_before_optimizer_step_warns_as_torch():
    opt = dg.optim.SGD([dg.zeros(1, requires_grad=True)], lr=1.0)
    sched = dg.optim.lr_scheduler.StepLR(opt, step_size=1)
    with pytest.warns(UserWarning, match="Detected call of `lr_scheduler.step\\(\\)` before `optimizer.step\\(\\)`"):
        sched.step()
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


def test_scheduler_epoch_argument_uses_the_closed_form_with_torch_warning():
    opt = dg.optim.SGD([dg.zeros(1, requires_grad=True)], lr=1.0)
    sched = dg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(3)
    assert sched.get_last_lr() == [0.125]


def test_scheduler_errors():
    with pytest.raises(TypeError, match="^int is not an Optimizer$"):
        dg.optim.lr_scheduler.StepLR(3, step_size=1)
    opt = dg.optim.SGD([dg.zeros(1, requires_grad=True)], lr=1.0)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        dg.optim.lr_scheduler.StepLR(opt, step_size=1, last_epoch=3)
    with pytest.raises(ValueError, match="^Expected 1 lr_lambdas, but got 2$"):
        dg.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1, lambda e: 1])
    with pytest.raises(ValueError, match=r"^Factor should be < 1.0.$"):
        dg.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="^mode maximum is unknown!$"):
        dg.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="maximum")
    with pytest.raises(ValueError, match="^threshold mode relative is unknown!$"):
        dg.optim.lr_scheduler.ReduceLROnPlateau(opt, threshold_mode="relative")
    with pytest.raises(ValueError, match="^expected 1 min_lrs, got 2$"):
        dg.optim.lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1, 0.2])
