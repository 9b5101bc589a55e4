"""``python -m bench.applicable``: how much of what judges said applies does a block show?

The end-to-end rounds (``python -m bench.assistant``) had judges, who read every rule file, list
the rule statements that apply to each of 40 bundled-rule tasks before grading any plan: 2,795
statements in 320 lists (eight per task), each ``"<file>: <short quote>"``. A plan's score followed
how many of them its context carried (the old block 22% of the round-1 lists, 7.8 of 10; every rule
file all of them, 9.7). This measures, for any index and options, the share of those statements
that ruledex's block for the task shows, in seconds and without new judgments: a proxy for the
end-to-end score that ranking work can be checked against before a new round of grading.

A statement is resolved to the directive of its file whose keywords cover the most of the quote's
(at least half); every statement of the committed rounds resolves, to one directive. Statements
whose directive belongs to a rule that always applies are reported apart: every block shows them
while the budget lasts.

Example: python -m bench.applicable --index /tmp/bundled.ruledex
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
from ruledex.reader.text import keywords

from .assistant import load_results
from .labeled import print_result
from .report import table

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
ROUNDS = tuple(
    DATA / f"assistant_bundled{suffix}.jsonl" for suffix in ("", "_variants", "_shipped", "_cut")
)  # fmt: skip
"""The graded rounds whose judges' lists are pooled by default."""

MIN_OVERLAP = 0.5
"""A statement resolves to a directive holding at least this share of the quote's keywords."""


@dataclass(frozen=True)
class JudgedTask:
    """A task and every list of statements judges said apply to it."""

    id: str
    task: str
    lists: list[tuple[str, ...]]


def load_lists(paths: list[Path]) -> list[JudgedTask]:
    """The tasks of every results file (read by ``bench.assistant``), their lists pooled by task id."""
    tasks: dict[str, JudgedTask] = {}
    for path in paths:
        for graded in load_results(path):
            tasks.setdefault(graded.id, JudgedTask(graded.id, graded.text, [])).lists.extend(graded.lists)
    return list(tasks.values())


def directive_keywords(index: Index) -> dict[str, list[tuple[str, frozenset[str]]]]:
    """Per rule source path: each directive's id and keyword set."""
    out: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for r in range(index.n_rules):
        path = index.rule(r).path
        out[path] = [(d.id, frozenset(keywords(d.text))) for d in index.directives_of(r)]
    return out


def resolve(statement: str, by_path: dict[str, list[tuple[str, frozenset[str]]]]) -> str | None:
    """The directive a ``"<file>: <quote>"`` statement names, or None when no directive of that file fits."""
    path, _, quote = statement.partition(":")
    wanted = set(keywords(quote))
    best, share = None, 0.0
    for directive_id, words in by_path.get(path.strip(), ()):
        covered = len(wanted & words) / max(1, len(wanted))
        if covered > share:
            best, share = directive_id, covered
    return best if share >= MIN_OVERLAP else None


def run(index_path: Path, paths: list[Path], options: dict[str, Any]) -> dict[str, Any]:
    """Share of the judges' statements each task's block shows, pooled over tasks and lists."""
    tasks = load_lists(paths)
    shares: dict[str, list[float]] = {"all": [], "always": [], "picked": []}
    unmatched = statements = 0
    tokens, shown_counts = [], []
    with Index(index_path) as index:
        by_path = directive_keywords(index)
        always = {d.id for r in index.always_apply_rules for d in index.directives_of(r)}
        for t in tasks:
            answer = query_directives(index, t.task, options=options)
            shown = {c["id"] for c in answer["citations"]}
            tokens.append(answer["diagnostics"]["tokens"])
            shown_counts.append(len(shown))
            for statements_of_judge in t.lists:
                ids = [resolve(s, by_path) for s in statements_of_judge]
                statements += len(ids)
                unmatched += ids.count(None)
                found = [i for i in ids if i is not None]
                for part, members in (
                    ("all", found),
                    ("always", [i for i in found if i in always]),
                    ("picked", [i for i in found if i not in always]),
                ):
                    if members:
                        shares[part].append(sum(i in shown for i in members) / len(members))
    return {
        "index": str(index_path),
        "options": options,
        "tasks": len(tasks),
        "lists": sum(len(t.lists) for t in tasks),
        "statements": statements,
        "unmatched": unmatched,
        "shown": {k: round(statistics.mean(v), 4) if v else None for k, v in shares.items()},
        "tokens": round(statistics.mean(tokens), 1),
        "directives": round(statistics.mean(shown_counts), 2),
    }


def format_table(result: dict[str, Any]) -> str:
    """One line: the shares shown, then the block's size."""
    shown = result["shown"]
    row = [
        result["tasks"],
        result["lists"],
        f"{result['statements']} ({result['unmatched']} unmatched)",
        *("-" if shown[k] is None else f"{shown[k]:.3f}" for k in ("all", "always", "picked")),
        f"{result['directives']:.1f}",
        f"{result['tokens']:.0f}",
    ]
    heads = ("tasks", "lists", "statements", "shown", "of always-apply rules", "of the others", "directives", "tokens")
    return table(heads, [row])


def main(argv: list[str] | None = None) -> int:
    """Command line: an index and the block options; a table, or JSON with ``--json``."""
    p = argparse.ArgumentParser(
        prog="python -m bench.applicable",
        description="Share of the rule statements judges said apply to each task that ruledex's block shows "
        "(the judges' lists of the bench.assistant rounds).",
    )
    p.add_argument("--index", type=Path, required=True, help="index built from the bundled rules")
    p.add_argument(
        "--results",
        type=Path,
        action="append",
        help="graded rounds to take the judges' lists from (repeatable; default: all four committed rounds)",
    )
    p.add_argument("--max-items", type=int, help="maxItems for the blocks (default: the query default)")
    p.add_argument("--token-budget", type=int, help="tokenBudget for the blocks (default: the query default)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    args = p.parse_args(argv)
    options = {
        key: value
        for key, value in (("maxItems", args.max_items), ("tokenBudget", args.token_budget))
        if value is not None
    }
    return print_result(args, lambda: run(args.index, args.results or list(ROUNDS), options), format_table)


if __name__ == "__main__":
    sys.exit(main())
