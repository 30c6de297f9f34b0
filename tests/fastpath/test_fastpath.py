"""The one switch of the fast paths (``DUALGRAD_FASTPATH``) and where their reference-count reasoning lives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "dualgrad"
PROBE = ("import dualgrad as dg; from dualgrad import fastpath; "
         "x = dg.tensor([0.5, 1.5, -2.0], requires_grad=True); "
         "(g,) = dg.grad(dg.tanh(x * x - 1.0).sum(), x); "
         "print(fastpath.ENABLED, fastpath.broadcast_product(dg.tensor(1.0).expand(3), 2.0) is None, g.tolist())")


def _probe(value: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "DUALGRAD_FASTPATH"}
    if value is not None:
        env["DUALGRAD_FASTPATH"] = value
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent).stdout
    return out.split(maxsplit=2)


@pytest.mark.parametrize("value, enabled", [(None, "True"), ("1", "True"), ("0", "False")])
def test_the_switch_is_read_from_the_environment(value, enabled):
    on, declined, _ = _probe(value)
    assert on == enabled
    assert declined == ("False" if enabled == "True" else "True")  # off: every entry point declines


def test_the_plain_rules_give_the_fast_paths_values():
    assert _probe("0")[2] == _probe("1")[2]


def test_every_reference_count_is_taken_in_the_fast_path_module():
    users = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if "getrefcount" in p.read_text())
    assert users == ["fastpath.py"]
