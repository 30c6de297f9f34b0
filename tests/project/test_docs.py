"""The documentation stays true: every public name is in the API reference, the
``>>>`` examples of the pages run as doctests, and the worked examples run (at
small sizes, ``DUALGRAD_EXAMPLES_SMALL=1``) and reach their stated accuracy."""

from __future__ import annotations

import doctest
import importlib
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import dualgrad as dg

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# Modules whose public names (``__all__``) the reference documents, besides ``dualgrad`` itself.
SUBMODULES = ("autograd", "forward_ad", "functional", "func", "graph", "profiler", "testing", "linalg",
              "fft", "scipy", "scipy.optimize", "scipy.integrate", "implicit", "special", "nn", "optim",
              "serialization", "sparse")


def public_names() -> list[str]:
    """``module.name`` for every public name of ``dualgrad`` and of its public submodules."""
    top = [f"dualgrad.{n}" for n in dir(dg)
           if not n.startswith("_") and not isinstance(getattr(dg, n), types.ModuleType)]
    subs = [f"dualgrad.{m}.{n}" for m in SUBMODULES for n in importlib.import_module(f"dualgrad.{m}").__all__]
    return top + subs


def test_every_public_name_is_in_the_api_reference():
    reference = "\n".join(p.read_text() for p in sorted((DOCS / "api").glob("*.md")))
    missing = [name for name in public_names()
               if not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", reference)]
    assert not missing, f"public names missing from docs/api/*.md: {missing}"


def test_every_public_submodule_has_a_reference_page():
    pages = [m for m in (*SUBMODULES, "numpy_dispatch")  # autograd: in api/autograd.md; scipy.*: in api/scipy.md
             if m != "autograd" and not m.startswith("scipy.")]
    missing = [m for m in pages if not (DOCS / "api" / f"{m}.md").exists()]
    assert not missing, f"no docs/api/<module>.md for: {missing}"


PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_page_examples_run(page):
    dg.manual_seed(0)
    result = doctest.testfile(str(page), module_relative=False, verbose=False, report=True,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} failing example(s) in {page.name} (see the output above)"


def run_example(name: str, *args: str, extra_path: Path | None = None) -> str:
    paths = [str(extra_path)] if extra_path else []
    paths += [str(ROOT), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)), DUALGRAD_EXAMPLES_SMALL="1")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / name), *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def number_after(text: str, label: str) -> float:
    match = re.search(re.escape(label) + r"\s*=?\s*(-?[\d.]+(?:e[-+]?\d+)?)", text)
    assert match, f"{label!r} not in the output:\n{text}"
    return float(match.group(1))


def test_ode_sensitivities_match_finite_differences_and_reverse_mode():
    out = run_example("ode_sensitivity.py")
    assert number_after(out, "max |forward mode - finite differences| / max |sensitivity|") < 1e-6
    assert number_after(out, "max |forward mode - reverse mode| at the final state") < 1e-10


def test_newton_methods_agree_and_converge():
    out = run_example("newton.py")
    assert number_after(out, "max |x_dense - x_cg|") < 1e-8
    for line in (ln for ln in out.splitlines() if "|grad| per step:" in ln):
        assert float(line.split()[-1]) < 1e-9, line
    errors = re.search(r"data ([\d.]+), minimizer ([\d.]+)", out)
    assert float(errors.group(2)) < float(errors.group(1))  # the minimizer is closer to the clean signal


def test_per_example_gradients_match_a_loop():
    out = run_example("per_example_gradients.py")
    assert number_after(out, "max |vmap(grad) - loop of grad| over 16 examples:") < 1e-12
    assert number_after(out, "max |mean of per-example gradients - gradient of the mean loss|:") < 1e-12


def test_pinn_trains_with_adam_and_lbfgs_through_a_checkpoint():
    out = run_example("pinn_ode.py")
    assert "checkpoint restored: 6 tensors, Adam at step 400" in out
    assert number_after(out, "after L-BFGS: loss") < 1e-5
    assert number_after(out, "max |u(t) - cos t| on [0, pi] =") < 1e-3


def test_numpy_sort_function_works_under_the_transforms_and_fits_through_outliers():
    out = run_example("numpy_sort.py")
    assert "gradcheck (reverse, forward, batched): True; gradgradcheck: True" in out
    assert "jacrev == jacfwd: True; a permutation matrix: True" in out
    assert number_after(out, "over 40 candidates:") < 1e-12
    assert abs(number_after(out, "least trimmed squares:  slope") - 2) < 0.1
    assert abs(number_after(out, "ordinary least squares: slope") - 2) > 1  # dragged by the outliers
    assert number_after(out, "|grad| at the LTS fit:") < 1e-10
    assert number_after(out, "max |hessian - finite differences of grad|:") < 1e-6


def test_property_testing_passes_the_right_derivative_and_catches_the_wrong_one():
    pytest.importorskip("hypothesis")
    out = run_example("property_testing.py")
    assert "gradcheck (reverse and forward mode): True" in out
    assert "LogCosh: derivatives match finite differences" in out
    assert "BuggyLogCosh: Jacobian mismatch" in out
    # Hypothesis shrinks to a tensor (of any shape) holding a negative value: the
    # derivative is wrong only for negative x.
    shrunk = re.search(r"drawn=\((tensor\([^)]*\))", out)
    assert shrunk, out
    assert any(float(v) < 0 for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", shrunk.group(1))), shrunk.group(1)


def test_example_plot_is_written_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "ode.png"
    run_example("ode_sensitivity.py", "--plot", str(target))
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_example_plot_is_skipped_without_matplotlib(tmp_path):
    blocker = tmp_path / "matplotlib"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('matplotlib is blocked for this test')\n")
    out = run_example("newton.py", "--plot", str(tmp_path / "newton.png"), extra_path=tmp_path)
    assert "matplotlib is not installed: plot skipped" in out
    assert not (tmp_path / "newton.png").exists()


def test_ode_fit_recovers_the_parameters_with_consistent_sensitivities():
    pytest.importorskip("scipy")
    out = run_example("ode_fit.py")
    fitted = re.search(r"fitted parameters: \[([^\]]*)\]", out).group(1).split()
    assert np.allclose([float(v) for v in fitted], [1.1, 0.4, 0.1, 0.4], rtol=0.1), out
    assert "success: True" in out
    assert number_after(out, "max |adjoint - forward| / max |gradient|") < 1e-6
    assert number_after(out, "max |finite differences - forward| / max |gradient|") < 1e-5


def test_bilevel_hypergradient_matches_finite_differences():
    pytest.importorskip("scipy")
    out = run_example("bilevel.py")
    assert number_after(out, "relative difference:") < 1e-5
    assert number_after(out, "|hypergradient| at the optimum:") < 1e-5
    assert "outer success: True" in out


def test_steady_state_sensitivities_agree():
    pytest.importorskip("scipy")
    out = run_example("steady_state.py")
    assert number_after(out, "max |F(u)| =") < 1e-9
    assert number_after(out, "max |forward - reverse| =") < 1e-12
    assert number_after(out, "max |finite differences - reverse| / max |reverse| =") < 1e-6
