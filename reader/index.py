"""An opened ruledex index: typed access to the artifact's sections and records.

Opening validates the file and maps it; nothing is decoded up front. Records are decoded one at a
time from their msgpack bytes; the query encoder (whose tokenizer parse costs tens of
milliseconds) is built on first use.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from . import format as fmt
from .encode import Encoder, EncoderParams
from .errors import ArtifactError
from .globs import matches_every_file
from .records import DirectiveRecord, RuleRecord, unpack_row
from .text import keywords
from .vocab import LAYERS, SEVERITIES, TOPICS

TERM_MEMO = 100_000
"""Most term lookups an index remembers (a few MB) before starting afresh."""


@dataclass(frozen=True)
class RulePhrases:
    """One rule's when_to_apply phrases or example tasks, as keyword sets."""

    first: int
    """Row of the rule's first phrase in its table (``wta_rule`` or ``example_rule``)."""
    words: tuple[frozenset[str], ...]
    """Keywords of each phrase, in row order."""


PhrasePostings = dict[str, list[tuple[int, int, int]]]
"""Keyword -> (phrase row, rule, keywords in the phrase) of every phrase holding it."""


class Index:
    """One index file, memory-mapped. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: Path) -> None:
        """Open and validate ``path``; raises :class:`ArtifactError` naming what is wrong."""
        self.artifact = fmt.open_artifact(Path(path))
        self.path = self.artifact.path
        self.manifest: dict[str, Any] = self.artifact.manifest
        self._check_vocab()
        s = self.artifact.section
        self.directive_vectors = s("directive_vectors")
        self.dir_rule = s("dir_rule")
        self.dir_severity = s("dir_severity")
        self.dir_layers = s("dir_layers")
        self.dir_topics = s("dir_topics")
        self.rule_authority = s("rule_authority")
        self.rule_core = s("rule_core")
        self.rule_flags = s("rule_flags")
        self.wta_vectors = s("wta_vectors")
        self.wta_rule = s("wta_rule")
        has_examples = self.artifact.has("example_rule")
        self.example_vectors = (
            s("example_vectors") if has_examples else np.zeros((0, self.directive_vectors.shape[1]), np.float32)
        )
        self.example_rule = s("example_rule") if has_examples else np.zeros(0, np.uint32)
        self.left_out_example: int | None = None
        """An example row queries do not match (``leaving_out_example``)."""
        self.layer_vectors = s("layer_vectors")
        self.topic_vectors = s("topic_vectors")
        self.kw_indptr = s("kw_indptr")
        self.kw_postings = s("kw_postings")
        self.kw_tf = s("kw_tf")
        self.kw_doc_len = s("kw_doc_len")
        self.rule_kw_indptr = s("rule_kw_indptr")
        self.rule_kw_postings = s("rule_kw_postings")
        self.rule_kw_tf = s("rule_kw_tf")
        self.rule_kw_doc_len = s("rule_kw_doc_len")
        self._terms = s("kw_terms")
        self._term_offsets = s("kw_term_offsets")
        self._rule_bytes = s("rule_records")
        self._rule_offsets = s("rule_offsets")
        self._dir_bytes = s("directive_records")
        self._dir_offsets = s("directive_offsets")
        self._rules: dict[int, RuleRecord] = {}
        self._directives: dict[int, DirectiveRecord] = {}
        self._rule_phrases: dict[tuple[str, int], RulePhrases] = {}
        self._phrases_by_word: dict[str, PhrasePostings] = {}  # per field
        self._phrases_indexed: dict[str, set[int]] = {}  # field -> rules whose phrases the map above holds
        self._term_ids: dict[str, int | None] = {}
        self._check_counts()

    def _check_vocab(self) -> None:
        vocab = self.manifest.get("vocab", {})
        if (
            vocab.get("layers") != list(LAYERS)
            or vocab.get("topics", [])[: len(TOPICS)] != list(TOPICS)[: len(vocab.get("topics", []))]
        ):
            raise ArtifactError(
                str(self.path),
                "vocab",
                "layer/topic vocabulary differs from this ruledex's; rebuild the index with this version",
            )

    def _check_counts(self) -> None:
        n = self.n_directives
        for name in ("dir_rule", "dir_severity", "dir_layers", "dir_topics", "kw_doc_len"):
            if len(self.artifact.section(name)) != n:
                raise ArtifactError(
                    str(self.path),
                    name,
                    f"has {len(self.artifact.section(name))} rows for {n} directives; rebuild the index",
                )
        for name in ("rule_authority", "rule_core", "rule_flags", "rule_kw_doc_len"):
            if len(self.artifact.section(name)) != self.n_rules:
                raise ArtifactError(
                    str(self.path),
                    name,
                    f"has {len(self.artifact.section(name))} rows for {self.n_rules} rules; rebuild the index",
                )
        for name, rules in (("wta_rule", self.wta_rule), ("example_rule", self.example_rule)):
            if np.any(np.diff(rules.astype(np.int64)) < 0):
                raise ArtifactError(str(self.path), name, "phrases are not in rule order; rebuild the index")
            if len(rules) and int(rules.max()) >= self.n_rules:
                raise ArtifactError(
                    str(self.path), name, f"names a rule past the {self.n_rules} rules; rebuild the index"
                )
        if len(self.example_vectors) != len(self.example_rule):
            raise ArtifactError(
                str(self.path), "example_vectors", "row count disagrees with example_rule; rebuild the index"
            )
        if len(self.kw_indptr) != len(self.rule_kw_indptr) or len(self.kw_indptr) != len(self._term_offsets):
            raise ArtifactError(
                str(self.path), "rule_kw_indptr", "posting lists disagree with the term table; rebuild the index"
            )
        if len(self._rule_offsets) != self.n_rules + 1:
            raise ArtifactError(
                str(self.path), "rule_offsets", "row count disagrees with rule count; rebuild the index"
            )

    @property
    def n_directives(self) -> int:
        """Number of directives in the index."""
        return len(self._dir_offsets) - 1

    @property
    def n_rules(self) -> int:
        """Number of rule documents in the index."""
        return len(self._rule_offsets) - 1

    @property
    def k1(self) -> float:
        """BM25 term-frequency saturation recorded by the builder."""
        return float(self.manifest["keywords"]["k1"])

    @property
    def rule_k1(self) -> float:
        """BM25 saturation for whole rule documents (indexes made before it was recorded used ``k1``)."""
        return float(self.manifest["keywords"].get("rule_k1", self.k1))

    @property
    def b(self) -> float:
        """BM25 length normalisation recorded by the builder."""
        return float(self.manifest["keywords"]["b"])

    @property
    def avgdl(self) -> float:
        """Mean directive length in keyword tokens."""
        return float(self.manifest["keywords"]["avgdl"]) or 1.0

    @cached_property
    def name_bits(self) -> tuple[np.ndarray, np.ndarray]:
        """Each directive's layers and topics as 0/1 uint8 columns (in :data:`LAYERS`, :data:`TOPICS` order).

        What retrieval feedback sums its voters' weights over: unpacked once from the bit masks (4 ms
        and 2.4 MB at 100k directives). Bits an index from a newer ruledex sets beyond today's
        vocabularies get no column.
        """
        out = []
        for table, vocab in ((self.dir_layers, LAYERS), (self.dir_topics, TOPICS)):
            raw = np.ascontiguousarray(table, table.dtype.newbyteorder("<")).view(np.uint8)
            bits = np.unpackbits(raw.reshape(len(table), -1), axis=1, bitorder="little")
            out.append(np.ascontiguousarray(bits[:, : len(vocab)]))
        return out[0], out[1]

    @cached_property
    def commit(self) -> str:
        """The commit the rules were built from ('' outside git)."""
        return str(self.manifest.get("source", {}).get("commit", ""))

    @cached_property
    def encoder(self) -> Encoder:
        """The query encoder over the stored token matrix and tokenizer (built on first use)."""
        params = EncoderParams.from_manifest(self.manifest["model"])
        try:
            tokenizer = self.artifact.section_bytes("tokenizer").decode("utf-8")
            return Encoder.from_json(
                tokenizer, self.artifact.section("token_vectors"), self.artifact.section("token_scales"), params
            )
        except Exception as exc:  # the tokenizers library raises a bare Exception on damaged JSON
            raise self._damaged("tokenizer", exc) from None

    def cosines(self, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """Calibrated cosines (float32) of unit ``rows`` with a unit task ``vector`` (see ``EncoderParams``).

        A task with no known token (a zero vector) has no meaning to compare: zeros, not the shift.
        """
        if not np.count_nonzero(vector):
            return np.zeros(len(rows), dtype=np.float32)
        return self.encoder.params.calibrate((rows @ vector).astype(np.float32, copy=False))

    @cached_property
    def detect_terms(self) -> dict[str, dict[str, frozenset[str]]]:
        """Layer and topic terms the builder learnt from the rules (as sets: detection intersects them)."""
        try:
            raw = msgpack.unpackb(self.artifact.section_bytes("detect_terms"), raw=False)
            return {kind: {name: frozenset(terms) for name, terms in table.items()} for kind, table in raw.items()}
        except (ValueError, TypeError, AttributeError, msgpack.exceptions.ExtraData) as exc:
            raise self._damaged("detect_terms", exc) from None

    @cached_property
    def learnt_by_term(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """:attr:`detect_terms` by term: term -> its (kind, name) pairs, kind ``layers`` or ``topics``.

        Detection looks up a task's dozen terms here instead of intersecting them with every table.
        """
        out: dict[str, list[tuple[str, str]]] = {}
        for kind in ("layers", "topics"):
            for name, terms in self.detect_terms.get(kind, {}).items():
                for term in terms:
                    out.setdefault(term, []).append((kind, name))
        return {term: tuple(pairs) for term, pairs in out.items()}

    def _damaged(self, section: str, exc: Exception) -> ArtifactError:
        """The error for a section that cannot be read: the file is damaged, not the request."""
        return ArtifactError(
            str(self.path), section, f"cannot be read ({exc}); the file is damaged: run `ruledex verify` and rebuild it"
        )

    @cached_property
    def bm25_norm(self) -> np.ndarray:
        """BM25's length normaliser per directive (made once)."""
        return self._length_norm(self.kw_doc_len, self.avgdl, self.k1)

    @cached_property
    def rule_bm25_norm(self) -> np.ndarray:
        """BM25's length normaliser per whole rule document (made once)."""
        return self._length_norm(self.rule_kw_doc_len, self.rule_avgdl or 1.0, self.rule_k1)

    def _length_norm(self, lengths: np.ndarray, avgdl: float, k1: float) -> np.ndarray:
        """``k1 * (1 - b + b * len / avgdl)`` per document."""
        b = self.b
        return (k1 * (1.0 - b + b * lengths.astype(np.float32) / np.float32(avgdl))).astype(np.float32)

    def phrase_table(self, field: str) -> tuple[np.ndarray, np.ndarray]:
        """(vectors, owning rule per row) of a rule's phrase field: ``when_to_apply`` or ``examples``."""
        if field == "examples":
            return self.example_vectors, self.example_rule
        return self.wta_vectors, self.wta_rule

    def rule_phrases(self, field: str, rule: int) -> RulePhrases:
        """The keywords of rule ``rule``'s ``field`` phrases (``when_to_apply`` or ``examples``), made on first use.

        Only the phrases of a query's candidate rules are ever needed, so nothing is made up front.
        """
        found = self._rule_phrases.get((field, rule))
        if found is None:
            owners = self.phrase_table(field)[1]
            first, end = (int(i) for i in np.searchsorted(owners, [rule, rule + 1]))  # phrases in rule order
            texts = getattr(self.rule(rule), field)
            if len(texts) != end - first:
                raise ArtifactError(
                    str(self.path),
                    field,
                    f"rule {rule} has {len(texts)} phrases and {end - first} vectors; rebuild the index",
                )
            found = self._rule_phrases[(field, rule)] = RulePhrases(first, tuple(frozenset(keywords(t)) for t in texts))
        return found

    def example_row(self, rule: int, k: int) -> int | None:
        """The row of rule ``rule``'s ``k``-th example task; None if the index stores no such row (built before 1.3)."""
        row = int(np.searchsorted(self.example_rule, rule)) + k
        return row if row < len(self.example_rule) and int(self.example_rule[row]) == rule else None

    @contextmanager
    def leaving_out_example(self, row: int | None) -> Iterator[None]:
        """Queries inside do not match example task ``row`` (None: every one counts).

        ``ruledex check --examples`` asks whether a rule's content and its other examples find each
        example task, not whether the example finds itself.
        """
        self.left_out_example = row
        try:
            yield
        finally:
            self.left_out_example = None

    def phrase_overlaps(self, field: str, terms: set[str], rules: set[int]) -> dict[int, list[int]]:
        """The ``field`` phrases of ``rules`` sharing keywords with ``terms``.

        Row -> [rule, keywords shared, keywords in the phrase]. Phrases are indexed by keyword rule by
        rule, the first time a query needs their rule: nothing is decoded up front, and a query looks up
        its few terms (each once: ``terms`` is a set, so a row's count is its overlap) instead of
        testing every phrase of its rules.
        """
        by_word = self._phrases_by_word.setdefault(field, {})
        indexed = self._phrases_indexed.setdefault(field, set())
        for rule in sorted(rules - indexed):
            found = self.rule_phrases(field, rule)
            for row, words in enumerate(found.words, found.first):
                for word in words:
                    by_word.setdefault(word, []).append((row, rule, len(words)))
            indexed.add(rule)
        out: dict[int, list[int]] = {}
        for term in terms:
            for row, rule, size in by_word.get(term, ()):
                if rule in rules:
                    hit = out.get(row)
                    if hit is None:
                        out[row] = [rule, 1, size]
                    else:
                        hit[1] += 1
        return out

    @cached_property
    def directive_positions(self) -> dict[str, int]:
        """Directive id -> position (built once, on first use)."""
        return {self.directive(i).id: i for i in range(self.n_directives)}

    def _decode(self, blob: np.ndarray, offsets: np.ndarray, i: int, section: str) -> tuple[Any, ...]:
        start, end = int(offsets[i]), int(offsets[i + 1])
        try:
            return unpack_row(blob[start:end].tobytes())
        except (ValueError, msgpack.exceptions.ExtraData) as exc:
            raise self._damaged(section, ValueError(f"record {i}: {exc}")) from None

    def rule(self, i: int) -> RuleRecord:
        """Rule record ``i``, decoded on first access."""
        record = self._rules.get(i)
        if record is None:
            record = RuleRecord.from_row(self._decode(self._rule_bytes, self._rule_offsets, i, "rule_records"))
            self._rules[i] = record
        return record

    def directive(self, i: int) -> DirectiveRecord:
        """Directive record ``i``, decoded on first access."""
        record = self._directives.get(i)
        if record is None:
            record = DirectiveRecord.from_row(self._decode(self._dir_bytes, self._dir_offsets, i, "directive_records"))
            self._directives[i] = record
        return record

    def rules(self) -> list[RuleRecord]:
        """Every rule record, in index order."""
        return [self.rule(i) for i in range(self.n_rules)]

    @cached_property
    def rule_avgdl(self) -> float:
        """Mean whole-rule document length in keyword tokens."""
        return float(self.rule_kw_doc_len.mean()) if self.n_rules else 1.0

    @cached_property
    def rule_runs(self) -> tuple[np.ndarray, np.ndarray]:
        """(first directive position, rule) of every rule that has directives: they are stored in rule order."""
        rules = self.dir_rule.astype(np.int64)
        if not len(rules):
            return np.zeros(0, np.int64), rules
        starts = np.flatnonzero(np.concatenate(([True], rules[1:] != rules[:-1])))
        return starts, rules[starts]

    @cached_property
    def rule_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per rule, its directives' positions ``[start, end)`` (start == end for a rule without any)."""
        starts, rules = self.rule_runs
        start = np.zeros(self.n_rules, np.int64)
        end = np.zeros(self.n_rules, np.int64)
        start[rules] = starts
        end[rules] = np.append(starts[1:], self.n_directives)
        return start, end

    def per_rule_max(self, values: np.ndarray) -> np.ndarray:
        """The best of ``values`` (one per directive) within each rule; 0 for a rule with no directive."""
        out = np.zeros(self.n_rules, np.float32)
        starts, rules = self.rule_runs
        if len(starts):
            out[rules] = np.maximum.reduceat(values, starts)
        return out

    @cached_property
    def always_apply_rules(self) -> frozenset[int]:
        """Positions of the rules that always apply, from ``rule_flags`` (no record decoded)."""
        return frozenset(int(i) for i in np.flatnonzero(self.rule_flags & fmt.RULE_ALWAYS_APPLY))

    @cached_property
    def always_apply_order(self) -> tuple[tuple[int, tuple[DirectiveRecord, ...]], ...]:
        """Per rule that always applies (by position): its directives MUST first, then in document order.

        Every answer shows them in this order, so it is worked out once per index, not per query.
        """
        return tuple(
            (r, tuple(sorted(self.directives_of(r), key=lambda d: SEVERITIES.index(d.severity))))
            for r in sorted(self.always_apply_rules)
        )

    @cached_property
    def declared_share(self) -> float:
        """Share of the rules whose authors wrote their topics (``RULE_DECLARED``; 0 for an empty index)."""
        return float(np.count_nonzero(self.rule_flags & fmt.RULE_DECLARED)) / self.n_rules if self.n_rules else 0.0

    @cached_property
    def glob_rules(self) -> dict[int, RuleRecord]:
        """The rules tied to some files by globs, by position: only their records are decoded.

        A rule whose globs match every file (``**/*``) is tied to nothing in particular: it is left
        out: editing a file says nothing about it (no ``fileMatch``, no pull into the candidates).
        """
        rules = {int(i): self.rule(int(i)) for i in np.flatnonzero(self.rule_flags & fmt.RULE_HAS_GLOBS)}
        return {i: rule for i, rule in rules.items() if not matches_every_file(rule.globs)}

    def rule_directive_ids(self, rule_index: int) -> range:
        """Positions of one rule's directives (stored contiguously; read from ``rule_bounds``, no record decoded)."""
        start, end = self.rule_bounds
        return range(int(start[rule_index]), int(end[rule_index]))

    def directives_of(self, rule_index: int) -> list[DirectiveRecord]:
        """The directives of one rule, in document order."""
        return [self.directive(i) for i in self.rule_directive_ids(rule_index)]

    def find_rule(self, domain: str) -> int | None:
        """The index of the rule whose id or file stem is ``domain`` (case-insensitive)."""
        wanted = domain.strip().lower().removesuffix(".md")
        for i, rule in enumerate(self.rules()):
            stem = rule.path.rsplit("/", 1)[-1].removesuffix(".md").lower()
            if wanted in (rule.id.lower(), stem, rule.path.lower().removesuffix(".md")):
                return i
        return None

    def _term(self, i: int) -> bytes:
        return self._terms[int(self._term_offsets[i]) : int(self._term_offsets[i + 1])].tobytes()

    def term_id(self, term: str) -> int | None:
        """Binary-search a keyword term in the sorted term table (memoised: queries repeat words)."""
        if term in self._term_ids:
            return self._term_ids[term]
        if len(self._term_ids) >= TERM_MEMO:  # a long-running server sees unbounded vocabularies
            self._term_ids.clear()
        found = self._search_term(term)
        self._term_ids[term] = found
        return found

    def _search_term(self, term: str) -> int | None:
        key = term.encode()
        lo, hi = 0, len(self._term_offsets) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self._term(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self._term_offsets) - 1 and self._term(lo) == key:
            return lo
        return None

    def rule_postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Rule ids and term frequencies of one term in the whole rule documents."""
        start, end = int(self.rule_kw_indptr[term_id]), int(self.rule_kw_indptr[term_id + 1])
        return self.rule_kw_postings[start:end], self.rule_kw_tf[start:end]

    def close(self) -> None:
        """Release the memory map."""
        self.__dict__.pop("encoder", None)
        self.artifact.close()

    def __enter__(self) -> Index:
        """Context-manager support."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close on exit."""
        self.close()
