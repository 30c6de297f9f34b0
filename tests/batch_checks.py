"""Checking an op's vmap rule directly: one batched call against a loop over the batch.

The rule (the op's own ``batch`` or its family's, via ``batching.rule_for``) is
called on physical inputs whose batch axis is wherever the test puts it; its
result, with the batch axis it reports moved to the front, must equal the op
applied to each batch member in turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import dualgrad as dg
from dualgrad.ops.dispatch import apply
from dualgrad.vmap.batching import rule_for


def normal(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.standard_normal(shape)


def check_batch_rule(op: Any, shapes: Sequence[tuple], bdims: Sequence[int | None], params: dict,
                     size: int = 3, make: Callable = normal, seed: int = 0) -> None:
    """``rule(physical inputs)`` == ``stack([op(member) for member in batch])``."""
    rng = np.random.default_rng(seed)
    members, physical = [], []
    for shape, bdim in zip(shapes, bdims, strict=True):
        if bdim is None:
            value = make(rng, shape)
            members.append([value] * size)
            physical.append(dg.tensor(value))
        else:
            values = [make(rng, shape) for _ in range(size)]
            members.append(values)
            physical.append(dg.tensor(np.stack(values, axis=bdim)))
    rule = rule_for(op)
    assert rule is not None, f"{op.name} has no batching rule"
    out, out_bdim = rule(tuple(physical), tuple(bdims), **params)
    loop = [apply(op, *[dg.tensor(m[k]) for m in members], **params) for k in range(size)]
    outs, out_bdims = (out, out_bdim) if op.multi_output else ((out,), (out_bdim,))
    for i, (o, b) in enumerate(zip(outs, out_bdims, strict=True)):
        expected = np.stack([(r[i] if op.multi_output else r).numpy() for r in loop])
        got = np.moveaxis(o.numpy(), b, 0)
        assert got.shape == expected.shape, f"{op.name}: batched shape {got.shape} != {expected.shape}"
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=op.name)
