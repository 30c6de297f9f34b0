"""O2: the adjoint gradient of a scalar loss of the solution at 10 times with respect to the 3 rate constants (BDF).

Goal (issue 29): at most 4x the plain solve (the peer "plain solve": dualgrad's ``solve_ivp`` with nothing
to differentiate). Peers: diffrax (and torchdiffeq for the Brusselator adjoint), see ``_ode_problems``.
"""

from __future__ import annotations

from ._harness import Workload
from ._ode_problems import ROBERTSON
from ._ode_problems import workload as _workload


def workload() -> Workload:
    return _workload(ROBERTSON, "adjoint", "O2 Robertson adjoint gradient")
