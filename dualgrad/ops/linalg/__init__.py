"""Linear algebra ops (``dualgrad.linalg`` is the public namespace built from them).

* ``products``: ``matmul`` and the products built on it (``dot``, ``outer``, ``tensordot``, ...);
* ``decompositions``: ``inv``, ``solve``, ``det``, ``slogdet``, ``cholesky``, ``eigh``, ``svd``, ``qr``;
* ``lu``: the LU factorization and the ``*_ex`` solvers that report failures in ``info``;
* ``matrix_functions``: ``matrix_exp``, ``solve_triangular``, ``eig`` and the products and solvers
  built on them;
* ``norms``: vector and matrix norms, and the composites ``pinv``, ``lstsq``, ``matrix_power``, ``multi_dot``.
"""
