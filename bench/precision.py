"""``python -m bench.precision``: how many of the directives a block shows are relevant, by graded judgments.

``ruledex eval`` ranks documents: it cannot see which directives of a right document the block
picked. Here separate sessions graded, for 160 bundled-rule tasks (80 labeled, 80 fresh, in two
rounds: the second checked what the first decided), every directive any of several rankings
showed: 2 = governs the work, 1 = somewhat relevant, 0 = not
(``tests/data/judged_directives_bundled.jsonl``, one ``{"id", "task", "grades": {directive id:
grade}}`` per task). For each ranking named with ``--ranking`` this answers every task and reports
the block's share of directives graded 1 or 2, the grade-2 directives per block, and how many shown
directives had no grade (they count in neither; a high share means the judgments need topping up).
Directives of rules that always apply are shown for every task, not picked for it, so they count in
none of these.

Example: python -m bench.precision --judgments tests/data/judged_directives_bundled.jsonl \
    --index /tmp/bundled.ruledex --ranking index --ranking default
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ruledex.reader import query
from ruledex.reader.errors import ConfigError
from ruledex.reader.index import Index
from ruledex.reader.rank import DECLARED_RANKING, DEFAULT_RANKING, Ranking

from .labeled import print_result
from .report import table

RANKINGS: dict[str, Ranking | None] = {"index": None, "default": DEFAULT_RANKING, "declared": DECLARED_RANKING}
"""``index``: the ranking the index picks for itself; the others force one for every index."""


def load_judgments(path: Path) -> list[dict[str, Any]]:
    """Each task's id, text and grades; an error names the line that does not fit."""
    out = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            grades = {str(k): int(v) for k, v in row["grades"].items()}
            out.append({"id": str(row["id"]), "task": str(row["task"]), "grades": grades})
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f'{path}:{number}: expected {{"id", "task", "grades": {{id: 0|1|2}}}} ({exc})') from None
        if any(g not in (0, 1, 2) for g in grades.values()):
            raise ConfigError(f"{path}:{number}: grades are 0, 1 or 2")
    if not out:
        raise ConfigError(f"{path}: no judged tasks")
    return out


def block_scores(shown: list[str], grades: dict[str, int]) -> tuple[float | None, int, int]:
    """(share graded 1-2 among the judged shown directives, grade-2 count, unjudged count) for one block."""
    judged = [grades[d] for d in shown if d in grades]
    share = sum(g >= 1 for g in judged) / len(judged) if judged else None
    return share, sum(g == 2 for g in judged), len(shown) - len(judged)


@contextmanager
def forced(ranking: Ranking | None) -> Iterator[None]:
    """Answer with ``ranking`` whatever the index would pick (``None``: the index's own)."""
    if ranking is None:
        yield
        return
    own = query.ranking_for
    query.ranking_for = lambda _share: ranking  # type: ignore[assignment]  # rank_task looks it up per call
    try:
        yield
    finally:
        query.ranking_for = own  # type: ignore[assignment]


def run(judgments: Path, index_path: Path, rankings: list[str]) -> dict[str, Any]:
    """Block precision per ranking over the judged tasks."""
    tasks = load_judgments(judgments)
    rows = []
    with Index(index_path) as index:
        for name in rankings:
            shares, twos, unjudged, shown = [], [], 0, 0
            with forced(RANKINGS[name]):
                for t in tasks:
                    citations = query.query_directives(index, t["task"])["citations"]
                    ids = [c["id"] for c in citations if not c.get("alwaysApply")]  # the picks, not the always-on
                    share, two, missing = block_scores(ids, t["grades"])
                    if share is not None:
                        shares.append(share)
                    twos.append(two)
                    unjudged += missing
                    shown += len(ids)
            rows.append(
                {
                    "ranking": name,
                    "tasks": len(tasks),
                    "precision": round(statistics.mean(shares), 4) if shares else None,
                    "grade2PerBlock": round(statistics.mean(twos), 3),
                    "unjudgedShare": round(unjudged / shown, 4) if shown else 0.0,
                }
            )
    return {"judgments": str(judgments), "rankings": rows}


def format_table(result: dict[str, Any]) -> str:
    """One line per ranking."""
    rows = [
        [r["ranking"], r["tasks"], f"{r['precision']:.3f}", f"{r['grade2PerBlock']:.2f}", f"{r['unjudgedShare']:.1%}"]
        for r in result["rankings"]
    ]
    return table(("ranking", "tasks", "precision", "grade-2 per block", "unjudged"), rows)


def main(argv: list[str] | None = None) -> int:
    """Command line: judgments, an index and the rankings to compare; a table, or JSON with ``--json``."""
    p = argparse.ArgumentParser(
        prog="python -m bench.precision",
        description="Share of relevant directives in each block, by graded judgments, for one or more rankings.",
    )
    p.add_argument("--judgments", type=Path, required=True, help="JSONL {id, task, grades: {directive id: 0|1|2}}")
    p.add_argument("--index", type=Path, required=True, help="index built from the rules the judgments grade")
    p.add_argument(
        "--ranking",
        action="append",
        choices=tuple(RANKINGS),
        help="index (its own, the default), default or declared; repeat to compare",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    args = p.parse_args(argv)
    return print_result(args, lambda: run(args.judgments, args.index, args.ranking or ["index"]), format_table)


if __name__ == "__main__":
    sys.exit(main())
