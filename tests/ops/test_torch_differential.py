"""Differential tests against torch 2.13: every op of ``torch_differential_specs`` and random chains of ops, run in
both libraries and compared in every mode (values with shape and dtype, reverse-mode gradients, forward-mode
tangents, second order by reverse over reverse and by forward over reverse, ``vmap`` against a loop over the batch).

Runs only where torch is installed (not in CI): the bugs it found have torch-free regression tests in
``test_regressions_differential.py``. The quick tests draw 2 cases per op and dtype (contiguous inputs, then
transposed or strided views) and 40 chains; the ``slow`` sweeps draw many more.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch_differential import compare_case  # noqa: E402 - after the importorskip
from torch_differential_chains import chain_case  # noqa: E402
from torch_differential_specs import SPECS  # noqa: E402

import dualgrad as dg  # noqa: E402

# Cases where the libraries differ on purpose or dualgrad lacks the function: the reason, and the modes that
# are still compared (an empty tuple: the case is not run).
KNOWN = {
    "mode": ("dualgrad's mode reads values in Python: not supported inside vmap (it raises)",
             ("value", "grad", "jvp", "grad2", "fwd_over_rev")),
    "masked_fill_ on view": ("t_ changes a shape in place: dualgrad raises inside vmap",
                             ("value", "grad", "jvp", "grad2", "fwd_over_rev")),
}


def case_rng(name: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(name.encode()), seed])


def layouts_for(arrays: list, seed: int) -> list:
    """Contiguous leaves for even seeds; for odd ones, leaves stored transposed (2-d and up) or every second
    element of a larger array (1-d), so that the op sees non-contiguous views."""
    if seed % 2 == 0:
        return []
    return [("T" if a.ndim >= 2 else "S") if a.ndim >= 1 else "C" for a in arrays]


def run_op(name: str, seeds: range) -> int:
    failures, count = [], 0
    for seed in seeds:
        for dtype in (np.float64, np.float32):
            case = SPECS[name](case_rng(name, seed))
            if name in KNOWN:
                case.modes = [m for m in case.modes if m in KNOWN[name][1]]
            case.layouts = layouts_for(case.arrays, seed)
            problems = compare_case(torch, case, dtype, seed)
            count += 1
            if problems:
                shapes = [a.shape for a in case.arrays]
                failures.append(f"{name} seed={seed} {np.dtype(dtype).name} shapes={shapes} layouts={case.layouts}:"
                                + "".join(f"\n  {p}" for p in problems))
    assert not failures, "\n".join(failures)
    return count


RUNNABLE = sorted(name for name in SPECS if name not in KNOWN or KNOWN[name][1])


@pytest.mark.parametrize("name", RUNNABLE)
def test_op_matches_torch(name):
    run_op(name, range(2))


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNNABLE)
def test_op_matches_torch_sweep(name):
    run_op(name, range(2, 24))


def run_chains(seeds: range) -> None:
    failures = []
    for seed in seeds:
        case = chain_case(np.random.default_rng([7, seed]))
        for dtype in (np.float64, np.float32):
            problems = compare_case(torch, case, dtype, seed)
            if problems:
                failures.append(f"chain seed={seed} {np.dtype(dtype).name} {case.fn.__name__} "
                                f"shapes={[a.shape for a in case.arrays]}:" + "".join(f"\n  {p}" for p in problems))
    assert not failures, "\n".join(failures)


def test_chains_of_ops_match_torch():
    run_chains(range(40))


@pytest.mark.slow
def test_chains_of_ops_match_torch_sweep():
    run_chains(range(40, 1000))


def test_the_known_differences_are_still_there():
    """A known difference that went away is a list entry to remove (and the op to compare in every mode)."""
    x = dg.tensor([[1.0, 2.0, 2.0], [3.0, 3.0, 1.0]])
    with pytest.raises(RuntimeError, match="cannot read the values of a batched tensor"):
        dg.vmap(lambda row: dg.mode(row).values)(x)
    assert set(KNOWN) == {"mode", "masked_fill_ on view"}
