"""``ruledex import``: convert other tools' rule files into ruledex's own format, for curation.

Each foreign file (Cursor, AGENTS.md, Copilot ... -- see :mod:`ruledex.builder.adapters`) becomes
one ruledex document: front matter with the inferred ``layers``, ``topics``,
``authoritative_for`` and ``when_to_apply``, and every directive as a ``[MUST]``/``[SHOULD]``/
``[MAY]`` list item under its section, with its rationale, code examples and a ``Layer:`` /
``Topics:`` line where it differs from the rule's, and the source's ``globs`` / ``always_apply``
as real fields, so file-aware queries keep working. ``technologies`` and ``inferred`` (the fields
guessed, not written) are fields too, so building the result gives the records, and the ranking,
that building the source gives; a reviewer takes a name out of ``inferred`` once it is checked. A
comment at the top of the front matter says where the file came from. The source's text that
states no directive (a role line, prose, a table, code under a heading with no instruction) stays
where it stood, quoted or fenced, so the rule is found by the same words as its source.

Every output is checked with the strict parser before anything is written, so the result
builds; files are written atomically, and an existing file is never replaced without ``force``.
Output paths follow the rule ids (``pkg/api/AGENTS.md`` -> ``pkg/api/agents.md``), so directive
ids stay the same across the move.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruledex.reader.errors import ConfigError, RuleError, RuleErrors
from ruledex.reader.format import output_folder, refuse_folders, write_bytes_atomic
from ruledex.reader.records import DirectiveRecord, RuleRecord

from .adapters import SkipFile, assign_ids, parse_foreign
from .freeform import Note
from .parse import _LABEL, ParsedDocument, parse_document
from .source import RULEDEX, SKIP_NAMES, path_format, read_source, read_sources, split_generated


@dataclass(frozen=True)
class ImportedFile:
    """One converted document: where it came from, where it goes, and its text."""

    source: str
    target: str
    text: str
    directives: int
    inferred_severity: int


@dataclass
class ImportResult:
    """What an import wrote, and what it skipped or warned about."""

    files: list[ImportedFile]
    skipped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """JSON-friendly summary (``ruledex import --json``)."""
        return {
            "files": [
                {
                    "source": f.source,
                    "target": f.target,
                    "directives": f.directives,
                    "inferredSeverity": f.inferred_severity,
                }
                for f in self.files
            ],
            "skipped": self.skipped,
            "warnings": self.warnings,
        }


def _q(value: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(value, ensure_ascii=False)


def _flow(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_q(v) for v in values) + "]"


def _front_matter(rule: RuleRecord, directives: list[DirectiveRecord], notes: bool) -> list[str]:
    inferred = sum("severity" in d.inferred for d in directives)
    lines = [
        "---",
        f"# Imported by `ruledex import` from {rule.path} ({rule.format}). Review before relying on it:",
        f"# the severity of {inferred} of {len(directives)} directives was inferred from wording, and the",
        "# fields named in `inferred` from the text; take a field's name out of `inferred` once you have",
        "# reviewed it (while `topics` is in it, the index ranks this rule as a foreign one).",
    ]
    if notes:
        lines += [
            "# Quoted (>) and fenced text outside the [MUST]/[SHOULD]/[MAY] items is the source's text that",
            "# states no directive: it is no directive here either, but the rule is still found by its words.",
        ]
    lines += [f"title: {_q(rule.title)}", f"layers: {_flow(rule.layers)}", f"topics: {_flow(rule.topics)}"]
    if rule.authoritative_for:
        lines.append(f"authoritative_for: {_flow(rule.authoritative_for)}")
    if rule.when_to_apply:
        lines.append("when_to_apply:")
        lines.extend(f"  - {_q(w)}" for w in rule.when_to_apply)
    if rule.description:
        lines.append(f"description: {_q(rule.description)}")
    if rule.version:
        lines.append(f"version: {_q(rule.version)}")
    if rule.globs:
        lines.append(f"globs: {_flow(rule.globs)}")
    if rule.always_apply:
        lines.append("always_apply: true")
    if rule.technologies:
        lines.append(f"technologies: {_flow(rule.technologies)}")
    if rule.inferred:
        lines.append(f"inferred: {_flow(rule.inferred)}")
    return [*lines, "---", ""]


def _first_line(text: str) -> str:
    """A directive's first line, made safe for the strict parser (no leading ``Label:``)."""
    line = " ".join(text.split())
    match = _LABEL.match(line)
    return f"{match.group(1)} — {match.group(2)}" if match else line


def _fence(code: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", code)), default=0)
    return "`" * max(3, longest + 1)


def _item(d: DirectiveRecord, rule: RuleRecord) -> list[str]:
    first, *rest = d.text.strip().split("\n")
    out = [f"- [{d.severity}] {_first_line(first)}"]
    if d.rationale:
        out.append(f"  Rationale: {' '.join(d.rationale.split())}")
    if d.layers != rule.layers:
        out.append(f"  Layer: {', '.join(d.layers)}")
    if d.topics != rule.topics:
        out.append(f"  Topics: {', '.join(d.topics)}")
    checklist = [line.strip() for line in rest if line.strip()]
    if checklist:  # after a blank line, so the labels above stay out of it
        out += ["", *(f"  {line}" for line in checklist)]
    for lang, code in d.examples:
        fence = _fence(code)
        out.append(f"  {fence}{lang}")
        out.extend(f"  {line}" if line.strip() else "" for line in code.split("\n"))
        out.append(f"  {fence}")
    return out


def _note_blocks(notes: list[Note]) -> list[list[str]]:
    """Notes as markdown the strict parser keeps out of directives: prose quoted, code fenced.

    Neither is a list item, and a quote or a code block is not a paragraph (which, before the first
    section, would become the rule's description), so the rule's records do not change; the words
    stay in the file, which the index searches as the rule's text.
    """
    out: list[list[str]] = []
    for note in notes:
        if note.lang is None:
            quoted = [f"> {line}".rstrip() for line in note.text.split("\n")]
            if out and out[-1][0].startswith(">"):
                out[-1] += [">", *quoted]  # one quote, a paragraph per note
            else:
                out.append(quoted)
        else:
            fence = _fence(note.text)
            out.append([f"{fence}{note.lang}", *note.text.split("\n"), fence])
    return out


def _section_blocks(
    directives: list[tuple[int, DirectiveRecord]], notes: list[Note], rule: RuleRecord
) -> list[list[str]]:
    """A section's directives (one list) with its notes where they stood between them."""
    blocks: list[list[str]] = []
    items: list[str] = []
    waiting = sorted(notes, key=lambda n: n.after)
    for position, d in directives:
        before = [n for n in waiting if n.after <= position]
        if before:
            blocks += [items] if items else []
            blocks += _note_blocks(before)
            items, waiting = [], waiting[len(before) :]
        items += _item(d, rule)
    blocks += [items] if items else []
    return blocks + _note_blocks(waiting)


def render_ruledex(doc: ParsedDocument) -> str:
    """A parsed foreign document as a ruledex rule document (front matter + ``[MUST]`` items).

    The source's text that became no directive (``doc.notes``) is kept where it stood, prose as a
    ``>`` quote and code in a fence, so building the import searches the words building the source
    does.
    """
    rule = doc.rule
    lines = [*_front_matter(rule, doc.directives, bool(doc.notes)), f"# {' '.join(rule.title.split())}", ""]
    groups: dict[tuple[str, ...], list[tuple[int, DirectiveRecord]]] = {}
    for position, d in enumerate(doc.directives):
        groups.setdefault(d.section, []).append((position, d))
    notes: dict[tuple[str, ...], list[Note]] = {}
    for note in doc.notes:
        notes.setdefault(note.section, []).append(note)
    previous: tuple[str, ...] = ()
    top = [()] if () in groups or () in notes else []
    for section in dict.fromkeys([*top, *rule.sections, *groups, *notes]):  # headings without directives too
        common = 0
        while common < min(len(section), len(previous)) and section[common] == previous[common]:
            common += 1
        if section and common == len(section):
            common -= 1  # back to a parent section: repeat its heading
        for depth in range(common, len(section)):
            lines += [f"{'#' * min(6, depth + 2)} {' '.join(section[depth].split())}", ""]
        for block in _section_blocks(groups.get(section, []), notes.get(section, []), rule):
            lines += [*block, ""]
        previous = section
    return "\n".join(lines).rstrip("\n") + "\n"


def _target(rule_id: str) -> str:
    target = f"{rule_id}.md"
    name = target.rsplit("/", 1)[-1]
    if name.lower() in SKIP_NAMES or name.startswith(("_", ".")):
        target = f"{rule_id}-rules.md"
    return target


def plan_import(source_dir: Path, only: Path | None = None) -> ImportResult:
    """Convert every foreign file under ``source_dir``, or only the file ``only`` in it (no I/O beyond reading)."""
    root = Path(source_dir)
    sources, generated = split_generated(read_sources(root) if only is None else [read_source(root, Path(only))])
    result = ImportResult([])
    result.skipped.extend(f"{path}: generated by ruledex export, not a source; left out" for path in generated)
    foreign = []
    for source in sources:
        if source.problem:
            result.skipped.append(f"{source.path}:{source.line}: file: {source.problem}; file skipped")
        elif source.format == RULEDEX:
            result.skipped.append(f"{source.path}: already a ruledex document; left as it is")
        else:
            foreign.append(source)
    ids, renamed = assign_ids([s.path for s in foreign], set())
    result.warnings.extend(renamed)
    for source in foreign:
        try:
            doc = parse_foreign(source, ids[source.path])
        except SkipFile as skip:
            result.skipped.append(str(skip))
            continue
        result.warnings.extend(doc.warnings)
        text = render_ruledex(doc)
        target = _target(doc.rule.id)
        try:
            parsed = parse_document(text, target)
        except (RuleError, RuleErrors) as exc:  # pragma: no cover - a bug in render_ruledex, never the user's
            raise ConfigError(f"import produced an invalid document from {source.path}: {exc}; please report") from None
        if len(parsed.directives) != len(doc.directives):  # pragma: no cover - a note read back as a directive
            raise ConfigError(
                f"import of {source.path} reads back as {len(parsed.directives)} directives, not "
                f"{len(doc.directives)}; please report"
            )
        result.files.append(
            ImportedFile(
                source=source.path,
                target=target,
                text=text,
                directives=len(doc.directives),
                inferred_severity=sum("severity" in d.inferred for d in doc.directives),
            )
        )
    return result


def _file_root(file: Path) -> Path:
    """The folder to read one rule file from, so its path still names its format.

    The nearest ancestor (up to three up) under which the path names a format other than plain
    markdown (``.github/copilot-instructions.md``, ``.cursor/rules/api.mdc``), else its own folder.
    """
    for root in list(file.parents)[:3]:
        if path_format(file.relative_to(root).as_posix()) not in (None, "markdown"):
            return root
    return file.parent


def import_rules(source_dir: Path, out_dir: Path, *, force: bool = False) -> ImportResult:
    """Convert foreign rule files into ruledex documents under ``out_dir``, atomically.

    ``source_dir`` may also be one rule file (``AGENTS.md``, ``.cursor/rules/api.mdc``): only it is
    imported, read as a file of its folder.

    Raises:
        ConfigError: ``source_dir`` is neither a folder nor a file, or a target file exists and
            ``force`` is off (then nothing is written).
    """
    source_dir, out_dir = Path(source_dir), output_folder(out_dir)
    if source_dir.is_file():
        file = source_dir.absolute()
        result = plan_import(_file_root(file), only=file)
    elif source_dir.is_dir():
        result = plan_import(source_dir)
    else:
        raise ConfigError(
            f"{source_dir}: no such file or folder; pass a rule file or the folder that holds your rule files"
        )
    refuse_folders([out_dir / f.target for f in result.files])
    existing = [str(out_dir / f.target) for f in result.files if (out_dir / f.target).exists()]
    if existing and not force:
        raise ConfigError(
            f"{', '.join(existing)}: already exists; nothing was written. Pass --force to replace, "
            "or import into another folder"
        )
    for file in result.files:
        write_bytes_atomic(out_dir / file.target, file.text.encode())
    return result
