"""dualgrad.compile of a training step: backward() into the parameters' .grad, in-place updates under no_grad,
an optimizer's zero_grad() and step(). After several steps, parameters, .grad and optimizer state equal an
eager run's bit for bit; a closed-over tensor changed between calls makes the call retrace.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dualgrad as dg
from dualgrad.compile import CompileWarning, api


@pytest.fixture(autouse=True, params=[False, True], ids=["exact", "safety_net"])
def _safety_net(request):
    """Without the safety net the replays must be exact on their own; with it (the default), a replay with
    effects must not also run eagerly (the step would be taken twice)."""
    api.SAFETY_NET[0] = request.param
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        yield
    api.SAFETY_NET[0] = True


def data(seed=0):
    rng = np.random.default_rng(seed)
    return (dg.tensor(rng.standard_normal((6, 3))), dg.tensor(rng.standard_normal((6, 2))),
            rng.standard_normal((2, 3)), rng.standard_normal(2))


def model(w0, b0):
    m = dg.nn.Sequential(dg.nn.Linear(3, 2), dg.nn.Tanh())
    with dg.no_grad():
        m[0].weight.copy_(dg.tensor(w0))
        m[0].bias.copy_(dg.tensor(b0))
    return m


OPTIMIZERS = {
    "sgd": lambda ps: dg.optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: dg.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    "adam": lambda ps: dg.optim.Adam(ps, lr=0.05),
    "adamw_amsgrad": lambda ps: dg.optim.AdamW(ps, lr=0.05, amsgrad=True),
    "rmsprop": lambda ps: dg.optim.RMSprop(ps, lr=0.01, momentum=0.5),
}


def train(make_optimizer, compiled, steps, set_to_none=True, seed=0):
    x, y, w0, b0 = data(seed)
    m = model(w0, b0)
    opt = make_optimizer(list(m.parameters()))

    def step(x, y):
        opt.zero_grad(set_to_none=set_to_none)
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.detach()
    f = dg.compile(step) if compiled else step
    losses = [f(x, y) for _ in range(steps)]
    return losses, m, opt, f


def assert_state_equal(a, b):
    if isinstance(a, dg.Tensor):
        assert isinstance(b, dg.Tensor) and np.array_equal(a._data, b._data) and a.dtype == b.dtype
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_state_equal(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for u, v in zip(a, b, strict=True):
            assert_state_equal(u, v)
    else:
        assert a == b


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_step_replays_like_eager(name):
    got_losses, got_model, got_opt, f = train(OPTIMIZERS[name], True, 6)
    want_losses, want_model, want_opt, _ = train(OPTIMIZERS[name], False, 6)
    assert [t.item() for t in got_losses] == [t.item() for t in want_losses]
    for p, q in zip(got_model.parameters(), want_model.parameters(), strict=True):
        assert np.array_equal(p._data, q._data)
        assert np.array_equal(p.grad._data, q.grad._data)
        assert p._version == q._version
    assert_state_equal(got_opt.state_dict(), want_opt.state_dict())
    assert f.traces == 2  # (.grad None before the first call, a tensor before the others)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_zero_grad_to_zeros_accumulates_into_the_existing_grad_in_the_replay(name):
    got_losses, got_model, got_opt, f = train(OPTIMIZERS[name], True, 5, set_to_none=False)
    want_losses, want_model, want_opt, _ = train(OPTIMIZERS[name], False, 5, set_to_none=False)
    assert [t.item() for t in got_losses] == [t.item() for t in want_losses]
    for p, q in zip(got_model.parameters(), want_model.parameters(), strict=True):
        assert np.array_equal(p._data, q._data) and np.array_equal(p.grad._data, q.grad._data)
        assert p._version == q._version and p.grad._version == q.grad._version
    assert_state_equal(got_opt.state_dict(), want_opt.state_dict())
    assert f.traces == 2 and "eager" not in f.explain()  # (.grad None, then the same .grad accumulated into)


def test_second_step_without_zero_grad_accumulates_in_the_replay():
    def run(compiled, steps=4):
        x, y, w0, b0 = data()
        m = model(w0, b0)
        opt = dg.optim.SGD(m.parameters(), lr=0.05)

        def step(x, y):
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()  # (no zero_grad: .grad sums every step's gradient, as eagerly)
            opt.step()
            return loss.detach()
        f = dg.compile(step) if compiled else step
        return [f(x, y).item() for _ in range(steps)], m, f
    got, got_model, f = run(True)
    want, want_model, _ = run(False)
    assert got == want
    for p, q in zip(got_model.parameters(), want_model.parameters(), strict=True):
        assert np.array_equal(p._data, q._data) and np.array_equal(p.grad._data, q.grad._data)
    assert f.traces == 2 and "eager" not in f.explain()


def test_accumulated_grad_replaced_between_calls_retraces():
    w = dg.tensor([1.0, 2.0], requires_grad=True)

    def step(x):
        (w * x).sum().backward()
        with dg.no_grad():
            return w.grad * 1.0
    f = dg.compile(step)
    x = dg.tensor([1.0, 3.0])
    f(x)
    assert f(x).tolist() == [2.0, 6.0]
    assert f(x).tolist() == [3.0, 9.0]  # (replayed: accumulated into the same .grad)
    w.grad = dg.tensor([10.0, 10.0])  # (another tensor: the trace read and wrote the old one)
    assert f(x).tolist() == [11.0, 13.0]
    assert "another tensor now" in f.explain()
    w.grad.zero_()  # (changed in place between calls: retraced)
    assert f(x).tolist() == [1.0, 3.0]


def manual_sgd(compiled, steps, lr=0.1):
    x, y, w0, _ = data()
    w = dg.tensor(w0.T.copy(), requires_grad=True)

    def step(x, y):
        loss = ((x @ w - y) ** 2).sum()
        loss.backward()
        with dg.no_grad():
            w.sub_(lr * w.grad)
        w.grad = None
        return loss.detach()
    f = dg.compile(step) if compiled else step
    return [f(x, y).item() for _ in range(steps)], w, f


def test_manual_sgd_replays_in_place_updates():
    got, w, f = manual_sgd(True, 5)
    want, w_eager, _ = manual_sgd(False, 5)
    assert got == want and np.array_equal(w._data, w_eager._data) and w._version == w_eager._version
    assert w.grad is None and f.traces == 1
    assert "in-place write" in f.source() and "set .grad" in f.source()


def test_learning_rate_changed_between_calls_is_read_live():
    x, y, w0, b0 = data()
    results = []
    for compiled in (True, False):
        m = model(w0, b0)
        opt = dg.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            ((m(x) - y) ** 2).mean().backward()
            opt.step()
        f = dg.compile(step) if compiled else step
        for lr in (0.1, 0.1, 0.01, 0.5):
            opt.param_groups[0]["lr"] = lr
            f(x, y)
        results.append(m[0].weight._data.copy())
    assert np.array_equal(*results)


def test_closed_over_parameter_mutated_between_calls_retraces():
    got, w, f = manual_sgd(True, 2)
    with dg.no_grad():
        w.mul_(0.5)  # (outside the compiled step: its version guard fails)
    x, y, _, _ = data()
    loss = f(x, y)
    assert "changed in place" in f.explain() and f.traces == 2
    want, w_eager, _ = manual_sgd(False, 2)
    with dg.no_grad():
        w_eager.mul_(0.5)
    assert loss.item() == ((x @ w_eager - y) ** 2).sum().item()


def test_grad_set_outside_between_calls_retraces():
    x, y, w0, b0 = data()
    m = model(w0, b0)
    opt = dg.optim.SGD(m.parameters(), lr=0.1)

    def step(x, y):
        ((m(x) - y) ** 2).mean().backward()
        opt.step()
    f = dg.compile(step)
    f(x, y)
    opt.zero_grad()
    f(x, y)  # (.grad None again: the first trace replays)
    assert f.traces == 1
    w_before = [p._data.copy() for p in m.parameters()]
    g_before = [p.grad._data.copy() for p in m.parameters()]
    f(x, y)  # (.grad kept: backward accumulates into it, a second trace)
    assert f.traces == 2 and "is not None now" in f.explain()
    grads = [p.grad._data for p in m.parameters()]
    assert not any(np.array_equal(a, b) for a, b in zip(grads, g_before))
    assert not any(np.array_equal(p._data, b) for p, b in zip(m.parameters(), w_before))


@settings(max_examples=10, deadline=None)
@given(name=st.sampled_from(sorted(OPTIMIZERS)), steps=st.integers(1, 5), seed=st.integers(0, 100))
def test_random_training_runs_equal_eager(name, steps, seed):
    got_losses, got_model, got_opt, _ = train(OPTIMIZERS[name], True, steps, seed=seed)
    want_losses, want_model, want_opt, _ = train(OPTIMIZERS[name], False, steps, seed=seed)
    assert [t.item() for t in got_losses] == [t.item() for t in want_losses]
    for p, q in zip(got_model.parameters(), want_model.parameters(), strict=True):
        assert np.array_equal(p._data, q._data)
    assert_state_equal(got_opt.state_dict(), want_opt.state_dict())


def test_a_decision_on_grad_presence_is_guarded():
    w = dg.tensor([1.0, 2.0], requires_grad=True)
    f = lambda x: x * (2.0 if w.grad is None else 3.0)  # noqa: E731
    c = dg.compile(f)
    x = dg.tensor([1.0, 1.0])
    assert c(x).tolist() == [2.0, 2.0]
    w.grad = dg.tensor([0.0, 0.0])
    assert c(x).tolist() == [3.0, 3.0] and "is not None now" in c.explain()


def test_reading_grad_of_an_argument_runs_eagerly():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    c = dg.compile(lambda x: x.detach() * (2.0 if x.grad is None else 3.0))
    with dg.no_grad(), pytest.warns(CompileWarning, match=r"reads \.grad of an argument"):
        assert c(x).tolist() == [2.0, 4.0]
    x.grad = dg.tensor([0.0, 0.0])
    with dg.no_grad():
        assert c(x).tolist() == [3.0, 6.0]


def test_lbfgs_step_with_a_closure_runs_eagerly_naming_why():
    def run(compiled):
        rng = np.random.default_rng(0)
        x, y = dg.tensor(rng.standard_normal((8, 3))), dg.tensor(rng.standard_normal((8, 1)))
        w = dg.tensor(np.zeros((3, 1)), requires_grad=True)
        opt = dg.optim.LBFGS([w], lr=1, max_iter=5)

        def step(x, y):
            def closure():
                opt.zero_grad()
                loss = ((x @ w - y) ** 2).mean()
                loss.backward()
                return loss
            return opt.step(closure).detach()
        f = dg.compile(step) if compiled else step
        return [f(x, y).item() for _ in range(3)], w, f
    with pytest.warns(CompileWarning, match=r"LBFGS.step\(closure\) cannot be replayed: it calls the closure a "
                                            "number of times that depends on the loss values"):
        got, got_w, f = run(True)
    want, want_w, _ = run(False)
    assert got == want and np.array_equal(got_w._data, want_w._data)


def test_other_optimizer_step_with_a_closure_names_the_closure():
    x, y, w0, b0 = data()
    m = model(w0, b0)
    opt = dg.optim.SGD(m.parameters(), lr=0.1)

    def step(x, y):
        def closure():
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            return loss
        return opt.step(closure).detach()
    with pytest.warns(CompileWarning, match=r"SGD.step\(closure\): a replay would call the closure object"):
        dg.compile(step)(x, y)
