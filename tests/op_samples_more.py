"""Samples of the ops in ``dualgrad/ops/shape/views.py`` (imported at the end of ``op_samples.py``)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from op_samples import COVERED_BY, Sample, array, sample, shapes

import dualgrad as dg


@sample("view_as_real")
def _view_as_real(draw: Any) -> Sample:
    shape = draw(shapes())
    return Sample(lambda x, y: dg.view_as_real(x + y * 1j), (array(draw, shape), array(draw, shape)))


@sample("view_as_complex")
def _view_as_complex(draw: Any) -> Sample:
    shape = draw(shapes(max_dims=2)) + (2,)

    def call(x: dg.Tensor) -> tuple:
        z = dg.view_as_complex(x)
        return z.real, z.imag

    return Sample(call, (array(draw, shape),))


@sample("unfold")
def _unfold(draw: Any) -> Sample:
    shape = draw(shapes(min_dims=1))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    size = draw(st.integers(1, shape[dim]))
    step = draw(st.integers(1, 3))
    return Sample(lambda x: x.unfold(dim, size, step), (array(draw, shape),))


COVERED_BY["isin"] = "eq"  # not differentiable; its vmap rule is tested in test_more_ops.py
# not differentiable; their vmap (the elementwise family rule) is tested in test_more_ops.py
for _name in ("gcd", "lcm", "frexp_exponent"):
    COVERED_BY[_name] = "eq"
