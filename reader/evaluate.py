"""Measure retrieval quality: ``ruledex eval`` over a labeled query set, beside a BM25 floor.

A query line is ``{"id", "task", "relevant": {"<source path>": grade}, "layer", "topics"}`` with
grades 2 (must be picked) and 1 (useful), and optionally ``"files"``: the paths the developer is
editing, passed as the query's ``files`` option (:func:`with_files` adds them from a separate file). ruledex's ranking of source documents is the order in
which the answer first names them: the citations of the block, then the candidates the block left
out (``diagnostics.omitted``, in rank order). The floor is plain BM25 over whole documents with the
same keyword tokenizer, computed in the same run: over the source files as written when the rules
folder is given (what a naive setup would search or paste in), else over the index's rendering of
each rule, which leaves out what the parser keeps no directive from (code under a heading with no
list, plain paragraphs) and so understates the floor.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .catalog import render_rule
from .errors import ConfigError
from .format import json_kind
from .index import Index
from .options import EVAL_K
from .query import query_directives
from .rank import RankWeights
from .records import blob_id
from .text import count_tokens, keywords
from .vocab import TASK_LAYERS, TOPICS


def cutoffs(k: int = EVAL_K) -> list[int]:
    """The cutoffs reported: 5 always, and ``k``."""
    return sorted({5, k})


def metric_names(k: int = EVAL_K) -> tuple[str, ...]:
    """The reported metrics for cutoff ``k``: nDCG and Recall at 5 and at ``k``, then MRR."""
    return (*(f"ndcg@{c}" for c in cutoffs(k)), *(f"recall@{c}" for c in cutoffs(k)), "mrr")


METRICS = metric_names()


@dataclass(frozen=True)
class LabeledQuery:
    """One labeled task."""

    id: str
    task: str
    relevant: dict[str, int]
    layer: str | None
    topics: tuple[str, ...]
    files: tuple[str, ...] = ()
    """The files being edited, as an IDE would pass them (``options.files``)."""


def _paths(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise TypeError(f"files: expected a list of paths, got {value!r}")
    return tuple(value)


def _read(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ConfigError(f"{path}: cannot read it ({reason}); pass a JSONL file") from None


def _labeled(raw: Any) -> LabeledQuery:
    """One query line's fields, checked: a ``ValueError`` names the field and what it must be.

    A layer or topic outside the vocabulary, or an empty task, would not fail: it would quietly
    score every system as wrong on that task, so a typo would pass for a ranking result.
    """
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object, got {json_kind(raw)}")
    missing = [key for key in ("id", "task", "relevant") if key not in raw]
    if missing:
        raise ValueError(f'missing "{missing[0]}"')
    if not isinstance(raw["task"], str) or not raw["task"].strip():
        raise ValueError(f"task: must be the task's text, got {raw['task']!r}")
    if not isinstance(raw["relevant"], dict) or not raw["relevant"]:
        raise ValueError(f"relevant: must be an object of rule paths and grades, got {raw['relevant']!r}")
    try:
        relevant = {str(k): int(v) for k, v in raw["relevant"].items()}
    except (TypeError, ValueError):
        raise ValueError(
            f"relevant: grades must be whole numbers (2 must be picked, 1 useful), got {raw['relevant']!r}"
        ) from None
    layer = raw.get("layer")
    if layer is not None and layer not in TASK_LAYERS:
        raise ValueError(f"layer: unknown layer {layer!r}; use one of {', '.join(TASK_LAYERS)}, or leave it out")
    topics = raw.get("topics", [])
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise ValueError(f"topics: expected a list of topic names, got {topics!r}")
    unknown = [t for t in topics if t not in TOPICS]
    if unknown:
        raise ValueError(f"topics: unknown topic {unknown[0]!r}; use names from {', '.join(TOPICS)}")
    return LabeledQuery(str(raw["id"]), raw["task"], relevant, layer, tuple(topics), _paths(raw.get("files", [])))


def load_queries(path: Path) -> list[LabeledQuery]:
    """Read a JSONL query set; errors name the file, line and field."""
    out = []
    for number, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append(_labeled(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: not JSON ({exc}); write one JSON object per line") from None
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f'{path}:{number}: {exc}; a line is {{"id", "task", "relevant": {{path: grade}}, "layer", "topics"}}'
            ) from None
    if not out:
        raise ConfigError(f"{path}: no queries")
    return out


def with_files(queries: list[LabeledQuery], path: Path) -> list[LabeledQuery]:
    """The queries with the edited files of a JSONL file of ``{"id", "files": [path, ...]}`` lines.

    Every query must have a line, so a partial file cannot pass for the whole set, and every line a
    query, so another set's file cannot pass for this one; errors name the file, line and id.
    """
    files: dict[str, tuple[str, ...]] = {}
    for number, line in enumerate(_read(path).splitlines(), start=1):
        if not line.strip():
            continue
        expected = '{"id": "q001", "files": ["src/app.py"]}'
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"{path}:{number}: not JSON ({exc}); write one object per line, like {expected}"
            ) from None
        if not isinstance(raw, dict) or "id" not in raw or "files" not in raw:
            what = (
                "an object without " + " and ".join(f'"{k}"' for k in ("id", "files") if k not in raw)
                if isinstance(raw, dict)
                else json_kind(raw)
            )
            raise ConfigError(f"{path}:{number}: not a files line ({what}); expected an object like {expected}")
        try:
            files[str(raw["id"])] = _paths(raw["files"])
        except TypeError as exc:
            raise ConfigError(
                f"{path}:{number}: not a files line ({exc}); expected an object like {expected}"
            ) from None
    missing = [q.id for q in queries if q.id not in files]
    if missing:
        raise ConfigError(
            f"{path}: no files line for {len(missing)} queries, e.g. {', '.join(missing[:3])}; a task asked "
            f'without files needs one too: {{"id": "{missing[0]}", "files": []}}'
        )
    asked = {q.id for q in queries}
    extra = [i for i in files if i not in asked]
    if extra:  # ids like q001 recur across sets: a stray one says this file belongs to another set
        raise ConfigError(
            f"{path}: files lines for {len(extra)} id(s) that are no task of the query set, e.g. "
            f"{', '.join(extra[:3])}; pass the files file written for these queries"
        )
    return [replace(q, files=files[q.id]) for q in queries]


def dcg(grades: list[int], k: int) -> float:
    """Discounted cumulative gain of the first ``k`` grades, gain 2^g - 1."""
    return sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(grades[:k]))


def ranking_metrics(ranked: list[str], relevant: dict[str, int], k: int = EVAL_K) -> dict[str, float]:
    """Metrics of a ranked list of source paths: nDCG and Recall (grade >= 1) at 5 and ``k``, and MRR."""
    grades = [relevant.get(doc, 0) for doc in ranked]
    ideal = sorted(relevant.values(), reverse=True)
    wanted = {doc for doc, g in relevant.items() if g > 0}
    first = next((i for i, doc in enumerate(ranked) if doc in wanted), None)
    out = {f"ndcg@{c}": (dcg(grades, c) / dcg(ideal, c) if dcg(ideal, c) else 0.0) for c in cutoffs(k)}
    out |= {f"recall@{c}": (len(wanted & set(ranked[:c])) / len(wanted) if wanted else 0.0) for c in cutoffs(k)}
    out["mrr"] = 1.0 / (first + 1) if first is not None else 0.0
    return out


def topic_f1(predicted: list[str], gold: tuple[str, ...]) -> float:
    """F1 of predicted against gold topics (1.0 when both are empty)."""
    if not predicted and not gold:
        return 1.0
    hit = len(set(predicted) & set(gold))
    if not hit:
        return 0.0
    precision, recall = hit / len(set(predicted)), hit / len(set(gold))
    return 2 * precision * recall / (precision + recall)


def ruledex_ranking(answer: dict[str, Any], index: Index) -> list[str]:
    """Source paths in the order the answer first names them: ranked citations, then omitted candidates.

    Rules that always apply come last: the block shows them for every task, so where they appear
    says nothing about how the task was ranked (unless the ranking itself cited them first).
    """
    positions = index.directive_positions
    citations = answer["citations"]
    ordered = [c["sourcePath"] for c in citations if not c.get("alwaysApply")]
    ordered += [
        index.rule(index.directive(positions[o["id"]]).rule).path
        for o in answer["diagnostics"]["omitted"]
        if o["id"] in positions
    ]
    ordered += [c["sourcePath"] for c in citations if c.get("alwaysApply")]
    return list(dict.fromkeys(ordered))


class DocumentBM25:
    """Plain BM25 over whole documents (``{source path: text}``): the floor ruledex must beat."""

    def __init__(self, documents: dict[str, str], k1: float = 1.2, b: float = 0.75) -> None:
        """Tokenize every document once with the shared keyword tokenizer."""
        self.paths = list(documents)
        self.docs = [Counter(keywords(text)) for text in documents.values()]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avgdl = (sum(self.lengths) / len(self.lengths)) if self.lengths else 1.0
        self.df = Counter(term for d in self.docs for term in d)
        self.k1, self.b = k1, b

    def rank(self, task: str) -> list[str]:
        """Source paths by descending BM25, ties by path."""
        n = len(self.docs)
        terms = set(keywords(task))
        scores = []
        for doc, length, path in zip(self.docs, self.lengths, self.paths, strict=True):
            s = 0.0
            for term in terms:
                tf = doc.get(term, 0)
                if tf:
                    idf = math.log((n - self.df[term] + 0.5) / (self.df[term] + 0.5) + 1.0)
                    s += idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * length / self.avgdl))
            scores.append((-s, path))
        return [path for s, path in sorted(scores) if s < 0]


@dataclass(frozen=True)
class FloorDocuments:
    """The documents the floor searches, and what they are (for the report)."""

    texts: dict[str, str]
    root: str = ""
    """The rules folder the files were read from; empty for the index's rendering."""
    changed: tuple[str, ...] = ()
    """Source files whose content differs from what the index was built from."""

    @property
    def kind(self) -> str:
        """``"source files"`` or ``"index rendering"``."""
        return "source files" if self.root else "index rendering"

    def describe(self) -> str:
        """What the floor searched, for the report's last line."""
        if self.kind == "index rendering":
            return "the index's rendering of each rule (pass --rules DIR for the source files as written)"
        changed = f"; {len(self.changed)} changed since the build" if self.changed else ""
        return f"the {len(self.texts)} source files as written in {self.root}{changed}"


def rendered_documents(index: Index) -> FloorDocuments:
    """Each rule as the index renders it (``ruledex show``): all an index alone can give."""
    return FloorDocuments({index.rule(i).path: render_rule(index, i) for i in range(index.n_rules)})


def source_documents(index: Index, root: Path) -> FloorDocuments:
    """Each rule's source file as written, read from ``root``, the folder the index was built from.

    A missing or unreadable file is an error naming it; a file edited since the build is read as it
    is now and listed in ``changed``.
    """
    if not Path(root).is_dir():
        raise ConfigError(f"{root}: not a folder; pass --rules the folder the index was built from")
    texts: dict[str, str] = {}
    changed = []
    for rule in index.rules():
        path = Path(root) / rule.path
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{path}: cannot read the source of rule {rule.id!r} ({type(exc).__name__}); "
                "pass --rules the folder the index was built from"
            ) from None
        texts[rule.path] = text
        if rule.blob and blob_id(text) != rule.blob:
            changed.append(rule.path)
    return FloorDocuments(texts, str(root), tuple(changed))


def floor_documents(index: Index, rules_dir: Path | None) -> FloorDocuments:
    """The source files in ``rules_dir`` when given, else the index's rendering of each rule."""
    return source_documents(index, rules_dir) if rules_dir is not None else rendered_documents(index)


def evaluate(
    index: Index,
    queries: list[LabeledQuery],
    options: dict[str, Any] | None = None,
    k: int = EVAL_K,
    rules_dir: Path | None = None,
    weights: RankWeights | None = None,
) -> dict[str, Any]:
    """Run every query; return mean metrics for ruledex and the BM25 floor (cutoffs 5 and ``k``), and per-query rows.

    With ``rules_dir`` the floor, and the tokens a naive setup pastes in, are taken from the source
    files as written; without it, from the index's rendering of each rule. ``weights`` replace the
    index's own ranking weights (for tuning them: ``python -m bench.tune``).
    """
    if k < 1:
        raise ConfigError(f"k: must be at least 1, got {k}")
    documents = floor_documents(index, rules_dir)
    floor = DocumentBM25(documents.texts)
    all_rules_tokens = sum(count_tokens(text) for text in documents.texts.values())
    rows = []
    for q in queries:
        opts = {**(options or {}), "files": list(q.files)} if q.files else options
        answer = query_directives(index, q.task, options=opts, weights=weights)
        ours = ruledex_ranking(answer, index)
        base = floor.rank(q.task)
        diag = answer["diagnostics"]
        rows.append(
            {
                "id": q.id,
                "task": q.task,
                "ruledex": ranking_metrics(ours, q.relevant, k),
                "bm25": ranking_metrics(base, q.relevant, k),
                "layerCorrect": q.layer is None or diag["detectedLayer"] == q.layer,
                "detectedLayer": diag["detectedLayer"],
                "topicF1": topic_f1(diag["topics"], q.topics),
                "tokens": diag["tokens"],
                "ranked": ours[: max(k, EVAL_K)],
            }
        )
    n = len(rows)
    known = {rule.path for rule in index.rules()}
    unknown = sorted({path for q in queries for path in q.relevant if path not in known})

    def mean(system: str) -> dict[str, float]:
        return {m: round(sum(r[system][m] for r in rows) / n, 4) for m in metric_names(k)}

    tokens = sum(r["tokens"] for r in rows) / n
    return {
        "queries": n,
        "k": k,
        "ruledex": mean("ruledex"),
        "bm25": mean("bm25"),
        "floorDocuments": {
            "kind": documents.kind,
            "root": documents.root,
            "changedSinceBuild": list(documents.changed),
        },
        "floorDescription": documents.describe(),
        "layerAccuracy": round(sum(r["layerCorrect"] for r in rows) / n, 4),
        "topicF1": round(sum(r["topicF1"] for r in rows) / n, 4),
        "meanTokens": round(tokens, 1),
        "allRulesTokens": all_rules_tokens,
        "tokenSavings": round(1 - tokens / all_rules_tokens, 4) if all_rules_tokens else 0.0,
        "unknownRelevant": unknown,
        "rows": rows,
    }


def format_report(report: dict[str, Any]) -> str:
    """A plain-text table of the means, ruledex beside the BM25 floor."""
    lines = [f"{'metric':<12}{'ruledex':>10}{'bm25 floor':>12}{'delta':>9}"]
    for m in report["ruledex"]:
        ours, base = report["ruledex"][m], report["bm25"][m]
        lines.append(f"{m:<12}{ours:>10.4f}{base:>12.4f}{ours - base:>+9.4f}")
    lines += [
        f"layer accuracy {report['layerAccuracy']:.3f}   topic F1 {report['topicF1']:.3f}   queries {report['queries']}",
        f"mean tokens per block {report['meanTokens']:.0f} vs {report['allRulesTokens']} for all rule documents "
        f"({report['tokenSavings']:.1%} fewer)",
        f"floor: plain BM25 over {report['floorDescription']}",
    ]
    unknown = report.get("unknownRelevant") or []
    if unknown:
        lines.append(
            f"warning: {len(unknown)} relevant path(s) are no rule of this index, so no system can rank them "
            f"(paths are relative to the folder the index was built from): {', '.join(unknown[:5])}"
        )
    return "\n".join(lines) + "\n"
