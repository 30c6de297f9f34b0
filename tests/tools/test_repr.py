
"""Tensor printing: ``repr``/``str`` as torch 2.13's, character for character.

Every expected string is torch 2.13's output for the same expression (torch's default dtype set
to float64, dualgrad's default), with ``torch.float32`` written ``float32`` as dualgrad names dtypes.
"""

from __future__ import annotations

import re
from math import inf, nan

import pytest

import dualgrad as dg
from dualgrad import forward_ad as fwad


@pytest.fixture(autouse=True)
def _default_printoptions():
    yield
    dg.set_printoptions(profile="default")


# (print options, expression, torch's repr)
CASES = [
    ({}, 'dg.tensor([1., 2.])', 'tensor([1., 2.])'),
    ({}, 'dg.tensor([0.5, 1.0])', 'tensor([0.5000, 1.0000])'),
    ({}, 'dg.tensor(3.5)', 'tensor(3.5000)'),
    ({}, 'dg.tensor(2.)', 'tensor(2.)'),
    ({}, 'dg.tensor(-0.)', 'tensor(-0.)'),
    ({}, 'dg.tensor(1e10)', 'tensor(1.0000e+10)'),
    ({}, 'dg.tensor([1e10, 1.])', 'tensor([1.0000e+10, 1.0000e+00])'),
    ({}, 'dg.tensor([1e8, 1.])', 'tensor([1.0000e+08, 1.0000e+00])'),
    ({}, 'dg.tensor([1e8])', 'tensor([100000000.])'),
    ({}, 'dg.tensor([1e8 + 1])', 'tensor([1.0000e+08])'),
    ({}, 'dg.tensor([1e9])', 'tensor([1.0000e+09])'),
    ({}, 'dg.tensor([123456789.5])', 'tensor([1.2346e+08])'),
    ({}, 'dg.tensor([1e-5, 1.])', 'tensor([1.0000e-05, 1.0000e+00])'),
    ({}, 'dg.tensor([0.0001])', 'tensor([0.0001])'),
    ({}, 'dg.tensor([0.00001])', 'tensor([1.0000e-05])'),
    ({}, 'dg.tensor([1., 1000.])', 'tensor([   1., 1000.])'),
    ({}, 'dg.tensor([1., 1001.])', 'tensor([1.0000e+00, 1.0010e+03])'),
    ({}, 'dg.tensor([0.5, 500.])', 'tensor([  0.5000, 500.0000])'),
    ({}, 'dg.tensor([0.5, 500.5])', 'tensor([5.0000e-01, 5.0050e+02])'),
    ({}, 'dg.tensor([-1e-5, 3.25, -1e5])', 'tensor([-1.0000e-05,  3.2500e+00, -1.0000e+05])'),
    ({}, 'dg.tensor([nan, 1.])', 'tensor([nan, 1.])'),
    ({}, 'dg.tensor([nan, 1.5])', 'tensor([   nan, 1.5000])'),
    ({}, 'dg.tensor([inf, -inf, nan])', 'tensor([inf, -inf, nan])'),
    ({}, 'dg.tensor([-inf, 1.5])', 'tensor([  -inf, 1.5000])'),
    ({}, 'dg.tensor([inf, 1e10])', 'tensor([       inf, 1.0000e+10])'),
    ({}, 'dg.tensor([0., -0.])', 'tensor([0., -0.])'),
    ({}, 'dg.tensor([-0., 1.])', 'tensor([-0., 1.])'),
    ({}, 'dg.tensor([-0., 1.5])', 'tensor([-0.0000, 1.5000])'),
    ({}, 'dg.zeros(2, 3)',
     'tensor([[0., 0., 0.],\n'
     '        [0., 0., 0.]])'),
    ({}, 'dg.tensor([[-1.5, 2.25], [3., -400.]])',
     'tensor([[  -1.5000,    2.2500],\n'
     '        [   3.0000, -400.0000]])'),
    ({}, 'dg.tensor([[1., -2.], [30., 4.]])',
     'tensor([[ 1., -2.],\n'
     '        [30.,  4.]])'),
    ({}, 'dg.tensor([1, -20, 300])', 'tensor([  1, -20, 300])'),
    ({}, 'dg.tensor([10**12, 1])', 'tensor([1000000000000,             1])'),
    ({}, 'dg.tensor([1, 2], dtype=dg.int32)', 'tensor([1, 2], dtype=int32)'),
    ({}, 'dg.tensor([1, 200], dtype=dg.uint8)', 'tensor([  1, 200], dtype=uint8)'),
    ({}, 'dg.tensor(7)', 'tensor(7)'),
    ({}, 'dg.tensor([True, False])', 'tensor([ True, False])'),
    ({}, 'dg.tensor(True)', 'tensor(True)'),
    ({}, 'dg.tensor([[True], [False]])',
     'tensor([[ True],\n'
     '        [False]])'),
    ({}, 'dg.tensor([0.1, 0.2], dtype=dg.float32)', 'tensor([0.1000, 0.2000], dtype=float32)'),
    ({}, 'dg.tensor([1e-5, 1.], dtype=dg.float32)', 'tensor([1.0000e-05, 1.0000e+00], dtype=float32)'),
    ({}, 'dg.tensor([0.1, 1000.], dtype=dg.float16)', 'tensor([9.9976e-02, 1.0000e+03], dtype=float16)'),
    ({}, 'dg.tensor([65504., 1.], dtype=dg.float16)', 'tensor([6.5504e+04, 1.0000e+00], dtype=float16)'),
    ({}, 'dg.tensor(1 / 3, dtype=dg.float32)', 'tensor(0.3333, dtype=float32)'),
    ({}, 'dg.tensor([1 + 2j, -3.5 - 0.25j])', 'tensor([ 1.0000+2.0000j, -3.5000-0.2500j])'),
    ({}, 'dg.tensor([1 + 0j, 2 + 0j])', 'tensor([1.+0.j, 2.+0.j])'),
    ({}, 'dg.tensor(1 + 2j)', 'tensor(1.+2.j)'),
    ({}, 'dg.tensor([complex(1, -0.0), complex(-0.0, 0.0)])', 'tensor([1.-0.j, -0.+0.j])'),
    ({}, 'dg.tensor([1e10 + 1j, 1 + 1e-6j])', 'tensor([1.0000e+10+1.0000e+00j, 1.0000e+00+1.0000e-06j])'),
    ({}, 'dg.tensor([nan + 1j, 1 + 2.5j])', 'tensor([nan+1.0000j, 1.+2.5000j])'),
    ({}, 'dg.tensor([1 + 2j], dtype=dg.complex64)', 'tensor([1.+2.j], dtype=complex64)'),
    ({}, 'dg.tensor([])', 'tensor([])'),
    ({}, 'dg.zeros(0, 3)', 'tensor([], size=(0, 3))'),
    ({}, 'dg.tensor([], dtype=dg.int64)', 'tensor([], dtype=int64)'),
    ({}, 'dg.zeros(0, dtype=dg.float32)', 'tensor([], dtype=float32)'),
    ({}, 'dg.zeros(2, 0, dtype=dg.bool)', 'tensor([], size=(2, 0), dtype=bool)'),
    ({}, 'dg.zeros(0, dtype=dg.complex128)', 'tensor([], dtype=complex128)'),
    ({}, 'dg.zeros(0, 2, requires_grad=True)', 'tensor([], size=(0, 2), requires_grad=True)'),
    ({}, 'dg.arange(30.) / 7',
     'tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n'
     '        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n'
     '        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n'
     '        3.8571, 4.0000, 4.1429])'),
    ({}, 'dg.arange(100)',
     'tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n'
     '        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n'
     '        36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53,\n'
     '        54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71,\n'
     '        72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89,\n'
     '        90, 91, 92, 93, 94, 95, 96, 97, 98, 99])'),
    ({}, '-dg.arange(40.)',
     'tensor([ -0.,  -1.,  -2.,  -3.,  -4.,  -5.,  -6.,  -7.,  -8.,  -9., -10., -11.,\n'
     '        -12., -13., -14., -15., -16., -17., -18., -19., -20., -21., -22., -23.,\n'
     '        -24., -25., -26., -27., -28., -29., -30., -31., -32., -33., -34., -35.,\n'
     '        -36., -37., -38., -39.])'),
    ({}, '(dg.arange(40.) / 3).reshape(2, 20)',
     'tensor([[ 0.0000,  0.3333,  0.6667,  1.0000,  1.3333,  1.6667,  2.0000,  2.3333,\n'
     '          2.6667,  3.0000,  3.3333,  3.6667,  4.0000,  4.3333,  4.6667,  5.0000,\n'
     '          5.3333,  5.6667,  6.0000,  6.3333],\n'
     '        [ 6.6667,  7.0000,  7.3333,  7.6667,  8.0000,  8.3333,  8.6667,  9.0000,\n'
     '          9.3333,  9.6667, 10.0000, 10.3333, 10.6667, 11.0000, 11.3333, 11.6667,\n'
     '         12.0000, 12.3333, 12.6667, 13.0000]])'),
    ({}, '(dg.arange(24.) / 3).reshape(2, 3, 4)',
     'tensor([[[0.0000, 0.3333, 0.6667, 1.0000],\n'
     '         [1.3333, 1.6667, 2.0000, 2.3333],\n'
     '         [2.6667, 3.0000, 3.3333, 3.6667]],\n'
     '\n'
     '        [[4.0000, 4.3333, 4.6667, 5.0000],\n'
     '         [5.3333, 5.6667, 6.0000, 6.3333],\n'
     '         [6.6667, 7.0000, 7.3333, 7.6667]]])'),
    ({}, 'dg.arange(8.).reshape(2, 2, 2)',
     'tensor([[[0., 1.],\n'
     '         [2., 3.]],\n'
     '\n'
     '        [[4., 5.],\n'
     '         [6., 7.]]])'),
    ({}, 'dg.arange(16.).reshape(2, 2, 2, 2)',
     'tensor([[[[ 0.,  1.],\n'
     '          [ 2.,  3.]],\n'
     '\n'
     '         [[ 4.,  5.],\n'
     '          [ 6.,  7.]]],\n'
     '\n'
     '\n'
     '        [[[ 8.,  9.],\n'
     '          [10., 11.]],\n'
     '\n'
     '         [[12., 13.],\n'
     '          [14., 15.]]]])'),
    ({}, 'dg.arange(20.) * (1 + 1j) / 3',
     'tensor([0.0000+0.0000j, 0.3333+0.3333j, 0.6667+0.6667j, 1.0000+1.0000j,\n'
     '        1.3333+1.3333j, 1.6667+1.6667j, 2.0000+2.0000j, 2.3333+2.3333j,\n'
     '        2.6667+2.6667j, 3.0000+3.0000j, 3.3333+3.3333j, 3.6667+3.6667j,\n'
     '        4.0000+4.0000j, 4.3333+4.3333j, 4.6667+4.6667j, 5.0000+5.0000j,\n'
     '        5.3333+5.3333j, 5.6667+5.6667j, 6.0000+6.0000j, 6.3333+6.3333j])'),
    ({}, 'dg.arange(2000)', 'tensor([   0,    1,    2,  ..., 1997, 1998, 1999])'),
    ({}, 'dg.arange(1001.) / 3', 'tensor([  0.0000,   0.3333,   0.6667,  ..., 332.6667, 333.0000, 333.3333])'),
    ({}, 'dg.arange(1000.)[:12]', 'tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11.])'),
    ({}, 'dg.arange(3000).reshape(30, 100)',
     'tensor([[   0,    1,    2,  ...,   97,   98,   99],\n'
     '        [ 100,  101,  102,  ...,  197,  198,  199],\n'
     '        [ 200,  201,  202,  ...,  297,  298,  299],\n'
     '        ...,\n'
     '        [2700, 2701, 2702,  ..., 2797, 2798, 2799],\n'
     '        [2800, 2801, 2802,  ..., 2897, 2898, 2899],\n'
     '        [2900, 2901, 2902,  ..., 2997, 2998, 2999]])'),
    ({}, 'dg.arange(2000.).reshape(10, 10, 20)',
     'tensor([[[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.7000e+01,\n'
     '          1.8000e+01, 1.9000e+01],\n'
     '         [2.0000e+01, 2.1000e+01, 2.2000e+01,  ..., 3.7000e+01,\n'
     '          3.8000e+01, 3.9000e+01],\n'
     '         [4.0000e+01, 4.1000e+01, 4.2000e+01,  ..., 5.7000e+01,\n'
     '          5.8000e+01, 5.9000e+01],\n'
     '         ...,\n'
     '         [1.4000e+02, 1.4100e+02, 1.4200e+02,  ..., 1.5700e+02,\n'
     '          1.5800e+02, 1.5900e+02],\n'
     '         [1.6000e+02, 1.6100e+02, 1.6200e+02,  ..., 1.7700e+02,\n'
     '          1.7800e+02, 1.7900e+02],\n'
     '         [1.8000e+02, 1.8100e+02, 1.8200e+02,  ..., 1.9700e+02,\n'
     '          1.9800e+02, 1.9900e+02]],\n'
     '\n'
     '        [[2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.1700e+02,\n'
     '          2.1800e+02, 2.1900e+02],\n'
     '         [2.2000e+02, 2.2100e+02, 2.2200e+02,  ..., 2.3700e+02,\n'
     '          2.3800e+02, 2.3900e+02],\n'
     '         [2.4000e+02, 2.4100e+02, 2.4200e+02,  ..., 2.5700e+02,\n'
     '          2.5800e+02, 2.5900e+02],\n'
     '         ...,\n'
     '         [3.4000e+02, 3.4100e+02, 3.4200e+02,  ..., 3.5700e+02,\n'
     '          3.5800e+02, 3.5900e+02],\n'
     '         [3.6000e+02, 3.6100e+02, 3.6200e+02,  ..., 3.7700e+02,\n'
     '          3.7800e+02, 3.7900e+02],\n'
     '         [3.8000e+02, 3.8100e+02, 3.8200e+02,  ..., 3.9700e+02,\n'
     '          3.9800e+02, 3.9900e+02]],\n'
     '\n'
     '        [[4.0000e+02, 4.0100e+02, 4.0200e+02,  ..., 4.1700e+02,\n'
     '          4.1800e+02, 4.1900e+02],\n'
     '         [4.2000e+02, 4.2100e+02, 4.2200e+02,  ..., 4.3700e+02,\n'
     '          4.3800e+02, 4.3900e+02],\n'
     '         [4.4000e+02, 4.4100e+02, 4.4200e+02,  ..., 4.5700e+02,\n'
     '          4.5800e+02, 4.5900e+02],\n'
     '         ...,\n'
     '         [5.4000e+02, 5.4100e+02, 5.4200e+02,  ..., 5.5700e+02,\n'
     '          5.5800e+02, 5.5900e+02],\n'
     '         [5.6000e+02, 5.6100e+02, 5.6200e+02,  ..., 5.7700e+02,\n'
     '          5.7800e+02, 5.7900e+02],\n'
     '         [5.8000e+02, 5.8100e+02, 5.8200e+02,  ..., 5.9700e+02,\n'
     '          5.9800e+02, 5.9900e+02]],\n'
     '\n'
     '        ...,\n'
     '\n'
     '        [[1.4000e+03, 1.4010e+03, 1.4020e+03,  ..., 1.4170e+03,\n'
     '          1.4180e+03, 1.4190e+03],\n'
     '         [1.4200e+03, 1.4210e+03, 1.4220e+03,  ..., 1.4370e+03,\n'
     '          1.4380e+03, 1.4390e+03],\n'
     '         [1.4400e+03, 1.4410e+03, 1.4420e+03,  ..., 1.4570e+03,\n'
     '          1.4580e+03, 1.4590e+03],\n'
     '         ...,\n'
     '         [1.5400e+03, 1.5410e+03, 1.5420e+03,  ..., 1.5570e+03,\n'
     '          1.5580e+03, 1.5590e+03],\n'
     '         [1.5600e+03, 1.5610e+03, 1.5620e+03,  ..., 1.5770e+03,\n'
     '          1.5780e+03, 1.5790e+03],\n'
     '         [1.5800e+03, 1.5810e+03, 1.5820e+03,  ..., 1.5970e+03,\n'
     '          1.5980e+03, 1.5990e+03]],\n'
     '\n'
     '        [[1.6000e+03, 1.6010e+03, 1.6020e+03,  ..., 1.6170e+03,\n'
     '          1.6180e+03, 1.6190e+03],\n'
     '         [1.6200e+03, 1.6210e+03, 1.6220e+03,  ..., 1.6370e+03,\n'
     '          1.6380e+03, 1.6390e+03],\n'
     '         [1.6400e+03, 1.6410e+03, 1.6420e+03,  ..., 1.6570e+03,\n'
     '          1.6580e+03, 1.6590e+03],\n'
     '         ...,\n'
     '         [1.7400e+03, 1.7410e+03, 1.7420e+03,  ..., 1.7570e+03,\n'
     '          1.7580e+03, 1.7590e+03],\n'
     '         [1.7600e+03, 1.7610e+03, 1.7620e+03,  ..., 1.7770e+03,\n'
     '          1.7780e+03, 1.7790e+03],\n'
     '         [1.7800e+03, 1.7810e+03, 1.7820e+03,  ..., 1.7970e+03,\n'
     '          1.7980e+03, 1.7990e+03]],\n'
     '\n'
     '        [[1.8000e+03, 1.8010e+03, 1.8020e+03,  ..., 1.8170e+03,\n'
     '          1.8180e+03, 1.8190e+03],\n'
     '         [1.8200e+03, 1.8210e+03, 1.8220e+03,  ..., 1.8370e+03,\n'
     '          1.8380e+03, 1.8390e+03],\n'
     '         [1.8400e+03, 1.8410e+03, 1.8420e+03,  ..., 1.8570e+03,\n'
     '          1.8580e+03, 1.8590e+03],\n'
     '         ...,\n'
     '         [1.9400e+03, 1.9410e+03, 1.9420e+03,  ..., 1.9570e+03,\n'
     '          1.9580e+03, 1.9590e+03],\n'
     '         [1.9600e+03, 1.9610e+03, 1.9620e+03,  ..., 1.9770e+03,\n'
     '          1.9780e+03, 1.9790e+03],\n'
     '         [1.9800e+03, 1.9810e+03, 1.9820e+03,  ..., 1.9970e+03,\n'
     '          1.9980e+03, 1.9990e+03]]])'),
    ({}, 'dg.arange(2000.).reshape(2, 1000)',
     'tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9700e+02, 9.9800e+02,\n'
     '         9.9900e+02],\n'
     '        [1.0000e+03, 1.0010e+03, 1.0020e+03,  ..., 1.9970e+03, 1.9980e+03,\n'
     '         1.9990e+03]])'),
    ({}, 'dg.arange(1e6, 1e6 + 2000)', 'tensor([1000000., 1000001., 1000002.,  ..., 1001997., 1001998., 1001999.])'),
    ({}, 'dg.tensor([1., 2.], requires_grad=True)', 'tensor([1., 2.], requires_grad=True)'),
    ({}, 'dg.tensor([1., 2.], requires_grad=True) * 2', 'tensor([2., 4.], grad_fn=<MulBackward0>)'),
    ({}, '(dg.tensor([1., 2.], requires_grad=True) * 2).sum()', 'tensor(6., grad_fn=<SumBackward0>)'),
    ({}, 'dg.arange(12., dtype=dg.float32) / 3',
     'tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n'
     '        3.0000, 3.3333, 3.6667], dtype=float32)'),
    ({}, 'dg.arange(10., dtype=dg.float32).requires_grad_() / 3',
     'tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n'
     '        3.0000], dtype=float32, grad_fn=<DivBackward0>)'),
    ({}, '(dg.arange(10., dtype=dg.float32) / 3).requires_grad_()',
     'tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n'
     '        3.0000], dtype=float32, requires_grad=True)'),
    ({}, 'dg.arange(9., dtype=dg.float32).requires_grad_() * 1.5',
     'tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n'
     '        12.0000], dtype=float32, grad_fn=<MulBackward0>)'),
    ({}, 'dg.arange(8., dtype=dg.float32).requires_grad_() * 1.5',
     'tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000],\n'
     '       dtype=float32, grad_fn=<MulBackward0>)'),
    ({'precision': 2}, 'dg.tensor([1.12345, 2.])', 'tensor([1.12, 2.00])'),
    ({'precision': 2}, 'dg.tensor([1e-5, 1.])', 'tensor([1.00e-05, 1.00e+00])'),
    ({'precision': 0}, 'dg.tensor([1.5, 2.25])', 'tensor([2, 2])'),
    ({'threshold': 5}, 'dg.arange(10)', 'tensor([0, 1, 2,  ..., 7, 8, 9])'),
    ({'threshold': 5}, 'dg.arange(10.).reshape(2, 5)',
     'tensor([[0., 1., 2., 3., 4.],\n'
     '        [5., 6., 7., 8., 9.]])'),
    ({'threshold': 5, 'edgeitems': 1}, 'dg.arange(100.).reshape(10, 10)',
     'tensor([[ 0.,  ...,  9.],\n'
     '        ...,\n'
     '        [90.,  ..., 99.]])'),
    ({'edgeitems': 0, 'threshold': 5}, 'dg.arange(10)', 'tensor([...], size=(10,))'),
    ({'edgeitems': 0, 'threshold': 5}, 'dg.arange(100).reshape(10, 10)', 'tensor([...], size=(10, 10))'),
    ({'edgeitems': 0}, 'dg.arange(4)', 'tensor([0, 1, 2, 3], size=(4,))'),
    ({'linewidth': 30}, 'dg.arange(20.) / 3',
     'tensor([0.0000, 0.3333,\n'
     '        0.6667, 1.0000,\n'
     '        1.3333, 1.6667,\n'
     '        2.0000, 2.3333,\n'
     '        2.6667, 3.0000,\n'
     '        3.3333, 3.6667,\n'
     '        4.0000, 4.3333,\n'
     '        4.6667, 5.0000,\n'
     '        5.3333, 5.6667,\n'
     '        6.0000, 6.3333])'),
    ({'linewidth': 30}, 'dg.tensor([1., 2.], dtype=dg.float32, requires_grad=True)',
     'tensor([1., 2.],\n'
     '       dtype=float32,\n'
     '       requires_grad=True)'),
    ({'sci_mode': True}, 'dg.tensor([1.5, 2.])', 'tensor([1.5000e+00, 2.0000e+00])'),
    ({'sci_mode': True}, 'dg.tensor([1., 2.])', 'tensor([1.0000e+00, 2.0000e+00])'),
    ({'sci_mode': True}, 'dg.tensor([0., 0.])', 'tensor([0., 0.])'),
    ({'sci_mode': False}, 'dg.tensor([1e-8, 1e10])', 'tensor([          0.0000, 10000000000.0000])'),
    ({'sci_mode': False}, 'dg.tensor([1e10, 1.])', 'tensor([10000000000.,           1.])'),
    ({'profile': 'short'}, 'dg.tensor([1.12345, 2.])', 'tensor([1.12, 2.00])'),
    ({'profile': 'short', 'threshold': 5}, 'dg.arange(10)', 'tensor([0, 1,  ..., 8, 9])'),
    ({'profile': 'full'}, 'dg.arange(1200)[-3:]', 'tensor([1197, 1198, 1199])'),
]


@pytest.mark.parametrize(("options", "expression", "expected"), CASES, ids=[f"{o}{e}" for o, e, _ in CASES])
def test_repr_is_torchs(options, expression, expected):
    dg.set_printoptions(**options)
    x = eval(expression, {"dg": dg, "nan": nan, "inf": inf})
    assert repr(x) == expected
    assert str(x) == expected


def test_tangent_suffix_inside_a_forward_ad_level():
    with fwad.dual_level():
        x = fwad.make_dual(dg.tensor([1., 2.]), dg.tensor([0.5, 3.]))
        assert repr(x) == "tensor([1., 2.], tangent=tensor([0.5000, 3.0000]))"
        assert repr(x[1:]) == "tensor([2.], tangent=tensor([3.]))"  # a view: its base's tangent, viewed
        assert repr(x * 2) == "tensor([2., 4.], tangent=tensor([1., 6.]))"
        y = fwad.make_dual(dg.arange(6.).reshape(2, 3), dg.ones(2, 3))
        assert repr(y) == ("tensor([[0., 1., 2.],\n"
                           "        [3., 4., 5.]], tangent=tensor([[1., 1., 1.],\n"
                           "        [1., 1., 1.]]))")
        z = fwad.make_dual(dg.arange(10.) / 3, dg.arange(10.) / 7)
        assert repr(z) == (
            "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n"
            "        3.0000],\n"
            "       tangent=tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n"
            "        1.2857]))")
        w = fwad.make_dual(dg.tensor([1., 2.], requires_grad=True), dg.tensor([0.5, 3.]))
        assert repr(w) == "tensor([1., 2.], grad_fn=<ViewBackward0>, tangent=tensor([0.5000, 3.0000]))"
    assert repr(x) == "tensor([1., 2.])"


def test_batched_tensor_inside_vmap():
    shown = []
    dg.vmap(lambda v: shown.append(repr(v)) or v)(dg.arange(6.).reshape(2, 3))
    level = re.fullmatch(r"BatchedTensor\(lvl=(\d+), .*", shown[0], re.S).group(1)  # (levels count up per process)
    assert shown == [f"BatchedTensor(lvl={level}, bdim=0, value=\n"
                     "    tensor([[0., 1., 2.],\n"
                     "            [3., 4., 5.]])\n"
                     ")"]


def test_dtype_suffix_follows_the_default_dtype():
    dg.set_default_dtype(dg.float32)
    try:
        assert repr(dg.tensor([1.5])) == "tensor([1.5000])"
        assert repr(dg.tensor([1.], dtype=dg.float64)) == "tensor([1.], dtype=float64)"
        assert repr(dg.tensor([1j])) == "tensor([0.+1.j])"
        assert repr(dg.tensor([1j], dtype=dg.complex128)) == "tensor([0.+1.j], dtype=complex128)"
        assert repr(dg.zeros(0)) == "tensor([])"
        assert repr(dg.zeros(0, dtype=dg.float64)) == "tensor([], dtype=float64)"
    finally:
        dg.set_default_dtype(dg.float64)


def test_set_printoptions_profiles_and_reset():
    x = dg.tensor([1.12345, 1e-5])
    dg.set_printoptions(precision=2, sci_mode=False)
    assert repr(x) == "tensor([1.12, 0.00])"
    dg.set_printoptions(precision=3)  # a call without sci_mode lets the values choose again, as in torch
    assert repr(x) == "tensor([1.123e+00, 1.000e-05])"
    dg.set_printoptions(profile="short", precision=3)  # the arguments override the profile
    assert repr(dg.arange(10.) / 2) == "tensor([0.000, 0.500, 1.000, 1.500, 2.000, 2.500, 3.000, 3.500, 4.000, 4.500])"
    dg.set_printoptions(profile="unknown")  # ignored, as torch does
    assert repr(dg.tensor([1.5])) == "tensor([1.500])"
    dg.set_printoptions(profile="default")
    assert repr(x) == "tensor([1.1235e+00, 1.0000e-05])"
    assert repr(dg.arange(2000)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
