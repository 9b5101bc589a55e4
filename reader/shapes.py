"""The MCP server's wire shapes: structured outputs (each tool's outputSchema) and option schemas.

Kept apart from :mod:`ruledex.reader.server` so the server module is only the SDK wiring. Field
names are the protocol's (camelCase where the knowledge-memory and Memory-MCP shapes use it).
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from pydantic import ConfigDict, Field, WithJsonSchema
from typing_extensions import TypedDict

from .detect import MODES
from .options import DETECT_DEFAULTS, MAX_FILES, RANGES, QueryOptions
from .vocab import LAYERS, SEVERITIES, TOPICS

_EXTRA = ConfigDict(extra="allow")

# --------------------------------------------------------------------------------------------
# Structured output shapes (published as each tool's outputSchema)


class Citation(TypedDict):
    """Where a cited directive comes from."""

    __pydantic_config__ = _EXTRA  # type: ignore[misc]
    id: str
    rule: str
    title: str
    section: str
    severity: str
    sourcePath: str
    line: int
    commit: str
    score: float
    stale: bool
    alwaysApply: bool
    """Shown because its rule always applies, after the directives picked for the task."""


class QueryAnswer(TypedDict):
    """The rules for a task: a markdown block to follow, its citations and diagnostics."""

    __pydantic_config__ = _EXTRA  # type: ignore[misc]
    context_block: str
    citations: list[Citation]
    diagnostics: dict[str, Any]


class DetectedContext(TypedDict):
    """What a text is about."""

    __pydantic_config__ = _EXTRA  # type: ignore[misc]
    detectedLayer: str | None
    topics: list[str]
    technologies: list[str]
    keywords: list[str]
    confidence: float
    alternativeContexts: list[dict[str, Any]]
    notes: list[str]


class IndexInfo(TypedDict):
    """The index that answered."""

    __pydantic_config__ = _EXTRA  # type: ignore[misc]
    name: str
    version: str
    commit: str
    buildTime: str
    path: str
    rules: int
    directives: int


class RuleSummary(TypedDict):
    """One rule document, without its directives."""

    __pydantic_config__ = _EXTRA  # type: ignore[misc]
    domain: str
    title: str
    path: str
    description: str
    layers: list[str]
    topics: list[str]
    authoritativeFor: list[str]
    directives: int
    version: str
    lastUpdated: str


class RuleList(TypedDict):
    """Every rule document of the index (of every index, when several are layered)."""

    rules: list[RuleSummary]
    total: int
    index: IndexInfo
    indexes: NotRequired[list[IndexInfo]]


class RuleDocument(RuleSummary):
    """One whole rule document; ``content`` is its markdown."""

    scope: str
    whenToApply: list[str]
    commit: str
    content: str
    index: NotRequired[str]
    """Layered indexes: the index this document comes from."""
    definedIn: NotRequired[list[str]]
    """Layered indexes: every index that defines this domain, when more than one does."""


class KnowledgeEntry(TypedDict):
    """One directive as a knowledge entry."""

    __pydantic_config__ = _EXTRA  # type: ignore[misc]
    id: str
    title: str
    content: str
    rationale: str
    tags: list[str]
    scope: str
    category: str
    layers: list[str]
    severity: str
    priority: str
    score: float
    source: dict[str, Any]


class KnowledgeResults(TypedDict):
    """Search results, best first."""

    results: list[KnowledgeEntry]
    totalMatches: int


class Entity(TypedDict):
    """A graph node (Memory MCP shape)."""

    name: str
    entityType: str
    observations: list[str]


Relation = TypedDict("Relation", {"from": str, "to": str, "relationType": str})


class Graph(TypedDict):
    """Entities and the relations between them (Memory MCP shape)."""

    entities: list[Entity]
    relations: list[Relation]


class OpenedNodes(Graph):
    """The opened entities, and the names that matched none (each once, cut to 80 characters, at most 20)."""

    notFound: list[str]
    notFoundMore: int
    """Names that matched none beyond those listed in ``notFound``."""


# --------------------------------------------------------------------------------------------
# Input schemas the SDK cannot derive from plain types (validation is the reader's, with its messages)


def number_schema(kind: str, low: float, high: float, default: float, description: str) -> WithJsonSchema:
    """A JSON-schema ``integer`` or ``number`` with its bounds; the reader validates (a string is refused)."""
    return WithJsonSchema(
        {"type": kind, "minimum": low, "maximum": high, "default": default, "description": description}
    )


def enum_schema(values: tuple[str, ...], description: str) -> WithJsonSchema:
    """A JSON-schema string enum, so clients see the allowed values in the tool's input schema."""
    return WithJsonSchema({"type": "string", "enum": list(values), "description": description})


_DEFAULTS = QueryOptions()
_ITEMS, _BUDGET = RANGES["maxItems"], RANGES["tokenBudget"]

FILES_DESCRIPTION = (
    "Paths of the files being edited (relative to the repository root): where they sit says where the work is "
    "(tests/, migrations/, a .tsx page) and their names what it is written in; rules whose globs (Cursor globs, "
    "Copilot applyTo, nested AGENTS.md) match them rank higher, rules scoped to other files lower."
)

QUERY_OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "description": "Optional tuning; the defaults suit most tasks.",
    "properties": {
        "strictLayer": {
            "type": "boolean",
            "default": _DEFAULTS.strictLayer,
            "description": "Keep only directives of the task's layer and of every layer (false: prefer them, keep all).",
        },
        "maxItems": {
            "type": "integer",
            "default": _DEFAULTS.maxItems,
            "description": f"Directives to show; clamped to {_ITEMS[0]}-{_ITEMS[1]}.",
        },
        "tokenBudget": {
            "type": "integer",
            "default": _DEFAULTS.tokenBudget,
            "description": f"Token budget of context_block ({_BUDGET[0]}-{_BUDGET[1]}). "
            "The top 3 MUST directives are always shown.",
        },
        "includeBreadcrumbs": {
            "type": "boolean",
            "default": _DEFAULTS.includeBreadcrumbs,
            "description": "Show 'Rule > Section' per line.",
        },
        "includeDiagnostics": {
            "type": "boolean",
            "default": _DEFAULTS.includeDiagnostics,
            "description": "Add score breakdowns.",
        },
        "includeRationale": {
            "type": "boolean",
            "default": _DEFAULTS.includeRationale,
            "description": "Add each directive's rationale.",
        },
        "severityFilter": {
            "type": "array",
            "items": {"type": "string", "enum": list(SEVERITIES)},
            "description": "Only these severities.",
        },
        "topicsBias": {
            "type": "array",
            "items": {"type": "string", "enum": list(TOPICS)},
            "description": "Favour these topics in addition to the detected ones.",
        },
        "layer": {"type": "string", "enum": list(LAYERS), "description": "Use this layer instead of the detected one."},
        "files": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": MAX_FILES,
            "description": FILES_DESCRIPTION,
        },
    },
}

DETECT_OPTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "returnKeywords": {
            "type": "boolean",
            "default": DETECT_DEFAULTS["returnKeywords"],
            "description": "Include the task's keywords.",
        },
        "confidenceThreshold": {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "default": DETECT_DEFAULTS["confidenceThreshold"],
            "description": "Below this confidence detectedLayer is null (0-1).",
        },
        "modeSlug": {"type": "string", "enum": list(MODES), "description": "Assistant mode: biases detection."},
        "files": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": MAX_FILES,
            "description": "Paths of the files being edited: where they sit says where the work is (tests/, "
            "migrations/, a .tsx page) and their names what it is written in.",
        },
    },
}

TaskText = Annotated[
    str, Field(description="The whole task in the user's words, e.g. 'Add user registration API endpoint'.")
]
ModeSlug = Annotated[
    str | None, enum_schema(MODES, "Assistant mode: architect leans to domain/architecture/docs, debug to tests.")
]
QueryOptionsArg = Annotated[dict[str, Any] | None, WithJsonSchema(QUERY_OPTIONS_SCHEMA)]
DetectOptionsArg = Annotated[dict[str, Any] | None, WithJsonSchema(DETECT_OPTIONS_SCHEMA)]
Domain = Annotated[str, Field(description="Rule id or file stem from list_rules, e.g. 'security'.")]
IndexName = Annotated[
    str | None,
    Field(
        description="Layered indexes: the index to read the rule from, as a citation's or list_rules' 'index' "
        "names it (default: the most specific scope that defines the domain)."
    ),
]

# --------------------------------------------------------------------------------------------
# Instructions, tool descriptions and prompts
