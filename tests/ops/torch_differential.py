"""The harness of the differential tests against torch: one case, run in both libraries, every mode compared.

A case is a list of float leaf arrays and a function ``fn(M, *xs)`` written once against the torch API, where
``M`` is the namespace (``torch`` or ``dualgrad``); ``dualgrad`` mirrors that API, so the same code runs in both.
``compare_case`` runs the case in both libraries and compares values (shape, dtype, numbers), reverse mode
gradients with a random cotangent, forward mode tangents, second order (the gradient of ``<grad, v>``) and
``vmap`` over a leading batch dimension. It returns the list of mismatches, empty when the libraries agree.

Torch is imported by the caller (the test files ``importorskip`` it); this module only receives it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import dualgrad as dg

# (rtol, atol) by dtype; atol scales with the largest reference value. Second order in float32 sums products of
# rounded first-order terms: its atol is that of a float32 sum of O(1) terms (seen up to 3e-5 in both libraries
# around an exact zero, e.g. the Hessian of a reconstructed SVD).
TOL = {np.float64: (1e-7, 1e-9), np.float32: (2e-4, 2e-5)}
TOL_GRAD2_FLOAT32 = (2e-4, 1e-4)
# float64 results against central differences (step 1e-6: truncation and rounding errors near 1e-9 relative)
TOL["fd"] = (1e-6, 1e-6)
MODES = ("value", "grad", "jvp", "grad2", "fwd_over_rev", "vmap", "vmap_grad")


@dataclass
class Case:
    """Leaf arrays (float64, logical shapes) and the function of them; ``layout`` makes leaves non-contiguous."""

    arrays: list
    fn: Callable[..., Any]
    modes: Sequence[str] = MODES
    layouts: list = field(default_factory=list)
    # where float32 results differ, dualgrad's error (against torch's float64) may be this many times torch's
    # float32 error: single ops are well conditioned (2); long chains can be ill conditioned (e.g. layer_norm of
    # nearly constant rows), where each library's roundings move the result by 10-20x the other's
    float32_factor: float = 2.0


# -- random shapes and arrays ---------------------------------------------------------------------------------
def rshape(rng: np.random.Generator, min_dims: int = 0, max_dims: int = 3, max_side: int = 4) -> tuple:
    return tuple(int(s) for s in rng.integers(1, max_side + 1, size=int(rng.integers(min_dims, max_dims + 1))))


def broadcast_pair(rng: np.random.Generator, min_dims: int = 0) -> tuple[tuple, tuple]:
    """Two shapes that broadcast: size-1 sides and missing leading dims at random."""
    full = rshape(rng, min_dims=min_dims)
    def thin(shape: tuple) -> tuple:
        shape = tuple(1 if rng.random() < 0.3 else s for s in shape)
        return shape[int(rng.integers(0, len(shape) + 1)):] if rng.random() < 0.3 else shape
    return thin(full), thin(full)


def rarray(rng: np.random.Generator, shape: tuple, lo: float = -2.0, hi: float = 2.0,
           away: float | None = None, gap: float = 0.15) -> np.ndarray:
    values = rng.uniform(lo, hi, size=shape)
    if away is not None:
        close = np.abs(values - away) < gap
        values = np.where(close, away + np.where(values >= away, gap, -gap), values)
    return np.asarray(values, dtype=np.float64)


def distinct(rng: np.random.Generator, shape: tuple, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    """Values pairwise well apart (no ties for max, sort, median)."""
    n = int(np.prod(shape, dtype=np.int64))
    grid = np.linspace(lo, hi, max(n, 1))[:n]
    return rng.permutation(grid).reshape(shape)


# -- the two libraries ---------------------------------------------------------------------------------------
class Lib:
    """What the harness needs of one library, with the same names for both."""

    def __init__(self, module: Any, torch: Any) -> None:
        self.M = module
        self.torch = torch
        self.is_torch = module is torch

    def leaf(self, arr: np.ndarray, dtype: Any, requires_grad: bool = True) -> Any:
        arr = np.array(arr, dtype=dtype, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
        if self.is_torch:
            return self.torch.tensor(arr, requires_grad=requires_grad)
        return dg.tensor(arr, requires_grad=requires_grad)

    def numpy(self, t: Any) -> np.ndarray:
        if self.is_torch:
            if t._is_zerotensor():  # torch's symbolic zeros (e.g. the gradient of sgn)
                return np.zeros(tuple(t.shape), dtype=str(t.dtype).replace("torch.", ""))
            return t.detach().resolve_conj().resolve_neg().numpy().copy()
        return np.array(t.detach().numpy())

    def dtype_name(self, t: Any) -> str:
        if self.is_torch:
            return str(t.dtype).replace("torch.", "")
        return np.dtype(t.dtype).name

    def grad(self, outs, inputs, cots, create_graph=False):
        auto = self.torch.autograd if self.is_torch else dg.autograd
        return auto.grad(outs, inputs, cots, allow_unused=True, create_graph=create_graph)

    def forward(self, fn, primals, tangents):
        fwad = self.torch.autograd.forward_ad if self.is_torch else dg.forward_ad
        with fwad.dual_level():
            duals = [fwad.make_dual(p, t) for p, t in zip(primals, tangents)]
            outs = flat_outputs(fn(self.M, *duals))
            return [fwad.unpack_dual(o).tangent for o in outs if self.is_float(o)]

    def is_float(self, t: Any) -> bool:
        return self.dtype_name(t) in ("float32", "float64", "complex64", "complex128")

    def vmap(self, fn, in_dims):
        return (self.torch.vmap if self.is_torch else dg.vmap)(fn, in_dims=in_dims)


def flat_outputs(out: Any) -> list:
    if isinstance(out, (tuple, list)):
        return [o for item in out for o in flat_outputs(item)]
    return [out]


def apply_layout(M: Any, x: Any, layout: str) -> Any:
    """The logical input seen from a leaf stored in ``layout`` (see ``store_layout``)."""
    if layout == "T":
        return x.permute(*reversed(range(x.dim())))
    if layout == "S":
        return x[..., ::2]
    return x


def store_layout(rng: np.random.Generator, arr: np.ndarray, layout: str) -> np.ndarray:
    """The leaf array whose ``apply_layout`` view is ``arr``: transposed storage, or every second element."""
    if layout == "T":
        return np.ascontiguousarray(arr.transpose(*reversed(range(arr.ndim))))
    if layout == "S":
        leaf = rng.uniform(-1, 1, size=arr.shape[:-1] + (2 * arr.shape[-1],))
        leaf[..., ::2] = arr
        return leaf
    return arr


# -- comparing ---------------------------------------------------------------------------------------------
class LoopResult(list):
    """Torch's results from a Python loop over the batch, and how to ask ``torch.vmap`` whether it supports it."""

    def __init__(self, values: Any, **call: Any) -> None:
        super().__init__(values)
        self.call = call

    def torch_vmap_refuses(self) -> bool:
        call = self.call
        try:
            call["lib"].vmap(call["fn"], call["in_dims"])(*call["args"])
        except Exception:  # noqa: BLE001 - any refusal
            return True
        return False


def close(mode: str, a: Any, b: np.ndarray, dtype: Any, problems: list, what: str) -> None:
    """Compare dualgrad's ``a`` (array or None) with torch's ``b`` (array or None; None reads as zeros)."""
    if a is None and b is None:
        return
    if a is None:
        a = np.zeros_like(b)
    if b is None:
        b = np.zeros_like(a)
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        problems.append(f"{mode} {what}: shape {a.shape} != torch {b.shape}")
        return
    rtol, atol = TOL_GRAD2_FLOAT32 if (mode.startswith("grad2") and dtype is np.float32) else TOL[dtype]
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0))) if b.dtype.kind in "fc" else 1.0
    if b.dtype.kind in "fc" or a.dtype.kind in "fc":
        ok = np.allclose(a, b, rtol=rtol, atol=atol * scale, equal_nan=True)
    else:
        ok = np.array_equal(a, b)
    if not ok:
        diff = np.max(np.abs(a.astype(np.complex128) - b.astype(np.complex128)), initial=0.0)
        problems.append(f"{mode} {what}: max |dualgrad - torch| = {diff:.3g}\n  dualgrad {a.ravel()[:6]}\n"
                        f"  torch    {b.ravel()[:6]}")


def _run(lib: Lib, case: Case, dtype: Any, rng_arrays: list, mode: str, problems: list) -> Any:
    try:
        return mode_result(lib, case, dtype, rng_arrays, mode)
    except Exception as exc:  # noqa: BLE001 - either library may refuse; the caller compares refusals
        return exc


def compare_case(torch: Any, case: Case, dtype: Any, seed: int, modes: Sequence[str] | None = None) -> list:
    """Run ``case`` in both libraries in every mode; the list of differences (empty when they agree)."""
    problems: list = []
    libs = (Lib(dg, torch), Lib(torch, torch))
    rng = np.random.default_rng(seed)
    layouts = case.layouts or ["C"] * len(case.arrays)
    leaves = [store_layout(rng, a, lay) for a, lay in zip(case.arrays, layouts)]
    extras = make_extras(rng, case, layouts)
    for mode in modes or case.modes:
        if mode not in case.modes:
            continue
        data = (leaves, layouts, extras)
        ours, theirs = (_run(lib, case, dtype, data, mode, problems) for lib in libs)
        if isinstance(theirs, Exception):
            # torch refuses this case in this mode; a gradient dualgrad gives anyway must match finite differences
            if mode == "grad" and dtype is np.float64 and not isinstance(ours, Exception):
                fd_check(torch, case, ours, (leaves, layouts, extras), problems)
            if mode == "jvp" and dtype is np.float64 and not isinstance(ours, Exception):
                fd_check_jvp(torch, case, ours, (leaves, layouts, extras), problems)
            continue
        if isinstance(ours, Exception) and isinstance(theirs, LoopResult) and theirs.torch_vmap_refuses():
            continue  # torch's vmap refuses it too
        if isinstance(ours, Exception):
            problems.append(f"{mode}: dualgrad raised {type(ours).__name__}: {str(ours)[:300]} (torch gives values)")
            if mode == "value":
                break
            continue
        if mode == "value":
            (a_vals, a_types), (b_vals, b_types) = ours, theirs
            if len(a_vals) != len(b_vals):
                problems.append(f"value: {len(a_vals)} outputs != torch {len(b_vals)}")
                break
            for i, (ta, tb) in enumerate(zip(a_types, b_types)):
                if ta != tb:
                    problems.append(f"value output {i}: dtype {ta} != torch {tb}")
        else:
            a_vals, b_vals = ours, theirs
        if len(a_vals) != len(b_vals):
            problems.append(f"{mode}: {len(a_vals)} results != torch {len(b_vals)}")
            continue
        if mode in ("grad2", "fwd_over_rev") and torch_nonfinite_where_ours_is_not(
                a_vals, b_vals):
            # torch's second-order formula gives NaN/inf where dualgrad's is finite: central differences of
            # torch's first-order gradients decide (e.g. logcumsumexp, whose double backward takes log(grad))
            fd_check_second_order(torch, case, mode, a_vals, (leaves, layouts, extras), problems, dtype)
            continue
        found: list = []
        for i, (a, b) in enumerate(zip(a_vals, b_vals)):
            close(mode, a, b, dtype, found, f"#{i}")
        if found and dtype is np.float32 and float32_no_worse_than_torch(case, mode, a_vals, b_vals, data, torch):
            found = []
        if found and mode in ("grad", "jvp", "grad2", "fwd_over_rev"):
            # central differences decide: where they side with dualgrad, torch's rule is the one off (e.g. its
            # logcumsumexp jvp loses 4 digits in float64 when a column has a large spread)
            arbiter: list = []
            if mode == "grad":
                fd_check(torch, case, a_vals, data, arbiter, dtype)
            elif mode == "jvp":
                fd_check_jvp(torch, case, a_vals, data, arbiter, dtype)
            else:
                fd_check_second_order(torch, case, mode, a_vals, data, arbiter, dtype)
            if not arbiter:
                found = []
        problems.extend(found)
    return problems


def float32_no_worse_than_torch(case: Case, mode: str, ours: list, theirs: list, data: tuple, torch: Any) -> bool:
    """Where float32 results differ, the float64 result decides: dualgrad's float32 error may be up to
    ``case.float32_factor`` times torch's (both round the same computation differently), plus float32's
    tolerance. Rule errors show in float64, where the comparison is strict."""
    try:
        exact = _run(Lib(torch, torch), case, np.float64, data, mode, [])
    except Exception:  # noqa: BLE001 - no float64 reference
        return False
    if isinstance(exact, Exception):
        return False
    exact = exact[0] if mode == "value" else exact
    rtol, atol = TOL[np.float32]
    for a, b, e in zip(ours, theirs, exact):
        if a is None or b is None or e is None or np.shape(a) != np.shape(e) or np.asarray(e).dtype.kind not in "fc":
            continue
        e = np.asarray(e, dtype=np.float64)
        ours_err = np.abs(np.asarray(a, dtype=np.float64) - e)
        torch_err = np.abs(np.asarray(b, dtype=np.float64) - e)
        scale = float(np.max(np.abs(e), initial=1.0))  # (errors of one output compared as a whole, as in close)
        if float(np.max(ours_err, initial=0.0)) > case.float32_factor * float(np.max(torch_err, initial=0.0)) + (
                atol + rtol) * scale:
            return False
    return True


def fd_tol(dtype: Any) -> Any:
    return "fd" if dtype is np.float64 else np.float32


def fd_check(torch: Any, case: Case, grads: list, data: tuple, problems: list, dtype: Any = np.float64,
             eps: float = 1e-6) -> None:
    """dualgrad's gradients against central differences of torch's values, along a random direction."""
    leaves_np, layouts, extras = data
    lib = Lib(torch, torch)
    rng = np.random.default_rng(extras["cot_seed"] + 1)
    dirs = [rng.uniform(-1, 1, size=a.shape) for a in leaves_np]

    def loss(step: float) -> float:
        xs = [lib.leaf(a + step * v, np.float64, requires_grad=False) for a, v in zip(leaves_np, dirs)]
        outs = [o for o in flat_outputs(case.fn(torch, *[apply_layout(torch, x, lay) for x, lay in zip(xs, layouts)]))
                if lib.is_float(o)]
        crng = np.random.default_rng(extras["cot_seed"])
        return sum(float((lib.numpy(o) * crng.uniform(-1, 1, size=tuple(o.shape))).sum()) for o in outs)

    try:
        fd = (loss(eps) - loss(-eps)) / (2 * eps)
    except Exception:  # noqa: BLE001 - torch refuses the values too: nothing to compare with
        return
    ours = sum(float((g * v).sum()) for g, v in zip(grads, dirs) if g is not None)
    if abs(fd - ours) > (1e-6 if dtype is np.float64 else 1e-3) * max(1.0, abs(fd)):
        problems.append(f"grad (central differences): <grad, v> = {ours:.10g} but central differences give {fd:.10g}")


def fd_check_jvp(torch: Any, case: Case, ours: list, data: tuple, problems: list, dtype: Any = np.float64,
                 eps: float = 1e-6) -> None:
    """dualgrad's tangents against central differences of torch's values along the tangents (float64)."""
    leaves_np, layouts, extras = data
    tangents = [tangent_of_leaf(t, a, lay) for t, a, lay in zip(extras["tangents"], leaves_np, layouts)]
    lib = Lib(torch, torch)

    def values(step: float) -> list:
        moved = [a + step * t for a, t in zip(leaves_np, tangents)]
        vals, _ = mode_result(lib, case, np.float64, (moved, layouts, extras), "value")
        return [v for v in vals if v.dtype.kind in "fc"]

    try:
        plus, minus = values(eps), values(-eps)
    except Exception:  # noqa: BLE001 - torch refuses the values too
        return
    for i, (a, p, m) in enumerate(zip(ours, plus, minus)):
        close("jvp (central differences)", a, (p - m) / (2 * eps), fd_tol(dtype), problems, f"#{i}")


def torch_nonfinite_where_ours_is_not(ours: list, theirs: list) -> bool:
    return any(a is not None and b is not None and np.shape(a) == np.shape(b)
               and bool((~np.isfinite(b) & np.isfinite(a)).any()) for a, b in zip(ours, theirs))


def fd_check_second_order(torch: Any, case: Case, mode: str, ours: list, data: tuple, problems: list,
                          dtype: Any, eps: float = 1e-5) -> None:
    """dualgrad's second-order result against central differences of torch's gradients (float64)."""
    leaves_np, layouts, extras = data
    lib = Lib(torch, torch)
    direction = ([tangent_of_leaf(t, a, lay) for t, a, lay in zip(extras["tangents"], leaves_np, layouts)]
                 if mode == "fwd_over_rev" else
                 [rng_u for rng_u in (np.random.default_rng(extras["cot_seed"] + 2).uniform(-1, 1, size=a.shape)
                                      for a in leaves_np)])

    def grads_at(step: float) -> list:
        moved = [a + step * u for a, u in zip(leaves_np, direction)]
        return [np.zeros_like(a) if g is None else g
                for g, a in zip(mode_result(lib, case, np.float64, (moved, layouts, extras), "grad"), moved)]

    plus, minus = grads_at(eps), grads_at(-eps)
    if mode == "fwd_over_rev":  # the tangent of the gradients along the tangents
        for i, (a, p, m) in enumerate(zip(ours, plus, minus)):
            close(mode + " (central differences)", a, (p - m) / (2 * eps), fd_tol(dtype), problems, f"#{i}")
        return
    # reverse over reverse: the gradient of <grad, v>, read along the direction
    vs = [tangent_of_leaf(v, a, lay) for v, a, lay in zip(extras["v"], leaves_np, layouts)]
    fd = sum(float(((p - m) / (2 * eps) * v).sum()) for p, m, v in zip(plus, minus, vs))
    along = sum(float((a * u).sum()) for a, u in zip(ours, direction) if a is not None)
    if abs(fd - along) > (1e-5 if dtype is np.float64 else 1e-3) * max(1.0, abs(fd)):
        problems.append(f"grad2 (central differences): <grad2, u> = {along:.10g}, differences give {fd:.10g}")


def make_extras(rng: np.random.Generator, case: Case, layouts: list) -> dict:
    """Random cotangents, tangents and second-order directions, drawn once and shared by both libraries."""
    return {"tangents": [rng.uniform(-1, 1, size=a.shape) for a in case.arrays],
            "v": [rng.uniform(-1, 1, size=a.shape) for a in case.arrays],
            "cot_seed": int(rng.integers(2**31)), "batch": int(rng.integers(2, 4)),
            "in_dims_seed": int(rng.integers(2**31))}


def mode_result(lib: Lib, case: Case, dtype: Any, data: tuple, mode: str) -> Any:
    leaves_np, layouts, extras = data
    M = lib.M

    def fn_of_leaves(M_: Any, *leaves: Any) -> Any:
        return case.fn(M_, *[apply_layout(M_, x, lay) for x, lay in zip(leaves, layouts)])

    if mode == "value":
        leaves = [lib.leaf(a, dtype, requires_grad=False) for a in leaves_np]
        outs = flat_outputs(fn_of_leaves(M, *leaves))
        return [lib.numpy(o) for o in outs], [lib.dtype_name(o) for o in outs]
    if mode in ("grad", "grad2"):
        leaves = [lib.leaf(a, dtype) for a in leaves_np]
        outs = [o for o in flat_outputs(fn_of_leaves(M, *leaves)) if lib.is_float(o) and o.requires_grad]
        if not outs:
            return []
        crng = np.random.default_rng(extras["cot_seed"])
        cots = [lib.leaf(crng.uniform(-1, 1, size=tuple(o.shape)), dtype, requires_grad=False) for o in outs]
        grads = lib.grad(outs, leaves, cots, create_graph=(mode == "grad2"))
        if mode == "grad":
            return [None if g is None else lib.numpy(g) for g in grads]
        vs = [lib.leaf(store_layout(np.random.default_rng(0), v, "C"), dtype, requires_grad=False)
              for v in extras["v"]]
        terms = [(apply_layout(M, g, lay) * v).sum() for g, v, lay in zip(grads, vs, layouts)
                 if g is not None and g.requires_grad]
        if not terms:
            return [None for _ in leaves]
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return [None if g is None else lib.numpy(g) for g in lib.grad([total], leaves, None)]
    if mode == "jvp":
        primals = [lib.leaf(a, dtype, requires_grad=False) for a in leaves_np]
        tangents = [lib.leaf(tangent_of_leaf(t, a, lay), dtype, requires_grad=False)
                    for t, a, lay in zip(extras["tangents"], leaves_np, layouts)]
        return [None if t is None else lib.numpy(t) for t in lib.forward(fn_of_leaves, primals, tangents)]
    if mode == "fwd_over_rev":
        return forward_over_reverse(lib, fn_of_leaves, dtype, leaves_np, layouts, extras)
    if mode == "vmap":
        return vmap_result(lib, case, dtype, extras)
    if mode == "vmap_grad":
        return vmap_grad_result(lib, case, dtype, extras)
    raise ValueError(mode)


def forward_over_reverse(lib: Lib, fn: Callable, dtype: Any, leaves_np: list, layouts: list, extras: dict) -> list:
    """The tangents of the gradients (a Hessian-vector product by forward over reverse)."""
    fwad = lib.torch.autograd.forward_ad if lib.is_torch else dg.forward_ad
    with fwad.dual_level():
        leaves = [fwad.make_dual(lib.leaf(a, dtype), lib.leaf(tangent_of_leaf(t, a, lay), dtype, False))
                  for a, t, lay in zip(leaves_np, extras["tangents"], layouts)]
        outs = [o for o in flat_outputs(fn(lib.M, *leaves)) if lib.is_float(o) and o.requires_grad]
        if not outs:
            return []
        crng = np.random.default_rng(extras["cot_seed"])
        cots = [lib.leaf(crng.uniform(-1, 1, size=tuple(o.shape)), dtype, requires_grad=False) for o in outs]
        grads = lib.grad(outs, leaves, cots, create_graph=True)
        tangents = [None if g is None else fwad.unpack_dual(g).tangent for g in grads]
        return [None if t is None else lib.numpy(t) for t in tangents]


def vmap_grad_result(lib: Lib, case: Case, dtype: Any, extras: dict) -> list:
    """Per-sample gradients: ``vmap(grad(loss))`` over a batch of inputs along dim 1 (``in_dims=1`` for the
    inputs of 1 dim and more), where ``loss`` weighs the float outputs by fixed random arrays; torch's reference
    is a loop of ``torch.autograd.grad`` over the batch."""
    batch = extras["batch"]
    rng = np.random.default_rng(extras["in_dims_seed"] + 1)
    in_dims = tuple(1 if a.ndim >= 1 else 0 for a in case.arrays)
    stacks = [np.stack([a + rng.uniform(-0.05, 0.05, size=a.shape) for _ in range(batch)], axis=d)
              for a, d in zip(case.arrays, in_dims)]

    def loss(*xs: Any) -> Any:
        outs = [o for o in flat_outputs(case.fn(lib.M, *xs)) if lib.is_float(o)]
        total = 0.0
        for k, o in enumerate(outs):
            weight = np.random.default_rng(extras["cot_seed"] + k).uniform(-1, 1, size=tuple(o.shape))
            total = total + (o * lib.leaf(weight, dtype, requires_grad=False)).sum()
        return total

    args = [lib.leaf(a, dtype, requires_grad=False) for a in stacks]
    argnums = tuple(range(len(args)))
    if lib.is_torch:
        rows = []
        for i in range(batch):
            xs = [x.select(d, i).detach().requires_grad_(True) for x, d in zip(args, in_dims)]
            rows.append(lib.torch.autograd.grad(loss(*xs), xs, allow_unused=True, materialize_grads=True))
        return [lib.numpy(lib.torch.stack([r[k] for r in rows])) for k in range(len(args))]
    grads = dg.vmap(dg.func.grad(loss, argnums=argnums), in_dims=in_dims)(*args)
    return [lib.numpy(g) for g in grads]


def tangent_of_leaf(t: np.ndarray, leaf: np.ndarray, layout: str) -> np.ndarray:
    if layout == "T":
        return np.ascontiguousarray(t.transpose(*reversed(range(t.ndim))))
    if layout == "S":
        full = np.zeros(leaf.shape)
        full[..., ::2] = t
        return full
    return t


def vmap_result(lib: Lib, case: Case, dtype: Any, extras: dict) -> list:
    """``vmap`` of the case over a batch of 2-3 inputs, some arguments unbatched (in_dims None)."""
    rng = np.random.default_rng(extras["in_dims_seed"])
    batch = extras["batch"]
    in_dims = [None if rng.random() < 0.3 else 0 for _ in case.arrays]
    in_dims[int(rng.integers(len(in_dims)))] = 0
    in_dims = tuple(in_dims)
    args = []
    for a, d in zip(case.arrays, in_dims):
        if d is None:
            args.append(lib.leaf(a, dtype, requires_grad=False))
        else:
            stack = np.stack([a] + [a + rng.uniform(-0.05, 0.05, size=a.shape) for _ in range(batch - 1)])
            args.append(lib.leaf(stack, dtype, requires_grad=False))

    def fn(*xs: Any) -> tuple:
        return tuple(flat_outputs(case.fn(lib.M, *xs)))

    if lib.is_torch:  # the reference is a loop over the batch (torch's own vmap has had wrong rules)
        rows = [fn(*[x if d is None else x[i] for x, d in zip(args, in_dims)]) for i in range(batch)]
        outs = tuple(lib.torch.stack([r[k] for r in rows]) for k in range(len(rows[0])))
        return LoopResult([lib.numpy(o) for o in flat_outputs(outs)], args=args, in_dims=in_dims, fn=fn, lib=lib)
    else:
        outs = lib.vmap(fn, in_dims)(*args)
    return [lib.numpy(o) for o in flat_outputs(outs)]
