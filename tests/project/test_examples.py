"""The examples run as scripts and print the right numbers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

import dualgrad as dg

ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str) -> str:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, PYTHONPATH=path)
    done = subprocess.run([sys.executable, str(ROOT / "examples" / name)], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def numbers(text: str) -> list[float]:
    return [float(s) for s in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+(?=[.,\]\s])", text)]


def test_quickstart_prints_gradient_hessian_and_jacobian():
    out = run_example("quickstart.py")
    grad, hessian, jacobian = (out.split("gradient:")[1].split("Hessian:")[0],
                               out.split("Hessian:")[1].split("Lorenz")[0],
                               out.split("(1, 2, 3):")[1])
    np.testing.assert_allclose(numbers(grad), [-215.6, -88.0])
    np.testing.assert_allclose(numbers(hessian), [1330, 480, 480, 200])
    np.testing.assert_allclose(numbers(jacobian), [-10, 10, 0, 25, -1, -1, 2, 1, -8 / 3], atol=1e-4)


TUTORIAL_START = """\
tensor([[1., 1.],
        [1., 1.]], requires_grad=True)
tensor([[1., 1.],
        [1., 1.]])
None
None
tensor([[3., 3.],
        [3., 3.]], grad_fn=<AddBackward0>)
<AddBackward0 object>
tensor([[27., 27.],
        [27., 27.]], grad_fn=<MulBackward0>) tensor(27., grad_fn=<MeanBackward0>)
False
True
<SumBackward0 object>
tensor([[4.5000, 4.5000],
        [4.5000, 4.5000]])
tensor([[1., 1.],
        [1., 1.]])
tensor([[9., 9.],
        [9., 9.]], grad_fn=<MulBackward0>)
"""


def test_tutorial_prints_the_tutorials_numbers():
    out = run_example("tutorial.py")
    assert out.startswith(TUTORIAL_START)
    lines = out[len(TUTORIAL_START):].splitlines()
    # x.grad after a second backward with the tutorial's second random draw: ones + that gradient.
    dg.manual_seed(0)
    dg.randn(2, 2)
    expected = 1 + dg.randn(2, 2).numpy().ravel()
    np.testing.assert_allclose(numbers(" ".join(lines[:2])), expected, atol=1e-4)
    assert lines[2:] == ["True", "True", "False"]
