"""Rank candidate directives: named weights, one score function, a breakdown per directive.

``score`` is pure numpy: each signal is a value in [0, 1] per candidate, multiplied by its weight
in :class:`RankWeights`; the total and every part are returned so diagnostics can show why a
directive ranked where it did. Ties break on directive id, so the same query always gives the
same order.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class RankWeights:
    """How much each signal counts; all signals are in [0, 1].

    The design's seed weights, moved where ``ruledex eval`` showed a gain on both labeled sets.
    """

    authority: float = 5.0
    """The directive's rule is authoritative for a detected topic. Lowered from 10 with the whole-rule
    keyword index (see ``lexical``)."""
    when_to_apply: float = 8.0
    """The task matches one of the rule's when_to_apply situations (by meaning or by words)."""
    layer: float = 7.0
    """The directive applies to the detected layer (1) or to every layer (0.5)."""
    topic: float = 5.0
    """Share of the detected topics the directive covers."""
    severity: float = 4.0
    """MUST 1.0, SHOULD 0.6, MAY 0.3 (vocab.SEVERITY_BOOST)."""
    semantic: float = 6.0
    """Cosine similarity of task and directive embeddings (raised from 3 with ``lexical``)."""
    lexical: float = 20.0
    """BM25 relative to the best candidate's, half directive and half its whole rule document
    (features.py). Raised from 6 by ``ruledex eval`` on both labeled sets (corpus nDCG@10 0.693 ->
    0.805); with the whole-rule index (description, when_to_apply, examples, file name, code) and
    authority 5 / semantic 6: bundled 0.782 -> 0.816, corpus 0.805 -> 0.820."""
    file_match: float = 10.0
    """The directive's rule is tied (by globs) to a file the user is editing."""
    always_apply: float = 4.0
    """The directive's rule says it always applies (Cursor's alwaysApply)."""


DEFAULT_WEIGHTS = RankWeights()

FEATURES = (
    "authority",
    "when_to_apply",
    "layer",
    "topic",
    "severity",
    "semantic",
    "lexical",
    "file_match",
    "always_apply",
)
BREAKDOWN_NAMES = {
    "authority": "authority",
    "when_to_apply": "whenToApply",
    "layer": "layerMatch",
    "topic": "topicOverlap",
    "severity": "severityBoost",
    "semantic": "semanticSim",
    "lexical": "lexical",
    "file_match": "fileMatch",
    "always_apply": "alwaysApply",
}
"""Feature name -> the key used in diagnostics' score breakdown."""


@dataclass(frozen=True)
class ScoreBreakdown:
    """Weighted contribution of every feature per candidate, and their total."""

    parts: dict[str, np.ndarray]
    total: np.ndarray

    def row(self, i: int) -> dict[str, float]:
        """One candidate's breakdown with diagnostics' names."""
        out = {BREAKDOWN_NAMES[name]: round(float(values[i]), 3) for name, values in self.parts.items()}
        out["total"] = round(float(self.total[i]), 3)
        return out


@functools.lru_cache(maxsize=16)
def _weight_column(weights: RankWeights) -> np.ndarray:
    w = asdict(weights)
    return np.array([[w[name]] for name in FEATURES], np.float32)


def score(features: dict[str, np.ndarray], weights: RankWeights = DEFAULT_WEIGHTS) -> ScoreBreakdown:
    """Weighted sum of the features (each an array in [0, 1], one entry per candidate)."""
    stacked = np.clip(np.stack([np.asarray(features[name], np.float32) for name in FEATURES]), 0.0, 1.0)
    weighted = stacked * _weight_column(weights)  # one clip and one product for all signals
    parts = dict(zip(FEATURES, weighted, strict=True))
    return ScoreBreakdown(parts, np.sum(weighted, axis=0).astype(np.float32))


def order(total: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions sorted by descending score, ties by ascending directive id."""
    return np.lexsort((ids, -total))


def near_duplicates(vectors: np.ndarray, threshold: float = 0.93) -> list[int]:
    """Positions (in the given order) that repeat an earlier row: cosine at or above threshold."""
    dropped: list[int] = []
    kept: list[int] = []
    gram = vectors @ vectors.T  # one product instead of one per row
    if not np.any(np.triu(gram, 1) >= threshold):
        return dropped  # the usual case: no pair is that close
    empty = ~np.any(vectors, axis=1)
    for i in range(len(vectors)):
        if empty[i]:
            kept.append(i)
        elif kept and float(gram[kept, i].max()) >= threshold:
            dropped.append(i)
        else:
            kept.append(i)
    return dropped
