"""Table-driven forward and reverse mode on complex inputs: every op of the table that takes complex numbers.

Each op's samples (``op_samples.SAMPLES``) are moved off the real line (``z = a + i b``, ``b`` small so
that the sample stays inside the op's domain) and the tangent along a complex direction is compared
with central differences of the function itself, along a real direction, an imaginary one and a
general complex one. A dropped imaginary part of a tangent (a rule that takes ``.real`` of it, or
casts it to a real dtype) shows as a mismatch along the imaginary direction. Reverse mode must agree
with the tangents (``Re <u, J v> == Re <J^H u, v>``). An op whose impl refuses
complex inputs is left out (its samples raise before any derivative is taken).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import as_outputs, directional_fd
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from op_samples import SAMPLES

import dualgrad as dg
from dualgrad import forward_ad as fwAD

SAMPLED = sorted(SAMPLES)
# Ops comparing complex numbers by NumPy's lexicographic order: where two operands' real parts tie
# (their samples do tie, to test the real ties), the imaginary parts decide, and a real perturbation
# jumps from one operand to the other: no derivative to compare there.
LEXICOGRAPHIC = {"maximum", "minimum", "fmax", "fmin"}


def _complex_tangents(call, arrays, directions) -> list[np.ndarray]:
    with fwAD.dual_level():
        duals = [fwAD.make_dual(dg.tensor(a), dg.tensor(v)) for a, v in zip(arrays, directions, strict=True)]
        outs = as_outputs(call(*duals))
        return [np.zeros(o.shape, o.dtype) if (t := fwAD.unpack_dual(o).tangent) is None else t.detach().numpy()
                for o in outs]


def _runs_on_complex(call, arrays) -> bool:
    """Whether ``call`` accepts the complex inputs at all (an op refusing them raises an error)."""
    try:
        with dg.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            as_outputs(call(*[dg.tensor(a) for a in arrays]))
    except (TypeError, RuntimeError, ValueError, NotImplementedError, np.exceptions.ComplexWarning):
        return False
    return True


@pytest.mark.parametrize("name", SAMPLED)
@settings(max_examples=8)
@given(data=st.data())
def test_complex_tangent_matches_finite_differences(name, data):
    sample = data.draw(SAMPLES[name], label="sample")
    if name in LEXICOGRAPHIC:
        assume(not np.any(np.equal(*np.broadcast_arrays(*sample.arrays))))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    points = [a + 0.05j * rng.standard_normal(np.shape(a)) if np.asarray(a).dtype.kind == "f" else a
              for a in sample.arrays]
    if not _runs_on_complex(sample.call, points):
        return
    real = [rng.standard_normal(np.shape(a)) + 0j for a in points]
    imaginary = [1j * rng.standard_normal(np.shape(a)) for a in points]
    general = [r + i for r, i in zip(real, imaginary, strict=True)]
    for label, directions in (("real", real), ("imaginary", imaginary), ("complex", general)):
        got = _complex_tangents(sample.call, points, directions)
        want = directional_fd(sample.call, points, directions)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape, f"{name}: tangent shape"
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=f"{name}: J v along a {label} direction")
    # reverse mode agrees (conjugate Wirtinger: Re <u, J v> == Re <vjp(u), v>)
    tangents = _complex_tangents(sample.call, points, general)
    cotangents = [rng.standard_normal(t.shape) + (1j * rng.standard_normal(t.shape) if t.dtype.kind == "c" else 0)
                  for t in tangents]
    leaves = [dg.tensor(p, requires_grad=True) for p in points]
    outs = as_outputs(sample.call(*leaves))
    grads = dg.grad(outs, leaves, [dg.tensor(u) for u in cotangents], allow_unused=True, materialize_grads=True)
    forward = sum(np.vdot(u, t).real for u, t in zip(cotangents, tangents, strict=True))
    reverse = sum(np.vdot(g.numpy(), v).real for g, v in zip(grads, general, strict=True))
    np.testing.assert_allclose(reverse, forward, rtol=1e-8, atol=1e-10, err_msg=f"{name}: <u, J v> vs <J^H u, v>")
