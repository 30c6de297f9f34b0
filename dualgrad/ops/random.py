"""Random sampling from distributions: ``bernoulli``, ``normal``, ``poisson``, ``multinomial``, ``randperm``
and the in-place fills ``random_``, ``bernoulli_``, ``exponential_``, ``geometric_``, ``log_normal_``,
``cauchy_`` (``uniform_`` and ``normal_`` are in ``inplace``).

All draw from dualgrad's generator, seeded by ``manual_seed``; inside ``vmap`` the draws follow the
vmap's ``randomness`` ('error', 'same' or 'different'), as the factories' do. As in torch, ``bernoulli``,
``normal`` and ``poisson`` give outputs whose gradient with respect to their parameters is zero (no
reparameterisation: write ``mean + std * randn_like(mean)`` for that); ``multinomial`` and
``randperm`` give integer indices.

>>> import dualgrad as dg
>>> _ = dg.manual_seed(0)
>>> dg.bernoulli(dg.tensor([0., 1.]))
tensor([0., 1.])
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..base.devices import check_device
from ..base.dtypes import torch_dtype_name
from ..base.state import STATE
from ..factories import _generator, _random, rand, rand_like, randn
from ..reverse import no_grad
from ..tensor import Tensor, int_arg
from ..vmap.batching import RANDOM_ERROR, physical_value
from .counting import _require, searchsorted
from .dispatch import _check_broadcast, apply, tensor_arg
from .elementwise import core as ew
from .inplace import _fill, update_
from .reductions import cumsum
from .registry import elementwise
from .sorting import argsort
from .surface import exported, public


def _last(*arrays: np.ndarray) -> np.ndarray:
    """The last array (the sampled values), broadcast with the others (the distribution's parameters)."""
    return np.array(np.broadcast_arrays(*arrays)[-1])


def _poisson_impl(rates: np.ndarray) -> np.ndarray:
    return _generator[0].poisson(rates).astype(rates.dtype)


# The sampled values (the last input) with a zero gradient for the distribution's parameters, as torch's.
BERNOULLI = elementwise("bernoulli", _last, (ew._zero, ew._zero), save_inputs=False, grad_name="BernoulliBackward0")
NORMAL = elementwise("normal", _last, (ew._zero,) * 3, save_inputs=False, grad_name="NormalBackward3")
# Draws in its impl: inside vmap, per batch member where ``rates`` is batched.
POISSON = elementwise("poisson", _poisson_impl, (ew._zero,), save_inputs=False, grad_name="PoissonBackward0")


def _values(t: Tensor) -> np.ndarray:
    """The data of ``t`` (of every batch member inside vmap), for argument checks."""
    return physical_value(t)._data


@public(None, inplace=False)
def bernoulli(input: Any, p: float | None = None, *, generator: Any = None) -> Tensor:  # noqa: A002 - torch's name
    """0/1 samples, 1 with probability ``input`` (elementwise), or ``p`` for all elements when given;
    the dtype of ``input``, which must be floating. The gradient is zero, as torch's.

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> dg.bernoulli(dg.tensor([0., 1., 1.]))
    tensor([0., 1., 1.])
    >>> float(dg.bernoulli(dg.zeros(10000), p=0.25).mean()) > 0.2
    True
    """
    input = tensor_arg(input, "bernoulli")  # noqa: A001
    _require(input.dtype, "f", "bernoulli_tensor_cpu_p_")
    if p is None:
        probs = _values(input)
        if not ((probs >= 0) & (probs <= 1)).all():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        p = input.detach()
    else:
        _check_probability("bernoulli_", p)
    with no_grad():
        draws = ew.to_dtype(rand_like(input) < p, input.dtype)
    return apply(BERNOULLI, input, draws)


def _check_probability(fn: str, p: float) -> None:
    if isinstance(p, bool) or not isinstance(p, (int, float, np.floating, np.integer)):
        raise TypeError(f"{fn.rstrip('_')}(): argument 'p' must be float, not {type(p).__name__}")
    if not 0 <= p <= 1:
        raise RuntimeError(f"{fn} expects p to be in [0, 1], but got p={p:g}")


@public(None, method=False)
def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None, dtype: Any = None,
           requires_grad: bool = False, **_device: Any) -> Tensor:
    """Normal samples of mean ``mean`` and standard deviation ``std``, torch's four forms: Tensor
    ``mean`` and/or Tensor ``std`` (broadcast together; ``std`` defaults to 1), or two numbers and
    ``size``. The gradient for ``mean`` and ``std`` is zero, as torch's (for a reparameterised sample,
    write ``mean + std * dg.randn_like(mean)``).

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> dg.normal(dg.zeros(2, 1), dg.ones(3)).shape, dg.normal(2.0, 0.5, size=(4,)).shape
    ((2, 3), (4,))
    """
    check_device("normal", _device.get("device"))
    tensors = isinstance(mean, Tensor) or isinstance(std, Tensor)
    if tensors == (size is not None):
        given = ", ".join(type(a).__name__ for a in (mean, std) + ((size,) if size is not None else ()))
        raise TypeError(f"normal() received an invalid combination of arguments - got ({given}): a Tensor "
                        "mean and/or std, or a float mean and std with a size")
    for s in (std,) if isinstance(std, Tensor) else ():
        if (_values(s) < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    if not isinstance(std, Tensor) and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if not tensors:
        return randn(size, dtype=dtype, requires_grad=requires_grad) * std + mean
    for t in (mean, std):
        if isinstance(t, Tensor):
            _require(t.dtype, "fc", "normal_kernel_cpu")
    try:
        shape = np.broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, Tensor)))
    except ValueError:
        _check_broadcast(NORMAL, (mean, std))  # torch's error naming the dimension
        raise
    dtype = np.result_type(*(t.dtype for t in (mean, std) if isinstance(t, Tensor)))
    with no_grad():
        draws = randn(shape, dtype=dtype) * std + mean
    return apply(NORMAL, mean, std, draws)


@public(None, method=False)
def poisson(input: Any, generator: Any = None) -> Tensor:  # noqa: A002 - torch's name
    """Poisson samples of rate ``input`` (elementwise, floating, non-negative), in its dtype; the
    gradient is zero, as torch's. Inside ``vmap`` (randomness 'same' or 'different'), batch members
    get their own draws where the rates are batched.

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> dg.poisson(dg.tensor([0., 0.]))
    tensor([0., 0.])
    """
    input = tensor_arg(input, "poisson")  # noqa: A001
    _require(input.dtype, "f", "poisson_cpu")
    if (_values(input) < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if STATE.vmap_depth and any(level.randomness == "error" for level in STATE.vmap_levels):
        raise RuntimeError(RANDOM_ERROR)
    return apply(POISSON, input)


@public(None, inplace=False)
def multinomial(input: Any, num_samples: int, replacement: bool = False, *,  # noqa: A002 - torch's name
                generator: Any = None) -> Tensor:
    """Indices (int64) of ``num_samples`` categories drawn from each row of ``input`` (1-d or 2-d,
    non-negative weights along the last dimension, not necessarily summing to 1), with or without
    ``replacement``. Without replacement, zero-weight categories come only after the others ran out,
    as torch's.

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> sorted(dg.multinomial(dg.tensor([1., 0., 3.]), 2).tolist())
    [0, 2]
    >>> dg.multinomial(dg.tensor([[0., 1.], [1., 0.]]), 3, replacement=True)
    tensor([[1, 1, 1],
            [0, 0, 0]])
    """
    input = tensor_arg(input, "multinomial")  # noqa: A001
    if input.dtype.kind != "f":
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{torch_dtype_name(input.dtype)}")
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    num_samples = operator.index(num_samples)
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    weights = _values(input)
    if not (np.isfinite(weights) & (weights >= 0)).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (weights.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    with no_grad():
        p = input.detach()
        if not replacement:  # the largest p / E for exponential E (Efraimidis and Spirakis' keys)
            keys = p / -ew.log1p(-rand_like(p))
            return argsort(keys, -1, descending=True)[..., :num_samples]
        cdf = cumsum(p, -1)
        u = rand(p.shape[:-1] + (num_samples,), dtype=p.dtype) * cdf[..., -1:]
        return ew.clamp(searchsorted(cdf, u, right=True), max=p.shape[-1] - 1)


@public(None, method=False)
def randperm(n: int, *, generator: Any = None, dtype: Any = None, requires_grad: bool = False,
             **_device: Any) -> Tensor:
    """A random permutation of ``0, ..., n - 1`` (int64 unless ``dtype`` is given).

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> sorted(dg.randperm(4).tolist())
    [0, 1, 2, 3]
    """
    check_device("randperm", _device.get("device"))
    n = int_arg(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = np.dtype(np.int64) if dtype is None else np.dtype(dtype)
    return _random(lambda shape: _generator[0].permuted(np.broadcast_to(np.arange(n), shape), axis=-1)
                   .astype(dtype), (n,), requires_grad)


# -- in-place fills ----------------------------------------------------------------------------
def _fill_with(self: Tensor, name: str, sample: Any) -> Tensor:
    """Fill ``self`` in place with ``sample(shape)`` (an ndarray) drawn as the factories draw."""
    return update_(self, _fill, name, _random(lambda shape: sample(shape).astype(self.dtype), self.shape, False))


def _continuous(self: Tensor, name: str) -> None:
    if self.dtype.kind != "f":
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {torch_dtype_name(self.dtype)}")


@public(None, top_level=False, inplace=False)
def random_(self: Tensor, from_: int | None = None, to: int | None = None, **kwargs: Any) -> Tensor:
    """Fill with integers uniform on ``[from, to)``: ``random_(from, to)``, ``random_(to)`` or
    ``random_()`` (every integer the dtype holds exactly: ``[0, 2**53]`` for float64, ``[0, max]`` for an
    integer dtype; False/True for bool).

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> x = dg.zeros(1000).random_(3, 5)
    >>> sorted(set(x.tolist()))
    [3.0, 4.0]
    """
    from_ = kwargs.pop("from", from_)
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    _require(self.dtype, "biuf", "random_kernel_cpu")
    if to is None and from_ is not None:  # random_(to)
        from_, to = 0, from_
    low, high = _random_range(self.dtype, from_ or 0, to)
    return _fill_with(self, "random_", lambda shape: _generator[0].integers(low, high, shape))


def _random_range(dtype: np.dtype, from_: int, to: int | None) -> tuple:
    """``[low, high)`` of ``random_`` on ``dtype``, checked against what the dtype holds."""
    if dtype.kind == "b":
        largest = 1
    elif dtype.kind == "f":
        largest = 2 ** (np.finfo(dtype).nmant + 1)
    else:
        largest = int(np.iinfo(dtype).max)
    if to is None:
        return from_, largest + 1
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    smallest = 0 if dtype.kind == "b" else -largest if dtype.kind == "f" else int(np.iinfo(dtype).min)
    if not smallest <= from_ <= largest:
        raise RuntimeError(f"from is out of bounds for {dtype}")
    if not smallest <= to - 1 <= largest:
        raise RuntimeError(f"to - 1 is out of bounds for {dtype}")
    return from_, to


@public(None, top_level=False, inplace=False)
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fill with 0/1 samples, 1 with probability ``p`` (a number, or a Tensor broadcast to this shape).

    >>> import dualgrad as dg
    >>> dg.zeros(3).bernoulli_(1.0)
    tensor([1., 1., 1.])
    """
    _require(self.dtype, "biuf", "bernoulli_scalar_cpu_")
    if isinstance(p, Tensor):
        probs = _values(p)
        if not ((probs >= 0) & (probs <= 1)).all():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        p = p.detach().expand(self.shape)
    else:
        _check_probability("bernoulli_", p)
    with no_grad():
        draws = rand(self.shape) < p
    return update_(self, _fill, "bernoulli_", draws)


@public(None, top_level=False, inplace=False)
def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with exponential samples of rate ``lambd`` (> 0).

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> float(dg.empty(10000).exponential_(2.0).mean()) < 0.6
    True
    """
    _continuous(self, "Exponential")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return _fill_with(self, "exponential_", lambda shape: _generator[0].exponential(1 / lambd, shape))


@public(None, top_level=False, inplace=False)
def geometric_(self: Tensor, p: float, *, generator: Any = None) -> Tensor:
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...), ``0 < p < 1``.

    >>> import dualgrad as dg
    >>> bool((dg.empty(100).geometric_(0.5) >= 1).all())
    True
    """
    _require(self.dtype, "iuf", "geometric_cpu")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    return _fill_with(self, "geometric_", lambda shape: _generator[0].geometric(p, shape))


@public(None, top_level=False, inplace=False)
def log_normal_(self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> Tensor:
    """Fill with ``exp`` of normal samples of ``mean`` and ``std`` (> 0).

    >>> import dualgrad as dg
    >>> bool((dg.empty(100).log_normal_(0.0, 0.5) > 0).all())
    True
    """
    _require(self.dtype, "f", "log_normal_cpu")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return _fill_with(self, "log_normal_", lambda shape: _generator[0].lognormal(mean, std, shape))


@public(None, top_level=False, inplace=False)
def cauchy_(self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with Cauchy samples of ``median`` and scale ``sigma`` (> 0).

    >>> import dualgrad as dg
    >>> _ = dg.manual_seed(0)
    >>> abs(float(dg.empty(10001).cauchy_(3.0).median()) - 3.0) < 0.1
    True
    """
    _continuous(self, "Cauchy")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    return _fill_with(self, "cauchy_", lambda shape: median + sigma * _generator[0].standard_cauchy(shape))


__all__ = exported(__name__)
