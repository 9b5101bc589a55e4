"""The vectorised kernels of a query agree with plain reference implementations.

They were rewritten for speed (issue #7); a user relies on the same candidates, the same blended
scores and the same duplicate removal whatever the implementation, ties included.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from ruledex.reader.features import rule_blend
from ruledex.reader.rank import near_duplicates
from ruledex.reader.retrieve import _best_of_rules, top_k_set


def _reference_top(scores: np.ndarray, k: int) -> list[int]:
    positive = [i for i in range(len(scores)) if scores[i] > 0]
    return sorted(sorted(positive, key=lambda i: (-scores[i], i))[:k])


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("k", [1, 3, 10, 50])
def test_top_k_set_keeps_the_k_best_with_lowest_ids_winning_ties(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.choice(np.array([0.0, 0.25, 0.5, 0.75, 1.0], np.float32), size=40)  # many ties and zeros
    expected = _reference_top(scores, k)
    assert top_k_set(scores, k).tolist() == expected


def test_top_k_set_with_fewer_positive_scores_than_k() -> None:
    scores = np.array([0.0, 2.0, 0.0, 1.0], np.float32)
    assert top_k_set(scores, 10).tolist() == [1, 3]
    assert top_k_set(np.zeros(5, np.float32), 3).tolist() == []


def _reference_blend(values: np.ndarray, rules: np.ndarray, share: float = 0.4) -> np.ndarray:
    out = []
    for v, r in zip(values, rules, strict=True):
        best = sorted((float(x) for x, rr in zip(values, rules, strict=True) if rr == r), reverse=True)[:3]
        out.append((1 - share) * float(v) + share * sum(best) / len(best))
    return np.array(out)


@pytest.mark.parametrize("seed", range(10))
def test_rule_blend_mixes_each_value_with_its_rules_best_three(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rules = np.sort(rng.integers(0, 6, size=30))  # rules of 1 to many candidates
    values = rng.choice(np.array([0.0, 0.2, 0.5, 0.9], np.float32), size=30)
    assert np.allclose(rule_blend(values, rules), _reference_blend(values, rules), atol=1e-6)


def test_rule_blend_of_a_lone_candidate_is_its_own_value() -> None:
    assert rule_blend(np.array([0.5], np.float32), np.array([7])).tolist() == [0.5]


def test_near_duplicates_drops_later_repeats_and_keeps_empty_rows() -> None:
    a = np.array([1.0, 0.0, 0.0], np.float32)
    b = np.array([0.0, 1.0, 0.0], np.float32)
    vectors = np.stack([a, b, a, np.zeros(3, np.float32), np.zeros(3, np.float32), b * 0.999])
    assert near_duplicates(vectors) == [2, 5]
    assert near_duplicates(np.stack([a, b])) == []


def test_best_of_rules_takes_each_rules_closest_directives_ties_by_position() -> None:
    # rules 0..3 own directives [0,4) [4,5) [5,5) [5,9)
    index = SimpleNamespace(rule_bounds=(np.array([0, 4, 5, 5]), np.array([4, 5, 5, 9])))
    cosine = np.array([0.1, 0.9, 0.5, 0.9, 0.3, 0.2, 0.2, 0.8, 0.2], np.float32)
    picked = _best_of_rules(index, np.array([0, 1, 2, 3]), cosine, k=2)
    assert sorted(picked.tolist()) == [1, 3, 4, 5, 7]
    assert _best_of_rules(index, np.array([2]), cosine).tolist() == []
