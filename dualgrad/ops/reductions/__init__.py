"""Reductions and axis-wise ops.

* ``core``: sums, means, products, extremes, variance, norms, cumulative ops, softmax, ``all``/``any``;
* ``statistics``: torch's statistics and distances (``cov``, ``quantile``, ``mode``, ``cdist``, ...).
"""
