"""A task model learnt from labeled tasks: per-term weights for layers and topics, shipped with the reader.

The hand-written dictionaries know which words name a layer or topic ("migration", "dockerfile");
they do not know that "two accounts on the same email" is a persistence problem or that "new
hires lose a day" is a docs problem. Two linear models over the detector's own terms
(:func:`ruledex.reader.detect.task_terms`) learn those associations from a set of labeled coding
tasks that is not any evaluation set (``builder/data/tasks.jsonl``, retrained with
``python -m ruledex.builder.task_training``): a softmax regression for the one layer of a task and
one logistic regression per topic (a task has one to three). They do not depend on an index, so
every index, old or new, gets them. Scoring is a sum of a few dozen small rows.

A linear model weighs each word on its own: "write" is a docs word, so "Write a Dockerfile for our
FastAPI service" leaned to docs. The training tasks themselves, kept as TF-IDF term vectors
(:class:`TaskNeighbours`), see words together: the layers of the ten training tasks most like a
task are a second voice on its layer.

Detection adds *evidence*, not probabilities: how far a layer or a topic rises above the model's
own odds for a task with no known word (its prior, its base rate). A task with no telling word
("make it better") then gets nothing from the models' priors.
"""

from __future__ import annotations

import functools
import math
import zipfile
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .vocab import LAYERS, TASK_LAYERS, TOPICS

MODEL_FILE = Path(__file__).with_name("data") / "task_model.npz"
MODEL_FORMAT = 3
"""3: NumPy arrays (weights in thousandths as int16) and the training tasks' term postings, read in a
few ms; 2 had no postings; 1 was JSON, read in ~35 ms."""

NEIGHBOURS = 10
"""How many of the most similar training tasks vote on a task's layer and topics. Chosen on the
held-out training batches (``task_training --held-out``) among 10, 20, 30 and 50: 10 placed the
most; with 7,796 tasks, 7, 10 and 15 place 0.860, 0.856 and 0.858 (bundled index), so 10 stays."""

VOTE_POWER = 2
"""A neighbour votes with its similarity to the task raised to this power, so the closest tasks
count most. Chosen on the held-out training batches (all 18, 5,854 tasks): powers 1, 2, 3, 4, 6 and
8 place 0.855, 0.861, 0.864, 0.864, 0.857 and 0.849 of them (bundled index; Cursor index 0.855,
0.860, 0.863, 0.861, 0.853, 0.842), topic F1 0.754, 0.758, 0.759, 0.757, 0.750, 0.744. On the labeled
sets, which check that a held-out gain carries over, 3 and 4 lose four and three bundled tasks'
layers (0.856 -> 0.827, 0.835); 2 loses one there and gains one on the corpus (0.849, 0.768), with
topic F1 0.709 -> 0.711 and 0.660 -> 0.668 and nDCG@10 0.866 -> 0.866 and 0.889 -> 0.891: 2."""

WEIGHT_DECIMALS = 3
"""Weights and biases are rounded to this many decimals and stored as integers of that unit."""
_UNIT = 10**WEIGHT_DECIMALS


def term_rows(terms: Sequence[str]) -> dict[str, int]:
    """Each term's row: its position in ``terms``."""
    return {t: i for i, t in enumerate(terms)}


@dataclass(frozen=True, eq=False)
class TermWeights:
    """A linear scorer: a bias per class and, per known term, one weight per class.

    The weights are one float matrix, a row per term: as Python lists of floats the layer and topic
    weights of the shipped model's ~4,100 terms took about 3.5 MB of a server's memory, as two
    matrices 0.8 MB.
    """

    classes: tuple[str, ...]
    bias: tuple[float, ...]
    terms: tuple[str, ...]
    """The known terms, sorted: row ``i`` of ``matrix`` is ``terms[i]``'s."""
    matrix: np.ndarray
    rows: dict[str, int] | None = field(default=None, repr=False)
    """``terms`` -> row; given when another scorer over the same terms already has it (read from a
    file, the layer and topic models and the neighbours share one), else derived."""
    _bias: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        """Index the terms once (unless given)."""
        if self.rows is None:
            object.__setattr__(self, "rows", term_rows(self.terms))
        object.__setattr__(self, "_bias", np.asarray(self.bias, np.float64))

    @classmethod
    def from_rows(
        cls, classes: tuple[str, ...], bias: Sequence[float], rows: Mapping[str, Sequence[float]]
    ) -> TermWeights:
        """A scorer from each term's weights (one per class)."""
        terms = tuple(sorted(rows))
        matrix = np.array([rows[t] for t in terms], np.float64).reshape(len(terms), len(classes))
        return cls(classes, tuple(float(b) for b in bias), terms, matrix)

    def __eq__(self, other: object) -> bool:
        """Same classes, biases, terms and weights."""
        if not isinstance(other, TermWeights):
            return NotImplemented
        return (self.classes, self.bias, self.terms) == (other.classes, other.bias, other.terms) and bool(
            np.array_equal(self.matrix, other.matrix)
        )

    __hash__ = None  # type: ignore[assignment]

    def logits(self, terms: Iterable[str]) -> list[float]:
        """Bias plus the weights of every known term (unknown terms add nothing).

        Rows are summed in term order, so the same terms give the same floats in every process.
        """
        rows = sorted(r for r in map(self.rows.get, terms) if r is not None)  # type: ignore[union-attr]
        if not rows:
            return list(self.bias)
        return (np.add.reduce(self.matrix[rows], axis=0) + self._bias).tolist()


def _softmax(logits: list[float]) -> list[float]:
    peak = max(logits)
    exps = [math.exp(v - peak) for v in logits]
    total = sum(exps)
    return [e / total for e in exps]


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@dataclass(frozen=True)
class NeighbourEvidence:
    """What a task's nearest training tasks say.

    Per layer and per topic: how far their votes rise above the training set's own share (0 when
    they do not).
    """

    layers: dict[str, float]
    topics: dict[str, float]


NO_NEIGHBOURS = NeighbourEvidence({}, {})


@dataclass(frozen=True, eq=False)
class TaskNeighbours:
    """The training tasks as TF-IDF term vectors, stored as postings: for each term, the tasks that have it.

    A task's neighbours are the training tasks with the highest cosine to it over these terms; each
    votes for its layer and its topics with its cosine to the power :data:`VOTE_POWER`. Evidence is how far a layer's share of the
    votes (a topic's) rises above its share of all training tasks, so neighbours spread like the
    training set claim nothing.
    """

    terms: tuple[str, ...]
    """The terms of at least two training tasks, sorted."""
    starts: np.ndarray
    """Where each term's postings start in ``tasks`` (one more entry than ``terms``)."""
    tasks: np.ndarray
    """Postings: the tasks (row numbers) that have each term, term by term, ascending."""
    layers: np.ndarray
    """Each task's layer, as a position in :data:`TASK_LAYERS`."""
    topics: np.ndarray
    """Each task's topics, as a bit mask in :data:`TOPICS` order."""
    rows: dict[str, int] | None = field(default=None, repr=False)
    """``terms`` -> row, shared with the models when they know the same terms, else derived."""
    _starts: list[int] = field(init=False, repr=False)
    _weights: np.ndarray = field(init=False, repr=False)
    """Per posting, the term's IDF times the task vector's weight for it: summed over a task's terms,
    its cosine with the task times the task's (constant) norm, which ranks and votes the same."""
    _classes: np.ndarray = field(init=False, repr=False)
    """Per task, one column per layer (1 for its own) and per topic (1 for each of its topics)."""
    _share: np.ndarray = field(init=False, repr=False)
    """Each layer's and topic's share of all tasks: what neighbours must rise above."""

    def __post_init__(self) -> None:
        """Derive each posting's weight (from its term's IDF and its task's norm) and the classes' shares, once."""
        n = len(self.layers)
        df = np.diff(self.starts).astype(np.float64)
        idf = np.log((n + 1) / (df + 1)) + 1.0
        per_posting = np.repeat(idf, np.diff(self.starts))
        norms = np.sqrt(np.bincount(self.tasks, weights=per_posting**2, minlength=n))
        layers = (self.layers[:, None] == np.arange(len(TASK_LAYERS))).astype(np.uint8)
        topics = ((self.topics[:, None] >> np.arange(len(TOPICS))) & 1).astype(np.uint8)
        classes = np.hstack([layers, topics])
        if self.rows is None:
            object.__setattr__(self, "rows", term_rows(self.terms))
        object.__setattr__(self, "_starts", self.starts.tolist())
        object.__setattr__(self, "_weights", per_posting**2 / np.where(norms > 0, norms, 1.0)[self.tasks])
        object.__setattr__(self, "_classes", classes)
        object.__setattr__(self, "_share", classes.sum(axis=0, dtype=np.float64) / max(n, 1))

    def __eq__(self, other: object) -> bool:
        """Same terms, postings, layers and topics."""
        if not isinstance(other, TaskNeighbours):
            return NotImplemented
        return self.terms == other.terms and all(
            np.array_equal(a, b) for a, b in zip(self._arrays(), other._arrays(), strict=True)
        )

    __hash__ = None  # type: ignore[assignment]

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return self.starts, self.tasks, self.layers, self.topics

    def evidence(self, terms: Iterable[str], k: int = NEIGHBOURS) -> NeighbourEvidence:
        """What the ``k`` training tasks nearest to these terms say about the task's layer and topics.

        Empty when no term is known. Ties in similarity go to the earlier task, so the same terms
        always give the same answer.
        """
        index = self.rows or {}
        rows = sorted({index[t] for t in terms if t in index})
        if not rows:
            return NO_NEIGHBOURS
        starts = self._starts
        spans = [slice(starts[r], starts[r + 1]) for r in rows]
        ids = np.concatenate([self.tasks[span] for span in spans])
        weights = np.concatenate([self._weights[span] for span in spans])
        scores = np.bincount(ids, weights=weights, minlength=len(self.layers))
        top = (scores > 0).nonzero()[0]  # ascending task order: ties below go to the earlier task
        if len(top) > k:
            found = scores[top]
            parted = found.copy()  # np.partition's copy, without its Python wrapper
            parted.partition(len(found) - k)
            kth = parted[len(found) - k]
            top = top[found >= kth]
            if len(top) > k:  # ties at the k-th score: keep the earlier tasks
                found = scores[top]
                top = np.concatenate([top[found > kth], top[found == kth][: k - int(np.count_nonzero(found > kth))]])
        votes = scores[top] ** VOTE_POWER
        gains = np.maximum((votes / np.add.reduce(votes)) @ self._classes[top] - self._share, 0.0).tolist()
        n_layers = len(TASK_LAYERS)
        return NeighbourEvidence(
            dict(zip(TASK_LAYERS, gains[:n_layers], strict=True)), dict(zip(TOPICS, gains[n_layers:], strict=True))
        )


@dataclass(frozen=True)
class TaskModel:
    """The task's learnt voices.

    The layer model (softmax: one layer per task), the topic model (one sigmoid per topic) and the
    training tasks' neighbours.
    """

    layers: TermWeights
    topics: TermWeights
    neighbours: TaskNeighbours | None = None
    _layer_priors: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _topic_base_rates: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Derive each class's probability with no known term once, not per query."""
        object.__setattr__(self, "_layer_priors", tuple(_softmax(list(self.layers.bias))))
        object.__setattr__(self, "_topic_base_rates", tuple(_sigmoid(b) for b in self.topics.bias))

    def layer_probabilities(self, terms: Iterable[str]) -> dict[str, float]:
        """P(layer | terms), summing to 1 over the layers."""
        return dict(zip(self.layers.classes, _softmax(self.layers.logits(terms)), strict=True))

    def layer_evidence(self, terms: Collection[str]) -> dict[str, float]:
        """How far each layer's probability rises above its prior (0 for the others).

        The prior is the model's odds for a task with no known word: the training set's mix of
        layers is not evidence about a task.
        """
        return dict(zip(self.layers.classes, self.evidence(terms)[0], strict=True))

    def topic_probabilities(self, terms: Iterable[str]) -> dict[str, float]:
        """P(topic applies | terms), each topic on its own."""
        return {name: _sigmoid(z) for name, z in zip(self.topics.classes, self.topics.logits(terms), strict=True)}

    def topic_evidence(self, terms: Collection[str]) -> dict[str, float]:
        """How far each topic's probability rises above its base rate (0 for the others)."""
        return dict(zip(self.topics.classes, self.evidence(terms)[1], strict=True))

    def evidence(self, terms: Collection[str]) -> tuple[list[float], list[float]]:
        """Layer and topic evidence, as lists in each model's class order: what detection reads per query.

        :meth:`layer_evidence` and :meth:`topic_evidence` without the dicts; ``g if g > 0.0 else 0.0``
        is ``max(0.0, g)`` (0.0 for a fall, or NaN) without the call.
        """
        layer_logits, topic_logits = self.layers.logits(terms), self.topics.logits(terms)
        layer_gains = [p - prior for p, prior in zip(_softmax(layer_logits), self._layer_priors, strict=True)]
        topic_gains = [_sigmoid(z) - base for z, base in zip(topic_logits, self._topic_base_rates, strict=True)]
        return [g if g > 0.0 else 0.0 for g in layer_gains], [g if g > 0.0 else 0.0 for g in topic_gains]


def _lines(array: np.ndarray) -> list[str]:
    return bytes(array.astype(np.uint8)).decode("utf-8").split("\n") if array.size else []


def _packed(lines: Sequence[str]) -> np.ndarray:
    if any("\n" in line for line in lines):
        raise ValueError("task model: a term or class name contains a newline")
    return np.frombuffer("\n".join(lines).encode("utf-8"), dtype=np.uint8)


def _units(values: Sequence[Sequence[float]] | Sequence[float]) -> np.ndarray:
    scaled = np.rint(np.asarray(values, dtype=np.float64) * _UNIT)
    if scaled.size and np.abs(scaled).max() > np.iinfo(np.int16).max:
        raise ValueError(f"task model: a weight is beyond +-{np.iinfo(np.int16).max / _UNIT}; raise the L2 penalty")
    return scaled.astype("<i2")


def to_arrays(model: TaskModel) -> dict[str, np.ndarray]:
    """The shipped file's arrays: terms sorted (so the file is reproducible), one row per term."""
    terms = model.layers.terms
    if model.topics.terms != terms:
        raise ValueError("task model: the layer and topic models must know the same terms")
    out = {"format": np.array([MODEL_FORMAT], "<i8"), "terms": _packed(terms)}
    for key, scorer in (("layer", model.layers), ("topic", model.topics)):
        out[f"{key}_classes"] = _packed(scorer.classes)
        out[f"{key}_bias"] = _units(scorer.bias)
        out[f"{key}_weights"] = _units(scorer.matrix)
    nb = model.neighbours
    if nb is None:
        raise ValueError("task model: the shipped file needs the training tasks' neighbours")
    out["neighbour_terms"] = _packed(nb.terms)
    out["neighbour_starts"] = nb.starts.astype("<i4")
    out["neighbour_tasks"] = nb.tasks.astype("<i4")
    out["neighbour_layers"] = nb.layers.astype("<u1")
    out["neighbour_topics"] = nb.topics.astype("<u4")
    return out


def _scorer(
    arrays: Mapping[str, np.ndarray],
    key: str,
    terms: tuple[str, ...],
    rows: dict[str, int],
    vocabulary: tuple[str, ...],
    source: str,
) -> TermWeights:
    try:
        classes = tuple(_lines(arrays[f"{key}_classes"]))
        bias, weights = arrays[f"{key}_bias"], arrays[f"{key}_weights"]
    except KeyError as exc:
        raise ValueError(f"{source}: missing the {exc.args[0]!r} array") from None
    if not classes or any(name not in vocabulary for name in classes):
        raise ValueError(f"{source}: '{key}_classes' must name entries of {vocabulary}, got {list(classes)}")
    if bias.shape != (len(classes),) or weights.shape != (len(terms), len(classes)):
        raise ValueError(
            f"{source}: '{key}' needs {len(classes)} biases and a {len(terms)} x {len(classes)} weight matrix, "
            f"got {bias.shape} and {weights.shape}"
        )
    if list(terms) != sorted(terms):
        raise ValueError(f"{source}: 'terms' must be sorted")
    matrix = weights.astype(np.float64) / _UNIT  # the same floats as the rounded decimals
    return TermWeights(classes, tuple((bias.astype(np.float64) / _UNIT).tolist()), terms, matrix, rows)


def _neighbours(
    arrays: Mapping[str, np.ndarray], source: str, model_terms: tuple[str, ...], model_rows: dict[str, int]
) -> TaskNeighbours:
    try:
        terms = tuple(_lines(arrays["neighbour_terms"]))
        starts, tasks = arrays["neighbour_starts"].astype(np.int64), arrays["neighbour_tasks"].astype(np.int32)
        layers, topics = arrays["neighbour_layers"].astype(np.int64), arrays["neighbour_topics"].astype(np.int64)
    except KeyError as exc:
        raise ValueError(f"{source}: missing the {exc.args[0]!r} array") from None
    if (
        starts.shape != (len(terms) + 1,)
        or starts[0] != 0
        or starts[-1] != len(tasks)
        or np.any(np.diff(starts) < 0)
        or (len(tasks) and not 0 <= tasks.min() <= tasks.max() < len(layers))
        or (len(layers) and not 0 <= layers.min() <= layers.max() < len(TASK_LAYERS))
        or topics.shape != layers.shape
        or (len(topics) and not 0 <= topics.min() <= topics.max() < 1 << len(TOPICS))
    ):
        raise ValueError(
            f"{source}: the neighbour arrays are inconsistent: 'neighbour_starts' must rise from 0 to the number "
            f"of postings, one entry per term plus one; every posting must name a task; every task needs a layer "
            f"(0-{len(TASK_LAYERS) - 1}) and a topic mask"
        )
    shared = model_rows if terms == model_terms else None  # trained on the same vocabulary: one index
    return TaskNeighbours(terms, starts, tasks, layers, topics, shared)


def from_arrays(arrays: Mapping[str, np.ndarray], source: str = "task model") -> TaskModel:
    """Validate and wrap a model read from its arrays; raises ValueError naming what is wrong."""
    found = arrays["format"].tolist() if "format" in arrays else None
    if found != [MODEL_FORMAT]:
        raise ValueError(f"{source}: format {found!r}, expected [{MODEL_FORMAT}]")
    terms = tuple(_lines(arrays["terms"])) if "terms" in arrays else ()
    rows = term_rows(terms)  # one index for the layer model, the topic model and the neighbours
    return TaskModel(
        _scorer(arrays, "layer", terms, rows, LAYERS, source),
        _scorer(arrays, "topic", terms, rows, TOPICS, source),
        _neighbours(arrays, source, terms, rows),
    )


def read_model(path: Path) -> TaskModel:
    """Read a model file; raises ValueError naming the file and what is wrong."""
    try:
        with path.open("rb") as handle, np.load(handle, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: not a task model file ({exc})") from exc
    return from_arrays(arrays, str(path))


@functools.lru_cache(maxsize=1)
def shipped_model() -> TaskModel:
    """The model shipped with the reader, read once (a few ms) on the first detection."""
    try:
        return read_model(MODEL_FILE)
    except ValueError as exc:
        raise RuntimeError(f"cannot read the task model: {exc}; reinstall ruledex") from exc
