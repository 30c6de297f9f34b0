"""``nn.init.trunc_normal_``: torch's inverse-CDF method (the draws come from dualgrad's generator, so they
differ from torch's for one seed; the distribution is checked against the truncated normal's moments)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import nn


def _truncated_moments(mean: float, std: float, a: float, b: float) -> tuple[float, float]:
    alpha, beta = (a - mean) / std, (b - mean) / std
    pdf = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    m = mean + std * (pdf(alpha) - pdf(beta)) / z
    var = std ** 2 * (1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - ((pdf(alpha) - pdf(beta)) / z) ** 2)
    return m, math.sqrt(var)


@pytest.mark.parametrize(("mean", "std", "a", "b"), [(0.0, 1.0, -2.0, 2.0), (0.5, 0.02, 0.48, 0.6),
                                                     (1.0, 2.0, -1.0, 0.0)])
def test_draws_lie_in_bounds_with_the_truncated_moments(mean, std, a, b):
    dg.manual_seed(3)
    w = nn.init.trunc_normal_(dg.empty(200, 500), mean, std, a, b)
    data = w.numpy()
    assert data.min() >= a and data.max() <= b
    want_mean, want_std = _truncated_moments(mean, std, a, b)
    np.testing.assert_allclose(data.mean(), want_mean, atol=4 * want_std / math.sqrt(data.size))
    np.testing.assert_allclose(data.std(), want_std, rtol=0.02)


def test_same_seed_same_draws_and_dtype_kept():
    dg.manual_seed(1)
    w1 = nn.init.trunc_normal_(dg.empty(5, dtype=dg.float32))
    dg.manual_seed(1)
    w2 = nn.init.trunc_normal_(dg.empty(5, dtype=dg.float32))
    assert w1.dtype == dg.float32 and w1.tolist() == w2.tolist()


def test_parameter_stays_a_leaf_without_graph():
    lin = nn.Linear(3, 4)
    out = nn.init.trunc_normal_(lin.weight, std=0.02)
    assert out is lin.weight and lin.weight.is_leaf and lin.weight.grad_fn is None


def test_far_mean_warns_as_torch():
    with pytest.warns(UserWarning) as record:
        nn.init.trunc_normal_(dg.empty(3), mean=5.0, std=1.0, a=-2.0, b=2.0)
    assert str(record[0].message) == ("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                                      "distribution of values may be incorrect.")
