"""examples/robertson_fit.py runs and recovers Robertson's rate constants, with an exact Hessian."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("scipy.integrate")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # (a whole parameter fit: about 30 s of CPU)
def test_robertson_fit_recovers_the_rates_and_its_hessian_matches_finite_differences():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "robertson_fit.py")], capture_output=True,
                          text=True, env=env, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    fitted = [float(v) for v in re.findall(r"[-\d.]+e[-+]\d+", out.split("fitted rate constants:")[1].split("(")[0])]
    np.testing.assert_allclose(fitted, [0.04, 3e7, 1e4], rtol=0.03)
    assert "success: True" in out
    fd = float(out.split("finite differences of the gradient - exact| / max |exact| =")[1].split()[0])
    assert fd < 1e-6
