"""``backward``/``grad`` arguments and Tensor autograd attributes, as torch 2.13 behaves.

The expected values, error types and messages were taken from torch 2.13 running the
same programs (they are pinned here: the tests do not import torch).
"""

import types
import warnings

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.graph import get_gradient_edge

CYCLE_WARNING = "Using backward\\(\\) with create_graph=True will create a reference cycle"


@pytest.fixture
def x():
    return dg.tensor([1., 2., 3.], requires_grad=True)


# -- backward ----------------------------------------------------------------------------------
def test_backward_with_create_graph_warns_of_the_reference_cycle(x):
    with pytest.warns(UserWarning, match=CYCLE_WARNING) as record:
        (x ** 3).sum().backward(create_graph=True)
    assert record[0].filename == __file__  # the warning names the caller's line
    assert x.grad.tolist() == [3., 12., 27.] and x.grad.requires_grad
    with pytest.warns(UserWarning, match="reset the .grad fields of your parameters to None"):
        dg.backward((x * 2).sum(), create_graph=True, inputs=[x])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dg.grad((x ** 2).sum(), x, create_graph=True)  # grad is the recommended way: no warning


def test_grad_variables_is_deprecated_and_cannot_be_combined(x):
    with pytest.warns(FutureWarning, match="`grad_variables` is deprecated. Use `grad_tensors` instead."):
        dg.backward(x * 2, grad_variables=dg.ones(3))
    assert x.grad.tolist() == [2., 2., 2.]
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError, match="`grad_tensors` and `grad_variables`"):
        dg.backward(x * 2, dg.ones(3), grad_variables=dg.ones(3))
    assert x.grad.tolist() == [2., 2., 2.]


def test_backward_inputs_listed_twice_accumulate_once(x):
    (x * 2).sum().backward(inputs=[x, x])
    assert x.grad.tolist() == [2., 2., 2.]
    h = x * 3
    (h ** 2).sum().backward(inputs=[h, h])
    assert h.grad.tolist() == [6., 12., 18.]


def test_backward_non_leaf_input_gets_grad_and_retains_it_later(x):
    h = x * 2
    y = (h ** 2).sum()
    y.backward(inputs=[h], retain_graph=True)
    assert h.retains_grad and h.grad.tolist() == [4., 8., 12.] and x.grad is None
    y.backward()
    assert h.grad.tolist() == [8., 16., 24.] and x.grad.tolist() == [8., 16., 24.]


def test_backward_input_that_already_retains_grad_is_not_counted_twice(x):
    h = x * 2
    h.retain_grad()
    (h ** 2).sum().backward(inputs=[h])
    assert h.grad.tolist() == [4., 8., 12.] and x.grad is None
    k = x * 3
    k.register_hook(lambda g: g * 10)  # the hook's result is what .grad gets
    (k ** 2).sum().backward(inputs=[k, x])
    assert k.grad.tolist() == [60., 120., 180.] and x.grad.tolist() == [180., 360., 540.]


def test_backward_input_errors_leave_things_as_they_were(x):
    h = x * 2
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        (h * dg.ones(3)).sum().backward(inputs=[h, dg.ones(3)])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        h.backward(inputs=[h])
    assert not h.retains_grad and x.grad is None
    with pytest.raises(RuntimeError, match="all inputs have to be Tensors or GradientEdges, but got int"):
        (x * 2).sum().backward(inputs=[1])
    with pytest.raises(TypeError, match="must be a dict, not mappingproxy. Other Mapping types are not supported"):
        (x * 2).sum().backward(inputs=types.MappingProxyType({"a": x}))


def test_backward_and_grad_take_a_dict_of_inputs(x):
    w = dg.tensor(2., requires_grad=True)
    (x * w).sum().backward(inputs={"w": w})
    assert x.grad is None and w.grad.item() == 6.
    result = dg.grad((x * w).sum(), {"b": x, "a": w})
    assert list(result) == ["b", "a"]
    assert result["b"].tolist() == [2., 2., 2.] and result["a"].item() == 6.


def test_gradient_for_a_complex_output_must_be_complex_and_the_other_way_round(x):
    z = dg.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(RuntimeError, match="both grad_output and output are required to have the same dtype"):
        (z * 2).backward(dg.ones(1))
    with pytest.raises(RuntimeError, match="grad_output\\[0\\] has a dtype of complex64 and output\\[0\\]"):
        (x * 2).backward(dg.ones(3, dtype=dg.complex64))
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar outputs"):
        (z * 2).sum().backward()
    assert z.grad is None and x.grad is None
    (x * 2).backward(dg.ones(3, dtype=dg.float32))  # another real dtype is cast, as torch
    assert x.grad.dtype == dg.float64 and x.grad.tolist() == [2., 2., 2.]


def test_gradient_entries_must_be_tensors_none_or_numbers(x):
    with pytest.raises(TypeError, match="gradients can be either Tensors or None, but got str"):
        dg.backward([(x * 2).sum()], ["1"])
    with pytest.raises(RuntimeError, match="got 2 tensors and 1 gradients"):
        dg.backward([(x * 2).sum(), (x * 3).sum()], [dg.tensor(1.)])
    dg.backward([(x ** 2).sum(), (x * 3).sum()], [None, 2.0])  # (dualgrad also takes numbers)
    assert x.grad.tolist() == [8., 10., 12.]


def test_backward_through_integer_or_untracked_outputs_fails(x):
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        dg.tensor(2).backward()
    with pytest.raises(RuntimeError, match="element 1 of tensors does not require grad"):
        dg.backward([(x * 2).sum(), dg.tensor(1.)])


# -- grad --------------------------------------------------------------------------------------
def test_grad_names_the_unused_input(x):
    y = dg.tensor(2., requires_grad=True)
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used"):
        dg.grad((x * 2).sum(), [x, y])


def test_materialized_grads_require_grad_with_create_graph(x):
    y = dg.tensor(2., requires_grad=True)
    gx, gy = dg.grad((x * 2).sum(), [x, y], materialize_grads=True, create_graph=True)
    assert gy.item() == 0. and gy.requires_grad and gy.is_leaf
    _, gy = dg.grad((x * 2).sum(), [x, y], materialize_grads=True)
    assert gy.item() == 0. and not gy.requires_grad
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed"):
        dg.grad((x * 2).sum(), [x, y], allow_unused=False, materialize_grads=True)


def test_materialize_grads_refuses_an_unreached_gradient_edge(x):
    y = dg.tensor(2., requires_grad=True)
    with pytest.raises(RuntimeError, match="materialize_grads cannot be used when the given input is a GradientEdge"):
        dg.grad((x * 2).sum(), [get_gradient_edge(y)], materialize_grads=True)
    (g,) = dg.grad((x * 2).sum(), [get_gradient_edge(x)], materialize_grads=True)
    assert g.tolist() == [2., 2., 2.]


def test_grads_batched_checks_each_example_against_the_output(x):
    with pytest.raises(RuntimeError, match=r"grad_output\[0\] has a shape of \(\) and output\[0\] has a shape of \(3"):
        dg.grad(x * 2, x, dg.ones(3), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="grad_output\\[0\\] is None: with `is_grads_batched=True`"):
        dg.grad((x * 2).sum(), x, [None], is_grads_batched=True)
    with pytest.raises(RuntimeError, match="both grad_output and output are required to have the same dtype"):
        dg.grad(x * 2, x, dg.eye(3, dtype=dg.complex128), is_grads_batched=True)
    (g,) = dg.grad(x * 2, x, dg.eye(3, dtype=dg.float32), is_grads_batched=True)
    assert g.dtype == dg.float64 and g.tolist() == (2 * np.eye(3)).tolist()


def test_grad_of_an_output_that_is_the_input(x):
    assert dg.grad(x, x, dg.ones(3))[0].tolist() == [1., 1., 1.]
    h = x * 2
    assert dg.grad(h, h, dg.tensor([1., 2., 3.]))[0].tolist() == [1., 2., 3.]
    assert dg.grad((h ** 2).sum(), [h, x])[1].tolist() == [8., 16., 24.]
    assert not h.retains_grad and x.grad is None


# -- Tensor attributes -------------------------------------------------------------------------
def test_grad_cannot_be_the_tensor_itself_and_can_be_deleted(x):
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        x.grad = x
    x.grad = dg.ones(3)
    del x.grad
    assert x.grad is None
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got grad of type float"):
        x.grad = 1.0


def test_requires_grad_setter_and_method_on_non_leaves(x):
    h = x * 2
    with pytest.raises(RuntimeError, match="^you can only change requires_grad flags of leaf variables.$"):
        h.requires_grad = True
    with pytest.raises(RuntimeError, match="leaf variables. If you want to use a computed variable"):
        h.requires_grad = False
    with pytest.raises(RuntimeError, match="leaf variables. If you want to use a computed variable"):
        h.requires_grad_(False)
    assert h.requires_grad_() is h and h.requires_grad_(True) is h and h.requires_grad


def test_requires_grad_must_be_a_bool(x):
    with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
        x.requires_grad = 0
    with pytest.raises(TypeError, match=r"requires_grad_\(\): argument 'requires_grad' \(position 1\) must be bool, "
                                        "not NoneType"):
        x.requires_grad_(None)
    assert x.requires_grad
    x.requires_grad = np.bool_(False)  # (NumPy's bool is a bool here)
    assert not x.requires_grad


def test_data_setter_checks_type_and_dtype(x):
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        x.data = [1., 2.]
    with pytest.raises(RuntimeError, match="data set to a tensor that requires gradients must be floating point"):
        x.data = dg.zeros(3, dtype=dg.int64)
    assert x.tolist() == [1., 2., 3.]
    h = x * 2
    h.data = dg.zeros(3)
    assert h.grad_fn is not None and h.tolist() == [0., 0., 0.]
    x.data = np.zeros(2)  # (an ndarray is taken as the new array)
    assert x.shape == (2,) and x.requires_grad and x.is_leaf


def test_is_leaf_grad_fn_and_accumulate_grad(x):
    with dg.no_grad():
        h = x * 2
    assert h.is_leaf and not h.requires_grad and h.grad_fn is None
    y = x * dg.ones(3)
    (acc, nr), (const, _) = y.grad_fn.next_functions
    assert type(acc).__name__ == "AccumulateGrad" and acc.variable is x and nr == 0 and const is None
    assert acc is (x * 3).grad_fn.next_functions[0][0] and acc.next_functions == ()
    x.retain_grad()  # a leaf: nothing to do
    assert not x.retains_grad


def test_accumulation_bumps_the_version_of_grad_only(x):
    (x * 2).sum().backward()
    g, version = x.grad, x.grad._version
    (x * 2).sum().backward()
    assert x.grad is g and g._version == version + 1 and x._version == 0
    g.zero_()
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3., 3., 3.]


def test_variable_shim_as_torch():
    t = dg.ones(2)
    v = dg.autograd.Variable(t, True)
    assert v is not t and v.requires_grad and v.is_leaf and isinstance(t, dg.autograd.Variable)
    v.data[0] = 5.
    assert t.tolist() == [5., 1.]  # shares the data
    h = dg.Variable(v * 2)
    assert h.is_leaf and not h.requires_grad
    assert dg.Variable().shape == (0,) and dg.Variable(data=t).tolist() == [5., 1.]
    with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
        dg.Variable(t, volatile=True)
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got float"):
        dg.Variable(1.0)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point and complex dtype can require gradients"):
        dg.Variable(dg.tensor([1, 2]), requires_grad=True)
