"""Build the inverted keyword index (CSR) that the reader scores with BM25.

Each directive is one document: its text, rationale, anti-patterns, section names and rule title,
tokenized by the shared :func:`ruledex.reader.text.keywords`. Terms are sorted by their UTF-8
bytes so the reader can binary-search them in place.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ruledex.reader.records import DirectiveRecord, RuleRecord
from ruledex.reader.text import keywords

BM25_K1 = 1.2
BM25_B = 0.75


def directive_document(rule: RuleRecord, directive: DirectiveRecord) -> str:
    """The text a directive is found by: what it says, why, what to avoid, and where it sits."""
    parts = [directive.text, directive.rationale, *directive.avoid, *directive.section, rule.title]
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class KeywordIndex:
    """CSR arrays of the inverted index, ready for the artifact."""

    terms: np.ndarray
    term_offsets: np.ndarray
    indptr: np.ndarray
    postings: np.ndarray
    tf: np.ndarray
    doc_len: np.ndarray

    @property
    def avgdl(self) -> float:
        """Mean document length in keyword tokens (BM25's length normaliser)."""
        return float(self.doc_len.mean()) if len(self.doc_len) else 0.0


def build_keyword_index(documents: list[str]) -> KeywordIndex:
    """Index ``documents`` (one per directive, in directive order)."""
    counts = [Counter(keywords(doc)) for doc in documents]
    postings: dict[bytes, list[tuple[int, int]]] = {}
    for doc_id, counter in enumerate(counts):
        for term, tf in counter.items():
            postings.setdefault(term.encode(), []).append((doc_id, tf))
    terms = sorted(postings)
    blob = b"".join(terms)
    offsets = np.zeros(len(terms) + 1, dtype="<u4")
    np.cumsum([len(t) for t in terms], out=offsets[1:])
    indptr = np.zeros(len(terms) + 1, dtype="<u4")
    np.cumsum([len(postings[t]) for t in terms], out=indptr[1:])
    flat = [pair for t in terms for pair in postings[t]]
    return KeywordIndex(
        terms=np.frombuffer(blob, dtype="|u1").copy(),
        term_offsets=offsets,
        indptr=indptr,
        postings=np.array([d for d, _ in flat], dtype="<u4"),
        tf=np.array([min(tf, 65535) for _, tf in flat], dtype="<u2"),
        doc_len=np.array([sum(c.values()) for c in counts], dtype="<u4"),
    )
