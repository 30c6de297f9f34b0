"""Memory: training loops keep a flat footprint and every transform frees its graph.

All checks run with the garbage collector disabled: dualgrad must give memory
back by reference counting alone (no reference cycles), so a graph object that
is still alive after a step is a leak.

``DUALGRAD_MLP_STEPS`` (default 5000) sets the number of training steps and
``DUALGRAD_MLP_FULL=1`` switches from the small CI network (batch 16,
32 -> 64 -> 64 -> 4) to the W2 benchmark's network (batch 128, 256 -> 512 ->
512 -> 10); the small one keeps the CI run to a few seconds while exercising
the same ops, graph shape and update code, so a per-step leak of any graph
object shows up the same way (the census below counts objects, not bytes).
"""

from __future__ import annotations

import collections
import gc
import os
from collections.abc import Callable

import numpy as np
import pytest
from helpers import gc_disabled

import dualgrad as dg
import dualgrad.forward_ad as fwAD
from dualgrad.forward_ad.engine import DeferredTangent, TangentRecipe
from dualgrad.reverse.node import Node
from dualgrad.reverse.saved import SavedTensor
from dualgrad.tensor import Tensor, TensorMeta
from dualgrad.transforms.function import FunctionCtx, FunctionOp

GRAPH_TYPES = (Node, SavedTensor, TensorMeta, Tensor, FunctionCtx, FunctionOp, TangentRecipe,
               DeferredTangent)


def census() -> collections.Counter:
    """How many of dualgrad's graph objects, Function contexts and Tensors the interpreter holds."""
    counts: collections.Counter = collections.Counter()
    for obj in gc.get_objects():
        kind = type(obj)
        if kind in GRAPH_TYPES or kind.__name__ == "BatchedTensor":
            counts[kind.__name__] += 1
    return counts


def resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


# -- the training loop --------------------------------------------------------------------
def _mlp_sizes() -> tuple[int, tuple]:
    if os.environ.get("DUALGRAD_MLP_FULL") == "1":
        return 128, (256, 512, 512, 10)
    return 16, (32, 64, 64, 4)


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc/self/statm")
def test_mlp_training_memory_is_flat():
    steps = int(os.environ.get("DUALGRAD_MLP_STEPS", "5000"))
    batch, sizes = _mlp_sizes()
    rng = np.random.default_rng(0)
    x = dg.tensor(rng.standard_normal((batch, sizes[0])))
    target = dg.tensor(rng.standard_normal((batch, sizes[-1])))
    params = [dg.tensor(rng.standard_normal((m, n)) / np.sqrt(m), requires_grad=True)
              for m, n in zip(sizes[:-1], sizes[1:], strict=True)]
    first_loss = None
    with gc_disabled():
        for step in range(1, steps + 1):
            w1, w2, w3 = params
            loss = ((((x @ w1).tanh() @ w2).tanh() @ w3 - target) ** 2).mean()
            loss.backward()
            with dg.no_grad():
                for w in params:
                    w -= 0.05 * w.grad
                    w.grad = None
            if first_loss is None:
                first_loss = loss.item()
            del loss
            if step == min(100, steps):
                rss_early, objects_early = resident_bytes(), census()
        rss_late, objects_late = resident_bytes(), census()
    assert objects_late == objects_early  # exactly the same live graph objects and tensors
    assert abs(rss_late - rss_early) < 0.05 * rss_early
    with dg.no_grad():
        final = ((((x @ params[0]).tanh() @ params[1]).tanh() @ params[2] - target) ** 2).mean()
    assert final.item() < first_loss  # the loop did train


# -- every transform frees what it built ------------------------------------------------------
def _f(x: Tensor) -> Tensor:
    """A scalar function mixing ops that save inputs, outputs (tanh, exp) and neither."""
    return (x.sin() * x).sum() + (x ** 3).tanh().sum() + (0.1 * x).exp().sum()


def _vector_f(x: Tensor) -> Tensor:
    return x.sin() * (0.1 * x).exp()


def _backward(x: Tensor) -> None:
    _f(x).backward()
    x.grad = None


def _double_backward(x: Tensor) -> None:
    (g,) = dg.grad(_f(x), x, create_graph=True)
    dg.grad(g.sum(), x)


def _forward_loop(x: Tensor) -> None:
    """Forward mode on inputs that do not require grad (the usual forward-mode loop)."""
    with fwAD.dual_level():
        for basis in dg.eye(x.numel()):
            fwAD.unpack_dual(_f(fwAD.make_dual(x.detach(), basis))).tangent.item()


def _forward_on_grad_inputs(x: Tensor) -> None:
    with fwAD.dual_level():
        fwAD.unpack_dual(_f(fwAD.make_dual(x, dg.ones_like(x)))).tangent.item()


def _make_dual_hvp(x: Tensor, v: Tensor | None = None) -> Tensor:
    """Forward over reverse by hand: the tangent of the gradient of ``_f`` at a dual of ``x``."""
    with fwAD.dual_level():
        (g,) = dg.grad(_f(fwAD.make_dual(x, dg.ones_like(x) if v is None else v)), x, create_graph=True)
        return fwAD.unpack_dual(g).tangent


def _tangent_requiring_grad(x: Tensor) -> None:
    """A tangent that requires grad, not differentiated (a backward would free the saved tensors).

    Regression: ``exp``'s tangent rule ``t * out`` saved the output Tensor, whose ``_fw`` holds that
    tangent (output -> tangent -> MulBackward0 -> output); the rule now sees an alias of the output.
    """
    with fwAD.dual_level():
        fwAD.unpack_dual(_f(fwAD.make_dual(x.detach(), dg.ones_like(x).requires_grad_()))).tangent.item()


# Forward over reverse through ops whose tangent rule reads their output (tanh, exp) used to leave
# reference cycles (node -> its saved output's tangent -> that tangent's graph -> node); the node now
# keeps a recipe for the tangent (``forward_ad.engine.TangentRecipe``) and the rules see an alias of
# the output, so these free their graphs by reference counting too.
FREED = {
    "backward": _backward,
    "grad_create_graph": _double_backward,
    "jacobian": lambda x: dg.functional.jacobian(_vector_f, x),
    "jacobian_vectorized": lambda x: dg.functional.jacobian(_vector_f, x, vectorize=True),
    "jacobian_forward": lambda x: dg.functional.jacobian(_vector_f, x, vectorize=True,
                                                         strategy="forward-mode"),
    "hessian": lambda x: dg.functional.hessian(_f, x),
    "vhp": lambda x: dg.functional.vhp(_f, x, dg.ones_like(x)),
    "vmap_grad": lambda x: dg.vmap(dg.func.grad(_f))(dg.stack([x.detach()] * 3)),
    "func_jacrev": lambda x: dg.func.jacrev(_vector_f)(x.detach()),
    "func_jacfwd": lambda x: dg.func.jacfwd(_vector_f)(x.detach()),
    "forward_loop": _forward_loop,
    "hvp": lambda x: dg.functional.hvp(_f, x, dg.ones_like(x)),
    "hvp_create_graph": lambda x: dg.functional.hvp(_f, x, dg.ones_like(x), create_graph=True),
    "forward_on_grad_inputs": _forward_on_grad_inputs,
    "make_dual_hvp": _make_dual_hvp,
    "func_hessian": lambda x: dg.func.hessian(_f)(x.detach()),
    "tangent_requiring_grad": _tangent_requiring_grad,
}


def _leaked(fn: Callable) -> collections.Counter:
    x = dg.tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)
    with gc_disabled():
        fn(x)  # warm-up: caches and lazily created objects
        before = census()
        for _ in range(3):
            fn(x)
        return census() - before


@pytest.mark.parametrize("name", sorted(FREED))
def test_transform_leaves_no_graph_objects(name):
    assert _leaked(FREED[name]) == {}


def _f_hessian_diagonal(x: np.ndarray) -> np.ndarray:
    """The Hessian of ``_f`` by hand (``_f`` is a sum of functions of one element: it is diagonal)."""
    tanh = np.tanh(x ** 3)
    sech2 = 1 - tanh ** 2
    return 2 * np.cos(x) - x * np.sin(x) + 6 * x * sech2 - 18 * x ** 4 * sech2 * tanh + 0.01 * np.exp(0.1 * x)


HESSIAN_VECTOR_PRODUCTS = {
    "hvp_create_graph": lambda x, v: dg.functional.hvp(_f, x, v, create_graph=True)[1],
    "make_dual_hvp": _make_dual_hvp,
    "func_hessian": lambda x, v: dg.func.hessian(_f)(x.detach()) @ v,
}


@pytest.mark.parametrize("name", sorted(HESSIAN_VECTOR_PRODUCTS))
def test_forward_over_reverse_values_with_gc_disabled(name):
    """The entry points that used to leave cycles give exact Hessian-vector products and free everything."""
    x = dg.tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)
    v = dg.tensor([1.0, -2.0, 0.5, 3.0])
    expected = _f_hessian_diagonal(x.detach().numpy()) * v.numpy()
    with gc_disabled():
        HESSIAN_VECTOR_PRODUCTS[name](x, v)  # warm-up: caches and lazily created objects
        before = census()
        product = HESSIAN_VECTOR_PRODUCTS[name](x, v)
        np.testing.assert_allclose(product.detach().numpy(), expected, rtol=1e-10, atol=1e-12)
        del product
        assert census() - before == {}


def test_backward_frees_saved_tensors_while_outputs_live():
    """After a backward without retain_graph the saved buffers are dropped even if the loss lives."""
    x = dg.tensor(np.linspace(-1.0, 1.0, 4), requires_grad=True)
    y = x.exp()
    loss = (y * x).sum()
    node = loss.grad_fn
    loss.backward()
    assert all(s._tensor is None and s._data is None for s in node.next_functions[0][0].saved)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_pytree_helpers_hold_no_cycle():
    """Regression: flatten/unflatten were recursive closures, a cycle that kept the leaves alive."""
    from dualgrad.base import pytree as _pytree

    leaf = dg.ones(2)
    with gc_disabled():
        before = census()
        leaves, spec = _pytree.flatten((leaf, [leaf * 2, {"a": leaf * 3}]))
        _pytree.unflatten(leaves, spec)
        del leaves, spec
        assert census() - before == {}
