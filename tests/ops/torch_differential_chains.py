"""Random chains of 3-6 ops for the differential run against torch (see ``torch_differential``).

A chain starts from ``x + 0.5 y`` (two leaves that broadcast) and a scalar leaf ``w``, and applies steps drawn
from families: elementwise, reductions, views and shape changes, gathers and scatters, in-place writes into views,
matmul and einsum, ``where``/``masked_fill``, ``cat``/``stack``/``split``. A step decides its dims and index arrays
from the current shape and a seed fixed when the chain is drawn, so both libraries (and every batch member under
``vmap``) make the same call.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from torch_differential import Case, broadcast_pair, rarray

STEPS: list[tuple[str, Callable]] = []


def step(fn: Callable) -> Callable:
    STEPS.append((fn.__name__, fn))
    return fn


def _d(h, r: np.random.Generator) -> int:
    """A dim of ``h``, negative half of the time."""
    n = max(h.dim(), 1)
    d = int(r.integers(0, n))
    return d - n if r.random() < 0.5 else d


# -- elementwise (bounded outputs, smooth) -----------------------------------------------------------------------
@step
def sin(M, h, w, r):
    return M.sin(h) * w


@step
def tanh_exp(M, h, w, r):
    return M.tanh(h) + M.exp(-h * h)


@step
def log_sqrt(M, h, w, r):
    return M.log(h * h + 1) - M.sqrt(h * h + 0.5)


@step
def sigmoid_pow(M, h, w, r):
    return M.sigmoid(h) ** 2 + M.atan(h) / (w * w + 1)


@step
def where_masked(M, h, w, r):
    mask = M.tensor(r.random(tuple(h.shape)) < 0.5)
    return M.where(mask, h * 2, M.cos(h)).masked_fill(~mask & (h > 0.3), 0.25)


# -- reductions ----------------------------------------------------------------------------------------------------
@step
def reduce(M, h, w, r):
    if h.dim() == 0:
        return h * 3
    d, keep = _d(h, r), bool(r.random() < 0.5)
    kind = int(r.integers(0, 6))
    if kind == 0:
        return h.sum(d, keepdim=keep)
    if kind == 1:
        return h.mean(dim=d, keepdim=keep)
    if kind == 2:
        return M.logsumexp(h, d, keepdim=keep)
    if kind == 3:
        return M.tanh(h).prod(d, keepdim=keep)
    if kind == 4:
        return h.amax(dim=d, keepdim=keep)
    return h.var(d, keepdim=keep) if h.shape[d] > 1 else h.sum(d, keepdim=keep)


@step
def scan(M, h, w, r):
    if h.dim() == 0:
        return h.exp()
    d = _d(h, r)
    return [M.softmax(h, d), M.cumsum(h, d), M.log_softmax(h, d), M.logcumsumexp(h, d)][int(r.integers(0, 4))]


# -- views and shapes ------------------------------------------------------------------------------------------
@step
def view(M, h, w, r):
    kind = int(r.integers(0, 8))
    if h.dim() >= 2 and kind == 0:
        return h.mT * 1.5
    if h.dim() >= 2 and kind == 1:
        return M.diagonal(h, 0, 0, -1) + 1
    if h.dim() >= 1 and kind == 2:
        return h[..., ::2] - h[..., :1]
    if h.dim() >= 1 and kind == 3:
        return h.flip(_d(h, r)).roll(1, _d(h, r))
    if kind == 4:
        return h.unsqueeze(int(r.integers(-h.dim() - 1, h.dim() + 1))).expand(*([2] + [-1] * h.dim())[:h.dim() + 1])
    if kind == 5:
        return h.reshape(-1)
    if h.dim() >= 1 and kind == 6:
        return h.movedim(0, -1).contiguous().squeeze()
    return h.unsqueeze(0).repeat(2, *([1] * h.dim()))


@step
def join(M, h, w, r):
    if h.dim() == 0:
        return M.stack([h, h * h], 0)
    d = _d(h, r)
    kind = int(r.integers(0, 3))
    if kind == 0:
        return M.cat([h, M.sin(h)], d)
    if kind == 1:
        return M.stack([h, w * h], d)
    parts = h.split(1 + int(r.integers(0, max(h.shape[d], 1))), d)
    return M.cat(list(reversed(parts)), d)


# -- indexing ----------------------------------------------------------------------------------------------------
@step
def gather(M, h, w, r):
    if h.dim() == 0:
        return h.reshape(1)[M.tensor([0, 0])]
    d = _d(h, r)
    kind = int(r.integers(0, 4))
    if kind == 0:
        idx = r.integers(0, h.shape[d], size=tuple(h.shape))
        return M.gather(h, d, M.tensor(idx))
    if kind == 1:
        return M.index_select(h, d, M.tensor(r.integers(0, h.shape[d], size=3)))
    if kind == 2:
        return h[M.tensor(r.integers(-h.shape[0], h.shape[0], size=(2, 1)))]
    mask = M.tensor(r.random(tuple(h.shape)) < 0.6)
    return M.where(mask, h, 0.0).sum(d)


@step
def scatter(M, h, w, r):
    if h.dim() == 0:
        return h * w
    d = _d(h, r)
    kind = int(r.integers(0, 3))
    idx = M.tensor(r.integers(0, h.shape[d], size=tuple(h.shape)))
    if kind == 0:
        return M.zeros_like(h).scatter_add(d, idx, h * h)
    if kind == 1:
        k = int(r.integers(1, 4))
        src_shape = list(h.shape)
        src_shape[d] = k
        src = M.sin(h.narrow(d, 0, 1)).expand(*src_shape)
        return h.index_add(d, M.tensor(r.integers(0, h.shape[d], size=k)), src)
    return h.scatter_reduce(d, idx, M.cos(h), "amax", include_self=True)


# -- in-place writes into views -------------------------------------------------------------------------------------
@step
def inplace_view(M, h, w, r):
    c = h.clone()
    if c.dim() == 0:
        c.mul_(w)
        return c
    kind = int(r.integers(0, 6))
    if kind == 0:
        c[..., 0].mul_(2.0)
    elif kind == 1:
        c.narrow(-1, 0, 1).add_(c.narrow(-1, c.shape[-1] - 1, 1) * w)
    elif kind == 2:
        c[..., ::2] = M.tanh(h[..., ::2])
    elif kind == 3 and c.dim() >= 2:
        c.diagonal(0, 0, -1).copy_(M.cos(h.diagonal(0, 0, -1)))
    elif kind == 4:
        v = c[0]
        c.sin_()
        return v * 2 + c.sum()
    else:
        c.transpose(0, -1)[0].exp_()
    return c


@step
def inplace_ops(M, h, w, r):
    c = h * 1.0
    kind = int(r.integers(0, 4))
    if kind == 0:
        c.tanh_().mul_(w)
    elif kind == 1:
        c.addcmul_(h, h, value=0.5)
    elif kind == 2:
        c.clamp_(-0.8, 0.9)
    else:
        c.masked_fill_(M.tensor(r.random(tuple(h.shape)) < 0.3), 1.5)
    return c


# -- contractions ------------------------------------------------------------------------------------------------
@step
def contract(M, h, w, r):
    kind = int(r.integers(0, 3))
    if h.dim() >= 2 and kind == 0:
        return M.tanh(h @ h.mT)
    if h.dim() >= 1 and kind == 1:
        return M.einsum("...i,...j->...ij", h, M.sin(h)).sum(-1)
    if h.dim() >= 1:
        return M.matmul(h, M.cos(h.mT if h.dim() >= 2 else h))
    return h * h


def chain_case(rng: np.random.Generator) -> Case:
    """A random chain of 3-6 steps over leaves ``x``, ``y`` (broadcasting) and a scalar ``w``."""
    s1, s2 = broadcast_pair(rng, min_dims=int(rng.integers(0, 2)))
    n_steps = int(rng.integers(3, 7))
    picks = [STEPS[int(i)] for i in rng.integers(0, len(STEPS), size=n_steps)]
    seeds = [int(s) for s in rng.integers(0, 2**31, size=n_steps)]

    def fn(M, x, y, w):
        h = x + 0.5 * y
        for (_, f), seed in zip(picks, seeds):
            h = f(M, h, w, np.random.default_rng(seed))
            if h.numel() > 64:  # keep the sizes small: sum the leading dim away
                h = h.sum(0)
        return h

    fn.__name__ = " > ".join(name for name, _ in picks)
    return Case([rarray(rng, s1), rarray(rng, s2), rarray(rng, (), 0.5, 1.5)], fn, float32_factor=50.0)


# -- more families: linear algebra, order statistics, functional, fft, aliasing views ---------------------------------
@step
def linalg(M, h, w, r):
    if h.dim() < 2 or h.shape[-1] != h.shape[-2]:
        m = h.reshape(-1)[:4]
        h = M.outer(m, M.cos(m))
    a = h @ h.mT + M.eye(h.shape[-1], dtype=h.dtype) * 2
    kind = int(r.integers(0, 5))
    if kind == 0:
        return M.linalg.inv(a)
    if kind == 1:
        return M.linalg.solve(a, h)
    if kind == 2:
        return M.logdet(a)
    if kind == 3:
        return M.linalg.cholesky(a)
    return M.linalg.eigvalsh(a)


@step
def order(M, h, w, r):
    if h.dim() == 0:
        return h.sin()
    d = _d(h, r)
    kind = int(r.integers(0, 5))
    if kind == 0:
        return h.sort(d, descending=True).values
    if kind == 1:
        return h.topk(1, d).values
    if kind == 2:
        return h.max(d).values * 0.5
    if kind == 3:
        return M.cumprod(M.tanh(h), d)
    return M.linalg.vector_norm(h, 2, d) + h.norm()


@step
def functional(M, h, w, r):
    F = M.nn.functional
    kind = int(r.integers(0, 6))
    if kind == 0:
        return F.softplus(h) - F.logsigmoid(h)
    if kind == 1:
        return F.gelu(h) * F.silu(h)
    if kind == 2 and h.dim() >= 1:
        return F.layer_norm(h, h.shape[-1:])
    if kind == 3 and h.dim() >= 1:
        return F.normalize(h, dim=-1)
    if kind == 4 and h.dim() >= 1:
        return F.pad(h, (1, 0), value=0.3)
    return F.elu(h) + F.mish(h)


@step
def spectral(M, h, w, r):
    if h.dim() == 0:
        return h.cos()
    z = M.fft.rfft(h)
    return z.real * z.imag + M.fft.irfft(z, n=h.shape[-1])


@step
def aliasing(M, h, w, r):
    """Two views of one base written in place, then read through the other view and the base."""
    c = M.tanh(h).reshape(-1).clone()
    a, b = c[::2], c[c.shape[0] // 2:]
    a.mul_(w)
    b.add_(1.0)
    return a.sum() * b + c.sum()
