"""``gradcheck`` and ``gradgradcheck``: derivatives checked against finite differences.

The numerical Jacobian comes from central differences, perturbing each input in
place; the analytical one from dualgrad's own reverse mode (one vector-Jacobian
product per output element) and, with ``check_forward_ad=True``, from forward
mode (one Jacobian-vector product per input element). They are compared element
by element: ``|analytical - numerical| <= atol + rtol * |numerical|``.

Jacobians are laid out as torch's: one row per input element, one column per
output element. Complex numbers follow the conjugate Wirtinger convention: a
complex output is checked as its real and its imaginary part (reverse mode), a
complex input as its real and its imaginary part (forward mode), and the
numerical derivative of a real ``s`` with respect to ``z = x + iy`` is
``ds/dx + i ds/dy``, which is what reverse mode returns.

Input and output indices in error messages are positions in ``inputs`` and in
the function's outputs.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..factories import rand
from ..reverse.api import grad as _grad
from ..reverse.node import Node, NodeOp, new_node
from ..tensor import Tensor, _wrap
from ..vmap.batching import vmap
from .printing import format_tensor

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]

_TensorOrTensors = Tensor | Sequence[Tensor]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` and ``gradgradcheck`` when a derivative is wrong."""


_NONDET_HINT = (
    "\nIf the backward relies on non-deterministic operations this may be expected: "
    "pass nondet_tol=<tolerance> to gradcheck / gradgradcheck."
)
_FAST_SLOW_OK = (
    "Fast gradcheck failed but the element-wise differences are small: the check passes in "
    "slow mode. Call gradcheck / gradgradcheck with fast_mode=False."
)
_BATCHED_HINT = (
    "\nThe batching rule (vmap) of an op used by the function is probably wrong; "
    "pass check_batched_grad=False to skip this check."
)


class _Settings:
    """The tolerances and switches every check reads."""

    def __init__(self, eps: float, atol: float, rtol: float, nondet_tol: float,
                 check_grad_dtypes: bool, fast_mode: bool):
        self.eps = eps
        self.atol = atol
        self.rtol = rtol
        self.nondet_tol = nondet_tol
        self.check_grad_dtypes = check_grad_dtypes
        self.fast_mode = fast_mode


def gradcheck(
    func: Callable[..., _TensorOrTensors],
    inputs: _TensorOrTensors,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check the gradients of ``func`` at ``inputs`` against central finite differences.

    Inputs that are floating point or complex Tensors with ``requires_grad=True``
    are checked (use float64 / complex128: lower precision will likely fail).
    Besides the Jacobians, gradcheck verifies that backward is deterministic
    (within ``nondet_tol``), that zero output gradients give zero input gradients,
    and (``check_undefined_grad``) that undefined output gradients are treated as
    zeros. ``fast_mode=True`` compares ``v^T J u`` for random ``u, v`` instead of
    whole Jacobians. ``check_forward_ad`` checks forward mode too;
    ``check_batched_grad`` / ``check_batched_forward_grad`` check the vmap rules.
    dualgrad has no sparse layouts, so ``masked`` has no effect. ``inputs`` is a
    Tensor or a sequence (non-Tensors are constants); ``func`` must return a
    Tensor or a sequence of Tensors (otherwise ``TypeError``).

    Returns True, or raises ``GradcheckError`` naming the output and input whose
    Jacobians differ (returns False instead with ``raise_exception=False``).

    >>> import dualgrad as dg
    >>> x = dg.randn(3, requires_grad=True)
    >>> dg.gradcheck(lambda t: (t.sin() * t).sum(), (x,))
    True
    >>> dg.gradcheck(lambda t: t.detach() * t, (x,), raise_exception=False)
    False
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError(
            "Setting check_batched_forward_grad=True requires check_forward_ad to be True"
        )
    settings = _Settings(eps, atol, rtol, nondet_tol, check_grad_dtypes, fast_mode)
    try:
        return _run_checks(func, _as_tuple(inputs), settings, check_undefined_grad,
                           check_batched_grad, check_batched_forward_grad,
                           check_forward_ad, check_backward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def gradgradcheck(
    func: Callable[..., _TensorOrTensors],
    inputs: _TensorOrTensors,
    grad_outputs: _TensorOrTensors | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check second derivatives: gradcheck of the map ``(inputs, v) -> v^T J``.

    The gradients of ``func``'s outputs (weighted by ``grad_outputs``, random in
    [-1, 1] when omitted, non-contiguous with ``gen_non_contig_grad_outputs``) with
    ``create_graph=True`` are themselves checked against finite differences, with
    respect to the inputs and to the ``grad_outputs`` that require grad.
    ``check_fwd_over_rev`` checks them with forward mode, ``check_rev_over_rev``
    (default) with reverse mode.

    >>> import dualgrad as dg
    >>> x = dg.randn(2, requires_grad=True)
    >>> dg.gradgradcheck(lambda t: t ** 3, (x,))
    True
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"
        )
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable(_as_tuple(func(*inputs)))
        grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs) for o in outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_grads = len(grad_outputs)
    diff_inputs = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    diff_args = {i for i, x in enumerate(inputs + grad_outputs) if isinstance(x, Tensor) and x.requires_grad}

    def first_derivatives(*args: Any) -> tuple:
        # Forward-mode checks pass detached duals: restore requires_grad where it was.
        args = tuple(x.requires_grad_() if i in diff_args and not x.requires_grad else x
                     for i, x in enumerate(args))
        primals, cotangents = args[:len(args) - n_grads], args[len(args) - n_grads:]
        outputs = _differentiable(_as_tuple(func(*primals)))
        grads = _grad(outputs, [primals[i] for i in diff_inputs], cotangents,
                      create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
        raise_exception=raise_exception, nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad, fast_mode=fast_mode,
        check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
        masked=masked,
    )


def _random_grad_output(out: Tensor, non_contiguous: bool) -> Tensor:
    """Uniform values in [-1, 1] with ``out``'s shape and dtype, requiring grad."""
    real = np.dtype(out.dtype.char.lower()) if out.dtype.kind == "c" else out.dtype
    data = rand(*out.shape, dtype=real)._data * 2 - 1
    if out.dtype.kind == "c":
        data = data + 1j * (rand(*out.shape, dtype=real)._data * 2 - 1)
    data = np.array(data, dtype=out.dtype)
    if non_contiguous:
        holder = np.zeros(out.shape + (2,), out.dtype)
        holder[..., 0] = data
        data = holder[..., 0]
    return _wrap(data).requires_grad_()


# -- the checks ------------------------------------------------------------------------
def _run_checks(func: Callable, inputs: tuple, s: _Settings, check_undefined_grad: bool,
                check_batched_grad: bool, check_batched_forward_grad: bool,
                check_forward_ad: bool, check_backward_ad: bool) -> bool:
    diff = _check_inputs(inputs)
    func_out = _as_tuple(func(*inputs))
    outputs = _differentiable(func_out)
    if check_backward_ad:
        if any(o.dtype.kind == "c" for o in outputs):
            for part in ("imaginary", "real"):
                _check_reverse(_output_part(func, part), inputs, diff, s, part)
        else:
            _check_reverse(func, inputs, diff, s, None)
    if check_forward_ad:
        if any(inputs[i].dtype.kind == "c" for i in diff):
            for part in ("imaginary", "real"):
                part_func, part_inputs = _input_part(func, inputs, diff, part)
                _check_forward(part_func, part_inputs, diff, s, part)
        else:
            _check_forward(func, inputs, diff, s, None)
    if check_batched_forward_grad:
        _check_batched_forward(func, inputs, diff)
    if check_backward_ad:
        diff_tensors = [inputs[i] for i in diff]
        if check_batched_grad:
            for k, o in enumerate(func_out):
                if o.requires_grad:
                    _check_batched_reverse(o, k, diff_tensors, diff)
        _check_zero_grad_outputs(outputs, diff_tensors, diff)
        if check_undefined_grad:
            _check_undefined_grad(func, inputs, diff_tensors)
    return True


def _check_inputs(inputs: tuple) -> list:
    """Indices of the inputs to differentiate, after validating them."""
    diff = []
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        if x.dtype not in (np.float64, np.complex128):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex.", stacklevel=4)
        data = x._data
        overlapping = any(st == 0 and n > 1 for st, n in zip(data.strides, data.shape, strict=True))
        if data.size and (overlapping or not data.flags.writeable):
            raise RuntimeError(
                f"The {i}th input has a dimension with stride 0 or read-only memory. gradcheck "
                "only supports inputs that are non-overlapping and writable to be able to compute "
                "the numerical gradients correctly. You should call .clone() on the input before "
                "passing it to gradcheck."
            )
        diff.append(i)
    if not diff:
        integral = [f"#{i} ({x.dtype})" for i, x in enumerate(inputs)
                    if isinstance(x, Tensor) and x.dtype.kind not in "fc"]
        hint = (f" Inputs {', '.join(integral)} are not floating point or complex and cannot be "
                "differentiated: gradcheck checks only floating point or complex inputs."
                if integral else "")
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them "
            "have requires_grad=True." + hint
        )
    return diff


def _check_reverse(func: Callable, inputs: tuple, diff: list, s: _Settings, part: str | None) -> None:
    """Reverse-mode Jacobians (or ``v^T J u`` in fast mode) against finite differences."""
    func_out = _as_tuple(func(*inputs))
    out_idx = [k for k, o in enumerate(func_out) if o.requires_grad]
    if not out_idx:
        _check_no_differentiable_outputs(func, inputs, diff, s)
        return
    if s.fast_mode:
        _fast_reverse(func, inputs, diff, func_out, out_idx, s, part)
        return
    numerical = {i: _numerical_jacobians(func, inputs, i, s.eps) for i in diff}
    for k in out_idx:
        analytical = _reverse_jacobians(func_out[k], inputs, diff, s, check=True)
        for i, a in zip(diff, analytical, strict=True):
            n = numerical[i][k]
            if not _allclose(a, n, s.rtol, s.atol):
                raise GradcheckError(_mismatch(a, n, k, i, part, "outputs", ""))


def _check_forward(func: Callable, inputs: tuple, diff: list, s: _Settings, part: str | None) -> None:
    """Forward-mode Jacobians (or ``J u`` in fast mode) against finite differences."""
    func_out = _as_tuple(func(*inputs))
    out_idx = [k for k, o in enumerate(func_out) if o.requires_grad]  # (as in reverse mode)
    if not out_idx:
        _check_no_differentiable_outputs(func, inputs, diff, s)
        return
    if s.fast_mode:
        _fast_forward(func, inputs, diff, func_out, out_idx, s, part)
        return
    for i in diff:
        numerical = _numerical_jacobians(func, inputs, i, s.eps)
        analytical = _forward_jacobians(func, inputs, diff, i, s)
        for k in out_idx:
            a, n = analytical[k], numerical[k]
            if not _allclose(a, n, s.rtol, s.atol):
                raise GradcheckError(_mismatch(a, n, k, i, part, "inputs", "computed with forward mode "))


def _check_no_differentiable_outputs(func: Callable, inputs: tuple, diff: list, s: _Settings) -> None:
    for i in diff:
        for k, n in _numerical_jacobians(func, inputs, i, s.eps).items():
            if np.any(n != 0):
                raise GradcheckError(
                    f"Numerical gradient for function expected to be zero: output {k} does not "
                    f"require grad but changes with input {i}."
                )


def _check_zero_grad_outputs(outputs: tuple, diff_tensors: list, diff: list) -> None:
    """Zero output gradients must give zero input gradients of the right shape and dtype."""
    zeros = [_wrap(np.zeros(o.shape, o.dtype)) for o in outputs]
    grads = _grad(outputs, diff_tensors, zeros, allow_unused=True)
    for i, g, x in zip(diff, grads, diff_tensors, strict=True):
        if g is None:
            continue
        if np.any(g._data != 0):
            raise GradcheckError(f"backward not multiplied by grad_output (input {i})")
        if g.dtype != x.dtype:
            raise GradcheckError(f"grad is incorrect type for input {i}: {g.dtype} instead of {x.dtype}")
        if g.shape != x.shape:
            raise GradcheckError(f"grad is incorrect size for input {i}: {g.shape} instead of {x.shape}")


class _UndefinedGrad(NodeOp):
    """Op of a pass-through node that sends an undefined (None) gradient to its input."""

    grad_name = "UndefinedGradBackward"
    scatter_index = None
    runs_on_undefined = False

    def backward(self, node: Node, grads: list) -> list:
        return [None]


_UNDEFINED = _UndefinedGrad()


def _undefined(t: Tensor) -> Tensor:
    """``t``'s value with a node in front that makes its gradient undefined."""
    edge = (t._node() or t, t._output_nr)
    out = _wrap(t._data)
    out._requires_grad = True
    out.grad_fn = new_node(_UNDEFINED, (edge,))
    return out


def _check_undefined_grad(func: Callable, inputs: tuple, diff_tensors: list) -> None:
    """Backward must accept undefined output gradients and treat them as zeros."""
    outputs = _differentiable(_as_tuple(func(*inputs)))
    cases = [[_undefined(o) for o in outputs]]
    if len(outputs) > 1:
        for k in range(len(outputs)):
            fresh = _differentiable(_as_tuple(func(*inputs)))
            cases.append([_undefined(o) if j == k else o for j, o in enumerate(fresh)])
    for case in cases:
        zeros = [_wrap(np.zeros(o.shape, o.dtype)) for o in case]
        try:
            grads = _grad(case, diff_tensors, zeros, allow_unused=True)
        except RuntimeError as error:  # (as torch: other errors, e.g. None * 2, propagate)
            raise GradcheckError(
                f"Expected backward function to handle undefined output grads, but it raised: "
                f"{type(error).__name__}: {error}"
            ) from error
        for g in grads:
            if g is not None and np.any(g._data != 0):
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are "
                    "undefined or zero."
                )


def _check_batched_reverse(out: Tensor, k: int, diff_tensors: list, diff: list) -> None:
    """``grad`` with a batch of two grad_outputs against two separate calls."""
    rng = np.random.default_rng(0)
    vs = [_wrap(_random_like(rng, out.shape, out.dtype)) for _ in range(2)]
    expected = [_grads_or_zeros(_grad(out, diff_tensors, v, retain_graph=True, allow_unused=True),
                                diff_tensors) for v in vs]
    stacked = _wrap(np.stack([v._data for v in vs]))
    try:
        result = _grad(out, diff_tensors, stacked, retain_graph=True, allow_unused=True,
                       is_grads_batched=True)
    except (RuntimeError, NotImplementedError, ImportError) as error:
        raise GradcheckError(f"While computing batched gradients, got: {error}{_BATCHED_HINT}") from error
    for i, res, exp1, exp2 in zip(diff, result, *expected, strict=True):
        want = np.stack([exp1, exp2])
        got = np.broadcast_to(res._data, want.shape) if res is not None else np.zeros_like(want)
        if not np.allclose(got, want):
            raise GradcheckError(
                f"For output {k} and input {i}: the batched gradient (grad with "
                f"is_grads_batched=True) does not match the gradients computed one at a time.\n"
                f"Got: {format_tensor(_wrap(got))}\nExpected: {format_tensor(_wrap(want))}"
                f"{_BATCHED_HINT}"
            )


def _check_batched_forward(func: Callable, inputs: tuple, diff: list) -> None:
    """vmap over forward-mode tangents against one forward pass per tangent."""
    rng = np.random.default_rng(0)
    for i in diff:
        x = inputs[i]

        def jvp(tangent: Tensor, i: int = i) -> tuple:
            return _output_tangents(func, inputs, i, tangent)

        tangents = [_wrap(_random_like(rng, x.shape, x.dtype)) for _ in range(2)]
        expected = [jvp(t) for t in tangents]
        try:
            result = vmap(jvp)(_wrap(np.stack([t._data for t in tangents])))
        except (RuntimeError, NotImplementedError, ImportError) as error:
            raise GradcheckError(
                f"While computing batched forward gradients, got: {error}{_BATCHED_HINT}"
            ) from error
        for k, (res, exp1, exp2) in enumerate(zip(result, *expected, strict=True)):
            want = np.stack([exp1._data, exp2._data])
            if not np.allclose(res._data, want):
                raise GradcheckError(
                    f"For output {k} and input {i}: the batched forward gradient (vmap over "
                    f"tangents) does not match the tangents computed one at a time.\n"
                    f"Got: {format_tensor(res)}\nExpected: {format_tensor(_wrap(want))}{_BATCHED_HINT}"
                )


# -- Jacobians -------------------------------------------------------------------------
def _output_arrays(outs: Any) -> list:
    """The data of each output (None for outputs that are not floating point Tensors)."""
    return [o._data.copy() if _is_float_tensor(o) else None for o in _as_tuple(outs)]


def _central_difference(func: Callable, inputs: tuple, data: np.ndarray, where: Any, step: Any) -> list:
    """``(f(x + step) - f(x - step)) / 2`` where ``data[where]`` is moved by ``step``."""
    orig = np.array(data[where], copy=True)
    try:
        data[where] = orig - step
        low = _output_arrays(func(*inputs))
        data[where] = orig + step
        high = _output_arrays(func(*inputs))
    finally:
        data[where] = orig
    diffs = []
    for k, (lo, hi) in enumerate(zip(low, high, strict=True)):
        if lo is None:
            diffs.append(None)
            continue
        if lo.shape != hi.shape or lo.dtype != hi.dtype:
            raise GradcheckError(
                f"Expected output {k} to keep its shape and dtype when the input is perturbed "
                f"by eps, got {lo.shape} {lo.dtype} and {hi.shape} {hi.dtype}."
            )
        diffs.append((hi - lo).reshape(-1) / 2)
    return diffs


def _directional(func: Callable, inputs: tuple, i: int, where: Any, direction: Any, eps: float) -> list:
    """Numerical derivative of every output along ``direction`` at ``inputs[i][where]``.

    For a complex input ``direction`` is a pair (real step, imaginary step) and
    the result is the conjugate Wirtinger combination ``ds/dx + i ds/dy``.
    """
    data = inputs[i]._data
    if data.dtype.kind != "c":
        return [None if d is None else d / eps
                for d in _central_difference(func, inputs, data, where, eps * direction)]
    re, im = direction
    d_re = _central_difference(func, inputs, data, where, eps * re)
    d_im = _central_difference(func, inputs, data, where, eps * 1j * im)
    return [None if a is None else (a + 1j * b) / eps for a, b in zip(d_re, d_im, strict=True)]


def _numerical_jacobians(func: Callable, inputs: tuple, i: int, eps: float) -> dict:
    """``{output index: (input numel, output numel) array}`` by central differences."""
    shape = inputs[i].shape
    one = (1.0, 1.0) if inputs[i].dtype.kind == "c" else 1.0
    columns = [_directional(func, inputs, i, where, one, eps) for where in np.ndindex(*shape)]
    if not columns:
        out = _output_arrays(func(*inputs))
        return {k: np.zeros((0, o.size)) for k, o in enumerate(out) if o is not None}
    return {k: np.stack([c[k] for c in columns]) for k in range(len(columns[0]))
            if columns[0][k] is not None}


def _reverse_rows(out: Tensor, diff_tensors: list, v: np.ndarray) -> list:
    """``v^T J`` for each input (None for inputs the graph does not reach)."""
    return _grad(out, diff_tensors, _wrap(v.reshape(out.shape)), retain_graph=True, allow_unused=True)


def _reverse_jacobians(out: Tensor, inputs: tuple, diff: list, s: _Settings, check: bool) -> list:
    """Jacobians of ``out`` by reverse mode, computed twice to check determinism."""
    diff_tensors = [inputs[i] for i in diff]
    runs = []
    for _ in range(2):
        rows = []
        for j in range(out.numel()):
            v = np.zeros(out.numel(), out.dtype)
            v[j] = 1
            rows.append(_reverse_rows(out, diff_tensors, v))
        runs.append([_stack_columns(col, x, i, s, check) for col, x, i in
                     zip(zip(*rows, strict=True), diff_tensors, diff, strict=True)] if rows else
                    [np.zeros((x.numel(), 0), x.dtype) for x in diff_tensors])
    for i, a1, a2 in zip(diff, *runs, strict=True):
        if a1.size and np.max(np.abs(a1 - a2)) > s.nondet_tol:
            raise GradcheckError(
                f"Backward is not reentrant for input {i}, i.e., running backward with same input "
                "and grad_output multiple times gives different values, although analytical "
                f"gradient matches numerical gradient. The tolerance for nondeterminism was "
                f"{s.nondet_tol}.{_NONDET_HINT}"
            )
    return runs[0]


def _stack_columns(grads: tuple, x: Tensor, i: int, s: _Settings, check: bool) -> np.ndarray:
    """One gradient per output element -> the ``(x.numel(), out.numel())`` Jacobian."""
    cols = []
    for g in grads:
        if g is None:
            cols.append(np.zeros(x.numel(), x.dtype))
            continue
        if check and g.shape != x.shape:
            raise GradcheckError(
                f"Analytical gradient has incorrect size: input {i} has shape {x.shape} but its "
                f"gradient has shape {g.shape}"
            )
        if check and s.check_grad_dtypes and g.dtype != x.dtype:
            raise GradcheckError(
                f"Gradient has dtype mismatch: input {i} is {x.dtype} but its gradient is {g.dtype}"
            )
        cols.append(g._data.reshape(-1))
    return np.stack(cols, axis=1)


def _output_tangents(func: Callable, inputs: tuple, i: int, tangent: Tensor,
                     check_dtypes: bool = False) -> tuple:
    """Tangents of ``func``'s floating outputs when input ``i`` has ``tangent`` (others zero)."""
    from .. import forward_ad as fwad

    with fwad.dual_level():
        duals = list(inputs)
        for j, x in enumerate(inputs):
            if isinstance(x, Tensor) and x.requires_grad:
                t = tangent if j == i else _wrap(np.zeros(x.shape, x.dtype))
                duals[j] = fwad.make_dual(x.detach(), t)
        results = []
        for o in _as_tuple(func(*duals)):
            if not _is_float_tensor(o):
                continue
            primal, t = fwad.unpack_dual(o)
            if t is None:
                t = _wrap(np.zeros(primal.shape, primal.dtype))
            elif check_dtypes and (t.dtype.kind == "c") != (primal.dtype.kind == "c"):
                raise GradcheckError("Forward AD gradient has dtype mismatch.")
            results.append(t)
        return tuple(results)


def _forward_jacobians(func: Callable, inputs: tuple, diff: list, i: int, s: _Settings) -> dict:
    """``{output index: Jacobian}`` of the floating outputs w.r.t. input ``i`` by forward mode."""
    x = inputs[i]
    rows = []
    for where in np.ndindex(*x.shape):
        t = np.zeros(x.shape, x.dtype)
        t[where] = 1
        rows.append([o._data.reshape(-1) for o in
                     _output_tangents(func, inputs, i, _wrap(t), s.check_grad_dtypes)])
    float_outs = [k for k, o in enumerate(_as_tuple(func(*inputs))) if _is_float_tensor(o)]
    return {k: np.stack([r[n] for r in rows]) if rows else np.zeros((0, 0))
            for n, k in enumerate(float_outs)}


# -- fast mode -------------------------------------------------------------------------
def _unit_vector(rng: np.random.Generator, x: Tensor) -> np.ndarray:
    v = rng.random(x.numel())
    return v / np.linalg.norm(v) if v.size else v


def _input_vectors(rng: np.random.Generator, inputs: tuple, diff: list) -> dict:
    """A random unit vector per input (a pair of them, real and imaginary, for complex inputs)."""
    return {i: (_unit_vector(rng, inputs[i]), _unit_vector(rng, inputs[i]))
            if inputs[i].dtype.kind == "c" else _unit_vector(rng, inputs[i]) for i in diff}


def _shaped(u: Any, shape: tuple) -> Any:
    return tuple(p.reshape(shape) for p in u) if isinstance(u, tuple) else u.reshape(shape)


def _sum_u(u: Any) -> float:
    return float(sum(p.sum() for p in u)) if isinstance(u, tuple) else float(u.sum())


def _fast_reverse(func: Callable, inputs: tuple, diff: list, func_out: tuple, out_idx: list,
                  s: _Settings, part: str | None) -> None:
    rng = np.random.default_rng(0)
    us = _input_vectors(rng, inputs, diff)
    vs = {k: _unit_vector(rng, func_out[k]).astype(func_out[k].dtype) for k in out_idx}
    diff_tensors = [inputs[i] for i in diff]
    for k in out_idx:
        runs = [_reverse_rows(func_out[k], diff_tensors, vs[k]) for _ in range(2)]
        for i, x, g1, g2 in zip(diff, diff_tensors, *runs, strict=True):
            vj = _stack_columns((g1,), x, i, s, check=True)[:, 0]
            vj2 = _stack_columns((g2,), x, i, s, check=True)[:, 0]
            if vj.size and np.max(np.abs(vj - vj2)) > s.nondet_tol:
                raise GradcheckError(
                    f"Backward is not reentrant for input {i}, i.e., running backward with same "
                    "input and grad_output multiple times gives different values. The tolerance "
                    f"for nondeterminism was {s.nondet_tol}.{_NONDET_HINT}"
                )
            u = us[i]
            if isinstance(u, tuple):
                analytical = vj.real @ u[0] + 1j * (vj.imag @ u[1])
            else:
                analytical = vj @ u
            ju = _directional(func, inputs, i, ..., _shaped(u, x.shape), s.eps)[k]
            numerical = vs[k] @ ju
            tol = s.atol * _sum_u(u) * float(vs[k].sum())
            if not _allclose(np.asarray(analytical), np.asarray(numerical), s.rtol, tol):
                raise GradcheckError(
                    _mismatch(np.asarray(analytical), np.asarray(numerical), k, i, part, "outputs", "")
                    + _slow_recheck(func, inputs, diff, i, k, s, forward=False)
                )


def _fast_forward(func: Callable, inputs: tuple, diff: list, func_out: tuple, out_idx: list,
                  s: _Settings, part: str | None) -> None:
    rng = np.random.default_rng(0)
    us = _input_vectors(rng, inputs, diff)
    for i in diff:
        x = inputs[i]
        u = us[i]
        numerical = _directional(func, inputs, i, ..., _shaped(u, x.shape), s.eps)
        tangents = _output_tangents(func, inputs, i, _wrap(u.reshape(x.shape).astype(x.dtype)),
                                    s.check_grad_dtypes)
        float_outputs = [k for k, o in enumerate(func_out) if _is_float_tensor(o)]  # (those with a tangent)
        for k in out_idx:
            a = tangents[float_outputs.index(k)]._data.reshape(-1)
            if not _allclose(a, numerical[k], s.rtol, s.atol * _sum_u(u)):
                raise GradcheckError(
                    _mismatch(a, numerical[k], k, i, part, "inputs", "computed with forward mode ")
                    + _slow_recheck(func, inputs, diff, i, k, s, forward=True)
                )


def _slow_recheck(func: Callable, inputs: tuple, diff: list, i: int, k: int, s: _Settings,
                  forward: bool) -> str:
    """The slow-mode Jacobians of one pair, and whether slow mode would have passed."""
    numerical = _numerical_jacobians(func, inputs, i, s.eps)[k]
    if forward:
        analytical = _forward_jacobians(func, inputs, diff, i, s)[k]
    else:
        out = _as_tuple(func(*inputs))[k]
        analytical = _reverse_jacobians(out, inputs, diff, _Settings(s.eps, s.atol, s.rtol, np.inf,
                                                                     False, False), False)
        analytical = analytical[diff.index(i)]
    max_diff = float(np.max(np.abs(numerical - analytical))) if numerical.size else 0.0
    msg = (
        "\nThe quantities above relate the numerical and analytical Jacobians in fast mode "
        "(v^T J u for random vectors u, v). Recomputed in slow mode:\n\n"
        f"Numerical:\n {format_tensor(_wrap(numerical))}\n"
        f"Analytical:\n{format_tensor(_wrap(analytical))}\n\n"
        f"The max per-element difference (slow mode) is: {max_diff}.\n"
    )
    if _allclose(analytical, numerical, s.rtol, s.atol):
        msg += _FAST_SLOW_OK
    return msg


# -- complex numbers -------------------------------------------------------------------
def _output_part(func: Callable, part: str) -> Callable:
    """``func`` with its complex outputs replaced by their real or imaginary part."""

    if part == "real":
        return lambda *args: tuple(o.real if o.dtype.kind == "c" else o
                                   for o in _as_tuple(func(*args)))
    return lambda *args: tuple(o.imag if o.dtype.kind == "c" else o
                               for o in _as_tuple(func(*args)))


def _input_part(func: Callable, inputs: tuple, diff: list, part: str) -> tuple:
    """``(f, real inputs)`` where ``f`` rebuilds each complex input from one real part.

    The other part stays at its current value, as a constant.
    """
    complex_idx = [i for i in diff if inputs[i].dtype.kind == "c"]
    new_inputs = list(inputs)
    for i in complex_idx:
        values = inputs[i]._data.real if part == "real" else inputs[i]._data.imag
        new_inputs[i] = _wrap(values.copy()).requires_grad_()

    def wrapped(*args: Any) -> Any:
        args = list(args)
        for i in complex_idx:
            orig = inputs[i]._data
            if part == "real":
                args[i] = args[i] + _wrap(1j * orig.imag)
            else:
                args[i] = _wrap(orig.real.astype(orig.dtype)) + args[i] * 1j
        return func(*args)

    return wrapped, tuple(new_inputs)


# -- helpers ---------------------------------------------------------------------------
def _as_tuple(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_float_tensor(o: Tensor) -> bool:
    return o.dtype.kind in "fc"


def _differentiable(outs: tuple) -> tuple:
    """The outputs that require grad, after checking that every output is a Tensor."""
    for k, o in enumerate(outs):
        if not isinstance(o, Tensor):
            raise TypeError(
                f"gradcheck expects func to return a Tensor or a sequence of Tensors, but output {k} "
                f"is a {type(o).__name__}"
            )
    return tuple(o for o in outs if o.requires_grad)


def _grads_or_zeros(grads: tuple, tensors: list) -> list:
    return [g._data if g is not None else np.zeros(x.shape, x.dtype)
            for g, x in zip(grads, tensors, strict=True)]


def _random_like(rng: np.random.Generator, shape: tuple, dtype: np.dtype) -> np.ndarray:
    data = rng.standard_normal(shape)
    if dtype.kind == "c":
        data = data + 1j * rng.standard_normal(shape)
    return data.astype(dtype)


def _allclose(a: np.ndarray, n: np.ndarray, rtol: float, atol: float) -> bool:
    """``|a - n| <= atol + rtol * |n|`` everywhere (NaN never matches)."""
    return bool(np.all(np.abs(a - n) <= atol + rtol * np.abs(n)))


def _mismatch(a: np.ndarray, n: np.ndarray, k: int, i: int, part: str | None, split: str,
              mode: str) -> str:
    prefix = f"While considering the {part} part of complex {split} only, " if part else ""
    return (
        f"{prefix}Jacobian {mode}mismatch for output {k} with respect to input {i},\n"
        f"numerical:{format_tensor(_wrap(np.asarray(n)))}\n"
        f"analytical:{format_tensor(_wrap(np.asarray(a)))}\n"
    )
