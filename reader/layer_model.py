"""A layer classifier learnt from labeled tasks: one weight per (term, layer), shipped with the reader.

The hand-written dictionaries know which words name a layer ("migration", "dockerfile"); they do
not know that "two accounts on the same email" is a persistence problem or that "new hires lose a
day" is a docs problem. A multinomial logistic regression over the detector's own terms
(:func:`ruledex.reader.detect.task_terms`), trained on a set of labeled coding tasks that is not
any evaluation set (``builder/data/layer_tasks.jsonl``, retrained with
``python -m ruledex.builder.layer_training``), learns those associations. It does not depend on
an index, so every index, old or new, gets it. Scoring is a sum of a few dozen small tuples.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .vocab import LAYERS

MODEL_FILE = Path(__file__).with_name("data") / "layer_model.json"
MODEL_FORMAT = 1


@dataclass(frozen=True)
class LayerModel:
    """Softmax regression weights: a bias per layer and, per known term, one weight per layer."""

    layers: tuple[str, ...]
    bias: tuple[float, ...]
    weights: dict[str, tuple[float, ...]]

    def logits(self, terms: Iterable[str]) -> list[float]:
        """Bias plus the weights of every known term (unknown terms add nothing)."""
        rows = [row for row in map(self.weights.get, terms) if row is not None]
        if not rows:
            return list(self.bias)
        return [b + sum(column) for b, column in zip(self.bias, zip(*rows, strict=True), strict=True)]

    def probabilities(self, terms: Iterable[str]) -> dict[str, float]:
        """P(layer | terms), summing to 1 over :attr:`layers`."""
        logits = self.logits(terms)
        peak = max(logits)
        exps = [math.exp(v - peak) for v in logits]
        total = sum(exps)
        return {name: e / total for name, e in zip(self.layers, exps, strict=True)}

    def evidence(self, terms: Iterable[str]) -> dict[str, float]:
        """How far each layer's probability rises above an even split (0 for the others).

        Detection adds this, not the probability: a task with no telling word ("make it better")
        has near-even probabilities and must not get a layer from the model's prior alone.
        """
        even = 1.0 / len(self.layers)
        return {name: max(0.0, p - even) for name, p in self.probabilities(terms).items()}

    def to_json(self) -> dict[str, Any]:
        """The shipped file's shape (terms sorted, so the file is reproducible)."""
        return {
            "format": MODEL_FORMAT,
            "layers": list(self.layers),
            "bias": list(self.bias),
            "weights": {term: list(self.weights[term]) for term in sorted(self.weights)},
        }


def from_json(data: dict[str, Any], source: str = "layer model") -> LayerModel:
    """Validate and wrap a model read from JSON; raises ValueError naming what is wrong."""
    if data.get("format") != MODEL_FORMAT:
        raise ValueError(f"{source}: format {data.get('format')!r}, expected {MODEL_FORMAT}")
    layers = tuple(data.get("layers", ()))
    if not layers or any(name not in LAYERS for name in layers):
        raise ValueError(f"{source}: 'layers' must name layers of {LAYERS}, got {list(layers)}")
    bias = tuple(float(v) for v in data.get("bias", ()))
    weights = {str(t): tuple(float(v) for v in row) for t, row in data.get("weights", {}).items()}
    if len(bias) != len(layers) or any(len(row) != len(layers) for row in weights.values()):
        raise ValueError(f"{source}: every weight row needs {len(layers)} values, one per layer")
    return LayerModel(layers, bias, weights)


@functools.lru_cache(maxsize=1)
def shipped_model() -> LayerModel:
    """The model shipped with the reader, read once (about 1 ms) on the first detection."""
    try:
        data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"{MODEL_FILE}: cannot read the layer model ({exc}); reinstall ruledex") from exc
    return from_json(data, str(MODEL_FILE))
