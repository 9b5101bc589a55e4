"""Parse one ruledex rule document (front matter + markdown) into records, with marko's AST.

Headings open sections; top-level list items led by ``[MUST]``/``[SHOULD]``/``[MAY]`` are
directives. Inside a directive, lines starting with ``Rationale:``, ``Avoid:``, ``Layer(s):`` or
``Topics:`` add detail, fenced code blocks are examples, nested lists extend the text. The format
is documented for contributors in ``rules/CONTRIBUTING.md``.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import marko
from marko import block

from ruledex.reader.errors import RuleError, RuleErrors
from ruledex.reader.records import DirectiveRecord, RuleRecord
from ruledex.reader.text import slug

from . import frontmatter
from .ids import rule_path_id
from .validate import RuleMeta, check_layers, check_severity, check_topics, validate

if TYPE_CHECKING:
    from .freeform import Note

_MARKER = re.compile(r"^\[\s*([A-Za-z]+)\s*\]\s*")
_LABEL = re.compile(r"^(rationale|why|avoid|anti-pattern|antipattern|layers?|topics?)\s*:\s*(.*)$", re.IGNORECASE)
_LABEL_FIELD = {
    "rationale": "rationale",
    "why": "rationale",
    "avoid": "avoid",
    "anti-pattern": "avoid",
    "antipattern": "avoid",
    "layer": "layers",
    "layers": "layers",
    "topic": "topics",
    "topics": "topics",
}


@dataclass(frozen=True)
class ParsedDocument:
    """A parsed rule document: its rule record (directive range unset) and directives (rule -1).

    ``notes``: a foreign file's text that became no directive, which ``ruledex import`` carries over.
    """

    rule: RuleRecord
    directives: list[DirectiveRecord]
    warnings: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


class _Lines:
    """Map character offsets of the body back to 1-based file lines."""

    def __init__(self, text: str, first_line: int) -> None:
        self.starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        self.first = first_line

    def line(self, offset: int) -> int:
        return self.first + bisect.bisect_right(self.starts, offset) - 1


MAX_QUOTE_DEPTH = 16
"""Quote markers separated by spaces (``> > > text``) nest a quote per marker, and marko's time grows
about 1.7-fold per level: 0.007 s a line at 16 levels, 0.6 s at 24, 48 s at 30, hours at 40. A build
must not hang on one odd line, so a deeper line is refused (real rules nest quotes two or three deep)."""

_QUOTE_RUN = re.compile(r"^[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]+)*((?:>[ \t]+)+)", re.M)
"""A line's leading quote markers, each followed by a space or tab, after any list markers."""


class QuotesTooDeep(ValueError):
    """A line of a markdown body nests more quotes than :data:`MAX_QUOTE_DEPTH`."""

    def __init__(self, line: int, depth: int) -> None:
        """``line``: 0-based within the body; ``depth``: its number of quote markers."""
        self.line, self.depth = line, depth
        super().__init__(
            f"a quote nested {depth} levels deep ('> > > ...'); ruledex reads at most {MAX_QUOTE_DEPTH}, "
            "as deeper ones take the markdown parser minutes to hours; remove the extra '>' markers"
        )


def markdown_tree(body: str) -> block.Document:
    """Parse a markdown body with marko: the one way the builder parses markdown.

    Raises :class:`QuotesTooDeep` first for a line whose quotes would make the parse take minutes.
    """
    if ">" in body:
        for match in _QUOTE_RUN.finditer(body):
            depth = match.group(1).count(">")
            if depth > MAX_QUOTE_DEPTH:
                raise QuotesTooDeep(body.count("\n", 0, match.start()), depth)
    return marko.Markdown().parse(body)


_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_HTML_OPEN = re.compile(r"^ {0,3}<(!--|script|pre|style|textarea)(?=[\s>]|$|-)", re.IGNORECASE)
_HTML_CLOSE = {"!--": "-->", "script": "</script>", "pre": "</pre>", "style": "</style>", "textarea": "</textarea>"}


def unclosed_block(body: str, first_line: int) -> tuple[int, str, str] | None:
    """``(line, opener, lang)`` of a code fence or HTML comment/``<pre>``... block never closed, else None.

    Markdown reads such a block to the end of the file, so every heading and directive after it
    would drop out of the index as code without a word; the parsers warn instead. A cheap line scan
    finds a candidate; marko confirms it is the document's last block (a fence left open inside a
    list item ends with the item, and loses nothing).
    """
    closer, start = "", 0
    lines = body.split("\n")
    for number, line in enumerate(lines):
        if closer:
            if (closer in line.lower()) if closer.startswith(("<", "-")) else re.fullmatch(closer, line):
                closer = ""
            continue
        fence, html = _FENCE_OPEN.match(line), _HTML_OPEN.match(line)
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            closer, start = rf" {{0,3}}{fence.group(1)[0]}{{{len(fence.group(1))},}}[ \t]*", number
        elif html:
            closer, start = _HTML_CLOSE[html.group(1).lower()], number
            if closer in line.lower()[html.end() :]:
                closer = ""
    if not closer:
        return None
    try:
        doc = markdown_tree(body)
    except QuotesTooDeep:  # the file is refused for that, with its line, where it is parsed
        return None
    last = next((c for c in reversed(doc.children) if not isinstance(c, block.BlankLine)), None)
    if not isinstance(last, (block.FencedCode, block.HTMLBlock)) or body.count("\n", 0, last.source_span[0]) != start:
        return None
    fence = _FENCE_OPEN.match(lines[start])
    if fence:
        return first_line + start, fence.group(1), fence.group(2).strip().split(" ")[0].lower()
    return first_line + start, _HTML_OPEN.match(lines[start]).group(0).strip(), ""


def unclosed_block_warning(
    body: str, first_line: int, path: str, *, read_langs: frozenset[str] = frozenset()
) -> list[str]:
    """The warning for :func:`unclosed_block`, naming the line and the fix (empty when all is closed).

    ``read_langs``: fence languages whose text the caller reads anyway (a foreign file wrapped in ```markdown).
    """
    found = unclosed_block(body, first_line)
    if found is None or found[2] in read_langs:
        return []
    line, opener, _lang = found
    close = {"<!--": "-->"}.get(opener, opener if opener[0] in "`~" else f"</{opener[1:]}>")
    return [
        f"{path}:{line}: markdown: '{opener}' is never closed, so everything after it is read as "
        f"{'code' if opener[0] in '`~' else 'HTML'}, not rules; close it with '{close}'"
    ]


def normalise_newlines(text: str) -> str:
    """CRLF/CR to LF and no BOM, so a file builds the same on every platform."""
    return text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _raw(body: str, element: block.BlockElement) -> str:
    start, end = element.source_span
    return body[start:end]


def _heading_text(body: str, element: block.Heading) -> str:
    text = _raw(body, element).strip()
    if element.level and text.startswith("#"):
        text = text.lstrip("#").strip()
        text = re.sub(r"\s+#+\s*$", "", text)
    else:  # setext heading: drop the underline
        text = text.split("\n")[0].strip()
    return text


def _dedent_lines(raw: str) -> list[str]:
    return [line.strip() for line in raw.strip("\n").split("\n")]


@dataclass
class _DirectiveDraft:
    text: list[str] = field(default_factory=list)
    rationale: list[str] = field(default_factory=list)
    avoid: list[str] = field(default_factory=list)
    layers: str = ""
    topics: str = ""
    examples: list[tuple[str, str]] = field(default_factory=list)
    checklist: list[str] = field(default_factory=list)

    def full_text(self) -> str:
        """The directive's text: its sentence, then any nested checklist on its own lines."""
        return "\n".join([" ".join(self.text).strip(), *self.checklist]).strip()

    def add_lines(self, lines: list[str], current: str) -> str:
        """Route lines to fields by their labels; return the field the next line continues."""
        for line in lines:
            match = _LABEL.match(line)
            if match:
                current = _LABEL_FIELD[match.group(1).lower()]
                line = match.group(2).strip()
                if current == "avoid":
                    self.avoid.append(line)
                    continue
                if current in ("layers", "topics"):
                    setattr(self, current, line)
                    continue
            if not line:
                continue
            if current == "text":
                self.text.append(line)
            elif current == "rationale":
                self.rationale.append(line)
            elif current == "avoid":
                self.avoid[-1] = f"{self.avoid[-1]} {line}".strip() if self.avoid else line
            else:
                setattr(self, current, f"{getattr(self, current)} {line}".strip())
        return current


def _split_list(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in re.split(r"[,\s]+", value.strip("[] ")) if v.strip())


def _parse_item(
    item: block.ListItem, body: str, lines: _Lines, path: str, meta: RuleMeta
) -> tuple[str, _DirectiveDraft, tuple[str, ...], int]:
    """Turn one list item into (severity, draft, inferred fields, line)."""
    line = lines.line(item.source_span[0])
    children = [c for c in item.children if not isinstance(c, block.BlankLine)]
    if not children or not isinstance(children[0], block.Paragraph):
        raise RuleError(
            path, line, "directive", "a directive must start with text, e.g. `- [MUST] Parameterize every SQL query`"
        )
    draft = _DirectiveDraft()
    first = _dedent_lines(_raw(body, children[0]))
    marker = _MARKER.match(first[0])
    inferred: tuple[str, ...] = ()
    if marker:
        severity = check_severity(marker.group(1), path, line, "directive")
        first[0] = first[0][marker.end() :]
    elif meta.severity:
        severity, inferred = meta.severity, ("severity",)
    else:
        raise RuleError(
            path,
            line,
            "directive",
            "list item has no severity marker; start it with [MUST], [SHOULD] or [MAY], or set `severity:` in the front matter",
        )
    current = draft.add_lines(first, "text")
    for child in children[1:]:
        if isinstance(child, (block.FencedCode, block.CodeBlock)):
            lang = getattr(child, "lang", "") or ""
            code = child.children[0].children if child.children else ""
            draft.examples.append((lang, str(code).rstrip("\n")))
        elif isinstance(child, block.Paragraph):
            current = draft.add_lines(_dedent_lines(_raw(body, child)), current)
        else:
            draft.checklist.extend(_dedent_lines(_raw(body, child)))
    if not " ".join(draft.text).strip():
        raise RuleError(path, line, "directive", f"[{severity}] has no text; say what to do after the marker")
    return severity, draft, inferred, line


def _item_context(
    draft: _DirectiveDraft, meta: RuleMeta, path: str, line: int
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A directive's layers and topics: its own ``Layer:``/``Topics:`` lines, else the rule's."""
    layers = check_layers(_split_list(draft.layers), path, line, "Layer") if draft.layers else meta.layers
    topics = check_topics(_split_list(draft.topics), path, line, "Topics") if draft.topics else meta.topics
    return layers, topics


def parse_document(text: str, path: str) -> ParsedDocument:
    """Parse a rule document; ``path`` is relative to the rules root and used in ids and errors.

    Raises :class:`RuleError`, or :class:`RuleErrors` with every error when there are several: a
    mistake in one field or directive does not hide the next (broken YAML stops at once).
    """
    text = normalise_newlines(text)
    fm = frontmatter.split(text, path)
    path_id = rule_path_id(path)
    meta, warnings, errors = validate(fm, path, path_id)
    body = fm.body
    lines = _Lines(body, fm.body_line)
    try:
        doc = markdown_tree(body)
    except QuotesTooDeep as exc:
        raise RuleError(path, fm.body_line + exc.line, "markdown", str(exc)) from None
    title = meta.title
    description: list[str] = [meta.description] if meta.description else []
    stack: list[tuple[int, str]] = []
    sections: list[tuple[str, ...]] = []
    counters: dict[tuple[str, ...], int] = {}
    directives: list[DirectiveRecord] = []
    for element in doc.children:
        if isinstance(element, block.Heading):
            heading = _heading_text(body, element)
            if element.level == 1 and not stack:
                title = title or heading
                continue
            level = max(element.level, 2)
            stack = [(lvl, name) for lvl, name in stack if lvl < level] + [(level, heading)]
            sections.append(tuple(name for _, name in stack))
        elif isinstance(element, block.Paragraph) and not stack:
            description.append(" ".join(_dedent_lines(_raw(body, element))))
        elif isinstance(element, block.List):
            section = tuple(name for _, name in stack)
            anchor = slug(" ".join(section)) or "top"
            for item in element.children:
                if not isinstance(item, block.ListItem):
                    continue
                try:
                    severity, draft, inferred, line = _parse_item(item, body, lines, path, meta)
                    layers, topics = _item_context(draft, meta, path, line)
                except RuleError as exc:  # report it with the others; the next item parses on its own
                    errors.append(exc)
                    continue
                counters[section] = counters.get(section, 0) + 1
                directives.append(
                    DirectiveRecord(
                        id=f"{path_id}#{anchor}-{counters[section]}",
                        rule=-1,
                        section=section,
                        severity=severity,
                        text=draft.full_text(),
                        rationale=" ".join(draft.rationale).strip(),
                        avoid=tuple(a for a in draft.avoid if a),
                        examples=tuple(draft.examples),
                        layers=layers,
                        topics=topics,
                        line=line,
                        inferred=inferred,
                    )
                )
    rule = RuleRecord(
        id=meta.id,
        title=title or meta.id,
        path=path.replace("\\", "/"),
        layers=meta.layers,
        topics=meta.topics,
        authoritative_for=meta.authoritative_for,
        when_to_apply=meta.when_to_apply,
        examples=meta.examples,
        scope=meta.scope,
        version=meta.version,
        description=" ".join(description).strip(),
        reviewed=meta.reviewed,
        expires=meta.expires,
        sections=tuple(sections),
        globs=meta.globs,
        always_apply=meta.always_apply,
        technologies=meta.technologies,
        inferred=meta.inferred,
    )
    if errors:
        failure = errors[0] if len(errors) == 1 else RuleErrors(sorted(errors, key=lambda e: e.line))
        failure.warnings = warnings
        raise failure
    warnings.extend(unclosed_block_warning(body, fm.body_line, path))
    if not directives:
        warnings.append(f"{path}:1: directives: none found; add list items led by [MUST], [SHOULD] or [MAY]")
    return ParsedDocument(rule, directives, warnings)
