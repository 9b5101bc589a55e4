"""Train the reader's task model (``reader/data/task_model.npz``) from labeled tasks.

Maintainers run it after editing ``builder/data/tasks.jsonl``::

    python -m ruledex.builder.task_training            # retrain and write the model
    python -m ruledex.builder.task_training --check    # exit 1 if the shipped model is stale
    python -m ruledex.builder.task_training --held-out --index dist/bundled.ruledex \
        --weights shipped --weights layer_neighbours=0,topic_neighbours=0
                                                       # detection on each named batch, trained without it

Training is deterministic (full-batch gradient descent from zeros, fixed steps, rounded weights),
so the same tasks always give a byte-identical file. The tasks were written for training only;
no task of ``ruledex eval``'s labeled sets is in them, so those sets stay a held-out measure.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from ruledex.reader.detect import DETECTION_WEIGHTS, DetectionWeights, task_terms
from ruledex.reader.errors import RuledexError
from ruledex.reader.evaluate import topic_f1 as _topic_f1
from ruledex.reader.index import Index
from ruledex.reader.query import detect_in_index, first_pass
from ruledex.reader.task_model import (
    MODEL_FILE,
    WEIGHT_DECIMALS,
    TaskModel,
    TaskNeighbours,
    TermWeights,
    term_rows,
    to_arrays,
)
from ruledex.reader.vocab import TASK_LAYERS, TOPICS, topic_mask

TASKS_FILE = Path(__file__).with_name("data") / "tasks.jsonl"

MAX_TOPICS = 3


@dataclass(frozen=True)
class LabeledTask:
    """One training task: its text, its layer and its one to three topics."""

    task: str
    layer: str
    topics: tuple[str, ...]
    batch: str = ""
    """Which written batch the task came from (optional): ``--held-out`` holds out one batch at a time."""


@dataclass(frozen=True)
class TrainingOptions:
    """The training settings; the defaults are the ones the shipped model was trained with."""

    l2: float = 0.0005
    """L2 penalty per weight, scaled by the number of tasks (keeps rare terms' weights small);
    chosen by leave-one-batch-out layer accuracy and topic F1 on the training tasks (0.005 suited
    the 1,942 tasks it was chosen on; with 7,796, 0.0001-0.0005 place 0.008-0.010 more held-out
    tasks and raise topic F1 by 0.017-0.020; ``docs/relevance.md``)."""
    steps: int = 600
    learning_rate: float = 2.0
    min_count: int = 2
    """Terms seen in fewer tasks than this get no weight (one task is not evidence)."""
    decimals: int = WEIGHT_DECIMALS


def load_tasks(path: Path) -> list[LabeledTask]:
    """Labeled tasks from a JSONL file; raises ValueError naming the file and line at fault."""
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"{path}:{number}: not JSON ({exc.msg}); each line is one {{task, layer, topics}} object"
            ) from exc
        row = row if isinstance(row, dict) else {}
        task, layer, topics, batch = row.get("task"), row.get("layer"), row.get("topics"), row.get("batch", "")
        if not isinstance(task, str) or not task.strip():
            raise ValueError(f"{path}:{number}: 'task' must be a non-empty string")
        if layer not in TASK_LAYERS:
            raise ValueError(f"{path}:{number}: 'layer' is {layer!r}; use one of {', '.join(TASK_LAYERS)}")
        if not isinstance(topics, list) or not 1 <= len(topics) <= MAX_TOPICS or any(t not in TOPICS for t in topics):
            raise ValueError(f"{path}:{number}: 'topics' is {topics!r}; give 1 to {MAX_TOPICS} of {', '.join(TOPICS)}")
        if not isinstance(batch, str):
            raise ValueError(
                f"{path}:{number}: 'batch' is {batch!r}; give the batch's name as a string, or leave it out"
            )
        out.append(LabeledTask(task, layer, tuple(topics), batch))
    if not out:
        raise ValueError(f"{path}: no tasks")
    return out


@dataclass(frozen=True)
class _Features:
    """Binary term features stored sparsely: the term columns of each task, task by task.

    A task has a dozen terms out of thousands, so the products with the weights are gathers and
    segment sums: sums in a fixed order, the same on every machine (a dense BLAS product is not),
    and far faster than a dense matrix.
    """

    columns: np.ndarray
    """Every task's term columns, task by task."""
    row_starts: np.ndarray
    """Where each task that has a term starts in ``columns``."""
    rows_with_terms: np.ndarray
    by_column: np.ndarray
    """Positions of ``columns`` sorted by column (stable), for the transposed product."""
    row_by_column: np.ndarray
    """The task of each position of ``by_column``."""
    column_starts: np.ndarray
    n_rows: int

    @classmethod
    def from_rows(cls, rows: list[list[int]]) -> _Features:
        """Features from each task's term columns."""
        lengths = np.array([len(r) for r in rows], np.int64)
        columns = np.array([c for r in rows for c in r], np.int64)
        starts = np.cumsum(lengths) - lengths
        by_column = np.argsort(columns, kind="stable")
        ordered = columns[by_column]
        column_starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(ordered) else ordered
        row_of = np.repeat(np.arange(len(rows)), lengths)
        nonempty = lengths > 0
        return cls(
            columns, starts[nonempty], np.flatnonzero(nonempty), by_column, row_of[by_column], column_starts, len(rows)
        )

    def times(self, w: np.ndarray) -> np.ndarray:
        """X @ w."""
        out = np.zeros((self.n_rows, w.shape[1]))
        if len(self.columns):
            out[self.rows_with_terms] = np.add.reduceat(w[self.columns], self.row_starts, axis=0)
        return out

    def transposed_times(self, g: np.ndarray) -> np.ndarray:
        """X.T @ g, one row per column (every column occurs: the vocabulary comes from these tasks)."""
        if not len(self.columns):
            return np.zeros((0, g.shape[1]))
        return np.add.reduceat(g[self.row_by_column], self.column_starts, axis=0)


def _fit(
    x: _Features, n_columns: int, y: np.ndarray, options: TrainingOptions, *, softmax: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Full-batch gradient descent from zeros on cross-entropy (softmax) or per-class logistic loss."""
    w = np.zeros((n_columns, y.shape[1]))
    b = np.zeros(y.shape[1])
    n = x.n_rows
    for _ in range(options.steps):
        logits = x.times(w) + b
        if softmax:
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
        else:
            p = 1.0 / (1.0 + np.exp(-logits))
        grad = (p - y) / n
        w -= options.learning_rate * (x.transposed_times(grad) + options.l2 * w)
        b -= options.learning_rate * grad.sum(axis=0)
    return np.round(w, options.decimals), np.round(b, options.decimals)


def _term_weights(classes: tuple[str, ...], vocab: list[str], w: np.ndarray, b: np.ndarray) -> TermWeights:
    """The terms with any non-zero weight, in ``vocab``'s (sorted) order."""
    kept = np.flatnonzero(np.any(w != 0, axis=1))
    return TermWeights(classes, tuple(float(v) for v in b), tuple(vocab[i] for i in kept.tolist()), w[kept])


def neighbours_of(tasks: list[LabeledTask], x: _Features, vocab: list[str]) -> TaskNeighbours:
    """The tasks' postings over ``vocab`` (sorted terms), with their layers and topics.

    The postings are the training features read by column (every term of ``vocab`` occurs, and a
    column's tasks come in task order), so they are not collected a second time.
    """
    starts = np.append(x.column_starts, len(x.columns)) if len(vocab) else np.zeros(1, np.int64)
    layers = np.array([TASK_LAYERS.index(t.layer) for t in tasks], np.int64)
    topics = np.array([topic_mask(t.topics) for t in tasks], np.int64)
    return TaskNeighbours(tuple(vocab), starts, x.row_by_column.astype(np.int64), layers, topics)


def train(tasks: list[LabeledTask], options: TrainingOptions = TrainingOptions()) -> TaskModel:
    """Fit the layer and topic models over binary term features and index the tasks' neighbours (pure)."""
    term_sets = [task_terms(t.task)[1] for t in tasks]
    counts: dict[str, int] = {}
    for terms in term_sets:
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
    vocab = sorted(t for t, c in counts.items() if c >= options.min_count)
    column = term_rows(vocab)
    x = _Features.from_rows([sorted(column[t] for t in terms if t in column) for terms in term_sets])
    layers = np.zeros((len(tasks), len(TASK_LAYERS)))
    layers[np.arange(len(tasks)), [TASK_LAYERS.index(t.layer) for t in tasks]] = 1.0
    topics = np.zeros((len(tasks), len(TOPICS)))
    for row, t in enumerate(tasks):
        topics[row, [TOPICS.index(name) for name in t.topics]] = 1.0
    return TaskModel(
        _term_weights(TASK_LAYERS, vocab, *_fit(x, len(vocab), layers, options, softmax=True)),
        _term_weights(TOPICS, vocab, *_fit(x, len(vocab), topics, options, softmax=False)),
        neighbours_of(tasks, x, vocab),
    )


def layer_accuracy(model: TaskModel, tasks: list[LabeledTask]) -> float:
    """Share of tasks whose most probable layer is the labeled one."""
    hits = 0
    for t in tasks:
        probs = model.layer_probabilities(task_terms(t.task)[1])
        hits += max(probs, key=probs.__getitem__) == t.layer
    return hits / len(tasks) if tasks else 0.0


def topic_f1(model: TaskModel, tasks: list[LabeledTask]) -> float:
    """Mean F1 of the topics the model gives at least even odds against the labeled ones."""
    total = 0.0
    for t in tasks:
        got = [k for k, p in model.topic_probabilities(task_terms(t.task)[1]).items() if p >= 0.5]
        total += _topic_f1(got, t.topics)
    return total / len(tasks) if tasks else 0.0


@dataclass(frozen=True)
class HeldOutRow:
    """Layer accuracy and topic F1 on one batch of tasks, by a model trained on every other task."""

    batch: str
    tasks: int
    model_alone: float
    detection: dict[tuple[str, str], float]
    """(index name, weights label) -> layer accuracy of the whole detector, as queries run it."""
    topics: dict[tuple[str, str], float] = field(default_factory=dict)
    """(index name, weights label) -> mean F1 of the topics the whole detector reports."""


def weights_label(weights: DetectionWeights) -> str:
    """A short name for detection weights: the fields that differ from the shipped ones, or "shipped"."""
    changed = [
        f"{f.name}={getattr(weights, f.name):g}"
        for f in fields(weights)
        if getattr(weights, f.name) != getattr(DETECTION_WEIGHTS, f.name)
    ]
    return ",".join(changed) or "shipped"


def parse_weights(spec: str) -> DetectionWeights:
    """``shipped`` or ``name=value,...`` over :class:`DetectionWeights`' fields; ValueError names a bad part."""
    known = {f.name for f in fields(DetectionWeights)}
    changes: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        if part == "shipped":
            continue
        name, _, value = part.partition("=")
        if name not in known:
            raise ValueError(f"--weights: unknown weight {name!r} in {spec!r}; use one of {', '.join(sorted(known))}")
        try:
            changes[name] = float(value)
        except ValueError:
            raise ValueError(f"--weights: {part!r} needs a number after '='") from None
    return replace(DETECTION_WEIGHTS, **changes)


def held_out(
    tasks: list[LabeledTask],
    indexes: dict[str, Index],
    settings: tuple[DetectionWeights, ...] = (DETECTION_WEIGHTS,),
    options: TrainingOptions = TrainingOptions(),
) -> list[HeldOutRow]:
    """Leave one named batch out at a time: how well detection places tasks of a kind it never saw.

    For each batch, a model (and its neighbours) is built from all the other tasks; the row gives its
    own layer accuracy on the batch and, on each index and with each of the detection ``settings``,
    the layer accuracy and topic F1 of the full detector (dictionaries, the index's learnt tables and
    prototypes, retrieval feedback, this model and these neighbours).
    """
    rows = []
    for batch in sorted({t.batch for t in tasks if t.batch}):
        held = [t for t in tasks if t.batch == batch]
        model = train([t for t in tasks if t.batch != batch], options)
        detection: dict[tuple[str, str], float] = {}
        topics: dict[tuple[str, str], float] = {}
        for name, index in indexes.items():
            passes = [(t, first_pass(index, t.task)) for t in held]
            for weights in settings:
                found = [
                    (
                        t,
                        detect_in_index(
                            index, t.task, None, p.vector, p.votes(index), task_model=model, weights=weights
                        ),
                    )
                    for t, p in passes
                ]
                key = (name, weights_label(weights))
                detection[key] = sum(d.layer == t.layer for t, d in found) / len(held)
                topics[key] = sum(_topic_f1(list(d.topics), t.topics) for t, d in found) / len(held)
        rows.append(HeldOutRow(batch, len(held), layer_accuracy(model, held), detection, topics))
    return rows


def format_held_out(rows: list[HeldOutRow]) -> str:
    """The held-out table: one row per batch and a weighted mean."""
    keys = list(rows[0].detection) if rows else []
    head = [
        "batch",
        "tasks",
        "model alone",
        *(f"{name} {label} layer" for name, label in keys),
        *(f"{name} {label} topic F1" for name, label in keys),
    ]
    total = sum(r.tasks for r in rows) or 1
    body = [
        [
            r.batch,
            str(r.tasks),
            f"{r.model_alone:.3f}",
            *(f"{r.detection[k]:.3f}" for k in keys),
            *(f"{r.topics[k]:.3f}" for k in keys),
        ]
        for r in rows
    ]
    body.append(
        [
            "all",
            str(total),
            f"{sum(r.model_alone * r.tasks for r in rows) / total:.3f}",
            *(f"{sum(r.detection[k] * r.tasks for r in rows) / total:.3f}" for k in keys),
            *(f"{sum(r.topics[k] * r.tasks for r in rows) / total:.3f}" for k in keys),
        ]
    )
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in [head, *body]
    )


def render(model: TaskModel) -> bytes:
    """The model file's bytes: an uncompressed .npz, the same bytes for the same model on any machine."""
    buffer = io.BytesIO()
    np.savez(buffer, **to_arrays(model))
    return buffer.getvalue()


def main(argv: list[str] | None = None) -> int:
    """Retrain the shipped task model, or check that it is up to date (exit 1 if stale)."""
    parser = argparse.ArgumentParser(prog="python -m ruledex.builder.task_training", description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=Path, default=TASKS_FILE, help="labeled tasks, JSONL {task, layer, topics}")
    parser.add_argument("--out", type=Path, default=MODEL_FILE, help="where to write the model")
    parser.add_argument("--check", action="store_true", help="only compare with --out; exit 1 if it differs")
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="write nothing: for each named batch, train on the other tasks and print layer accuracy on it",
    )
    parser.add_argument(
        "--index",
        type=Path,
        action="append",
        default=[],
        help="with --held-out: also measure the whole detector on this index (repeatable)",
    )
    parser.add_argument(
        "--weights",
        action="append",
        default=[],
        metavar="SPEC",
        help="with --held-out --index: detection weights to compare, as 'shipped' or name=value pairs "
        "(e.g. layer_model=24,topic_neighbours=4); repeatable (default: the shipped ones)",
    )
    args = parser.parse_args(argv)
    try:
        tasks = load_tasks(args.tasks)
        settings = tuple(parse_weights(spec) for spec in args.weights or ["shipped"])
        indexes = {path.name: Index(path) for path in args.index}
    except (OSError, ValueError, RuledexError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.held_out:
        try:
            if not any(t.batch for t in tasks):
                print(
                    f"error: {args.tasks}: no task names its 'batch', so there is nothing to hold out", file=sys.stderr
                )
                return 2
            print(format_held_out(held_out(tasks, indexes, settings)))
            return 0
        finally:
            for index in indexes.values():
                index.close()
    model = train(tasks)
    data = render(model)
    if args.check:
        current = args.out.read_bytes() if args.out.exists() else b""
        if current != data:
            print(f"{args.out} is stale: run python -m ruledex.builder.task_training", file=sys.stderr)
            return 1
        print(f"{args.out} matches {args.tasks} ({len(tasks)} tasks)")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(args.out)
    print(
        f"wrote {args.out}: {len(model.layers.terms)} terms from {len(tasks)} tasks; on them, layer accuracy "
        f"{layer_accuracy(model, tasks):.3f}, topic F1 {topic_f1(model, tasks):.3f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
