"""Inspect the backward graph and interpose on it (``torch.autograd.graph``).

Every ``grad_fn`` is a :class:`Node`: ``name()``, ``metadata``,
``next_functions``, ``register_hook`` / ``register_prehook`` and its saved values
as ``_saved_*`` / ``_raw_saved_*`` attributes. This module adds the context
managers for saved-tensor hooks, ``register_multi_grad_hook``,
``allow_mutation_on_saved_tensors`` (from ``reverse.mutation``), and two tools
beyond torch: :func:`to_dot` (the graph as Graphviz text) and
:class:`save_on_disk` (saved tensors kept in memory-mapped files).

During a backward pass the hooks of one node run in torch's order: hooks
registered on its output tensors, then the ``retain_grad`` update of its outputs,
then the node's pre-hooks, then the node, then its post-hooks (for a leaf: tensor
hooks, ``AccumulateGrad`` pre-hooks, accumulation, post-accumulate-grad hooks,
``AccumulateGrad`` post-hooks). Hooks of one kind run in registration order, each
seeing the result of the previous one. (torch's notes list the ``retain_grad``
update after the pre-hooks; torch 2.13 runs it before them, and so does dualgrad.)

>>> import dualgrad as dg
>>> a = dg.tensor([0., 0., 0.], requires_grad=True)
>>> b = a.exp()
>>> isinstance(b.grad_fn, dg.graph.Node)
True
>>> [name for name in dir(b.grad_fn) if not name.startswith("__")]
['_raw_saved_result', '_saved_result', 'metadata', 'name', 'next_functions', 'register_hook', \
'register_prehook', 'requires_grad']
>>> b.grad_fn._saved_result.tolist() == b.tolist()
True
"""

from ..tools.graph import (
    GradientEdge,
    MultiGradHookHandle,
    Node,
    allow_mutation_on_saved_tensors,
    disable_saved_tensors_hooks,
    get_gradient_edge,
    increment_version,
    register_multi_grad_hook,
    save_on_cpu,
    save_on_disk,
    saved_tensors_hooks,
    to_dot,
)

__all__ = [
    "GradientEdge", "MultiGradHookHandle", "Node", "allow_mutation_on_saved_tensors",
    "disable_saved_tensors_hooks", "get_gradient_edge", "increment_version", "register_multi_grad_hook",
    "save_on_cpu", "save_on_disk", "saved_tensors_hooks", "to_dot",
]
