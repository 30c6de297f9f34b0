"""Elementwise ops (broadcasting, one derivative formula per input).

* ``core``: arithmetic, powers, exp/log, trigonometric and hyperbolic functions, rounding,
  clamping, ``where``, complex parts and casts; the ops every other rule is written with;
* ``functions``: the further elementwise functions of torch and NumPy (``erf``, ``copysign``,
  ``fmod``, ``lerp``, ``gcd``, ``ldexp``, ...);
* ``special``: ``torch.special``'s functions, computed by ``_special_math`` (NumPy, no SciPy).
"""
