"""Read other tools' rule files into the same records as ruledex's own documents.

Formats: Cursor, AGENTS.md, CLAUDE.md, Copilot, Cline, Windsurf and plain markdown.

Which format a file has comes from its path (:func:`ruledex.builder.source.path_format`) and its
content: a ``.md``/``.mdc`` whose front matter has ruledex keys is a ruledex document and goes to
the strict parser. Every other file is mapped here:

- front matter is read leniently (Cursor writes ``globs: **/*.ts`` unquoted, which is not YAML):
  YAML first, else ``key: value`` lines. ``description`` becomes the rule's description and its
  when-to-apply phrase; ``globs`` (Cursor, Windsurf), ``applyTo`` (Copilot) and ``paths`` (Cline)
  become the rule's globs; ``alwaysApply: true`` / ``trigger: always_on`` set ``always_apply``;
- a nested ``AGENTS.md``/``CLAUDE.md`` applies to its folder: globs ``<folder>/**``; rules under a
  nested ``<folder>/.cursor/rules/`` get their globs prefixed with the folder;
- the body is read by :mod:`ruledex.builder.freeform` (markdown AST); JavaScript-style prompt
  files (``// comments`` and ``const rules = [...]``) and JSON blobs are first rewritten to the
  equivalent markdown (:mod:`ruledex.builder.blobs`);
- severity, layers, topics and technologies are inferred (:mod:`ruledex.builder.infer`) and
  every inferred field is named in the record's ``inferred``.

A foreign file that cannot be read (broken front matter, no instruction in it) raises
:class:`SkipFile`, which the build reports as a warning naming the file; nothing here is fatal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import yaml

from ruledex.reader.format import json_kind
from ruledex.reader.globs import split_globs
from ruledex.reader.records import DirectiveRecord, RuleRecord
from ruledex.reader.text import slug
from ruledex.reader.vocab import TOPICS

from .blobs import js_to_markdown, json_to_markdown
from .freeform import MARKDOWN_LANGS, LineMap, Outline, read_markdown
from .frontmatter import SAFE_LOADER
from .ids import derive_id
from .infer import (
    FALLBACK_TOPIC,
    authority_from_name,
    directive_layers,
    humanise,
    infer_context,
    infer_severity,
)
from .parse import ParsedDocument, QuotesTooDeep, normalise_newlines, unclosed_block_warning
from .source import RULEDEX, SourceFile

_KEY_LINE = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")
_TOOL_DIRS = frozenset({".github", ".cursor", ".windsurf", ".clinerules"})
_CONTAINERS = ((".cursor", "rules"), (".github", "instructions"), (".windsurf", "rules"), (".clinerules",))
_SPECIAL_TITLES = {
    "agents.md": "AGENTS.md",
    "claude.md": "CLAUDE.md",
    "claude.local.md": "CLAUDE.local.md",
    ".cursorrules": "Cursor rules",
    ".windsurfrules": "Windsurf rules",
    ".clinerules": "Cline rules",
    "copilot-instructions.md": "Copilot instructions",
}


class SkipFile(Exception):
    """A foreign file is left out of the build; ``str()`` is the warning ``path:line: field: message``."""

    def __init__(self, path: str, line: int, field: str, message: str) -> None:
        """Record where and why."""
        super().__init__(f"{path}:{line}: {field}: {message}; file skipped")


@dataclass(frozen=True)
class ForeignFrontMatter:
    """Front matter of a foreign file, read leniently, and the body after it."""

    values: dict[str, Any]
    body: str
    body_line: int


def _unquote(value: str) -> str:
    """``"text"`` -> ``text`` (JSON rules for double quotes), ``'it''s'`` -> ``it's``."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            return str(json.loads(value))
        except ValueError:
            return value[1:-1]
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return value


def _fallback_values(block: list[str]) -> dict[str, Any] | None:
    """``key: value`` lines (Cursor style); None when some line is neither that nor a list item."""
    values: dict[str, Any] = {}
    key = ""
    for line in block:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY_LINE.match(line)
        if match and not line[0].isspace():
            key = match.group(1)
            values[key] = _unquote(match.group(2).strip())
        elif key and line[0].isspace() and line.strip().startswith("- "):
            previous = values[key] if isinstance(values[key], list) else ([values[key]] if values[key] else [])
            values[key] = [*previous, line.strip()[2:].strip()]
        elif key and line[0].isspace():
            values[key] = f"{values[key]} {line.strip()}".strip()
        else:
            return None
    return values


def read_front_matter(text: str, path: str) -> ForeignFrontMatter:
    """Split leniently: YAML when it parses to a mapping, else Cursor-style ``key: value`` lines.

    A block that has no ``key: value`` line at all is not front matter (a ``---`` rule opening a
    file); an unclosed block, or one mixing keys with other lines, is broken: :class:`SkipFile`.
    """
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return ForeignFrontMatter({}, text, 1)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    block = lines[1:end] if end is not None else lines[1:]
    if not any(_KEY_LINE.match(line) for line in block):
        return ForeignFrontMatter({}, text, 1)
    if end is None:
        raise SkipFile(path, 1, "front matter", "opened with '---' but never closed")
    values: Any = None
    try:
        values = yaml.load("\n".join(block), Loader=SAFE_LOADER)
    except yaml.YAMLError:
        values = None
    if not isinstance(values, dict):
        values = _fallback_values(block)
    if values is None:
        bad = next(
            i
            for i, line in enumerate(block)
            if line.strip() and not _KEY_LINE.match(line) and not line[0].isspace() and not line.startswith("#")
        )
        raise SkipFile(
            path, bad + 2, "front matter", f"cannot read {block[bad].strip()[:40]!r}; write `key: value` lines"
        )
    return ForeignFrontMatter({str(k): v for k, v in values.items()}, "\n".join(lines[end + 1 :]), end + 2)


def _truthy(value: Any) -> bool:
    return value is True or str(value).strip().lower() in ("true", "yes", "1", "on")


def _container(parts: list[str]) -> tuple[int, int]:
    """(start, length) of the rule container folder in a path (``.cursor/rules`` ...), or (-1, 0)."""
    for names in _CONTAINERS:
        for i in range(len(parts) - len(names)):
            if tuple(parts[i : i + len(names)]) == names:
                return i, len(names)
    return -1, 0


def preferred_id(path: str) -> str:
    """A short, readable rule id: the path without tool folders, dots or extensions.

    ``.cursor/rules/react.mdc`` -> ``react``; ``pkg/api/AGENTS.md`` -> ``pkg/api/agents``;
    ``.github/instructions/db.instructions.md`` -> ``db``; ``.cursorrules`` -> ``cursorrules``.
    """
    parts = path.split("/")
    start, length = _container(parts)
    if start >= 0:
        parts = parts[:start] + parts[start + length :]
    parts = [p for p in parts[:-1] if p not in _TOOL_DIRS] + parts[-1:]
    name = re.sub(r"(\.instructions)?\.(md|mdc|markdown|txt)$", "", parts[-1], flags=re.IGNORECASE).lstrip(".")
    if name.lower() in ("agents", "claude", "claude.local", "copilot-instructions"):
        name = name.lower()
    parts[-1] = name
    return derive_id("/".join(p.lstrip(".") for p in parts if p.lstrip(".")))


def assign_ids(paths: list[str], taken: set[str]) -> tuple[dict[str, str], list[str]]:
    """Give each foreign file a unique id, preferring :func:`preferred_id`; warn on renames.

    Paths are handled in sorted order, so the same files always get the same ids.
    """
    ids: dict[str, str] = {}
    warnings: list[str] = []
    used = set(taken)
    wanted: dict[str, list[str]] = {}
    for path in sorted(paths):
        wanted.setdefault(preferred_id(path), []).append(path)
    for path in sorted(paths):
        rid = preferred_id(path)
        if rid in used or len(wanted[rid]) > 1:
            fallback = derive_id(re.sub(r"\.", "-", path.lstrip(".")))
            n, candidate = 2, fallback
            while candidate in used:
                candidate, n = f"{fallback}-{n}", n + 1
            warnings.append(f"{path}:1: id: {rid!r} is also the id of another rule file; using {candidate!r}")
            rid = candidate
        used.add(rid)
        ids[path] = rid
    return ids, warnings


def _folder_globs(path: str, fmt: str, globs: tuple[str, ...]) -> tuple[str, ...]:
    """Scope rules that live in a sub-folder to that folder (nested AGENTS.md, nested .cursor/rules)."""
    parts = path.split("/")
    if fmt in ("agents-md", "claude-md"):
        folder = "/".join(parts[:-1])
        return (f"{folder}/**",) if folder else globs
    start, _ = _container(parts)
    folder = "/".join(parts[:start]) if start > 0 else ""
    if not folder:
        return globs
    if not globs:
        return (f"{folder}/**",)
    return tuple(f"{folder}/{g.lstrip('/')}" if "/" in g.strip("/") else f"{folder}/**/{g}" for g in globs)


def _outline(body: str, body_line: int) -> Outline:
    as_json = json_to_markdown(body)
    if as_json is not None:
        return read_markdown(as_json, LineMap(as_json, body_line, [body_line] * (as_json.count("\n") + 1)))
    as_js = js_to_markdown(body)
    if as_js is not None:
        text, origin = as_js
        return read_markdown(text, LineMap(text, body_line, [body_line + o for o in origin]))
    return read_markdown(body, LineMap(body, body_line))


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return re.sub(r"(\.instructions)?\.(md|mdc|markdown|txt)$", "", name, flags=re.IGNORECASE).lstrip(".")


def _title(source: SourceFile, outline: Outline, values: dict[str, Any]) -> str:
    """Front matter title, else the document's only H1, else the tool's file name, else the file stem."""
    explicit = str(values.get("title") or "").strip()
    if explicit or outline.title:
        return explicit or outline.title
    folder, _, name = source.path.rpartition("/")
    special = _SPECIAL_TITLES.get(name.lower())
    if special is None:
        return humanise(_stem(source.path))
    folder = "/".join(p for p in folder.split("/") if not p.startswith("."))
    return f"{special} ({folder})" if folder else special


_TECH_NAMES = {
    "nextjs": "Next.js",
    "next.js": "Next.js",
    "nodejs": "Node.js",
    "node": "Node.js",
    "c#": "C#",
    "javascript": "JavaScript",
    "typescript": "TypeScript",
    "postgresql": "PostgreSQL",
    "mysql": "MySQL",
    "sqlite": "SQLite",
    "mongodb": "MongoDB",
    "rabbitmq": "RabbitMQ",
    "graphql": "GraphQL",
    "fastapi": "FastAPI",
    "nestjs": "NestJS",
    "sqlalchemy": "SQLAlchemy",
    "openapi": "OpenAPI",
    "swiftui": "SwiftUI",
    "tanstack": "TanStack",
    "typeorm": "TypeORM",
    "dynamodb": "DynamoDB",
    "bigquery": "BigQuery",
    "clickhouse": "ClickHouse",
    "duckdb": "DuckDB",
    "pytorch": "PyTorch",
    "pyspark": "PySpark",
    "langchain": "LangChain",
    "argocd": "ArgoCD",
    "gitlab": "GitLab",
    "junit": "JUnit",
    "rspec": "RSpec",
    "asp.net": "ASP.NET",
    "dotnet": "dotnet",
    "dbt": "dbt",
    "gin": "Gin",
    "go": "Go",
    "golang": "Go",
    "vue": "Vue",
    "htmx": "htmx",
    "tensorflow": "TensorFlow",
    "c++": "C++",
    "react-native": "React Native",
    "react native": "React Native",
    "spring boot": "Spring Boot",
    "jetpack compose": "Jetpack Compose",
}
"""How a technology is written in a when-to-apply phrase, where capitalising it is not enough (same
words: matching lower-cases them)."""


def _tech_phrase(technologies: tuple[str, ...]) -> str:
    """A when-to-apply phrase naming a rule's focus technologies ("FastAPI, Python").

    A task that names the same framework then matches the rule by its when-to-apply, which is
    how the reader tells near neighbours (FastAPI / Django / Flask rules) apart.
    """
    names: list[str] = []
    for tech in technologies:
        name = _TECH_NAMES.get(tech) or (
            tech if not tech.isalpha() else tech.upper() if len(tech) <= 3 else tech.capitalize()
        )
        if name not in names:
            names.append(name)
    return ", ".join(names[:4])


def parse_foreign(source: SourceFile, rule_id: str) -> ParsedDocument:
    """Map one foreign rule file onto a rule and its directives (see the module docstring)."""
    if source.format == RULEDEX:
        raise ValueError(f"{source.path} is a ruledex document; use parse_document")
    text = normalise_newlines(source.text)
    fm = read_front_matter(text, source.path)
    values, text_warnings = _text_values(fm.values, text, source.path)
    try:
        outline = _outline(fm.body, fm.body_line)
    except QuotesTooDeep as exc:
        raise SkipFile(source.path, fm.body_line + exc.line, "markdown", str(exc)) from None
    if not outline.drafts:
        what = "no text after the front matter" if not fm.body.strip() else "nothing in it reads as an instruction"
        raise SkipFile(source.path, fm.body_line, "directives", f"none found ({what}; write list items or imperatives)")
    stated_globs, glob_warnings = _glob_value(values, text, source.path)
    globs = _folder_globs(source.path, source.format, split_globs(stated_globs))
    always = _truthy(values.get("alwaysApply")) or str(values.get("trigger", "")).strip() == "always_on"
    title = _title(source, outline, values)
    description = str(values.get("description") or outline.meta.get("description") or "").strip()
    if not description:
        description = " ".join(outline.description).strip()
    stated = str(values.get("description") or outline.meta.get("description") or "").strip()
    carried = {  # text the rule record carries already, so an import need not repeat it
        "description": not stated,
        "meta:description": not values.get("description"),
        "meta:version": not values.get("version"),
    }
    notes = [n for n in outline.notes if not carried.get(n.kind, False)]
    focus = infer_context(" ".join([title, description, humanise(_stem(source.path))])).technologies
    when = tuple(dict.fromkeys(p for p in (stated, _tech_phrase(focus)) if p))
    if not when and title.lower() != humanise(_stem(source.path)).lower():
        when = (title,)
    all_text = "\n".join([title, description, *(" ".join([*d.section[-1:], d.text]) for d in outline.drafts)])
    rule_ctx = infer_context(all_text, rule_level=True)
    layers = rule_ctx.layers or ("*",)
    authority = authority_from_name(_stem(source.path))
    topics = tuple(sorted(set(rule_ctx.topics or (FALLBACK_TOPIC,)) | set(authority), key=TOPICS.index))
    directives: list[DirectiveRecord] = []
    counters: dict[str, int] = {}
    for draft in outline.drafts:
        anchor = slug(" ".join(draft.section)) or "top"
        counters[anchor] = counters.get(anchor, 0) + 1
        ctx = infer_context(" ".join([*draft.section[-1:], draft.text]))
        inferred = ("layers", "topics") if draft.severity else ("severity", "layers", "topics")
        directives.append(
            DirectiveRecord(
                id=f"{rule_id}#{anchor}-{counters[anchor]}",
                rule=-1,
                section=draft.section,
                severity=draft.severity or infer_severity(draft.text),
                text=draft.text,
                rationale=" ".join(draft.rationale).strip(),
                examples=tuple(draft.examples),
                layers=directive_layers(ctx.layers, layers),
                topics=tuple(sorted(set(ctx.topics) | set(topics), key=TOPICS.index)),
                line=draft.line,
                inferred=inferred,
            )
        )
    rule_inferred = ["layers", "topics", "technologies"]
    if authority:
        rule_inferred.insert(0, "authoritative_for")
    if when:
        rule_inferred.append("when_to_apply")
    rule = RuleRecord(
        id=rule_id,
        title=title,
        path=source.path,
        layers=layers,
        topics=topics,
        authoritative_for=authority,
        when_to_apply=when,
        version=str(values.get("version") or outline.meta.get("version") or "").strip(),
        description=description,
        sections=tuple(dict.fromkeys(outline.sections)),
        last_updated=str(outline.meta.get("last_updated") or values.get("last_updated") or "").strip(),
        globs=globs,
        always_apply=always,
        format=source.format,
        technologies=focus,
        inferred=tuple(rule_inferred),
    )
    return ParsedDocument(
        rule,
        directives,
        [*text_warnings, *glob_warnings, *_markdown_warnings(fm.body, fm.body_line, source.path)],
        notes,
    )


def _line_of(text: str, key: str) -> int:
    """The front matter line that sets ``key`` (1 when none is found: the lenient reader has no positions)."""
    return next((n for n, ln in enumerate(text.split("\n")[1:], 2) if re.match(rf"{re.escape(key)}\s*:", ln)), 1)


TEXT_KEYS = ("title", "description")
"""Front matter fields read as one line of text."""


def _text_values(values: dict[str, Any], text: str, path: str) -> tuple[dict[str, Any], list[str]]:
    """``values`` with :data:`TEXT_KEYS` as text: a list of strings joined, anything else left out with a warning.

    ``description: [a, b]`` is two lines of one description; ``title: {a: 1}`` is no title, and
    turned into text it would become one ("{'a': 1}").
    """
    out, warnings = dict(values), []
    for key in TEXT_KEYS:
        value = values.get(key)
        if not isinstance(value, list | dict | bool):  # text, a number or a date reads as written
            continue
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = " ".join(v.strip() for v in value)
            continue
        out[key] = None
        warnings.append(
            f"{path}:{_line_of(text, key)}: {key}: {json_kind(value)}, not text; left out; write it as text"
        )
    return out, warnings


GLOB_KEYS = ("globs", "applyTo", "paths")
"""Where foreign formats put the files a rule applies to: Cursor, Copilot, Claude Code."""


def _glob_value(values: dict[str, Any], text: str, path: str) -> tuple[str | list[str] | None, list[str]]:
    """The stated globs (a string, or the strings of a list) and a warning for any value that is not one.

    YAML lets ``globs: {a: 1}`` or ``[[a], null, 3]`` through; turned into text, they became globs
    such as ``{'a': 1}`` that match nothing, and the rule silently applied to no file.
    """
    key = next((k for k in GLOB_KEYS if values.get(k)), None)
    if key is None:
        return None, []
    value = values[key]
    if isinstance(value, str):
        return value, []
    kept = [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
    if isinstance(value, list) and len(kept) == len(value):
        return kept, []
    line = _line_of(text, key)
    what = (
        f"{len(value) - len(kept)} of its entries not text ({', '.join(json_kind(v) for v in value if not isinstance(v, str))})"
        if isinstance(value, list)
        else f"{json_kind(value)}, not a glob or a list of globs"
    )
    return kept or None, [
        f"{path}:{line}: {key}: {what}; left out, so {'the other globs stand' if kept else 'the rule applies to every file'}; "
        f'write each glob as text, e.g. {key}: ["src/**/*.ts"]'
    ]


def _markdown_warnings(body: str, body_line: int, path: str) -> list[str]:
    """A code fence or HTML comment never closed (:func:`unclosed_block_warning`), when the body was read as markdown."""
    warnings = unclosed_block_warning(body, body_line, path, read_langs=MARKDOWN_LANGS)
    if warnings and (json_to_markdown(body) is not None or js_to_markdown(body) is not None):
        return []  # a JSON or JavaScript prompt file: its text was not read as markdown
    return warnings
