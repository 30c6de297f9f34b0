"""Test configuration: Hypothesis profiles (``ci`` keeps the suite fast on 2 cores), and fixtures that test
folders share."""

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=25, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
# ``ci`` by default, so the README's test command runs the whole suite in CI's time; ``dev`` and
# ``thorough`` draw more examples when asked for.
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state."""
    import dualgrad

    dualgrad.manual_seed(0)
    np.random.seed(0)


def pytest_collection_modifyitems(config, items):
    """With the fast paths off (``DUALGRAD_FASTPATH=0``), skip the tests that check that one is taken."""
    from dualgrad import fastpath

    if fastpath.ENABLED:
        return
    skip = pytest.mark.skip(reason="checks that a fast path is taken; DUALGRAD_FASTPATH=0 turns them off")
    for item in items:
        if item.get_closest_marker("fastpath") is not None:
            item.add_marker(skip)


@pytest.fixture
def no_safety_net():
    """``dualgrad.compile``'s safety net off (it compares the first replay of a trace with eager): the
    compile tests prove the replays exact on their own."""
    from dualgrad.compile import api

    api.SAFETY_NET[0] = False
    yield
    api.SAFETY_NET[0] = True


@pytest.fixture
def compile_warnings_are_errors():
    """A ``dualgrad.compile`` fallback to eager fails the test (for files whose every call must replay)."""
    from dualgrad.compile import CompileWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        yield


@pytest.fixture
def einsum_calls(monkeypatch):
    """The number of operands of every call that reaches ``np.einsum`` (NumPy's unoptimised loop)."""
    from dualgrad.ops import einsum as einsum_module

    calls = []
    real = np.einsum

    def spy(subscripts, *operands, **kwargs):
        calls.append(len(operands))
        return real(subscripts, *operands, **kwargs)

    monkeypatch.setattr(einsum_module.np, "einsum", spy)
    return calls
