"""Samples of the ops in ``dualgrad/ops/torch_names.py`` (imported at the end of ``op_samples.py``)."""

from __future__ import annotations

import warnings
from typing import Any

from hypothesis import strategies as st
from op_samples import COVERED_BY, Sample, array, sample, shapes

import dualgrad as dg


@sample("threshold")
def _threshold(draw: Any) -> Sample:
    return Sample(lambda x: dg.threshold(x, 0.5, -3.0), (array(draw, draw(shapes()), away_from=0.5),))


COVERED_BY["threshold_"] = "threshold"  # (the in-place overload: ThresholdBackward1)


@sample("fill_like")
def _fill(draw: Any) -> Sample:
    return Sample(lambda x, v: dg.fill(x * v, v), (array(draw, draw(shapes())), array(draw, ())))


@sample("frobenius_norm")
def _frobenius_norm(draw: Any) -> Sample:
    def call(x: dg.Tensor) -> dg.Tensor:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return dg.frobenius_norm(x, (0, 1), keepdim=True)

    return Sample(call, (array(draw, draw(shapes(min_dims=2)), away_from=0.0, gap=0.3),))


@sample("unsafe_split")
def _unsafe_split(draw: Any) -> Sample:
    shape = draw(shapes(min_dims=1))
    size = draw(st.integers(1, shape[0]))
    return Sample(lambda x: dg.unsafe_split(x, size), (array(draw, shape),))


@sample("unsafe_split_with_sizes")
def _unsafe_split_with_sizes(draw: Any) -> Sample:
    shape = draw(shapes(min_dims=1, min_side=2))
    first = draw(st.integers(1, shape[0] - 1))
    return Sample(lambda x: dg.unsafe_split_with_sizes(x, [first, shape[0] - first]), (array(draw, shape),))


# the ``*_copy`` functions on a (2, 3, 1) array, by the view op they copy
COPY_CALLS = {
    "reshape": lambda x: dg.view_copy(x, (3, 2)), "permute": lambda x: dg.permute_copy(x, (2, 0, 1)),
    "t": lambda x: dg.t_copy(x[:, :, 0]), "transpose": lambda x: dg.transpose_copy(x, 0, 1),
    "expand": lambda x: dg.expand_copy(x, (2, 3, 4)), "diagonal": lambda x: dg.diagonal_copy(x, 1),
    "getitem": lambda x: dg.select_copy(x, 1, -1), "squeeze": dg.squeeze_copy,
    "squeeze_dim": lambda x: dg.squeeze_copy(x, 2), "squeeze_dims": lambda x: dg.squeeze_copy(x, [2]),
    "unsqueeze": lambda x: dg.unsqueeze_copy(x, 0), "unbind": lambda x: dg.unbind_copy(x, 1),
    "split_even": lambda x: dg.split_copy(x, 2, 1), "split": lambda x: dg.split_with_sizes_copy(x, [1, 2], 1),
    "unfold": lambda x: dg.unfold_copy(x, 1, 2, 1), "view_as_real": lambda x: dg.view_as_real_copy(x + 1j * x),
    "view_as_complex": lambda x: dg.view_as_complex_copy(x * dg.tensor([1.0, -2.0])).real,
}


def _copy_sample(call: Any) -> Any:
    def draw_sample(draw: Any) -> Sample:
        return Sample(call, (array(draw, (2, 3, 1)),))

    return draw_sample


for _name, _call in COPY_CALLS.items():
    sample(f"copy_of_{_name}")(_copy_sample(_call))
