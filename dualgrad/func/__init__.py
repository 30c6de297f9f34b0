"""Composable function transforms, following ``torch.func``.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``
and ``linearize`` take a function and return a function (or values); they nest freely:
``jacfwd(jacrev(f))``, ``vmap(grad(f))`` (per-example gradients), ``grad(grad(f))``.
``functional_call`` and ``stack_module_state`` run ``nn`` modules under them, and
``functionalize`` is accepted for ported code. They are built in ``dualgrad/transforms/func.py``,
whose docstring says how they compose (each transform runs at a level of its own).

>>> import dualgrad as dg
>>> from dualgrad.func import grad, vmap
>>> vmap(grad(lambda x: (x ** 3).sum()))(dg.tensor([[1., 2.], [3., 4.]]))
tensor([[ 3., 12.],
        [27., 48.]])
"""

from ..transforms.func import (
    functional_call,
    functionalize,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stack_module_state,
    vjp,
    vmap,
)

__all__ = ["functional_call", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "stack_module_state", "vjp", "vmap"]
