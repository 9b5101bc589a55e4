"""``python -m bench.tune``: choose ranking weights by coordinate search on a labeled set, others held out.

The ranking weights (``reader/rank.py``) are chosen, and re-checked, this way: start from a
weight set, try each weight at 0, 0.5, 0.75, 1.25, 1.5 and 2 times its value, keep any change
that raises mean nDCG@10 on the tuning set by more than ``--min-gain``, and repeat until a pass
changes nothing. Every labeled set named with ``--check`` is measured before and after, never
searched. ``DECLARED_WEIGHTS`` came from this, at eff90d4 (before declared rules got their own
strict-layer threshold, which the search runs with now)::

    python -m bench.tune --queries tests/data/train_bundled.jsonl --index /tmp/bundled.ruledex \
        --start default --check tests/data/eval_bundled.jsonl

The tuning sets ``tests/data/train_*.jsonl`` are tasks of the task model's training set
(``builder/data/tasks.jsonl``), graded against the rules by a separate session. So that detection
is not flattered by tasks it was trained on, ``--held-out-model`` detects with a task model trained
without the tasks of every ``tests/data/train_*.jsonl`` (about 4 s to train).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ruledex.reader.evaluate import LabeledQuery, evaluate, load_queries, ranking_metrics, ruledex_ranking
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
from ruledex.reader.rank import DECLARED_WEIGHTS, DEFAULT_WEIGHTS, FEATURES, RankWeights, ranking_for

from .labeled import labeled_set_parser, print_result
from .report import table

REPO = Path(__file__).resolve().parents[1]
TRAIN_SETS = sorted((REPO / "tests" / "data").glob("train_*.jsonl"))
STEPS = (0.0, 0.5, 0.75, 1.25, 1.5, 2.0)
"""Multiples of a weight's current value tried in each pass (a weight at 0 also tries 1 and 2)."""
SEARCHED = tuple(name for name in FEATURES if name not in ("file_match", "always_apply"))
"""The weights searched: file_match and always_apply need edited files or alwaysApply rules, which
the labeled sets do not have."""


def candidates(value: float) -> list[float]:
    """The values a pass tries for a weight now at ``value`` (not ``value`` itself), ascending."""
    tried = {round(value * m, 3) for m in STEPS} | ({1.0, 2.0} if value == 0 else set())
    return sorted(tried - {value})


def search(
    objective: Callable[[RankWeights], float], start: RankWeights, min_gain: float = 0.001, passes: int = 3
) -> tuple[RankWeights, list[tuple[str, float, float, float]]]:
    """Coordinate search from ``start``: the best weights found and each accepted (name, old, new, objective)."""
    weights, best, steps = start, objective(start), []
    for _ in range(passes):
        changed = False
        for name in SEARCHED:
            for value in candidates(getattr(weights, name)):
                trial = replace(weights, **{name: value})
                got = objective(trial)
                if got > best + min_gain:
                    steps.append((name, getattr(weights, name), value, got))
                    weights, best, changed = trial, got, True
        if not changed:
            break
    return weights, steps


def ndcg10(index: Index, queries: list[LabeledQuery], weights: RankWeights) -> float:
    """Mean ruledex nDCG@10 over ``queries`` with ``weights``, as ``ruledex eval`` reports it.

    The search calls this a few hundred times, so it ranks with ruledex alone: no BM25 floor to
    build and rank each time (``evaluate`` does both).
    """
    total = sum(
        ranking_metrics(ruledex_ranking(query_directives(index, q.task, weights=weights), index), q.relevant)["ndcg@10"]
        for q in queries
    )
    return round(total / len(queries), 4)


@contextmanager
def task_model_without(task_sets: list[Path]) -> Iterator[int]:
    """Detect with a task model trained without the tasks of ``task_sets``; yields how many were left out."""
    from ruledex.builder.task_training import TASKS_FILE, load_tasks, train
    from ruledex.reader import detect

    held = {json.loads(line)["task"] for path in task_sets for line in path.read_text(encoding="utf-8").splitlines()}
    tasks = load_tasks(TASKS_FILE)
    kept = [t for t in tasks if t.task not in held]
    model = train(kept)
    shipped = detect.shipped_model
    detect.shipped_model = lambda: model  # type: ignore[assignment]  # detect() looks it up per call
    try:
        yield len(tasks) - len(kept)
    finally:
        detect.shipped_model = shipped  # type: ignore[assignment]


def run(
    queries: Path,
    index_path: Path,
    checks: list[Path],
    start: str = "index",
    rules_dir: Path | None = None,
    held_out_model: bool = False,
    min_gain: float = 0.001,
    passes: int = 3,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> dict[str, Any]:
    """Search weights on ``queries``; report every set before and after, beside the BM25 floor."""
    tuning = load_queries(queries)
    checked = {str(path): load_queries(path) for path in checks}
    with Index(index_path) as index, task_model_without(TRAIN_SETS) if held_out_model else _nothing() as left_out:
        first = {"default": DEFAULT_WEIGHTS, "declared": DECLARED_WEIGHTS}.get(start) or ranking_for(
            index.declared_share
        ).weights

        found, steps = search(lambda weights: ndcg10(index, tuning, weights), first, min_gain, passes)
        for name, old, new, value in steps:
            log(f"{name} {old:g} -> {new:g}: nDCG@10 {value:.4f}")
        rows = []
        for label, sets in (("tuned on" if passes else "measured", {str(queries): tuning}), ("held out", checked)):
            for path, qs in sets.items():
                before = evaluate(index, qs, rules_dir=rules_dir, weights=first)
                after = evaluate(index, qs, rules_dir=rules_dir, weights=found)
                rows.append(
                    {
                        "set": path,
                        "role": label,
                        "queries": len(qs),
                        "before": before["ruledex"]["ndcg@10"],
                        "after": after["ruledex"]["ndcg@10"],
                        "floor": before["bm25"]["ndcg@10"],
                        "layerAccuracy": before["layerAccuracy"],
                    }
                )
    return {
        "start": asdict(first),
        "weights": asdict(found),
        "steps": [{"weight": n, "from": o, "to": w, "ndcg@10": v} for n, o, w, v in steps],
        "heldOutModel": held_out_model,
        "trainingTasksLeftOut": left_out,
        "sets": rows,
    }


@contextmanager
def _nothing() -> Iterator[int]:
    yield 0


def format_table(result: dict[str, Any]) -> str:
    """Weights found, and every set's nDCG@10 before and after beside its floor."""
    changed = {k: v for k, v in result["weights"].items() if v != result["start"][k]}
    lines = [
        "weights: " + (", ".join(f"{k} {result['start'][k]:g} -> {v:g}" for k, v in changed.items()) or "unchanged"),
        "detection: "
        + (
            f"task model without the {result['trainingTasksLeftOut']} tasks of tests/data/train_*.jsonl"
            if result["heldOutModel"]
            else "the shipped task model"
        ),
    ]
    rows = [
        [
            Path(r["set"]).name,
            r["role"],
            r["queries"],
            *(f"{r[k]:.4f}" for k in ("before", "after", "floor")),
            f"{r['layerAccuracy']:.3f}",
        ]
        for r in result["sets"]
    ]
    lines.append(table(("set", "role", "tasks", "before", "after", "floor", "layer acc"), rows))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: a tuning set, its index and held-out sets; a table, or JSON with ``--json``."""
    p = labeled_set_parser(
        "python -m bench.tune",
        "Choose ranking weights by coordinate search on a labeled set (nDCG@10), with other labeled "
        "sets held out and measured before and after.",
        queries_help="JSONL labeled tasks to tune on",
    )
    p.add_argument("--check", type=Path, action="append", default=[], help="a held-out labeled set (repeatable)")
    p.add_argument(
        "--start",
        choices=("index", "default", "declared"),
        default="index",
        help="weights to start from: the index's own (default), DEFAULT_WEIGHTS or DECLARED_WEIGHTS",
    )
    p.add_argument(
        "--held-out-model",
        action="store_true",
        help="detect with a task model trained without the tasks of tests/data/train_*.jsonl",
    )
    p.add_argument("--min-gain", type=float, default=0.001, help="smallest nDCG@10 gain a step must bring")
    p.add_argument("--passes", type=int, default=3, help="at most this many passes over the weights (0: only measure)")
    args = p.parse_args(argv)
    settings = (args.start, args.rules, args.held_out_model, args.min_gain, args.passes)
    return print_result(args, lambda: run(args.queries, args.index, args.check, *settings), format_table)


if __name__ == "__main__":
    sys.exit(main())
