"""0-d tensors take ``dim`` 0 and -1 wherever torch does (one range check: ``base.checks.normalize_dim``).

Expected values and messages are torch 2.13's, pinned here.
"""

import pytest

import dualgrad as dg
from dualgrad.base.checks import normalize_dim
from dualgrad.ops._axes import normalize_axes, normalize_axis

REDUCTIONS = {
    "sum": lambda x, d: x.sum(d),
    "sum_keepdim": lambda x, d: x.sum(d, keepdim=True),
    "sum_tuple": lambda x, d: x.sum((d,)),
    "mean": lambda x, d: x.mean(d),
    "prod": lambda x, d: x.prod(d),
    "amax": lambda x, d: x.amax(d),
    "amin": lambda x, d: x.amin(d),
    "logsumexp": lambda x, d: x.logsumexp(d),
    "norm": lambda x, d: x.norm(dim=d),
    "softmax": lambda x, d: x.softmax(d),
    "log_softmax": lambda x, d: x.log_softmax(d),
    "cumsum": lambda x, d: x.cumsum(d),
    "cumprod": lambda x, d: x.cumprod(d),
    "logcumsumexp": lambda x, d: x.logcumsumexp(d),
    "max": lambda x, d: x.max(d).values,
    "min": lambda x, d: x.min(d).values,
    "median": lambda x, d: x.median(d).values,
    "sort": lambda x, d: x.sort(d).values,
    "topk": lambda x, d: x.topk(1, d).values,
    "kthvalue": lambda x, d: x.kthvalue(1, d).values,
    "cummax": lambda x, d: x.cummax(d).values,
    "cummin": lambda x, d: x.cummin(d).values,
    "flip": lambda x, d: x.flip(d),
    "squeeze": lambda x, d: x.squeeze(d),
    "transpose": lambda x, d: x.transpose(d, 0),
    "movedim": lambda x, d: x.movedim(d, 0),
    "nansum": lambda x, d: dg.nansum(x, d),
    "nanmean": lambda x, d: dg.nanmean(x, d),
    "index_select": lambda x, d: x.index_select(d, dg.tensor([0])),
    "gather": lambda x, d: x.gather(d, dg.tensor(0)),
}


@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_zero_dim_tensor_takes_dim_0_and_minus_1(name, dim):
    x = dg.tensor(2.0, requires_grad=True)
    out = REDUCTIONS[name](x, dim)
    assert out.shape == () and out.item() == pytest.approx(0.0 if name == "log_softmax" else 1.0 if name == "softmax"
                                                           else 2.0)
    out.backward()
    assert x.grad.shape == ()


@pytest.mark.parametrize("dim", [0, -1])
def test_zero_dim_index_results(dim):
    x = dg.tensor(2.0)
    assert x.argmax(dim).item() == 0 and x.argmin(dim).item() == 0
    assert x.max(dim).indices.item() == 0 and x.sort(dim).indices.item() == 0
    assert x.argsort(dim=dim).item() == 0
    assert x.all(dim).item() and x.any(dim).item()
    assert dg.count_nonzero(x, dim).item() == 1
    assert x.unsqueeze(dim).shape == (1,)
    assert x.flatten(dim).shape == (1,)


@pytest.mark.parametrize("dim", [1, -2])
@pytest.mark.parametrize("call", [
    lambda x, d: x.sum(d), lambda x, d: x.softmax(d), lambda x, d: x.cumsum(d), lambda x, d: x.flatten(d),
    lambda x, d: x.sort(d), lambda x, d: x.argsort(dim=d), lambda x, d: x.topk(1, d),
    lambda x, d: x.gather(d, dg.tensor(0)),
    lambda x, d: x.transpose(d, 0), lambda x, d: x.unsqueeze(d),
])
def test_zero_dim_tensor_refuses_other_dims(call, dim):
    message = rf"Dimension out of range \(expected to be in range of \[-1, 0\], but got {dim}\)"
    with pytest.raises(IndexError, match=message):
        call(dg.tensor(2.0), dim)


@pytest.mark.parametrize("dim", [0, -1])
def test_zero_dim_tensor_cannot_be_split_or_narrowed(dim):
    x = dg.tensor(2.0)
    with pytest.raises(RuntimeError, match="split expects at least a 1-dimensional tensor"):
        x.split(1, dim)
    with pytest.raises(RuntimeError, match="chunk expects at least a 1-dimensional tensor"):
        x.chunk(1, dim)
    with pytest.raises(RuntimeError, match=r"narrow\(\) cannot be applied to a 0-dim tensor"):
        x.narrow(dim, 0, 1)
    for call in (lambda: x.roll(1, dim), lambda: x.size(dim), lambda: x.stride(dim)):
        with pytest.raises(IndexError, match=f"^Dimension specified as {dim} but tensor has no dimensions"):
            call()
    with pytest.raises(RuntimeError, match=r"index_select\(\): Index to scalar can have only 1 value, got 2"):
        x.index_select(dim, dg.tensor([0, 0]))


def test_one_range_check():
    assert normalize_axis is normalize_dim
    assert [normalize_dim(d, 0) for d in (0, -1)] == [0, 0]
    assert normalize_axes(-1, 0) == () and normalize_axes(None, 0) is None and normalize_axes((0, -1), 2) == (0, 1)
    with pytest.raises(IndexError, match=r"^sum: Dimension out of range \(expected to be in range of \[-2, 1\]"):
        normalize_dim(2, 2, "sum")
    with pytest.raises(IndexError, match=r"^Dimension out of range"):
        normalize_dim(-2, 0)
