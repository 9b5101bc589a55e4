"""The errors ruledex raises. Library code raises these; only the CLI and server translate them.

Every message names where the problem is and what to do about it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ECHO_CHARS = 80
"""The most of a client's value an answer repeats: an error names a bad value, it does not return it whole."""


def clip(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` as an answer may repeat it: at most ``limit`` characters, a cut one ending in an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: Any) -> str:
    """A client's value as an error message quotes it: its ``repr``, clipped (:func:`clip`)."""
    return clip(repr(value))


class RuledexError(Exception):
    """Base class of every error ruledex reports to a user."""


@dataclass
class RuleError(RuledexError):
    """A rule document is malformed: names the file, line and field, and the fix."""

    path: str
    line: int
    field: str
    message: str
    warnings: list[str] = field(default_factory=list, compare=False)
    """The document's warnings found before it failed (unknown fields ...): a linter shows them too."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.message}"

    @property
    def errors(self) -> list[RuleError]:
        """This error as a list, like :attr:`RuleErrors.errors`: ``except (RuleError, RuleErrors)`` reads both."""
        return [self]


@dataclass
class ArtifactError(RuledexError):
    """An index file cannot be used: names the file, the section if any, and what to do."""

    path: str
    section: str
    message: str

    def __str__(self) -> str:
        where = f" [{self.section}]" if self.section else ""
        return f"{self.path}{where}: {self.message}"


class ConfigError(RuledexError):
    """A setting, option or missing dependency stops ruledex; the message says what to change."""


class RuleErrors(RuledexError):
    """Several rule documents are malformed; holds every :class:`RuleError` found in one pass."""

    def __init__(self, errors: list[RuleError], warnings: list[str] | None = None) -> None:
        """Collect the errors (and the warnings found with them); the message lists the errors one per line."""
        self.errors = errors
        self.warnings = warnings or []
        super().__init__("\n".join(str(e) for e in errors))
