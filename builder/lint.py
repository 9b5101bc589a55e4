"""``ruledex check``: the contributor's linter. Pure checks over parsed rule documents.

Each finding is a :class:`Finding` printed as ``path:line:col: error|warning: message [code]``.
Errors fail the check (exit 1); warnings do not, unless ``--strict`` makes expired rules errors.
Secrets are reported by kind and position only; the matched text is never echoed.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np

from ruledex.reader.encode import Encoder
from ruledex.reader.errors import RuleError
from ruledex.reader.options import QueryOptions
from ruledex.reader.records import DirectiveRecord, RuleRecord
from ruledex.reader.render import MAX_SHOWN_WORDS, Item, always_heading, item_lines
from ruledex.reader.secrets import TOKEN_SHAPES, may_hold
from ruledex.reader.text import count_tokens, keywords

from . import frontmatter
from .embed import embed_texts
from .parse import ParsedDocument, normalise_newlines
from .source import shown_path

NEAR_DUPLICATE = 0.92
"""Cosine at or above which two directives in different files say the same thing."""

CONTRADICTION = 0.65
"""Cosine at or above which two directives of opposite polarity may contradict ..."""

CONTRADICTION_OVERLAP = 0.4
"""... when they also share this share of their keywords (Jaccard, polarity words left out)."""

_POLARITY_WORDS = frozenset(
    keywords("always never not no don't avoid avoids avoiding omit omits omitting forbid disallow")
)
"""Keywords that say which way a directive points, not what about: left out of the overlap two opposite
directives must share. Stemmed by :func:`keywords` itself, as the directives' terms are ("always" is
"alway", "omitting" "omitt"), so each word matches what it is meant to."""

MIN_WORDS = 5

ALWAYS_APPLY_SHARE = 0.5
"""A rule that always applies should fit in this share of the default token budget: every answer
shows it after the directives picked for the task, and what does not fit is left out."""

GENERIC = re.compile(
    r"^(be careful|follow (the )?best practices|write (good|clean|quality) code|use common sense|as needed|"
    r"keep (it|things) simple|do the right thing|make sure (it|everything) works)\b",
    re.IGNORECASE,
)
_NEGATIVE = re.compile(
    r"\b(never|(?<!that )(?<!which )(?<!who )(?:do not|don't)|must not|avoid(?:s|ing)?|omit(?:s|ting)?|no longer|"
    r"forbid|disallow)\b",
    re.IGNORECASE,
)
"""A directive that says what not to do. "Avoiding X" and "omit X" are such too: read as positive, "Optimize
components, avoiding unnecessary re-renders" contradicted "Avoid unnecessary re-renders", and "omit curly
braces" contradicted "avoid unnecessary curly braces" (the Cursor corpus's `ruledex check`). "don't" after
"that", "which" or "who" describes something ("literals that don't change") and says nothing either way."""

_ASSIGNMENT = "password or token assignment"
SECRETS: tuple[tuple[str, re.Pattern[str]], ...] = (
    *TOKEN_SHAPES,
    (  # stricter than the log's masking: placeholders ($VAR, <token>, {{ secret }}) and short values pass
        _ASSIGNMENT,
        re.compile(r"(?i)\b(password|passwd|secret|api_?key|token)\s*[:=]\s*['\"]?[^\s'\"<>{}$]{8,}"),
    ),
)
"""What a rule document must not hold: every token shape the query log masks, and assignments."""
_ASSIGNMENT_MARKERS = ("password", "passwd", "secret", "apikey", "api_key", "token")
"""What every assignment match holds, lower-cased (see :data:`ruledex.reader.secrets.MARKERS`)."""
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
"""The letters ``(?i)`` matches to a marker's ASCII letter that ``str.lower`` does not turn into it
(İ, dotless ı, long ſ: ``ſecret = …`` is an assignment): folded first, so no match loses its marker."""


@dataclass(frozen=True)
class Finding:
    """One lint result."""

    path: str
    line: int
    col: int
    level: str
    message: str
    code: str
    related: str = ""
    """Another file the message names, where it says ``{related}`` (a duplicate's first copy), rules-relative."""

    def said(self, folder: str = "") -> str:
        """The message, naming the ``related`` file as :attr:`path` is shown: after the rules folder as given."""
        return self.message.replace("{related}", shown_path(folder, self.related)) if self.related else self.message

    def text(self, folder: str = "") -> str:
        """``path:line:col: level: message [code]``; ``folder``: the rules folder as given, to open the path from."""
        return (
            f"{shown_path(folder, self.path)}:{self.line}:{self.col}: {self.level}: {self.said(folder)} [{self.code}]"
        )

    def github(self, folder: str = "") -> str:
        """A GitHub Actions workflow annotation; ``folder``: where the rules folder is in the repository."""
        message = self.said(folder).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return f"::{self.level} file={shown_path(folder, self.path)},line={self.line},col={self.col},title=ruledex {self.code}::{message}"

    def to_dict(self) -> dict[str, object]:
        """JSON shape: paths rules-relative, as ``path`` is."""
        return {**asdict(self), "message": self.said()}


def from_rule_error(error: RuleError) -> Finding:
    """A parse error as a finding."""
    return Finding(error.path, error.line, 1, "error", f"{error.field}: {error.message}", "schema")


PLACEHOLDER_PASSWORDS = frozenset({"password", "pass", "passwd", "pwd", "secret", "changeme", "xxx", "xxxx"})
"""``postgresql://username:password@localhost`` in an example is a placeholder, not a leak."""


def secrets_in(path: str, text: str) -> list[Finding]:
    """Secret-looking strings, by kind and position (in reading order); never the value."""
    found = []
    folded = (text if text.isascii() else text.translate(_FOLD)).lower()
    for kind, pattern in SECRETS:
        if not (any(m in folded for m in _ASSIGNMENT_MARKERS) if kind == _ASSIGNMENT else may_hold(kind, text)):
            continue
        for match in pattern.finditer(text):
            if kind == "url-credentials" and match.group(0).rsplit(":", 1)[-1].lower() in PLACEHOLDER_PASSWORDS:
                continue
            line = text.count("\n", 0, match.start()) + 1
            col = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
            message = f"looks like a secret ({kind}); remove it and rotate it if it was real"
            found.append(Finding(path, line, col, "warning", message, "secret"))
    return sorted(found, key=lambda f: (f.line, f.col))


def _key_line(text: str, path: str, key: str) -> int:
    try:
        return frontmatter.split(normalise_newlines(text), path).line_of(key)
    except RuleError:
        return 1


def document_findings(doc: ParsedDocument, text: str, today: dt.date, strict: bool) -> list[Finding]:
    """Per-document checks: secrets, short, long or generic directives, freshness."""
    path = doc.rule.path
    out = secrets_in(path, normalise_newlines(text))
    for d in doc.directives:
        words = d.text.split()
        if len(words) < MIN_WORDS:
            out.append(
                Finding(
                    path,
                    d.line,
                    1,
                    "warning",
                    f"directive is {len(words)} words; say what to do, where and how so it can be checked",
                    "too-short",
                )
            )
        elif len(words) > MAX_SHOWN_WORDS:
            out.append(
                Finding(
                    path,
                    d.line,
                    1,
                    "warning",
                    f"directive is {len(words)} words and answers show only its first {MAX_SHOWN_WORDS}; split it "
                    "into one practice per directive",
                    "too-long",
                )
            )
        elif GENERIC.match(d.text):
            out.append(
                Finding(
                    path,
                    d.line,
                    1,
                    "warning",
                    "directive is too generic to act on; name the concrete practice",
                    "generic",
                )
            )
    if doc.rule.always_apply:
        out.extend(always_apply_findings(doc, text))
    if doc.rule.expires and doc.rule.expires < today.isoformat():
        level = "error" if strict else "warning"
        line = _key_line(text, path, "expires")
        out.append(
            Finding(
                path,
                line,
                1,
                level,
                f"rule expired on {doc.rule.expires}; review it and move `expires` forward",
                "expired",
            )
        )
    return out


def always_apply_findings(doc: ParsedDocument, text: str) -> list[Finding]:
    """An always-apply rule too long for its share of every answer's default budget."""
    lines = [item_lines(Item(d, doc.rule, 0.0), breadcrumbs=False, rationale=False) for d in doc.directives]
    cost = count_tokens(always_heading(doc.rule)) + sum(map(count_tokens, lines))
    limit = int(ALWAYS_APPLY_SHARE * QueryOptions().tokenBudget)
    if cost <= limit:
        return []
    message = (
        f"this rule always applies and its {len(doc.directives)} directives take about {cost} tokens of every "
        f"answer, more than {limit} ({ALWAYS_APPLY_SHARE:.0%} of the default budget); what does not fit is left "
        "out: keep it short, split it, or drop always_apply"
    )
    return [
        Finding(doc.rule.path, _key_line(text, doc.rule.path, "always_apply"), 1, "warning", message, "always-long")
    ]


def authority_conflicts(rules: list[tuple[RuleRecord, str]]) -> list[Finding]:
    """Two rules claiming authority for the same topic on the same layer."""
    claims: dict[tuple[str, str], RuleRecord] = {}
    out = []
    for rule, text in rules:
        for topic in rule.authoritative_for:
            for layer in rule.layers:
                other = claims.setdefault((topic, layer), rule)
                if other is not rule:
                    line = _key_line(text, rule.path, "authoritative_for")
                    out.append(
                        Finding(
                            rule.path,
                            line,
                            1,
                            "warning",
                            f"also claims authority for topic {topic!r} on layer {layer} (first: {{related}}); let one rule own it",
                            "authority-conflict",
                            related=other.path,
                        )
                    )
    return out


def contradicts(a: DirectiveRecord, b: DirectiveRecord, sim: float, terms_a: set[str], terms_b: set[str]) -> bool:
    """Two MUST/SHOULD directives of opposite polarity about the same subject (close in meaning, shared keywords).

    ``terms_*`` are each directive's keywords without polarity words.
    """
    return (
        sim >= CONTRADICTION
        and len(terms_a & terms_b) >= CONTRADICTION_OVERLAP * max(1, len(terms_a | terms_b))
        and bool(_NEGATIVE.search(a.text)) != bool(_NEGATIVE.search(b.text))
        and {a.severity, b.severity} <= {"MUST", "SHOULD"}
    )


def _more(others: int) -> str:
    return f" (and {others} more)" if others else ""


def _copies(count: int) -> str:
    return f" (one of {count} copies)" if count > 2 else ""


def similarity_findings(items: list[tuple[DirectiveRecord, str]], encoder: Encoder) -> list[Finding]:
    """Exact and near duplicates across files, and likely contradictions (opposite polarity, same subject).

    One finding per directive and kind, pointing at the first directive it matches: a text copied
    into 300 files gives 299 findings, not one per pair. Copies of a directive are reported as
    such and left out of the other tests, which their first occurrence stands for. Opposite
    instructions on one subject are close in meaning, often closer than the near-duplicate
    threshold, so a pair is tested for contradiction before it can be called a near duplicate.
    """
    if len(items) < 2:
        return []
    normal = [re.sub(r"\W+", " ", d.text.lower()).strip() for d, _ in items]
    copies = Counter(normal)
    first: dict[str, int] = {}
    out = []
    for j, (b, path_b) in enumerate(items):
        i = first.setdefault(normal[j], j)
        if i != j:
            a, path_a = items[i]
            message = f"duplicates {{related}}:{a.line} ({a.id}) word for word{_copies(copies[normal[j]])}; keep one"
            out.append(Finding(path_b, b.line, 1, "warning", message, "duplicate", related=path_a))
    originals = [items[i] for i in sorted(first.values())]
    vectors = embed_texts(encoder, [d.text for d, _ in originals])
    sims = vectors @ vectors.T
    close = np.triu(sims >= min(CONTRADICTION, NEAR_DUPLICATE), k=1)
    terms = [set(keywords(d.text)) - _POLARITY_WORDS for d, _ in originals]
    for j, (b, path_b) in enumerate(originals):
        earlier = np.flatnonzero(close[:, j])
        opposed = [int(i) for i in earlier if contradicts(originals[i][0], b, float(sims[i, j]), terms[i], terms[j])]
        same = [
            int(i)
            for i in earlier
            if sims[i, j] >= NEAR_DUPLICATE and originals[i][1] != path_b and int(i) not in opposed
        ]
        if opposed:
            a, path_a = originals[opposed[0]]
            message = f"may contradict {{related}}:{a.line} ({a.id}){_more(len(opposed) - 1)}: same subject, opposite instruction"
            out.append(Finding(path_b, b.line, 1, "warning", message, "contradiction", related=path_a))
        if same:
            a, path_a = originals[same[0]]
            message = (
                f"says nearly the same as {{related}}:{a.line} ({a.id}, similarity {sims[same[0], j]:.2f})"
                f"{_more(len(same) - 1)}; merge them"
            )
            out.append(Finding(path_b, b.line, 1, "warning", message, "near-duplicate", related=path_a))
    return out


def lint(
    docs: list[tuple[ParsedDocument, str]], encoder: Encoder | None, today: dt.date, *, strict: bool = False
) -> list[Finding]:
    """Every check over parsed documents (with their source text); sorted by path and line."""
    out: list[Finding] = []
    for doc, text in docs:
        out.extend(document_findings(doc, text, today, strict))
    out.extend(authority_conflicts([(doc.rule, text) for doc, text in docs]))
    if encoder is not None:
        out.extend(similarity_findings([(d, doc.rule.path) for doc, _ in docs for d in doc.directives], encoder))
    return sorted(out, key=lambda f: (f.path, f.line, f.col, f.code, f.message))
