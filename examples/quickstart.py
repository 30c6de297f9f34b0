"""dualgrad in one screen: a gradient, a Jacobian and a Hessian, printed.

Run it with ``python examples/quickstart.py``.

* gradient and Hessian of the Rosenbrock function
  ``f(x, y) = (1 - x)**2 + 100 * (y - x**2)**2`` at ``(-1.2, 1)``;
* Jacobian of the Lorenz system's vector field
  ``(sigma (y - x), x (rho - z) - y, x y - beta z)`` at ``(1, 2, 3)``.

The gradient comes from ``backward()``; the Jacobian and the Hessian from
``dualgrad.functional`` (as ``torch.autograd.functional``).
"""

import dualgrad as dg
from dualgrad.functional import hessian, jacobian


def rosenbrock(p: dg.Tensor) -> dg.Tensor:
    """The Rosenbrock "banana" function of a point ``p = (x, y)``."""
    x, y = p[0], p[1]
    return (1 - x) ** 2 + 100 * (y - x**2) ** 2


def lorenz(u: dg.Tensor, sigma: float = 10.0, rho: float = 28.0, beta: float = 8 / 3) -> dg.Tensor:
    """The right-hand side of the Lorenz equations at state ``u = (x, y, z)``."""
    x, y, z = u[0], u[1], u[2]
    return dg.stack([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])


point = dg.tensor([-1.2, 1.0], requires_grad=True)
value = rosenbrock(point)
value.backward()
print("Rosenbrock f(-1.2, 1) =", round(value.item(), 4))
print("gradient:", point.grad)  # (-215.6, -88)
print("Hessian:", hessian(rosenbrock, point), sep="\n")  # [[1330, 480], [480, 200]]
print("Lorenz Jacobian at (1, 2, 3):", jacobian(lorenz, dg.tensor([1.0, 2.0, 3.0])), sep="\n")
