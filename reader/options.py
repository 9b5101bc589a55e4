"""The query options: their defaults and allowed values, defined once.

``query_directives``, the MCP tool's input schema (``shapes.py``) and the CLI's flags all read
them from here. No numpy: the CLI builds its parser from these without loading the query code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from .errors import shown
from .vocab import LAYERS, SEVERITIES, TOPICS, canonical

RANGES: dict[str, tuple[int, int]] = {"maxItems": (3, 12), "tokenBudget": (100, 8000)}
"""Numeric options are clamped to these bounds (inclusive)."""

DETECT_DEFAULTS: dict[str, Any] = {"returnKeywords": True, "confidenceThreshold": 0.0}
"""``detect_context``'s options when not given: keywords returned, any confidence names the layer."""

EVAL_K = 10
"""``ruledex eval``'s default deeper cutoff of nDCG and Recall (@5 is always reported)."""


@dataclass(frozen=True)
class QueryOptions:
    """Options of ``query_directives``; defaults are the design's."""

    strictLayer: bool = True
    maxItems: int = 8
    tokenBudget: int = 900
    includeBreadcrumbs: bool = True
    includeDiagnostics: bool = False
    includeRationale: bool = False
    severityFilter: tuple[str, ...] = ()
    topicsBias: tuple[str, ...] = ()
    layer: str | None = None
    files: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> QueryOptions:
        """Validate and normalise options (maxItems and tokenBudget are clamped to their :data:`RANGES`)."""
        raw = dict(raw or {})
        unknown = sorted(set(raw) - _FIELDS)
        if unknown:
            raise ValueError(f"options: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_FIELDS))}")
        out: dict[str, Any] = {}
        for name in ("strictLayer", "includeBreadcrumbs", "includeDiagnostics", "includeRationale"):
            if name in raw and raw[name] is not None:
                if not isinstance(raw[name], bool):
                    raise ValueError(f"options.{name}: must be true or false, got {shown(raw[name])}")
                out[name] = raw[name]
        for name, (low, high) in RANGES.items():
            if name in raw and raw[name] is not None:
                value = raw[name]
                if (
                    isinstance(value, bool)
                    or not isinstance(value, (int, float))
                    or not math.isfinite(value)
                    or value != int(value)
                ):
                    raise ValueError(f"options.{name}: must be an integer ({low}-{high}), got {shown(value)}")
                out[name] = clamp(name, value)
        if raw.get("severityFilter") is not None:
            out["severityFilter"] = _names(raw["severityFilter"], SEVERITIES, "severityFilter")
        if raw.get("topicsBias") is not None:
            out["topicsBias"] = _names(raw["topicsBias"], TOPICS, "topicsBias")
        if raw.get("files") is not None:
            out["files"] = parse_files(raw["files"])
        if raw.get("layer") is not None:
            if not isinstance(raw["layer"], str):
                raise ValueError(
                    f"options.layer: must be one layer name from {', '.join(LAYERS)}, got {shown(raw['layer'])}"
                )
            out["layer"] = _names(raw["layer"], LAYERS, "layer")[0]
        return cls(**out)


_FIELDS = frozenset(f.name for f in fields(QueryOptions))
"""The option names :meth:`QueryOptions.from_dict` accepts."""


def clamp(name: str, value: float) -> int:
    """``value`` brought within ``RANGES[name]``."""
    low, high = RANGES[name]
    return min(high, max(low, int(value)))


def clamp_notes(raw: dict[str, Any] | None) -> list[str]:
    """Notes for numeric options outside their :data:`RANGES` (they are clamped, and the answer says so)."""
    notes = []
    for name, (low, high) in RANGES.items():
        value = (raw or {}).get(name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if number and not low <= value <= high:
            notes.append(f"options.{name} {value:g} is outside {low}-{high}: used {clamp(name, value)}")
    return notes


def _names(value: Any, allowed: tuple[str, ...], field_name: str) -> tuple[str, ...]:
    """Names from ``allowed``, spelled as it spells them (any case: a client may write "Security")."""
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"options.{field_name}: must be a string or a list of strings from {', '.join(allowed)}")
    out = []
    for v in values:
        name = canonical(v, allowed)
        if name is None:
            raise ValueError(f"options.{field_name}: unknown value {shown(v.strip())}; allowed: {', '.join(allowed)}")
        out.append(name)
    return tuple(out)


MAX_FILES = 200
MAX_PATH_CHARS = 1024
"""Longer than any real repository path: refused before glob and path matching reads it."""


def parse_files(value: Any) -> tuple[str, ...]:
    """Validate ``options.files``: paths the user is editing, relative to the rules repository root."""
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
        raise ValueError("options.files: must be a path or a list of paths (strings) of the files being edited")
    if len(values) > MAX_FILES:
        raise ValueError(f"options.files: at most {MAX_FILES} paths, got {len(values)}")
    long = next((v for v in values if len(v) > MAX_PATH_CHARS), None)
    if long is not None:
        raise ValueError(
            f"options.files: a path of {len(long)} characters; give paths relative to the repository root, "
            f"at most {MAX_PATH_CHARS} characters"
        )
    return tuple(v.strip() for v in values if v.strip())
