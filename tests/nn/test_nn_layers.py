"""Layer and functional behaviour beyond the torch parity table: torch's errors for bad shapes and
arguments, training-mode state (BatchNorm's running statistics, Dropout), default initialisations, ``nn.init``
and ``nn.utils``."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import dualgrad as dg
import dualgrad.nn.functional as F
from dualgrad import nn

LAYER_ERRORS = [
    (lambda: nn.Linear(3, 5)(dg.zeros(2, 4)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x4 and 3x5)"),
    (lambda: nn.Linear(3, 5)(dg.zeros(4)), RuntimeError, "mat1 and mat2 shapes cannot be multiplied (1x4 and 3x5)"),
    (lambda: F.linear(dg.zeros(2, 7, 4), dg.zeros(5, 3)), RuntimeError,
     "mat1 and mat2 shapes cannot be multiplied (14x4 and 3x5)"),
    (lambda: nn.Conv2d(3, 2, 3)(dg.zeros(1, 2, 5, 5)), RuntimeError,
     "Given groups=1, weight of size [2, 3, 3, 3], expected input[1, 2, 5, 5] to have 3 channels, but got 2 "
     "channels instead"),
    (lambda: nn.Conv2d(3, 2, 3)(dg.zeros(2, 5, 5)), RuntimeError,
     "Given groups=1, weight of size [2, 3, 3, 3], expected input[1, 2, 5, 5] to have 3 channels"),
    (lambda: nn.Conv2d(3, 2, 3)(dg.zeros(5, 5)), RuntimeError,
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [5, 5]"),
    (lambda: nn.Conv1d(3, 2, 3)(dg.zeros(1, 3, 5, 5)), RuntimeError,
     "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [1, 3, 5, 5]"),
    (lambda: nn.Conv2d(3, 2, 7)(dg.zeros(1, 3, 5, 5)), RuntimeError,
     "Calculated padded input size per channel: (5 x 5). Kernel size: (7 x 7). Kernel size can't be greater "
     "than actual input size"),
    (lambda: F.conv2d(dg.zeros(1, 3, 5, 5), dg.zeros(2, 3, 3, 3), dg.zeros(3)), RuntimeError,
     "Given weight of size [2, 3, 3, 3], expected bias to be 1-dimensional with 2 elements, but got bias of size "
     "[3] instead"),
    (lambda: F.conv1d(dg.zeros(1, 3, 5), dg.zeros(2, 3, 3, 3)), RuntimeError,
     "Expected 4-dimensional input for 4-dimensional weight [2, 3, 3, 3], but got 3-dimensional input of size "
     "[1, 3, 5] instead"),
    (lambda: F.conv2d(dg.zeros(1, 3, 5, 5), dg.zeros(2, 3, 3, 3), padding="same", stride=2), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: nn.Conv2d(3, 2, 3, stride=2, padding="same"), ValueError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: nn.Conv2d(3, 2, 3, groups=2), ValueError, "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(4, 3, 3, groups=2), ValueError, "out_channels must be divisible by groups"),
    (lambda: nn.Conv2d(2, 2, 2, groups=0), ValueError, "groups must be a positive integer"),
    (lambda: nn.Conv2d(3, 2, 3, padding="foo"), ValueError,
     "Invalid padding string 'foo', should be one of {'same', 'valid'}"),
    (lambda: nn.Conv2d(2, 2, 2, padding_mode="foo"), ValueError, "padding_mode must be one of"),
    (lambda: nn.LayerNorm(4)(dg.zeros(2, 3)), RuntimeError,
     "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3]"),
    (lambda: F.layer_norm(dg.zeros(2, 3), (3,), dg.zeros(4)), RuntimeError,
     "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and normalized_shape = "
     "[3]"),
    (lambda: nn.BatchNorm1d(3)(dg.zeros(1, 3)), ValueError,
     "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])"),
    (lambda: nn.BatchNorm1d(3)(dg.zeros(2, 3, 4, 5)), ValueError, "expected 2D or 3D input (got 4D input)"),
    (lambda: nn.BatchNorm2d(3)(dg.zeros(2, 3, 4)), ValueError, "expected 4D input (got 3D input)"),
    (lambda: nn.BatchNorm1d(3)(dg.zeros(2, 4)), RuntimeError, "running_mean should contain 4 elements not 3"),
    (lambda: F.batch_norm(dg.zeros(2, 3), None, None, training=False), RuntimeError,
     "running_mean must be defined in evaluation mode"),
    (lambda: nn.Embedding(3, 2)(dg.tensor([3])), IndexError, "index out of range in self"),
    (lambda: F.embedding(dg.tensor([-1]), dg.zeros(3, 2)), IndexError, "index out of range in self"),
    (lambda: nn.Embedding(3, 2)(dg.tensor([1.0])), RuntimeError,
     "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
     "torch.DoubleTensor instead (while checking arguments for embedding)"),
    (lambda: nn.Embedding(3, 2, padding_idx=3), AssertionError, "Padding_idx must be within num_embeddings"),
    (lambda: nn.Embedding(3, 2, max_norm=1.0)(dg.tensor([0])), NotImplementedError,
     "embedding: max_norm=1.0 is not supported by dualgrad"),
    (lambda: nn.Bilinear(2, 3, 4)(dg.zeros(5, 3), dg.zeros(5, 3)), RuntimeError,
     "bilinear(): input1 size does not match weight size: got 3 but expected 2"),
    (lambda: F.bilinear(dg.zeros(5, 2), dg.zeros(5, 4), dg.zeros(4, 2, 3)), RuntimeError,
     "bilinear(): input2 size does not match weight size: got 4 but expected 3"),
    (lambda: F.bilinear(dg.zeros(5, 2), dg.zeros(4, 3), dg.zeros(4, 2, 3)), RuntimeError,
     "bilinear(): input batch dimensions do not match at dim 0: got 5 and 4"),
    (lambda: nn.MaxPool2d(2)(dg.zeros(1, 1, 1, 1)), RuntimeError,
     "Given input size: (1x1x1). Calculated output size: (1x0x0). Output size is too small"),
    (lambda: nn.MaxPool2d(4, padding=3)(dg.zeros(1, 1, 8, 8)), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=3, kernel_size=4 and dilation=1"),
    (lambda: F.avg_pool2d(dg.zeros(1, 1, 5, 5), 2, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and dilation=1"),
    (lambda: F.max_pool2d(dg.zeros(5, 5), 2), RuntimeError,
     "non-empty 3D or 4D (batch mode) tensor expected for input"),
    (lambda: nn.Dropout(1.5), ValueError, "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: F.dropout(dg.zeros(2), 2.0), ValueError, "dropout probability has to be between 0 and 1, but got 2.0"),
    (lambda: F.gelu(dg.zeros(1), approximate="foo"), RuntimeError, "approximate argument must be either none or tanh."),
    (lambda: F.one_hot(dg.tensor([3]), 2), RuntimeError, "Class values must be smaller than num_classes."),
    (lambda: F.one_hot(dg.tensor([-1])), RuntimeError, "Class values must be non-negative."),
    (lambda: F.one_hot(dg.tensor([1.0])), RuntimeError,
     "one_hot is only applicable to index tensor of type LongTensor."),
    (lambda: F.pad(dg.zeros(1, 3), (3, 0), mode="reflect"), RuntimeError,
     "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (3, 0) "
     "at dimension 1 of input [1, 3]"),
    (lambda: F.pad(dg.zeros(1, 3), (4, 0), mode="circular"), RuntimeError,
     "Padding value causes wrapping around more than once."),
    # losses
    (lambda: nn.CrossEntropyLoss()(dg.zeros(2, 3), dg.tensor([0, 3])), IndexError, "Target 3 is out of bounds."),
    (lambda: nn.NLLLoss()(dg.zeros(2, 3), dg.tensor([0, -1])), IndexError, "Target -1 is out of bounds."),
    (lambda: nn.CrossEntropyLoss()(dg.zeros(2, 3), dg.tensor([0, 1, 1])), ValueError,
     "Expected input batch_size (2) to match target batch_size (3)."),
    (lambda: nn.CrossEntropyLoss()(dg.zeros(2, 3), dg.zeros(2, 4)), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda: F.cross_entropy(dg.zeros(2, 3), dg.zeros(2, 3), ignore_index=1), RuntimeError,
     "ignore_index is not supported for floating point target"),
    (lambda: F.cross_entropy(dg.zeros(2, 3), dg.zeros(2, 3, dtype=dg.int64)), RuntimeError,
     "Expected floating point type for target with class probabilities, got Long"),
    (lambda: F.cross_entropy(dg.zeros(2, 3), dg.tensor([0.0, 1.0])), RuntimeError,
     "expected target dtype to be Long or Byte, but got Double"),
    (lambda: F.cross_entropy(dg.zeros(2, 3), dg.tensor([0, 1]), label_smoothing=1.5), RuntimeError,
     "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    (lambda: F.nll_loss(dg.zeros(2, 3, 4), dg.zeros(2, 4, 3, dtype=dg.int64)), RuntimeError,
     "Expected target size [2, 4], got [2, 4, 3]"),
    (lambda: F.nll_loss(dg.zeros(2, 3), dg.tensor([0, 1]), weight=dg.ones(4)), RuntimeError,
     "weight tensor should be defined either for all 3 classes or no classes but got weight tensor of shape: [4]"),
    (lambda: nn.BCELoss()(dg.zeros(3), dg.zeros(3, 1)), ValueError,
     "Using a target size (torch.Size([3, 1])) that is different to the input size (torch.Size([3])) is "
     "deprecated. Please ensure they have the same size."),
    (lambda: nn.BCELoss()(dg.full((3,), 2.0), dg.zeros(3)), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: nn.BCEWithLogitsLoss()(dg.zeros(3), dg.zeros(3, 1)), ValueError,
     "Target size (torch.Size([3, 1])) must be the same as input size (torch.Size([3]))"),
    (lambda: nn.MSELoss(reduction="foo")(dg.zeros(3), dg.zeros(3)), ValueError,
     "foo is not a valid value for reduction"),
    (lambda: F.smooth_l1_loss(dg.zeros(1), dg.zeros(1), beta=-1), RuntimeError,
     "smooth_l1_loss does not support negative values for beta."),
    (lambda: F.kl_div(dg.zeros(2), dg.zeros(2), reduction="foo"), ValueError, "foo is not a valid value for reduction"),
    (lambda: F.adaptive_avg_pool2d(dg.zeros(5), 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [5]"),
]


@pytest.mark.parametrize("call, error, message", LAYER_ERRORS, ids=[m[:60] for _, _, m in LAYER_ERRORS])
def test_errors_are_torchs(call, error, message):
    with pytest.raises(error, match=re.escape(message)):
        call()


def test_size_mismatch_of_a_regression_loss_warns_as_torch():
    with pytest.warns(UserWarning, match=re.escape("Using a target size (torch.Size([1])) that is different to the "
                                                   "input size (torch.Size([3])). This will likely lead to incorrect "
                                                   "results due to broadcasting.")):
        nn.MSELoss()(dg.zeros(3), dg.zeros(1))


def test_kl_div_mean_warns_as_torch():
    with pytest.warns(UserWarning, match=re.escape("reduction: 'mean' divides the total loss by both the batch size "
                                                   "and the support size.'batchmean' divides only by the batch size")):
        F.kl_div(dg.zeros(2), dg.ones(2))


def test_implicit_softmax_dim_warns_as_torch():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        out = nn.Softmax()(dg.zeros(2, 3))
    np.testing.assert_allclose(out.numpy(), np.full((2, 3), 1 / 3))


def test_batch_norm_running_statistics():
    """Momentum 0.1 and a cumulative average (momentum=None), numbers from torch 2.13."""
    x1 = dg.arange(8.0).reshape(4, 2)
    x2 = x1 ** 2
    bn = nn.BatchNorm1d(2, momentum=None)
    bn(x1), bn(x2)
    np.testing.assert_allclose(bn.running_mean.numpy(), [8.5, 12.5])
    np.testing.assert_allclose(bn.running_var.numpy(), [134.0, 227.33333333333334])
    assert bn.num_batches_tracked.item() == 2
    bn = nn.BatchNorm1d(2)
    bn(x1)
    np.testing.assert_allclose(bn.running_mean.numpy(), [0.3, 0.4])
    np.testing.assert_allclose(bn.running_var.numpy(), [0.9 + 0.1 * 20 / 3, 0.9 + 0.1 * 20 / 3])
    bn.eval()
    before = bn.running_mean.tolist()
    out = bn(x1)
    assert bn.running_mean.tolist() == before and bn.num_batches_tracked.item() == 1
    np.testing.assert_allclose(out.detach().numpy(), ((x1 - bn.running_mean) / dg.sqrt(bn.running_var + 1e-5)).numpy())
    untracked = nn.BatchNorm1d(2, track_running_stats=False).eval()
    assert untracked.running_mean is None
    np.testing.assert_allclose(untracked(x1).detach().numpy().mean(0), [0.0, 0.0], atol=1e-12)


def test_dropout_in_training_and_evaluation():
    dg.manual_seed(0)
    drop = nn.Dropout(0.25)
    x = dg.ones(20000, requires_grad=True)
    y = drop(x)
    values = set(np.unique(y.detach().numpy()).tolist())
    assert values == {0.0, 4 / 3}
    assert abs((y.detach().numpy() == 0).mean() - 0.25) < 0.02
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())  # the same mask scales the gradient
    assert drop.eval()(x) is x
    assert F.dropout(x, 0.0) is x and F.dropout(x, 1.0).sum().item() == 0.0
    dg.manual_seed(3)
    a = F.dropout(dg.ones(10))
    dg.manual_seed(3)
    assert F.dropout(dg.ones(10)).tolist() == a.tolist()


def test_embedding_padding_row_starts_at_zero_and_gets_no_gradient():
    table = nn.Embedding(5, 3, padding_idx=-1)
    assert table.padding_idx == 4 and table.weight[4].tolist() == [0.0, 0.0, 0.0]
    table(dg.tensor([[4, 1, 4]])).sum().backward()
    assert table.weight.grad[4].tolist() == [0.0, 0.0, 0.0] and table.weight.grad[1].tolist() == [1.0, 1.0, 1.0]
    frozen = nn.Embedding.from_pretrained(dg.eye(3))
    assert not frozen.weight.requires_grad and frozen(dg.tensor([1])).tolist() == [[0.0, 1.0, 0.0]]


def test_max_pool_return_indices_are_torchs():
    values, indices = F.max_pool2d(dg.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True, padding=1)
    assert indices.tolist() == [[[[0, 2, 3], [8, 10, 11], [12, 14, 15]]]]
    assert values.tolist() == [[[[0.0, 2.0, 3.0], [8.0, 10.0, 11.0], [12.0, 14.0, 15.0]]]]
    pool = nn.MaxPool2d(2, return_indices=True)
    assert pool(dg.arange(16.0).reshape(1, 4, 4))[1].tolist() == [[[5, 7], [13, 15]]]


def test_activations_have_finite_gradients_at_extremes():
    x = dg.tensor([-1000.0, -30.0, 0.0, 30.0, 1000.0], requires_grad=True)
    for f in (F.elu, F.gelu, F.silu, F.softplus, F.logsigmoid, F.leaky_relu, F.selu):
        (g,) = dg.grad(f(x).sum(), x)
        assert np.isfinite(g.numpy()).all(), f.__name__


def test_float32_layers_keep_float32():
    net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(8, 2), nn.LayerNorm(2)).float()
    out = net(dg.ones(3, 1, 4, 4, dtype=dg.float32))
    assert out.dtype == dg.float32
    loss = F.cross_entropy(out, dg.tensor([0, 1, 1]))
    assert loss.dtype == dg.float32
    loss.backward()
    assert net[0].weight.grad.dtype == dg.float32


def test_dtype_keyword_of_layers():
    assert nn.Linear(2, 2, dtype=dg.float32).weight.dtype == dg.float32
    assert nn.Conv1d(1, 1, 2, device="cpu").weight.dtype == dg.float64


# -- default initialisation -----------------------------------------------------------------------------
def test_default_initialisations_follow_torchs_bounds():
    dg.manual_seed(0)
    linear = nn.Linear(400, 30)
    bound = 1 / math.sqrt(400)  # kaiming_uniform_(a=sqrt(5)): gain sqrt(1/3), bound gain * sqrt(3 / fan_in)
    w = linear.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.abs(linear.bias.detach().numpy()).max() <= bound
    conv = nn.Conv2d(4, 8, 3, groups=2)
    fan_in = 2 * 9
    assert np.abs(conv.weight.detach().numpy()).max() <= 1 / math.sqrt(fan_in)
    assert np.abs(conv.bias.detach().numpy()).max() <= 1 / math.sqrt(fan_in)
    bilinear = nn.Bilinear(25, 3, 4)
    assert np.abs(bilinear.weight.detach().numpy()).max() <= 0.2
    emb = nn.Embedding(2000, 10)
    assert abs(emb.weight.detach().numpy().std() - 1.0) < 0.05
    norm = nn.LayerNorm(3)
    assert norm.weight.tolist() == [1.0, 1.0, 1.0] and norm.bias.tolist() == [0.0, 0.0, 0.0]


# -- nn.init ---------------------------------------------------------------------------------------------
def test_calculate_gain():
    init = nn.init
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1 and init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("relu") == math.sqrt(2) and init.calculate_gain("selu") == 0.75
    assert init.calculate_gain("leaky_relu") == 1.4141428569978354
    assert init.calculate_gain("leaky_relu", 0.2) == 1.3867504905630728
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope x not a valid number"):
        init.calculate_gain("leaky_relu", "x")


@pytest.mark.parametrize("fill, shape, bound_or_std, kind", [
    (lambda t: nn.init.xavier_uniform_(t, gain=2.0), (300, 200), 2.0 * math.sqrt(6 / 500), "uniform"),
    (lambda t: nn.init.xavier_normal_(t), (300, 200), math.sqrt(2 / 500), "normal"),
    (lambda t: nn.init.kaiming_uniform_(t, a=0.2), (200, 30, 3), math.sqrt(2 / 1.04) * math.sqrt(3 / 90), "uniform"),
    (lambda t: nn.init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"), (300, 200),
     math.sqrt(2) * math.sqrt(3 / 300), "uniform"),
    (lambda t: nn.init.kaiming_normal_(t, nonlinearity="relu"), (300, 200), math.sqrt(2 / 200), "normal"),
    (lambda t: nn.init.uniform_(t, -0.5, 0.5), (300, 200), 0.5, "uniform"),
    (lambda t: nn.init.normal_(t, 0.0, 0.3), (300, 200), 0.3, "normal"),
])
def test_random_initialisations_have_torchs_distributions(fill, shape, bound_or_std, kind):
    dg.manual_seed(0)
    t = dg.empty(*shape, requires_grad=True)
    assert fill(t) is t and t.is_leaf and t.grad_fn is None
    values = t.detach().numpy()
    if kind == "uniform":
        assert np.abs(values).max() <= bound_or_std and np.abs(values).max() > 0.99 * bound_or_std
        assert abs(values.std() - bound_or_std / math.sqrt(3)) < 0.02 * bound_or_std
    else:
        assert abs(values.std() - bound_or_std) < 0.02 * bound_or_std and abs(values.mean()) < 0.02 * bound_or_std


def test_deterministic_initialisations():
    init = nn.init
    assert init.constant_(dg.empty(2), 0.5).tolist() == [0.5, 0.5]
    assert init.ones_(dg.empty(1, 2)).tolist() == [[1.0, 1.0]] and init.zeros_(dg.ones(2)).tolist() == [0.0, 0.0]
    assert init.eye_(dg.empty(2, 3)).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    for shape in [(3, 5), (5, 3), (4, 2, 2)]:
        q = init.orthogonal_(dg.empty(*shape), gain=2.0).reshape(shape[0], -1)
        small = q @ q.mT if shape[0] <= q.shape[1] else q.mT @ q
        np.testing.assert_allclose(small.numpy(), 4 * np.eye(small.shape[0]), atol=1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda: nn.init.xavier_uniform_(dg.zeros(3)),
     "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"),
    (lambda: nn.init.kaiming_uniform_(dg.zeros(3, 3), mode="foo"),
     "Mode foo not supported, please use one of ['fan_in', 'fan_out']"),
    (lambda: nn.init.orthogonal_(dg.zeros(3)), "Only tensors with 2 or more dimensions are supported"),
    (lambda: nn.init.eye_(dg.zeros(3, 3, 3)), "Only tensors with 2 dimensions are supported"),
])
def test_init_errors_are_torchs(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_kaiming_of_an_empty_tensor_warns_and_does_nothing():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        assert nn.init.kaiming_uniform_(dg.empty(0, 3)).shape == (0, 3)


# -- nn.utils --------------------------------------------------------------------------------------------
def test_clip_grad_norm():
    a, b = nn.Parameter(dg.zeros(2)), nn.Parameter(dg.zeros(1))
    a.grad, b.grad = dg.tensor([3.0, 0.0]), dg.tensor([4.0])
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == 5.0
    np.testing.assert_allclose(np.concatenate([a.grad.numpy(), b.grad.numpy()]), [0.6, 0.0, 0.8], rtol=1e-6)
    a.grad = dg.tensor([3.0, -4.0])
    assert nn.utils.clip_grad_norm_(a, 10.0).item() == 5.0 and a.grad.tolist() == [3.0, -4.0]
    assert nn.utils.clip_grad_norm_([a], 2.0, norm_type="inf").item() == 4.0
    np.testing.assert_allclose(a.grad.numpy(), [1.5, -2.0], rtol=1e-6)
    assert nn.utils.clip_grad_norm_([nn.Parameter(dg.zeros(1))], 1.0).item() == 0.0
    a.grad = dg.tensor([math.inf, 0.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from `parameters` is "
                                           "non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(a, 1.0, error_if_nonfinite=True)
    assert a.grad.tolist()[0] == math.inf


def test_clip_grad_value_and_parameter_vectors():
    a = nn.Parameter(dg.zeros(3))
    a.grad = dg.tensor([-2.0, 0.5, 3.0])
    nn.utils.clip_grad_value_([a], 1.0)
    assert a.grad.tolist() == [-1.0, 0.5, 1.0]
    net = nn.Linear(2, 2)
    vec = nn.utils.parameters_to_vector(net.parameters())
    assert vec.shape == (6,) and vec.grad_fn is not None
    new = dg.arange(6.0)
    nn.utils.vector_to_parameters(new, net.parameters())
    assert net.weight.tolist() == [[0.0, 1.0], [2.0, 3.0]] and net.bias.tolist() == [4.0, 5.0]
    assert isinstance(net.weight, nn.Parameter)
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1], [])


def test_a_small_training_loop_reduces_the_loss():
    """A physics-informed-network style fit with plain gradient steps (optimizers are dualgrad.optim's)."""
    dg.manual_seed(0)
    model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
    x = dg.linspace(-1, 1, 32).reshape(-1, 1)
    y = dg.sin(3 * x)
    losses = []
    for _ in range(200):
        model.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        with dg.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
        losses.append(loss.item())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert losses[-1] < 0.2 * losses[0]
