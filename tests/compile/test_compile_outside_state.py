"""dualgrad.compile and state outside dualgrad: random generators it does not see, defaults changed in place.

A number drawn from NumPy's or Python's generators during the trace becomes a constant of the replay: the
next call would repeat it. The safety net (one replay compared with eager) misses it when the caller
re-seeds before each of the first calls, so the trace itself refuses such calls.
"""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.compile import CompileError, CompileWarning

pytestmark = pytest.mark.usefixtures("no_safety_net")


LOCAL_GENERATOR = np.random.default_rng(0)
LOCAL_RANDOM = random.Random(0)
DRAWS = [
    (lambda x: x * np.random.rand(), np.random.seed, "NumPy's global random generator"),
    (lambda x: x * random.random(), random.seed, "Python's random module"),
    (lambda x: x * LOCAL_GENERATOR.random(), lambda s: LOCAL_GENERATOR.bit_generator.__init__(s),
     "the random generator global 'LOCAL_GENERATOR'"),
    (lambda x: x * LOCAL_RANDOM.random(), LOCAL_RANDOM.seed, "the random generator global 'LOCAL_RANDOM'"),
]


@pytest.mark.parametrize(("fn", "seed", "source"), DRAWS, ids=["np.random", "random", "Generator", "Random"])
def test_a_draw_from_a_generator_outside_dualgrad_runs_eagerly(fn, seed, source):
    compiled = dg.compile(fn)
    x = dg.tensor([1.0, 2.0])
    with pytest.warns(CompileWarning, match=f"draws random numbers from {source}"):
        seed(0)
        compiled(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning only
        for s in (0, 0, 1, 2):
            seed(s)
            got = compiled(x)
            seed(s)
            np.testing.assert_array_equal(got.numpy(), fn(x).numpy())


def test_a_draw_from_a_generator_outside_dualgrad_raises_with_fullgraph():
    compiled = dg.compile(lambda x: x * np.random.rand(), fullgraph=True)
    with pytest.raises(CompileError, match=r"draws random numbers from NumPy's global random generator \(np\.random"):
        compiled(dg.tensor([1.0]))


def test_a_generator_the_function_only_holds_does_not_stop_the_trace():
    generator = np.random.default_rng(0)
    scale = generator.random()

    def f(x):
        return x * scale if generator is not None else x

    compiled = dg.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(dg.tensor([1.0]))
        np.testing.assert_array_equal(compiled(dg.tensor([3.0])).numpy(), [3.0 * scale])
    assert compiled.traces == 1


def test_a_list_in_the_defaults_changed_in_place_retraces():
    def f(x, k=[1.0]):  # noqa: B006 - the mutable default is the point
        return x * k[0]

    compiled = dg.compile(f)
    x = dg.tensor([1.0, 2.0])
    np.testing.assert_array_equal(compiled(x).numpy(), [1.0, 2.0])
    f.__defaults__[0][0] = 8.0
    np.testing.assert_array_equal(compiled(x).numpy(), [8.0, 16.0])
    assert compiled.traces == 2
    assert "defaults of" in compiled.explain()
