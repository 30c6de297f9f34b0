"""O1: forward sensitivities (jacfwd of the solution at 10 times with respect to the 3 rate constants, BDF).

Goal (issue 29): at most 3x the plain solve (the peer "plain solve": dualgrad's ``solve_ivp`` with nothing
to differentiate). Peers: diffrax (and torchdiffeq for the Brusselator adjoint), see ``_ode_problems``.
"""

from __future__ import annotations

from ._harness import Workload
from ._ode_problems import ROBERTSON
from ._ode_problems import workload as _workload


def workload() -> Workload:
    return _workload(ROBERTSON, "forward", "O1 Robertson forward sensitivities")
