"""An op is one declaration: its public function, aliases, Tensor methods, in-place methods, ``__all__``
entry and NumPy routes are generated from the declaration in its row (``dualgrad/ops/surface.py``)."""

from __future__ import annotations

import inspect
import sys
import types

import numpy as np
import pytest

import dualgrad as dg
from dualgrad import numpy_dispatch
from dualgrad.ops import (
    counting,
    einsum,
    fft,
    indexing,
    integration,
    layout,
    methods,
    random,
    reductions,
    scatter,
    sorting,
    statistics,
    surface,
    torch_names,
)
from dualgrad.ops.elementwise import core, functions, special
from dualgrad.ops.linalg import decompositions, lu, matrix_functions, norms, products
from dualgrad.ops.registry import ALL_OPS, elementwise
from dualgrad.ops.shape import compositions, views
from dualgrad.ops.shape import core as shape

_CUBE_UFUNC = np.frompyfunc(lambda v: v ** 3, 1, 1)  # (a ufunc no op routes: the throwaway op's NumPy function)


@pytest.fixture
def cube():
    """A throwaway elementwise op ``cube`` (``x ** 3``, partial ``3 x ** 2``), declared by one row in a
    module of its own, with an alias, and removed again afterwards."""
    module = types.ModuleType("dualgrad_throwaway_ops")
    sys.modules[module.__name__] = module
    source = (
        "import numpy as np\n"
        "from dualgrad.ops.registry import elementwise\n"
        "from dualgrad.ops.surface import exported, unary\n"
        "cube = unary(elementwise('cube', lambda x: x ** 3, (lambda out, x: 3 * x * x,)), 'The cube ``x ** 3``.',\n"
        "             '[2.]', 'tensor([8.])', aliases=('third_power',), numpy=UFUNC)\n"
        "__all__ = exported(__name__)\n"
    )
    module.UFUNC = _CUBE_UFUNC
    declared = len(surface.DECLARED)
    exec(compile(source, "<throwaway op row>", "exec"), module.__dict__)  # noqa: S102 - the row under test
    methods.install()
    numpy_dispatch.route_declared()
    yield module
    del surface.DECLARED[declared:]
    del ALL_OPS["cube"], sys.modules[module.__name__]
    for name in ("cube", "cube_", "third_power", "third_power_"):
        delattr(dg.Tensor, name)
    del numpy_dispatch.UFUNCS[_CUBE_UFUNC]
    numpy_dispatch._UFUNC_FNS.pop(_CUBE_UFUNC, None)


def test_one_row_gives_the_function_its_alias_and_all(cube):
    assert cube.__all__ == ["cube", "third_power"]
    assert cube.third_power is cube.cube
    assert cube.cube.op is ALL_OPS["cube"]
    assert cube.cube(dg.tensor([2.0, -1.0])).tolist() == [8.0, -1.0]


def test_one_row_gives_tensor_methods_and_in_place_methods(cube):
    x = dg.tensor([2.0, 3.0])
    assert x.cube().tolist() == [8.0, 27.0] and x.third_power().tolist() == [8.0, 27.0]
    leaf = dg.tensor([1.0, 2.0], requires_grad=True)
    y = leaf * 1.0
    assert y.cube_() is y
    y.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), [3.0, 12.0])
    assert dg.Tensor.cube_.__doc__ == "In-place ``cube``."


def test_one_row_routes_numpy(cube):
    x = dg.tensor([2.0, 0.5], requires_grad=True)
    y = _CUBE_UFUNC(x)
    assert isinstance(y, dg.Tensor) and y.grad_fn.name() == "CubeBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [12.0, 0.75])


def test_one_row_has_correct_derivatives_in_both_modes(cube):
    x = dg.tensor([0.3, -1.2, 2.0], dtype=dg.float64, requires_grad=True)
    assert dg.autograd.gradcheck(cube.cube, (x,))
    assert dg.autograd.gradgradcheck(cube.cube, (x,))
    _, tangent = dg.func.jvp(cube.cube, (x.detach(),), (dg.ones(3, dtype=dg.float64),))
    np.testing.assert_allclose(tangent.numpy(), 3 * x.detach().numpy() ** 2)


def test_the_generated_function_reads_as_a_written_one(cube):
    fn = cube.cube
    assert fn.__name__ == fn.__qualname__ == "cube" and fn.__module__ == "dualgrad_throwaway_ops"
    assert str(inspect.signature(fn)) == "(input: 'Any') -> 'Tensor'"
    assert fn.__doc__.startswith("The cube ``x ** 3``.") and ">>> dg.cube(dg.tensor([2.]))\ntensor([8.])" in fn.__doc__


@pytest.mark.parametrize("name", ["sin", "atan2", "eq", "isnan", "add", "div", "clamp", "erf", "copysign"])
def test_library_functions_read_as_written_ones(name):
    fn = getattr(dg, name)
    assert fn.__name__ == name and fn.__module__.startswith("dualgrad.ops.elementwise.")
    assert ">>> " in fn.__doc__
    assert list(inspect.signature(fn).parameters)[0] == "input"
    assert fn.op is ALL_OPS[name]


CONVERTED = [core, functions, special, reductions, sorting, counting, fft, products, decompositions, lu,
             matrix_functions, norms, shape, views, compositions, indexing, scatter,
             statistics, random, layout, integration, einsum,
             torch_names]


@pytest.mark.parametrize("module", CONVERTED, ids=lambda m: m.__name__)
def test_converted_modules_take_every_surface_from_their_declarations(module):
    """No hand-written list is left for a declared op: its names, methods, in-place methods and
    NumPy routes all come from the declaration."""
    declared = [s for s in surface.DECLARED if s.module == module.__name__]
    assert declared
    hand_written = getattr(module, "METHODS", {})
    for s in declared:
        assert set(s.names) <= set(module.__all__) or not s.top_level
        assert not set(s.methods) & set(hand_written), s
        for name in s.methods:
            assert getattr(dg.Tensor, name) is s.method_function
            if s.inplace:
                assert getattr(dg.Tensor, f"{name}_").__doc__ == f"In-place ``{name}``."
        for numpy_fn in s.numpy:
            assert numpy_dispatch.UFUNCS[numpy_fn] is s.numpy_function


def test_the_surface_matches_torchs_names():
    """Spot checks of what the declarations give (torch's and NumPy's names)."""
    x = dg.tensor([0.5])
    assert dg.arcsin is dg.asin and dg.Tensor.arcsin_ and dg.Tensor.fix_ and dg.Tensor.clip_
    assert not hasattr(dg.Tensor, "isnan_") and not hasattr(dg.Tensor, "maximum_")
    assert x.conjugate() is x and np.positive(x) is not x
    assert numpy_dispatch.UFUNCS[np.fmax] is dg.maximum and numpy_dispatch.UFUNCS[np.radians] is dg.deg2rad


def test_a_declared_function_without_methods_has_no_in_place_method():
    fn = surface.declare(lambda input: input, None, method=False, module=__name__)
    try:
        assert surface.DECLARED[-1].methods == () and not surface.DECLARED[-1].inplace
    finally:
        surface.DECLARED.pop()
    assert fn.op is None


def test_elementwise_rows_need_no_other_place():
    """The declaration's row is the op's whole public surface: an elementwise op of ``core`` appears in
    no hand-written list of ``inplace`` or ``numpy_dispatch``."""
    import dualgrad.ops.inplace as inplace

    generated = {f"{n}_" for s in surface.DECLARED if s.inplace for n in s.methods}
    assert not generated & set(inplace.METHODS)
    assert not {e for e in numpy_dispatch.UFUNCS.values() if isinstance(e, str)} & {
        n for s in surface.DECLARED for n in s.names}
    assert elementwise  # (the family constructor the throwaway row uses)


def test_the_special_namespace_is_built_from_the_declarations():
    declared = surface.namespace("special")
    assert set(dg.special.__all__) == set(declared)
    for name, fn in declared.items():
        assert getattr(dg.special, name) is fn
    assert dg.special.expit is dg.sigmoid and dg.special.psi is dg.digamma
    assert not hasattr(dg, "ndtr") and not hasattr(dg.Tensor, "ndtr")  # (torch.special only)
    x = dg.tensor([1.5])
    assert x.clone().polygamma_(1).item() == dg.polygamma(1, x).item()


def test_torchs_top_level_in_place_forms_come_from_the_declarations():
    generated = {f"{name}_" for s in surface.DECLARED for name in s.top_level_inplace}
    assert {"sin_", "abs_", "arcsin_", "fix_", "erf_", "i0_"} <= generated <= set(torch_names.TOP_LEVEL)
    assert "absolute_" not in generated  # (torch has abs_ only)
    hand_written = set(torch_names._TOP_LEVEL[""].split())
    assert not hand_written & generated
    x = dg.tensor([0.25])
    assert dg.sin_(x) is x and x.item() == pytest.approx(np.sin(0.25))


def test_the_fft_namespace_is_built_from_the_declarations():
    declared = surface.namespace("fft")
    assert sorted(declared) == dg.fft.__all__ and "rfft" in declared
    assert all(getattr(dg.fft, name) is fn for name, fn in declared.items())
    assert not hasattr(dg, "rfft") and not hasattr(dg.Tensor, "rfft")


def test_the_linalg_namespace_is_built_from_the_declarations():
    declared = surface.namespace("linalg")
    results = {"EigResult", "EighResult", "LinAlgError", "LstsqResult", "QRResult", "SVDResult", "SlogdetResult"}
    assert set(dg.linalg.__all__) == set(declared) | results
    assert all(getattr(dg.linalg, name) is fn for name, fn in declared.items())
    # torch's two names: the top-level legacy forms and the ``linalg`` ones are different functions
    assert dg.linalg.lu is not dg.lu and dg.linalg.svd is not dg.svd and dg.linalg.cholesky is not dg.cholesky
    assert dg.linalg.det is dg.det and dg.linalg.matmul is dg.matmul and dg.Tensor.inverse is dg.linalg.inv
    assert not hasattr(dg, "eigh") and not hasattr(dg.Tensor, "eigh") and not hasattr(dg.Tensor, "det_")
    x = dg.eye(2, dtype=dg.float64).requires_grad_()
    y = x * 1.0
    assert y.addmm_(x, x) is y and y.tolist() == [[2.0, 0.0], [0.0, 2.0]]


def test_shape_declarations_keep_torchs_and_numpys_names():
    assert dg.concat is dg.cat and dg.concatenate is dg.cat and dg.movedim is dg.moveaxis
    assert dg.Tensor.swapaxes is dg.transpose and dg.Tensor.swapdims is dg.transpose
    assert dg.zeros(2, 3, 4).transpose((2, 0, 1)).shape == (4, 2, 3)  # (the hand-written NumPy-style method)
    assert not hasattr(dg, "view") and not hasattr(dg.Tensor, "cat") and not hasattr(dg.Tensor, "reshape_")
    x = dg.ones(2, 2)
    assert x.tril_() is x and x.tolist() == [[1.0, 0.0], [1.0, 1.0]]


def test_indexing_declarations_give_the_in_place_forms():
    assert dg.argwhere is dg.nonzero and dg.Tensor.argwhere is dg.nonzero
    assert dg.Tensor.__getitem__.__name__ != "getitem"  # (fastpath's quiet path, written by hand)
    x = dg.zeros(3)
    assert x.index_fill_(0, dg.tensor([1]), 2.0) is x and x.tolist() == [0.0, 2.0, 0.0]
    assert x.scatter_reduce_(0, dg.tensor([0]), dg.tensor([5.0]), "sum") is x and x.tolist() == [5.0, 2.0, 0.0]


def test_random_in_place_methods_are_declared_as_methods_only():
    assert not hasattr(dg, "bernoulli_") and not hasattr(dg.Tensor, "bernoulli__")
    assert dg.Tensor.bernoulli_.__module__ == "dualgrad.ops.random" and "bernoulli" in random.__all__


def test_torchs_other_spellings_are_declared():
    assert dg.igamma is dg.Tensor.igamma and dg.Tensor.igamma_.__doc__ == "In-place ``igamma``."
    assert dg.Tensor.renorm_.__doc__ == "In-place ``renorm``." and dg.Tensor.conj_physical_
    assert {"range", "abs_", "t_copy", "typename"} <= set(torch_names.__all__) and not hasattr(dg, "float_power_")
    x = dg.tensor([2.0])
    assert x.igammac_(dg.tensor([1.0])) is x and x.item() == pytest.approx(0.7357588823, rel=1e-9)
