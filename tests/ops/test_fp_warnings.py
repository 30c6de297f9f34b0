"""Floating-point edge cases: ``log(0)``, ``1 / 0``, ``0 / 0``, overflow and the gradients at domain
edges give torch's inf/nan; NumPy's error state is the program's, which dualgrad never changes
(a warning comes as NumPy gives it, and ``np.errstate`` silences or raises it)."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

import dualgrad as dg

CASES = [
    ("log(0)", lambda x: dg.log(x * 0), -math.inf),
    ("1/0", lambda x: 1 / (x * 0), math.inf),
    ("0/0", lambda x: (x * 0) / (x * 0), math.nan),
    ("exp overflow", lambda x: dg.exp(x * 1000), math.inf),
    ("sqrt(-1)", lambda x: dg.sqrt(-x), math.nan),
    ("inf - inf", lambda x: dg.exp(x * 1000) - dg.exp(x * 1000), math.nan),
    ("float32 cast overflow", lambda x: (x * 1e300).float().double(), math.inf),
]
SILENT = {"divide": "ignore", "over": "ignore", "invalid": "ignore"}


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@pytest.mark.parametrize("name, fn, expected", CASES, ids=[c[0] for c in CASES])
def test_op_at_a_domain_edge_gives_torchs_value_and_errstate_silences_it(name, fn, expected):
    with warnings.catch_warnings(), np.errstate(**SILENT):
        warnings.simplefilter("error")
        x = dg.tensor(1., requires_grad=True)
        y = fn(x)
        dg.grad(y, x)
    assert _same(y.item(), expected)


@pytest.mark.parametrize("fn", [dg.sqrt, dg.log, lambda x: x ** 0.5], ids=["sqrt", "log", "pow"])
def test_gradient_at_zero_is_inf_and_errstate_silences_it(fn):
    with warnings.catch_warnings(), np.errstate(**SILENT):
        warnings.simplefilter("error")
        zero = dg.tensor(0., requires_grad=True)
        assert dg.grad(fn(zero), zero)[0].item() == math.inf


def test_errstate_raise_reaches_the_op():
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        dg.log(dg.tensor(0.))


def test_numpy_error_state_is_left_as_the_program_set_it():
    """Importing and using dualgrad, in the main thread and a new one, leaves ``np.geterr()`` as it was."""
    script = (
        "import threading, numpy as np\n"
        "before = np.geterr()\n"
        "import dualgrad as dg\n"
        "dg.log(dg.tensor([0., 1.], requires_grad=True)).sum().backward()\n"
        "seen = [np.geterr()]\n"
        "thread = threading.Thread(target=lambda: (dg.tensor(1.) * 2, seen.append(np.geterr())))\n"
        "thread.start(); thread.join()\n"
        "assert seen == [before, before], (before, seen)\n"
    )
    result = subprocess.run([sys.executable, "-W", "ignore", "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
