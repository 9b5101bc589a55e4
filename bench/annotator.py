"""``python -m bench.annotator``: how an independent reader scores on a labeled set, the ceiling of its labels.

Issue #4 asks ruledex to beat the BM25 floor by 0.10 nDCG@10. Whether that is reachable depends on
how far the labels can be agreed with at all. A separate session, which saw only the task texts and
the rule documents (never the labels), read each task and listed the documents an assistant should
be given, most important first, graded 2 (must) or 1 (useful): ``tests/data/annotator_*.jsonl``,
one line ``{"id", "ranked": [path, ...], "grades": {path: grade}}`` per task. This scores that
reading with ``ruledex eval``'s own metrics, alone and with the floor's ranking appended after the
reader's own picks (a reader lists 1-2 documents; a system may name ten), beside ruledex and the
floor of the same run.

Example: python -m bench.annotator --queries tests/data/eval_bundled.jsonl \
    --rankings tests/data/annotator_bundled.jsonl --index /tmp/bundled.ruledex --rules rules
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ruledex.reader.errors import ConfigError
from ruledex.reader.evaluate import METRICS, DocumentBM25, evaluate, floor_documents, load_queries, ranking_metrics
from ruledex.reader.index import Index

from .labeled import labeled_set_parser, print_result
from .report import table


def load_rankings(path: Path, query_ids: list[str], documents: set[str]) -> dict[str, list[str]]:
    """Each task's ranked documents; an error names the line of a task, id or path that does not fit."""
    rankings: dict[str, list[str]] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            qid, ranked = row["id"], row["ranked"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f'{path}:{number}: expected {{"id", "ranked": [path, ...]}} ({exc})') from None
        unknown = [p for p in ranked if p not in documents]
        if unknown:
            raise ConfigError(f"{path}:{number}: {qid}: no such document in the index: {', '.join(unknown)}")
        rankings[qid] = list(dict.fromkeys(ranked))
    missing = [q for q in query_ids if q not in rankings]
    if missing:
        raise ConfigError(f"{path}: no ranking for {len(missing)} task(s), first {missing[0]}")
    return rankings


def padded(own: list[str], floor: list[str]) -> list[str]:
    """The reader's picks, then the floor's ranking of every other document."""
    return list(dict.fromkeys([*own, *floor]))


def run(queries_path: Path, rankings_path: Path, index_path: Path, rules_dir: Path | None = None) -> dict[str, Any]:
    """Mean metrics of the reader, the reader padded with the floor, ruledex and the floor."""
    queries = load_queries(queries_path)
    with Index(index_path) as index:
        documents = floor_documents(index, rules_dir)
        rankings = load_rankings(rankings_path, [q.id for q in queries], set(documents.texts))
        floor = DocumentBM25(documents.texts)
        report = evaluate(index, queries, rules_dir=rules_dir)
    rows: dict[str, list[dict[str, float]]] = {"reader": [], "readerThenFloor": []}
    for q in queries:
        own = rankings[q.id]
        rows["reader"].append(ranking_metrics(own, q.relevant))
        rows["readerThenFloor"].append(ranking_metrics(padded(own, floor.rank(q.task)), q.relevant))
    n = len(queries)
    means = {name: {m: round(sum(r[m] for r in got) / n, 4) for m in METRICS} for name, got in rows.items()}
    return {
        "queries": n,
        "meanDocuments": round(sum(len(rankings[q.id]) for q in queries) / n, 2),
        **means,
        "ruledex": report["ruledex"],
        "bm25": report["bm25"],
        "documents": report["floorDescription"],
    }


def format_table(result: dict[str, Any]) -> str:
    """The four rankings side by side, and floor + 0.10 (issue #4's target) for nDCG@10."""
    systems = ("reader", "readerThenFloor", "ruledex", "bm25")
    rows = [[m, *(f"{result[s][m]:.3f}" for s in systems)] for m in METRICS]
    return "\n".join(
        [
            f"{result['queries']} tasks; the reader names {result['meanDocuments']} documents per task",
            f"documents: {result['documents']}",
            table(("metric", "reader", "reader+floor", "ruledex", "bm25"), rows),
            f"floor + 0.10 (issue #4's nDCG@10 target): {result['bm25']['ndcg@10'] + 0.10:.3f}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: a labeled set, the reader's rankings of it and its index; a table, or JSON."""
    p = labeled_set_parser(
        "python -m bench.annotator",
        "Score an independent reader's document picks on a labeled query set with ruledex eval's "
        "metrics, alone and padded with the BM25 floor, beside ruledex and the floor (issue #4's ceiling).",
    )
    p.add_argument("--rankings", type=Path, required=True, help="JSONL {id, ranked: [path, ...]} per task")
    args = p.parse_args(argv)
    return print_result(args, lambda: run(args.queries, args.rankings, args.index, args.rules), format_table)


if __name__ == "__main__":
    sys.exit(main())
