"""``einsum``: Einstein summation, contracted pairwise on BLAS along a cached ``opt_einsum`` path.

``opt_einsum`` chooses the order of the pairwise contractions; each pair is then
one (batched) ``np.matmul`` on transposed, reshaped views (:func:`_pairwise`),
including pairs that share a batch letter, which ``opt_einsum`` and NumPy would
hand to NumPy's unblocked C loop. NumPy's ``einsum`` only sees one operand at a
time (diagonals and sums over a letter).

The public function turns any equation (implicit output, ``...``, size-1
broadcasting, torch's and NumPy's call forms) into *explicit* subscripts over
operands whose equal letters have equal sizes; the op only ever sees those.
Its rules are einsums again:

* vjp for operand ``i``: the cotangent contracted with the conjugated other
  operands, producing the letters of operand ``i``. A letter repeated in
  operand ``i`` (a diagonal) gets a fresh letter tied to it by an identity
  matrix; a letter found only in operand ``i`` is supplied by a vector of ones.
* jvp: the sum over operands of the einsum with that operand replaced by its tangent.
* batching: a fresh letter for the batch axis.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import numpy as np
import opt_einsum

from ..tensor import Tensor, TensorMeta, _wrap, as_operand
from .batch_rules import NOT_BATCHED, to_front
from .dispatch import OTHER_FIRST, apply
from .registry import Op
from .surface import exported, public


@functools.lru_cache(maxsize=512)
def contraction(subscripts: str, shapes: tuple) -> tuple:
    """The pairwise steps (cheapest order by ``opt_einsum``, computed once) for ``subscripts`` and ``shapes``.

    Each step is ``(positions, step_subscripts)``: the operands at ``positions`` are
    popped from the list in that order (the order of ``step_subscripts``' terms) and
    their contraction is appended to it.
    """
    if len(shapes) == 1:
        return (((0,), subscripts),)
    _, info = opt_einsum.contract_path(subscripts, *shapes, shapes=True)
    return tuple((positions, step) for positions, _, step, *_ in info.contraction_list)


def _reduce_operand(x: np.ndarray, term: str, keep: str) -> tuple[np.ndarray, str]:
    """Take the diagonal of repeated letters and sum letters not in ``keep``: one operand, no product."""
    reduced = "".join(c for c in dict.fromkeys(term) if c in keep)
    if reduced == term:
        return x, term
    return np.einsum(f"{term}->{reduced}", x), reduced


def _pairwise(a: np.ndarray, b: np.ndarray, subscripts: str) -> np.ndarray:
    """``einsum(subscripts, a, b)`` as one (batched) matrix product on transposed, reshaped views.

    Letters are sorted into batch (in ``a``, ``b`` and the output), contracted (in
    ``a`` and ``b`` only), left (``a`` and output) and right (``b`` and output);
    then ``out[batch, left, right] = sum_k a[batch, left, k] * b[batch, k, right]``
    is ``np.matmul`` (BLAS), or a broadcast product when nothing is contracted.
    """
    (ta, tb), output = _split(subscripts)
    a, ta = _reduce_operand(a, ta, tb + output)
    b, tb = _reduce_operand(b, tb, ta + output)
    size = dict(zip(ta, a.shape)) | dict(zip(tb, b.shape))
    batch = [c for c in output if c in ta and c in tb]
    left = [c for c in output if c in ta and c not in tb]
    right = [c for c in output if c in tb and c not in ta]
    summed = [c for c in ta if c in tb and c not in output]
    if batch + right + left == list(output) != batch + left + right:
        # the output wants b's letters before a's: the product b a (transposed) is laid out as the
        # output, so it needs no transpose and the ops that read it get contiguous memory
        a, ta, b, tb, left, right = b, tb, a, ta, right, left
    nb, nl, nr, nk = (_size(size, group) for group in (batch, left, right, summed))
    a3 = a.transpose([ta.index(c) for c in batch + left + summed]).reshape(nb, nl, nk)
    b3 = b.transpose([tb.index(c) for c in batch + summed + right]).reshape(nb, nk, nr)
    out = np.matmul(a3, b3) if summed else a3 * b3.reshape(nb, 1, nr)
    order = batch + left + right
    out = out.reshape([size[c] for c in order])
    return out.transpose([order.index(c) for c in output])


def _size(size: dict, letters: list) -> int:
    """The product of the sizes of ``letters`` (1 for none)."""
    n = 1
    for c in letters:
        n *= size[c]
    return n


def _run(arrays: list, subscripts: str) -> np.ndarray:
    """Contract ``arrays`` along the cached pairwise path; products go through :func:`_pairwise`."""
    arrays = list(arrays)
    for positions, step in contraction(subscripts, tuple(a.shape for a in arrays)):
        operands = [arrays.pop(k) for k in positions]
        if len(operands) == 1:
            arrays.append(np.einsum(step, operands[0]))
        else:
            arrays.append(_pairwise(operands[0], operands[1], step))
    return arrays[0]


def _split(subscripts: str) -> tuple[list[str], str]:
    inputs, output = subscripts.split("->")
    return inputs.split(","), output


def _fresh(used: str) -> Iterator[str]:
    """Symbols that do not occur in ``used``, ASCII letters first."""
    k = 0
    while True:
        symbol = opt_einsum.get_symbol(k)
        if symbol not in used:
            yield symbol
        k += 1


def _conj(x: Any) -> Any:
    return x.conj() if x.dtype.kind == "c" else x


def _einsum_impl(*arrays: np.ndarray, subscripts: str) -> np.ndarray:
    out = _run(list(arrays), subscripts)
    if any(np.may_share_memory(out, a) for a in arrays):
        out = out.copy()
    return out


def _contract(subscripts: str, *operands: Any) -> Tensor:
    return apply(EINSUM, *operands, subscripts=subscripts)


def _operand_gradient(g: Tensor, operands: tuple, i: int, subscripts: str) -> Tensor:
    """sum over the other letters of g * conj(other operands), laid out as operand ``i``."""
    inputs, output = _split(subscripts)
    fresh = _fresh(subscripts)
    terms, tensors = [output], [g]
    for j, (term, x) in enumerate(zip(inputs, operands, strict=True)):
        if j != i:
            terms.append(term)
            tensors.append(_conj(x))
    present = "".join(terms)
    target = ""
    shape = operands[i].shape
    for letter, size in zip(inputs[i], shape, strict=True):
        if letter in target:
            tied = next(fresh)
            terms.append(letter + tied)
            tensors.append(_wrap(np.eye(size, dtype=g.dtype)))
            target += tied
            continue
        if letter not in present:
            terms.append(letter)
            tensors.append(_wrap(np.ones(size, dtype=g.dtype)))
        target += letter
    return _contract(",".join(terms) + "->" + target, *tensors)


def _einsum_vjp(g: Tensor, out: Any, *operands: Any, subscripts: str) -> list:
    """One gradient per operand (None for operands that do not require grad).

    An operand is saved only when another one requires grad (``_saved_for_others``): one that was not
    (a ``TensorMeta``) is then the one that requires grad, and all the others, which its gradient
    reads, were saved."""
    return [
        _operand_gradient(g, operands, i, subscripts)
        if type(x) is TensorMeta or (isinstance(x, Tensor) and x.requires_grad) else None
        for i, x in enumerate(operands)
    ]


def _saved_for_others(needs: tuple) -> tuple:
    """Operand i is saved when another operand requires grad (its gradient reads all the others), as torch's."""
    return tuple(any(need for j, need in enumerate(needs) if j != i) for i in range(len(needs)))


def _einsum_jvp(tangents: tuple, out: Any, *operands: Any, subscripts: str) -> Tensor:
    """Product rule: the einsum with each operand in turn replaced by its tangent."""
    total = None
    for i, t in enumerate(tangents):
        if t is not None:
            term = _contract(subscripts, *operands[:i], t, *operands[i + 1:])
            total = term if total is None else total + term
    return total


def _einsum_batch(args: tuple, bdims: tuple, subscripts: str) -> tuple:
    """A fresh letter for the batch axis, leading in the batched operands and the output."""
    inputs, output = _split(subscripts)
    letter = next(_fresh(subscripts))
    terms = [term if bdim is NOT_BATCHED else letter + term for term, bdim in zip(inputs, bdims, strict=True)]
    operands = [to_front(x, bdim) for x, bdim in zip(args, bdims, strict=True)]
    return _contract(",".join(terms) + "->" + letter + output, *operands), 0


EINSUM = Op("einsum", _einsum_impl, vjp=_einsum_vjp, jvp=_einsum_jvp, batch=_einsum_batch,
            family="linalg", arg_names=(), save_inputs=_saved_for_others)
# (torch contracts two operands by bmm, which saves the second before the first)
EINSUM.pack_order = lambda *operands: OTHER_FIRST if len(operands) == 2 else tuple(range(len(operands)))


# -- parsing the equation --------------------------------------------------------------------
def _error(message: str) -> RuntimeError:
    return RuntimeError(f"einsum(): {message}")


def _terms(equation: str, shapes: tuple) -> tuple[list[str], str | None]:
    """Input terms (validated against ``shapes``) and the output term (None when implicit)."""
    equation = equation.replace(" ", "")
    lhs, arrow, output = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise _error(f"the equation {equation!r} has {len(terms)} operand(s) but {len(shapes)} were given")
    for term in terms + [output]:
        rest = term.replace("...", "", 1)
        bad = [c for c in rest if not c.isalpha()]
        if bad:
            raise _error(f"invalid subscript {bad[0]!r} in equation {equation!r}")
    for k, (term, shape) in enumerate(zip(terms, shapes, strict=True)):
        letters = len(term.replace("...", ""))
        if "..." not in term and letters != len(shape):
            raise _error(
                f"the number of subscripts in the equation ({letters}) does not match the number of "
                f"dimensions ({len(shape)}) for operand {k} and no ellipsis was given"
            )
        if letters > len(shape):
            raise _error(f"operand {k} has shape {shape}, too few dimensions for subscripts {term!r}")
    return terms, (output if arrow else None)


@functools.lru_cache(maxsize=512)
def parse(equation: str, shapes: tuple) -> tuple[str, tuple]:
    """Explicit subscripts for operands of ``shapes``, and each operand's new shape (or None).

    ``...`` becomes fresh letters (right-aligned across operands); dimensions of
    size 1 that broadcast against a larger size are squeezed out of their operand.
    """
    terms, output = _terms(equation, shapes)
    fresh = _fresh(equation)
    covered = [len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes, strict=True) if "..." in t]
    n_ellipsis = max(covered, default=0)
    ellipsis = "".join(next(fresh) for _ in range(n_ellipsis))
    expanded = []
    for term, shape in zip(terms, shapes, strict=True):
        k = len(shape) - len(term.replace("...", ""))
        expanded.append(term.replace("...", ellipsis[n_ellipsis - k:]) if "..." in term else term)
    sizes: dict[str, int] = {}
    for k, (term, shape) in enumerate(zip(expanded, shapes, strict=True)):
        seen: dict[str, int] = {}
        for letter, size in zip(term, shape, strict=True):
            if seen.setdefault(letter, size) != size:
                raise _error(f"subscript {letter} is repeated for operand {k} but the sizes don't match, "
                             f"{seen[letter]} != {size} (shape {shape})")
            if size != 1 and sizes.setdefault(letter, size) != size:
                raise _error(f"subscript {letter} has size {size} for operand {k} (shape {shape}) which "
                             f"does not broadcast with previously seen size {sizes[letter]}")
    if output is None:
        once = sorted(c for c in set("".join(terms)) if c != "." and "".join(terms).count(c) == 1)
        output = ellipsis + "".join(once)
    else:
        output = output.replace("...", ellipsis)
        for letter in output:
            if output.count(letter) > 1:
                raise _error(f"output subscript {letter} appears more than once in the output")
            if not any(letter in term for term in expanded):
                raise _error(f"output subscript {letter} does not appear in the equation for any input "
                             "operand")
    final, reshapes = [], []
    for term, shape in zip(expanded, shapes, strict=True):
        keep = [size != 1 or sizes.get(letter, 1) == 1 for letter, size in zip(term, shape, strict=True)]
        final.append("".join(c for c, k in zip(term, keep, strict=True) if k))
        reshapes.append(None if all(keep) else tuple(n for n, k in zip(shape, keep, strict=True) if k))
    return ",".join(final) + "->" + output, tuple(reshapes)


def _sublist(sub: Any) -> str:
    return "".join("..." if s is Ellipsis else opt_einsum.get_symbol(int(s)) for s in sub)


def _call_form(args: tuple) -> tuple[str, list]:
    """``(equation, operands)`` from ``einsum(eq, *ops)``, ``einsum(eq, [ops])`` or the sublist form."""
    if isinstance(args[0], str):
        operands = list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
        return args[0], operands
    operands, subs = list(args[0::2]), list(args[1::2])
    output = None
    if len(operands) > len(subs):
        output = operands.pop()
    equation = ",".join(_sublist(s) for s in subs)
    return (equation if output is None else equation + "->" + _sublist(output)), operands


@public(None, method=False)
def einsum(*args: Any) -> Tensor:
    """Einstein summation: ``einsum("ij,jk->ik", a, b)`` is ``a @ b``.

    Accepts torch's and NumPy's forms: ``einsum(equation, *operands)``,
    ``einsum(equation, [operands])`` and ``einsum(op0, sublist0, op1, sublist1, ..., [out])``;
    an implicit output (letters seen once, in order), ``...`` and broadcasting
    of size-1 dimensions. The contraction order is computed once per equation
    and shapes by ``opt_einsum`` and cached.

    >>> import dualgrad as dg
    >>> a, b = dg.ones(2, 3), dg.ones(3, 4)
    >>> dg.einsum("ij,jk->ik", a, b).shape
    (2, 4)
    >>> dg.einsum("ii", dg.eye(3))
    tensor(3.)
    """
    if not args:
        raise TypeError("einsum() missing the equation")
    equation, operands = _call_form(args)
    if not operands:
        raise _error("at least one operand is required")
    operands = [as_operand(x) for x in operands]
    subscripts, reshapes = parse(equation, tuple(x.shape for x in operands))
    operands = [x if shape is None else x.reshape(shape) for x, shape in zip(operands, reshapes, strict=True)]
    return _contract(subscripts, *operands)


__all__ = exported(__name__)
