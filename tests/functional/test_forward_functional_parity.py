"""forward_ad and dualgrad.functional against torch 2.13: the divergences a differential audit found.

torch's values and error words are pinned literally (the tests do not import torch);
the Hessian-vector products are checked against central finite differences too.
"""

from __future__ import annotations

import numpy as np
import pytest
from dualgrad.autograd.functional import hessian, hvp, jacobian, jvp, vhp

import dualgrad as dg
from dualgrad import forward_ad as fwAD

# f, and torch's hvp(f, [0.7], [0.5], create_graph=True)[1]: each f's output is saved by its own
# node (its backward rule reads it), so the gradient's tangent needs the output's tangent
SAVED_OUTPUT_FUNCTIONS = {
    "exp": (lambda a: a.exp(), 1.0068763537352383),
    "tanh": (lambda a: a.tanh(), -0.3836161550459583),
    "sigmoid": (lambda a: a.sigmoid(), -0.03728939422017091),
    "sqrt": (lambda a: a.sqrt(), -0.21343368023828455),
    "norm": (lambda a: a.norm(), 0.0),
    "logsumexp": (lambda a: a.logsumexp(0), 0.0),
    "exp of prod": (lambda a: a.prod().exp(), 1.0068763537352383),
}


def second_difference(f, x, v, eps=1e-4):
    """``H v`` of scalar ``f`` at ``x``: central differences of the reverse-mode gradient."""
    def gradient(point):
        p = dg.tensor(point, requires_grad=True)
        return dg.grad(f(p), p)[0].numpy()
    return (gradient(x + eps * v) - gradient(x - eps * v)) / (2 * eps)


@pytest.mark.parametrize("name", SAVED_OUTPUT_FUNCTIONS)
@pytest.mark.parametrize("strict", [False, True])
def test_hvp_create_graph_of_a_function_whose_output_its_backward_reads(name, strict):
    f, expected = SAVED_OUTPUT_FUNCTIONS[name]
    value, product = hvp(f, dg.tensor([0.7]), dg.tensor([0.5]), create_graph=True, strict=strict)
    np.testing.assert_allclose(product.detach().numpy(), [expected], atol=1e-12)
    np.testing.assert_allclose(product.detach().numpy(), second_difference(f, np.array([0.7]), np.array([0.5])),
                               atol=1e-7)
    # the same as without create_graph
    np.testing.assert_allclose(product.detach().numpy(),
                               hvp(f, dg.tensor([0.7]), dg.tensor([0.5]))[1].numpy(), atol=1e-12)


def test_hvp_create_graph_of_a_0d_input_is_differentiable_further():
    x = dg.tensor(0.7, requires_grad=True)
    value, product = hvp(lambda a: a.exp(), x, dg.tensor(0.5), create_graph=True)
    assert product.requires_grad and value.requires_grad
    assert product.item() == pytest.approx(1.0068763537352383, abs=1e-12)
    # torch: d(0.5 exp(x))/dx = 1.0069
    assert dg.grad(product, x)[0].item() == pytest.approx(1.0068763537352383, abs=1e-12)


@pytest.mark.parametrize("cast", [lambda x: x.long(), lambda x: x.int(), lambda x: x.bool(),
                                  lambda x: x.to(dg.int64), lambda x: x.type(dg.int64),
                                  lambda x: x.to(dg.int32, copy=True)])
def test_a_cast_to_an_integer_or_bool_dtype_has_no_tangent(cast):
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1.5, -2.5, 3.0]), dg.tensor([1.0, 2.0, 3.0]))
        assert fwAD.unpack_dual(cast(x)).tangent is None  # torch: None


def test_a_cast_between_differentiable_dtypes_keeps_its_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1.5, -2.5]), dg.tensor([1.0, 2.0]))
        to_float = fwAD.unpack_dual(x.float()).tangent
        to_complex = fwAD.unpack_dual(x.to(dg.complex128)).tangent
    assert to_float.dtype == dg.float32 and to_float.tolist() == [1.0, 2.0]
    assert to_complex.dtype == dg.complex128 and to_complex.tolist() == [1.0, 2.0]


def test_detach_in_place_drops_the_tangent():
    with fwAD.dual_level():
        x = fwAD.make_dual(dg.tensor([1.0, 2.0]), dg.tensor([1.0, 1.0]))
        y = x * 1
        assert y.detach_() is y
        primal, tangent = fwAD.unpack_dual(y)
        assert tangent is None  # torch: None
        assert fwAD.unpack_dual(x).tangent.tolist() == [1.0, 1.0]
    assert primal.tolist() == [1.0, 2.0]


def test_jvp_and_hvp_take_an_integer_or_bool_v_in_the_input_dtype():
    x = dg.tensor([1.0, 2.0])
    out, tangent = jvp(lambda a: a ** 3, x, dg.tensor([1, 2]))
    assert tangent.dtype == dg.float64 and tangent.tolist() == [3.0, 24.0]  # torch: [3., 24.]
    assert jvp(lambda a: a ** 3, x, dg.tensor([True, False]))[1].tolist() == [3.0, 0.0]
    value, product = hvp(lambda a: (a ** 3).sum(), x, dg.tensor([1, 2]))
    assert value.item() == 9.0 and product.tolist() == [6.0, 24.0]  # torch: 9., [6., 24.]
    f32 = jvp(lambda a: a * 2, dg.tensor([1.0], dtype=dg.float32), dg.tensor([1], dtype=dg.int32))[1]
    assert f32.dtype == dg.float32 and f32.tolist() == [2.0]


@pytest.mark.parametrize("product", [jvp, hvp])
@pytest.mark.parametrize("x, v, given, expected", [
    ([1.0, 2.0], [1.0 + 1.0j, 1.0], "complex128", "float64"),
    ([1.0 + 1.0j], [1.0], "float64", "complex128"),
    ([1.0 + 1.0j], [1], "int64", "complex128"),
])
def test_jvp_and_hvp_refuse_a_v_complex_where_the_input_is_not_or_the_reverse(product, x, v, given, expected):
    f = (lambda a: a * a) if product is jvp else (lambda a: (a * a).sum().abs())
    with pytest.raises(RuntimeError, match=(
            "For complex Tensors, both grad_output and output are required to have the same dtype. "
            f"Mismatch in dtype: grad_output\\[0\\] has a dtype of {given} and output\\[0\\] has a dtype "
            f"of {expected}")):
        product(f, dg.tensor(x), dg.tensor(v))


@pytest.mark.parametrize("product", [vhp, hvp])
@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("f, x, v", [
    (lambda a: (a ** 2 * (1 + 1j)).sum(), [1.0, 2.0], [1.0, 1.0]),
    (lambda a: (a ** 2).sum(), [1.0 + 1.0j, 2.0], [1.0 + 0.0j, 1.0]),
])
def test_vhp_and_hvp_refuse_a_complex_output(product, create_graph, f, x, v):
    with pytest.raises(RuntimeError,
                       match="grad can be implicitly created only for real scalar outputs but got complex128"):
        product(f, dg.tensor(x), dg.tensor(v), create_graph=create_graph)


@pytest.mark.parametrize("product", [vhp, hvp])
def test_vhp_and_hvp_of_a_complex_constant_are_zeros(product):
    value, result = product(lambda a: dg.tensor(1j), dg.tensor([1.0, 2.0]), dg.tensor([1.0, 1.0]))
    assert value.item() == 1j and result.dtype == dg.float64 and result.tolist() == [0.0, 0.0]  # torch


@pytest.mark.parametrize("options", [dict(), dict(create_graph=True), dict(strict=True), dict(vectorize=True),
                                     dict(vectorize=True, strategy="forward-mode")])
def test_jacobian_of_an_empty_output_is_empty(options):
    # torch fails (stack of an empty list; an IndexError with vectorize=True)
    jac = jacobian(lambda a: a[:0], dg.tensor([1.0, 2.0]), **options)
    assert jac.shape == (0, 2) and jac.dtype == dg.float64


@pytest.mark.parametrize("options", [dict(), dict(vectorize=True),
                                     dict(vectorize=True, outer_jacobian_strategy="forward-mode")])
def test_hessian_with_an_empty_input(options):
    (aa, ab), (ba, bb) = hessian(lambda a, b: a.sum() + (b ** 2).sum(), (dg.zeros(0), dg.tensor([1.0])), **options)
    assert (aa.shape, ab.shape, ba.shape, bb.shape) == ((0, 0), (0, 1), (1, 0), (1, 1))
    assert bb.tolist() == [[2.0]]  # torch's (forward-mode outer strategy; the others fail in stack)
