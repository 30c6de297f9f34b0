"""examples/sparse_scipy.py runs and its SciPy solvers converge with dualgrad's sparse derivatives."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("scipy")

ROOT = Path(__file__).resolve().parents[2]


def test_sparse_scipy_example():
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "sparse_scipy.py")], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=path), timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "200x200, 796 nonzeros" in out
    assert out.count("success True") == 5
    agreements = [float(a) for a in re.findall(r"finite differences to (\S+)", out)]
    assert len(agreements) == 2 and max(agreements) < 1e-8
    assert "Hessian with 3 colors" in out
    assert float(re.search(r"max \|x - 1\| = (\S+)", out).group(1)) < 1e-6
    assert float(re.search(r"root: .* max \|residual\| (\S+)", out).group(1)) < 1e-8
