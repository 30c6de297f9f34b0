"""dg.utils.benchmark: Timer runs statements as torch's does, and Measurement prints as torch 2.13's
(pinned printouts, and torch's own Measurement on the same times when torch is installed)."""

from __future__ import annotations

import pytest

import dualgrad as dg
from dualgrad.utils.benchmark import Measurement, TaskSpec, Timer, select_unit

CASES = [
    ((100, [2e-4, 3e-4, 2.5e-4, 2.2e-4], ("f(x)", "pass"), {}),
     "f(x)\n  Median: 2.35 us\n  IQR:    0.48 us (2.15 to 2.63)\n"
     "  4 measurements, 100 runs per measurement, 1 thread\n"
     "  WARNING: Interquartile range is 20.2% of the median measurement.\n"
     "           This could indicate system fluctuation."),
    ((10, [2e-4, 3e-4, 2.5e-4, 2.2e-4, 9e-4, 2.1e-4, 2.05e-4], ("a\nb", "x = 1\ny = 2"),
      {"sub_label": "s", "description": "d", "num_threads": 4}),
     "stmt: (s)\n  a\n  b\n\nd\nsetup:\n  x = 1\n  y = 2\n\n  Median: 22.00 us\n  IQR:    6.75 us (20.75 to 27.50)\n"
     "  7 measurements, 10 runs per measurement, 4 threads\n"
     "  WARNING: Interquartile range is 30.7% of the median measurement.\n"
     "           This suggests significant environmental influence."),
    ((3, [2e-4, 3e-4], ("f", "pass"), {"label": "L"}),
     "L\n  Median: 83.33 us\n  2 measurements, 3 runs per measurement, 1 thread\n"
     "  WARNING: Interquartile range is 20.0% of the median measurement.\n"
     "           This could indicate system fluctuation."),
    ((1000, [8.5e-6], ("x * 2", "x = 3"), {"label": "lab", "sub_label": "sub", "description": "desc"}),
     "lab: sub\ndesc\nsetup: x = 3\n  8.50 ns\n  1 measurement, 1000 runs , 1 thread"),
]


def _body(measurement) -> str:
    """The printout without its first line (``<... Measurement object at 0x...>``)."""
    return repr(measurement).split("\n", 1)[1]


@pytest.mark.parametrize(("args", "expected"), CASES)
def test_measurement_prints_as_torch(args, expected):
    number, times, (stmt, setup), labels = args
    assert _body(Measurement(number, times, TaskSpec(stmt, setup, **labels))) == expected


@pytest.mark.parametrize(("args", "expected"), CASES)
def test_torch_prints_the_same(args, expected):
    common = pytest.importorskip("torch.utils.benchmark.utils.common")
    number, times, (stmt, setup), labels = args
    assert _body(common.Measurement(number, times, common.TaskSpec(stmt, setup, **labels))) == expected


def test_statistics():
    m = Measurement(10, [1.0, 2.0, 3.0, 4.0, 10.0], TaskSpec("f", "pass"))
    assert m.times == [0.1, 0.2, 0.3, 0.4, 1.0]
    assert m.median == pytest.approx(0.3) and m.mean == pytest.approx(0.4) and m.iqr == pytest.approx(0.2)
    assert not m.meets_confidence() and m.has_warnings and m.title == "f" and m.stmt == "f"
    merged = Measurement.merge([m, Measurement(1, [0.5], TaskSpec("f", "pass"))])
    assert len(merged) == 1 and merged[0].times == [0.1, 0.2, 0.3, 0.4, 1.0, 0.5]
    assert [select_unit(t)[0] for t in (3e-9, 3e-6, 3e-3, 3.0)] == ["ns", "us", "ms", "s"]


def test_timer_runs_the_statement_with_globals_and_setup():
    calls = []
    m = Timer("f()", setup="calls.append('setup')", globals={"f": lambda: calls.append(1), "calls": calls}).timeit(7)
    assert calls.count("setup") == 2 and calls.count(1) == 7 + 2  # the warm-up runs max(7 // 100, 2) times
    assert m.number_per_run == 7 and len(m.raw_times) == 1 and m.raw_times[0] > 0


def test_timer_ported_statements_see_dualgrad_as_torch():
    x = dg.ones(4, requires_grad=True)
    m = Timer(stmt="torch.autograd.grad((x * x).sum(), x)", globals={"x": x}, label="grad").timeit(5)
    assert _body(m).startswith("grad\n  ")


def test_autorange():
    t = Timer("x + 1", setup="x = 1")
    blocked = t.blocked_autorange(min_run_time=0.01)
    assert blocked.number_per_run >= 1 and sum(blocked.raw_times) >= 0.01
    seen = []
    adaptive = t.adaptive_autorange(max_run_time=0.05, callback=lambda n, s: seen.append(n))
    assert len(adaptive.raw_times) == len(seen) >= 1


def test_timer_errors():
    with pytest.raises(ValueError, match="Currently only a `str` stmt is supported."):
        Timer(stmt=lambda: None)
    with pytest.raises(ValueError, match="only Python statements are supported"):
        Timer("x", language="c++")


def _compare_specs():
    specs = []
    times = iter([3.1e-5, 2.2e-4, 7.7e-6, 1.9e-5, 4.4e-4, 6.0e-5, 2.5e-5, 8.1e-5])
    for threads in (1, 4):
        for row in ("a", "bb"):
            for column in ("x", "yyyyyy"):
                base = next(times)
                specs.append((10, [base * 10 * f for f in (1.0, 1.3, 0.9, 1.1, 1.02)], ("f", "pass"),
                              {"label": "L", "sub_label": row, "description": column, "num_threads": threads}))
    return specs


COMPARE_PLAIN = (
    "[------------ L ------------]\n"
    "          |    x    |  yyyyyy\n"
    "1 threads: ------------------\n"
    "      a   |   31.6  |  224.4\n"
    "      bb  |    7.9  |   19.4\n"
    "4 threads: ------------------\n"
    "      a   |  448.8  |   61.2\n"
    "      bb  |   25.5  |   82.6\n"
    "\n"
    "Times are in microseconds (us).\n")


def _compare(module, measurement, task_spec, setup):
    compare = module.Compare([measurement(n, t, task_spec(*a, **k)) for n, t, a, k in _compare_specs()])
    setup(compare)
    return str(compare)


@pytest.mark.parametrize("setup", [lambda c: None, lambda c: c.trim_significant_figures(),
                                   lambda c: (c.highlight_warnings(), c.trim_significant_figures()),
                                   lambda c: c.colorize(), lambda c: c.colorize(rowwise=True)])
def test_compare_prints_as_torch(setup):
    ours = _compare(dg.utils.benchmark, Measurement, TaskSpec, setup)
    assert ours.startswith("[") and "Times are in microseconds (us)." in ours
    common = pytest.importorskip("torch.utils.benchmark.utils.common")
    import torch.utils.benchmark as torch_benchmark

    assert ours == _compare(torch_benchmark, common.Measurement, common.TaskSpec, setup)


def test_compare_pinned_table():
    plain = _compare(dg.utils.benchmark, Measurement, TaskSpec, lambda c: None)
    assert "\n".join(line.rstrip() for line in plain.split("\n")) == COMPARE_PLAIN.rstrip("\n") + "\n"


def test_compare_refuses_other_objects():
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`, got <class 'int'> instead."):
        dg.utils.benchmark.Compare([1])
