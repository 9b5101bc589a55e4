"""The rule catalogue of an index: list rules, render one whole, suggest close names.

Shared by ``ruledex list``/``show`` and the MCP server's ``list_rules``/``get_rules`` and resources.
"""

from __future__ import annotations

import difflib
from typing import Any


def rule_summary(rule: Any) -> dict[str, Any]:
    """The ``list_rules`` shape of one rule."""
    return {
        "domain": rule.id,
        "title": rule.title,
        "path": rule.path,
        "description": rule.description,
        "layers": list(rule.layers),
        "topics": list(rule.topics),
        "authoritativeFor": list(rule.authoritative_for),
        "directives": rule.directive_count,
        "version": rule.version,
        "lastUpdated": rule.last_updated or rule.reviewed,
        "lastCommit": rule.last_commit,
        "lastAuthor": rule.last_author,
    }


def render_rule(index: Any, i: int) -> str:
    """A whole rule document as markdown (what ``show`` and ``get_rules`` return)."""
    rule = index.rule(i)
    out = [f"# {rule.title}", ""]
    meta = [f"layers: {', '.join(rule.layers)}", f"topics: {', '.join(rule.topics)}"]
    if rule.version:
        meta.append(f"version: {rule.version}")
    if rule.last_updated or rule.reviewed:
        by = f" by {rule.last_author} ({rule.last_commit[:12]})" if rule.last_author else ""
        meta.append(f"last updated: {rule.last_updated or rule.reviewed}{by}")
    out += [f"_{'; '.join(meta)}; source: {rule.path}_", ""]
    if rule.description:
        out += [rule.description, ""]
    if rule.when_to_apply:
        out += ["When to apply: " + "; ".join(rule.when_to_apply), ""]
    if rule.examples:  # tasks are matched against them too, so they belong to what the rule says
        out += ["Example tasks: " + "; ".join(rule.examples), ""]
    section: tuple[str, ...] | None = None
    for d in index.directives_of(i):
        if d.section != section:
            section = d.section
            if section:
                out += ["", f"{'#' * (len(section) + 1)} {section[-1]}", ""]
        out.append(f"- **{d.severity}** {d.text}")
        if d.rationale:
            out.append(f"  Rationale: {d.rationale}")
        out.extend(f"  Avoid: {a}" for a in d.avoid)
        for lang, code in d.examples:
            out += [f"  ```{lang}", *[f"  {line}" for line in code.split("\n")], "  ```"]
    return "\n".join(out).strip() + "\n"


def closest_domains(index: Any, domain: str, n: int = 3) -> list[str]:
    """The rule ids most like an unknown ``domain`` (difflib ratio, then substring); none when none is.

    Not the first ids instead: offered as "closest", an unrelated rule is what an assistant fetches next.
    """
    ids = [r.id for r in index.rules()]
    close = difflib.get_close_matches(domain.lower(), ids, n=n, cutoff=0.3)
    extra = [i for i in ids if domain.lower() in i.lower() and i not in close]
    return (close + extra)[:n]
