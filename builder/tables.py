"""Build the layer/topic tables: per-directive masks, rule authority, and detection prototypes.

Detection learns from the rules themselves: each layer's and topic's prototype vector is the
normalised mean of its directives' embeddings, and its terms are the keywords most specific to it
(frequency inside the class against the whole index). A rules repository's own vocabulary thus
teaches the reader's detector.
"""

from __future__ import annotations

import math
from collections import Counter

import msgpack
import numpy as np

from ruledex.reader.encode import unit_rows
from ruledex.reader.format import RULE_ALWAYS_APPLY, RULE_DECLARED, RULE_HAS_GLOBS
from ruledex.reader.records import DirectiveRecord, RuleRecord
from ruledex.reader.vocab import CORE_MARKER, LAYERS, SEVERITIES, TOPICS, layer_mask, topic_mask

TERMS_PER_CLASS = 40


def directive_tables(directives: list[DirectiveRecord]) -> dict[str, np.ndarray]:
    """Per-directive rule index, severity, layer mask and topic mask."""
    return {
        "dir_rule": np.array([d.rule for d in directives], dtype="<u4"),
        "dir_severity": np.array([SEVERITIES.index(d.severity) for d in directives], dtype="|u1"),
        "dir_layers": np.array([layer_mask(d.layers) for d in directives], dtype="|u1"),
        "dir_topics": np.array([topic_mask(d.topics) for d in directives], dtype="<u4"),
    }


def rule_tables(rules: list[RuleRecord]) -> dict[str, np.ndarray]:
    """Per-rule authority mask, core flag, and alwaysApply / globs / declared-topics flags."""
    return {
        "rule_authority": np.array([topic_mask(r.authoritative_for) for r in rules], dtype="<u4"),
        "rule_core": np.array([CORE_MARKER in r.authoritative_for for r in rules], dtype="|u1"),
        "rule_flags": np.array(
            [
                (RULE_ALWAYS_APPLY if r.always_apply else 0)
                | (RULE_HAS_GLOBS if r.globs else 0)
                | (0 if "topics" in r.inferred else RULE_DECLARED)
                for r in rules
            ],
            dtype="|u1",
        ),
    }


def _prototypes(vectors: np.ndarray, members: list[list[int]]) -> np.ndarray:
    out = np.zeros((len(members), vectors.shape[1]), dtype=np.float32)
    for row, ids in enumerate(members):
        if ids:
            out[row] = vectors[ids].mean(axis=0)
    return unit_rows(out)


def _distinctive_terms(docs: list[set[str]], members: list[int], df: Counter[str], n_docs: int) -> list[str]:
    """Terms most specific to a class: in-class document frequency weighted by global IDF."""
    inside = Counter(term for i in members for term in docs[i])
    scored = [
        (count * math.log((n_docs + 1) / (df[term] + 1)), term)
        for term, count in inside.items()
        if count >= 2 and not term.isdigit()
    ]
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return [term for _, term in scored[:TERMS_PER_CLASS]]


def detection_tables(
    directives: list[DirectiveRecord], document_terms: list[list[str]], vectors: np.ndarray
) -> dict[str, np.ndarray]:
    """Layer/topic prototype vectors and learnt terms (msgpack).

    From the directives and their documents' :func:`~ruledex.reader.text.keywords`.
    """
    by_layer = [[i for i, d in enumerate(directives) if layer in d.layers] for layer in LAYERS]
    by_topic = [[i for i, d in enumerate(directives) if topic in d.topics] for topic in TOPICS]
    docs = [set(terms) for terms in document_terms]  # a class counts documents, not occurrences
    df: Counter[str] = Counter(term for doc in docs for term in doc)
    terms = {
        "layers": {
            name: _distinctive_terms(docs, ids, df, len(docs))
            for name, ids in zip(LAYERS, by_layer, strict=True)
            if ids
        },
        "topics": {
            name: _distinctive_terms(docs, ids, df, len(docs))
            for name, ids in zip(TOPICS, by_topic, strict=True)
            if ids
        },
    }
    blob = msgpack.packb(terms, use_bin_type=True)
    return {
        "layer_vectors": _prototypes(vectors, by_layer),
        "topic_vectors": _prototypes(vectors, by_topic),
        "detect_terms": np.frombuffer(blob, dtype="|u1").copy(),
    }


def pack_records(rows: list[list[object]]) -> tuple[np.ndarray, np.ndarray]:
    """Msgpack each row; return the concatenated bytes and the (n+1,) offsets array."""
    packed = [msgpack.packb(row, use_bin_type=True) for row in rows]
    offsets = np.zeros(len(packed) + 1, dtype="<u8")
    np.cumsum([len(p) for p in packed], out=offsets[1:])
    return np.frombuffer(b"".join(packed), dtype="|u1").copy(), offsets
