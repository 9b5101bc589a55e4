"""Build the inverted keyword index (CSR) that the reader scores with BM25.

Each directive is one document: its text, rationale, anti-patterns, section names and rule title,
tokenized by the shared :func:`ruledex.reader.text.keywords`. Each rule is one more document, for
whole-document BM25: the rule as a reader sees it, every part once (title, description,
when_to_apply, file name, section headings, directives, code examples), then the source file as its
author wrote it (not its example tasks, which ``ruledex check --examples`` tests). Both posting
lists share one term table, sorted by UTF-8 bytes so the reader can binary-search it in place.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ruledex.reader.records import DirectiveRecord, RuleRecord
from ruledex.reader.text import keywords

from .adapters import SkipFile, read_front_matter
from .parse import normalise_newlines

BM25_K1 = 1.2
BM25_B = 0.75
RULE_BM25_K1 = 2.0
"""Whole rule documents are long (tens of directives), so a repeated term saturates later than in a
one-line directive. ``ruledex eval``, rule-document BM25 alone: k1 1.2 -> 2.0 took nDCG@10 from
0.779 to 0.792 (bundled) and 0.839 to 0.856 (Cursor corpus); 3.0 and 4.0 were no better on both."""


DOCUMENT_SEPARATOR = "\n"


def document_parts(rule: RuleRecord, directive: DirectiveRecord) -> list[str]:
    """The parts of a directive's document, in order (:func:`directive_document` joins them)."""
    parts = [directive.text, directive.rationale, *directive.avoid, *directive.section, rule.title]
    return [p for p in parts if p]


def directive_document(rule: RuleRecord, directive: DirectiveRecord) -> str:
    """The text a directive is found by: what it says, why, what to avoid, and where it sits."""
    return DOCUMENT_SEPARATOR.join(document_parts(rule, directive))


_LABEL_OF = {"layers": re.compile(r"^[ \t]+Layers?:.*$\n?", re.M), "topics": re.compile(r"^[ \t]+Topics?:.*$\n?", re.M)}
"""The directive lines that state a field named in ``inferred`` (``ruledex import`` writes them)."""


def written_text(text: str, path: str) -> str:
    """A source file as its author wrote it: the front matter's values, then the body.

    Without the ``examples`` key: example tasks are what ``ruledex check --examples`` tests. Without
    what the front matter's ``inferred`` names either (``ruledex import`` writes it): those values,
    and the directives' ``Layer:``/``Topics:`` lines when layers/topics were inferred, were guessed
    from the words already here, not written. Indexed, they repeated the topic names on every
    directive and cost the imported Cursor corpus 0.012 nDCG@10 against building it directly.
    """
    text = normalise_newlines(text)
    try:
        fm = read_front_matter(text, path)
    except SkipFile:  # front matter the lenient reader cannot split: index the file whole
        return text
    guessed = fm.values.get("inferred")
    guessed = {str(g) for g in guessed} if isinstance(guessed, list) else {str(guessed)} if guessed else set()
    values = [_flat(v) for k, v in fm.values.items() if k not in {"examples", "inferred", *guessed}]
    body = fm.body
    for field, label in _LABEL_OF.items():
        if field in guessed:
            body = label.sub("", body)
    return "\n".join([*(v for v in values if v), body])


def _flat(value: object) -> str:
    if isinstance(value, dict):
        return "\n".join(_flat(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return "\n".join(_flat(v) for v in value)
    return "" if value is None else str(value)


def rule_document(rule: RuleRecord, directives: list[DirectiveRecord], written: str = "") -> str:
    """A whole rule as one document: every part once, then the file as written (``written``).

    The source text adds what the parser does not turn into directives: paragraphs that state no
    instruction, code under a heading with no list, tables, globs. Plain BM25 over the source
    files used all of it and ranked the Cursor corpus better than this document without it
    (``ruledex eval``, nDCG@10 0.878 against 0.868 for the whole of ruledex); with it, ruledex went
    0.868 -> 0.879 there and 0.837 -> 0.838 on the bundled rules. The parsed parts stay: the
    source text alone scored lower on the bundled rules (0.834).

    Not the sum of the directive documents: those repeat the rule title and section names on every
    directive, which inflated heading words (``ruledex eval``: the sum gave nDCG@10 0.834 on the
    Cursor corpus, this text 0.839 at the same k1). Example tasks are left out: they are what
    ``ruledex check --examples`` tests, and indexing them would make it pass by construction. The
    file name counts: in foreign rule sets (``nextjs-app-router.mdc``) it is often the best
    statement of what the rule is about.
    """
    stem = rule.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    parts = [rule.title, rule.description, *rule.when_to_apply]
    parts.append(stem.replace("-", " ").replace("_", " "))
    parts += list(dict.fromkeys(name for d in directives for name in d.section))
    for d in directives:
        parts += [d.text, d.rationale, *d.avoid, *(code for _lang, code in d.examples)]
    parts.append(written)
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class Postings:
    """One CSR posting list over the shared term table: documents and term frequencies per term."""

    indptr: np.ndarray
    postings: np.ndarray
    tf: np.ndarray
    doc_len: np.ndarray


@dataclass(frozen=True)
class KeywordIndex:
    """The term table and the directive and rule posting lists, ready for the artifact."""

    terms: np.ndarray
    term_offsets: np.ndarray
    directives: Postings
    rules: Postings

    @property
    def avgdl(self) -> float:
        """Mean document length in keyword tokens (BM25's length normaliser)."""
        lengths = self.directives.doc_len
        return float(lengths.mean()) if len(lengths) else 0.0


def _postings(counts: list[Counter[str]], term_ids: dict[str, int]) -> Postings:
    """CSR over ``term_ids`` (term -> row): each term's documents ascending, with their frequencies.

    Built as flat arrays and one stable sort by term, which keeps each term's documents in order;
    a list of (document, frequency) pairs per term took 0.24 s of a 10k-directive build, this 0.07 s.
    """
    sizes = [len(c) for c in counts]
    total = sum(sizes)
    term = np.fromiter((term_ids[t] for c in counts for t in c), dtype=np.int64, count=total)
    tf = np.fromiter((n for c in counts for n in c.values()), dtype=np.int64, count=total)
    doc = np.repeat(np.arange(len(counts), dtype=np.int64), sizes)
    order = np.argsort(term, kind="stable")
    indptr = np.zeros(len(term_ids) + 1, dtype="<u4")
    np.cumsum(np.bincount(term, minlength=len(term_ids)), out=indptr[1:])
    return Postings(
        indptr=indptr,
        postings=doc[order].astype("<u4"),
        tf=np.minimum(tf[order], 65535).astype("<u2"),
        doc_len=np.array([sum(c.values()) for c in counts], dtype="<u4"),
    )


def build_keyword_index(document_terms: list[list[str]], rule_documents: list[str]) -> KeywordIndex:
    """Index the directives' documents and ``rule_documents`` (one text per rule).

    A directive's document comes as its :func:`keywords` (one list per directive, in order): the
    builder splits each once, for this and for the detection tables.
    """
    counts = [Counter(terms) for terms in document_terms]
    rule_counts = [Counter(keywords(doc)) for doc in rule_documents]
    terms = sorted({term.encode() for counter in rule_counts for term in counter})
    term_ids = {term.decode(): i for i, term in enumerate(terms)}
    offsets = np.zeros(len(terms) + 1, dtype="<u4")
    np.cumsum([len(t) for t in terms], out=offsets[1:])
    return KeywordIndex(
        terms=np.frombuffer(b"".join(terms), dtype="|u1").copy(),
        term_offsets=offsets,
        directives=_postings(counts, term_ids),
        rules=_postings(rule_counts, term_ids),
    )
