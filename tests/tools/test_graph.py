"""Graph inspection: Node API, saved values as attributes, calling a node, and to_dot."""

import os
import stat
import sys
import warnings

import numpy as np
import pytest

import dualgrad as dg
from dualgrad.graph import Node, to_dot

# ``dir(b.grad_fn)`` for ``b = a.exp()`` in the reference, without torch's C++ internals.
REFERENCE_DIR = [
    "__call__", "__class__", "__delattr__", "__dir__", "__doc__", "__eq__", "__format__", "__ge__",
    "__getattribute__", "__gt__", "__hash__", "__init__", "__init_subclass__", "__le__", "__lt__",
    "__ne__", "__new__", "__reduce__", "__reduce_ex__", "__repr__", "__setattr__", "__sizeof__",
    "__str__", "__subclasshook__", "_raw_saved_result", "_saved_result", "metadata", "name",
    "next_functions", "register_hook", "register_prehook", "requires_grad",
]


def test_reference_example_saved_result():
    a = dg.tensor([0., 0., 0.], requires_grad=True)
    b = a.exp()
    assert isinstance(b.grad_fn, dg.graph.Node)
    assert isinstance(b.grad_fn, dg.autograd.graph.Node)
    names = dir(b.grad_fn)
    assert set(REFERENCE_DIR) <= set(names)
    assert [n for n in names if not n.startswith("__")] == [
        n for n in REFERENCE_DIR if not n.startswith("__")
    ]
    np.testing.assert_allclose(b.grad_fn._saved_result.detach().numpy(), b.detach().numpy())


def test_dir_hides_engine_internals():
    b = dg.ones(2, requires_grad=True) * 3
    for internal in ("op", "edges", "saved", "ctx", "seq", "release", "_hooks"):
        assert internal not in dir(b.grad_fn)


def test_saved_inputs_and_raw_saved():
    a = dg.tensor([1., 2.], requires_grad=True)
    c = dg.tensor([3., 4.], requires_grad=True)
    m = a * c
    assert {"_saved_self", "_saved_other", "_raw_saved_self", "_raw_saved_other"} <= set(dir(m.grad_fn))
    assert m.grad_fn._saved_self.tolist() == [1., 2.]
    assert m.grad_fn._saved_other.tolist() == [3., 4.]
    assert m.grad_fn._raw_saved_self.shape == (2,)
    p = a ** 3
    assert p.grad_fn.name() == "PowBackward0"
    assert p.grad_fn._saved_self.tolist() == [1., 2.]
    assert "_saved_exponent" in dir(p.grad_fn) and p.grad_fn._saved_exponent == 3  # (torch lists numbers)
    assert "_saved_other" in dir((a * 2).grad_fn)


def test_reduction_parameters_have_torchs_names():
    a = dg.ones(2, 3, requires_grad=True)
    node = a.sum(1, keepdim=True).grad_fn
    assert {"_saved_dim", "_saved_keepdim"} <= set(dir(node)) and "_saved_axis" not in dir(node)
    assert node._saved_dim == (1,) and node._saved_keepdim is True
    assert node._saved_axis == (1,)  # (NumPy's names still answer)


def test_names():
    a = dg.ones(2, requires_grad=True)
    assert (a * 2).grad_fn.name() == "MulBackward0"
    assert (a ** 2).grad_fn.name() == "PowBackward0"
    assert (a + a).grad_fn.name() == "AddBackward0"
    assert (a * 2).grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"


def test_next_functions():
    a = dg.ones(2, requires_grad=True)
    const = dg.ones(2)
    b = a.exp()
    c = b * const
    d = c + a
    (acc, nr), = b.grad_fn.next_functions
    assert acc.name() == "torch::autograd::AccumulateGrad" and acc.variable is a and nr == 0
    assert c.grad_fn.next_functions[0] == (b.grad_fn, 0)
    assert c.grad_fn.next_functions[1] == (None, 0)
    assert d.grad_fn.next_functions[0][0] is c.grad_fn
    assert d.grad_fn.next_functions[1][0].variable is a
    assert acc.next_functions == ()


def test_metadata_kept_for_the_node_life():
    a = dg.ones(2, requires_grad=True)
    b = a * 2
    b.grad_fn.metadata["tag"] = "layer1"
    assert b.grad_fn.metadata == {"tag": "layer1"}
    acc = b.grad_fn.next_functions[0][0]
    acc.metadata["seen"] = True
    del acc
    assert b.grad_fn.next_functions[0][0].metadata == {"seen": True}


def test_saved_values_after_backward_raise_freed_error():
    a = dg.tensor([1., 2.], requires_grad=True)
    b = a.exp()
    b.sum().backward(retain_graph=True)
    assert b.grad_fn._saved_result.tolist() == b.tolist()  # retained: still readable
    b.sum().backward()
    with pytest.raises(RuntimeError, match="already been freed"):
        _ = b.grad_fn._saved_result
    m = a * a
    dg.grad(m.sum(), a)
    with pytest.raises(RuntimeError, match="already been freed"):
        _ = m.grad_fn._saved_self
    assert m.grad_fn._raw_saved_self.shape == (2,)  # the raw object stays inspectable


def test_unknown_attribute_is_attribute_error():
    b = dg.ones(2, requires_grad=True) * 2
    with pytest.raises(AttributeError, match="no attribute '_saved_nothing'"):
        _ = b.grad_fn._saved_nothing
    with pytest.raises(AttributeError, match="no attribute 'foo'"):
        _ = b.grad_fn.foo
    with pytest.raises(AttributeError, match="'AddBackward0' object has no attribute '_saved_self'"):
        _ = (b + 1).grad_fn._saved_self  # add saves nothing


def test_an_input_saved_only_for_another_inputs_gradient_reads_none_as_in_torch():
    """``mul`` and ``div`` save ``self`` only when ``other`` needs a gradient; torch's node then
    still has ``_saved_self``, as None."""
    a, c = dg.tensor([1., 2.], requires_grad=True), dg.tensor([3., 4.])
    for node in ((a * 2).grad_fn, (a * c).grad_fn, (a / c).grad_fn):
        assert node._saved_self is None
        assert "_saved_self" in dir(node)
    assert (a * c).grad_fn._saved_other.tolist() == [3., 4.]
    assert (c / a).grad_fn._saved_self.tolist() == [3., 4.]


def test_calling_a_node_applies_its_backward_rule():
    a = dg.tensor([0.5, 1.5], requires_grad=True)
    b = a.exp()
    g = dg.tensor([2., 3.])
    np.testing.assert_allclose(b.grad_fn(g).detach().numpy(), [2 * np.exp(0.5), 3 * np.exp(1.5)])
    gx, gc = (a * 3).grad_fn(g)
    assert gx.tolist() == [6., 9.] and gc is None
    with pytest.raises(TypeError, match="ExpBackward0 expects 1 gradient.*got 2"):
        b.grad_fn(g, g)


def _chain_graph():
    x = dg.ones(2, 3, requires_grad=True)
    w = dg.ones(3, requires_grad=True)
    h = (x * w).exp()
    return x, w, h, (h + h).sum()


def test_to_dot_lists_nodes_saved_shapes_and_leaves():
    x, w, h, loss = _chain_graph()
    text = to_dot(loss)
    assert text.startswith("digraph backward {") and text.endswith("}")
    for name in ("SumBackward0", "AddBackward0", "ExpBackward0", "MulBackward0"):
        assert text.count(f'"{name}') == 1  # shared nodes appear once
    assert "result: (2, 3)" in text  # exp saves its result
    assert "self: (2, 3)" in text and "other: (3,)" in text
    assert text.count("AccumulateGrad") == 2
    assert 'AccumulateGrad\\nleaf (2, 3)", style=filled, fillcolor=lightblue' in text
    assert 'AccumulateGrad\\nleaf (3,)", style=filled, fillcolor=lightblue' in text
    assert 't [label="tensor ()"' in text
    # h + h: two edges from exp into add
    exp_id = next(line.split()[0] for line in text.splitlines() if '"ExpBackward0' in line)
    add_id = next(line.split()[0] for line in text.splitlines() if '"AddBackward0' in line)
    assert text.count(f"{exp_id} -> {add_id};") == 2


def test_to_dot_of_a_node_a_leaf_and_a_freed_graph():
    x, w, h, loss = _chain_graph()
    from_node = to_dot(h.grad_fn)
    assert "SumBackward0" not in from_node and "ExpBackward0" in from_node
    assert " t " not in from_node
    leaf_text = to_dot(x)
    assert "AccumulateGrad\\nleaf (2, 3)" in leaf_text and "-> t;" in leaf_text
    loss.backward()
    assert "result: (2, 3)" in to_dot(loss)  # shapes are known after the values were freed


def test_to_dot_deep_graph_no_recursion_limit():
    x = dg.ones(1, requires_grad=True)
    y = x
    for _ in range(sys.getrecursionlimit() + 500):
        y = y * 1.0
    text = to_dot(y)
    assert text.count("MulBackward0") == sys.getrecursionlimit() + 500


def test_to_dot_errors():
    with pytest.raises(ValueError, match=r"shape \(2,\) does not require grad"):
        to_dot(dg.ones(2))
    with pytest.raises(TypeError, match="Tensor or a graph Node, got int"):
        to_dot(3)


def test_to_dot_svg_without_graphviz_warns(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    x = dg.ones(2, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="'dot' is not installed"):
        text = to_dot(x * 2, tmp_path / "g.svg")
    assert "MulBackward0" in text and not (tmp_path / "g.svg").exists()


@pytest.mark.skipif(os.name == "nt", reason="uses a shell script as a fake 'dot'")
def test_to_dot_svg_runs_graphviz(monkeypatch, tmp_path):
    fake = tmp_path / "dot"
    fake.write_text('#!/bin/sh\n[ "$1" = "-Tsvg" ] && [ "$2" = "-o" ] && cat > "$3"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + os.environ.get("PATH", ""))
    x = dg.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = to_dot(x * 2, tmp_path / "g.svg")
    assert (tmp_path / "g.svg").read_text() == text
    with pytest.raises(RuntimeError, match="'dot' failed to write"):
        to_dot(x * 2, tmp_path / "missing-dir" / "g.svg")


def test_graph_module_exports():
    assert dg.graph.Node is Node
    assert dg.autograd.graph is dg.graph
    from dualgrad.autograd.graph import saved_tensors_hooks

    assert saved_tensors_hooks is dg.graph.saved_tensors_hooks
    from dualgrad.reverse.mutation import allow_mutation_on_saved_tensors

    assert dg.graph.allow_mutation_on_saved_tensors is allow_mutation_on_saved_tensors


def test_gradient_edge_of_a_non_leaf_is_an_input_of_grad():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x * 2
    edge = dg.autograd.graph.get_gradient_edge(y)
    assert isinstance(edge, dg.autograd.graph.GradientEdge)
    assert (edge.node, edge.output_nr) == (y.grad_fn, 0)
    out = (y * y).sum()
    g_edge, g_x = dg.autograd.grad(out, [edge, x])
    assert g_edge.tolist() == [4., 8.]  # d(y.y)/dy = 2y
    assert g_x.tolist() == [8., 16.]


def test_gradient_edge_of_a_leaf_is_its_accumulate_grad():
    x = dg.tensor([1., 2.], requires_grad=True)
    edge = dg.graph.get_gradient_edge(x)
    assert edge.node.name() == "torch::autograd::AccumulateGrad" and edge.output_nr == 0
    assert dg.grad((x * 3).sum(), edge)[0].tolist() == [3., 3.]


def test_gradient_edge_of_a_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require gradients"):
        dg.graph.get_gradient_edge(dg.ones(2))


def test_increment_version_makes_a_saved_tensor_stale():
    x = dg.tensor([1., 2.], requires_grad=True)
    y = x.exp()
    dg.graph.increment_version(y)
    assert y._version == 1
    dg.graph.increment_version([y, y])
    assert y._version == 3
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
