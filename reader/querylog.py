"""The opt-in query log of ``ruledex serve --log-queries FILE``: one JSON line per tool call.

Each line records when, which tool, the task text with secrets and e-mail addresses masked, what
was detected (layer, topics), which directives were cited and how long the call took. The log is
off by default, is written only to the named file (never to stdout, which carries the protocol
on stdio) and is created readable by its owner only, since task texts can be sensitive.
"""

from __future__ import annotations

import json
import os
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .secrets import SECRET_NAME, TOKEN_SHAPES, may_hold

MAX_LOGGED_CHARS = 8000
"""Logged texts are cut here (the query truncates tasks at the same length)."""

_BEARER = re.compile(
    r"(?i)\b(bearer|basic)(\s+)(?=[A-Za-z._~+/=-]*\d|.(?-i:[a-z0-9._~+/=-]*[A-Z]))[A-Za-z0-9._~+/=-]{12,}"
)
"""``Authorization: Bearer <token>`` or ``Basic <base64>``: the scheme stays, the credential goes (a
credential has a digit or a capital past its first letter; "basic authentication" is prose)."""

_ASSIGNMENT = re.compile(
    rf"(?i)\b({SECRET_NAME})([\"']?\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
    r"|\b((?:my |the )?(?:password|passphrase|pwd) is\s+)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
)
"""``password=hunter2``, ``API_KEY: abc``, ``"token": "x"``, ``my password is x``: the name stays, the value goes."""

_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")


def _mask_assignment(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return f"{match.group(1)}{match.group(2)}[secret]"
    return f"{match.group(4)}[secret]"


def mask_secrets(text: str) -> str:
    """Replace secrets and e-mail addresses in ``text`` with ``[kind]`` placeholders (pure)."""
    for kind, pattern in TOKEN_SHAPES:
        if may_hold(kind, text):
            text = pattern.sub(f"[{kind}]", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}[secret]", text)
    text = _ASSIGNMENT.sub(_mask_assignment, text)
    return _EMAIL.sub("[email]", text)


def _clip(text: str) -> str:
    if len(text) <= MAX_LOGGED_CHARS:
        return text
    return f"{text[:MAX_LOGGED_CHARS]}… [{len(text)} characters]"


TEXT_ARGUMENTS = ("taskDescription", "text", "query", "domain", "names")
"""The argument that holds a call's "task text", per tool, in lookup order."""


def task_text(arguments: dict[str, Any]) -> str | None:
    """The text a call was about (task, query, domain or node names), as a string."""
    for name in TEXT_ARGUMENTS:
        value = arguments.get(name)
        if value is None:
            continue
        if isinstance(value, list):
            return ", ".join(str(v) for v in value)
        return str(value)
    return None


def summarise(structured: dict[str, Any] | None) -> dict[str, Any]:
    """Detected layer, topics and cited ids from any ruledex tool's structured output."""
    if not structured:
        return {}
    found = structured.get("diagnostics", structured)
    out: dict[str, Any] = {}
    if "detectedLayer" in found:
        out["detectedLayer"] = found["detectedLayer"]
        out["topics"] = list(found.get("topics", []))
    if "citations" in structured:
        out["cited"] = [c["id"] for c in structured["citations"]]
    elif "results" in structured:
        out["cited"] = [r["id"] for r in structured["results"]]
    return out


def log_record(
    tool: str,
    arguments: dict[str, Any],
    *,
    latency_ms: float,
    structured: dict[str, Any] | None = None,
    error: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """One log line as a dict: time, tool, masked task text, detection, citations, latency (pure)."""
    text = task_text(arguments)
    record: dict[str, Any] = {
        "time": (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "tool": tool,
        "task": None if text is None else _clip(mask_secrets(text)),
    }
    options = arguments.get("options")
    mode = arguments.get("modeSlug") or (options.get("modeSlug") if isinstance(options, dict) else None)
    if mode:
        record["mode"] = _clip(mask_secrets(str(mode)))  # an invalid mode is whatever the client sent
    record.update(summarise(structured))
    record["latencyMs"] = round(latency_ms, 3)
    record["ok"] = error is None
    if error is not None:
        record["error"] = _clip(mask_secrets(error))
    return record


_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})
"""The line breaks ``json.dumps(ensure_ascii=False)`` leaves raw and ``str.splitlines`` splits on: escaped."""

_STDOUT_NAMES = frozenset({"-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"})


class QueryLog:
    """Appends one JSON line per call to a file; safe to use from several threads."""

    def __init__(self, path: Path) -> None:
        """Check that ``path`` can be appended to (created with mode 0600); raises :class:`ConfigError`."""
        self.path = Path(path)
        if str(path) in _STDOUT_NAMES:
            raise ConfigError("--log-queries: stdout carries the MCP protocol; give a file path instead")
        self._lock = threading.Lock()
        try:
            os.close(self._open())
        except OSError as exc:
            raise ConfigError(
                f"--log-queries: cannot append to {self.path} ({exc.strerror}); pick a writable file"
            ) from None

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record`` as one JSON line; raises :class:`OSError` if the file cannot be written."""
        text = json.dumps(record, ensure_ascii=False, sort_keys=False)
        line = (text.translate(_LINE_BREAKS) + "\n").encode("utf-8")
        with self._lock:
            fd = self._open()
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
