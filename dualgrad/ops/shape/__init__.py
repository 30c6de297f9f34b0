"""Shape ops (all linear).

* ``core``: the shape primitives (reshape, permute, cat, split, pad, diagonal, ...);
* ``views``: the complex views (``view_as_real``, ``view_as_complex``), sliding windows (``unfold``)
  and torch's shape compositions that come with them (``broadcast_tensors``, ``hsplit``, ...);
* ``compositions``: ``diff``, ``meshgrid``, ``block_diag``, ``rot90``, ``trapezoid``, ...
"""
