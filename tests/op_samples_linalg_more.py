"""Samples of the ops of ``dualgrad.ops.linalg.matrix_functions`` (matrix_exp, solve_triangular)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from op_samples import COVERED_BY, Sample, _spread, _stack_shape, _well_conditioned, array, sample

import dualgrad as dg


@sample("linalg_matrix_exp")
def _linalg_matrix_exp(draw: Any) -> Sample:
    n = draw(st.integers(1, 4))
    scale = draw(st.sampled_from([0.5, 3.0]))  # 3: norms above theta_13, so some matrices are squared
    return Sample(dg.linalg.matrix_exp, (array(draw, _stack_shape(draw) + (n, n), -scale, scale),))


@sample("linalg_solve_triangular")
def _linalg_solve_triangular(draw: Any) -> Sample:
    n = draw(st.integers(1, 4))
    lead = _stack_shape(draw)
    upper, left, unit = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())
    k = draw(st.integers(1, 3))
    b_lead = draw(st.sampled_from([lead, lead[1:], (1,) * len(lead)]))
    b_shape = b_lead + ((n, k) if left else (k, n))

    def call(a: dg.Tensor, b: dg.Tensor) -> dg.Tensor:
        return dg.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)

    return Sample(call, (_well_conditioned(draw, lead + (n, n)), array(draw, b_shape)))


@sample("linalg_lu_factor")
def _linalg_lu_factor(draw: Any) -> Sample:
    # Rows well apart in their pivot column keep the pivot order fixed between nearby inputs.
    n = draw(st.integers(1, 4))
    lead = _stack_shape(draw)
    a = _well_conditioned(draw, lead + (n, n))[..., draw(st.permutations(range(n))), :]
    return Sample(lambda t: (dg.linalg.lu_factor(t).LU, dg.linalg.lu(t).P * t), (a,))


# a non-differentiable helper of lu_factor's rules and lu_unpack; the sample above batches it
COVERED_BY["lu_pivots_to_permutation"] = "linalg_lu_factor"
COVERED_BY["geqrf"] = "linalg_qr"  # not differentiable (raises, as torch's): tested in tests/linalg/test_householder.py


@sample("linalg_cholesky_ex")
def _linalg_cholesky_ex(draw: Any) -> Sample:
    n = draw(st.integers(1, 4))
    x = array(draw, _stack_shape(draw) + (n, n), -1.0, 1.0)
    return Sample(lambda t: dg.linalg.cholesky_ex(t @ t.mH + n * np.eye(n)).L, (x,))


@sample("linalg_eig")
def _linalg_eig(draw: Any) -> Sample:
    # Q diag(values) Q^{-1} with values well apart; eigenvectors have an arbitrary phase (LAPACK may flip
    # signs between nearby inputs): sample the phase-invariant functions of them.
    n = draw(st.integers(1, 4))
    lead = _stack_shape(draw)
    # (noise of at most 0.5 / n per entry keeps q diagonally dominant: invertible, well-conditioned)
    q = _well_conditioned(draw, lead + (n, n)) + array(draw, lead + (n, n), -0.5 / n, 0.5 / n)
    a = (q * _spread(draw, lead, n, low=-1.0)[..., None, :]) @ np.linalg.inv(q)

    def call(t: dg.Tensor) -> tuple:
        # LAPACK may also order equal-looking spectra differently between nearby inputs: order-invariant too
        values, vectors = dg.linalg.eig(t)
        weights = values * values
        mixed = (vectors * weights.unsqueeze(-2)) @ dg.linalg.inv(vectors)
        norms = ((vectors * vectors.conj()).real * values.real.unsqueeze(-2)).sum(-1)
        return dg.sort(values.real, -1).values, mixed.real, mixed.imag, norms

    return Sample(call, (a,))
