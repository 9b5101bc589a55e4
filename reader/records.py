"""The records stored in an index: one rule document, one directive.

Field order is defined here once, by the dataclasses; ``to_row``/``from_row`` turn a record into
the msgpack list the artifact stores and back. New fields are appended at the end with a default,
so a reader can decode rows written by an older builder of the same major format version.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, TypeVar

import msgpack

T = TypeVar("T", bound="_Row")


def blob_id(text: str) -> str:
    """Git's blob id of the text with LF line endings and no BOM (what a repository with LF stores).

    ``RuleRecord.blob``: taken on normalised text so a CRLF checkout keys the same as LF;
    incremental builds reuse the records of files whose id did not change, and ``ruledex eval
    --rules`` tells which source files changed since the build.
    """
    data = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


@cache
def _names(cls: type) -> tuple[str, ...]:
    """A record class's field names, in order (``fields()`` costs more than the record it would name)."""
    return tuple(f.name for f in fields(cls))


class _Row:
    """Mixin: list-based serialisation in dataclass field order."""

    def to_row(self) -> list[Any]:
        """Return the record as a list in field order (what msgpack stores).

        The values as they are: records hold only strings, numbers and tuples of them, so the deep
        copy ``dataclasses.astuple`` makes (a third of an incremental build's indexing) is not needed.
        """
        return [getattr(self, name) for name in _names(type(self))]

    @classmethod
    def from_row(cls: type[T], row: Sequence[Any]) -> T:
        """Build a record from a stored row, decoded with tuples for arrays (:func:`unpack_row`).

        Missing trailing fields (an older builder) take their defaults; fields past the known ones
        (a newer builder of the same major version) are left out. Positional: keyword arguments
        cost twice as much, and a query decodes a few dozen records the first time it meets them.
        """
        return cls(*row[: len(_names(cls))])


def unpack_row(data: bytes) -> tuple[Any, ...]:
    """One stored record row, with every msgpack array as a tuple: records stay hashable and frozen.

    msgpack makes the tuples in C; turning lists into tuples in Python afterwards took two thirds of
    a record's decoding (8.8 -> 2.6 us a directive with positional construction).
    """
    row = msgpack.unpackb(data, raw=False, use_list=False)
    if not isinstance(row, tuple):
        raise ValueError(f"a record row must be an array, got {type(row).__name__}")
    return row


@dataclass(frozen=True)
class RuleRecord(_Row):
    """One rule document: its front matter, description and where its directives are.

    The fields from ``globs`` on came with foreign rule files (docs/formats.md): ``globs`` are the
    file patterns the rule applies to (Cursor ``globs``, Copilot ``applyTo``, a nested AGENTS.md's
    folder; empty: no file restriction), ``always_apply`` marks rules the source tool always loads,
    ``format`` names the source format, ``technologies`` those the text names, and ``inferred``
    the rule fields that were inferred rather than written.
    """

    id: str
    title: str
    path: str
    layers: tuple[str, ...]
    topics: tuple[str, ...]
    authoritative_for: tuple[str, ...] = ()
    when_to_apply: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    scope: str = "global"
    version: str = ""
    description: str = ""
    reviewed: str = ""
    expires: str = ""
    sections: tuple[tuple[str, ...], ...] = ()
    first_directive: int = 0
    directive_count: int = 0
    last_updated: str = ""
    globs: tuple[str, ...] = ()
    always_apply: bool = False
    format: str = "ruledex"
    technologies: tuple[str, ...] = ()
    inferred: tuple[str, ...] = ()
    blob: str = ""
    last_commit: str = ""
    last_author: str = ""


@dataclass(frozen=True)
class DirectiveRecord(_Row):
    """One directive: a checkable instruction with its severity, place and detail."""

    id: str
    rule: int
    section: tuple[str, ...]
    severity: str
    text: str
    rationale: str = ""
    avoid: tuple[str, ...] = ()
    examples: tuple[tuple[str, str], ...] = ()
    layers: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    line: int = 0
    inferred: tuple[str, ...] = ()
