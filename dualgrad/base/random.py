"""The one random generator behind every draw (``manual_seed`` reseeds it; ``vmap`` replays it per chunk).

It sits at the bottom of the import graph so that the factories, the sampling ops and the batching
engine all draw from it without importing each other.
"""

from __future__ import annotations

import secrets

import numpy as np

_initial_seed = [secrets.randbits(64)]  # what ``initial_seed`` gives: the last seed set, or one drawn at import
_generator = [np.random.default_rng(_initial_seed[0])]
