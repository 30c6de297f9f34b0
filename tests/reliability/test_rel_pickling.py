"""Pickling and copying: data, dtype and ``requires_grad`` travel; the graph never does (as torch)."""

from __future__ import annotations

import copy
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dualgrad as dg

DTYPES = [np.float64, np.float32, np.complex128, np.int64, np.bool_]


@given(dtype=st.sampled_from(DTYPES), shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3),
       requires_grad=st.booleans(), data=st.data())
def test_round_trip_keeps_data_dtype_and_requires_grad(dtype, shape, requires_grad, data):
    values = data.draw(hnp.arrays(dtype, shape))
    requires_grad = requires_grad and np.dtype(dtype).kind in "fc"
    t = dg.tensor(values, requires_grad=requires_grad)
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype == t.dtype and back.shape == t.shape
    np.testing.assert_array_equal(back.detach().numpy(), values)
    assert back.requires_grad == requires_grad and back.is_leaf and back.grad is None


def test_non_leaf_unpickles_as_a_leaf_and_view_as_a_copy():
    x = dg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    back = pickle.loads(pickle.dumps(y))
    assert back.is_leaf and back.requires_grad and back.grad_fn is None
    back.sum().backward()
    np.testing.assert_array_equal(back.grad.numpy(), [1.0, 1.0, 1.0])
    assert x.grad is None  # the unpickled tensor is not connected to x
    view = dg.arange(6.0).reshape(2, 3).T
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(view)).numpy(), view.numpy())


def test_deepcopy_copies_leaves_with_their_grad():
    x = dg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    twin = copy.deepcopy(x)
    assert twin.requires_grad and twin.is_leaf
    np.testing.assert_array_equal(twin.grad.numpy(), [2.0, 4.0])
    twin.detach()[0] = 5.0
    twin.grad.detach()[0] = 7.0
    assert x.detach()[0].item() == 1.0 and x.grad[0].item() == 2.0  # nothing is shared
    pair = copy.deepcopy([x, x])
    assert pair[0] is pair[1]  # the memo is honoured


def test_deepcopy_of_a_non_leaf_raises_as_torch():
    """Regression: deepcopy of a computed tensor silently dropped its graph."""
    y = dg.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(y)
    assert copy.deepcopy(y.detach()).is_leaf


def _train_in_worker(payload: bytes) -> tuple:
    """Runs in a child process: differentiate the tensors it received."""
    w, x = pickle.loads(payload)
    loss = ((x @ w).tanh() ** 2).sum()
    loss.backward()
    (g,) = dg.grad((w ** 3).sum(), w, create_graph=True)
    (h,) = dg.grad(g.sum(), w)
    return w.grad, h


def test_tensors_through_a_process_pool():
    rng = np.random.default_rng(0)
    jobs = [(dg.tensor(rng.standard_normal((3, 2)), requires_grad=True),
             dg.tensor(rng.standard_normal((4, 3)))) for _ in range(4)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        results = list(pool.map(_train_in_worker, [pickle.dumps(job) for job in jobs]))
    for (w, x), (grad, hess) in zip(jobs, results, strict=True):
        assert w.grad is None  # the parent's tensors are untouched
        expected = _train_in_worker(pickle.dumps((w, x)))
        np.testing.assert_array_equal(grad.numpy(), expected[0].numpy())
        np.testing.assert_allclose(hess.numpy(), 6 * w.detach().numpy())
