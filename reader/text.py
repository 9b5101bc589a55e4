"""Text utilities shared by builder and reader: the keyword tokenizer and the token estimate.

The keyword tokenizer is the one both sides use for the BM25 index; its name is recorded in the
manifest (``KEYWORD_TOKENIZER``) so a reader never scores with a different one.

Decisions on short code terms: words are lower-cased and split on anything but letters, digits
and ``+ #``; single letters are dropped (they are mostly noise: "a", "x") unless they carry
``+``/``#`` (``c++``, ``c#``, ``f#``); alphanumeric codes such as ``k8s``, ``i18n``, ``s3``,
``oauth2`` stay whole. A small stop list removes function words. A light suffix stemmer folds
plurals and common verb forms (``migrations`` -> ``migration``, ``validating`` -> ``validat``)
without a dependency.
"""

from __future__ import annotations

import functools
import re

KEYWORD_TOKENIZER = "ruledex-words-1"
"""Identifier of :func:`keywords`' behaviour; bump it when the output for any text changes."""

_WORD = re.compile(r"[a-z0-9][a-z0-9+#]*")

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "could",
        "do",
        "does",
        "did",
        "for",
        "from",
        "has",
        "have",
        "having",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "it's",
        "let",
        "me",
        "my",
        "no",
        "nor",
        "not",
        "of",
        "on",
        "or",
        "our",
        "out",
        "over",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "too",
        "up",
        "us",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "new",
        "use",
        "using",
        "used",
        "make",
        "makes",
        "made",
        "add",
        "adds",
        "added",
        "get",
        "gets",
        "want",
        "need",
        "needs",
        "please",
        "should",
        "must",
        "may",
        "also",
        "every",
        "each",
        "any",
        "all",
        "just",
        "via",
    ]
)
"""Function words dropped from keyword queries and documents (severity words carry no topic)."""

_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "ied", "ers", "ed", "es", "s")


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Fold a word to a light stem: plurals and common verb/noun suffixes, never below 3 letters."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix in ("ies", "ied"):
                return base + "y"
            if suffix == "es" and not base.endswith(("s", "x", "z", "ch", "sh")):
                return base + "e"
            if suffix == "s" and base.endswith(("s", "u", "i")):
                return word
            return base
    return word


def words(text: str) -> list[str]:
    """Lower-cased words of a text, before stop-word removal and stemming."""
    out = []
    for token in _WORD.findall(text.lower()):
        token = token.rstrip("+#") if len(token) > 2 and token[-1] in "+#" and token[-2] not in "+#" else token
        if len(token) == 1 and token.isalpha():
            continue
        out.append(token)
    return out


_SESSION_VERBS = {
    ("logged", "in"): "login",
    ("signed", "in"): "login",
    ("logged", "out"): "logout",
    ("signed", "out"): "logout",
}
"""Word pairs folded into one term: a user who is "logged in" is about sessions, not about logging
("logged" and "logging" share the stem "logg")."""
_SESSION_FIRST = frozenset(first for first, _ in _SESSION_VERBS)


def keywords(text: str) -> list[str]:
    """The keyword terms of a text, in order, as the BM25 index stores them."""
    return keywords_of(words(text))


def keywords_of(ws: list[str]) -> list[str]:
    """:func:`keywords` of a text whose :func:`words` are already split (no second pass over the text)."""
    if _SESSION_FIRST.isdisjoint(ws):  # nearly every text: no pair to fold
        return [stem(w) for w in ws if w not in STOPWORDS]
    out, i = [], 0
    while i < len(ws):
        pair = _SESSION_VERBS.get((ws[i], ws[i + 1])) if ws[i] in _SESSION_FIRST and i + 1 < len(ws) else None
        if pair:
            out.append(pair)
            i += 2
            continue
        if ws[i] not in STOPWORDS:
            out.append(stem(ws[i]))
        i += 1
    return out


TOKEN_METHOD = "max(ceil(chars/4), ceil(words*4/3))"
"""How ruledex estimates LLM tokens: conservative for both prose and code-heavy text."""


def count_tokens(text: str) -> int:
    """Estimate how many tokens an LLM spends on ``text`` (see :data:`TOKEN_METHOD`)."""
    if not text:
        return 0
    return tokens_for(len(text), len(text.split()))


def tokens_for(chars: int, n_words: int) -> int:
    """:data:`TOKEN_METHOD` from a text's characters and words (both add up over texts joined at whitespace)."""
    return max((chars + 3) // 4, (4 * n_words + 2) // 3)  # the two ceilings, in integers


def slug(text: str) -> str:
    """GitHub-style heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return re.sub(r"\s", "-", text)
