"""Rewrite rule files that are not markdown -- JavaScript-style prompt files, JSON blobs -- as markdown.

Public rule collections hold "cursorrules" written as code: ``// Title`` comments, arrays of
instruction strings (``const rules = ["Use X", ...]``), template strings holding markdown, or one
JSON object of rules. Rewriting them to the equivalent markdown lets one reader
(:mod:`ruledex.builder.freeform`, on marko's AST) handle every file. Line numbers are kept: the
JavaScript rewrite returns, for each markdown line, the source line it came from.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .infer import humanise


def js_to_markdown(body: str) -> tuple[str, list[int]] | None:
    """Rewrite a JavaScript-style prompt file (``// Title`` comments, ``const x = [...]``) as markdown.

    Returns the markdown and, per output line, its source line offset in ``body``; None when the
    body does not open with a ``//`` comment.
    """
    lines = body.split("\n")
    first = next((line.strip() for line in lines if line.strip()), "")
    if not first.startswith("//"):
        return None
    out: list[str] = []
    origin: list[int] = []
    state, code = "text", False
    template: list[tuple[str, int]] = []

    def emit(text: str, i: int) -> None:
        out.append(text)
        origin.append(i)

    def close_code(i: int) -> None:
        nonlocal code
        if code:
            emit("```", i)
            emit("", i)
            code = False

    for i, line in enumerate(lines):
        s = line.strip()
        if state == "template":
            if s.startswith("`"):
                state = "text"
                _emit_template(template, emit)
                emit("", i)
                template = []
            else:
                template.append((line, i))
            continue
        if state == "array":
            if s.startswith("]"):
                state = "text"
                emit("", i)
                continue
            item = re.match(r"""^["'`](.*?)["'`]\s*,?$""", s)
            if item:
                emit(f"- {item.group(1)}", i)
            continue
        declaration = re.match(r"^(?:export\s+)?(?:const|let|var)\s+[\w$]+\s*=\s*(.*)$", s)
        if s.startswith("//") and s[2:].startswith("   ") and s[2:].strip():
            s = line = s[2:]  # an indented line inside a comment block: code shown in the comment
        if s.startswith("//") or declaration or not s:
            close_code(i)
        if not s:
            emit("", i)
        elif s.startswith("//"):
            comment = s.lstrip("/").strip()
            if not comment or not re.search(r"[A-Za-z0-9]", comment):
                emit("", i)
            elif comment.startswith(("- ", "* ")) or re.match(r"^\d+[.)]\s", comment):
                emit(comment, i)
            else:
                before = out[-1].strip() if out else ""
                after = next((x.strip() for x in lines[i + 1 :] if x.strip()), "")
                short = len(comment.split()) <= 8 and not comment.endswith((".", ":", ","))
                standalone = not before and not after.startswith("//")
                emit(f"## {comment}" if short and (standalone or not before) else comment, i)
        elif declaration:
            rest = declaration.group(1).strip()
            if rest.startswith("["):
                items = re.findall(r"""["'`]([^"'`]+)["'`]""", rest)
                state = "text" if rest.rstrip(";").endswith("]") else "array"
                emit("\n".join(f"- {x}" for x in items) if items else "", i)
                origin.extend([i] * max(0, len(items) - 1))
            elif rest.startswith("`"):
                state = "template"
                template = [(rest[1:], i)] if rest[1:].strip() else []
            else:
                emit("", i)
        else:
            if not code:
                if out and out[-1].strip():
                    emit("", i)
                emit("```", i)
                code = True
            emit(line, i)
    close_code(len(lines) - 1)
    return "\n".join(out), origin


def _emit_template(template: list[tuple[str, int]], emit: Any) -> None:
    """A template literal's text: markdown when it reads as prose or a list, else a code block."""
    rows = [line for line, _ in template if line.strip()]
    wordy = sum(len(line.split()) >= 3 for line in rows)
    as_code = rows and wordy * 2 < len(rows)
    if as_code:
        emit("```", template[0][1])
    for line, i in template:
        emit(line, i)
    if as_code:
        emit("```", template[-1][1])


def json_to_markdown(body: str) -> str | None:
    """Rewrite a JSON rules blob as markdown: object keys are sections, strings are list items."""
    stripped = body.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        data = json.loads(stripped)
    except ValueError:
        return None
    out: list[str] = []
    generic = {"rules", "description", "desc", "text", "rule", "instruction", "instructions", "items", "guidelines"}

    def walk(value: Any, depth: int, in_list: bool = False) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if isinstance(inner, str):
                    if str(key).lower() in ("description", "desc", "summary") and not in_list:
                        continue  # says what the section is, not what to do
                    if len(inner.split()) >= 3:
                        out.append(f"- {inner}" if key.lower() in generic else f"- {humanise(str(key))}: {inner}")
                elif str(key).lower() in generic:
                    walk(inner, depth)
                elif isinstance(inner, (dict, list)):
                    out.extend(["", f"{'#' * min(depth, 6)} {humanise(str(key))}", ""])
                    walk(inner, depth + 1)
        elif isinstance(value, list):
            for inner in value:
                if isinstance(inner, str) and len(inner.split()) >= 2:
                    out.append(f"- {inner}")
                else:
                    walk(inner, depth, True)

    walk(data, 2)
    return "\n".join(out) + "\n"
