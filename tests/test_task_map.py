"""The map that pulls the static model toward its teacher's sentence space, and its cosine calibration.

``ruledex distill`` runs the teacher (torch) to get the targets; these check the numerics on
synthetic vectors, which is what decides whether a regenerated model is right.
"""

from __future__ import annotations

import numpy as np
import pytest

from ruledex.builder.task_map import cosine_calibration, fit_task_map, pairwise_cosines, quantize_global_int8


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_the_map_recovers_a_linear_relation_onto_the_teachers_principal_axes() -> None:
    rng = np.random.default_rng(0)
    static = _unit(rng.normal(size=(400, 8)))
    teacher = static @ rng.normal(size=(8, 12))  # rank 8: its top 8 axes hold everything
    w = fit_task_map(static, teacher, dims=8, ridge=1e-9)
    assert w.shape == (8, 8)
    mapped = static @ w
    # the same geometry as the teacher's (up to the rotation onto its principal axes)
    centred = teacher - teacher.mean(axis=0)
    np.testing.assert_allclose(pairwise_cosines(mapped - mapped.mean(axis=0)), pairwise_cosines(centred), atol=1e-6)


def test_the_map_refuses_mismatched_tasks_and_impossible_dimensions() -> None:
    static, teacher = np.ones((3, 4)), np.ones((2, 6))
    with pytest.raises(ValueError, match="same non-empty tasks"):
        fit_task_map(static, teacher, dims=4)
    with pytest.raises(ValueError, match="dims must be between 1 and the teacher's 6"):
        fit_task_map(np.ones((2, 4)), teacher, dims=7)


def test_the_calibration_puts_mapped_cosines_back_on_the_plain_scale() -> None:
    rng = np.random.default_rng(1)
    plain = rng.uniform(0.0, 0.7, size=5000)
    mapped = (plain - 0.25) / 0.8  # what a space with lower, wider cosines would give
    scale, shift = cosine_calibration(plain, mapped)
    assert scale == pytest.approx(0.8, abs=1e-5) and shift == pytest.approx(0.25, abs=1e-5)
    with pytest.raises(ValueError, match="cannot be calibrated"):
        cosine_calibration(plain, np.full(10, 0.3))


def test_int8_storage_keeps_the_directions_of_mean_pooled_rows() -> None:
    rng = np.random.default_rng(2)
    rows = rng.normal(size=(50, 16)) * rng.uniform(0.1, 3.0, size=(50, 1))
    stored = quantize_global_int8(rows)
    assert stored.dtype == np.int8 and np.abs(stored).max() == 127
    means = np.stack([rows[i : i + 5].mean(axis=0) for i in range(0, 50, 5)])
    stored_means = np.stack([stored[i : i + 5].astype(np.float64).mean(axis=0) for i in range(0, 50, 5)])
    cos = (_unit(means) * _unit(stored_means)).sum(axis=1)
    assert cos.min() > 0.999
