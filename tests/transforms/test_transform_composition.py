"""Every transform inside every transform: values against finite differences, and no stray graph.

Each transform ``T`` here maps a function ``F(*inputs) -> Tensor`` to a function ``T(F)`` of
the same inputs returning one flat Tensor, so transforms compose freely. ``T`` also has a
reference ``T.ref(F, inputs)``: its value from ``F``'s values alone (central finite differences
in float64, or the definition). A composition ``A(B(C(f)))`` is checked against
``A.ref(B(C(f)))``: the outer transform against finite differences of the inner composition,
which is itself checked one level down. Results of transforms called on plain inputs must be
plain tensors (no ``grad_fn``, no ``requires_grad``); on inputs that require grad they are
differentiable by ``dualgrad.grad``, against finite differences too.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import func
from dualgrad.autograd import functional
from dualgrad.base import pytree

# -- functions and input structures ----------------------------------------------------------


def f_scalar(*xs):
    """R^n -> R, through NumPy calls on tensors."""
    x = xs[0]
    out = (np.sin(x) ** 2).sum() + np.exp(0.3 * x).sum() * x[0]
    for y in xs[1:]:
        out = out + (np.tanh(y) * x.sum()).sum()
    return out


def f_vector(*xs):
    """R^n -> R^m (m = 3), nonlinear in every input."""
    x = xs[0]
    s = sum(np.cos(y).sum() for y in xs[1:]) if len(xs) > 1 else x.sum()
    return dg.stack([np.sin(x).sum() * s, (x ** 2).sum() + np.exp(0.2 * s), x[0] * np.tanh(s)])


class _Cube(dg.autograd.Function):
    """``x ** 3`` as a custom Function with every rule a transform needs (backward, jvp, a vmap rule)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x ** 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 3 * x * x * t


def f_custom_function(*xs):
    """R^n -> R through a custom Function."""
    x = xs[0]
    out = _Cube.apply(np.sin(x)).sum() * x[0] + _Cube.apply(x * 0.5).sum()
    for y in xs[1:]:
        out = out + (_Cube.apply(y) * x.sum()).sum()
    return out


def f_in_place(*xs):
    """R^n -> R^3 through in-place updates and indexed assignment of a clone."""
    x = xs[0]
    y = x.clone()
    y[1:] = x[1:] * x[:-1]
    y.add_(np.sin(x))
    y.mul_(1.5)
    y = y * (0.5 * x).exp()
    for z in xs[1:]:
        y[0] = y[0] + (z * z).sum()
    y.sub_(x ** 2)
    return dg.stack([y.sum(), 0.1 * (y.cumsum(0) ** 2).sum(), y[-1] * x[0]])


def f_linalg(*xs):
    """R^n -> R^3 through a solve, a determinant and an einsum of a matrix built from the inputs."""
    x = xs[0]
    A = dg.eye(x.shape[0]) * 2 + 0.3 * dg.outer(np.sin(x), x)
    for z in xs[1:]:
        A = A + 0.2 * dg.outer(z, np.cos(z))
    s = dg.linalg.solve(A, np.cos(x))
    return dg.stack([s.sum(), dg.linalg.det(A), dg.einsum("i,ij,j->", x, A, s)])


def f_selection(*xs):
    """R^n -> R through piecewise ops away from their kinks: sort, where, max, abs, gathers."""
    x = xs[0]
    ranked = dg.sort(x * 1.3 + 0.1).values * dg.arange(1, x.shape[0] + 1)
    out = ranked.sum() + dg.logsumexp(dg.where(x > 0, x ** 2, np.sin(x)), 0) + x[[1, 0]].prod() + x.abs().max()
    for z in xs[1:]:
        out = out + dg.cumprod(z + 1.5, 0).sum() * dg.linalg.vector_norm(x)
    return out



def f_complex(*xs):
    """R^n -> R^3 through complex intermediates: a complex signal, its FFT, conj, abs, real and imag."""
    x = xs[0]
    z = x + 1j * np.sin(x)
    for y in xs[1:]:
        z = z * np.exp(1j * y.sum())
    spectrum = dg.fft.fft(z * z.conj().flip(0))
    return dg.stack([(spectrum.abs() ** 2).sum() * 0.1, spectrum.real[0], (spectrum * spectrum).imag.sum()])

STRUCTURES = {
    "tensor": (np.array([0.3, -1.2, 0.7]),),
    "tuple": (np.array([0.4, -0.6]), np.array([0.9, 0.2])),
}
BASES = {"scalar": f_scalar, "vector": f_vector, "custom_function": f_custom_function, "in_place": f_in_place,
         "linalg": f_linalg, "selection": f_selection, "complex": f_complex}


def _flat(tree) -> dg.Tensor:
    """The tensors of ``tree``, raveled and concatenated (one 1-D Tensor)."""
    leaves = pytree.flatten(tree)[0]
    return dg.cat([t.reshape(-1) for t in leaves])


def _scalarize(y: dg.Tensor) -> dg.Tensor:
    """A nonlinear scalar of ``y``, for the transforms that need a scalar function."""
    return (np.sin(y) + 0.3 * y * y).sum()


def _tangents(shapes: list) -> tuple:
    """Fixed tangents (or hvp vectors) of the given shapes."""
    return tuple(dg.tensor(0.7 - 0.4 * np.arange(int(np.prod(s))).reshape(s) + 0.1 * i) for i, s in enumerate(shapes))


def _cotangent_like(y: dg.Tensor, source: dg.Tensor) -> dg.Tensor:
    """A cotangent of ``y``'s shape that depends on ``source`` (the transpose-of-a-vjp case)."""
    u = dg.tensor(0.2 + 0.1 * np.arange(int(np.prod(y.shape))).reshape(tuple(y.shape)))
    return u * (0.5 + np.tanh(source.sum()))


# -- finite differences on flat numpy vectors ------------------------------------------------

EPS = 1e-5
EPS2 = 2e-4


def _value(F: Callable, arrays: list) -> np.ndarray:
    with dg.no_grad():
        return np.asarray(F(*[dg.tensor(a) for a in arrays]).numpy(), dtype=np.float64).reshape(-1)


def _shift(arrays: list, k: int, i: int, h: float) -> list:
    moved = [a.copy() for a in arrays]
    moved[k].reshape(-1)[i] += h
    return moved


def _coordinates(arrays: list) -> list:
    return [(k, i) for k, a in enumerate(arrays) for i in range(a.size)]


def fd_jacobian(F: Callable, arrays: list) -> np.ndarray:
    """Central differences: shape (out size, total input size)."""
    cols = [(_value(F, _shift(arrays, k, i, EPS)) - _value(F, _shift(arrays, k, i, -EPS))) / (2 * EPS)
            for k, i in _coordinates(arrays)]
    return np.stack(cols, axis=-1)


def fd_directional(F: Callable, arrays: list, directions: list) -> np.ndarray:
    plus = [a + EPS * d for a, d in zip(arrays, directions, strict=True)]
    minus = [a - EPS * d for a, d in zip(arrays, directions, strict=True)]
    return (_value(F, plus) - _value(F, minus)) / (2 * EPS)


def _hessian_at_step(F: Callable, arrays: list, step: float) -> np.ndarray:
    coords = _coordinates(arrays)
    n = len(coords)
    h = np.empty((n, n))
    for a, (ka, ia) in enumerate(coords):
        for b, (kb, ib) in enumerate(coords[:a + 1]):
            def at(sa, sb, ka=ka, ia=ia, kb=kb, ib=ib):
                return _value(F, _shift(_shift(arrays, ka, ia, sa * step), kb, ib, sb * step))[0]
            h[a, b] = h[b, a] = (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * step * step)
    return h


def fd_hessian(F: Callable, arrays: list) -> np.ndarray:
    """Second-order central differences of scalar ``F``, Richardson-extrapolated: shape (n, n)."""
    return (4 * _hessian_at_step(F, arrays, EPS2 / 2) - _hessian_at_step(F, arrays, EPS2)) / 3


# -- the transforms --------------------------------------------------------------------------


@dataclass(frozen=True)
class Transform:
    name: str
    apply: Callable  # (F, number of inputs) -> function of the inputs returning a flat Tensor
    ref: Callable  # (F, list of numpy inputs) -> flat numpy array
    order: int = 1  # derivative order it adds (finite differences get less exact with each)

    def __repr__(self) -> str:
        return self.name


def _argnums(k: int):
    return tuple(range(k))


def _grad(F, k):
    return lambda *xs: _flat(func.grad(lambda *a: _scalarize(F(*a)), argnums=_argnums(k))(*xs))


def _grad_and_value(F, k):
    def G(*xs):
        g, value = func.grad_and_value(lambda *a: _scalarize(F(*a)), argnums=_argnums(k))(*xs)
        return dg.cat([_flat(g), value.reshape(1)])
    return G


def _vjp_out(F, k):
    return lambda *xs: func.vjp(F, *xs)[0].reshape(-1)


def _vjp_fn(F, k):
    def G(*xs):
        out, pullback = func.vjp(F, *xs)
        return _flat(pullback(_cotangent_like(out, xs[0])))
    return G


def _anchor(shapes: list) -> list:
    """A fixed point, independent of the inputs, with no ties (where sort, max and abs have kinks)."""
    return [np.linspace(0.2, 0.3, int(np.prod(shape))).reshape(shape) + 0.1 * i for i, shape in enumerate(shapes)]


def _vjp_transpose(F, k):
    """``c(inputs) -> J_F(anchor)^T c``: only the cotangent depends on the inputs (the transpose of a vjp)."""
    def G(*xs):
        out, pullback = func.vjp(F, *[dg.tensor(a) for a in _anchor([x.shape for x in xs])])
        return _flat(pullback(_cotangent_like(out, xs[0])))
    return G


def _jvp_along(F, k):
    """``t -> J_F(anchor) t``: only the tangent depends on the inputs (forward mode's transpose case)."""
    return lambda *xs: func.jvp(F, tuple(dg.tensor(a) for a in _anchor([x.shape for x in xs])), xs)[1].reshape(-1)


def _linearize_along(F, k):
    def G(*xs):
        _, jvp_fn = func.linearize(F, *[dg.tensor(a) for a in _anchor([x.shape for x in xs])])
        return jvp_fn(*xs).reshape(-1)
    return G


def _jvp(F, k):
    def G(*xs):
        out, tangent = func.jvp(F, xs, _tangents([x.shape for x in xs]))
        return dg.cat([out.reshape(-1), tangent.reshape(-1)])
    return G


def _jacrev(F, k):
    return lambda *xs: _flat(func.jacrev(F, argnums=_argnums(k))(*xs))


def _jacfwd(F, k):
    return lambda *xs: _flat(func.jacfwd(F, argnums=_argnums(k))(*xs))


def _hessian(F, k):
    return lambda *xs: _flat(func.hessian(lambda *a: _scalarize(F(*a)), argnums=_argnums(k))(*xs))


def _hvp(F, k):
    """The Hessian-vector product as torch.func's docs write it: forward over reverse."""
    def G(*xs):
        gradient = func.grad(lambda *a: _scalarize(F(*a)), argnums=_argnums(k))
        return _flat(func.jvp(gradient, xs, _tangents([x.shape for x in xs]))[1])
    return G


def _vmap(F, k):
    """``F`` at two points at once: the inputs and ``0.5 * inputs + 0.1``, batched."""
    def G(*xs):
        stacked = [dg.stack([x, 0.5 * x + 0.1]) for x in xs]
        return func.vmap(lambda *a: F(*a).reshape(-1))(*stacked).reshape(-1)
    return G


def _linearize(F, k):
    def G(*xs):
        out, jvp_fn = func.linearize(F, *xs)
        return dg.cat([out.reshape(-1), jvp_fn(*_tangents([x.shape for x in xs])).reshape(-1)])
    return G


def _af_vjp(F, k):
    """``autograd.functional.vjp`` (create_graph=False) of the scalarized ``F``: value and gradient."""
    def G(*xs):
        value, grads = functional.vjp(lambda *a: _scalarize(F(*a)), xs)
        return dg.cat([value.reshape(1), _flat(grads)])
    return G


def _af_jvp(F, k):
    def G(*xs):
        out, tangent = functional.jvp(F, xs, _tangents([x.shape for x in xs]))
        return dg.cat([out.reshape(-1), tangent.reshape(-1)])
    return G


def _af_hvp(F, k):
    return lambda *xs: _flat(functional.hvp(lambda *a: _scalarize(F(*a)), xs, _tangents([x.shape for x in xs]))[1])


def _numpy_tangents(arrays):
    return [t.numpy() for t in _tangents([a.shape for a in arrays])]


def _by_input_blocks(matrix: np.ndarray, arrays: list, axes: int) -> np.ndarray:
    """A Jacobian (``axes=1``: columns by input) or Hessian (``axes=2``: rows and columns by input)
    flattened as the transforms nest it: one block per input (per pair of inputs), each raveled."""
    bounds = np.cumsum([0] + [a.size for a in arrays])
    spans = list(itertools.pairwise(bounds))
    if axes == 1:
        return np.concatenate([matrix[:, i:j].reshape(-1) for i, j in spans])
    return np.concatenate([matrix[i:j, k:m].reshape(-1) for i, j in spans for k, m in spans])


def _ref_grad(F, arrays):
    return fd_jacobian(lambda *a: _scalarize(F(*a)), arrays)[0]


def _ref_vjp_fn(F, arrays):
    jac = fd_jacobian(F, arrays)
    with dg.no_grad():
        xs = [dg.tensor(a) for a in arrays]
        cot = _cotangent_like(F(*xs), xs[0]).numpy().reshape(-1)
    return cot @ jac


def _ref_vjp_transpose(F, arrays):
    anchor = _anchor([a.shape for a in arrays])
    with dg.no_grad():
        out = F(*[dg.tensor(a) for a in anchor])
        cot = _cotangent_like(out, dg.tensor(arrays[0])).numpy().reshape(-1)
    return cot @ fd_jacobian(F, anchor)


def _ref_along(F, arrays):
    return fd_directional(F, _anchor([a.shape for a in arrays]), arrays)


def _ref_jvp(F, arrays):
    return np.concatenate([_value(F, arrays), fd_directional(F, arrays, _numpy_tangents(arrays))])


def _ref_hvp(F, arrays):
    return fd_hessian(lambda *a: _scalarize(F(*a)), arrays) @ np.concatenate(
        [t.reshape(-1) for t in _numpy_tangents(arrays)])


TRANSFORMS = [
    Transform("grad", _grad, _ref_grad),
    Transform("grad_and_value", _grad_and_value,
              lambda F, a: np.concatenate([_ref_grad(F, a), _value(lambda *x: _scalarize(F(*x)), a)])),
    Transform("vjp_out", _vjp_out, _value, order=0),
    Transform("vjp_fn", _vjp_fn, _ref_vjp_fn),
    Transform("vjp_transpose", _vjp_transpose, _ref_vjp_transpose),
    Transform("jvp", _jvp, _ref_jvp),
    Transform("jvp_along", _jvp_along, _ref_along),
    Transform("jacrev", _jacrev, lambda F, a: _by_input_blocks(fd_jacobian(F, a), a, 1)),
    Transform("jacfwd", _jacfwd, lambda F, a: _by_input_blocks(fd_jacobian(F, a), a, 1)),
    Transform("hessian", _hessian, lambda F, a: _by_input_blocks(fd_hessian(lambda *x: _scalarize(F(*x)), a), a, 2),
              order=2),
    Transform("hvp", _hvp, _ref_hvp, order=2),
    Transform("vmap", _vmap, lambda F, a: np.concatenate([_value(F, a), _value(F, [0.5 * x + 0.1 for x in a])]),
              order=0),
    Transform("linearize", _linearize, _ref_jvp),
    Transform("linearize_along", _linearize_along, _ref_along),
    Transform("functional.vjp", _af_vjp,
              lambda F, a: np.concatenate([_value(lambda *x: _scalarize(F(*x)), a), _ref_grad(F, a)])),
    Transform("functional.jvp", _af_jvp, _ref_jvp),
    Transform("functional.hvp", _af_hvp, _ref_hvp, order=2),
]
BY_NAME = {t.name: t for t in TRANSFORMS}


# -- transforms over some of the inputs (the others closed over, or unbatched by vmap) -----------


def _spans(arrays: list) -> list:
    bounds = np.cumsum([0] + [a.size for a in arrays])
    return list(itertools.pairwise(bounds))


def _grad_last(F, k):
    return lambda *xs: _flat(func.grad(lambda *a: _scalarize(F(*a)), argnums=k - 1)(*xs))


def _jacfwd_last(F, k):
    return lambda *xs: _flat(func.jacfwd(F, argnums=k - 1)(*xs))


def _jacrev_first(F, k):
    return lambda *xs: _flat(func.jacrev(F, argnums=0)(*xs))


def _jvp_first(F, k):
    """A jvp in the first input alone, the others closed over (they keep what outer transforms gave them)."""
    def G(*xs):
        rest = xs[1:]
        out, tangent = func.jvp(lambda x0: F(x0, *rest), (xs[0],), _tangents([xs[0].shape]))
        return dg.cat([out.reshape(-1), tangent.reshape(-1)])
    return G


def _vmap_first(F, k):
    """``vmap`` over the first input only (``in_dims=(0, None, ...)``): the others are shared by the batch."""
    def G(*xs):
        stacked = dg.stack([xs[0], 0.5 * xs[0] + 0.1])
        in_dims = (0,) + (None,) * (k - 1)
        return func.vmap(lambda *a: F(*a).reshape(-1), in_dims=in_dims)(stacked, *xs[1:]).reshape(-1)
    return G


def _ref_columns(F, arrays, which: int) -> np.ndarray:
    i, j = _spans(arrays)[which]
    return fd_jacobian(F, arrays)[:, i:j].reshape(-1)


def _ref_jvp_first(F, arrays):
    directions = [_numpy_tangents(arrays[:1])[0]] + [np.zeros_like(a) for a in arrays[1:]]
    return np.concatenate([_value(F, arrays), fd_directional(F, arrays, directions)])


PARTIAL_TRANSFORMS = [
    Transform("grad_last", _grad_last, lambda F, a: _ref_columns(lambda *x: _scalarize(F(*x)), a, -1)),
    Transform("jacfwd_last", _jacfwd_last, lambda F, a: _ref_columns(F, a, -1)),
    Transform("jacrev_first", _jacrev_first, lambda F, a: _ref_columns(F, a, 0)),
    Transform("jvp_first", _jvp_first, _ref_jvp_first),
    Transform("vmap_first", _vmap_first,
              lambda F, a: np.concatenate([_value(F, a), _value(F, [0.5 * a[0] + 0.1, *a[1:]])]), order=0),
]
WITH_PARTIAL = BY_NAME | {t.name: t for t in PARTIAL_TRANSFORMS}


def compose(names: tuple, base: Callable, k: int) -> Callable:
    """``names[0](names[1](...(base)))`` as one function returning a flat Tensor."""
    F = base
    for name in reversed(names):
        F = WITH_PARTIAL[name].apply(F, k)
    return F


def _tolerance(names: tuple) -> float:
    order = sum(WITH_PARTIAL[n].order for n in names)
    return 1e-6 if order <= 2 else 1e-5 if order <= 4 else 1e-4


def _functional_under_vmap(names: tuple) -> bool:
    """``autograd.functional`` inside ``vmap``: refused, as torch refuses it."""
    first_vmap = next((i for i, n in enumerate(names) if n.startswith("vmap")), None)
    return first_vmap is not None and any(n.startswith("functional.") for n in names[first_vmap:])


def _check(names: tuple, base_name: str, structure: str) -> None:
    arrays = [a.copy() for a in STRUCTURES[structure]]
    k = len(arrays)
    base = BASES[base_name]
    outer, inner = WITH_PARTIAL[names[0]], compose(names[1:], base, k)
    if _functional_under_vmap(names):
        with pytest.raises(RuntimeError, match=r"autograd\.functional\.\w+: input 0 is batched by an enclosing vmap"):
            compose(names, base, k)(*[dg.tensor(a) for a in arrays])
        return
    result = compose(names, base, k)(*[dg.tensor(a) for a in arrays])
    # a finished transform leaves no graph behind when nothing outside tracks its inputs
    assert result.grad_fn is None and not result.requires_grad, (names, result.grad_fn)
    expected = outer.ref(inner, arrays)
    tol = _tolerance(names)
    np.testing.assert_allclose(result.numpy(), expected, rtol=tol, atol=tol, err_msg=str(names))


def _cases(size: int):
    combos = list(itertools.product(BASES, STRUCTURES))
    return [(names, *combos[i % len(combos)]) for i, names in enumerate(
        itertools.product(BY_NAME, repeat=size))]


PAIRS = _cases(2)
TRIPLES = random.Random(24).sample(_cases(3), 60)


@pytest.mark.parametrize("name", list(BY_NAME))
@pytest.mark.parametrize("base_name", list(BASES))
@pytest.mark.parametrize("structure", list(STRUCTURES))
def test_each_transform_alone_matches_its_definition(name, base_name, structure):
    _check((name,), base_name, structure)


@pytest.mark.parametrize(("names", "base_name", "structure"), PAIRS, ids=lambda v: "-".join(v) if
                         isinstance(v, tuple) else v)
def test_every_ordered_pair_of_transforms(names, base_name, structure):
    _check(names, base_name, structure)


@pytest.mark.parametrize(("names", "base_name", "structure"), TRIPLES, ids=lambda v: "-".join(v) if
                         isinstance(v, tuple) else v)
def test_a_sample_of_triples_of_transforms(names, base_name, structure):
    _check(names, base_name, structure)


def _partial_cases() -> list:
    """Pairs with a transform over some of the inputs on either side, and a sample of triples with one,
    on the two-input structure (where "some of the inputs" differs from all of them)."""
    partial = [t.name for t in PARTIAL_TRANSFORMS]
    everything = list(WITH_PARTIAL)
    pairs = [names for names in itertools.product(everything, repeat=2) if set(names) & set(partial)]
    triples = [names for names in itertools.product(everything, repeat=3) if set(names) & set(partial)]
    # vmap of forward over reverse, the shape of per-example Hessian blocks and mixed partials
    batched_mixed = list(itertools.product(("vmap", "vmap_first"), ("jacfwd", "jacfwd_last", "hessian", "jvp_first"),
                                           ("grad", "grad_last", "jacrev_first", "vjp_fn")))
    chosen = pairs + batched_mixed + random.Random(31).sample(triples, 60)
    return [(names, list(BASES)[i % len(BASES)]) for i, names in enumerate(chosen)]


@pytest.mark.parametrize(("names", "base_name"), _partial_cases(),
                         ids=lambda v: "-".join(v) if isinstance(v, tuple) else v)
def test_transforms_over_some_of_the_inputs_compose(names, base_name):
    """``vmap(jacfwd(grad(f, argnums=1), argnums=0), in_dims=(0, None))`` once raised: a dual number
    batched by an outer vmap hid its tangent's batch of an inner one from the batching rule."""
    _check(names, base_name, "tuple")


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
@pytest.mark.parametrize("names", list(itertools.product(BY_NAME, repeat=1))
                         + random.Random(11).sample(list(itertools.product(BY_NAME, repeat=2)), 20),
                         ids="-".join)
def test_transforms_inside_no_grad_and_inference_mode_give_the_same_values(mode, names):
    """A transform records its own graph whatever the grad mode around it, as torch.func's do
    (inside ``inference_mode`` they once silently gave zeros). Tensors made inside
    ``inference_mode`` (here: the tangents of ``hvp`` and ``*_along``) are inference tensors:
    torch.func's transforms accept them, and so do dualgrad.func's; ``autograd.functional``
    refuses them with torch's error (torch's gives zeros there): never a wrong value."""
    if _functional_under_vmap(names):
        return
    arrays = [a.copy() for a in STRUCTURES["tuple"]]
    G = compose(names, f_vector, len(arrays))
    inputs = [dg.tensor(a) for a in arrays]
    expected = G(*inputs).numpy()
    with getattr(dg, mode)():
        try:
            got = G(*inputs)
        except RuntimeError as error:  # tangents the test makes inside inference_mode are inference tensors
            assert mode == "inference_mode" and "nference tensor" in str(error), error
            assert any(name.startswith("functional.") for name in names), error
            return
        finally:
            assert dg.is_inference_mode_enabled() == (mode == "inference_mode")
    assert got.grad_fn is None and not got.requires_grad
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_grad_of_an_inference_tensor_inside_inference_mode():
    with dg.inference_mode():
        x = dg.tensor([1.0, 2.0])
        np.testing.assert_array_equal(dg.func.grad(lambda x: (x * x).sum())(x).numpy(), [2.0, 4.0])


@pytest.mark.parametrize("names", list(itertools.product(BY_NAME, repeat=1))
                         + random.Random(7).sample(list(itertools.product(BY_NAME, repeat=2)), 20),
                         ids="-".join)
def test_results_on_tracked_inputs_are_differentiable_by_dualgrad_grad(names):
    """The base level (``requires_grad`` inputs, ``dualgrad.grad``) is the outermost transform."""
    arrays = [a.copy() for a in STRUCTURES["tuple"]]
    G = compose(names, f_vector, len(arrays))
    xs = [dg.tensor(a, requires_grad=True) for a in arrays]
    if _functional_under_vmap(names):
        return
    out = G(*xs)
    if names[0].startswith("functional."):  # create_graph=False: no graph for the base level, as torch
        assert out.grad_fn is None and not out.requires_grad
        return
    assert out.requires_grad
    weights = dg.tensor(np.linspace(0.5, 1.5, out.shape[0]))
    grads = dg.autograd.grad((out * weights).sum(), xs, materialize_grads=True)
    expected = fd_jacobian(lambda *a: (G(*a) * weights).sum(), arrays)[0]
    tol = _tolerance(names) * 10
    np.testing.assert_allclose(np.concatenate([g.numpy().reshape(-1) for g in grads]), expected,
                               rtol=tol, atol=tol)


# -- the reproducers of issue 24 (values from torch.func 2.13) ----------------------------------

X = np.array([0.3, -1.2, 0.7])
V = np.array([1.0, 0.5, -2.0])


def test_primal_output_of_vjp_keeps_an_enclosing_jvps_tangent():
    f = lambda x: (np.sin(x) ** 2).sum()  # noqa: E731
    tangent = func.jvp(lambda x: func.vjp(f, x)[0], (dg.tensor(X),), (dg.tensor(V),))[1]
    np.testing.assert_allclose(tangent.numpy(), -1.743988576857, rtol=1e-9)
    assert tangent.grad_fn is None


def test_vjp_fn_is_differentiable_with_respect_to_its_cotangent():
    """The transpose of a vjp: ``c -> J^T c`` is linear, its vjp is ``J v``, its jvp ``J^T v``."""
    g = lambda x: np.sin(x) * x[0]  # noqa: E731
    _, pullback = func.vjp(g, dg.tensor(X))
    jac = fd_jacobian(g, [X.copy()])
    transpose = lambda c: pullback(c)[0]  # noqa: E731
    jv = func.vjp(transpose, dg.zeros(3))[1](dg.tensor(V))[0]
    np.testing.assert_allclose(jv.numpy(), [0.582121153399, -0.877685422796, 0.185312374867], rtol=1e-9)
    np.testing.assert_allclose(jv.numpy(), jac @ V, rtol=1e-6)
    np.testing.assert_allclose(func.jvp(transpose, (dg.zeros(3),), (dg.tensor(V),))[1].numpy(), jac.T @ V,
                               rtol=1e-6)
    np.testing.assert_allclose(func.jacrev(transpose)(dg.zeros(3)).numpy(), jac.T, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(func.jacfwd(transpose)(dg.zeros(3)).numpy(), jac.T, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(func.grad(lambda c: transpose(c).sum())(dg.zeros(3)).numpy(), jac @ np.ones(3),
                               rtol=1e-6)
    for result in (jv, func.jacrev(transpose)(dg.zeros(3))):
        assert result.grad_fn is None and not result.requires_grad


def test_gauss_newton_product_through_the_transpose_of_a_vjp():
    """``J^T J v`` with one vjp and the jvp of its vjp_fn (no Jacobian built)."""
    g = lambda x: np.sin(x) * x[0]  # noqa: E731
    x = dg.tensor(X)
    _, pullback = func.vjp(g, x)
    jv = func.jvp(g, (x,), (dg.tensor(V),))[1]
    jac = fd_jacobian(g, [X.copy()])
    np.testing.assert_allclose(pullback(jv)[0].numpy(), jac.T @ jac @ V, rtol=1e-6)


def test_grad_of_a_function_calling_grad_returns_a_plain_tensor():
    f = lambda x: (np.sin(x) ** 2).sum()  # noqa: E731
    outer = lambda x: func.grad(lambda y: (x * y ** 2).sum())(dg.tensor([1., 2., 3.])).sum()  # noqa: E731
    result = func.grad(outer)(dg.tensor(X))
    assert result.grad_fn is None and not result.requires_grad
    np.testing.assert_allclose(result.numpy(), [2., 4., 6.])
    maml = lambda x: f(x - 0.1 * func.grad(f)(x))  # noqa: E731
    result = func.grad(maml)(dg.tensor(X))
    assert result.grad_fn is None and not result.requires_grad
    np.testing.assert_allclose(result.numpy(), fd_jacobian(maml, [X.copy()])[0], rtol=1e-6)


def _reachable_nodes(t: dg.Tensor) -> int:
    """How many graph nodes ``t``'s graph holds."""
    seen, stack = set(), [t.grad_fn] if t.grad_fn is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(nxt for nxt, _ in node.next_functions if nxt is not None)
    return len(seen)


def test_an_optimisation_loop_over_nested_grads_stays_flat():
    """Feeding ``grad(outer)(x)`` back does not grow a graph from step to step."""
    outer = lambda x: func.grad(lambda y: (x * y ** 2).sum() + (np.sin(x) * y).sum())(  # noqa: E731
        dg.tensor([1., 2., 3.])).pow(2).sum()
    x = dg.tensor(X)
    for _ in range(20):
        x = x - 0.01 * func.grad(outer)(x)
        assert x.grad_fn is None and not x.requires_grad
        assert _reachable_nodes(x) == 0


def test_a_base_level_tensor_closed_over_keeps_its_graph_as_in_torch():
    """``w`` requires grad outside every transform: the gradient depends on it (torch: MulBackward0)."""
    w = dg.tensor([1., 2., 3.], requires_grad=True)
    g = func.grad(lambda y: (w * y ** 2).sum())(dg.tensor(X))
    assert g.requires_grad
    np.testing.assert_allclose(dg.autograd.grad(g.sum(), w)[0].numpy(), 2 * X)


def test_no_grad_around_a_transform_gives_plain_results():
    x = dg.tensor(X, requires_grad=True)
    with dg.no_grad():
        g = func.grad(lambda y: (np.sin(y) ** 2).sum())(x)
        value = func.vjp(lambda y: np.sin(y), x)[0]
    assert not g.requires_grad and not value.requires_grad


def test_aux_keeps_an_enclosing_transforms_tangent():
    def f(x):
        return (x ** 2).sum(), np.sin(x)

    tangent = func.jvp(lambda x: func.grad(f, has_aux=True)(x)[1], (dg.tensor(X),), (dg.tensor(V),))[1]
    np.testing.assert_allclose(tangent.numpy(), np.cos(X) * V)


def test_primal_output_of_linearize_and_grad_and_value_under_jvp():
    f = lambda x: (np.sin(x) ** 2).sum()  # noqa: E731
    expected = fd_directional(f, [X.copy()], [V])
    for via in (lambda x: func.linearize(f, x)[0], lambda x: func.grad_and_value(f)(x)[1]):
        np.testing.assert_allclose(func.jvp(via, (dg.tensor(X),), (dg.tensor(V),))[1].numpy(), expected,
                                   rtol=1e-6)


# -- autograd.functional inside func transforms ---------------------------------------------

def _f_cubic(x):
    return (np.sin(x) ** 2).sum() * x[0]


FUNCTIONAL_VARIANTS = {
    "vjp": lambda x: functional.vjp(np.sin, x * x, dg.tensor([1., 2., 3.]))[1],
    "vjp output": lambda x: functional.vjp(np.sin, x * x, dg.tensor([1., 2., 3.]))[0],
    "jvp": lambda x: functional.jvp(np.sin, x * x, dg.tensor([1., 2., 3.]))[1],
    "jvp output": lambda x: functional.jvp(np.sin, x * x, dg.tensor([1., 2., 3.]))[0],
    "vhp": lambda x: functional.vhp(_f_cubic, x, dg.tensor(V))[1],
    "hvp": lambda x: functional.hvp(_f_cubic, x, dg.tensor(V))[1],
    "jacobian": lambda x: functional.jacobian(np.sin, x * x),
    "jacobian vectorized": lambda x: functional.jacobian(np.sin, x * x, vectorize=True),
    "jacobian forward": lambda x: functional.jacobian(np.sin, x * x, vectorize=True, strategy="forward-mode"),
    "hessian": lambda x: functional.hessian(_f_cubic, x),
    "hessian forward": lambda x: functional.hessian(_f_cubic, x, vectorize=True,
                                                     outer_jacobian_strategy="forward-mode"),
}


@pytest.mark.parametrize("name", list(FUNCTIONAL_VARIANTS))
def test_autograd_functional_results_are_differentiable_by_enclosing_transforms(name):
    """create_graph=False concerns the base level (as torch); an enclosing func transform still
    differentiates the results (torch refuses autograd.functional inside its transforms)."""
    H = FUNCTIONAL_VARIANTS[name]
    x = dg.tensor(X)
    tangent = func.jvp(lambda y: H(y).reshape(-1), (x,), (dg.tensor(V),))[1]
    np.testing.assert_allclose(tangent.numpy(), fd_directional(lambda y: H(y).reshape(-1), [X.copy()], [V]),
                               rtol=1e-6, atol=1e-8)
    gradient = func.grad(lambda y: (H(y) ** 2).sum())(x)
    np.testing.assert_allclose(gradient.numpy(), fd_jacobian(lambda y: (H(y) ** 2).sum(), [X.copy()])[0],
                               rtol=1e-6, atol=1e-8)
    for result in (tangent, gradient):
        assert result.grad_fn is None and not result.requires_grad
    assert not x.requires_grad


def test_autograd_functional_under_vmap_is_refused_with_a_clear_error():
    with pytest.raises(RuntimeError, match=r"autograd\.functional\.vjp: input 0 is batched by an enclosing vmap"):
        func.vmap(lambda x: functional.vjp(np.sin, x, dg.ones(2))[1])(dg.ones((3, 2)))
    with pytest.raises(RuntimeError, match=r"functional\.hessian: input 0 is batched .*dualgrad\.func\.hessian"):
        func.vmap(lambda x: functional.hessian(_f_cubic, x))(dg.ones((3, 2)))


def test_autograd_functional_keeps_no_base_level_graph_without_create_graph():
    """As torch: outputs and results of the functional API are detached unless create_graph."""
    x = dg.tensor(X, requires_grad=True)
    out, product = functional.vjp(np.sin, x, dg.tensor(V))
    assert not out.requires_grad and not product.requires_grad
    out, product = functional.vjp(np.sin, x, dg.tensor(V), create_graph=True)
    assert out.requires_grad and product.requires_grad


def test_a_failing_function_leaves_no_level_behind():
    from dualgrad.base.state import STATE

    def fails(x):
        raise ValueError("inside the transform")

    for call in (lambda: func.grad(fails)(dg.tensor(X)), lambda: func.vjp(fails, dg.tensor(X)),
                 lambda: func.grad(lambda x: func.vjp(fails, x)[0])(dg.tensor(X)),
                 lambda: functional.vjp(fails, dg.tensor(X), dg.tensor(V))):
        with pytest.raises(ValueError, match="inside the transform"):
            call()
        assert STATE.reverse_levels == ()
    # and the next call is unaffected
    assert func.grad(lambda x: (x * x).sum())(dg.tensor(X)).grad_fn is None


def test_forward_over_reverse_with_tangents_made_in_inference_mode():
    """torch.func accepts inference tensors as primals and tangents, also where the transform saves
    them for a backward (``jvp`` of ``grad``)."""
    f = lambda x: (x.sin() * x).sum()  # noqa: E731
    x = dg.tensor([1.0, 2.0])
    with dg.inference_mode():
        t = dg.ones(2)
        got = func.jvp(func.grad(f), (x,), (t,))[1]
        hess = func.hessian(f)(t)
    expected = 2 * np.cos([1.0, 2.0]) - np.array([1.0, 2.0]) * np.sin([1.0, 2.0])
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(hess.numpy(), np.diag([expected[0]] * 2), rtol=1e-12)
