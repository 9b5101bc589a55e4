"""Read free-form markdown rules (no ``[MUST]`` markers) into directive drafts, with marko's AST.

The walk mirrors :mod:`ruledex.builder.parse` -- headings open sections, list items are the
natural unit of a rule -- but nothing is an error: what cannot be read as an instruction is
context. Mapping:

- the only level-1 heading, when it comes first, is the title; other headings are sections
  (decoration such as ``=====`` and numbering stripped). A heading that itself states an
  obligation ("RULE 1: NEVER use getSession() on the server") is also a directive;
- a top-level list item is a directive (a leading ``[MUST]``/``[SHOULD]``/``[MAY]`` marker is
  honoured). Nested items stay in it as a checklist while the whole fits :data:`MAX_WORDS`;
  otherwise each is read as a list item itself, and one too short to stand alone keeps its parent
  item's text before it as context (as a short instruction sentence keeps the sentence before it);
- in paragraphs, each instruction sentence starts a directive; explanation sentences after it
  become its rationale; prose before the first section is the rule's description;
- code blocks attach to the directive before them in the same section (to the next one when
  the section has none yet); a fenced ``markdown`` block is read as markdown (files that wrap
  their whole content in one);
- ``Last Updated:``, ``Description:`` and ``Version:`` lines before the first section are
  metadata, not directives.

What becomes none of these (a role line, prose that is no instruction, a table, code under a
heading with no instruction, a one-word list item, raw HTML) is kept as a :class:`Note`, where it
stood, so that ``ruledex import`` can carry the source's words over without making them directives.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from marko import block

from ruledex.reader.vocab import SEVERITIES

from .infer import (
    MAX_WORDS,
    chunk,
    is_instruction,
    is_persona,
    is_prose,
    looks_like_code,
    split_lines,
    split_sentences,
    strip_enumerator,
    word_count,
)
from .parse import _MARKER, markdown_tree

_META = re.compile(
    r"^[\W_]*(last[ _-]?updated|updated|description|version)[\W_]*\s*[:=]\s*(.+?)\s*$",
    re.IGNORECASE,
)
_BOLD_MARKER = re.compile(r"^\*\*(MUST|SHOULD|MAY)\*\*\s*[:—-]?\s*")
"""``- **MUST** ...``: how ruledex exports and renders directives; read back as an explicit severity."""
MARKDOWN_LANGS = frozenset({"markdown", "md", "mdc"})
"""Fence languages whose text is read as rules (a foreign file wrapped in ```markdown)."""
_HEADING_OBLIGATION = re.compile(r"\b(?:must|never|always|do not|don't|should|avoid|prefer)\b", re.IGNORECASE)
MAX_HEADING_WORDS = 16
"""Longer "headings" are comment lines of unfenced code (``# Read in logs: ...``)."""
SHORT_INSTRUCTION = 5
"""An instruction sentence with fewer words ("NEVER share.") keeps the sentence before it as context."""
PSEUDO_LEVEL = 7
"""Section level of a one-line label paragraph: deeper than any heading, so the next heading closes it."""
_DECORATION = re.compile(r"^[\s=\-*#~_:|]+|[\s=\-*#~_:|]+$")


class LineMap:
    """Map character offsets of a (possibly rewritten) text back to 1-based source lines."""

    def __init__(self, text: str, first_line: int, origin: list[int] | None = None) -> None:
        """``origin[i]`` is the source line of the text's line ``i``; default: consecutive from ``first_line``."""
        self.starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        self.first = first_line
        self.origin = origin

    def line(self, offset: int) -> int:
        """The source line of ``offset``."""
        row = bisect.bisect_right(self.starts, offset) - 1
        if self.origin:
            return self.origin[min(row, len(self.origin) - 1)]
        return self.first + row


@dataclass
class Draft:
    """One directive as read from the text, before inference."""

    section: tuple[str, ...]
    text: str
    line: int
    severity: str = ""
    rationale: list[str] = field(default_factory=list)
    examples: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Note:
    """Source text that became no directive, kept for ``ruledex import`` to carry over as it stood.

    ``after`` counts the directives read before it; ``lang`` is ``None`` for prose, else the code's
    language (``""`` when unnamed). ``kind`` marks text the rule may carry already: ``description``
    (a sentence of the prose before the first section) or ``meta:<key>`` (a ``Version:`` line ...).
    """

    section: tuple[str, ...]
    after: int
    text: str
    lang: str | None = None
    kind: str = ""


@dataclass
class Outline:
    """What a free-form document holds: title, description, metadata lines, sections, drafts, notes."""

    title: str = ""
    description: list[str] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    sections: list[tuple[str, ...]] = field(default_factory=list)
    drafts: list[Draft] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


def _raw(body: str, element: block.BlockElement) -> str:
    start, end = element.source_span
    return body[start:end]


def clean_heading(raw: str, level: int) -> str:
    """Heading text without ``#`` marks, setext underline, decoration, emphasis or numbering."""
    text = raw.strip()
    if level and text.startswith("#"):
        text = re.sub(r"\s+#+\s*$", "", text.lstrip("#").strip())
    else:
        text = text.split("\n")[0].strip()
    text = _DECORATION.sub("", text)
    text = re.sub(r"\*\*|__", "", text).strip()
    text = strip_enumerator(re.sub(r"^\d+(?:\.\d+)*[.)]?\s+", "", text))
    return _DECORATION.sub("", text)


class _Walker:
    """One pass over a document's blocks, collecting an :class:`Outline`."""

    def __init__(self) -> None:
        self.out = Outline()
        self.stack: list[tuple[int, str]] = []
        self.pending: list[tuple[str, str]] = []
        self.last: Draft | None = None
        self.title_element: block.Heading | None = None

    @property
    def section(self) -> tuple[str, ...]:
        return tuple(name for _, name in self.stack)

    def note(self, text: str, lang: str | None = None, kind: str = "") -> None:
        """Keep source text that is no directive (see :class:`Note`)."""
        if text.strip():
            self.out.notes.append(Note(self.section, len(self.out.drafts), text.strip("\n"), lang, kind))

    def unnote(self, text: str) -> None:
        """Take back the last note: its text went into a directive after all."""
        if self.out.notes and self.out.notes[-1].text == text.strip("\n"):
            self.out.notes.pop()

    def add(self, text: str, line: int, severity: str = "", keep: bool = True) -> Draft | None:
        text = text.strip()
        if word_count(text) < 2:
            if keep:
                self.note(text)
            return None
        draft = Draft(self.section, text, line, severity)
        if self.pending:
            draft.examples.extend(self.pending)
            self.pending = []
        self.out.drafts.append(draft)
        self.last = draft
        return draft

    def add_chunks(self, text: str, line: int, severity: str = "") -> Draft | None:
        """Add ``text`` as one directive, or as several when it is over :data:`MAX_WORDS`."""
        if word_count(text) <= MAX_WORDS:
            return self.add(text, line, severity)
        pieces = chunk([s for part in split_lines(text) for s in split_sentences(part)])
        last = None
        for piece in pieces:
            last = self.add(piece, line, severity) or last
        return last

    def example(self, lang: str, code: str) -> None:
        if not code.strip():
            return
        code = "\n".join(line.rstrip() for line in code.split("\n"))
        if self.last is not None and self.last.section == self.section:
            self.last.examples.append((lang, code))
        else:
            self.pending.append((lang, code))

    def heading(self, element: block.Heading, body: str, lines: LineMap) -> None:
        text = clean_heading(_raw(body, element), element.level)
        if word_count(text) > MAX_HEADING_WORDS or looks_like_code(text):
            self.note(_raw(body, element).strip())  # a "# comment" line of unfenced code, not a heading
            return
        if element is self.title_element:
            self.out.title = text
            return
        self.open_section(text, element.level, lines.line(element.source_span[0]))

    def open_section(self, text: str, level: int, line: int) -> None:
        """Start a section; a heading that states an obligation is also a directive."""
        if not text:
            return
        self.flush()  # code shown under a heading with no instruction is no directive's example
        self.stack = [(lvl, name) for lvl, name in self.stack if lvl < level] + [(level, text)]
        self.out.sections.append(self.section)
        if is_instruction(text) and _HEADING_OBLIGATION.search(text):
            self.add(text, line, keep=False)  # its words stay in the section's name

    def flush(self) -> None:
        """Code waiting for a directive that never came becomes notes."""
        for lang, code in self.pending:
            self.note(code, lang)
        self.pending = []

    def pseudo_heading(self, element: block.BlockElement, following: block.BlockElement | None, body: str) -> str:
        """A one-line paragraph that labels the list after it ("Key Principles", "Tech Stack:")."""
        if not isinstance(element, block.Paragraph) or not isinstance(following, block.List):
            return ""
        raw = _raw(body, element).strip()
        text = clean_heading(raw, 0)
        if "\n" in raw or not text or word_count(text) > 8 or raw.rstrip("*_ ").endswith((".", "!", "?")):
            return ""
        return "" if is_instruction(text) and not raw.rstrip("*_ ").endswith(":") else text

    def paragraph(self, element: block.Paragraph, body: str, lines: LineMap) -> None:
        raw = _raw(body, element)
        start = element.source_span[0]
        raw_lines = [ln for ln in raw.split("\n") if ln.strip()]
        if sum(looks_like_code(ln) for ln in raw_lines) * 2 >= len(raw_lines):
            self.example("", raw.strip("\n"))  # an unfenced code block
            return
        table = [ln.strip() for ln in raw_lines if ln.strip().startswith("|")]
        if table:
            self.note("\n".join(table))
        statements = [s for s in split_lines(raw) if not s.startswith("|")]  # "|": a table row
        if not self.stack:
            statements = [s for s in statements if not self.meta(s)]
        prose = [s for s in statements if not looks_like_code(s)]
        unpunctuated = sum(not s.rstrip("*_ ").endswith((".", "!", "?")) for s in prose)
        implicit_list = len(prose) >= 3 and unpunctuated * 2 >= len(prose)
        cursor = 0
        for statement in statements:
            found = raw.find(statement.split(" ")[0], cursor)
            cursor = found + 1 if found >= 0 else cursor
            line = lines.line(start + max(0, found))
            if looks_like_code(statement):
                self.example("", statement)
                continue
            if implicit_list:  # one statement per line, as in a list without bullets
                if is_persona(statement):
                    self.note(statement)
                else:
                    self.add_chunks(strip_enumerator(statement), line)
                continue
            context = ""  # the prose sentence just before, for an instruction too short to stand alone
            for sentence in split_sentences(statement):
                if is_instruction(sentence):
                    text = strip_enumerator(sentence)
                    if context and word_count(text) < SHORT_INSTRUCTION and word_count(context + text) <= MAX_WORDS:
                        text = f"{context} {text}"
                        self.unnote(context)
                    self.add_chunks(text, line)
                    context = ""
                elif (
                    self.last is not None
                    and self.last.section == self.section
                    and not is_persona(sentence)
                    and is_prose(sentence)
                    and word_count(" ".join([*self.last.rationale, sentence])) <= MAX_WORDS
                ):
                    self.last.rationale.append(sentence)
                else:
                    described = not self.stack and not self.out.drafts and is_prose(sentence)
                    if described:
                        self.out.description.append(sentence)
                    self.note(sentence, kind="description" if described else "")
                    context = sentence if is_prose(sentence) and not is_persona(sentence) else ""

    def meta(self, statement: str) -> bool:
        match = _META.match(statement)
        if not match:
            return False
        key = match.group(1).lower().replace(" ", "_").replace("-", "_")
        key = {"updated": "last_updated", "lastupdated": "last_updated"}.get(key, key)
        self.out.meta[key] = match.group(2)
        self.note(statement, kind=f"meta:{key}")
        return True

    def list_item(self, item: block.ListItem, body: str, lines: LineMap, parent: str | None = None) -> None:
        """A list item's directive; ``parent``: the text of the item a nested item is unfolded from."""
        line = lines.line(item.source_span[0])
        children = [c for c in item.children if not isinstance(c, block.BlankLine)]
        text_parts: list[str] = []
        nested: list[block.List] = []
        codes: list[block.BlockElement] = []
        for child in children:
            if isinstance(child, block.Paragraph):
                text_parts.append(" ".join(split_lines(_raw(body, child))))
            elif isinstance(child, block.List):
                nested.append(child)
            elif isinstance(child, (block.FencedCode, block.CodeBlock)):
                codes.append(child)
        text = " ".join(text_parts).strip()
        severity = ""
        marker = _MARKER.match(text) or _BOLD_MARKER.match(text)
        if marker and marker.group(1).upper() in SEVERITIES:
            severity, text = marker.group(1).upper(), text[marker.end() :]
        text = strip_enumerator(text)
        if parent is None and not self.stack and not nested and self.meta(text):
            return
        checklist = [_raw(body, n).strip() for n in nested]
        flat = [" ".join(c.split()) for c in checklist]
        folded = nested and word_count(" ".join([text, *flat])) <= MAX_WORDS
        if text and is_persona(text) and not nested:
            self.note(text)
        elif text and not folded and word_count(text) < 2:
            self.note(f"- {text}")  # a one-word item ("- React"): no instruction
        elif text:
            if folded:
                self.add("\n".join([text, *[ln.strip() for c in checklist for ln in c.split("\n")]]), line, severity)
            else:
                self.add_chunks(_in_context(parent, text), line, severity)
        for code in codes:
            self.code(code, body, lines)
        if nested and not folded:  # too long to fold: each nested item is a directive of its own
            context = text if word_count(text) >= 2 and not is_persona(text) else ""
            for inner in nested:
                for child in inner.children:
                    if isinstance(child, block.ListItem):
                        self.list_item(child, body, lines, context)

    def code(self, element: block.BlockElement, body: str, lines: LineMap) -> None:
        lang = (getattr(element, "lang", "") or "").strip().lower()
        code = str(element.children[0].children) if element.children else ""
        if lang in MARKDOWN_LANGS and re.search(r"^\s{0,3}(?:#{1,6}\s|[-*+]\s|\d+[.)]\s)", code, re.M):
            inner = markdown_tree(code)
            first = lines.line(element.source_span[0]) + 1
            self.stack = []
            if not self.out.title:
                self.title_element = _title_heading(inner)
            self.blocks(inner.children, code, LineMap(code, first))
            return
        self.example(lang, code.rstrip("\n"))

    def blocks(self, elements: list, body: str, lines: LineMap) -> None:
        visible = [e for e in elements if not isinstance(e, block.BlankLine)]
        for position, element in enumerate(visible):
            following = visible[position + 1] if position + 1 < len(visible) else None
            label = self.pseudo_heading(element, following, body)
            if label:
                self.open_section(label, PSEUDO_LEVEL, lines.line(element.source_span[0]))
            elif isinstance(element, block.Heading):
                self.heading(element, body, lines)
            elif isinstance(element, block.Paragraph):
                self.paragraph(element, body, lines)
            elif isinstance(element, block.List):
                for item in element.children:
                    if isinstance(item, block.ListItem):
                        self.list_item(item, body, lines)
            elif isinstance(element, (block.FencedCode, block.CodeBlock)):
                self.code(element, body, lines)
            elif isinstance(element, block.Quote):
                self.blocks(element.children, body, lines)
            elif isinstance(element, block.HTMLBlock):
                self.note(_raw(body, element), "html")


def _in_context(parent: str | None, text: str) -> str:
    """A nested item too short to stand alone ("Never swallow errors.") after its parent item's text."""
    if not parent or word_count(text) >= SHORT_INSTRUCTION or word_count(f"{parent} {text}") > MAX_WORDS:
        return text
    joint = " " if parent.rstrip("*_ ").endswith((".", ":", "!", "?", ";", ",")) else ": "
    return f"{parent}{joint}{text}"


def _title_heading(doc: block.Document) -> block.Heading | None:
    """The document's title: its first heading, when that is its only level-1 heading."""
    headings = [c for c in doc.children if isinstance(c, block.Heading)]
    top = [h for h in headings if h.level == 1]
    return headings[0] if headings and headings[0].level == 1 and len(top) == 1 else None


def read_markdown(body: str, lines: LineMap) -> Outline:
    """Walk a markdown body (front matter already removed) into an :class:`Outline`."""
    doc = markdown_tree(body)
    walker = _Walker()
    walker.title_element = _title_heading(doc)
    walker.blocks(doc.children, body, lines)
    walker.flush()
    return walker.out
