"""``linalg.lstsq`` on batches, as torch's: ``a`` of shape ``(*, M, N)``, ``b`` a batch of matrices ``(*, M, K)``
or of vectors ``(*, M)``, and torch's ``driver`` names.

Each batched result equals the single-matrix one (checked against NumPy in test_linalg.py) matrix by matrix;
derivatives are checked against finite differences in both modes.
"""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.ops.linalg.decompositions import LinAlgError

RNG = np.random.default_rng(5)
SHAPES = [((3, 5, 2), (3, 5, 4)), ((3, 5, 2), (3, 5)), ((2, 1, 4, 3), (1, 3, 4, 2)), ((2, 2, 4), (2, 2, 1)),
          ((3, 4, 4), (3, 4))]


@pytest.mark.parametrize(("a_shape", "b_shape"), SHAPES)
def test_each_matrix_of_a_batch_is_solved_as_alone(a_shape, b_shape):
    a, b = RNG.standard_normal(a_shape), RNG.standard_normal(b_shape)
    got = dg.linalg.lstsq(dg.tensor(a), dg.tensor(b))
    vector = len(b_shape) == len(a_shape) - 1
    batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-1] if vector else b_shape[:-2])
    a_all = np.broadcast_to(a, batch + a_shape[-2:])
    b_all = np.broadcast_to(b, batch + b_shape[-1:] if vector else batch + b_shape[-2:])
    # (rank and singular values have a's batch dims, as torch's: broadcast them to compare)
    rank, values = np.broadcast_to(got.rank.numpy(), batch), np.broadcast_to(got.singular_values.numpy(),
                                                                             batch + got.singular_values.shape[-1:])
    for index in np.ndindex(*batch):
        alone = dg.linalg.lstsq(dg.tensor(a_all[index]), dg.tensor(b_all[index]))
        np.testing.assert_allclose(got.solution.numpy()[index], alone.solution.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(rank[index], alone.rank.numpy())
        np.testing.assert_allclose(values[index], alone.singular_values.numpy(), rtol=1e-12)
        if a_shape[-2] > a_shape[-1]:
            np.testing.assert_allclose(got.residuals.numpy()[index], alone.residuals.numpy(), rtol=1e-10, atol=1e-12)
    if a_shape[-2] <= a_shape[-1]:
        assert got.residuals.shape == (0,)
    else:
        assert got.residuals.shape == batch + ((1,) if vector else b_shape[-1:])


def test_shapes_follow_torch():
    """Shapes torch 2.13 gives with ``driver='gelsd'`` (the driver that fills in every result)."""
    got = dg.linalg.lstsq(dg.ones(3, 4, 2), dg.ones(3, 4))
    assert (got.solution.shape, got.residuals.shape, got.rank.shape, got.singular_values.shape) == (
        (3, 2), (3, 1), (3,), (3, 2))
    assert dg.linalg.lstsq(dg.ones(4, 2), dg.ones(4)).residuals.shape == (1,)


@pytest.mark.parametrize(("a_shape", "b_shape"), SHAPES[:3])
def test_derivatives_of_a_batch_match_finite_differences_in_both_modes(a_shape, b_shape):
    a = dg.tensor(RNG.standard_normal(a_shape), requires_grad=True)
    b = dg.tensor(RNG.standard_normal(b_shape), requires_grad=True)

    def solution_and_residuals(a, b):
        result = dg.linalg.lstsq(a, b)
        return result.solution, result.residuals

    assert dg.autograd.gradcheck(solution_and_residuals, (a, b), check_forward_ad=True)


def test_vmap_of_the_single_matrix_call_equals_the_batched_call():
    a, b = RNG.standard_normal((4, 5, 3)), RNG.standard_normal((4, 5))
    mapped = dg.vmap(lambda a, b: dg.linalg.lstsq(a, b).solution)(dg.tensor(a), dg.tensor(b))
    np.testing.assert_allclose(mapped.numpy(), dg.linalg.lstsq(dg.tensor(a), dg.tensor(b)).solution.numpy(),
                               rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_every_torch_driver_gives_the_svd_solution(driver):
    a, b = RNG.standard_normal((2, 6, 3)), RNG.standard_normal((2, 6, 2))
    got = dg.linalg.lstsq(dg.tensor(a), dg.tensor(b), driver=driver)
    np.testing.assert_allclose(got.solution.numpy(), np.linalg.pinv(a) @ b, rtol=1e-10, atol=1e-12)


def test_an_unknown_driver_is_torchs_error():
    with pytest.raises(RuntimeError, match=r"parameter `driver` should be one of \(gels, gelsy, gelsd, gelss\)"):
        dg.linalg.lstsq(dg.ones(3, 2), dg.ones(3), driver="qr")


@pytest.mark.parametrize(("a_shape", "b_shape"), [((3, 4, 2), (4, 1)), ((3, 4, 2), (3, 5)), ((4,), (4,)),
                                                  ((2, 4, 2), (2, 1, 4, 1))])
def test_shapes_torch_refuses_raise_naming_them(a_shape, b_shape):
    with pytest.raises(LinAlgError, match=rf"lstsq: .*got shapes {a_shape} and {b_shape}".replace("(", r"\(")
                       .replace(")", r"\)")):
        dg.linalg.lstsq(dg.ones(*a_shape), dg.ones(*b_shape))
