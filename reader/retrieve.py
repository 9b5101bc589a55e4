"""Retrieve candidate directives: BM25 over the inverted index and cosine over the embeddings.

Both scorers are pure functions over the index's arrays. Candidates are the union of the best
``depth`` by each signal, returned in ascending id order so later stages are deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .index import Index


@dataclass(frozen=True)
class Retrieval:
    """Candidate ids with their BM25 and cosine scores (aligned arrays), and per-rule evidence."""

    ids: np.ndarray
    bm25: np.ndarray
    cosine: np.ndarray
    searched: int
    rule_cosine: np.ndarray | None = None
    """Per rule (not per candidate): the best cosine of any of its directives, candidate or not."""
    rule_bm25: np.ndarray | None = None
    """Per rule (not per candidate): BM25 of the whole rule document."""

    def only(self, keep: np.ndarray) -> Retrieval:
        """The candidates where ``keep`` (a mask over them) is true; the per-rule evidence unchanged."""
        return Retrieval(
            self.ids[keep], self.bm25[keep], self.cosine[keep], self.searched, self.rule_cosine, self.rule_bm25
        )


def _spans(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every range ``[start, start + length)`` concatenated, and where each range begins in it.

    The second array holds, per range (not per position), the offset of its first entry in the
    concatenation. Callers make sure some range is not empty.
    """
    ends = lengths.cumsum()
    begins = ends - lengths
    return (starts - begins).repeat(lengths) + np.arange(ends[-1]), begins


def _bm25(
    n: int,
    k1: float,
    norm: np.ndarray,
    lists: tuple[np.ndarray, np.ndarray, np.ndarray],
    terms: list[tuple[int, float]],
) -> np.ndarray:
    """BM25 of ``n`` documents over one inverted index (indptr, ids, tf) for (term id, weight) pairs.

    Every query term's postings are gathered at once and added with ``np.add.at``, which adds in
    order of appearance: the same float32 sums, term by term, as a loop over the terms, in a dozen
    numpy calls instead of ten per term.
    """
    scores = np.zeros(n, dtype=np.float32)
    if n == 0 or not terms:
        return scores
    indptr, postings, tfs = lists
    term_ids = np.array([term_id for term_id, _ in terms], np.int64)
    starts = indptr[term_ids].astype(np.int64)
    lengths = indptr[term_ids + 1].astype(np.int64) - starts
    dfs = lengths.tolist()
    if not any(dfs):
        return scores
    factors = np.array(
        [weight * math.log((n - df + 0.5) / (df + 0.5) + 1.0) for (_, weight), df in zip(terms, dfs, strict=True)],
        np.float32,
    )  # weight x idf per term
    gather, _ = _spans(starts, lengths)
    ids = postings[gather]
    tf32 = tfs[gather].astype(np.float32)
    np.add.at(scores, ids, factors.repeat(lengths) * tf32 * np.float32(k1 + 1.0) / (tf32 + norm[ids]))
    return scores


def known_terms(index: Index, terms: list[str], weights: list[float] | None = None) -> list[tuple[int, float]]:
    """(term id, weight) of the query terms the index has; looked up once for both posting lists."""
    out = []
    for term, weight in zip(terms, weights or [1.0] * len(terms), strict=True):
        term_id = index.term_id(term)
        if term_id is not None:
            out.append((term_id, weight))
    return out


def bm25_scores(index: Index, terms: list[tuple[int, float]]) -> np.ndarray:
    """BM25 score of every directive for the query terms (zeros where no term occurs)."""
    if index.n_directives == 0:
        return np.zeros(0, dtype=np.float32)
    return _bm25(
        index.n_directives, index.k1, index.bm25_norm, (index.kw_indptr, index.kw_postings, index.kw_tf), terms
    )


RULE_DEPTH = 10
"""The best directives of the best ``RULE_DEPTH`` rules by whole-document BM25 and by best cosine are
candidates too: a rule that matches as a whole is considered even when none of its directives is
among the best single directives (``ruledex eval``: Cursor corpus nDCG@10 +0.02)."""


RULE_BEST = 3
"""How many directives (the closest by cosine) each of those best rules adds to the candidates."""


def _best_of_rules(index: Index, rules: np.ndarray, cosine: np.ndarray, k: int = RULE_BEST) -> np.ndarray:
    """Positions of the ``k`` directives of each rule closest to the task by cosine (ties by position)."""
    start, end = index.rule_bounds
    lengths = end[rules] - start[rules]
    if not np.count_nonzero(lengths):
        return np.zeros(0, np.int64)
    members, begins = _spans(start[rules], lengths)  # every directive of the rules, rule by rule
    group_start = begins.repeat(lengths)
    # each rule's members, best first; lexsort is stable and a rule's members come in position order,
    # so equal cosines keep the lower position first
    ranked = np.lexsort((-cosine[members], group_start))
    return members[ranked[np.arange(len(members)) - group_start < k]]


def top_k_set(scores: np.ndarray, k: int) -> np.ndarray:
    """Ids of the ``k`` best positive scores, ascending; ties at the k-th score go to the lowest ids.

    Candidates are a set, so nothing is sorted: a partition finds the k-th score.
    """
    nonzero = (scores > 0).nonzero()[0]
    if len(nonzero) <= k:
        return nonzero
    values = scores[nonzero]
    parted = values.copy()  # np.partition's own copy, without its Python wrapper
    parted.partition(len(values) - k)
    kth = parted[len(values) - k]
    best = values >= kth
    if np.count_nonzero(best) > k:  # ties at the k-th score (rare): the lowest ids win them
        best = values > kth
        best[(values == kth).nonzero()[0][: k - int(np.count_nonzero(best))]] = True
    return nonzero[best]


def retrieve(
    index: Index,
    terms: list[str],
    weights: list[float],
    query_vector: np.ndarray,
    depth: int = 100,
    rule_depth: int = RULE_DEPTH,
) -> Retrieval:
    """Union of the top ``depth`` directives by BM25 and by cosine, and the best directives of the best rules."""
    known = known_terms(index, terms, weights)
    lexical = bm25_scores(index, known)
    cosine = index.cosines(index.directive_vectors, query_vector)  # zeros for a task with no known token
    rule_lexical = rule_bm25(index, known)
    rule_cosine = index.per_rule_max(cosine)
    chosen = np.zeros(index.n_directives, bool)  # a mask, not union1d: a third of the cost at small sizes
    chosen[top_k_set(lexical, depth)] = True
    chosen[top_k_set(cosine, depth)] = True
    best_rules = np.zeros(index.n_rules, bool)
    best_rules[top_k_set(rule_lexical, rule_depth)] = True
    best_rules[top_k_set(rule_cosine, rule_depth)] = True
    chosen[_best_of_rules(index, best_rules.nonzero()[0], cosine)] = True
    ids = chosen.nonzero()[0]
    return Retrieval(
        ids=ids,
        bm25=lexical[ids],
        cosine=cosine[ids],
        searched=index.n_directives,
        rule_cosine=rule_cosine,
        rule_bm25=rule_lexical,
    )


def rule_bm25(index: Index, terms: list[tuple[int, float]]) -> np.ndarray:
    """BM25 of every whole rule document, from the rule posting lists.

    A rule document is the whole rule, every part once: title, description, when_to_apply, file
    name, headings, directives and code (builder/keywords.py), so a rule that mentions the task's
    words across many directives outranks one stray mention: the whole-document evidence plain
    BM25 has. Its own k1 (``rule_k1``) lets long documents saturate later.
    """
    if index.n_rules == 0:
        return np.zeros(0, dtype=np.float32)
    return _bm25(
        index.n_rules,
        index.rule_k1,
        index.rule_bm25_norm,
        (index.rule_kw_indptr, index.rule_kw_postings, index.rule_kw_tf),
        terms,
    )
