"""Which rules apply to the files a task touches: gitignore-style glob matching, stdlib only.

Rules read from Cursor (``globs``), Copilot (``applyTo``) or a nested ``AGENTS.md`` (its folder)
keep the file patterns they apply to in ``RuleRecord.globs``. :func:`matching_rules` tells which
of them match a list of file paths. Semantics, as in ``.gitignore`` and the tools' own docs:

- paths and patterns use ``/``; a leading ``./`` or ``/`` is ignored (patterns are anchored at
  the folder the index was built from, paths are relative to it);
- ``*`` matches within one path segment, ``?`` one character but ``/``, ``[abc]``/``[!a-z]`` a
  character class, ``**`` any number of segments (``a/**/b`` matches ``a/b``; ``src/**`` all under
  ``src``; ``**/x`` ``x`` anywhere);
- ``{a,b}`` brace sets expand (nested too): ``**/*.{ts,tsx}``;
- a pattern without ``/`` (other than a trailing one) matches the file's name in any folder:
  ``*.py`` matches ``app/main.py``; a trailing ``/`` means a folder and everything in it;
- a pattern that matches a folder matches every file in it (``docs`` matches ``docs/a.md``);
- a pattern starting with ``!`` excludes: a rule matches a file when one of its other patterns
  does and none of its ``!`` patterns does;
- matching is case-sensitive, like git on Linux.

Pure functions; compiled patterns are cached.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Protocol

MAX_BRACE_EXPANSIONS = 256
"""A pattern whose braces expand to more alternatives than this is treated literally."""


class _HasGlobs(Protocol):
    globs: tuple[str, ...]


def expand_braces(pattern: str) -> list[str]:
    """``a/{b,c{d,e}}`` -> ``[a/b, a/cd, a/ce]``; unbalanced braces stay literal."""
    depth, start = 0, -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                inner = pattern[start + 1 : i]
                options, level, current = [], 0, ""
                for c in inner:
                    if c == "," and level == 0:
                        options.append(current)
                        current = ""
                        continue
                    level += c == "{"
                    level -= c == "}"
                    current += c
                options.append(current)
                if len(options) < 2:
                    continue
                head, tail = pattern[:start], pattern[i + 1 :]
                out = [e for option in options for e in expand_braces(head + option + tail)]
                return out if len(out) <= MAX_BRACE_EXPANSIONS else [pattern]
    return [pattern]


def _segment_regex(segment: str) -> str:
    """Regex for one path segment of a glob (no ``/`` inside)."""
    out, i = [], 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                out.append(re.escape(ch))
            else:
                body = segment[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                out.append(f"[{'^' if negate else ''}{body.replace(chr(92), chr(92) * 2)}]")
                i = end
        elif ch == "\\" and i + 1 < len(segment):
            i += 1
            out.append(re.escape(segment[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _normalise(pattern: str) -> str:
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    return pattern


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile one brace-free glob into a regex over ``/``-separated relative paths."""
    pattern = _normalise(pattern)
    anchored, directory = pattern.startswith("/"), pattern.endswith("/")
    core = pattern.strip("/")
    if not core:
        return re.compile(".*")
    if "/" not in core and not anchored:
        core = f"**/{core}"
    if directory:
        core = f"{core}/**"
    parts = core.split("/")
    regex = ""
    for n, part in enumerate(parts):
        last = n == len(parts) - 1
        if part == "**":
            regex += ".*" if last else "(?:[^/]+/)*"
        else:
            regex += _segment_regex(part) + ("" if last else "/")
    # a pattern that matches a folder matches every file in it: one regex over the whole path, not
    # one try per folder above it (that was quadratic in the depth: 36 s for 200 deep paths)
    return re.compile(regex if regex.endswith(".*") else f"{regex}(?:/.*)?")


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> tuple[re.Pattern[str], ...]:
    return tuple(glob_regex(p) for p in expand_braces(pattern) if p.strip())


_DRIVE = re.compile(r"[A-Za-z]:")


def clean_path(path: str) -> str:
    """A path as given, with forward slashes and no surrounding blanks or leading ``./``."""
    path = path.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def is_absolute(path: str) -> bool:
    """``/home/me/repo/x.py`` or ``C:/repo/x.py`` (either slash): a path from outside the repository."""
    path = clean_path(path)
    head, slash, _ = path.partition("/")
    return path.startswith("/") or (bool(slash) and _DRIVE.fullmatch(head) is not None)


def _candidates(path: str) -> list[str]:
    """The path to match, relative to the repository.

    For an absolute path, relative to each folder above the file, since where the repository starts
    is unknown (``app/**`` matches ``/home/me/shop/app/page.tsx``).
    """
    parts = [p for p in clean_path(path).strip("/").split("/") if p and p != "."]
    if is_absolute(path):
        drive = 1 if parts and _DRIVE.fullmatch(parts[0]) else 0
        return ["/".join(parts[n:]) for n in range(drive, len(parts))]
    return ["/".join(parts)] if parts else []


def glob_match(pattern: str, path: str) -> bool:
    """Whether ``path`` (``/``-separated, relative to the repository) matches one glob ``pattern`` (no ``!``)."""
    regexes = _compiled(_normalise(pattern))
    return any(rx.fullmatch(candidate) for candidate in _candidates(path) for rx in regexes)


CATCH_ALL = frozenset({"", "*", "**", "**/*", "**/**", "**/**/*", "*/**", "**/*/**"})
"""Globs that match every file (after ``./`` and the slashes around them are stripped)."""


def matches_every_file(globs: Iterable[str]) -> bool:
    """Whether these globs match any file at all (``**/*``, with no ``!`` pattern): they tie a rule to nothing.

    57 of the 80 rules of the public Cursor corpus say ``globs: **/*``. Cursor attaches such a rule
    whenever any file is open; for ranking, being "tied" to every file is no evidence about the task.
    """
    patterns = [g.strip() for g in globs if g.strip()]
    if any(g.startswith("!") for g in patterns):
        return False
    return any(_normalise(p).strip("/") in CATCH_ALL for p in patterns)


def globs_match(globs: Iterable[str], path: str) -> bool:
    """Whether a rule with these globs applies to ``path`` (``!`` patterns exclude)."""
    positive = [g for g in globs if g.strip() and not g.strip().startswith("!")]
    negative = [g.strip()[1:] for g in globs if g.strip().startswith("!")]
    return any(glob_match(g, path) for g in positive) and not any(glob_match(g, path) for g in negative)


def matching_rules(rules: Sequence[_HasGlobs] | Mapping[int, _HasGlobs], files: list[str]) -> set[int]:
    """Positions (list index or mapping key) of the rules whose globs match at least one of ``files``.

    Rules without globs are never returned: they are not tied to files (a query treats them as
    it always has). ``files`` are paths relative to the folder the index was built from.
    """
    wanted = [f for f in files if f and f.strip()]
    if not wanted:
        return set()
    pairs = rules.items() if isinstance(rules, Mapping) else enumerate(rules)
    return {i for i, rule in pairs if rule.globs and any(globs_match(rule.globs, f) for f in wanted)}


def split_globs(value: object) -> tuple[str, ...]:
    """Globs from a list or a comma-separated string (as Cursor writes them); commas inside ``{a,b}`` stay."""
    if value is None or value is False:
        return ()
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    out: list[str] = []
    for item in items:
        text, depth, current = str(item), 0, ""
        for ch in text:
            depth += ch == "{"
            depth -= ch == "}"
            if ch == "," and depth <= 0:
                out.append(current)
                current = ""
            else:
                current += ch
        out.append(current)
    cleaned = (g.strip().strip("\"'").strip() for g in out)
    return tuple(dict.fromkeys(g for g in cleaned if g))
