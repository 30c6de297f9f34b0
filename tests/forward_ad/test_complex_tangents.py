"""Tangents that must not lose a part: ``np.imag``/``np.real`` of real tensors (every mode), and
max/min of complex tensors (NumPy's lexicographic order) keeping the imaginary part of the tangent."""

from __future__ import annotations

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import forward_ad as fwAD

X = np.array([[1.0, -2.0], [0.5, 3.0]])


@pytest.mark.parametrize("part, slope", [(np.imag, 0.0), (np.real, 1.0)], ids=["imag", "real"])
def test_numpy_parts_of_a_real_tensor_in_every_mode(part, slope):
    x, v = dg.tensor(X), dg.tensor([[0.5, 1.0], [-1.0, 2.0]])
    value, tangent = dg.func.jvp(part, (x,), (v,))
    np.testing.assert_array_equal(value.numpy(), part(X))
    np.testing.assert_array_equal(tangent.numpy(), slope * v.numpy())
    np.testing.assert_array_equal(dg.func.jacrev(part)(x).numpy(), slope * np.eye(4).reshape(2, 2, 2, 2))
    np.testing.assert_array_equal(dg.func.jacfwd(part)(x).numpy(), slope * np.eye(4).reshape(2, 2, 2, 2))
    np.testing.assert_array_equal(dg.func.vmap(part)(x).numpy(), part(X))
    batched = dg.func.vmap(lambda r, t: dg.func.jvp(part, (r,), (t,))[1])(x, v)
    np.testing.assert_array_equal(batched.numpy(), slope * v.numpy())


def test_torchs_imag_still_refuses_a_real_tensor():
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        dg.imag(dg.tensor([1.0]))


Z = np.array([[1 + 2j, 3 - 1j, 2.5 + 0.5j], [-1 + 1j, 0.5 - 2j, -1.5 - 3j]])  # (real parts distinct: no ties)
V = np.array([[1j, 0.5 + 1j, 2 - 1j], [1 + 1j, -1j, 0.25 + 2j]])
EXTREMES = {
    "max()": lambda z: z.max(), "min()": lambda z: z.min(),
    "max(dim)": lambda z: z.max(1).values, "min(dim)": lambda z: z.min(0).values,
    "max(dim, keepdim)": lambda z: z.max(1, keepdim=True)[0],
    "amax": lambda z: dg.amax(z, 1), "amin": lambda z: dg.amin(z), "amax(dims)": lambda z: dg.amax(z, (0, 1)),
    "np.max": lambda z: np.max(z), "np.min(axis)": lambda z: np.min(z, axis=0), "np.amax": lambda z: np.amax(z, 1),
    "max(a, b)": lambda z: dg.maximum(z[0], z[1]), "min(a, b)": lambda z: dg.minimum(z[0], z[1]),
    "np.maximum": lambda z: np.maximum(z[0], z[1]), "np.fmin": lambda z: np.fmin(z[0], z[1]),
    "sort": lambda z: dg.sort(z, 1).values, "topk": lambda z: dg.topk(z, 2).values,
    "cummax": lambda z: dg.cummax(z, 1).values, "msort": lambda z: np.sort(z, axis=0),
}


def _selected(fn):
    """What ``fn`` selects, computed by NumPy on the values (NumPy's lexicographic order)."""
    def on_arrays(z):
        return fn(dg.tensor(z)).numpy()
    return on_arrays


@pytest.mark.parametrize("name", list(EXTREMES))
def test_selection_of_complex_keeps_the_whole_tangent(name):
    fn = EXTREMES[name]
    try:
        fn(dg.tensor(Z))
    except (TypeError, RuntimeError) as err:  # an op that refuses complex input, as torch's
        pytest.skip(f"{name} refuses complex input: {err}")
    eps = 1e-7
    want = (_selected(fn)(Z + eps * V) - _selected(fn)(Z - eps * V)) / (2 * eps)
    with fwAD.dual_level():
        out = fn(fwAD.make_dual(dg.tensor(Z), dg.tensor(V)))
        tangent = fwAD.unpack_dual(out).tangent
    assert tangent.dtype.kind == "c"
    np.testing.assert_allclose(tangent.numpy(), want, rtol=1e-7, atol=1e-7)
    # reverse mode agrees: <u, J v> = Re <J^H u, v> (conjugate Wirtinger)
    u = np.exp(1j * np.arange(want.size)).reshape(want.shape)
    z = dg.tensor(Z, requires_grad=True)
    (g,) = dg.autograd.grad(fn(z), z, dg.tensor(u))
    np.testing.assert_allclose(np.vdot(u, tangent.numpy()).real, np.vdot(g.numpy(), V).real, rtol=1e-10)


def test_sign_of_complex_is_refused_and_numpy_sign_is_sgn():
    z = dg.tensor([3 + 4j, -1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="torch.sign is not intended to support complex numbers"):
        dg.sign(z)
    s = np.sign(z)
    np.testing.assert_allclose(s.detach().numpy(), np.sign(z.detach().numpy()))
    assert s.grad_fn.name() == "SgnBackward0"
