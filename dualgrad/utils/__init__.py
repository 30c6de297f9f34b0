"""``torch.utils``'s parts that autograd code uses: ``benchmark`` (``Timer``, ``Measurement``).

>>> import dualgrad as dg
>>> dg.utils.benchmark.Timer("x * 2", globals={"x": dg.ones(3)}).timeit(10).number_per_run
10
"""

from . import benchmark

__all__ = ["benchmark"]
