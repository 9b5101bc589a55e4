"""A task model learnt from labeled tasks: per-term weights for layers and topics, shipped with the reader.

The hand-written dictionaries know which words name a layer or topic ("migration", "dockerfile");
they do not know that "two accounts on the same email" is a persistence problem or that "new
hires lose a day" is a docs problem. Two linear models over the detector's own terms
(:func:`ruledex.reader.detect.task_terms`) learn those associations from a set of labeled coding
tasks that is not any evaluation set (``builder/data/tasks.jsonl``, retrained with
``python -m ruledex.builder.task_training``): a softmax regression for the one layer of a task and
one logistic regression per topic (a task has one to three). They do not depend on an index, so
every index, old or new, gets them. Scoring is a sum of a few dozen small tuples.

Detection adds *evidence*, not probabilities: how far a layer or a topic rises above the model's
own odds for a task with no known word (its prior, its base rate). A task with no telling word ("make it better") then gets nothing from
the models' priors.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .vocab import LAYERS, TOPICS

MODEL_FILE = Path(__file__).with_name("data") / "task_model.json"
MODEL_FORMAT = 1


@dataclass(frozen=True)
class TermWeights:
    """A linear scorer: a bias per class and, per known term, one weight per class."""

    classes: tuple[str, ...]
    bias: tuple[float, ...]
    weights: dict[str, tuple[float, ...]]

    def logits(self, terms: Iterable[str]) -> list[float]:
        """Bias plus the weights of every known term (unknown terms add nothing)."""
        rows = [row for row in map(self.weights.get, terms) if row is not None]
        if not rows:
            return list(self.bias)
        return [b + sum(column) for b, column in zip(self.bias, zip(*rows, strict=True), strict=True)]

    def to_json(self) -> dict[str, Any]:
        """This scorer's part of the shipped file (terms sorted, so the file is reproducible)."""
        return {
            "classes": list(self.classes),
            "bias": list(self.bias),
            "weights": {term: list(self.weights[term]) for term in sorted(self.weights)},
        }


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

    def to_json(self) -> dict[str, Any]:
        """The shipped file's shape."""
        return {"format": MODEL_FORMAT, "layers": self.layers.to_json(), "topics": self.topics.to_json()}


def _part(data: Any, key: str, vocabulary: tuple[str, ...], source: str) -> TermWeights:
    part = data.get(key) if isinstance(data, dict) else None
    if not isinstance(part, dict):
        raise ValueError(f"{source}: missing the '{key}' model")
    classes = tuple(part.get("classes", ()))
    if not classes or any(name not in vocabulary for name in classes):
        raise ValueError(f"{source}: '{key}.classes' must name entries of {vocabulary}, got {list(classes)}")
    bias = tuple(float(v) for v in part.get("bias", ()))
    weights = {str(t): tuple(float(v) for v in row) for t, row in part.get("weights", {}).items()}
    if len(bias) != len(classes) or any(len(row) != len(classes) for row in weights.values()):
        raise ValueError(f"{source}: every '{key}' weight row needs {len(classes)} values, one per class")
    return TermWeights(classes, bias, weights)


def from_json(data: Any, source: str = "task model") -> TaskModel:
    """Validate and wrap a model read from JSON; raises ValueError naming what is wrong."""
    if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise ValueError(f"{source}: format {found!r}, expected {MODEL_FORMAT}")
    return TaskModel(_part(data, "layers", LAYERS, source), _part(data, "topics", TOPICS, source))


@functools.lru_cache(maxsize=1)
def shipped_model() -> TaskModel:
    """The model shipped with the reader, read once (a few ms) on the first detection."""
    try:
        data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"{MODEL_FILE}: cannot read the task model ({exc}); reinstall ruledex") from exc
    return from_json(data, str(MODEL_FILE))
