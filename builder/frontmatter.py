"""Split a rule document into YAML front matter and markdown body, keeping line numbers.

Front matter is the block between a first line ``---`` and the next ``---`` (or ``...``) line.
Values come from PyYAML's safe loader; each top-level key's line comes from the composed node
tree, so validation errors can point at ``file:line``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ruledex.reader.errors import RuleError


class _SafeLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """libyaml's safe loader where PyYAML was built with it (several times faster), else the pure-Python one.

    A date-shaped value that is not a real date (``2026-13-45``, ``2026-02-30``) stays a string
    instead of raising ``ValueError`` with no file, line or field, so validation can name them.
    """


def _timestamp_or_text(loader: yaml.constructor.SafeConstructor, node: yaml.ScalarNode) -> object:
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)
    except ValueError:
        return loader.construct_scalar(node)


_SafeLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_or_text)
SAFE_LOADER = _SafeLoader
"""The one YAML loader for front matter (ruledex documents and other tools' files)."""


@dataclass(frozen=True)
class FrontMatter:
    """Parsed front matter: values, the 1-based line of each key, and where the body starts."""

    values: dict[str, Any]
    lines: dict[str, int]
    body: str
    body_line: int

    def line_of(self, key: str) -> int:
        """The line a key is on, or the opening ``---`` line when the key is absent."""
        return self.lines.get(key, 1)


def split(text: str, path: str, *, required: bool = True) -> FrontMatter:
    """Parse the front matter of ``text``; raise :class:`RuleError` naming the line on failure."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        if required:
            raise RuleError(
                path,
                1,
                "front matter",
                "missing; start the file with a '---' block of YAML (see rules/CONTRIBUTING.md)",
            )
        return FrontMatter({}, {}, text, 1)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise RuleError(
            path, 1, "front matter", "opened with '---' but never closed; add a '---' line after the last field"
        )
    block = "\n".join(lines[1:end])
    try:
        loader = SAFE_LOADER(block)
        try:  # parse once: the node tree gives each key's line, the constructor its value
            node = loader.get_single_node()
            values = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        # Point at where the broken construct starts (context), and say where YAML noticed it.
        start = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        noticed = getattr(exc, "problem_mark", None)
        line = start.line + 2 if start is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        if noticed is not None and noticed.line + 2 != line:
            problem = f"{problem} (noticed on line {noticed.line + 2})"
        raise RuleError(
            path,
            line,
            "front matter",
            f"invalid YAML: {problem}; quote values that contain ': ' or start with '*' or '['",
        ) from None
    if values is None:
        values = {}
    if not isinstance(values, dict):
        raise RuleError(path, 2, "front matter", "must be a mapping of `key: value` lines")
    key_lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, _value in node.value:
            key, line = str(key_node.value), key_node.start_mark.line + 2
            if key in key_lines:  # YAML would keep the last silently, dropping the first's topics or layers
                raise RuleError(
                    path, line, key, f"given twice (also on line {key_lines[key]}); merge them into one `{key}:`"
                )
            key_lines[key] = line
    body = "\n".join(lines[end + 1 :])
    return FrontMatter({str(k): v for k, v in values.items()}, key_lines, body, end + 2)
