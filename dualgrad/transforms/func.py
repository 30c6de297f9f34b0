"""Composable function transforms, following ``torch.func``.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``,
``vmap`` and ``linearize`` take a function and return a function (or values);
they nest freely: ``jacfwd(jacrev(f))``, ``vmap(grad(f))`` (per-example
gradients), ``grad(grad(f))``, ``vmap(jacrev(f))``, ``jacrev(jacfwd(f))``.

How they compose: reverse and forward mode act on *physical* tensors. Inside
``vmap``, an input to differentiate is turned into a physical tensor with one
leading dimension per active vmap level (``batching.to_physical``), made a
fresh leaf (or, when an enclosing transform tracks it, an alias that keeps
its graph and tangents) and wrapped back as a batched tensor for the
function. The backward pass then runs on the physical graph, where the batch
members are independent, so each one gets its own gradient.

Levels, as in torch.func and JAX: each ``grad``/``grad_and_value``/``vjp`` call
runs its function at a reverse level of its own (``transforms/levels.py``), each
``jvp`` at a dual level, each ``vmap`` at a vmap level. A level is alive while
its transform runs. The backward pass is recorded when an enclosing reverse
level is alive or the graph reaches a tensor the user tracks (``requires_grad``
outside every transform), so results stay differentiable for every enclosing
transform; ``vjp_fn`` decides at each call, so it is differentiable with respect
to its cotangent (the transpose of a vjp). When a transform returns, its
results keep their tangents at the active dual levels, and their graph only if
it reaches a leaf of a level still alive or of the user: a finished transform
leaves no graph behind (``grad(outer)(x)`` is a plain tensor when ``outer``
calls ``grad``). Grad mode off where a transform is called means no graph for
its results (as torch: ``no_grad`` outside ``f`` does not reach inside).

>>> import dualgrad as dg
>>> from dualgrad.func import grad, jvp, vjp, vmap
>>> grad(lambda x: (x ** 3).sum())(dg.tensor([1., 2.]))
tensor([ 3., 12.])
>>> w = dg.tensor([1., -1.])
>>> vmap(grad(lambda w, x: (w * x).sum()), in_dims=(None, 0))(w, dg.tensor([[1., 2.], [3., 4.]]))
tensor([[1., 2.],
        [3., 4.]])
>>> x = dg.tensor([1., 2.])
>>> _, vjp_fn = vjp(lambda x: x ** 3, x)
>>> jvp(lambda c: vjp_fn(c)[0], (dg.zeros(2),), (dg.ones(2),))[1]  # J^T v, through the cotangent
tensor([ 3., 12.])
>>> grad(lambda x: grad(lambda y: (x * y ** 2).sum())(dg.ones(2)).sum())(x).grad_fn is None
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from ..base import pytree
from ..base.dtypes import is_differentiable_dtype
from ..base.state import STATE
from ..factories import ones_like, zeros_like
from ..forward_ad import dual_level, make_dual
from ..forward_ad.engine import drop_dead, tangent_at
from ..ops.dispatch import apply
from ..ops.shape.core import PERMUTE, RESHAPE
from ..reverse import enable_grad, is_grad_enabled
from ..reverse import grad as autograd_grad
from ..reverse.api import check_real_output
from ..reverse.engine import run_backward
from ..reverse.grad_mode import _set_grad_mode
from ..tensor import Tensor, _wrap
from ..vmap.batching import (
    from_physical,
    is_batched_at,
    tangent_batched_at,
    to_physical,
    vmap,
)
from ..vmap.identity_basis import identity_blocks
from .levels import (
    ReverseLevel,
    leave_inference_mode,
    lower,
    needs_graph,
    restore_modes,
    reverse_level,
    tag_leaf,
)

__all__ = ["functionalize", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "vjp",
           "vmap"]


# -- tracking inputs -------------------------------------------------------------------------
def _check_transform_input(x: Any) -> None:
    if not isinstance(x, Tensor):
        raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")


def _has_tangent(x: Tensor) -> bool:
    levels = STATE.dual_levels
    return bool(levels) and any(tangent_at(x, level) is not None for level in levels)


def _track(x: Any, levels: tuple, level: ReverseLevel) -> tuple[Tensor, Tensor]:
    """``(input for the function, physical tensor to differentiate with respect to)``."""
    _check_transform_input(x)
    phys = to_physical(x, levels)
    if phys.requires_grad or _has_tangent(phys):
        leaf = apply(RESHAPE, phys, shape=phys.shape)  # an alias: keeps outer graphs and tangents
        if not leaf.requires_grad:
            leaf.requires_grad_()
    else:  # (an inference tensor's leaf is a plain tensor: the transform records its graph, as torch.func's)
        leaf = (_plain(phys) if phys.is_inference() else phys.detach()).requires_grad_()
    return from_physical(tag_leaf(leaf, level), levels), leaf


def _call_tracked(func: Callable, flat: list, levels: tuple) -> tuple:
    """``func(tracked inputs)`` (it returns ``(output, aux)``) at a new reverse level, with the
    tensors ``flat`` tracked for reverse mode: ``(tracked, output, aux, levels used)``.

    Inputs are made physical at every active vmap level, except levels at which no input is
    batched and only tangents are (a vmap over a ``jvp`` of this transform, as in
    ``hessian = jacfwd(jacrev(f))``): there the inputs keep unbatched values, as in torch, so
    that ``func`` may write them into tensors it creates. If an output is batched at such a
    level after all (``func`` used a value batched there), ``func`` runs again with every
    level, so that each batch member gets its own gradient. The level has ended when this returns.
    """
    with reverse_level(grad_mode=True) as level:
        if levels and STATE.dual_levels:
            kept = tuple(vl for vl in levels if any(is_batched_at(x, vl) for x in flat)
                         or not any(tangent_batched_at(x, vl) for x in flat))
            if kept != levels:
                tracked = [_track(x, kept, level) for x in flat]
                output, aux = func([t for t, _ in tracked])
                dropped = [vl for vl in levels if vl not in kept]
                if not any(is_batched_at(o, vl) for o in pytree.flatten(output)[0] for vl in dropped):
                    return tracked, output, aux, kept
        tracked = [_track(x, levels, level) for x in flat]
        output, aux = func([t for t, _ in tracked])
        return tracked, output, aux, levels


def _pullback(outputs: list, leaves: list, cotangents: list, create: bool, retain_graph: bool) -> list:
    """``sum_i <cotangent_i, d output_i / d leaf>`` for each leaf (zeros where independent)."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents, strict=True) if o.requires_grad]
    if not pairs:
        return [zeros_like(leaf) for leaf in leaves]
    outs, cts = [o for o, _ in pairs], [c for _, c in pairs]
    if all(type(c) is Tensor and c.dtype == o.dtype and c.shape == o.shape for o, c in pairs):
        # (what ``dualgrad.grad`` would check holds: the leaves are this transform's and require grad,
        # the outputs require grad, the cotangents are plain tensors of the outputs' shapes and dtypes)
        grads = run_backward(outs, cts, retain_graph=retain_graph or create, create_graph=create,
                             inputs=leaves, accumulate=False)
    else:
        grads = autograd_grad(outs, leaves, cts, retain_graph=retain_graph or create, create_graph=create,
                              allow_unused=True)
    return [zeros_like(leaf) if g is None else g for g, leaf in zip(grads, leaves, strict=True)]



def _argnums_tuple(argnums: Any, nargs: int) -> tuple:
    """``argnums`` as a tuple of non-negative ints, checked as ``torch.func`` does."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
    nums = tuple(a % nargs for a in nums)
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums elements must be unique, got {nums}")
    return nums


def _select(args: tuple, argnums: Any) -> tuple:
    """The differentiated arguments: one pytree (int argnums) or a tuple of them."""
    nums = _argnums_tuple(argnums, len(args))
    return nums, (args[nums[0]] if isinstance(argnums, int) else tuple(args[i] for i in nums))


def _replace(args: tuple, nums: tuple, argnums: Any, new: Any) -> tuple:
    values = (new,) if isinstance(argnums, int) else new
    args = list(args)
    for i, v in zip(nums, values, strict=True):
        args[i] = v
    return tuple(args)


def _split_aux(output: Any, has_aux: bool, api: str) -> tuple:
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _lowered(tree: Any, keep_graph: bool) -> Any:
    """``tree`` (outputs, aux) as the enclosing levels see it once this transform has returned:
    each tensor keeps its tangents, and its graph only if ``keep_graph`` and the graph reaches a live leaf."""
    flat, spec = pytree.flatten(tree)
    return pytree.unflatten([lower(x, keep_graph) for x in flat], spec)


# -- reverse mode ----------------------------------------------------------------------------
def _grad_transform(func: Callable, argnums: Any, has_aux: bool, with_value: bool) -> Callable:
    """``grad_and_value(func)`` (``with_value``) or ``grad(func)``, which skips the value."""
    api = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        levels = STATE.vmap_levels
        grad_was_enabled = is_grad_enabled()
        nums, chosen = _select(args, argnums)
        flat, spec = pytree.flatten(chosen)
        tracked, output, aux, levels = _call_tracked(lambda new: _split_aux(
            func(*_replace(args, nums, argnums, pytree.unflatten(new, spec)), **kwargs), has_aux,
            api), flat, levels)
        _set_grad_mode(True)  # (``enable_grad``, inlined: this runs once per call)
        try:
            if not isinstance(output, Tensor):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
            if output.ndim != 0:
                raise RuntimeError(
                    f"{api}: Expected f(*args) to return a scalar Tensor, got tensor "
                    f"with {output.ndim} dims. Maybe you wanted to use the vjp or jacrev APIs instead?"
                )
            check_real_output(output)
            leaves = [leaf for _, leaf in tracked]
            out_phys = to_physical(output, levels)
            create = needs_graph(grad_was_enabled, [out_phys, *leaves])
            grads = _gradients(out_phys, leaves, create)
        finally:
            _set_grad_mode(grad_was_enabled)
        result = pytree.unflatten([lower(from_physical(g, levels), create) for g in grads], spec)
        if has_aux:
            aux = _lowered(aux, grad_was_enabled)
        if not with_value:
            return (result, aux) if has_aux else result
        value = lower(output, create)  # (without create, its graph reaches no live leaf)
        return result, (value, aux) if has_aux else value

    return wrapper


def _gradients(out: Tensor, leaves: list, create: bool) -> list:
    """``d out / d leaf`` for each leaf (zeros where independent) of a real scalar ``out`` (physical:
    one leading dimension per vmap level), seeded with ones: ``_pullback`` without its checks, which
    hold (the leaves are the transform's and require grad, the seed has the output's shape and dtype)."""
    if not out.requires_grad:
        return [zeros_like(leaf) for leaf in leaves]
    grads = run_backward([out], [ones_like(out)], retain_graph=create, create_graph=create, inputs=leaves,
                         accumulate=False)
    return [zeros_like(leaf) if g is None else g for g, leaf in zip(grads, leaves, strict=True)]


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """A function returning ``(gradient, value)`` of scalar-valued ``func``.

    ``argnums`` (an int or a tuple of ints) picks the arguments to differentiate;
    the gradient has their structure. With ``has_aux=True``, ``func`` returns
    ``(value, aux)`` and the result is ``(gradient, (value, aux))``.

    >>> import dualgrad as dg
    >>> from dualgrad.func import grad_and_value
    >>> grad_and_value(lambda x: (x * x).sum())(dg.tensor([1., 2.]))
    (tensor([2., 4.]), tensor(5.))
    """
    return _grad_transform(func, argnums, has_aux, with_value=True)


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """The gradient of scalar-valued ``func`` with respect to argument(s) ``argnums``.

    With ``has_aux=True``, ``func`` returns ``(value, aux)`` and the result is
    ``(gradient, aux)``. Composes with every transform of this module.

    >>> import dualgrad as dg
    >>> from dualgrad.func import grad
    >>> grad(grad(lambda x: x ** 3))(dg.tensor(2.))
    tensor(12.)
    """
    return _grad_transform(func, argnums, has_aux, with_value=False)


def _check_outputs(flat: list, api: str) -> None:
    if not flat or (len(flat) == 1 and flat[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat})")
    for out in flat:
        if not isinstance(out, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(out)}")


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` gives one vector-Jacobian product per primal.

    ``cotangents`` has the structure of the output; ``vjp_fn`` may be called
    many times (also under ``vmap``, which is how ``jacrev`` works). As in
    torch, ``vjp_fn(cotangents, retain_graph=True, create_graph=None)``:
    ``retain_graph=False`` frees the graph (a later call raises), and the
    result is differentiable by an enclosing transform or ``dualgrad.grad``
    only when ``create_graph`` (default: grad mode is enabled) is true.
    With ``has_aux=True``, ``func`` returns ``(output, aux)`` and the result is
    ``(output, vjp_fn, aux)``; aux is not differentiated.

    >>> import dualgrad as dg
    >>> from dualgrad.func import vjp
    >>> out, vjp_fn = vjp(lambda x: x.sin(), dg.tensor([0., 0.]))
    >>> vjp_fn(dg.tensor([1., 2.]))
    (tensor([1., 2.]),)
    """
    levels = STATE.vmap_levels
    grad_was_enabled = is_grad_enabled()
    flat, spec = pytree.flatten(primals)
    tracked, output, aux, levels = _call_tracked(lambda new: _split_aux(
        func(*pytree.unflatten(new, spec)), has_aux, "vjp(f, *primals)"), flat, levels)
    flat_out, out_spec = pytree.flatten(output)
    _check_outputs(flat_out, "vjp(f, *primals)")
    for o in flat_out:
        if o.dtype.kind not in "fc":
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                               f"Tensor with dtype {o.dtype}")
    leaves = [leaf for _, leaf in tracked]
    with enable_grad():
        outs_phys = [to_physical(o, levels) for o in flat_out]

    def vjp_fn(cotangents: Any, retain_graph: bool = True, create_graph: bool | None = None) -> tuple:
        flat_ct, ct_spec = pytree.flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                f"to the function. cotangents: {pytree.describe(ct_spec)}, primal output: "
                f"{pytree.describe(out_spec)}"
            )
        for i, (c, o) in enumerate(zip(flat_ct, flat_out, strict=True)):
            if c is not None and not isinstance(c, Tensor):
                raise TypeError(f"gradients can be either Tensors or None, but got {type(c).__name__}")
            if c is not None and c.shape != o.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {c.shape} and output[{i}] "
                    f"has a shape of {o.shape}."
                )
        wanted = is_grad_enabled() if create_graph is None else create_graph
        with enable_grad():
            cts = [c if c is None else to_physical(c, levels) for c in flat_ct]
            # the graph is recorded for an enclosing transform that tracks the outputs' graph or
            # the cotangents (the transpose of a vjp), whatever the levels were when vjp was called
            create = needs_graph(wanted, [*outs_phys, *(c for c in cts if c is not None), *leaves])
            grads = _pullback(outs_phys, leaves, cts, create, retain_graph)
        return tuple(_lowered(pytree.unflatten([from_physical(g, levels) for g in grads], spec), create))

    output = _lowered(output, grad_was_enabled)
    if has_aux:
        return output, vjp_fn, _lowered(aux, grad_was_enabled)
    return output, vjp_fn


# -- forward mode ----------------------------------------------------------------------------
def jvp(func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """``(func(*primals), J @ tangents)`` in one forward pass (forward mode).

    ``primals`` is a tuple (``func(*primals)``), ``tangents`` has its structure.
    With ``has_aux=True``, ``func`` returns ``(output, aux)`` and the result is
    ``(output, jvp_out, aux)``. With ``strict=True``, an output independent of
    the primals raises (its tangent is otherwise zeros).

    >>> import dualgrad as dg
    >>> from dualgrad.func import jvp
    >>> jvp(lambda x: x ** 2, (dg.tensor([1., 2.]),), (dg.tensor([1., 1.]),))
    (tensor([1., 4.]), tensor([2., 4.]))
    """
    return _jvp(func, primals, tangents, strict, has_aux)


def _jvp(func: Callable, primals: tuple, tangents: tuple, strict: bool = False, has_aux: bool = False,
         tape_tangents: bool = True) -> tuple:
    """``jvp``; with ``tape_tangents=False`` the tangent rules of its level record no graph (the caller
    knows that no reverse pass will differentiate the tangents: see ``DualLevel.tape_tangents``)."""
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
            "call f(*primals)."
        )
    flat_p, spec = pytree.flatten(primals)
    flat_t, t_spec = pytree.flatten(tangents)
    if t_spec != spec:
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            "structure. For example, if primals is a tuple of 3 tensors, tangents also must be. Got "
            f"primals with structure {pytree.describe(spec)} and tangents with structure "
            f"{pytree.describe(t_spec)}"
        )
    for name, flat in (("primals", flat_p), ("tangents", flat_t)):
        if not flat:
            raise RuntimeError(f"jvp(f, primals, tangents): Expected {name} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(
                    f"jvp(f, primals, tangents): Expected {name} to only contain Tensors, got {type(x)}"
                )
    levels = STATE.vmap_levels
    modes = leave_inference_mode()
    try:
        physical, aux, out_spec = _jvp_at_new_level(func, flat_p, flat_t, spec, levels, has_aux, tape_tangents)
    finally:
        restore_modes(modes)
    if strict and any(tangent is None for _, tangent, _ in physical):
        raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                           "inputs. This is not allowed with strict=True.")
    primal_out, tangent_out = [], []
    for primal, tangent, own in physical:
        drop_dead(primal)  # its tangent at the level that just exited: the primal keeps none
        # (a graph that reaches only finished reverse levels' leaves is dropped, as by those transforms)
        primal_out.append(lower(from_physical(primal, own)))
        tangent_out.append(lower(from_physical(zeros_like(primal) if tangent is None else tangent, own)))
    result = (pytree.unflatten(primal_out, out_spec), pytree.unflatten(tangent_out, out_spec))
    return result + (aux,) if has_aux else result


def _jvp_at_new_level(func: Callable, flat_p: list, flat_t: list, spec: Any, levels: tuple, has_aux: bool,
                      tape_tangents: bool) -> tuple:
    """Run ``func`` on dual inputs at a new dual level: ``(outputs' (primal, tangent, vmap levels), aux,
    output structure)``."""
    with dual_level() as number:
        level = STATE.dual_levels[number]
        level.tape_tangents = tape_tangents
        duals = []
        for p, t in zip(flat_p, flat_t, strict=True):
            own = _batched_levels(p, levels)
            duals.append(from_physical(make_dual(_plain(to_physical(p, own)), _plain(to_physical(t, own))), own))
        output, aux = _split_aux(func(*pytree.unflatten(duals, spec)), has_aux, "jvp(f, primals, tangents)")
        flat_out, out_spec = pytree.flatten(output)
        _check_outputs(flat_out, "jvp(f, primals, tangents)")
        physical = []
        for o in flat_out:
            own = _batched_levels(o, levels)
            primal = to_physical(o, own)
            physical.append((primal, tangent_at(primal, level), own))
    return physical, aux, out_spec


def _plain(x: Tensor) -> Tensor:
    """``x``, or a plain tensor over an inference tensor's data: the transform may save it for a backward
    (``jvp`` of ``grad``), which inference tensors refuse; torch.func's transforms accept them."""
    return _wrap(x._data) if x.is_inference() else x


def _batched_levels(x: Tensor, levels: tuple) -> tuple:
    """The vmap levels (of ``levels``) at which ``x`` is batched."""
    return tuple(level for level in levels if is_batched_at(x, level)) if type(x) is not Tensor else ()


def linearize(func: Callable, *primals: Any) -> tuple:
    """``(func(*primals), jvp_fn)`` with ``jvp_fn(*tangents)`` the Jacobian-vector product at ``primals``.

    Each ``jvp_fn`` call is one forward-mode pass (the function is re-run).
    As in torch, ``primals`` must be floating-point or complex Tensors (checked
    here, not at the first ``jvp_fn`` call), and the tangents must have their
    structure, shapes and dtypes.

    >>> import dualgrad as dg
    >>> from dualgrad.func import linearize
    >>> out, jvp_fn = linearize(lambda x: x.exp(), dg.tensor([0., 1.]))
    >>> jvp_fn(dg.tensor([1., 0.]))
    tensor([1., 0.])
    """
    flat_p, spec = pytree.flatten(primals)
    for p in flat_p:
        _check_transform_input(p)
        if not is_differentiable_dtype(p.dtype):
            raise ValueError(f"Expected primal to be floating point or complex, but got: {p.dtype}")
    output = func(*primals)

    def jvp_fn(*tangents: Any) -> Any:
        flat_t, t_spec = pytree.flatten(tangents)
        if t_spec != spec:
            raise RuntimeError(f"Expected the tangents {pytree.describe(t_spec)} to have the same argspec as "
                               f"the primals {pytree.describe(spec)}")
        for i, (t, p) in enumerate(zip(flat_t, flat_p, strict=True)):
            for what in ("shape", "dtype"):
                if isinstance(t, Tensor) and getattr(t, what) != getattr(p, what):
                    raise RuntimeError(
                        f"tangent:{i} with {what} {getattr(t, what)} in flattened pytree doesn't match the "
                        f"{what} {getattr(p, what)} of the corresponding primal."
                    )
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


# -- Jacobians -------------------------------------------------------------------------------
def _check_chunk_size(chunk_size: int | None, name: str) -> None:
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"{name}: `chunk_size` should be greater than 0.")


def _refuse_complex(api: str, tensors: list, what: str) -> None:
    """torch's error for a complex tensor among ``tensors`` (the inputs or outputs of a Jacobian)."""
    for i, t in enumerate(tensors):
        if isinstance(t, Tensor) and t.dtype.kind == "c":
            raise RuntimeError(f"{api}: Expected all {what} to be real but received complex tensor at flattened "
                               f"input idx: {i}")


def _rows(t: Tensor, start: int, stop: int) -> Tensor:
    """``t[start:stop]``, without an indexing op when that is all of ``t``."""
    return t if start == 0 and stop == t.shape[0] else t[start:stop]


def jacrev(func: Callable, argnums: Any = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``func`` by reverse mode: one vjp per output element, batched with vmap.

    The result for an output ``o`` and input ``x`` has shape ``o.shape + x.shape``
    (nested by outputs, then by ``argnums``, when either is a tuple).
    ``chunk_size`` bounds how many rows are computed at once. With
    ``has_aux=True``, ``func`` returns ``(output, aux)`` and the result is
    ``(jacobian, aux)``; aux is not differentiated. As in torch, complex
    arguments or outputs raise ``RuntimeError`` (a vjp row of a complex function
    is the conjugate, or for a real input only the real part, of a Jacobian
    row: use ``jacfwd``).

    >>> import dualgrad as dg
    >>> from dualgrad.func import jacrev
    >>> jacrev(lambda x: x ** 2)(dg.tensor([1., 2.]))
    tensor([[2., 0.],
            [0., 4.]])
    """
    _check_chunk_size(chunk_size, "jacrev")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums, chosen = _select(args, argnums)

        def partial(*new: Any) -> Any:
            return func(*_replace(args, nums, argnums, new[0] if isinstance(argnums, int) else new),
                        **kwargs)

        primals = (chosen,) if isinstance(argnums, int) else chosen
        _refuse_complex("jacrev", pytree.flatten(args)[0], "inputs")
        result = vjp(partial, *primals, has_aux=has_aux)
        output, vjp_fn = result[0], result[1]
        flat_out, out_spec = pytree.flatten(output)
        _refuse_complex("jacrev", flat_out, "outputs")
        cotangents = identity_blocks(flat_out)
        rows = vmap(lambda *cts: vjp_fn(pytree.unflatten(list(cts), out_spec)),
                    chunk_size=chunk_size)(*cotangents)
        in_spec = pytree.flatten(chosen)[1]
        flat_rows = pytree.flatten(rows)[0]
        jac, start = [], 0
        for o in flat_out:
            stop = start + o.numel()
            per_input = [_rows(r, start, stop).reshape(tuple(o.shape) + tuple(r.shape[1:])) for r in flat_rows]
            jac.append(pytree.unflatten(per_input, in_spec))
            start = stop
        jac = pytree.unflatten(jac, out_spec)
        return (jac, result[2]) if has_aux else jac

    return wrapper


def _to_trailing(t: Tensor, out_shape: tuple, in_shape: tuple) -> Tensor:
    """``(n, *out_shape)`` tangents of the n input elements as the Jacobian block ``out_shape + in_shape``."""
    n = t.shape[0]
    if not out_shape:
        moved = t.reshape((1, n))
    else:
        moved = apply(PERMUTE, t if t.ndim == 2 else t.reshape((n, math.prod(out_shape))), axes=(1, 0))
    shape = tuple(out_shape) + tuple(in_shape)
    return moved if moved.shape == shape else moved.reshape(shape)


def jacfwd(func: Callable, argnums: Any = 0, has_aux: bool = False, *, randomness: str = "error",
           chunk_size: int | None = None) -> Callable:
    """The Jacobian of ``func`` by forward mode: one jvp per input element, batched with vmap.

    Same result structure as ``jacrev``; preferable when inputs are fewer than outputs.
    ``randomness`` is passed to the ``vmap`` over the basis; ``chunk_size`` (a
    dualgrad extension: torch's ``jacfwd`` has none) bounds how many columns are
    computed at once. Unlike torch's, it accepts complex inputs and outputs:
    column ``k`` is the jvp along input element ``k`` (the complex Jacobian
    for a holomorphic ``func``; for a complex input of a non-holomorphic one,
    the derivative along its real part).

    >>> import dualgrad as dg
    >>> from dualgrad.func import jacfwd
    >>> jacfwd(lambda x: x.sum() * x)(dg.tensor([1., 2.]))
    tensor([[4., 1.],
            [2., 5.]])
    """
    _check_chunk_size(chunk_size, "jacfwd")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nums, chosen = _select(args, argnums)
        flat_in, in_spec = pytree.flatten(chosen)
        for x in flat_in:
            _check_transform_input(x)
        tangents = identity_blocks(flat_in)

        def partial(*new: Any) -> Any:
            tree = pytree.unflatten(list(new), in_spec)
            return func(*_replace(args, nums, argnums, tree), **kwargs)

        def push(*ts: Any) -> Any:
            result = jvp(partial, tuple(flat_in), tuple(ts), has_aux=has_aux)
            return (result[1], result[2]) if has_aux else result[1]

        pushed = vmap(push, out_dims=(0, None) if has_aux else 0, randomness=randomness,
                      chunk_size=chunk_size)(*tangents)
        tangent_out, aux = pushed if has_aux else (pushed, None)
        flat_t, out_spec = pytree.flatten(tangent_out)
        jac = []
        for t in flat_t:
            out_shape = tuple(t.shape[1:])
            per_input, start = [], 0
            for x in flat_in:
                stop = start + x.numel()
                per_input.append(_to_trailing(_rows(t, start, stop), out_shape, tuple(x.shape)))
                start = stop
            jac.append(pytree.unflatten(per_input, in_spec))
        jac = pytree.unflatten(jac, out_spec)
        return (jac, aux) if has_aux else jac

    return wrapper


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """The Hessian of scalar-valued ``func``: ``jacfwd(jacrev(func))`` (forward-over-reverse).

    >>> import dualgrad as dg
    >>> from dualgrad.func import hessian
    >>> hessian(lambda x: (x ** 3).sum())(dg.tensor([1., 2.]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)


_REMOVE_OPTIONS = ("mutations", "mutations_and_views")


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """``func`` itself, as torch's ``functionalize`` gives a function of the same semantics.

    torch rewrites in-place ops on intermediate tensors (and, with
    ``remove='mutations_and_views'``, views) into out-of-place ones for its
    compilers. dualgrad's transforms already differentiate and batch through
    in-place ops and views, so there is nothing to rewrite: the returned function
    gives the same results, and mutates its inputs as ``func`` does (as torch's).

    >>> import dualgrad as dg
    >>> from dualgrad.func import functionalize
    >>> def f(x):
    ...     y = x.clone()
    ...     y.add_(1)
    ...     return y * 2
    >>> functionalize(f)(dg.tensor([1., 2.]))
    tensor([4., 6.])
    """
    if remove not in _REMOVE_OPTIONS:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
            "Valid options are: 'mutations' (in-place and out= operators replaced by their out-of-place "
            "equivalents) and 'mutations_and_views' (aliasing operators replaced by copies as well)."
        )

    @functools.wraps(func)
    def functionalized(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return functionalized


from ..nn.stateless import functional_call, stack_module_state  # noqa: E402 - torch.func's names for nn.Module

__all__ += ["functional_call", "stack_module_state"]
