"""The vocabularies every part of ruledex shares: layers, severities, topics.

This is the one definition. The builder validates rule documents against it, the artifact stores
layers and topics as bit positions in this order, and the reader names them back from it.
"""

from __future__ import annotations

LAYERS: tuple[str, ...] = (
    "1-Presentation",
    "2-Application",
    "3-Domain",
    "4-Persistence",
    "5-Tests",
    "6-Docs",
    "7-Deployment",
    "*",
)
"""Architecture layers, in bit order. ``*`` means "every layer"."""

ANY_LAYER = "*"

TASK_LAYERS: tuple[str, ...] = tuple(name for name in LAYERS if name != ANY_LAYER)
"""The layers a task can be about: ``*`` is for rules that apply everywhere, never a task's layer."""

LAYER_HINTS: dict[str, str] = {
    "1-Presentation": "UI, components, pages, CSS, client-side state, accessibility",
    "2-Application": "use cases, services, controllers, API handlers, orchestration",
    "3-Domain": "business rules, entities, value objects, invariants",
    "4-Persistence": "databases, migrations, queries, repositories, caches",
    "5-Tests": "unit, integration, end-to-end tests, fixtures, test data",
    "6-Docs": "READMEs, API docs, ADRs, changelogs, comments",
    "7-Deployment": "CI/CD, containers, infrastructure, configuration, release",
    "*": "applies to every layer",
}

SEVERITIES: tuple[str, ...] = ("MUST", "SHOULD", "MAY")
"""Severity markers, strongest first; the index stores a directive's position in this tuple."""

SEVERITY_BOOST: dict[str, float] = {"MUST": 1.0, "SHOULD": 0.6, "MAY": 0.3}
"""How much each severity contributes to the ranking's severity signal (0..1)."""

TOPICS: tuple[str, ...] = (
    "security",
    "testing",
    "performance",
    "api",
    "database",
    "frontend",
    "backend",
    "devops",
    "documentation",
    "accessibility",
    "architecture",
    "quality",
    "observability",
    "reliability",
    "privacy",
    "git",
)
"""Topics, in bit order (at most 32: the index stores them in a uint32 mask)."""

LAYER_POSITION: dict[str, int] = {name: i for i, name in enumerate(LAYERS)}
TOPIC_POSITION: dict[str, int] = {name: i for i, name in enumerate(TOPICS)}
"""Each name's place (and bit) in its vocabulary: a dict lookup where ``tuple.index`` would scan."""

SCOPES: tuple[str, ...] = ("global", "team", "project")

CORE_MARKER = "*"
"""A rule whose ``authoritative_for`` contains this is a core rule, shown when nothing matches."""


def layer_mask(layers: tuple[str, ...] | list[str]) -> int:
    """Pack layer names into a bit mask in :data:`LAYERS` order."""
    mask = 0
    for name in layers:
        mask |= 1 << LAYERS.index(name)
    return mask


def topic_mask(topics: tuple[str, ...] | list[str]) -> int:
    """Pack topic names into a bit mask in :data:`TOPICS` order; unknown names are ignored."""
    mask = 0
    for name in topics:
        if name in TOPICS:
            mask |= 1 << TOPIC_POSITION[name]
    return mask


def names_from_mask(mask: int, vocabulary: tuple[str, ...]) -> tuple[str, ...]:
    """Unpack a bit mask into the names it holds, in vocabulary order."""
    return tuple(name for i, name in enumerate(vocabulary) if mask >> i & 1)


def canonical(value: str, vocabulary: tuple[str, ...]) -> str | None:
    """``value`` as the vocabulary spells it, whatever its case and surrounding spaces; None if no name of it.

    "security " -> "security", "must" -> "MUST", "4-persistence" -> "4-Persistence".
    """
    wanted = value.strip().casefold()
    return next((name for name in vocabulary if name.casefold() == wanted), None)
