"""How index sets flow through each op of the table (vectorised; see ``tracer.py``).

Every rule returns, per output of the op, the ``Info`` (first-order sets ``g`` and, for
Hessians, second-order sets ``h``) of its elements in C order. The families:

* elementwise ops: out-row ``o`` unions the broadcast rows of the inputs with a nonzero
  partial derivative; ``h`` unions the inputs' ``h`` and adds the pairs of the inputs that
  interact nonlinearly (all pairs for a nonlinear op, ``G_x x G_y`` for ``x * y``, none for a
  piecewise linear op such as ``maximum``); zero-derivative ops (``sign``, ``floor``,
  comparisons) give empty sets;
* shape and indexing ops ("movement"): the op's own impl runs on an array of element numbers,
  which says where each output element comes from (0 where it comes from a constant);
* reductions: union over the reduced axes (with all pairs for nonlinear ones such as ``prod``,
  ``norm``, ``logsumexp``); cumulative ones union over prefixes;
* contractions (``matmul``, ``einsum``, vector products): one term per index tuple, skipping
  the terms where a constant operand is zero;
* linear algebra (``solve``, ``inv``, ``det``, decompositions) and FFTs: every output depends on
  every input of the op (dense, never missing a nonzero).

An op with none of these raises ``NotImplementedError`` naming it: a pattern is never guessed.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import numpy as np

from ..tensor import Tensor
from ._rowsets import combine, cross_pairs, pairs_within
from .tracer import Info, Session, SparsityDetectionError, Tracer, index_array

ALL = None  # every tensor argument

VALUE_SHAPE_MESSAGE = (
    "sparsity detection (global mode): the output shape of {op} depends on the values of a traced array "
    "({what}), so no pattern holds for every input. Use local=True (the pattern at the given point), or "
    "write f with a shape that does not depend on values (np.where instead of boolean masks)."
)
VALUE_INDEX_MESSAGE = (
    "sparsity detection (global mode): {op} takes an index computed from traced values ({what}), so the "
    "pattern depends on the input's values. Use local=True (the pattern at the given point)."
)


def _size(a: Any) -> int:
    return int(np.size(a._data if isinstance(a, Tensor) else a))


def _shape(a: Any) -> tuple:
    return np.shape(a._data if isinstance(a, Tensor) else a)


def _values(a: Any) -> Any:
    return a._data if isinstance(a, Tensor) else a


def _finish(session: Session, size: int, g_sources: list, h_sources: list, extra_h: list,
            nonlinear: bool) -> Info:
    g = combine(g_sources, size, session.n)
    if session.order != 2:
        return Info(g, None)
    rows = np.arange(size, dtype=np.int64)
    parts = list(h_sources) + [(p, rows, rows) for p in extra_h]
    if nonlinear:
        parts.append((pairs_within(g, session.n), rows, rows))
    return Info(g, combine(parts, size, session.n * session.n))


# -- elementwise ------------------------------------------------------------------------------------------
def _elementwise(first: Any = ALL, quad: Any = "all", select: Callable | None = None,
                 always: bool = False, selector: int | None = None) -> Callable:
    """A rule for an elementwise op: ``first`` the argument positions with a nonzero partial (ALL: every
    one), ``quad`` "all" (nonlinear), "none" (piecewise linear) or pairs of positions with a nonzero mixed
    second derivative; ``select(args, params, out)`` gives per argument a mask of the elements where it is
    selected (local mode; in both modes with ``always``, or when argument ``selector`` is a constant)."""

    def rule(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
        out = outs[0]
        shape = out.shape
        size = out._data.size
        out_rows = np.arange(size, dtype=np.int64)
        chosen = session.local or always or (selector is not None and not isinstance(args[selector], Tracer))
        masks = select(args, params, out) if (select is not None and chosen) else None
        g_sources, h_sources, taken = [], [], {}
        for i, (a, info) in enumerate(zip(args, infos)):
            if info is None or (first is not ALL and i not in first):
                continue
            rows = np.broadcast_to(index_array(_shape(a)), shape).ravel()
            where = out_rows
            if masks is not None and masks[i] is not None:
                keep = np.broadcast_to(masks[i], shape).ravel()
                where, rows = out_rows[keep], rows[keep]
            g_sources.append((info.g, where, rows))
            h_sources.append((info.h, where, rows))
            taken[i] = (info, rows)
        extra = []
        if session.order == 2 and isinstance(quad, tuple):
            for i, j in quad:
                if i in taken and j in taken:
                    extra.append(cross_pairs(taken[i][0].g.take(taken[i][1]), taken[j][0].g.take(taken[j][1]),
                                             session.n))
        return [_finish(session, size, g_sources, h_sources, extra, quad == "all")]

    return rule


def _select_mul(args: tuple, params: dict, out: Tensor) -> list:
    """``x * c`` with a constant ``c``: no dependence where ``c`` is zero (in both modes: constants are
    the same for every input)."""
    masks = [None, None]
    for i, j in ((0, 1), (1, 0)):
        other = args[j]
        if not isinstance(other, Tracer) and (isinstance(other, (Tensor, np.ndarray, float, int))):
            masks[i] = np.asarray(_values(other)) != 0
    return masks


def _view_as_real(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
    """``view_as_real``: both parts of an element come from it."""
    info = infos[0]
    if info is None:
        return [None] * len(outs)
    rows = np.repeat(index_array(_shape(args[0])).ravel(), 2)
    return [session.take(info, rows)]


def _view_as_complex(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
    """``view_as_complex``: an element comes from its real and imaginary parts."""
    info = infos[0]
    if info is None:
        return [None] * len(outs)
    rows = np.arange(_size(args[0]), dtype=np.int64)
    size = outs[0]._data.size
    return [_finish(session, size, [(info.g, rows // 2, rows)], [(info.h, rows // 2, rows)], [], False)]


def _select_where(args: tuple, params: dict, out: Tensor) -> list:
    c = np.asarray(_values(args[0]), bool)
    return [None, c, ~c]


def _select_masked_fill(args: tuple, params: dict, out: Tensor) -> list:
    m = np.asarray(_values(args[1]), bool)
    return [~m, None, m]


def _select_extreme(larger: bool) -> Callable:
    def select(args: tuple, params: dict, out: Tensor) -> list:
        a, b = np.asarray(_values(args[0])), np.asarray(_values(args[1]))
        a_wins = ~(a < b) if larger else ~(a > b)
        b_wins = ~(b < a) if larger else ~(b > a)
        return [a_wins, b_wins]

    return select


def _select_clamp(args: tuple, params: dict, out: Tensor) -> list:
    x = np.asarray(_values(args[0]))
    lo = None if len(args) < 2 or args[1] is None else np.asarray(_values(args[1]))
    hi = None if len(args) < 3 or args[2] is None else np.asarray(_values(args[2]))
    keep_x = np.ones(x.shape, bool)
    if lo is not None:
        keep_x &= ~(x < lo)
    if hi is not None:
        keep_x &= ~(x > hi)
    return [keep_x, None if lo is None else ~(x > lo), None if hi is None else ~(x < hi)]


def _select_relu(args: tuple, params: dict, out: Tensor) -> list:
    return [~(np.asarray(_values(args[0])) < 0)]


def _select_threshold(args: tuple, params: dict, out: Tensor) -> list:
    x = np.asarray(_values(args[0]))
    threshold = np.asarray(_values(args[1] if len(args) > 1 else params["threshold"]))
    return [~(x < threshold), None, ~(x > threshold)]


LINEAR = _elementwise(quad=())
NONLINEAR = _elementwise()
PIECEWISE = _elementwise(quad="none")
ZERO: Callable = lambda session, op, args, params, infos, outs: [None] * len(outs)  # noqa: E731

ELEMENTWISE = {
    **dict.fromkeys(["add", "sub", "neg", "conj", "real", "imag", "clone", "to", "deg2rad", "rad2deg",
                     "nan_to_num", "frac"], LINEAR),
    **dict.fromkeys(["copy", "fill_like", "fill_tensor"], _elementwise(first=(1,), quad=())),
    **dict.fromkeys(["fill_number", "zero", "uniform_fill", "normal_fill", "bernoulli", "poisson", "ceil",
                     "floor", "round", "trunc", "sign", "heaviside", "floor_divide", "div_trunc"], ZERO),
    "add_scaled": _elementwise(quad=((1, 2),)), "sub_scaled": _elementwise(quad=((1, 2),)),
    "mul": _elementwise(quad=((0, 1),), select=_select_mul, always=True),
    "div": _elementwise(quad=((0, 1), (1, 1))),
    "addcmul": _elementwise(quad=((1, 2),)),
    "addcdiv": _elementwise(quad=((1, 2), (2, 2))),
    "lerp": _elementwise(quad=((0, 2), (1, 2))),
    "xlogy": _elementwise(quad=((0, 1), (1, 1))),
    "special_xlog1py": _elementwise(quad=((0, 1), (1, 1))),
    "tanh_backward": _elementwise(quad=((0, 1), (1, 1))),
    "sigmoid_backward": _elementwise(quad=((0, 1), (1, 1))),
    "where": _elementwise(first=(1, 2), quad="none", select=_select_where, selector=0),
    "masked_fill": _elementwise(first=(0, 2), quad="none", select=_select_masked_fill, selector=1),
    "maximum": _elementwise(quad="none", select=_select_extreme(True)),
    "fmax": _elementwise(quad="none", select=_select_extreme(True)),
    "minimum": _elementwise(quad="none", select=_select_extreme(False)),
    "fmin": _elementwise(quad="none", select=_select_extreme(False)),
    **dict.fromkeys(["clamp", "clamp_min", "clamp_max"], _elementwise(quad="none", select=_select_clamp)),
    "relu": _elementwise(quad="none", select=_select_relu),
    "threshold": _elementwise(first=(0, 2), quad="none", select=_select_threshold),
    "abs": PIECEWISE,
    "copysign": _elementwise(first=(0,), quad="none"),
    "remainder": PIECEWISE, "fmod": PIECEWISE,
}


def _sgn(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
    """``sgn``: constant for real numbers, ``z / |z|`` (nonlinear) for complex ones."""
    if np.iscomplexobj(_values(args[0])):
        return NONLINEAR(session, op, args, params, infos, outs)
    return ZERO(session, op, args, params, infos, outs)


ELEMENTWISE["sgn"] = _sgn


# -- shape and indexing: the impl run on element numbers -----------------------------------------------
def _movement(sources: Any = ALL, fix: Callable | None = None, index_args: tuple = ()) -> Callable:
    """A rule running the op's impl on element numbers (1 + offset + position; 0 for constants) in place
    of the values of the arguments at ``sources``; ``index_args`` are positions that index (their values
    must not come from traced values in global mode)."""

    def rule(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
        encoded, parts, offset = [], [], 1
        for i, (a, info) in enumerate(zip(args, infos)):
            if (sources is ALL and isinstance(a, (Tensor, np.ndarray))) or (sources is not ALL and i in sources):
                shape = _shape(a)
                if info is not None:
                    size = _size(a)
                    encoded.append(index_array(shape) + offset)
                    parts.append((info, offset, size))
                    offset += size
                else:
                    encoded.append(np.zeros(shape, np.int64))
            else:
                if isinstance(a, Tracer) and not session.local and (index_args == "rest" or i in index_args):
                    kind = "a boolean mask" if np.asarray(a._data).dtype == bool else "an integer index"
                    message = VALUE_SHAPE_MESSAGE if kind == "a boolean mask" else VALUE_INDEX_MESSAGE
                    raise SparsityDetectionError(message.format(op=op.name, what=kind))
                encoded.append(_values(a))
        result = op.impl(*encoded, **(fix(params) if fix is not None else params))
        results = result if op.multi_output else (result,)
        infos_out = []
        for codes in results:
            codes = np.asarray(codes).ravel()
            size = codes.size
            out_rows = np.arange(size, dtype=np.int64)
            g_sources, h_sources = [], []
            for info, start, count in parts:
                hit = (codes >= start) & (codes < start + count)
                where, rows = out_rows[hit], codes[hit] - start
                g_sources.append((info.g, where, rows))
                h_sources.append((info.h, where, rows))
            infos_out.append(_finish(session, size, g_sources, h_sources, [], False))
        return infos_out

    return rule


def _pad_fix(params: dict) -> dict:
    return {**params, "value": 0}


MOVEMENT = _movement()
INDEXING = {
    "getitem": _movement((0,)),
    "copy_of_getitem": _movement((0,)),
    "index_tensor": _movement((0,), index_args="rest"),
    "gather": _movement((0,), index_args=(1,)),
    "index_put": _movement((0, 1)),
    "index_put_tensor": _movement((0, 1), index_args="rest"),
    "copy_slices": _movement((0, 1)),
    "pad": _movement(fix=_pad_fix),
    **dict.fromkeys(["view_as_real", "copy_of_view_as_real"], _view_as_real),
    **dict.fromkeys(["view_as_complex", "copy_of_view_as_complex"], _view_as_complex),
    "repeat_interleave": _movement((0,), index_args=(1,)),
}


def _scatter_add(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
    """``scatter_add_into_zeros(src, index, shape, dim)``: ``out[.., index[i], ..] += src[i]``."""
    src, index = args[0], np.asarray(_values(args[1]))
    if isinstance(args[1], Tracer) and not session.local:
        raise SparsityDetectionError(VALUE_INDEX_MESSAGE.format(op=op.name, what="an integer index"))
    shape, dim = tuple(params["shape"]), params["dim"]
    coords = list(np.indices(index.shape, sparse=False))
    src_rows = np.ravel_multi_index(coords, _shape(src)).ravel()
    coords[dim] = index % shape[dim]
    out_rows = np.ravel_multi_index(coords, shape).ravel()
    info = infos[0]
    size = outs[0]._data.size
    if info is None:
        return [None]
    return [_finish(session, size, [(info.g, out_rows, src_rows)], [(info.h, out_rows, src_rows)], [], False)]


def _index_add(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
    """``index_add_into_zeros(g, shape, index)``: ``np.add.at(zeros(shape), index, g)``."""
    info = infos[0]
    if info is None:
        return [None]
    shape, index = tuple(params["shape"]), params["index"]
    targets = index_array(shape)[index]
    out_rows = np.broadcast_to(targets, _shape(args[0])).ravel()
    src_rows = np.arange(_size(args[0]), dtype=np.int64)
    size = outs[0]._data.size
    return [_finish(session, size, [(info.g, out_rows, src_rows)], [(info.h, out_rows, src_rows)], [], False)]


INDEXING["scatter_add_into_zeros"] = _scatter_add
INDEXING["index_add_into_zeros"] = _index_add


# -- reductions -------------------------------------------------------------------------------------------
def _lanes(shape: tuple, axis: Any) -> tuple[np.ndarray, int]:
    """For each input element (C order), the number of its lane (output element) and the lane count."""
    ndim = len(shape)
    axes = range(ndim) if axis is None else ((axis,) if np.ndim(axis) == 0 else tuple(axis))
    axes = {int(a) % ndim for a in axes} if ndim else set()
    keep = tuple(1 if d in axes else s for d, s in enumerate(shape))
    return np.broadcast_to(index_array(keep), shape).ravel(), int(np.prod(keep, dtype=np.int64))


def _reduction(kind: str) -> Callable:
    """``kind``: "linear" (sum), "nonlinear" (prod, norm), "select" (max, median: piecewise linear, local
    mode keeps the elements equal to the result)."""

    def rule(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
        info = infos[0]
        x = args[0]
        shape = _shape(x)
        lane, count = _lanes(shape, params.get("axis"))
        results: list = [None] * len(outs)
        if info is None:
            return results
        rows = np.arange(_size(x), dtype=np.int64)
        if kind == "select" and session.local:
            value = np.asarray(_values(outs[0]))
            flat_value = value.ravel()[lane] if value.size == count else value.ravel()
            data = np.asarray(_values(x)).ravel()
            keep = (data == flat_value) | np.isnan(flat_value)
            keep |= (np.bincount(lane[keep], minlength=count) == 0)[lane]  # (no element equals it: the whole lane)
            lane, rows = lane[keep], rows[keep]
        results[0] = _finish(session, count, [(info.g, lane, rows)], [(info.h, lane, rows)], [],
                             kind == "nonlinear")
        return results

    return rule


def _lane_map(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
    """``softmax``, ``log_softmax``: each output depends (nonlinearly) on its whole lane."""
    info = infos[0]
    if info is None:
        return [None]
    shape = _shape(args[0])
    lane, count = _lanes(shape, params.get("axis"))
    rows = np.arange(lane.size, dtype=np.int64)
    per_lane = _finish(session, count, [(info.g, lane, rows)], [(info.h, lane, rows)], [], True)
    return [session.take(per_lane, lane)]


def _prefix(nonlinear: bool) -> Callable:
    """``cumsum`` (linear), ``cumprod``, ``logcumsumexp``: output ``k`` along the axis unions inputs ``<= k``."""

    def rule(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
        info = infos[0]
        if info is None:
            return [None]
        shape = _shape(args[0])
        axis = params.get("axis")
        if not shape:
            idx = index_array((1,)).reshape(1, 1)
        else:
            idx = np.moveaxis(index_array(shape), int(axis) % len(shape), -1).reshape(-1, shape[int(axis)])
        length = idx.shape[1]
        first, last = np.triu_indices(length)
        src, dst = idx[:, first].ravel(), idx[:, last].ravel()
        size = outs[0]._data.size
        return [_finish(session, size, [(info.g, dst, src)], [(info.h, dst, src)], [], nonlinear)]

    return rule


REDUCTIONS = {
    **dict.fromkeys(["sum", "mean"], _reduction("linear")),
    **dict.fromkeys(["prod", "norm", "frobenius_norm", "std", "var", "logsumexp"], _reduction("nonlinear")),
    **dict.fromkeys(["amax", "amin", "max", "min", "max_all", "min_all", "median", "median_dim"],
                    _reduction("select")),
    "softmax": _lane_map, "log_softmax": _lane_map,
    "cumsum": _prefix(False), "cumprod": _prefix(True), "logcumsumexp": _prefix(True),
}


# -- contractions -----------------------------------------------------------------------------------------
def _expand_ellipsis(subscripts: str, ndims: list) -> tuple[list, str]:
    """Explicit subscripts without ``...`` (fresh upper-case letters for its axes) and the output's."""
    inputs, _, output = subscripts.replace(" ", "").partition("->")
    parts = inputs.split(",")
    free = [c for c in string.ascii_uppercase if c not in subscripts]
    longest = max((nd - len(p.replace("...", "")) for p, nd in zip(parts, ndims) if "..." in p), default=0)
    ell = "".join(free[:longest])
    parts = [p.replace("...", ell[longest - (nd - len(p.replace("...", ""))):]) if "..." in p else p
             for p, nd in zip(parts, ndims)]
    if "->" not in subscripts:
        letters = "".join(parts)
        output = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in ell))
    else:
        output = output.replace("...", ell)
    return parts, output


def _contract(session: Session, args: tuple, infos: list, outs: tuple, parts: list, output: str) -> list:
    """The sets of ``einsum(parts -> output)``: one term per tuple of letter values, skipping the terms where
    a constant operand is zero (the constant's zeros hold for every input; a traced one's do not)."""
    sizes: dict[str, int] = {}
    for p, a in zip(parts, args):
        for c, s in zip(p, _shape(a)):
            sizes[c] = max(sizes.get(c, 1), s)
    anchor = next((i for i, info in enumerate(infos) if info is None and isinstance(args[i], (Tensor, np.ndarray))
                   and _shape(args[i]) == tuple(sizes[c] for c in parts[i]) and _shape(args[i])), None)
    coords: dict[str, np.ndarray] = {}
    count = 1
    if anchor is not None:  # the constant's nonzeros, with the same letter twice meaning equal coordinates
        nz = np.nonzero(np.asarray(_values(args[anchor])))
        ok = np.ones(len(nz[0]) if nz else 1, bool)
        for c, v in zip(parts[anchor], nz):
            if c in coords:
                ok &= coords[c] == v
            else:
                coords[c] = v
        coords = {c: v[ok] for c, v in coords.items()}
        count = int(ok.sum())
    rest = [c for c in sizes if c not in coords]
    grid = np.indices([sizes[c] for c in rest]).reshape(len(rest), -1) if rest else np.zeros((0, 1), np.int64)
    n_grid = grid.shape[1]
    full = {c: np.repeat(v, n_grid) for c, v in coords.items()}
    full.update({c: np.tile(grid[k], count) for k, c in enumerate(rest)})
    terms = count * n_grid
    keep = np.ones(terms, bool)

    def flat(p: str, shape: tuple) -> np.ndarray:
        if not p:
            return np.zeros(terms, np.int64)
        index = [np.zeros(terms, np.int64) if s == 1 else full[c] for c, s in zip(p, shape)]
        return np.ravel_multi_index(index, shape)

    for i, (p, a) in enumerate(zip(parts, args)):  # other constants: their zeros too
        if i != anchor and infos[i] is None and isinstance(a, (Tensor, np.ndarray)):
            keep &= np.asarray(_values(a)).ravel()[flat(p, _shape(a))] != 0
    out_shape = tuple(sizes[c] for c in output)
    out_rows = flat(output, out_shape)[keep]
    size = outs[0]._data.size
    g_sources, h_sources, taken = [], [], []
    for p, a, info in zip(parts, args, infos):
        if info is None:
            continue
        rows = flat(p, _shape(a))[keep]
        g_sources.append((info.g, out_rows, rows))
        h_sources.append((info.h, out_rows, rows))
        taken.append((info, rows))
    if session.order == 2:
        for i in range(len(taken)):
            for j in range(i + 1, len(taken)):
                pairs = cross_pairs(taken[i][0].g.take(taken[i][1]), taken[j][0].g.take(taken[j][1]), session.n)
                h_sources.append((pairs, out_rows, np.arange(len(out_rows), dtype=np.int64)))
    return [_finish(session, size, g_sources, h_sources, [], False)]


def _matmul(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
    nx, ny = len(_shape(args[0])), len(_shape(args[1]))
    batch = "".join(string.ascii_uppercase[:max(nx, ny) - 2]) if max(nx, ny) > 2 else ""
    left = "k" if nx == 1 else batch[len(batch) - (nx - 2):] + "mk"
    right = "k" if ny == 1 else batch[len(batch) - (ny - 2):] + "kp"
    output = batch + ("m" if nx > 1 else "") + ("p" if ny > 1 else "")
    return _contract(session, args, infos, outs, [left, right], output)


def _einsum(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
    parts, output = _expand_ellipsis(params["subscripts"], [len(_shape(a)) for a in args])
    return _contract(session, args, infos, outs, parts, output)


def _vector_products(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
    parts, output = _expand_ellipsis("...i,...i->...", [len(_shape(a)) for a in args])
    return _contract(session, args, infos, outs, parts, output)


# -- dense (safe) rules -----------------------------------------------------------------------------------
def _dense(nonlinear: bool) -> Callable:
    """Every output element depends on every input element of the op."""

    def rule(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
        g_sources, h_sources = [], []
        for a, info in zip(args, infos):
            if info is None:
                continue
            rows = np.arange(_size(a), dtype=np.int64)
            g_sources.append((info.g, np.zeros_like(rows), rows))
            h_sources.append((info.h, np.zeros_like(rows), rows))
        one = _finish(session, 1, g_sources, h_sources, [], nonlinear)
        return [session.take(one, np.zeros(o._data.size, np.int64)) if isinstance(o, Tensor) else None
                for o in outs]

    return rule


LINALG = {"matmul": _matmul, "bmm": _matmul, "einsum": _einsum, "vector_products": _vector_products}
VALUE_SHAPED = {"nonzero", "masked_select", "unique"}


def propagate(session: Session, op: Any, args: tuple, params: dict, infos: list, outs: tuple) -> list:
    """The ``Info`` of each output of ``op(*args, **params)`` (None: no dependence on the input)."""
    name = op.name
    if name in VALUE_SHAPED and not session.local:
        raise SparsityDetectionError(VALUE_SHAPE_MESSAGE.format(op=name, what="its result's length"))
    if not session.local and type(params.get("index")) is tuple:
        for entry in params["index"]:  # (Tensor indices reach the op as their arrays)
            if isinstance(entry, np.ndarray) and id(entry) in session.traced_arrays:
                message = VALUE_SHAPE_MESSAGE if entry.dtype == bool else VALUE_INDEX_MESSAGE
                raise SparsityDetectionError(message.format(
                    op=name, what="a boolean mask" if entry.dtype == bool else "an integer index"))
    if not getattr(op, "differentiable", True):
        return [None] * len(outs)
    family = getattr(op, "family", None)
    if family == "elementwise":
        rule = ELEMENTWISE.get(name, NONLINEAR)  # (any elementwise op: unioning all pairs is safe)
    elif family == "shape":
        rule = INDEXING.get(name, MOVEMENT)
    elif family == "indexing":
        rule = INDEXING.get(name)
    elif family == "reduction":
        rule = REDUCTIONS.get(name)
    elif family == "linalg":
        rule = LINALG.get(name, _dense(True))
    elif family == "fft":
        rule = _dense(False)
    else:
        rule = None
    if rule is None:
        raise NotImplementedError(
            f"sparsity detection has no rule for the op {name!r} (family {family!r}); write f with other "
            "operations, or give the pattern yourself (sparsity=...)")
    return rule(session, op, args, params, infos, outs)
