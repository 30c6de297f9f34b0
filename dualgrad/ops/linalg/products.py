"""Linear algebra: matmul and the products built on it (dot, inner, outer, tensordot, trace).

Only ``matmul`` is an op of its own (with ``vector_products``, the vector products that vmap
of a vector ``matmul`` makes: one op where three reshapes would surround a matmul); the other products are ``matmul``,
``einsum``, ``mul`` or indexing on reshaped operands, so their derivatives and
batching rules come from those ops.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...factories import eye
from ...fastpath import unseen_real_arrays
from ...tensor import Tensor, _wrap, as_operand
from ...vmap.identity_basis import identity_block_start
from .._axes import normalize_axis
from ..batch_rules import NOT_BATCHED, aligned_at_front, to_front
from ..dispatch import OTHER_FIRST, apply, tensor_arg
from ..einsum import einsum
from ..registry import Op, overload
from ..shape.core import PAD, PERMUTE, RESHAPE, TRANSPOSE, broadcast_to, roll
from ..surface import exported, public


def _ndim(x: Any) -> int:
    """The rank of an operand of a batching rule (a Tensor's own, without NumPy's dispatch)."""
    return x.ndim if isinstance(x, Tensor) else np.ndim(x)


def _shape(x: Any) -> tuple:
    """The shape of an operand of a batching rule."""
    return x.shape if isinstance(x, Tensor) else np.shape(x)


def matrix_transpose(x: Tensor) -> Tensor:
    """The last two axes swapped (the op itself: the Tensor method re-validates its arguments)."""
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return apply(TRANSPOSE, x, axes=axes)


def _matmul_vjp_x(g: Tensor, out: Any, x: Any, y: Any) -> Tensor:
    """dL/dx = g @ y^H, with NumPy's 1-D promotion rules undone."""
    x_ndim = len(x.shape)
    if x_ndim == 1:  # (vector @ matrix: dx = y @ g, one NumPy product when no mode can see it)
        arrays = unseen_real_arrays(y, g)
        if arrays is not None and arrays[0].ndim == 2:
            return _wrap(np.matmul(*arrays))
    else:  # (a vector ``g`` is no matrix: only a matrix ``x`` may take the product of two matrices)
        product = _unseen_matrix_product(g, y, False, True)
        if product is not None:
            return product
    y = as_operand(y)  # (``x`` is not saved: a TensorMeta, read for its rank only)
    yc = y.conj()
    if y.ndim == 1:
        return g * yc if x_ndim == 1 else g.unsqueeze(-1) * yc
    if x_ndim == 1:
        return (yc @ g.unsqueeze(-1)).squeeze(-1)
    return g @ matrix_transpose(yc)


def _matmul_vjp_y(g: Tensor, out: Any, x: Any, y: Any) -> Tensor:
    """dL/dy = x^H @ g, with NumPy's 1-D promotion rules undone."""
    y_ndim = len(y.shape)
    if y_ndim == 2:  # (one test of both operands for the two products of a matrix ``y``; no other ``y`` has one)
        arrays = unseen_real_arrays(x, g)
        if arrays is not None:
            a, b = arrays
            if a.ndim == 1:  # (vector @ matrix: dy is the outer product of x and g)
                return _wrap(np.multiply.outer(a, b))
            if a.ndim == 2 and b.ndim == 2:  # (two matrices: x^T @ g)
                return _wrap(_matmul_impl(a.T, b))
    x = as_operand(x)  # (``y`` is not saved: a TensorMeta, read for its rank only)
    xc = x.conj()
    if x.ndim == 1:
        return g * xc if y_ndim == 1 else xc.unsqueeze(-1) * g.unsqueeze(-2)
    if y_ndim == 1:
        return (matrix_transpose(xc) @ g.unsqueeze(-1)).squeeze(-1)
    return matrix_transpose(xc) @ g


def _unseen_matrix_product(a: Any, b: Any, transpose_a: bool, transpose_b: bool) -> Tensor | None:
    """``a @ b`` (either transposed first) by NumPy directly, for real matrices of one dtype that no
    mode can see (``unseen``), else None: the rule's transpose and matmul would only wrap NumPy's
    (a backward without ``create_graph``, as W2's)."""
    arrays = unseen_real_arrays(a, b)
    if arrays is None:
        return None
    a, b = arrays
    if a.ndim != 2 or b.ndim != 2:
        return None
    return _wrap(_matmul_impl(a.T if transpose_a else a, b.T if transpose_b else b))


def _matmul_jvp(tangents: tuple, out: Any, x: Tensor, y: Tensor) -> Tensor:
    """Product rule: t_x @ y + x @ t_y."""
    tx, ty = tangents
    total = None if tx is None else matmul(tx, y)
    if ty is not None:
        term = matmul(x, ty)
        total = term if total is None else total + term
    return total


def _matmul_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if type(x) is np.ndarray and type(y) is np.ndarray and x.ndim == 2 == y.ndim and x.shape[1] == y.shape[0] != 1:
        return np.matmul(x, y)  # (two matrices, no outer product: the common case, with the fewest tests)
    if type(x) is np.ndarray and type(y) is np.ndarray and x.ndim == 1 and y.ndim == 2 and x.shape[0] == y.shape[0]:
        return np.matmul(x, y)  # (a vector times a matrix: an LSTM's gates, ``x @ W``)
    if np.ndim(x) == 0 or np.ndim(y) == 0:
        raise RuntimeError(
            f"matmul: both arguments need at least 1 dimension, got shapes {np.shape(x)} and {np.shape(y)}"
        )
    outer = np.ndim(x) >= 2 and np.ndim(y) >= 2 and np.shape(x)[-1] == 1 == np.shape(y)[-2]
    try:
        if (not outer and type(y) is np.ndarray and y.ndim > 2 and not any(y.strides[:-2]) and y.size
                and type(x) is np.ndarray and x.shape[:-2] == y.shape[:-2]):
            # a stack times one matrix broadcast along it (stride 0: vmap(grad(f)) expands an
            # unbatched input so that each batch member has its own gradient): one GEMM on the
            # stacked rows, not a small product per member
            rows = np.matmul(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), y[(0,) * (y.ndim - 2)])
            return rows.reshape(x.shape[:-1] + y.shape[-1:])
        # an inner dimension of 1 (outer products): NumPy's stacked matmul is much slower than a multiply
        return np.multiply(x, y) if outer else np.matmul(x, y)
    except ValueError:
        raise RuntimeError(
            f"matmul: shapes {np.shape(x)} and {np.shape(y)} cannot be multiplied"
        ) from None


def _matrix_form(x: Any, bdim: int | None, vector_axis: int, rank: int) -> Tensor:
    """A batched operand as ``(B, 1.., rows, cols)`` of ``rank + 1`` dims; an unbatched one as a matrix.

    A vector gets its missing matrix axis at ``vector_axis`` (-2 on the left, -1 on the right).
    """
    x = to_front(as_operand(x), bdim)
    batched = bdim is not NOT_BATCHED
    shape = x.shape[1:] if batched else x.shape
    if len(shape) == 1:
        shape = (1,) + shape if vector_axis == -2 else shape + (1,)
    if batched:
        shape = x.shape[:1] + (1,) * (rank - len(shape)) + shape
    return x if shape == x.shape else apply(RESHAPE, x, shape=shape)


def _in_batch(members: Tensor, n: int, start: int) -> Tensor:
    """``members`` at positions ``start:start + len(members)`` of a batch of ``n``, zeros elsewhere."""
    after = n - start - members.shape[0]
    if start == 0 and after == 0:
        return members
    return apply(PAD, members, widths=((start, after),) + ((0, 0),) * (members.ndim - 1), value=0)


def _identity_times(x: Tensor, start: int, y: Any) -> Tensor:
    """``E_b @ y`` for the members of an identity block ``x`` (``(n, *lead, k)``), without a product.

    Member ``b = start + l * k + j`` is the unit matrix with a one at ``(l, j)``
    (``lead`` flattened to ``l``), so its product holds ``y[j]`` in row ``l``:
    ``eye(L)[l, l'] * y[j]``, built by one broadcasting multiply (a copy of
    ``y``, which never aliases it, in the product's dtype).
    """
    n, lead, k = x.shape[0], x.shape[1:-1], x.shape[-1]
    rows, rest = math.prod(lead), _shape(y)[1:]
    spread = eye(rows, dtype=x.dtype).reshape((rows, 1, rows) + (1,) * len(rest))
    members = apply(RESHAPE, as_operand(y), shape=(1, k, 1) + rest) * spread
    return _in_batch(apply(RESHAPE, members, shape=(rows * k,) + lead + rest), n, start)


def _times_identity(x: Any, y: Tensor, start: int) -> Tensor:
    """``x @ E_b`` for the members of an identity block ``y`` (``(n, k)`` or ``(n, k, m)``), without a product.

    Member ``b = start + i * m + j`` is the unit vector or matrix with a one at
    ``(i, j)``, so its product holds the column ``x[..., i]`` in column ``j``:
    ``x.mT[i] * eye(m)[j, j']``, built by one broadcasting multiply (a copy of
    ``x``, which never aliases it, in the product's dtype).
    """
    x = as_operand(x)
    n, k, columns = y.shape[0], y.shape[1], y.shape[2:]
    m, front = (columns[0] if columns else 1), tuple(x.shape[:-1])
    spread = eye(m, dtype=y.dtype).reshape((1, m) + (1,) * len(front) + (m,))
    x_columns = matrix_transpose(x) if x.ndim == 2 else x
    members = apply(RESHAPE, x_columns, shape=(k, 1) + front + (1,)) * spread
    return _in_batch(apply(RESHAPE, members, shape=(k * m,) + front + columns), n, start)


def _batched_times_fixed(x: Tensor, bx: int, y: Any) -> tuple:
    """A batched ``x`` (at least 1-D) times an unbatched vector or matrix ``y``: one GEMM.

    The batch and the leading axes of ``x`` fold into the rows: ``x.reshape(-1, k) @ y``.
    No product at all when ``x`` is a block of a Jacobian's identity basis.
    """
    start = identity_block_start(x) if bx == 0 else None
    if start is not None and x.shape[-1] == _shape(y)[0]:
        return _identity_times(x, start, y), 0
    x = to_front(x, bx)
    rows = apply(RESHAPE, x, shape=(math.prod(x.shape[:-1]), x.shape[-1]))
    return apply(RESHAPE, matmul(rows, y), shape=x.shape[:-1] + _shape(y)[1:]), 0


def _fixed_times_batched(x: Any, y: Tensor, by: int) -> tuple:
    """An unbatched vector or matrix ``x`` times a batched vector or matrix ``y``: one GEMM.

    A batch of vectors ``t`` (``(B, k)``) gives ``t @ x.mT``; a batch of matrices
    is laid out as ``(k, B, m)`` and multiplied as one ``(k, B * m)`` matrix.
    No product at all when ``y`` is a block of a Jacobian's identity basis.
    """
    start = identity_block_start(y) if by == 0 else None
    if start is not None and _shape(x)[-1] == y.shape[1]:
        return _times_identity(x, y, start), 0
    y = to_front(y, by)
    if y.ndim == 2:
        return matmul(y, matrix_transpose(as_operand(x)) if _ndim(x) == 2 else x), 0
    size, k, m = y.shape
    columns = apply(RESHAPE, apply(PERMUTE, y, axes=(1, 0, 2)), shape=(k, size * m))
    out = matmul(x, columns)
    if _ndim(x) == 1:
        return apply(RESHAPE, out, shape=(size, m)), 0
    return apply(RESHAPE, out, shape=(_shape(x)[0], size, m)), 1


def _matmul_batch(args: tuple, bdims: tuple) -> tuple:
    """Batch axes to the front and broadcast; vectors go through as one-row/one-column matrices.

    When only one operand is batched and the other is a vector or a matrix, the
    batch folds into one matrix product instead of a stack of small ones. Two
    batched vectors (per-example dot products, as in ``vmap(grad(f))`` of a linear
    model) are one ``vector_products`` op.
    """
    (x, y), (bx, by) = args, bdims
    if bx is not NOT_BATCHED and by is not NOT_BATCHED and _ndim(x) == 2 == _ndim(y):
        return apply(VECTOR_PRODUCTS, to_front(x, bx), to_front(y, by)), 0
    if by is NOT_BATCHED and 1 <= _ndim(y) <= 2 and _ndim(x) >= 2:
        return _batched_times_fixed(x, bx, y)
    if bx is NOT_BATCHED and 1 <= _ndim(x) <= 2 and 2 <= _ndim(y) <= 3:
        return _fixed_times_batched(x, y, by)
    x_vector = _ndim(x) - (bx is not NOT_BATCHED) == 1
    y_vector = _ndim(y) - (by is not NOT_BATCHED) == 1
    rank = max(2, _ndim(x) - (bx is not NOT_BATCHED), _ndim(y) - (by is not NOT_BATCHED))
    out = matmul(_matrix_form(x, bx, -2, rank), _matrix_form(y, by, -1, rank))
    shape = out.shape[:-2] + out.shape[-2:-1] * (not x_vector) + out.shape[-1:] * (not y_vector)
    return (apply(RESHAPE, out, shape=shape) if shape != out.shape else out), 0


def _vector_products_impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x[..., i] @ y[..., i]`` summed over the last axis, leading axes broadcast: ``matmul``'s
    kernel on the vectors as 1-row by 1-column matrices (the same products and sums as vmap's
    reshapes around a ``matmul`` gave)."""
    return _matmul_impl(x[..., None, :], y[..., :, None])[..., 0, 0]


def _vector_products_jvp(tangents: tuple, out: Any, x: Tensor, y: Tensor) -> Tensor:
    """Product rule: t_x . y + x . t_y."""
    tx, ty = tangents
    total = None if tx is None else apply(VECTOR_PRODUCTS, tx, y)
    if ty is not None:
        term = apply(VECTOR_PRODUCTS, x, ty)
        total = term if total is None else total + term
    return total


def _vector_products_batch(args: tuple, bdims: tuple) -> tuple:
    """Batch axes first (never the summed last axis), ranks aligned."""
    return apply(VECTOR_PRODUCTS, *aligned_at_front(args, bdims)), 0


# (the gradients are broadcast along the summed axis; the backward sums them to the inputs' shapes)
VECTOR_PRODUCTS = Op("vector_products", _vector_products_impl,
                     vjp=(lambda g, out, x, y: g.unsqueeze(-1) * as_operand(y).conj(),
                          lambda g, out, x, y: as_operand(x).conj() * g.unsqueeze(-1)),
                     jvp=_vector_products_jvp, batch=_vector_products_batch, family="linalg",
                     grad_name="DotBackward0", promotion=0)


_PRODUCT_NAMES = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (1, 2): "SqueezeBackward4", (2, 2): "MmBackward0"}


def _matmul_name(node: Any) -> str:
    """torch's name for ``x @ y``, by the ranks: dot, mv, mm; with a batch, the reshape of its
    folded product (UnsafeViewBackward0), or the copy of its transposed product (CloneBackward0)
    when only ``y`` has a batch of several matrices."""
    x, y = node.kept()
    name = _PRODUCT_NAMES.get((len(x.shape), len(y.shape)))
    if name is not None:
        return name
    if len(y.shape) >= 3 and math.prod(y.shape[:-2]) > 1 and math.prod(x.shape[:-2]) == 1 and len(x.shape) > 1:
        return "CloneBackward0"
    return "UnsafeViewBackward0"


# (as torch's: each operand saved only for the other's gradient; ``y`` saved before ``x``, as torch's mm
# and bmm do, except for a vector ``y``: torch's mv and dot save ``x`` first)
MATMUL = Op("matmul", _matmul_impl, vjp=(_matmul_vjp_x, _matmul_vjp_y), jvp=_matmul_jvp,
            batch=_matmul_batch, family="linalg", grad_name="MmBackward0", promotion=0,
            grad_name_for=_matmul_name, save_inputs=lambda needs: (needs[1], needs[0]))
MATMUL.pack_order = lambda x, y: (0, 1) if len(y.shape) == 1 else OTHER_FIRST
BMM = overload(MATMUL, "bmm", "BmmBackward0")  # (torch's bmm, not its matmul, records a BmmBackward0)


@public(MATMUL, inplace=False, namespaces={"linalg": ("matmul",)})
def matmul(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """Matrix product with NumPy's rules (1-D promotion and batch broadcasting); also ``x @ y``.

    >>> import dualgrad as dg
    >>> dg.matmul(dg.ones(2, 3), dg.ones(3))
    tensor([3., 3.])
    """
    return apply(MATMUL, input, other)


@public(None, method=False, namespaces={"linalg": ("tensordot",)})
def tensordot(a: Any, b: Any, dims: Any = 2, *, axes: Any = None) -> Tensor:
    """Sum of products over the axes ``dims`` of ``a`` and ``b`` (NumPy's ``axes`` also accepted).

    ``dims`` is an int ``k`` (the last ``k`` axes of ``a`` with the first ``k``
    of ``b``) or a pair of axis lists.

    >>> import dualgrad as dg
    >>> dg.tensordot(dg.ones(2, 3, 4), dg.ones(4, 3), dims=([1, 2], [1, 0]))
    tensor([12., 12.])
    """
    a, b = as_operand(a), as_operand(b)
    spec = dims if axes is None else axes
    if isinstance(spec, (int, np.integer)):
        if not 0 <= spec <= min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot: dims={spec} is invalid for shapes {a.shape} and {b.shape}")
        axes_a, axes_b = list(range(a.ndim - spec, a.ndim)), list(range(spec))
    else:
        axes_a, axes_b = ([d] if isinstance(d, (int, np.integer)) else list(d) for d in spec)
        if len(axes_a) != len(axes_b):
            raise RuntimeError(f"tensordot: both dimension lists should have the same length, got "
                               f"{axes_a} and {axes_b}")
        axes_a = [normalize_axis(d, a.ndim, "tensordot") for d in axes_a]
        axes_b = [normalize_axis(d, b.ndim, "tensordot") for d in axes_b]
    for da, db in zip(axes_a, axes_b, strict=True):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(
                f"tensordot: contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                f"{da} and second has size {b.shape[db]} in dim {db} (shapes {a.shape} and {b.shape})"
            )
    letters_a = list(range(a.ndim))
    letters_b = list(range(a.ndim, a.ndim + b.ndim))
    for da, db in zip(axes_a, axes_b, strict=True):
        letters_b[db] = letters_a[da]
    free = [k for k in letters_a if k not in letters_b] + [k for k in letters_b if k not in letters_a]
    return einsum(a, letters_a, b, letters_b, free)


@public(None, inplace=False)
def dot(x: Any, y: Any) -> Tensor:
    """Dot product of two vectors (NumPy's rules for other ranks: matmul, or tensordot over the last axis).

    >>> import dualgrad as dg
    >>> dg.dot(dg.tensor([2., 3.]), dg.tensor([2., 1.]))
    tensor(7.)
    """
    x, y = as_operand(x), as_operand(y)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    if x.ndim == 1 and y.ndim == 1 and x.shape != y.shape:
        raise RuntimeError(
            f"dot: inconsistent tensor size, expected tensor {list(x.shape)} and src {list(y.shape)} to "
            f"have the same number of elements, but got {x.shape[0]} and {y.shape[0]} elements respectively"
        )
    if y.ndim <= 2:
        return matmul(x, y)
    return tensordot(x, y, ([-1], [-2]))


@public(None, inplace=False)
def inner(x: Any, y: Any) -> Tensor:
    """Sum of products over the last axis of both (a plain product if either is a scalar).

    >>> import dualgrad as dg
    >>> dg.inner(dg.tensor([[1., 2.], [3., 4.]]), dg.tensor([1., 1.]))
    tensor([3., 7.])
    """
    x, y = as_operand(x), as_operand(y)
    if x.ndim == 0 or y.ndim == 0:
        return x * y
    if x.shape[-1] != y.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{x.shape} and {y.shape}")
    return tensordot(x, y, ([-1], [-1]))


@public(None, inplace=False, namespaces={"linalg": ("outer",)})
def outer(x: Any, y: Any) -> Tensor:
    """Outer product ``out[i, j] = x[i] * y[j]`` (inputs of more dimensions are flattened, as NumPy).

    >>> import dualgrad as dg
    >>> dg.outer(dg.tensor([1., 2.]), dg.tensor([1., 10., 100.]))
    tensor([[  1.,  10., 100.],
            [  2.,  20., 200.]])
    """
    x, y = as_operand(x), as_operand(y)
    return x.reshape(-1, 1) * y.reshape(1, -1)


@public(None, inplace=False)
def ger(input: Any, vec2: Any) -> Tensor:  # noqa: A002 - torch's names
    """The outer product of two vectors (torch's older name of ``outer``, for 1-D inputs only).

    >>> import dualgrad as dg
    >>> dg.ger(dg.tensor([1., 2.]), dg.tensor([1., 3.]))
    tensor([[1., 3.],
            [2., 6.]])
    """
    for name, v in (("self", input), ("vec2", vec2)):
        if _ndim(v) != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {_ndim(v)}-D")
    return outer(input, vec2)


@public(None, inplace=False)
def kron(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """The Kronecker product: block ``(i, j, ..)`` of the result is ``input[i, j, ..] * other``.

    The operand with fewer dimensions gets leading size-1 ones (torch's and NumPy's
    rule); the result has shape ``input.shape[k] * other.shape[k]`` on each axis.

    >>> import dualgrad as dg
    >>> dg.kron(dg.tensor([[1., 2.], [3., 4.]]), dg.eye(2)).shape
    (4, 4)
    >>> dg.kron(dg.tensor([1., 10.]), dg.tensor([1., 2., 3.]))
    tensor([ 1.,  2.,  3., 10., 20., 30.])
    """
    a, b = as_operand(input), as_operand(other)
    ndim = max(a.ndim, b.ndim)
    shape_a, shape_b = (1,) * (ndim - a.ndim) + a.shape, (1,) * (ndim - b.ndim) + b.shape
    blocks = a.reshape(sum(((n, 1) for n in shape_a), ())) * b.reshape(sum(((1, n) for n in shape_b), ()))
    return blocks.reshape(tuple(m * n for m, n in zip(shape_a, shape_b, strict=True)))


def cross_along(x: Any, y: Any, dim: int) -> Tensor:
    """The cross product of the 3-vectors along ``dim`` of ``x`` and ``y`` (same rank, broadcasting).

    ``x[i+1] y[i+2] - x[i+2] y[i+1]`` (indices mod 3), as two rolls of each operand.
    """
    x, y = as_operand(x), as_operand(y)
    if x.ndim != y.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    axis = normalize_axis(dim, x.ndim, "cross")
    if x.shape[axis] != 3 or y.shape[axis] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {x.shape[axis]} "
                           f"and {y.shape[axis]}")
    return roll(x, -1, axis) * roll(y, -2, axis) - roll(x, -2, axis) * roll(y, -1, axis)


@public(None, inplace=False)
def cross(input: Any, other: Any, dim: int | None = None) -> Tensor:  # noqa: A002 - torch's names
    """The cross product of 3-vectors along ``dim`` (torch's default: the first axis of size 3).

    The inputs have the same number of dimensions and broadcast; prefer
    ``dualgrad.linalg.cross`` (the last axis by default), as torch recommends.

    >>> import dualgrad as dg
    >>> dg.cross(dg.tensor([1., 0., 0.]), dg.tensor([0., 1., 0.]))
    tensor([0., 0., 1.])
    """
    x = as_operand(input)
    if dim is None:
        dim = next((axis for axis, n in enumerate(x.shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return cross_along(x, other, dim)


@public(None)
def addmm(input: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Tensor:  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the product's shape.

    With ``beta=0`` the input is ignored (its NaN and inf do not propagate), as torch's.

    >>> import dualgrad as dg
    >>> dg.addmm(dg.tensor([1., 2.]), dg.eye(2), dg.full((2, 2), 2.), alpha=0.5)
    tensor([[2., 3.],
            [2., 3.]])
    """
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if _ndim(m) != 2:
            raise RuntimeError(f"{name} must be a matrix, got {_ndim(m)}-D tensor")
    product = alpha * matmul(mat1, mat2)
    shift = broadcast_to(as_operand(input), product.shape)
    return product if beta == 0 else beta * shift + product


@public(None, inplace=False)
def trace(x: Any) -> Tensor:
    """Sum of the main diagonal of a matrix.

    >>> import dualgrad as dg
    >>> dg.trace(dg.tensor([[1., 2.], [3., 4.]]))
    tensor(5.)
    """
    x = as_operand(x)
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim} (shape {x.shape})")
    diagonal = np.arange(min(x.shape))
    return x[diagonal, diagonal].sum()


def _matmul_of_ranks(name: str, ranks: tuple, x: Any, y: Any, op: Op = MATMUL) -> Tensor:
    """``op`` (``matmul``) on ``x`` and ``y`` after checking the operands' numbers of dimensions
    (torch's ``mm``, ``bmm``, ``mv``)."""
    x, y = tensor_arg(x, name), tensor_arg(y, name)
    if (x.ndim, y.ndim) != ranks:
        raise RuntimeError(f"{name}: expected operands of {ranks[0]} and {ranks[1]} dimensions, "
                           f"got shapes {x.shape} and {y.shape}")
    return apply(op, x, y)


@public(None, inplace=False)
def mm(input: Any, mat2: Any) -> Tensor:  # noqa: A002 - torch's names
    """Product of two matrices (``matmul`` for 2-D operands only).

    >>> import dualgrad as dg
    >>> dg.mm(dg.ones(2, 3), dg.ones(3, 1))
    tensor([[3.],
            [3.]])
    """
    return _matmul_of_ranks("mm", (2, 2), input, mat2)


@public(BMM, inplace=False)
def bmm(input: Any, mat2: Any) -> Tensor:  # noqa: A002 - torch's names
    """Batched product of matrices of shapes ``(b, n, m)`` and ``(b, m, p)``.

    >>> import dualgrad as dg
    >>> dg.bmm(dg.ones(4, 2, 3), dg.ones(4, 3, 5)).shape
    (4, 2, 5)
    """
    input, mat2 = tensor_arg(input, "bmm"), tensor_arg(mat2, "bmm")
    if input.ndim == mat2.ndim == 3 and mat2.shape[:2] != (input.shape[0], input.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    return _matmul_of_ranks("bmm", (3, 3), input, mat2, BMM)


@public(None, inplace=False)
def mv(input: Any, vec: Any) -> Tensor:  # noqa: A002 - torch's names
    """Product of a matrix and a vector.

    >>> import dualgrad as dg
    >>> dg.mv(dg.ones(2, 3), dg.tensor([1., 2., 3.]))
    tensor([6., 6.])
    """
    return _matmul_of_ranks("mv", (2, 1), input, vec)


@public(None, inplace=False)
def vdot(input: Any, other: Any) -> Tensor:  # noqa: A002 - torch's names
    """``sum(conj(input) * other)`` of two vectors of the same size.

    >>> import dualgrad as dg
    >>> dg.vdot(dg.tensor([1j, 2.]), dg.tensor([1j, 1.]))
    tensor(3.+0.j)
    """
    input, other = tensor_arg(input, "vdot"), tensor_arg(other, "vdot")
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return dot(input.conj(), other)


# (the operators; the other methods come from the declarations)
METHODS: dict[str, Any] = {"__matmul__": matmul, "__rmatmul__": lambda self, other: matmul(other, self)}
__all__ = exported(__name__)
