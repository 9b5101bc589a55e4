"""Compare two indexes: which rules and directives were added, removed, reworded or re-graded.

Directives are paired first by rule and exact text (a different id then means it was renumbered:
"moved"), then by id (same id, new text: "reworded"); what is left is added or removed. So
inserting one directive at the top of a section reads as one addition, not as a cascade of edits. Pure: takes decoded records,
returns a dict (``--json``) that :func:`to_markdown` turns into a pull-request comment.
"""

from __future__ import annotations

from typing import Any

from .index import Index
from .records import DirectiveRecord, RuleRecord


def _label(index: Index) -> str:
    """``name version @ commit``; a build from an untagged ref is versioned by its short commit: said once."""
    m = index.manifest
    commit = str(m.get("source", {}).get("commit", ""))[:12]
    version = str(m.get("version", ""))
    at = f" @ {commit}" if commit and commit not in version else ""
    return f"{m.get('name', 'rules')} {version}".strip() + at


def _directives(index: Index) -> dict[str, tuple[DirectiveRecord, RuleRecord]]:
    return {
        index.directive(i).id: (index.directive(i), index.rule(index.directive(i).rule))
        for i in range(index.n_directives)
    }


def _brief(d: DirectiveRecord, r: RuleRecord) -> dict[str, Any]:
    return {"id": d.id, "rule": r.id, "sourcePath": r.path, "severity": d.severity, "text": d.text}


RULE_FIELDS = (
    "title",
    "layers",
    "topics",
    "authoritative_for",
    "when_to_apply",
    "examples",
    "globs",
    "technologies",
    "always_apply",
    "scope",
    "version",
    "path",
)
"""The rule fields a diff compares: every one that changes which answers the rule is in, so a pull
request that only rewords an example task or a glob still shows up in review."""


def diff_records(
    old_rules: dict[str, RuleRecord],
    new_rules: dict[str, RuleRecord],
    old: dict[str, tuple[DirectiveRecord, RuleRecord]],
    new: dict[str, tuple[DirectiveRecord, RuleRecord]],
) -> dict[str, Any]:
    """The differences between two sets of records (pure)."""
    # 1. same rule and same text: the same directive, possibly renumbered (moved)
    pairs: list[tuple[str, str]] = []
    unpaired_old = dict.fromkeys(sorted(old))
    by_text: dict[tuple[str, str], list[str]] = {}
    for i in unpaired_old:
        by_text.setdefault((old[i][1].id, old[i][0].text), []).append(i)
    unpaired_new = []
    for i in sorted(new):
        candidates = by_text.get((new[i][1].id, new[i][0].text))
        if candidates:
            j = i if i in candidates else candidates[0]
            candidates.remove(j)
            del unpaired_old[j]
            pairs.append((j, i))
        else:
            unpaired_new.append(i)
    # 2. same id, different text: reworded in place
    added = []
    for i in unpaired_new:
        if i in unpaired_old:
            del unpaired_old[i]
            pairs.append((i, i))
        else:
            added.append(i)
    removed = list(unpaired_old)
    moved = [{"from": a, "to": b} for a, b in sorted(pairs) if a != b]
    reworded, severity, layers, topics = [], [], [], []
    for a_id, b_id in sorted(pairs, key=lambda p: p[1]):
        (a, _), (b, _) = old[a_id], new[b_id]
        if a.text != b.text:
            reworded.append({"id": b_id, "old": a.text, "new": b.text})
        if a.severity != b.severity:
            severity.append({"id": b_id, "old": a.severity, "new": b.severity, "text": b.text})
        if a.layers != b.layers:
            layers.append({"id": b_id, "old": list(a.layers), "new": list(b.layers)})
        if a.topics != b.topics:
            topics.append({"id": b_id, "old": list(a.topics), "new": list(b.topics)})
    changed_rules = []
    for rid in sorted(set(old_rules) & set(new_rules)):
        a, b = old_rules[rid], new_rules[rid]
        fields = [f for f in RULE_FIELDS if getattr(a, f) != getattr(b, f)]
        if fields:
            changed_rules.append({"id": rid, "fields": fields})
    result = {
        "rules": {
            "added": sorted(set(new_rules) - set(old_rules)),
            "removed": sorted(set(old_rules) - set(new_rules)),
            "changed": changed_rules,
        },
        "directives": {
            "added": [_brief(*new[i]) for i in added],
            "removed": [_brief(*old[i]) for i in removed],
            "moved": moved,
            "reworded": reworded,
            "severity": severity,
            "layers": layers,
            "topics": topics,
        },
    }
    result["summary"] = {
        **{f"rules_{k}": len(v) for k, v in result["rules"].items()},
        **{f"directives_{k}": len(v) for k, v in result["directives"].items()},
    }
    result["changed"] = any(result["summary"].values())
    return result


def diff_indexes(old: Index, new: Index) -> dict[str, Any]:
    """Compare two opened indexes."""
    result = diff_records(
        {r.id: r for r in old.rules()},
        {r.id: r for r in new.rules()},
        _directives(old),
        _directives(new),
    )
    return {"old": _label(old), "new": _label(new), **result}


def to_markdown(result: dict[str, Any]) -> str:
    """A pull-request comment: summary line, then one section per kind of change."""
    s, d = result["summary"], result["directives"]
    lines = [f"## Rules diff: {result['old']} → {result['new']}", ""]
    if not result["changed"]:
        return "\n".join([*lines, "No rule or directive changed.", ""])
    parts = [
        f"{s['directives_added']} added",
        f"{s['directives_removed']} removed",
        f"{s['directives_reworded']} reworded",
        f"{s['directives_severity']} severity changes",
        f"{s['directives_layers']} layer changes",
    ]
    lines += [
        f"**Directives:** {', '.join(parts)}. **Rules:** {s['rules_added']} added, {s['rules_removed']} removed, {s['rules_changed']} changed.",
        "",
    ]
    sections = [
        ("Added", [f"- **{x['severity']}** {x['text']} — `{x['id']}`" for x in d["added"]]),
        ("Removed", [f"- ~~**{x['severity']}** {x['text']}~~ — `{x['id']}`" for x in d["removed"]]),
        ("Severity changed", [f"- `{x['id']}`: {x['old']} → **{x['new']}** — {x['text']}" for x in d["severity"]]),
        ("Reworded", [f"- `{x['id']}`\n  - before: {x['old']}\n  - after: {x['new']}" for x in d["reworded"]]),
        ("Layer changed", [f"- `{x['id']}`: {', '.join(x['old'])} → {', '.join(x['new'])}" for x in d["layers"]]),
        ("Topics changed", [f"- `{x['id']}`: {', '.join(x['old'])} → {', '.join(x['new'])}" for x in d["topics"]]),
        ("Moved (same text, new id)", [f"- `{x['from']}` → `{x['to']}`" for x in d["moved"]]),
        (
            "Rules",
            [f"- added `{r}`" for r in result["rules"]["added"]]
            + [f"- removed `{r}`" for r in result["rules"]["removed"]]
            + [f"- `{c['id']}`: {', '.join(c['fields'])} changed" for c in result["rules"]["changed"]],
        ),
    ]
    for title, items in sections:
        if items:
            lines += [f"### {title}", "", *items, ""]
    return "\n".join(lines)
