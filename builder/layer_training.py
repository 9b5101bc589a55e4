"""Train the reader's layer model (``reader/data/layer_model.json``) from labeled tasks.

Maintainers run it after editing ``builder/data/layer_tasks.jsonl``::

    python -m ruledex.builder.layer_training            # retrain and write the model
    python -m ruledex.builder.layer_training --check    # exit 1 if the shipped model is stale

Training is deterministic (full-batch gradient descent from zeros, fixed steps, rounded weights),
so the same tasks always give a byte-identical file. The tasks were written for training only;
no task of ``ruledex eval``'s labeled sets is in them, so those sets stay a held-out measure.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ruledex.reader.detect import task_terms
from ruledex.reader.layer_model import MODEL_FILE, LayerModel
from ruledex.reader.vocab import ANY_LAYER, LAYERS

TASKS_FILE = Path(__file__).with_name("data") / "layer_tasks.jsonl"

MODEL_LAYERS = tuple(name for name in LAYERS if name != ANY_LAYER)
"""A task is always about one concrete layer; ``*`` is for rules, not tasks."""


@dataclass(frozen=True)
class TrainingOptions:
    """The training settings; the defaults are the ones the shipped model was trained with."""

    l2: float = 0.005
    """L2 penalty per weight, scaled by the number of tasks (keeps rare terms' weights small)."""
    steps: int = 600
    learning_rate: float = 2.0
    min_count: int = 2
    """Terms seen in fewer tasks than this get no weight (one task is not evidence)."""
    decimals: int = 3


def load_tasks(path: Path) -> list[tuple[str, str]]:
    """(task, layer) pairs from a JSONL file; raises ValueError naming the file and line at fault."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc.msg}); each line is one {{task, layer}} object") from exc
        task, layer = (
            row.get("task") if isinstance(row, dict) else None,
            row.get("layer") if isinstance(row, dict) else None,
        )
        if not isinstance(task, str) or not task.strip():
            raise ValueError(f"{path}:{number}: 'task' must be a non-empty string")
        if layer not in MODEL_LAYERS:
            raise ValueError(f"{path}:{number}: 'layer' is {layer!r}; use one of {', '.join(MODEL_LAYERS)}")
        out.append((task, layer))
    if not out:
        raise ValueError(f"{path}: no tasks")
    return out


def train(tasks: list[tuple[str, str]], options: TrainingOptions = TrainingOptions()) -> LayerModel:
    """Fit a softmax regression over binary term features (pure: same tasks, same model)."""
    term_sets = [task_terms(task)[1] for task, _ in tasks]
    counts: dict[str, int] = {}
    for terms in term_sets:
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
    vocab = sorted(t for t, c in counts.items() if c >= options.min_count)
    column = {t: i for i, t in enumerate(vocab)}
    x = np.zeros((len(tasks), len(vocab)), np.float64)
    for row, terms in enumerate(term_sets):
        x[row, [column[t] for t in terms if t in column]] = 1.0
    y = np.zeros((len(tasks), len(MODEL_LAYERS)), np.float64)
    y[np.arange(len(tasks)), [MODEL_LAYERS.index(layer) for _, layer in tasks]] = 1.0
    w = np.zeros((len(vocab), len(MODEL_LAYERS)))
    b = np.zeros(len(MODEL_LAYERS))
    n = len(tasks)
    for _ in range(options.steps):
        logits = x @ w + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        grad = (p - y) / n
        w -= options.learning_rate * (x.T @ grad + options.l2 * w)
        b -= options.learning_rate * grad.sum(axis=0)
    w, b = np.round(w, options.decimals), np.round(b, options.decimals)
    weights = {t: tuple(float(v) for v in w[i]) for t, i in column.items() if np.any(w[i])}
    return LayerModel(MODEL_LAYERS, tuple(float(v) for v in b), weights)


def accuracy(model: LayerModel, tasks: list[tuple[str, str]]) -> float:
    """Share of tasks whose most probable layer is the labeled one."""
    hits = 0
    for task, layer in tasks:
        probs = model.probabilities(task_terms(task)[1])
        hits += max(probs, key=probs.__getitem__) == layer
    return hits / len(tasks) if tasks else 0.0


def render(model: LayerModel) -> str:
    """The model file's text: stable key order, one term per line for readable diffs."""
    data = model.to_json()
    rows = ",\n".join(f"    {json.dumps(t)}: {json.dumps(r)}" for t, r in data["weights"].items())
    return (
        "{\n"
        f'  "format": {data["format"]},\n'
        f'  "layers": {json.dumps(data["layers"])},\n'
        f'  "bias": {json.dumps(data["bias"])},\n'
        f'  "weights": {{\n{rows}\n  }}\n'
        "}\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Retrain the shipped layer model, or check that it is up to date (exit 1 if stale)."""
    parser = argparse.ArgumentParser(
        prog="python -m ruledex.builder.layer_training", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--tasks", type=Path, default=TASKS_FILE, help="labeled tasks, JSONL {task, layer}")
    parser.add_argument("--out", type=Path, default=MODEL_FILE, help="where to write the model")
    parser.add_argument("--check", action="store_true", help="only compare with --out; exit 1 if it differs")
    args = parser.parse_args(argv)
    try:
        tasks = load_tasks(args.tasks)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    model = train(tasks)
    text = render(model)
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run python -m ruledex.builder.layer_training", file=sys.stderr)
            return 1
        print(f"{args.out} matches {args.tasks} ({len(tasks)} tasks)")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(args.out)
    print(
        f"wrote {args.out}: {len(model.weights)} terms from {len(tasks)} tasks, "
        f"training accuracy {accuracy(model, tasks):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
