"""Shapes of secrets: what the linter warns about in rules and the query log masks in task texts.

One list, so a token the linter knows is never written to a log, and the reverse. Patterns match
the secret itself (never the text around it), so callers can report where it is or replace it. Pure.
"""

from __future__ import annotations

import re

TOKEN_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("private-key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S)),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}")),
    # sk-proj-…, sk_live_…, rk_test_…: also right after an underscore (an argument named bogus_sk-…)
    ("api-key", re.compile(r"(?<![A-Za-z0-9])(?:sk|pk|rk)[-_](?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{8,}")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{30,}")),
    ("aws-key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{12,}\b")),
    # an AWS secret access key: 40 characters of base64 with both cases and a digit (not a git hash)
    (
        "aws-secret",
        re.compile(r"(?<![A-Za-z0-9/+=_])(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*\d)"
                   r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=_])"),
    ),
    ("google-key", re.compile(r"\bAIza[0-9A-Za-z_-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("url-credentials", re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)")),
)  # fmt: skip
"""Token shapes that are secrets wherever they appear: (kind, pattern)."""

MARKERS: dict[str, tuple[str, ...]] = {
    "private-key": ("PRIVATE KEY-----",),
    "jwt": ("eyJ",),
    "api-key": ("sk-", "sk_", "pk-", "pk_", "rk-", "rk_"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "npm-token": ("npm_",),
    "aws-key": ("AKIA", "ASIA", "AGPA", "AIDA", "AROA"),
    "google-key": ("AIza",),
    "slack-token": ("xox",),
    "url-credentials": ("://",),
}
"""Per shape, text that every match of it contains (one of these, as written): a text holding none is
not scanned for that shape. Each regex tries every position of a text (their ``\\b`` and lookbehinds
hide the literal from ``re``'s prefix search), so scanning a build's 2 MB of rule files for the ten
shapes took 0.45 s; a substring test is about a millisecond. ``aws-secret`` has no such text."""


def may_hold(kind: str, text: str) -> bool:
    """False when ``text`` cannot hold a ``kind`` secret: it lacks every one of the shape's markers."""
    markers = MARKERS.get(kind)
    return markers is None or any(marker in text for marker in markers)


SECRET_NAME = (
    r"(?:[a-z0-9]+[_-])*(?:password|passwd|pwd|pass|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|client[_-]?secret|credentials?|auth)(?:[_-][a-z0-9]+)*"
)
"""A setting's name that says its value is a secret (``DB_PASS``, ``api_key``, ``client-secret``)."""
