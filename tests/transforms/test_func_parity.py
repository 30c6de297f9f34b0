"""dualgrad.func against torch.func 2.13: the divergences a differential audit found, pinned.

Values, error types and key words of messages are torch's (literal: the tests do not import torch).
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.func import grad, grad_and_value, hessian, jacfwd, jacrev, linearize, vmap

Pair = collections.namedtuple("Pair", "a b")
X = dg.tensor([1., 2., 3.])
B = dg.tensor([[1., 2., 3.], [4., 5., 6.]])
Z = dg.tensor([1 + 1j, 2.])


# -- grad of a complex scalar: torch refuses it (dualgrad returned zeros) --------------------
@pytest.mark.parametrize("call", [
    lambda: grad(lambda x: (x * 1j).sum())(X),
    lambda: grad_and_value(lambda x: (x * 1j).sum())(X),
    lambda: grad(lambda z: (z * z).sum())(Z),
    lambda: vmap(grad(lambda x: (x * 1j).sum()))(B),
])
def test_grad_of_a_complex_output_raises(call):
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar outputs but got "
                                           "complex128"):
        call()


def test_grad_of_a_real_function_of_a_complex_input_is_the_conjugate_wirtinger_gradient():
    g = grad(lambda z: (z * z.conj()).real.sum())(Z)  # |z|^2: 2z, as torch
    np.testing.assert_allclose(g.numpy(), [2 + 2j, 4.])


# -- jacrev refuses complex arguments and outputs, as torch (its rows were conjugated) ------
@pytest.mark.parametrize("call, words", [
    (lambda: jacrev(lambda z: z * z)(Z), "jacrev: Expected all inputs to be real but received complex tensor at "
                                         "flattened input idx: 0"),
    (lambda: jacrev(lambda z: z.abs())(Z), "Expected all inputs to be real .* idx: 0"),
    (lambda: jacrev(lambda x: x * (1 + 1j))(X), "jacrev: Expected all outputs to be real but received complex "
                                                "tensor at flattened input idx: 0"),
    (lambda: jacrev(lambda x: (x, x * 1j))(X), "Expected all outputs to be real .* idx: 1"),
    (lambda: jacrev(lambda x, z: x * z.real)(X[:2], Z), "Expected all inputs to be real .* idx: 1"),
    (lambda: jacrev(lambda x, z: x * z, argnums=1)(X[:2], Z), "Expected all inputs to be real .* idx: 1"),
    (lambda: hessian(lambda z: (z * z.conj()).real.sum())(Z), "Expected all inputs to be real"),
])
def test_jacrev_refuses_complex_tensors(call, words):
    with pytest.raises(RuntimeError, match=words):
        call()


def test_jacfwd_keeps_complex_support_its_columns_are_jvps():
    """A dualgrad extension (torch's jacfwd refuses complex): the Jacobian of a holomorphic function."""
    np.testing.assert_allclose(jacfwd(lambda z: z * z)(Z).numpy(), np.diag([2 + 2j, 4.]))
    np.testing.assert_allclose(jacfwd(lambda x: x * (1 + 1j))(X).numpy(), (1 + 1j) * np.eye(3))


# -- vmap: named tuples as in_dims / out_dims, a one-element out_dims for a single tensor ----
def test_in_dims_may_be_a_named_tuple_matching_a_named_tuple_input():
    out = vmap(lambda p: p.a * p.b, in_dims=(Pair(0, None),))(Pair(B, X))
    np.testing.assert_allclose(out.numpy(), [[1., 4., 9.], [4., 10., 18.]])
    out = vmap(lambda p, e: p.a * p.b + e, in_dims=(Pair(1, None), 0))(Pair(B.T, dg.ones(3)), B)
    np.testing.assert_allclose(out.numpy(), [[2., 4., 6.], [8., 10., 12.]])


def test_out_dims_may_be_a_named_tuple_matching_a_named_tuple_output():
    out = vmap(lambda a: Pair(a, a.sum()), out_dims=Pair(1, 0))(B)
    assert type(out) is Pair and out.a.shape == (3, 2)
    np.testing.assert_allclose(out.b.numpy(), [6., 15.])


@pytest.mark.parametrize("call, words", [
    (lambda: vmap(lambda d: d[0], in_dims=(Pair(0, None),))((B, B)),
     r"in_dims is not compatible .* in_dims has structure \(Pair\(a=\*, b=\*\),\) but inputs has structure "
     r"\(\(\*, \*\),\)"),
    (lambda: vmap(lambda d: d.a, in_dims=((0, None),))(Pair(B, B)),
     r"in_dims has structure \(\(\*, \*\),\) but inputs has structure \(Pair\(a=\*, b=\*\),\)"),
    (lambda: vmap(lambda a: Pair(a, a), out_dims=(1, 0))(B), r"out_dims is not compatible with the structure of "
                                                             r"`outputs`.* outputs has structure Pair\(a=\*, b=\*\)"),
    (lambda: vmap(lambda d: d["a"], in_dims=({"a": 0, "c": None},))({"a": B, "b": X}),
     r"in_dims has structure \(\{'a': \*, 'c': \*\},\) but inputs has structure \(\{'a': \*, 'b': \*\},\)"),
])
def test_structure_errors_name_named_tuples_and_quote_dict_keys(call, words):
    with pytest.raises(ValueError, match=words):
        call()


@pytest.mark.parametrize("chunk_size", [None, 1])
def test_a_one_element_out_dims_serves_a_single_tensor_output(chunk_size):
    out = vmap(lambda a: a * 2, out_dims=(1,), chunk_size=chunk_size)(B)
    np.testing.assert_allclose(out.numpy(), [[2., 8.], [4., 10.], [6., 12.]])
    assert vmap(lambda a: (a,), out_dims=(1,))(B)[0].shape == (3, 2)


def test_a_one_element_out_dims_does_not_serve_a_non_tensor():
    with pytest.raises(ValueError, match=r"out_dims is not compatible .* out_dims has structure \(\*,\) but "
                                         r"outputs has structure \*"):
        vmap(lambda a: 3, out_dims=(None,))(B)


# -- linearize checks its primals when called, as torch -----------------------------------
def test_linearize_refuses_integer_primals_at_once():
    with pytest.raises(ValueError, match="Expected primal to be floating point or complex, but got: int64"):
        linearize(lambda a: a * 2, dg.tensor([1, 2]))


def test_linearize_refuses_non_tensor_primals_at_once():
    calls = []
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor, got <class 'float'>"):
        linearize(lambda a: calls.append(a), 3.0)
    assert not calls


def test_linearize_still_gives_the_jvp():
    out, jvp_fn = linearize(lambda a, b: a.sin() * b, X, B[0])
    np.testing.assert_allclose(out.numpy(), np.sin([1., 2., 3.]) * [1., 2., 3.])
    np.testing.assert_allclose(jvp_fn(dg.ones(3), dg.zeros(3)).numpy(), np.cos([1., 2., 3.]) * [1., 2., 3.])
