"""Check front matter values against the schema and the vocabularies; normalise their types.

Pure: takes a :class:`FrontMatter`, returns a :class:`RuleMeta` plus warnings, or raises
:class:`RuleError` naming the file, line and field, the bad value and the allowed ones.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from ruledex.reader.errors import RuleError
from ruledex.reader.globs import split_globs
from ruledex.reader.vocab import CORE_MARKER, LAYERS, SCOPES, SEVERITIES, TOPICS

from .frontmatter import FrontMatter
from .ids import VALID_ID

KNOWN_FIELDS = frozenset(
    [
        "id",
        "title",
        "layer",
        "layers",
        "topics",
        "authoritative_for",
        "when_to_apply",
        "severity",
        "scope",
        "version",
        "reviewed",
        "expires",
        "examples",
        "example_tasks",
        "description",
        "globs",
        "always_apply",
        "technologies",
        "inferred",
    ]
)
INFERABLE = ("authoritative_for", "layers", "topics", "technologies", "when_to_apply")
"""Rule fields ``inferred`` may name: what ``ruledex import`` guessed rather than an author wrote."""
T = TypeVar("T")
_DATE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")


@dataclass(frozen=True)
class RuleMeta:
    """Validated, normalised front matter of one rule document."""

    id: str
    title: str
    layers: tuple[str, ...]
    topics: tuple[str, ...]
    authoritative_for: tuple[str, ...]
    when_to_apply: tuple[str, ...]
    examples: tuple[str, ...]
    severity: str
    scope: str
    version: str
    reviewed: str
    expires: str
    description: str
    globs: tuple[str, ...] = ()
    always_apply: bool = False
    technologies: tuple[str, ...] = ()
    inferred: tuple[str, ...] = ()


def _strings(fm: FrontMatter, path: str, key: str) -> tuple[str, ...]:
    """A string or list of strings, as a tuple; anything else is an error."""
    value = fm.values.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value.strip(),) if value.strip() else ()
    if isinstance(value, list):
        bad = next(((n, v) for n, v in enumerate(value, 1) if not isinstance(v, (str, int, float))), None)
        if bad is None:
            return tuple(str(v).strip() for v in value if str(v).strip())
        # name the item: "got list" for a list with one empty entry leaves the author guessing
        raise RuleError(
            path,
            fm.line_of(key),
            key,
            f"item {bad[0]} is {bad[1]!r}, not a string; write it as text or remove it (quote it if it holds ': ')",
        )
    raise RuleError(path, fm.line_of(key), key, f"must be a string or a list of strings, got {type(value).__name__}")


def _string(fm: FrontMatter, path: str, key: str) -> str:
    """A single text value (a number or date is read as text); a list or mapping is an error."""
    value = fm.values.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float, dt.date)):
        raise RuleError(
            path,
            fm.line_of(key),
            key,
            f"must be a string, got {type(value).__name__}; quote it if it starts with '[' or '{{' or holds ': '",
        )
    return str(value).strip()


def _one_of(value: str, allowed: tuple[str, ...], path: str, line: int, key: str, what: str) -> str:
    if value not in allowed:
        raise RuleError(path, line, key, f"unknown {what} {value!r}; use one of {', '.join(allowed)}")
    return value


def _date(fm: FrontMatter, path: str, key: str) -> str:
    value = fm.values.get(key)
    if value is None:
        return ""
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value).strip()
    shaped = _DATE.match(text)
    try:
        if shaped:  # YYYY-MM-DD that the YAML loader left as text: an impossible day or month
            return dt.date(*map(int, shaped.groups())).isoformat()
        return dt.date.fromisoformat(text).isoformat()
    except ValueError as exc:
        problem = f"not a real date ({text}: {exc})" if shaped else f"{value!r} is not a date"
        raise RuleError(path, fm.line_of(key), key, f"{problem}; write YYYY-MM-DD") from None


def _bool(fm: FrontMatter, path: str, key: str) -> bool:
    value = fm.values.get(key, False)
    if not isinstance(value, bool):
        raise RuleError(path, fm.line_of(key), key, f"must be true or false, got {value!r}")
    return value


def _present(values: tuple[str, ...], missing: RuleError) -> tuple[str, ...]:
    """``values`` when there are any, else raise ``missing``."""
    if not values:
        raise missing
    return values


def check_layers(values: tuple[str, ...], path: str, line: int, key: str) -> tuple[str, ...]:
    """Validate layer names (also used for per-directive overrides)."""
    for value in values:
        _one_of(value, LAYERS, path, line, key, "layer")
    return tuple(sorted(set(values), key=LAYERS.index))


def check_topics(
    values: tuple[str, ...], path: str, line: int, key: str, *, allow_core: bool = False
) -> tuple[str, ...]:
    """Validate topic names (lower-cased); ``allow_core`` admits ``*`` for authoritative_for."""
    allowed = (*TOPICS, CORE_MARKER) if allow_core else TOPICS
    cleaned = tuple(v.lower() for v in values)
    for value in cleaned:
        _one_of(value, allowed, path, line, key, "topic")
    return tuple(sorted(set(cleaned), key=allowed.index))


def check_severity(value: str, path: str, line: int, key: str) -> str:
    """Validate a severity marker, case-insensitively; return it upper-cased."""
    return _one_of(value.strip().upper(), SEVERITIES, path, line, key, "severity")


def _did_you_mean(key: str) -> str:
    """The known field a misspelt or other tool's key most likely means (``alwaysApply`` -> ``always_apply``)."""
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", str(key)).lower().replace("-", "_")
    close = difflib.get_close_matches(snake, sorted(KNOWN_FIELDS), n=1, cutoff=0.75)
    return f"did you mean `{close[0]}`?" if close else "known fields are listed in rules/CONTRIBUTING.md"


def validate(fm: FrontMatter, path: str, default_id: str) -> tuple[RuleMeta, list[str], list[RuleError]]:
    """Validate front matter; return the normalised metadata, warnings (unknown fields) and every error.

    A field in error does not stop the others: it takes a harmless stand-in value (which never
    reaches an index, as any error fails the document), so one run reports every mistake.
    """
    warnings = [
        f"{path}:{fm.line_of(key)}: {key}: unknown field ignored; {_did_you_mean(key)}"
        for key in sorted(fm.values)
        if key not in KNOWN_FIELDS
    ]
    errors: list[RuleError] = []

    def field(check: Callable[[], T], stand_in: T) -> T:
        try:
            return check()
        except RuleError as exc:
            errors.append(exc)
            return stand_in

    rule_id = field(lambda: _string(fm, path, "id"), "") or default_id
    if not VALID_ID.match(rule_id):
        written = bool(fm.values.get("id"))
        problem = f"{rule_id!r} is not a valid id" if written else f"cannot make a valid id from the path ({rule_id!r})"
        fix = "use" if written else "set `id:` in the front matter, with"
        errors.append(
            RuleError(path, fm.line_of("id"), "id", f"{problem}; {fix} letters, digits, '.', '_', '-' or '/'")
        )
    if "layer" in fm.values and "layers" in fm.values:
        errors.append(RuleError(path, fm.line_of("layers"), "layers", "give either `layer` or `layers`, not both"))
    layer_key = "layers" if "layers" in fm.values else "layer"
    layers = field(
        lambda: _present(
            check_layers(_strings(fm, path, layer_key), path, fm.line_of(layer_key), layer_key),
            RuleError(
                path,
                fm.line_of(layer_key),
                "layers",
                f"missing; add `layers: [...]` with one or more of {', '.join(LAYERS)}",
            ),
        ),
        ("*",),
    )
    topics = field(
        lambda: _present(
            check_topics(_strings(fm, path, "topics"), path, fm.line_of("topics"), "topics"),
            RuleError(path, fm.line_of("topics"), "topics", f"missing; add `topics: [...]` from {', '.join(TOPICS)}"),
        ),
        (),
    )
    authority = field(
        lambda: check_topics(
            _strings(fm, path, "authoritative_for"),
            path,
            fm.line_of("authoritative_for"),
            "authoritative_for",
            allow_core=True,
        ),
        (),
    )
    warnings.extend(
        f"{path}:{fm.line_of('authoritative_for')}: authoritative_for: topic {topic!r} is not in this rule's "
        "topics; add it to `topics` or drop it here (claim authority only for what the rule covers)"
        for topic in authority
        if topic != CORE_MARKER and topics and topic not in topics
    )
    severity = ""
    if fm.values.get("severity") is not None:  # stand-in SHOULD: unmarked items are not errors on top of this one
        severity = field(
            lambda: check_severity(str(fm.values["severity"]), path, fm.line_of("severity"), "severity"), "SHOULD"
        )
    scope = field(
        lambda: _one_of(
            str(fm.values.get("scope", "global")).strip(), SCOPES, path, fm.line_of("scope"), "scope", "scope"
        ),
        "global",
    )
    example_key = "examples" if "examples" in fm.values else "example_tasks"
    if "examples" in fm.values and "example_tasks" in fm.values:
        warnings.append(
            f"{path}:{fm.line_of('example_tasks')}: example_tasks: ignored, since `examples` is set too "
            "(they are one field); move these tasks into `examples`"
        )
    examples = field(lambda: _strings(fm, path, example_key), ())
    # a repeated example would count once in ranking, but `check --examples` would pass it by construction
    warnings.extend(
        f"{path}:{fm.line_of(example_key)}: {example_key}: {task!r} is listed twice; keep one"
        for task, count in Counter(examples).items()
        if count > 1
    )
    meta = RuleMeta(
        id=rule_id,
        title=field(lambda: _string(fm, path, "title"), ""),
        layers=layers,
        topics=topics,
        authoritative_for=authority,
        when_to_apply=field(lambda: _strings(fm, path, "when_to_apply"), ()),
        examples=tuple(dict.fromkeys(examples)),
        severity=severity,
        scope=scope,
        version=field(lambda: _string(fm, path, "version"), ""),
        reviewed=field(lambda: _date(fm, path, "reviewed"), ""),
        expires=field(lambda: _date(fm, path, "expires"), ""),
        description=field(lambda: _string(fm, path, "description"), ""),
        globs=field(lambda: split_globs(_strings(fm, path, "globs")), ()),
        always_apply=field(lambda: _bool(fm, path, "always_apply"), False),
        technologies=field(lambda: tuple(dict.fromkeys(t.lower() for t in _strings(fm, path, "technologies"))), ()),
        inferred=field(lambda: _inferred(fm, path), ()),
    )
    return meta, warnings, errors


def _inferred(fm: FrontMatter, path: str) -> tuple[str, ...]:
    """The ``inferred`` field: rule fields that were guessed (``ruledex import``), in :data:`INFERABLE` order."""
    values = _strings(fm, path, "inferred")
    for value in values:
        _one_of(value, INFERABLE, path, fm.line_of("inferred"), "inferred", "field name")
    return tuple(f for f in INFERABLE if f in values)
