"""A task model learnt from labeled tasks: per-term weights for layers and topics, shipped with the reader.

The hand-written dictionaries know which words name a layer or topic ("migration", "dockerfile");
they do not know that "two accounts on the same email" is a persistence problem or that "new
hires lose a day" is a docs problem. Two linear models over the detector's own terms
(:func:`ruledex.reader.detect.task_terms`) learn those associations from a set of labeled coding
tasks that is not any evaluation set (``builder/data/tasks.jsonl``, retrained with
``python -m ruledex.builder.task_training``): a softmax regression for the one layer of a task and
one logistic regression per topic (a task has one to three). They do not depend on an index, so
every index, old or new, gets them. Scoring is a sum of a few dozen small rows.

Detection adds *evidence*, not probabilities: how far a layer or a topic rises above the model's
own odds for a task with no known word (its prior, its base rate). A task with no telling word
("make it better") then gets nothing from the models' priors.
"""

from __future__ import annotations

import functools
import math
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .vocab import LAYERS, TOPICS

MODEL_FILE = Path(__file__).with_name("data") / "task_model.npz"
MODEL_FORMAT = 2
"""2: NumPy arrays (weights in thousandths as int16), read in a few ms; 1 was JSON, read in ~35 ms."""

WEIGHT_DECIMALS = 3
"""Weights and biases are rounded to this many decimals and stored as integers of that unit."""
_UNIT = 10**WEIGHT_DECIMALS


@dataclass(frozen=True)
class TermWeights:
    """A linear scorer: a bias per class and, per known term, one weight per class."""

    classes: tuple[str, ...]
    bias: tuple[float, ...]
    weights: dict[str, Sequence[float]]

    def logits(self, terms: Iterable[str]) -> list[float]:
        """Bias plus the weights of every known term (unknown terms add nothing)."""
        rows = [row for row in map(self.weights.get, terms) if row is not None]
        if not rows:
            return list(self.bias)
        return [b + sum(column) for b, column in zip(self.bias, zip(*rows, strict=True), strict=True)]


def _softmax(logits: list[float]) -> list[float]:
    peak = max(logits)
    exps = [math.exp(v - peak) for v in logits]
    total = sum(exps)
    return [e / total for e in exps]


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


@dataclass(frozen=True)
class TaskModel:
    """The layer model (softmax: one layer per task) and the topic model (one sigmoid per topic)."""

    layers: TermWeights
    topics: TermWeights
    _layer_priors: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _topic_base_rates: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Derive each class's probability with no known term once, not per query."""
        object.__setattr__(self, "_layer_priors", tuple(_softmax(list(self.layers.bias))))
        object.__setattr__(self, "_topic_base_rates", tuple(_sigmoid(b) for b in self.topics.bias))

    def layer_probabilities(self, terms: Iterable[str]) -> dict[str, float]:
        """P(layer | terms), summing to 1 over the layers."""
        return dict(zip(self.layers.classes, _softmax(self.layers.logits(terms)), strict=True))

    def layer_evidence(self, terms: Iterable[str]) -> dict[str, float]:
        """How far each layer's probability rises above its prior (0 for the others).

        The prior is the model's odds for a task with no known word: the training set's mix of
        layers is not evidence about a task.
        """
        probs = _softmax(self.layers.logits(terms))
        return {
            name: max(0.0, p - prior)
            for name, p, prior in zip(self.layers.classes, probs, self._layer_priors, strict=True)
        }

    def topic_probabilities(self, terms: Iterable[str]) -> dict[str, float]:
        """P(topic applies | terms), each topic on its own."""
        return {name: _sigmoid(z) for name, z in zip(self.topics.classes, self.topics.logits(terms), strict=True)}

    def topic_evidence(self, terms: Iterable[str]) -> dict[str, float]:
        """How far each topic's probability rises above its base rate (0 for the others)."""
        logits = self.topics.logits(terms)
        return {
            name: max(0.0, _sigmoid(z) - base)
            for name, z, base in zip(self.topics.classes, logits, self._topic_base_rates, strict=True)
        }


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
    terms = sorted(model.layers.weights)
    if sorted(model.topics.weights) != terms:
        raise ValueError("task model: the layer and topic models must know the same terms")
    out = {"format": np.array([MODEL_FORMAT], "<i8"), "terms": _packed(terms)}
    for key, scorer in (("layer", model.layers), ("topic", model.topics)):
        out[f"{key}_classes"] = _packed(scorer.classes)
        out[f"{key}_bias"] = _units(scorer.bias)
        out[f"{key}_weights"] = _units([scorer.weights[t] for t in terms]).reshape(len(terms), len(scorer.classes))
    return out


def _scorer(
    arrays: Mapping[str, np.ndarray], key: str, terms: list[str], vocabulary: tuple[str, ...], source: str
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
    rows = (weights.astype(np.float64) / _UNIT).tolist()  # the same floats as the rounded decimals
    return TermWeights(classes, tuple((bias.astype(np.float64) / _UNIT).tolist()), dict(zip(terms, rows, strict=True)))


def from_arrays(arrays: Mapping[str, np.ndarray], source: str = "task model") -> TaskModel:
    """Validate and wrap a model read from its arrays; raises ValueError naming what is wrong."""
    found = arrays["format"].tolist() if "format" in arrays else None
    if found != [MODEL_FORMAT]:
        raise ValueError(f"{source}: format {found!r}, expected [{MODEL_FORMAT}]")
    terms = _lines(arrays["terms"]) if "terms" in arrays else []
    return TaskModel(_scorer(arrays, "layer", terms, LAYERS, source), _scorer(arrays, "topic", terms, TOPICS, source))


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
