"""Ranking features: what each candidate directive has going for it, each signal in [0, 1].

Pure functions over the index's tables and the retrieval scores. Topic signals are weighted by how
strongly each topic was detected, so a weak side topic cannot outvote the main one. Lexical and
semantic evidence is blended with the evidence of the directive's whole rule (the mean of its best
three candidates), so a rule whose several directives match outranks one stray match.
"""

from __future__ import annotations

import functools
from collections.abc import Collection

import numpy as np

from .detect import Detection
from .index import Index
from .rank import first_of_runs
from .retrieve import Retrieval
from .stacks import NO_EVIDENCE_FIT, stack_fits
from .vocab import ANY_LAYER, LAYERS, SEVERITIES, SEVERITY_BOOST, TOPICS

TRUST_FLOOR = 0.0
TRUST_POWER = 3.0
"""Detection-based signals count ``confidence ** TRUST_POWER`` (``ruledex eval`` on the labeled set:
power 1 -> nDCG@10 0.716, 2 -> 0.732, 3 -> 0.735 with the strict filter on)."""

RULE_SHARE = 0.4
"""Share of the lexical/semantic signals that comes from the directive's rule as a whole."""


_SEVERITY_BOOSTS = np.array([SEVERITY_BOOST[name] for name in SEVERITIES], np.float32)
"""SEVERITY_BOOST as an array indexed by severity id (one lookup for every candidate)."""


def in_rules(rules: np.ndarray, wanted: Collection[int]) -> np.ndarray:
    """Per entry of ``rules``, whether it is one of ``wanted`` (usually none: then nothing to look up).

    A lookup table over rule ids, not ``np.isin``: isin costs ~50-90 µs a call at any size here (it
    sorts or builds its own table), the table a few µs.
    """
    if not wanted or not len(rules):
        return np.zeros(len(rules), bool)
    table = np.zeros(max(max(wanted), int(rules.max())) + 1, bool)
    table[np.fromiter(wanted, np.int64, len(wanted))] = True
    return table[rules]


def topic_strengths(det: Detection, topics: tuple[str, ...], bias: tuple[str, ...] = ()) -> dict[str, float]:
    """Weight per query topic in (0, 1]: detection score relative to the strongest; biased topics 1."""
    scores = {t: max(det.topic_scores.get(t, 0.0), 0.0) for t in topics}
    top = max(scores.values(), default=0.0)
    out = {t: (s / top if top > 0 else 1.0) for t, s in scores.items()}
    out.update(dict.fromkeys(bias, 1.0))
    return {t: max(w, 0.1) for t, w in out.items()}


def _masked_strength(masks: np.ndarray, strengths: dict[str, float], reduce: str) -> np.ndarray:
    """Per row: max or sum of the strengths of the topics set in each mask.

    One (topics x rows) array for all topics: the sum adds topic by topic, in ``strengths`` order,
    as a loop over the topics would, in a handful of numpy calls instead of five per topic.
    """
    if not strengths:
        return np.zeros(len(masks), np.float32)
    bits = np.array([TOPICS.index(topic) for topic in strengths], masks.dtype)
    weights = np.array(list(strengths.values()), np.float32)
    weighted = ((masks >> bits[:, None]) & 1).astype(np.float32) * weights[:, None]
    return (np.maximum if reduce == "max" else np.add).reduce(weighted, axis=0)


_TOP_THREE = np.arange(3)


def rule_blend(values: np.ndarray, rules: np.ndarray, share: float = RULE_SHARE) -> np.ndarray:
    """Blend each value with the mean of the top three values of its rule (both in [0, 1]).

    ``values`` is one row per signal (or a single row), blended row by row; one sort serves them all.
    """
    n = values.shape[-1]
    if not n:
        return values
    if n > 1 and np.count_nonzero(rules[1:] < rules[:-1]):  # candidates come in id order, hence rule order
        back = np.argsort(rules, kind="stable")
        out = np.empty_like(values, np.float32)
        out[..., back] = rule_blend(values[..., back], rules[back], share)
        return out
    rows = np.atleast_2d(values).astype(np.float32, copy=False)
    # within each rule best first: rule r's keys lie in [2r - 1, 2r], so rules never interleave
    order = (rules * 2.0 - rows).argsort(axis=1)
    padded = np.zeros((len(rows), n + 2), np.float32)  # a rule's 2nd/3rd best are 0 when it has fewer
    padded[:, :n] = rows[np.arange(len(rows))[:, None], order]
    starts = first_of_runs(rules).nonzero()[0]
    sizes = np.empty_like(starts)
    sizes[:-1] = starts[1:] - starts[:-1]
    sizes[-1] = n - starts[-1]
    # per row, rule and place: the rule's best, 2nd and 3rd (0 past its size), in one gather
    top = padded[:, starts[:, None] + _TOP_THREE] * (sizes[:, None] > _TOP_THREE)
    # the three best of every rule, summed best first as a sorted slice would be
    means = ((top[..., 0] + top[..., 1]) + top[..., 2]) / np.minimum(sizes, 3).astype(np.float32)
    blended = ((1 - share) * rows + share * means.repeat(sizes, axis=1)).astype(np.float32, copy=False)
    return blended if values.ndim > 1 else blended[0]


def relative(values: np.ndarray) -> np.ndarray:
    """Values divided by the best one (zeros when none is positive)."""
    best = float(values.max()) if len(values) else 0.0
    return (values / best).astype(np.float32) if best > 0 else np.zeros(len(values), np.float32)


@functools.lru_cache(maxsize=len(LAYERS))
def _layer_fits(layer: str) -> np.ndarray:
    """Layer match per layer mask (a table: one lookup per candidate): 1 with ``layer``'s bit, else 0.5 with ``*``'s, else 0."""
    masks = np.arange(1 << len(LAYERS))
    bit, any_bit = 1 << LAYERS.index(layer), 1 << LAYERS.index(ANY_LAYER)
    return np.where(masks & bit, 1.0, np.where(masks & any_bit, 0.5, 0.0)).astype(np.float32)


def rule_semantic(rule_cosine: np.ndarray | None, rules: np.ndarray) -> np.ndarray:
    """Per candidate: the best cosine of any directive of its rule, candidate or not (in [0, 1])."""
    if rule_cosine is None:
        return np.zeros(len(rules), np.float32)
    return np.minimum(np.maximum(rule_cosine[rules], 0.0), 1.0).astype(np.float32, copy=False)


EXAMPLE_SHARE = 0.8
"""How much a rule's example task counts beside its when_to_apply phrases (1).

Example tasks are written the way tasks are, so they match wordings the situations miss. The share
scales the fit before it is clipped to [0, 1], so a task that repeats an example almost word for
word still counts in full, and a loose match less than a situation would (clipping first: bundled
even lines 0.869 -> 0.865, team rules 0.907 -> 0.901). Measured with ``ruledex eval`` and ``python
-m bench.tune --passes 0 --held-out-model`` at 0 / 0.5 / 0.6 / 0.7 / 0.8 / 0.9 / 1: bundled
labeled even lines 0.856 / 0.850 / 0.862 / 0.871 / 0.869 / 0.872 / 0.879 (flattered: their tasks
were written beside the examples), odd lines 0.875 / 0.889 / 0.892 / 0.886 / 0.888 / 0.881 / 0.878,
blind set 0.851 / 0.856 / 0.859 / 0.862 / 0.866 / 0.862 / 0.860, 400 fresh graded tasks 0.867 /
0.867 / 0.865 / 0.867 / 0.868 / 0.866 / 0.863, a team's own rules 0.887 / 0.901 / 0.904 / 0.908 /
0.907 / 0.905 / 0.906. 0.7 and 0.8 gain on every held-out set, 0.8 the most on the blind and fresh ones."""


def when_to_apply(index: Index, rules: np.ndarray, qvec: np.ndarray, terms: set[str]) -> np.ndarray:
    """Per candidate: how well the task matches its rule's situations, by meaning or by words.

    The situations are the rule's when_to_apply phrases and, at :data:`EXAMPLE_SHARE`, its example tasks.
    """
    if not len(rules) or not (len(index.wta_rule) or len(index.example_rule)):
        return np.zeros(len(rules), np.float32)
    # only the phrases of the candidates' rules matter: keeps this O(candidates), not O(index)
    wanted = np.zeros(index.n_rules, bool)
    wanted[rules] = True
    candidates = set(rules.tolist())  # the same rules, for the keyword postings: made once for both fields
    per_rule = np.zeros(index.n_rules, np.float32)
    _phrase_fit(per_rule, index, "when_to_apply", wanted, candidates, qvec, terms, 1.0)
    if len(index.example_rule):
        _phrase_fit(per_rule, index, "examples", wanted, candidates, qvec, terms, EXAMPLE_SHARE, index.left_out_example)
    return np.minimum(np.maximum(per_rule[rules], 0.0), 1.0)


def _phrase_fit(
    per_rule: np.ndarray,
    index: Index,
    field: str,
    wanted: np.ndarray,
    candidates: set[int],
    qvec: np.ndarray,
    terms: set[str],
    share: float,
    skip: int | None = None,
) -> None:
    """Raise ``per_rule`` to each wanted rule's best fit among its ``field`` phrases, times ``share``.

    ``wanted`` (a mask over rules) and ``candidates`` (their ids) are the same rules.

    By meaning: the phrase's cosine, from 0.3 (nothing) to 0.7 (full). By words: the share of the
    phrase's keywords the task has (at most 4 needed). Phrase row ``skip`` is left out.
    """
    vectors, owners = index.phrase_table(field)
    chosen = wanted[owners]
    if skip is not None:
        chosen[skip] = False
    phrases = chosen.nonzero()[0]
    if not len(phrases):
        return
    sims = index.cosines(vectors[phrases], qvec)
    phrase_rules = owners[phrases].astype(np.int64)
    fit = (sims - np.float32(0.3)) / np.float32(0.4)
    np.maximum.at(per_rule, phrase_rules, (fit * np.float32(share)).astype(np.float32))
    for row, (rule, shared, size) in index.phrase_overlaps(field, terms, candidates).items():
        if row != skip:
            per_rule[rule] = max(per_rule[rule], share * shared / max(1, min(size, 4)))


def file_fit(rules: np.ndarray, scoped: set[int], elsewhere: set[int] | None) -> np.ndarray:
    """Per candidate, how its rule's globs fit the edited files.

    1 when tied to one of them, 0 when scoped to other files only, 0.5 when not scoped; 0 for every
    candidate when no file was given.

    A rule scoped elsewhere stays a candidate (it may still be what the task needs: a security rule
    scoped to code while the CI workflow is open); it only ranks lower.
    """
    tied = in_rules(rules, scoped).astype(np.float32)
    if elsewhere is None:
        return tied
    return np.where(in_rules(rules, elsewhere), np.float32(0.0), np.maximum(tied, np.float32(0.5)))


def stack_match(index: Index, rules: np.ndarray, technologies: tuple[str, ...]) -> np.ndarray:
    """Per candidate, how well its rule's technologies fit the task's (:func:`~ruledex.reader.stacks.stack_fits`)."""
    if not technologies:
        return np.full(len(rules), NO_EVIDENCE_FIT, np.float32)
    unique, where = np.unique(rules, return_inverse=True)
    fits = stack_fits(technologies, (index.rule(r).technologies for r in unique.tolist()))
    return np.asarray(fits, np.float32)[where]


def features(
    index: Index,
    got: Retrieval,
    strengths: dict[str, float],
    layer: str | None,
    qvec: np.ndarray,
    terms: set[str],
    trust: float = 1.0,
    scoped: set[int] | None = None,
    always: set[int] | None = None,
    technologies: tuple[str, ...] = (),
    elsewhere: set[int] | None = None,
) -> dict[str, np.ndarray]:
    """Every ranking signal for the retrieved candidates, aligned with ``got.ids``.

    ``scoped`` are the rules tied by globs to the edited files; ``elsewhere`` (None when no file was
    given) the rules tied to other files only (:func:`file_fit`).

    ``trust`` (the detection's confidence, 0..1) scales the signals that rest on detection: rule
    authority, layer match and topic overlap. A confident detection counts in full; a guess barely.
    """
    ids = got.ids
    rules = index.dir_rule[ids].astype(np.int64)
    authority = _masked_strength(index.rule_authority[rules], strengths, "max")
    total = sum(strengths.values())
    overlap = (
        _masked_strength(index.dir_topics[ids], strengths, "sum") / np.float32(total)
        if total
        else np.zeros(len(ids), np.float32)
    )
    layer_match = np.full(len(ids), 0.5, np.float32) if layer is None else _layer_fits(layer)[index.dir_layers[ids]]
    severity = _SEVERITY_BOOSTS[index.dir_severity[ids]]
    semantic = np.minimum(np.maximum(got.cosine, 0.0), 1.0).astype(np.float32, copy=False)
    blended = rule_blend(np.array([semantic, relative(got.bm25)]), rules)
    gate = np.float32(TRUST_FLOOR + (1 - TRUST_FLOOR) * min(max(trust, 0.0), 1.0) ** TRUST_POWER)
    return {
        "authority": authority * gate,
        "when_to_apply": when_to_apply(index, rules, qvec, terms),
        "layer": layer_match * gate,
        "topic": overlap * gate,
        "severity": severity,
        "semantic": blended[0],
        "rule_semantic": rule_semantic(got.rule_cosine, rules),
        "lexical": blended[1],
        "rule_lexical": relative(got.rule_bm25)[rules] if got.rule_bm25 is not None else np.zeros(len(ids), np.float32),
        "file_match": file_fit(rules, scoped or set(), elsewhere),
        "always_apply": in_rules(rules, always or ()).astype(np.float32),
        "stack": stack_match(index, rules, technologies),
    }
