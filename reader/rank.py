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

    The design's seed weights (authority 10, when-to-apply 8, layer 7, topic 5, severity 4,
    semantic 3) were moved where ``ruledex eval`` showed a gain. The defaults below were chosen by
    coordinate search on the even lines of both labeled sets and checked on the odd lines (held
    out); an index whose rules declare their own topics ranks with :data:`DECLARED_WEIGHTS` instead
    (:data:`DECLARED_RANKING`, :func:`ranking_for`). See docs/relevance.md for the figures and how to reproduce them.
    """

    authority: float = 4.0
    """The directive's rule is authoritative for a detected topic."""
    when_to_apply: float = 8.0
    """The task matches one of the rule's when_to_apply situations (by meaning or by words)."""
    layer: float = 2.0
    """The directive applies to the detected layer (1) or to every layer (0.5). Low: the strict
    filter already removes other layers when detection is confident, and a guessed layer misleads."""
    topic: float = 5.0
    """Share of the detected topics the directive covers."""
    severity: float = 2.0
    """MUST 1.0, SHOULD 0.6, MAY 0.3 (vocab.SEVERITY_BOOST). Kept low on purpose: it orders equally
    relevant directives, while relevance decides; the block still shows MUST first and always keeps
    the top three MUST directives."""
    semantic: float = 12.0
    """Cosine of task and directive embeddings, blended with the directive's rule (features.py)."""
    rule_semantic: float = 30.0
    """The best cosine of any directive of the candidate's rule: whole-rule evidence by meaning.
    Static-model cosines sit in a narrow band, hence the large weight."""
    lexical: float = 6.0
    """The directive's own BM25 relative to the best candidate's, blended with its rule's best."""
    rule_lexical: float = 16.0
    """BM25 of the directive's whole rule document relative to the best rule's (whole-document
    evidence: the strongest single signal on both labeled sets). 10 -> 16 once rule documents held
    their files as written (docs/relevance.md)."""
    file_match: float = 2.5
    """The directive's rule is tied (by globs) to a file the user is editing. 10 -> 2.5 when the files
    of labeled tasks were measured (``ruledex eval --files``; Cursor set's even lines, 0 / 1 / 2.5 / 5 /
    10: 0.912 / 0.914 / 0.913 / 0.907 / 0.895): most imported rules are scoped by language (``**/*.ts``),
    which says less about the task than its words do, and the files' technologies already weigh in
    through ``stack``. 2.5 rather than 1 keeps a rule scoped to one folder ahead on a vague task."""
    always_apply: float = 4.0
    """The directive's rule says it always applies (Cursor's alwaysApply). Such rules follow every
    answer in a part of their own anyway; this only moves their directives among the ranked ones."""

    stack: float = 8.0
    """How well the technologies of the directive's rule fit those the task names (reader/stacks.py):
    1 for the task's own stack, 0.5 without evidence, 0.25 for a sibling stack, 0 for another one.
    Chosen on the Cursor set's even lines (4 / 8 / 12: 0.876 / 0.881 / 0.881, from 0.871); checked on
    its odd lines (0.911 -> 0.911) and on the 232 fresh graded Cursor tasks (0.558 -> 0.583)."""

    def ceiling(self) -> float:
        """The highest score these weights can give (every signal at 1)."""
        return float(sum(asdict(self).values()))


DEFAULT_WEIGHTS = RankWeights()

DECLARED_WEIGHTS = RankWeights(
    authority=16.0,
    when_to_apply=12.0,
    layer=2.0,
    topic=20.0,
    severity=2.0,
    semantic=6.0,
    rule_semantic=15.0,
    lexical=9.0,
    rule_lexical=0.0,
    always_apply=0.0,
    stack=DEFAULT_WEIGHTS.stack,
)
"""Weights for rules whose authors wrote their topics, authority and when-to-apply (ruledex rule
documents): what the authors declared leads, the rule's words follow. Chosen by the same coordinate
search, on 400 coding tasks from the training set that a separate session graded against the bundled
rules (``tests/data/train_bundled.jsonl``; ``python -m bench.tune``), with both labeled sets held
out; the search set ``semantic`` to 0, and it was put back to 6 after directive-level judgments
(``python -m bench.precision``): the block's share of relevant directives 0.352 -> 0.366 (0.374 with
the default ranking), for -0.002 nDCG@10 on the labeled set and -0.003 on those tasks. On rules
imported from other formats, whose topics and authority ruledex inferred, these weights lose badly
(Cursor corpus 0.888 -> 0.767): they keep :data:`DEFAULT_WEIGHTS`. ``always_apply`` is 0: the
bundled core rules always apply and follow every answer anyway, and at 4 they took ranked places
from the rules picked for the task (nDCG@10 0.847 -> 0.844). ``stack`` is the default's: a rule
document may name its technologies (``technologies: [go]``), and a Go rule is not the answer for a
``.tsx`` file. It was 0 while only imported rules had technologies; on a team's own Go and React
rules (tests/data/team_tasks.jsonl, asked with the files being edited) 0 / 2 / 4 / 8 / 16 give
nDCG@10 0.890 / 0.909 / 0.909 / 0.909 / 0.903; the bundled rules name none, so their rankings are
unchanged, and the uniform half-fit softens the relative cut a little (directive precision 0.414 ->
0.408, relevant directives per block 0.92 -> 0.93). See docs/relevance.md."""


@dataclass(frozen=True)
class Ranking:
    """How one index ranks: its weights, and how sure detection must be before a detected layer filters."""

    weights: RankWeights
    strict_min_confidence: float
    """With ``strictLayer`` (the default), a detected layer filters other layers' directives out
    only at this confidence or above; below it the layer is a boost. A layer the caller gives
    always filters."""
    relative_cut: float = 0.0
    """A directive scoring below this share of the index's best one is left out of the block (and
    listed in ``omitted`` with reason ``relevance``); the first ``render.MIN_SHOWN`` always stay."""


DEFAULT_RANKING = Ranking(DEFAULT_WEIGHTS, strict_min_confidence=0.75)
"""Rules with inferred topics (imported from other tools). Below 0.65 the detected layer was right
about half the time (``ruledex eval``), and 0.65 was chosen on the Cursor set's even lines. On the
232 fresh graded Cursor tasks (task model without them) 0.65 / 0.7 / 0.75 / 0.8 / never give
nDCG@10 0.544 / 0.548 / 0.558 / 0.558 / 0.555, with the odd lines level (0.911) and directive
precision 0.410 -> 0.420 at 0.75: a guessed layer that filters drops other layers' guides a task
still needs (docs/relevance.md)."""

DECLARED_RANKING = Ranking(DECLARED_WEIGHTS, strict_min_confidence=0.9, relative_cut=0.8)
"""Rules that declare their topics. Their layers are declared too, and a wrong detected layer cost
more than it saved: on the 400 fresh bundled tasks (task model without them) nDCG@10 0.817 at 0.65,
0.839 at 0.8, 0.844 at 0.9, 0.845 never; on the bundled labeled set 0.837, 0.849, 0.851, 0.851.
The relative cut was measured on graded directives (``python -m bench.precision``): directives
below 0.8 of the best were mostly irrelevant (block precision 0.366 -> 0.412, 6.1 directives
instead of 8, grade-2 directives per block 1.04 -> 1.01; checked on 80 more tasks). On imported
rules the same cut gained only on labeled tasks and cost 0.003 nDCG@10 on the corpus, so they keep
every directive that fits."""

DECLARED_SHARE = 0.5
"""An index ranks as :data:`DECLARED_RANKING` when at least this share of its rules declare their
own topics, else as :data:`DEFAULT_RANKING`."""


def ranking_for(declared_share: float) -> Ranking:
    """How an index ranks, given the share of its rules that declare their topics."""
    return DECLARED_RANKING if declared_share >= DECLARED_SHARE else DEFAULT_RANKING


FEATURES = (
    "authority",
    "when_to_apply",
    "layer",
    "topic",
    "severity",
    "semantic",
    "rule_semantic",
    "lexical",
    "rule_lexical",
    "file_match",
    "always_apply",
    "stack",
)
BREAKDOWN_NAMES = {
    "authority": "authority",
    "when_to_apply": "whenToApply",
    "layer": "layerMatch",
    "topic": "topicOverlap",
    "severity": "severityBoost",
    "semantic": "semanticSim",
    "rule_semantic": "ruleSemantic",
    "lexical": "lexical",
    "rule_lexical": "ruleLexical",
    "file_match": "fileMatch",
    "always_apply": "alwaysApply",
    "stack": "stackMatch",
}
"""Feature name -> the key used in diagnostics' score breakdown."""


@dataclass(frozen=True)
class ScoreBreakdown:
    """Weighted contribution of every feature per candidate (a row per feature, in :data:`FEATURES` order), and their total."""

    weighted: np.ndarray
    total: np.ndarray

    @property
    def parts(self) -> dict[str, np.ndarray]:
        """Each feature's weighted contributions, by feature name."""
        return dict(zip(FEATURES, self.weighted, strict=True))

    def row(self, i: int) -> dict[str, float]:
        """One candidate's breakdown with diagnostics' names."""
        values = self.weighted[:, i].tolist()
        out = {BREAKDOWN_NAMES[name]: round(value, 3) for name, value in zip(FEATURES, values, strict=True)}
        out["total"] = round(float(self.total[i]), 3)
        return out


@functools.lru_cache(maxsize=16)
def _weight_column(weights: RankWeights) -> np.ndarray:
    w = asdict(weights)
    return np.array([[w[name]] for name in FEATURES], np.float32)


def score(features: dict[str, np.ndarray], weights: RankWeights = DEFAULT_WEIGHTS) -> ScoreBreakdown:
    """Weighted sum of the features (each an array in [0, 1], one entry per candidate)."""
    weighted = np.array([features[name] for name in FEATURES], np.float32)  # one copy for all signals
    np.maximum(weighted, 0.0, out=weighted)
    np.minimum(weighted, 1.0, out=weighted)
    weighted *= _weight_column(weights)  # one clip and one product for all signals
    return ScoreBreakdown(weighted, np.add.reduce(weighted, axis=0))


def order(total: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions sorted by descending score, ties by ascending directive id."""
    return np.lexsort((ids, -total))


def first_of_runs(keys: np.ndarray) -> np.ndarray:
    """Per entry of sorted (grouped) ``keys``, whether it starts a run of equal keys."""
    first = np.empty(len(keys), bool)
    if len(keys):
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
    return first


def diverse_head(positions: np.ndarray, groups: np.ndarray, per_group: int, size: int) -> np.ndarray:
    """The first ``size`` of ``positions`` (already in rank order), at most ``per_group`` per group.

    Groups are rules: a rule with many matching directives must not crowd every other rule out of the
    candidates a block is made from (and that diagnostics list as omitted).
    """
    groups = groups[positions]
    if not len(positions):
        return positions
    # rank of each position within its group, in rank order: a stable sort by group keeps that order
    by_group = np.argsort(groups, kind="stable")
    sorted_groups = groups[by_group]
    first = first_of_runs(sorted_groups)
    run_start = np.maximum.accumulate(np.where(first, np.arange(len(groups)), 0))  # each run's first position
    within = np.empty(len(groups), np.int64)
    within[by_group] = np.arange(len(groups)) - run_start
    return positions[within < per_group][:size]


def near_duplicates(vectors: np.ndarray, threshold: float = 0.93) -> list[int]:
    """Positions (in the given order) that repeat an earlier row: cosine at or above threshold."""
    dropped: list[int] = []
    kept: list[int] = []
    gram = vectors @ vectors.T  # one product instead of one per row
    gram.flat[:: len(gram) + 1] = 0.0  # the diagonal: a row is not its own duplicate (the loop never reads it)
    if not np.count_nonzero(gram >= threshold):
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
