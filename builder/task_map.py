"""Map a distilled static model onto its teacher's sentence space, fitted on coding tasks.

A static model is the mean of per-token vectors, each distilled from the teacher on that token
alone: it never saw how the teacher reads a whole sentence. A linear map ``W`` fitted by ridge
regression from the static vectors of the training tasks (``builder/data/tasks.jsonl``) to the
teacher's own embeddings of them, projected onto the teacher's top principal axes, pulls the
static space toward the teacher's. Because pooling is a (weighted) mean, mapping every token row
(``E @ W``) maps every text's vector the same way, so the reader still takes a plain mean.

Ranking rules by meaning alone rose from nDCG@10 0.707 to 0.752 (bundled set) and from 0.609 to
0.680 (Cursor corpus) with it; docs/relevance.md has the whole measurement.

The mapped space has its own cosine scale (task-to-text cosines come out lower and wider), while
the reader's constants (when_to_apply's ramp, the semantic floor, ranking weights) were set on the
plain model's. :func:`cosine_calibration` fits the affine map that puts one scale on the other; the
model stores it and the reader applies it (``EncoderParams.calibrate``). Pure numpy: the teacher
runs in ``distill.py``.
"""

from __future__ import annotations

import numpy as np

TASK_MAP_RIDGE = 0.1
"""Ridge penalty of the map (on unit task vectors). 0.01 and 1.0 ranked the labeled sets alike."""

CALIBRATION_QUANTILES = (50.0, 99.0)
"""Percentiles of pairwise task cosines matched between the plain and the mapped model."""


def fit_task_map(static: np.ndarray, teacher: np.ndarray, dims: int, ridge: float = TASK_MAP_RIDGE) -> np.ndarray:
    """The ``(static dim, dims)`` map from static task vectors to the teacher's top ``dims`` principal axes.

    Args:
        static: Unit static vectors of the tasks, ``(n, d)``.
        teacher: The teacher's unit embeddings of the same tasks, ``(n, t)``.
        dims: Output dimensions (at most ``t``): the model keeps its size when equal to ``d``.
        ridge: L2 penalty of the least-squares fit.

    Raises:
        ValueError: If the two sets differ in length or ``dims`` is out of range.
    """
    if len(static) != len(teacher) or not len(static):
        raise ValueError(f"need the same non-empty tasks on both sides, got {len(static)} and {len(teacher)}")
    if not 1 <= dims <= teacher.shape[1]:
        raise ValueError(f"dims must be between 1 and the teacher's {teacher.shape[1]} dimensions, not {dims}")
    x = np.asarray(static, dtype=np.float64)
    y = np.asarray(teacher, dtype=np.float64)
    _, _, axes = np.linalg.svd(y - y.mean(axis=0), full_matrices=False)
    axes = axes[:dims] * np.where(axes[:dims].sum(axis=1, keepdims=True) < 0, -1.0, 1.0)  # a fixed sign per axis
    target = y @ axes.T
    return np.linalg.solve(x.T @ x + ridge * np.eye(x.shape[1]), x.T @ target)


def pairwise_cosines(vectors: np.ndarray) -> np.ndarray:
    """Cosines of every pair of distinct rows (rows are made unit length first)."""
    v = np.asarray(vectors, dtype=np.float64)
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    return (v @ v.T)[np.triu_indices(len(v), k=1)]


def cosine_calibration(plain: np.ndarray, mapped: np.ndarray) -> tuple[float, float]:
    """``(scale, shift)`` with ``scale * mapped + shift`` matching ``plain`` at the median and 99th percentile.

    Args:
        plain: Pairwise cosines of some tasks under the plain model.
        mapped: Pairwise cosines of the same tasks under the mapped model.
    """
    lo_p, hi_p = np.percentile(plain, CALIBRATION_QUANTILES)
    lo_m, hi_m = np.percentile(mapped, CALIBRATION_QUANTILES)
    if hi_m - lo_m <= 0:
        raise ValueError("the mapped model gives every pair of tasks the same cosine; it cannot be calibrated")
    scale = (hi_p - lo_p) / (hi_m - lo_m)
    return round(float(scale), 6), round(float(lo_p - scale * lo_m), 6)


def quantize_global_int8(matrix: np.ndarray) -> np.ndarray:
    """int8 rows with one global scale (max abs / 127), dropped: cosines of normalised means are unchanged.

    model2vec's own int8 quantisation does the same through float16; this one rounds from float64.
    """
    peak = float(np.abs(matrix).max()) or 1.0
    return np.clip(np.rint(np.asarray(matrix, dtype=np.float64) * (127.0 / peak)), -127, 127).astype(np.int8)
