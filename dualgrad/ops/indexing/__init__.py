"""Indexing.

* ``core``: ``x[index]``, gather, scatter, ``index_put`` and their transposes;
* ``scatter``: the reducing scatters (``scatter_reduce``, ``index_reduce``) and the scatters of a slice,
  a selection or a diagonal.
"""
