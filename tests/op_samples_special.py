"""Samples of the ``dualgrad.special`` ops (``dualgrad/ops/elementwise/special.py``) for the op table tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from op_samples import Sample, _binary, _unary, array, sample, shapes

import dualgrad as dg

_unary("lgamma", dg.lgamma, 0.2, 4.0)
_unary("digamma", dg.digamma, 0.3, 4.0)
_unary("special_entr", dg.special.entr, 0.2, 2.0)
_unary("special_ndtr", dg.special.ndtr, -3.0, 3.0)
_unary("special_log_ndtr", dg.special.log_ndtr, -5.0, 5.0)
_unary("special_ndtri", dg.special.ndtri, 0.05, 0.95)
_unary("special_erfcx", dg.special.erfcx, -2.0, 5.0)
_unary("i0", dg.i0, -3.0, 3.0)
_unary("special_i1", dg.special.i1, -3.0, 3.0)
_unary("special_i0e", dg.special.i0e, -3.0, 3.0, away_from=0.0)  # (|x| has a kink at 0)
_unary("special_i1e", dg.special.i1e, -3.0, 3.0, away_from=0.0)
_binary("special_xlog1py", dg.special.xlog1py, -2.0, 2.0, -0.5, 2.0)


@sample("polygamma")
def _polygamma(draw: Any) -> Sample:
    n = draw(st.integers(0, 3))
    return Sample(lambda x: dg.polygamma(n, x), (array(draw, draw(shapes()), 0.3, 3.0),))


@sample("logit")
def _logit(draw: Any) -> Sample:
    eps = draw(st.sampled_from([None, 0.05]))
    return Sample(lambda x: dg.logit(x, eps), (array(draw, draw(shapes()), 0.1, 0.9),))


@sample("special_zeta")
def _zeta(draw: Any) -> Sample:  # differentiable in q only, as torch's
    s = draw(st.sampled_from([2.0, 3.5]))
    return Sample(lambda q: dg.special.zeta(s, q), (array(draw, draw(shapes()), 0.5, 3.0),))


def _incomplete_gamma(name: str, fn: Any) -> None:
    @sample(name)
    def draw_sample(draw: Any) -> Sample:  # differentiable in x only, as torch's
        shape = draw(shapes())
        a = dg.tensor(array(draw, shape, 0.5, 5.0))
        return Sample(lambda x: fn(a, x), (array(draw, shape, 0.2, 6.0),))


_incomplete_gamma("special_gammainc", dg.special.gammainc)
_incomplete_gamma("special_gammaincc", dg.special.gammaincc)
