"""Composable function transforms, following ``torch.func`` (the public namespace).

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``linearize``, ``functionalize``, ``functional_call`` and ``stack_module_state``; they are built in
``dualgrad/transforms/func.py`` (whose docstring says how they compose, by levels).

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
