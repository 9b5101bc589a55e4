"""``python -m bench.assistant``: does an assistant given ruledex's block follow the rules better?

Issue #4's aim is that an assistant given ruledex's block does better than one given every rule.
``ruledex eval`` measures a proxy (which documents the block names); this measures the aim itself,
end to end, on tasks for the bundled rules. Separate sessions played the assistant: for each task
each wrote a short plan (3-7 bullets, at most 120 words) given one context: ruledex's block for
the task (``block``, or a variant of it), all 17 rule files in full (``all``), or no rules
(``none``). Other sessions, which read every rule file, graded all the plans of a task together,
shuffled under letters: first the rule statements that apply to the task (``applicable``, before reading the plans),
then per plan the statements it honors, those it contradicts, and a 0-10 score for following the
rules that apply. Each batch of tasks was graded by two judges.

Four rounds, each graded by its own judges: ``tests/data/assistant_bundled.jsonl`` (the block as
it was, every rule file, no rules), ``assistant_bundled_variants.jsonl`` (beside those: the block
followed by every core directive, and a wider block with them), ``assistant_bundled_shipped.jsonl``
(the block once rules that always apply follow every answer, at the default options and at
``maxItems`` 12 / ``tokenBudget`` 1500, beside the first three) and ``assistant_bundled_cut.jsonl``
(the shipped block beside the same without its relevance cut, at both sizes); and, on 40 tasks of
the Cursor corpus with all 80 guides as ``all``, ``assistant_cursorrules.jsonl``.
Each holds it all, de-blinded, one line per task; the contexts are the keys of ``plans``::

    {"id", "task", "contexts": {"block": markdown, ...}, "tokens": {"block": n, "all": n, "none": 0},
     "plans": {"block": str, "all": str, "none": str},
     "judgments": [{"judge": str, "applicable": [str, ...],
                    "grades": {"block": {"honors": [i, ...], "contradicts": [i, ...], "score": 0-10}, ...}}]}

This reports, per context: mean score, the share of applicable statements honored, contradictions
per plan and context tokens; per pair of contexts the paired score difference with its standard
error and wins / ties / losses; and how often the two judges order two plans the same way.

Example: python -m bench.assistant --results tests/data/assistant_bundled_shipped.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruledex.reader.errors import ConfigError

from .labeled import print_result
from .report import table

CONTEXTS = ("block", "all", "none")
"""The contexts of the first round: ruledex's block, every rule file, nothing. A results file may
hold others (variants of the block); it names its contexts by the keys of its first line's plans."""


@dataclass(frozen=True)
class Grade:
    """One judge's grade of one plan."""

    honors: int
    contradicts: int
    applicable: int
    score: float

    @property
    def coverage(self) -> float:
        """Share of the applicable statements the plan honors."""
        return self.honors / self.applicable if self.applicable else 0.0


@dataclass(frozen=True)
class Task:
    """A task, the context tokens of each condition, and every judge's grade per condition."""

    id: str
    tokens: dict[str, int]
    grades: dict[str, dict[str, Grade]]
    """judge -> context -> grade."""
    text: str = ""
    """The task as the assistants read it."""
    lists: tuple[tuple[str, ...], ...] = ()
    """Each judge's ``applicable`` statements, ``"<file>: <quote>"``, in the order of ``grades``."""

    @property
    def contexts(self) -> tuple[str, ...]:
        """The contexts graded, in the file's order."""
        return tuple(self.tokens)


def _grade(raw: dict[str, Any], applicable: int, where: str) -> Grade:
    honors, contradicts, score = raw["honors"], raw["contradicts"], raw["score"]
    positions = [*honors, *contradicts]
    if any(not isinstance(i, int) or not 0 <= i < applicable for i in positions):
        raise ConfigError(f"{where}: honors/contradicts must be positions in 'applicable' (0..{applicable - 1})")
    if not isinstance(score, int | float) or not 0 <= score <= 10:
        raise ConfigError(f"{where}: score must be a number from 0 to 10, got {score!r}")
    return Grade(len(set(honors)), len(set(contradicts)), applicable, float(score))


def load_results(path: Path) -> list[Task]:
    """Every task with its grades; an error names the line and field that do not fit."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the graded plans ({exc})") from None
    tasks: list[Task] = []
    contexts: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
            contexts = contexts or tuple(row["plans"])
            tokens = {c: int(row["tokens"][c]) for c in contexts}
            missing = [c for c in contexts if not str(row["plans"].get(c, "")).strip()]
            if missing:
                raise ConfigError(f"{where}: no plan for context(s) {', '.join(missing)}")
            grades: dict[str, dict[str, Grade]] = {}
            lists = tuple(tuple(str(s) for s in judgment["applicable"]) for judgment in row["judgments"])
            for judgment in row["judgments"]:
                applicable = len(judgment["applicable"])
                grades[str(judgment["judge"])] = {
                    c: _grade(judgment["grades"][c], applicable, f"{where}: judge {judgment['judge']}, {c}")
                    for c in contexts
                }
            if not grades:
                raise ConfigError(f"{where}: no judgments")
            tasks.append(Task(str(row["id"]), tokens, grades, str(row["task"]), lists))
        except (ValueError, KeyError, TypeError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(
                f'{where}: expected {{"id", "task", "tokens", "plans", "judgments": [{{"judge", "applicable", "grades"}}]}} '
                f"with every context of the first line, {contexts} ({type(exc).__name__}: {exc})"
            ) from None
    if not tasks:
        raise ConfigError(f"{path}: no graded tasks")
    return tasks


def _mean_over_judges(task: Task, context: str, field: str) -> float:
    return statistics.mean(getattr(by_context[context], field) for by_context in task.grades.values())


def _stderr(values: list[float]) -> float:
    return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def summarize(tasks: list[Task]) -> dict[str, Any]:
    """Per context, per pair of contexts, and the judges' agreement (see the module docstring)."""
    contexts = []
    for c in tasks[0].contexts:
        scores = [_mean_over_judges(t, c, "score") for t in tasks]
        contexts.append(
            {
                "context": c,
                "score": round(statistics.mean(scores), 3),
                "scoreStderr": round(_stderr(scores), 3),
                "coverage": round(statistics.mean(_mean_over_judges(t, c, "coverage") for t in tasks), 3),
                "contradictions": round(statistics.mean(_mean_over_judges(t, c, "contradicts") for t in tasks), 3),
                "tokens": round(statistics.mean(t.tokens[c] for t in tasks), 1),
            }
        )
    pairs = []
    for a, b in itertools.combinations(tasks[0].contexts, 2):
        diffs = [_mean_over_judges(t, a, "score") - _mean_over_judges(t, b, "score") for t in tasks]
        pairs.append(
            {
                "pair": f"{a} - {b}",
                "difference": round(statistics.mean(diffs), 3),
                "stderr": round(_stderr(diffs), 3),
                "wins": sum(d > 0 for d in diffs),
                "ties": sum(d == 0 for d in diffs),
                "losses": sum(d < 0 for d in diffs),
            }
        )
    return {
        "tasks": len(tasks),
        "judgesPerTask": round(statistics.mean(len(t.grades) for t in tasks), 2),
        "contexts": contexts,
        "pairs": pairs,
        "judgeAgreement": judge_agreement(tasks),
    }


def judge_agreement(tasks: list[Task]) -> float | None:
    """Of the plan pairs that two judges of a task both order (neither calls a tie), the share ordered alike."""
    same = total = 0
    for t in tasks:
        for first, second in itertools.combinations(t.grades.values(), 2):
            for a, b in itertools.combinations(t.contexts, 2):
                one, two = first[a].score - first[b].score, second[a].score - second[b].score
                if one and two:
                    total += 1
                    same += (one > 0) == (two > 0)
    return round(same / total, 3) if total else None


def format_table(result: dict[str, Any]) -> str:
    """The per-context table, then the paired differences."""
    head = table(
        ("context", "score (0-10)", "+-", "applicable honored", "contradictions", "context tokens"),
        [
            [r["context"], f"{r['score']:.2f}", f"{r['scoreStderr']:.2f}", f"{r['coverage']:.3f}",
             f"{r['contradictions']:.2f}", f"{r['tokens']:,.0f}"]
            for r in result["contexts"]
        ],
    )  # fmt: skip
    pairs = table(
        ("pair", "score difference", "+-", "wins", "ties", "losses"),
        [
            [r["pair"], f"{r['difference']:+.2f}", f"{r['stderr']:.2f}", r["wins"], r["ties"], r["losses"]]
            for r in result["pairs"]
        ],
    )
    agreement = result["judgeAgreement"]
    return (
        f"{result['tasks']} tasks, {result['judgesPerTask']} judges per task\n{head}\n\n{pairs}\n\n"
        f"judges order two plans alike: {'-' if agreement is None else f'{agreement:.1%}'}"
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: the graded results file; a table, or JSON with ``--json``."""
    p = argparse.ArgumentParser(
        prog="python -m bench.assistant",
        description="Score assistants' plans written with ruledex's block, with every rule file and with no "
        "rules, as graded by judges who read every rule.",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "tests" / "data" / "assistant_bundled_shipped.jsonl",
        help="JSONL of graded plans (default: tests/data/assistant_bundled_shipped.jsonl, the latest round)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    args = p.parse_args(argv)
    return print_result(args, lambda: summarize(load_results(args.results)), format_table)


if __name__ == "__main__":
    sys.exit(main())
