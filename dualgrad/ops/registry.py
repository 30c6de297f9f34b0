"""The op table: one ``Op`` per operation, with its NumPy impl and derivative rules.

An op declares:

* ``impl(*arrays, **params)``: the NumPy computation on raw arrays;
* ``vjp``: the reverse rule, a tuple with one function per input,
  ``vjp[i](g, out, *inputs, **params) -> gradient for input i`` (or, for ops
  with a variable number of inputs, one function returning a list);
* ``jvp(tangents, out, *inputs, **params) -> tangent of out``, where
  ``tangents[i]`` is ``None`` for an input without tangent;
* ``batch``: the vmap rule (see ``dualgrad.vmap.batching``);
* ``save_inputs`` / ``save_out``: which values the reverse rule reads. An input
  that is not saved reaches the rule as a ``TensorMeta`` (shape and dtype only).
  Either may instead be a function of ``needs`` (one flag per input: does it
  require grad?) returning one flag per input / one flag, so that an op keeps
  only what the rules of the inputs that need a gradient read (``x * c`` keeps
  neither ``x`` nor its tangent alive for a constant ``c``).

Rules are written with dualgrad ops on Tensors, so every derivative can be
differentiated again. Rules may return gradients with the output's broadcast
shape and dtype: ``fit_gradient`` sums and casts them to the input's.

Families derive rules (see ``elementwise`` and ``linear``): an elementwise op
gives one holomorphic partial derivative per input, and both its vjp
(``g * conj(d)``) and jvp (``sum t * d``) follow from it.
"""

from __future__ import annotations

import inspect
import itertools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..base.state import STATE
from ..fastpath import (
    UFUNC_ARRAY_OUT,
    engine_only,
    is_scratch,
    multiply_into,
    scalar_operator,
    scale_into,
    sole_reference,
    unseen_product,
)
from ..reverse.node import NodeOp, add_saved_attributes
from ..reverse.saved import SavedTensor, unfold, unpack_folded, unpack_folded_output
from ..tensor import (
    Tensor,
    TensorMeta,
    _wrap,
)
from .dispatch import apply

ALL_OPS: dict[str, Op] = {}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[_\W]+", name) if part)


class Op(NodeOp):
    """One entry of the op table."""

    __slots__ = ("name", "impl", "vjp", "jvp", "batch", "family", "save_inputs", "save_out",
                 "differentiable", "grad_name", "grad_name_for", "multi_output", "arg_names", "view", "ufunc_out",
                 "jvp_reads", "scatter_index", "saves_by_needs", "backward", "plain", "promotion", "to_float",
                 "scalar_impl", "number_inputs", "pack_order")

    def __init__(
        self,
        name: str,
        impl: Callable,
        *,
        vjp: Sequence[Callable] | Callable | None = None,
        jvp: Callable | None = None,
        batch: Callable | None = None,
        family: str = "custom",
        save_inputs: bool | Callable[[tuple], tuple] = True,
        save_out: bool | Callable[[tuple], bool] = False,
        differentiable: bool = True,
        grad_name: str | None = None,
        grad_name_for: Callable[[Any], str] | None = None,
        multi_output: bool = False,
        arg_names: tuple = ("self", "other", "third"),
        view: bool = False,
        promotion: int | None = None,
        to_float: bool = False,
        number_inputs: bool | Callable[[Any], bool] = False,
    ):
        if name in ALL_OPS:
            raise ValueError(f"op {name!r} is already registered")
        self.name = name
        self.impl = impl
        self.vjp = vjp
        self.jvp = jvp
        self.batch = batch
        self.family = family
        self.save_inputs = save_inputs
        self.save_out = save_out
        # None, or (when either is a function of ``needs``) the dict of ``saves_for``'s answers
        # that dispatch reads for every recorded call: a lookup rather than a call of each function
        self.saves_by_needs = {} if callable(save_inputs) or callable(save_out) else None
        self.differentiable = differentiable
        self.grad_name = grad_name or f"{_camel(name)}Backward0"
        # None, or ``grad_name_for(node) -> name`` for an op whose node torch names by the overload
        # called (``x ** 2`` PowBackward0, ``x ** y`` PowBackward1): read by ``Node.name()`` only,
        # from what the node keeps (``params``, ``inputs``), so recording pays nothing for it
        self.grad_name_for = grad_name_for
        self.multi_output = multi_output
        # backward(node, grads) -> the gradients of the inputs (versions without a loop for one and two inputs)
        if type(vjp) is not tuple or multi_output:
            self.backward = self._backward_general
        else:
            self.backward = {1: self._backward_unary, 2: self._backward_binary}.get(len(vjp), self._backward_per_input)
        self.arg_names = arg_names
        self.view = view
        # None, or the position of the first operand that takes part in torch's type promotion
        # (``promotion.promote``: ``where``'s condition does not); ``to_float``: integer
        # operands give the default floating dtype (true division)
        self.promotion = promotion
        self.to_float = to_float
        # Does ``next_functions`` show a Python number argument as an input, ``(None, 0)``? Torch's
        # ``+ - * /`` and ``where`` wrap it as a tensor; its other ops keep it as an attribute of the
        # node (``x ** 2``, ``clamp(x, 0, 1)``). A function of the node where it depends on the call.
        self.number_inputs = number_inputs
        self.plain = differentiable and not multi_output and not view  # (dispatch's common case)
        self.ufunc_out = UFUNC_ARRAY_OUT and isinstance(impl, np.ufunc)  # impl(..., out=...) gives arrays
        # None, or the Python operator that computes ``impl`` on 0-d real floating arrays' scalars
        self.scalar_impl = scalar_operator(impl)
        keywords = _keywords(impl)  # its nodes' _saved_* names, also by torch's names (dim, keepdim)
        add_saved_attributes((*arg_names, "result", *keywords, *(_TORCH_NAMES.get(k, k) for k in keywords)))
        # None, or ``jvp_reads(has_tangent) -> (reads input i per input, reads out)`` for a jvp
        # known to read nothing else: forward mode may then defer the tangent (see DeferredTangent)
        self.jvp_reads = None
        # None, or ``scatter_index(node) -> index or None`` for a one-input op whose vjp puts the
        # gradient into zeros of the input's shape at a basic ``index``: the backward engine may
        # then add the gradient there directly, into a gradient the input already received
        self.scatter_index = None
        # None (inputs are saved and unpacked in argument order), or the order in which torch's node
        # saves and unpacks them, which saved-tensor hooks observe (``x * y`` packs ``y``, then ``x``):
        # a tuple of all argument positions (``OTHER_FIRST`` for two), or a function of the arguments
        # (or of what a node keeps of them: each has a ``shape``) giving one (``matmul``'s depends on
        # the ranks); only SavedTensors (under saved-tensor hooks) are packed and unpacked in this order
        self.pack_order = None
        ALL_OPS[name] = self

    # True for an op whose backward runs even when every gradient reaching its node is undefined
    # (a custom Function's, as in torch); the engine skips other nodes: no gradient flows through
    runs_on_undefined = False

    def __repr__(self) -> str:
        return f"<Op {self.name} ({self.family})>"

    def saves_for(self, needs: tuple) -> tuple:
        """``(save_inputs, save_out)`` for a call whose inputs' requires-grad flags are ``needs``.

        Remembered in ``saves_by_needs`` for calls of one or two arguments (a few keys at
        most; the flags of more arguments could make many).
        """
        save_inputs, save_out = self.save_inputs, self.save_out
        saves = (save_inputs if type(save_inputs) is bool else save_inputs(needs),
                 save_out if type(save_out) is bool else save_out(needs))
        if len(needs) <= 2:
            self.saves_by_needs[needs] = saves
        return saves

    # -- reverse mode ---------------------------------------------------------
    def unpack(self, node: Any) -> tuple:
        """``(out, inputs)`` as the rules see them, checked for versions and freeing."""
        arity = node._arity
        if arity == 2 and self.pack_order is not None and (type(node._k0) is SavedTensor
                                                           or type(node._k1) is SavedTensor):
            inputs = self._unpack_in_order(node, (node._k0, node._k1))
        elif arity:  # the compact layout (see ``Node.__slots__``): spelled out, no list
            x = node._k0
            version = node._v0
            if version is not None:
                x = unpack_folded(node, x, version)
            elif type(x) is SavedTensor:
                x = x.unpack(node)
            if arity == 1:
                inputs = (x,)
            else:
                y = node._k1
                version = node._v1
                if version is not None:
                    y = unpack_folded(node, y, version)
                elif type(y) is SavedTensor:
                    y = y.unpack(node)
                inputs = (x, y)
        elif self.pack_order is None:
            inputs = []
            for x in node._kept:
                inputs.append(x.unpack(node) if type(x) is SavedTensor else x)
        else:
            inputs = self._unpack_in_order(node, node._kept)
        saved_out = node.out
        if saved_out is None:
            return None, inputs
        if node._ov is not None:  # (a folded output, see ``Node.__slots__``)
            return unpack_folded_output(node), inputs
        if type(saved_out) is tuple:
            return tuple(s.unpack(node, i) for i, s in enumerate(saved_out)), inputs
        return saved_out.unpack(node), inputs

    def _unpack_in_order(self, node: Any, kept: tuple) -> list:
        """What ``node`` keeps of its inputs, the SavedTensors unpacked in ``pack_order``, the order
        they were packed in (torch's, which saved-tensor hooks observe)."""
        order = self.pack_order if type(self.pack_order) is tuple else self.pack_order(*kept)
        inputs = list(kept)
        for i in order:
            if type(kept[i]) is SavedTensor:
                inputs[i] = kept[i].unpack(node)
        return inputs
    def _backward_unary(self, node: Any, grads: list) -> tuple:
        """``backward`` of a one-output op with one input (most ops: no loop, no list)."""
        if node._arity != 1:
            return self._backward_general(node, grads)
        meta = node._k0  # (its shape and dtype: a SavedTensor, TensorMeta or the folded Tensor)
        if node._v0 is not None or node._saved or node.out is not None:
            out, inputs = self.unpack(node)  # raises for a freed graph
        else:
            out, inputs = None, (meta,)
        g = grads[0]
        params = node.params
        # (no ``**params`` without params: that builds a dict per call)
        grad = self.vjp[0](g, out, *inputs, **params) if params else self.vjp[0](g, out, *inputs)
        # (_fitted spelled out: one call less per node; dtypes compared by identity first, see there)
        if grad is not None:
            data = grad._data if type(grad) is Tensor else None
            if data is None or data.shape != meta.shape or data.dtype is not meta.dtype and data.dtype != meta.dtype:
                grad = fit_gradient(grad, meta.shape, meta.dtype)
        return (grad,)

    def _backward_binary(self, node: Any, grads: list) -> tuple:
        """``backward`` of a one-output op with two inputs (``x * y``, ``x + 0.1``): no loop."""
        if node._arity != 2:
            return self._backward_general(node, grads)
        kept_a, kept_b = node._k0, node._k1
        if node._v0 is not None or node._v1 is not None or node._saved or node.out is not None:
            out, inputs = self.unpack(node)
        else:
            out, inputs = None, (kept_a, kept_b)
        g = grads[0]
        params = node.params
        vjp = self.vjp
        grad_a = grad_b = None
        if node._t0 is not None:  # (else no gradient is wanted: the rule is not called)
            grad_a = _fitted(vjp[0](g, out, *inputs, **params) if params else vjp[0](g, out, *inputs), kept_a)
        if node._t1 is not None:
            grad_b = _fitted(vjp[1](g, out, *inputs, **params) if params else vjp[1](g, out, *inputs), kept_b)
        return (grad_a, grad_b)

    def _backward_per_input(self, node: Any, grads: list) -> list:
        """``backward`` of a one-output op with a rule per input: rules of inputs that need no
        gradient are not called."""
        kept = node.kept()
        out, inputs = self.unpack(node) if node.saves else (None, kept)
        g = grads[0]
        params = node.params
        vjp = self.vjp
        grads_in = []
        i = 0
        for target, _ in node.edges:
            grads_in.append(None if target is None else _fitted(
                vjp[i](g, out, *inputs, **params) if params else vjp[i](g, out, *inputs), kept[i]))
            i += 1
        return grads_in

    def _backward_general(self, node: Any, grads: list) -> list:
        """``backward`` for multi-output ops and ops with one rule for all inputs."""
        kept = node.kept()
        out, inputs = self.unpack(node) if node.saves else (None, kept)
        if self.multi_output:
            g = tuple(gr if gr is not None else _wrap(np.zeros(shape, dtype))
                      for gr, (shape, dtype) in zip(grads, node.out_metas))
        else:
            g = grads[0]
        params = node.params
        vjp = self.vjp
        edges = node.edges
        per_input = type(vjp) is tuple
        if not per_input:
            results = list(vjp(g, out, *inputs, **params))
            if len(results) != len(edges):
                raise RuntimeError(f"{self.grad_name} returned {len(results)} gradients for {len(edges)} inputs")
        grads_in = []
        i = -1
        for target, _ in edges:
            i += 1
            if target is None:  # no gradient wanted: the rule is not called
                grads_in.append(None)
                continue
            grads_in.append(_fitted(vjp[i](g, out, *inputs, **params) if per_input else results[i], kept[i]))
        return grads_in

    def saved_attribute(self, node: Any, name: str) -> Any:
        """``node._saved_self`` / ``_saved_result`` / ``_raw_saved_*`` lookups."""
        if node._arity:
            unfold(node)  # (the SavedTensor objects of folded values: ``_raw_saved_*`` gives them)
        raw = name.startswith("_raw_saved_")
        key = name[len("_raw_saved_"):] if raw else name[len("_saved_"):]
        if key == "result" and type(node.out) is SavedTensor:
            saved = node.out
        elif key in self.arg_names and self.arg_names.index(key) < len(node.inputs):
            saved = node.inputs[self.arg_names.index(key)]
        elif key in node.params:
            return node.params[key]
        elif _NUMPY_NAMES.get(key) in node.params:
            return node.params[_NUMPY_NAMES[key]]
        else:
            raise AttributeError(f"'{self.grad_name}' object has no attribute '{name}'")
        if type(saved) is not SavedTensor:
            if isinstance(saved, TensorMeta):
                if not raw and self._may_save(self.arg_names.index(key), len(node.inputs)):
                    return None  # (saved only for some inputs' gradients, not in this call: torch's None)
                raise AttributeError(f"'{self.grad_name}' object has no attribute '{name}'")
            return saved
        return saved if raw else saved.unpack(node)

    def _may_save(self, position: int, n_inputs: int) -> bool:
        """True if some call saves input ``position`` (``mul`` saves ``self`` when ``other`` needs
        a gradient), so that torch's node declares it."""
        save = self.save_inputs
        if not callable(save):
            return bool(save)
        return any(save(needs)[position] for needs in itertools.product((False, True), repeat=n_inputs))

    def saved_attribute_names(self, node: Any) -> list:
        """The ``_saved_*`` names ``dir(node)`` lists: saved tensors, constant arguments, params (torch's names)."""
        if node._arity:
            unfold(node)
        names = []
        for i, (arg, x) in enumerate(zip(self.arg_names, node.inputs)):
            if type(x) is SavedTensor:
                names += [f"_saved_{arg}", f"_raw_saved_{arg}"]
            elif not isinstance(x, TensorMeta) or self._may_save(i, len(node.inputs)):  # (a number: pow's exponent)
                names.append(f"_saved_{arg}")
        if type(node.out) is SavedTensor:
            names += ["_saved_result", "_raw_saved_result"]
        names += [f"_saved_{_TORCH_NAMES.get(k, k)}" for k in node.params]
        return names


_TORCH_NAMES = {"axis": "dim", "keepdims": "keepdim"}  # torch's names of NumPy's parameters
_NUMPY_NAMES = {torch: numpy for numpy, torch in _TORCH_NAMES.items()}


def _keywords(impl: Callable) -> tuple:
    """The parameter names of ``impl`` (the keys that an op's ``params`` can have)."""
    try:
        return tuple(inspect.signature(impl).parameters)
    except (TypeError, ValueError):  # (a callable without a signature takes no params)
        return ()


# -- gradient fitting -----------------------------------------------------------
def _fitted(grad: Any, meta: Any) -> Any:
    """``grad`` fitted to the input that ``meta`` (a SavedTensor, TensorMeta or folded Tensor) describes;
    None stays None."""
    if grad is None:
        return None
    data = grad._data if type(grad) is Tensor else None
    # (dtypes compared by identity first: NumPy's builtin dtypes are singletons, and == costs more)
    if data is None or data.shape != meta.shape or (data.dtype is not meta.dtype and data.dtype != meta.dtype):
        return fit_gradient(grad, meta.shape, meta.dtype)
    return grad


def fit_gradient(g: Any, shape: tuple, dtype: np.dtype) -> Tensor:
    """Sum a broadcast gradient back to ``shape`` and cast it to ``dtype``.

    A complex gradient for a real input keeps its real part (the reference's
    convention). This is the one place that un-broadcasts.
    """
    if not isinstance(g, Tensor):
        g = _wrap(np.asarray(g))
    if g.shape != shape:  # the logical shape (a batched cotangent under vmap)
        g = sum_to_shape(g, shape)
    if g.dtype != dtype:
        if g.dtype.kind == "c" and dtype.kind != "c":
            g = g.real
        g = g.to(dtype)
    return g


def sum_to_shape(g: Tensor, shape: tuple) -> Tensor:
    """Sum ``g`` over the axes that broadcasting added to or stretched in ``shape``."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        i + lead for i, n in enumerate(shape) if n == 1 and g.shape[i + lead] != 1
    )
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    if lead or g.shape != shape:
        g = g.reshape(shape)
    return g


# -- families --------------------------------------------------------------------
def _conj_if_complex(d: Any) -> Any:
    if isinstance(d, Tensor):
        return d.conj() if d._data.dtype.kind == "c" else d
    if isinstance(d, (int, float)):  # real constants (the common case): skip NumPy's slow check
        return d
    return np.conj(d) if np.iscomplexobj(d) else d


def vjp_from_partial(partial: Callable | int) -> Callable:
    """``g * conj(d)`` for a partial derivative ``d`` (constants 1 and -1 fold away)."""
    if partial == 1:
        return lambda g, out, *inputs, **params: g
    if partial == -1:
        return _negated_gradient

    def vjp(g: Tensor, out: Any, *inputs: Any, **params: Any) -> Tensor:
        d = partial(out, *inputs, **params) if params else partial(out, *inputs)  # (see Op._backward_unary)
        if type(d) is Tensor and d._data.dtype.kind != "c":
            # In place unless d is 0-d: one value's product costs less than the checks.
            if d._data.ndim and sole_reference(d) and not STATE.observed and multiply_into(d, g):
                return d
        elif type(d) is not float:  # (a float, the common constant, is its own conjugate)
            d = _conj_if_complex(d)
        product = unseen_product(g, d)
        return g * d if product is None else product

    return vjp


def _negated_gradient(g: Any, out: Any, *inputs: Any, **params: Any) -> Any:
    """-g (the vjp of a partial -1); into ``g``'s memory when the backward engine holds its only reference."""
    if engine_only(g) and scale_into(g, -1.0):
        return g
    return -g


def _jvp_from_partials(partials: tuple) -> Callable:
    """``sum_i t_i * d_i`` over the inputs that carry a tangent.

    Temporaries that nothing else can see (``is_scratch``) take the products and
    sums in place, which saves an allocation per term on large arrays.
    """

    # Per input: its position, its partial and the partial's sign if it is the constant 1 or -1, else 0
    # (compared once here: comparing a function with a number costs two failed comparisons; and a loop
    # over one tuple makes no zip object and no second iterator)
    rules = tuple((i, partial, partial if type(partial) is int and partial in (1, -1) else 0)
                  for i, partial in enumerate(partials))

    def jvp(tangents: tuple, out: Tensor, *inputs: Any, **params: Any) -> Tensor:
        # (in place only without observers, which are shown every op; the thread-local flag is read
        # only where a product or sum could go in place)
        total = None
        for i, partial, sign in rules:
            t = tangents[i]
            if t is None:
                continue
            if sign:
                term = t
            else:
                term, sign = partial(out, *inputs, **params) if params else partial(out, *inputs), 1
                # In place unless term is one value: then NumPy's scalar product (in unseen_product)
                # costs less than a ufunc call.
                if (type(term) is Tensor and term._data.ndim and sole_reference(term)
                        and not STATE.observed and is_scratch(term, t)):
                    np.multiply(term._data, t._data, out=term._data)
                else:
                    product = unseen_product(t, term, False)  # (a number, as mul's 1.01 in x * 1.01)
                    term = t * term if product is None else product
            if total is None:
                total = term if sign == 1 else -term
            elif sole_reference(total) and not STATE.observed and is_scratch(total, term):
                (np.add if sign == 1 else np.subtract)(total._data, term._data, out=total._data)
            else:
                total = total + term if sign == 1 else total - term
        return total

    return jvp


def elementwise(name: str, impl: Callable, partials: tuple, **kwargs: Any) -> Op:
    """An elementwise (broadcasting) op from its holomorphic partial derivatives.

    Each partial is ``d(out, *inputs, **params)``, the constant 1 or -1, or None for an input that is
    never differentiated (``where``'s condition). A ``vjp`` or ``jvp`` given instead of the derived one
    must read what the partials read (``save_inputs`` / ``save_out``): forward mode may defer the jvp.
    """
    kwargs.setdefault("vjp", tuple(None if p is None else vjp_from_partial(p) for p in partials))
    kwargs.setdefault("jvp", _jvp_from_partials(partials))
    kwargs.setdefault("save_inputs", any(callable(p) for p in partials))
    kwargs.setdefault("promotion", 0 if len(partials) > 1 else None)
    op = Op(name, impl, family="elementwise", **kwargs)
    op.jvp_reads = _reads_of_partials(op.save_inputs, op.save_out)
    return op


def _reads_of_partials(save_inputs: Any, save_out: Any) -> Callable:
    """What the derived jvp reads: the partials of the inputs with a tangent read what the vjp of
    those inputs reads, which ``save_inputs`` / ``save_out`` declare (``needs`` = has a tangent)."""

    def reads(has_tangent: tuple) -> tuple:
        inputs = save_inputs(has_tangent) if callable(save_inputs) else (save_inputs,) * len(has_tangent)
        return inputs, save_out(has_tangent) if callable(save_out) else save_out

    return reads


def _reads_nothing(has_tangent: tuple) -> tuple:
    """What a linear op's jvp reads: the tangents only (and the shapes and dtypes of the inputs)."""
    return (False,) * len(has_tangent), False


def linear(name: str, impl: Callable, vjp: Sequence[Callable] | Callable, **kwargs: Any) -> Op:
    """A linear op (in each tensor input): its jvp is the op applied to the tangents.

    Missing tangents count as zeros; ``vjp`` is the transpose and must be given. A ``jvp`` given
    replaces that one (it must read the tangents only).
    """
    kwargs.setdefault("save_inputs", False)
    op = Op(name, impl, vjp=vjp, family=kwargs.pop("family", "linear"), **kwargs)

    def jvp(tangents: tuple, out: Any, *inputs: Any, **params: Any) -> Tensor:
        filled = [t if t is not None else _zeros_for(x) for t, x in zip(tangents, inputs)]
        return apply(op, *filled, **params)

    if op.jvp is None:
        op.jvp = jvp
    op.jvp_reads = _reads_nothing
    return op


def _zeros_for(x: Any) -> Tensor:
    """Zeros of ``x``'s shape and dtype (``x``: a Tensor, a ``TensorMeta`` or a constant)."""
    if not isinstance(x, (Tensor, TensorMeta)):
        x = np.asarray(x)
    return _wrap(np.zeros(x.shape, x.dtype))


def nondifferentiable(name: str, impl: Callable, family: str = "elementwise", **kwargs: Any) -> Op:
    """An op whose outputs never require grad (comparisons, sign, argmax, ...); an elementwise one
    promotes its operands' dtypes (comparisons compare in the common dtype, as torch's)."""
    kwargs.setdefault("promotion", 0 if family == "elementwise" else None)
    return Op(name, impl, family=family, differentiable=False, save_inputs=False, **kwargs)


# -- torch's names of overloads ----------------------------------------------------
def is_tensor_operand(kept: Any) -> bool:
    """True if what a node keeps of an argument (``Node.kept()``) stands for a Tensor, not a number."""
    return type(kept) is SavedTensor or isinstance(kept, (TensorMeta, Tensor))


def name_by_operands(names: dict) -> Callable[[Any], str]:
    """A ``grad_name_for`` choosing by which arguments were Tensors: ``names`` maps one flag per
    argument (True: a Tensor) to a name; other combinations keep the op's ``grad_name``.

    >>> import dualgrad as dg
    >>> x = dg.tensor([1., 2.], requires_grad=True)
    >>> (x ** 2).grad_fn.name(), (x ** x).grad_fn.name(), (2 ** x).grad_fn.name()
    ('PowBackward0', 'PowBackward1', 'PowBackward2')
    """

    def grad_name_for(node: Any) -> str:
        return names.get(tuple(is_tensor_operand(kept) for kept in node.kept()), node.op.grad_name)

    return grad_name_for


def overload(op: Op, name: str, grad_name: str, grad_name_for: Callable[[Any], str] | None = None,
             number_inputs: bool | Callable[[Any], bool] | None = None) -> Op:
    """Another entry for ``op``, named ``name``: the same impl, rules and flags, its nodes named
    ``grad_name`` (or by ``grad_name_for``). For the calls that torch records as another op than ``op`` with the same
    result (``t`` and ``transpose`` are ``permute`` here, TBackward0 and TransposeBackward0 there);
    declared after ``op``'s batching rule, which it shares. ``number_inputs`` (see ``Op``) defaults to ``op``'s."""
    twin = Op(name, op.impl, vjp=op.vjp, jvp=op.jvp, batch=op.batch, family=op.family,
              save_inputs=op.save_inputs, save_out=op.save_out, differentiable=op.differentiable,
              grad_name=grad_name, grad_name_for=grad_name_for, multi_output=op.multi_output,
              arg_names=op.arg_names, view=op.view, promotion=op.promotion, to_float=op.to_float,
              number_inputs=op.number_inputs if number_inputs is None else number_inputs)
    twin.jvp_reads, twin.scatter_index, twin.pack_order = op.jvp_reads, op.scatter_index, op.pack_order
    return twin
