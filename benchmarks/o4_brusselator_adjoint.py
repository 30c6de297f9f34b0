"""O4: the adjoint gradient of a scalar loss of the 2-D Brusselator (2048 states, 4 parameters, BDF).

Goal (issue 29): at most 4x the plain solve (the peer "plain solve": dualgrad's ``solve_ivp`` with nothing
to differentiate). Peers: diffrax (and torchdiffeq for the Brusselator adjoint), see ``_ode_problems``.
"""

from __future__ import annotations

from ._harness import Workload
from ._ode_problems import BRUSSELATOR
from ._ode_problems import workload as _workload


def workload() -> Workload:
    return _workload(BRUSSELATOR, "adjoint", "O4 Brusselator 2-D adjoint grad")
