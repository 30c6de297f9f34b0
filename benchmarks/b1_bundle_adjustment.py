"""B1: bundle adjustment, gradient of the reprojection error through many small per-observation ops.

Each of 400 observations projects one 3-D point through one of 20 cameras (Rodrigues
rotation, perspective division, two-term radial distortion, 11 camera parameters as
in ADBench) with about 40 small ops, and writes its two residuals into a result tensor
by indexed assignment, ``out[j] = ...``. The gradient of ``0.5 * ||out||**2`` is the
Gauss-Newton ``J^T r``. The graph of ~16k ops stays alive until the backward pass:
the shape of workload in which the garbage collector re-walks a large live graph.
The same code runs with ``import torch`` (PyTorch eager); there is no hand-written NumPy.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._harness import Workload

CAMERAS, POINTS, OBSERVATIONS = 20, 100, 400


def _data() -> tuple:
    rng = np.random.default_rng(0)
    cams = np.concatenate([rng.uniform(-0.3, 0.3, (CAMERAS, 3)), rng.standard_normal((CAMERAS, 3)),
                           rng.uniform(1, 2, (CAMERAS, 1)), rng.standard_normal((CAMERAS, 2)) / 10,
                           rng.standard_normal((CAMERAS, 2)) / 100], axis=1)
    points = rng.standard_normal((POINTS, 3)) + np.array([0.0, 0.0, 10.0])
    pairs = np.stack([rng.integers(0, CAMERAS, OBSERVATIONS), rng.integers(0, POINTS, OBSERVATIONS)], 1)
    observed = rng.standard_normal((OBSERVATIONS, 2)) / 10
    return cams, points, pairs, observed


def _objective(lib):  # noqa: ANN001, ANN202 - the library (dualgrad or torch) is passed in
    def cross(a, b):  # noqa: ANN001, ANN202
        return lib.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

    def project(cam, point):  # noqa: ANN001, ANN202
        rotation, center, focal, principal, radial = cam[0:3], cam[3:6], cam[6], cam[7:9], cam[9:11]
        relative = point - center
        theta = (rotation * rotation).sum().sqrt()
        axis = rotation / theta
        cos, sin = theta.cos(), theta.sin()
        rotated = relative * cos + cross(axis, relative) * sin + axis * (axis * relative).sum() * (1 - cos)
        p = rotated[0:2] / rotated[2]
        r2 = (p * p).sum()
        return p * (1 + radial[0] * r2 + radial[1] * r2 * r2) * focal + principal

    def residual_norm(cams, points, pairs, observed):  # noqa: ANN001, ANN202
        out = lib.zeros(OBSERVATIONS, 2, dtype=lib.float64)
        for j, (c, p) in enumerate(pairs):
            out[j] = project(cams[c], points[p]) - observed[j]
        return 0.5 * (out * out).sum()

    return residual_norm


def _builder(lib_name: str) -> Callable:
    def build() -> Callable:
        lib = __import__(lib_name)
        cams, points, pairs, observed = _data()
        cams = lib.tensor(cams, requires_grad=True)
        points = lib.tensor(points, requires_grad=True)
        observed = lib.tensor(observed)
        pairs = pairs.tolist()
        objective = _objective(lib)

        def run() -> tuple:
            grads = lib.autograd.grad(objective(cams, points, pairs, observed), (cams, points))
            return tuple(np.asarray(g.detach().numpy()) for g in grads)

        return run

    return build


def workload() -> Workload:
    """B1 with its goal (eager-speed issue): no slower than PyTorch eager."""
    return Workload(name="B1 bundle adjustment J^T r, 400 obs", builders={"dualgrad": _builder("dualgrad"),
                    "torch": _builder("torch")}, time_goals={"torch": 1.0})
