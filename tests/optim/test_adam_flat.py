"""Adam's flat step (all of a group's moments in one buffer each, the state entries being views) against
its parameter-by-parameter step: the same numbers bit for bit, in every configuration, across switches
between the two (a parameter without gradient, a ``load_state_dict``, a state entry replaced by hand)."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import fastpath

CONFIGS = [
    {"lr": 0.05},
    {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1, "betas": (0.8, 0.9)},
    {"lr": 0.01, "maximize": True, "eps": 1e-3},
    {"lr": 0.05, "weight_decay": 0.2, "decoupled_weight_decay": True},
    {"lr": 0.05, "amsgrad": True, "decoupled_weight_decay": True, "weight_decay": 0.01},
]


def _params(single: bool = False) -> list:
    rng = np.random.default_rng(3)
    real, complex_ = (dg.float32, dg.complex64) if single else (dg.float64, dg.complex128)
    return [dg.tensor(rng.standard_normal((3, 2)), dtype=real, requires_grad=True),
            dg.tensor(rng.standard_normal(4), dtype=real, requires_grad=True),
            dg.tensor(rng.standard_normal(2) + 1j * rng.standard_normal(2), dtype=complex_, requires_grad=True),
            dg.tensor(rng.standard_normal(()), dtype=real, requires_grad=True)]


def _loss(params: list, skip: int | None = None) -> dg.Tensor:
    a, b, z, c = params
    terms = [(dg.sin(a) * a).sum(), (b ** 3).sum() * 0.1, (z * z.conj() * (1 + z.real)).real.sum(), c ** 4]
    return sum(t for i, t in enumerate(terms) if i != skip)


def _train(config: dict, flat: bool, monkeypatch, disturb: str | None = None,
           single: bool = False) -> tuple[list, dict]:
    monkeypatch.setattr(fastpath, "ENABLED", flat)
    params = _params(single)
    opt = dg.optim.Adam(params, **config)
    for step in range(7):
        if disturb == "load" and step == 3:
            opt.load_state_dict(opt.state_dict())
        if disturb == "replace" and step == 4:
            opt.state[params[1]]["exp_avg"] = opt.state[params[1]]["exp_avg"].clone()
        opt.zero_grad()
        skip = 1 if disturb == "skip" and step in (2, 5) or disturb == "frozen" else None
        _loss(params, skip).backward()
        opt.step()
    state = opt.state_dict()["state"]
    return [p.tolist() for p in params], {i: {k: v.tolist() for k, v in s.items()} for i, s in state.items()}


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("disturb", [None, "skip", "frozen", "load", "replace"])
@pytest.mark.parametrize("single", [False, True])
def test_flat_step_equals_per_parameter_step(config, disturb, single, monkeypatch):
    """Bit for bit; "skip" leaves one parameter without gradient twice (unequal step counts after), "frozen"
    always (the flat buffers hold the other three)."""
    assert _train(config, True, monkeypatch, disturb, single) == _train(config, False, monkeypatch, disturb, single)


def test_flat_state_entries_are_live_views_with_torch_layout(monkeypatch):
    monkeypatch.setattr(fastpath, "ENABLED", True)
    params = _params()
    opt = dg.optim.Adam(params, lr=0.1, amsgrad=True)
    _loss(params).backward()
    opt.step()
    cache = opt._flat_cache[id(opt.param_groups[0])]
    for p in params:
        state = opt.state[p]
        assert sorted(state) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
        assert state["exp_avg"].shape == p.shape and state["exp_avg"].dtype == p.dtype
        assert float(state["step"]) == 1.0 and state["step"].shape == ()
        assert np.shares_memory(state["exp_avg"]._data, cache.m)
    # a user's in-place edit of a state entry is seen by the next flat step
    opt.state[params[0]]["exp_avg"].zero_()
    assert not cache.m[:6].any()


def test_each_parameter_keeps_its_step_count(monkeypatch):
    monkeypatch.setattr(fastpath, "ENABLED", True)
    params = _params()
    opt = dg.optim.Adam(params, lr=0.1)
    _loss(params).backward()
    opt.step()
    opt.state[params[0]]["step"] += 5  # torch lets a user edit the counters; each parameter keeps its own
    opt.step()
    assert [float(opt.state[p]["step"]) for p in params] == [7.0, 2.0, 2.0, 2.0]


def test_frozen_parameters_stay_out_of_the_flat_buffers(monkeypatch):
    monkeypatch.setattr(fastpath, "ENABLED", True)
    params = _params()
    opt = dg.optim.Adam(params, lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        _loss(params, skip=1).backward()
        opt.step()
    assert params[1] not in opt.state
    assert opt._flat_cache[id(opt.param_groups[0])].m.size == 6 + 4 + 1


def test_replaced_groups_release_their_buffers(monkeypatch):
    monkeypatch.setattr(fastpath, "ENABLED", True)
    params = _params()
    opt = dg.optim.Adam(params, lr=0.1)
    _loss(params).backward()
    opt.step()
    opt.load_state_dict(opt.state_dict())
    opt.step()
    assert list(opt._flat_cache) == [id(opt.param_groups[0])]
