"""What the MCP tools compute, without the MCP SDK: pure tool logic over opened indexes.

The served index and its hot reload are :mod:`.holder`'s; the knowledge graph is :mod:`.graph`'s.
The functions here take an opened :class:`~ruledex.reader.index.Index`, validate their arguments
(a :class:`ValueError` names the field and the allowed values) and return JSON-ready dicts in the
shapes the MCP tools publish. The knowledge graph is read-only: rules change by pull request.
"""

from __future__ import annotations

import logging
import math
from typing import Any, TypeVar

from .catalog import closest_domains, render_rule, rule_summary
from .errors import shown
from .index import Index
from .options import DETECT_DEFAULTS, parse_files
from .paths import edited_files
from .query import MAX_TASK_CHARS, SCOPE_BOOST, check_mode, first_copies, index_names, query_directives, read_task
from .rank import ranking_for
from .records import RuleRecord
from .vocab import LAYERS, SCOPES, TOPICS, canonical, names_from_mask

log = logging.getLogger("ruledex.server")
T = TypeVar("T")


def require_text(value: Any, field_name: str) -> str:
    """A non-empty string, or a ValueError naming the field."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{field_name}: must be a non-empty string")
    return value


def _bool(raw: dict[str, Any], name: str, default: bool) -> bool:
    value = raw.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"options.{name}: must be true or false, got {shown(value)}")
    return value


def _number(value: Any, name: str, low: float, high: float, *, integer: bool = False) -> float:
    kind = "an integer" if integer else "a number"
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or (integer and value != int(value))
    ):
        raise ValueError(f"{name}: must be {kind} from {low:g} to {high:g}, got {shown(value)}")
    if not low <= value <= high:
        raise ValueError(f"{name}: must be {kind} from {low:g} to {high:g}, got {shown(value)}")
    return value


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str | None:
    if value is None or value == "":
        return None
    known = canonical(value, allowed) if isinstance(value, str) else None
    if known is None:
        raise ValueError(f"{name}: unknown value {shown(value)}; allowed: {', '.join(allowed)}")
    return known


def _options(raw: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ValueError(f"options: must be an object with the fields {', '.join(allowed)}")
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise ValueError(f"options: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    return raw


def clip_task(text: str) -> tuple[str, list[str]]:
    """Cut a text to MAX_TASK_CHARS, with the note that says so."""
    if len(text) <= MAX_TASK_CHARS:
        return text, []
    return text[:MAX_TASK_CHARS], [f"text truncated from {len(text)} to {MAX_TASK_CHARS} characters"]


# ---------------------------------------------------------------------------------------------
# Catalogue and query tools


def index_info(index: Index) -> dict[str, Any]:
    """Which index answers: name, version, commit, file, counts."""
    m = index.manifest
    return {
        "name": str(m.get("name", "")),
        "version": str(m.get("version", "")),
        "commit": index.commit,
        "buildTime": str(m.get("build_time") or ""),
        "path": str(index.path),
        "rules": index.n_rules,
        "directives": index.n_directives,
    }


def _as_list(indexes: Index | list[Index]) -> list[Index]:
    return indexes if isinstance(indexes, list) else [indexes]


def list_rules(indexes: Index | list[Index]) -> dict[str, Any]:
    """Every rule document with its summary, and the index it comes from.

    With layered indexes every summary names its index, and ``indexes`` describes them all.
    """
    indexes = _as_list(indexes)
    named = list(zip(indexes, index_names(indexes), strict=True))
    rules = [{**rule_summary(r), "index": name} if name else rule_summary(r) for ix, name in named for r in ix.rules()]
    return {"rules": rules, "total": len(rules), **served_info(indexes)}


def served_info(indexes: list[Index]) -> dict[str, Any]:
    """Which indexes answer: ``index`` (the first), and with layered indexes ``indexes``, each with its name."""
    out: dict[str, Any] = {"index": index_info(indexes[0])}
    if len(indexes) > 1:
        out["indexes"] = [
            {**index_info(ix), "layer": name} for ix, name in zip(indexes, index_names(indexes), strict=True)
        ]
    return out


def rule_hits(indexes: list[Index], domain: str) -> list[tuple[Index, int, str]]:
    """``(index, rule row, index name)`` of every served index that defines ``domain``, in the order given."""
    return [
        (ix, i, name)
        for ix, name in zip(indexes, index_names(indexes), strict=True)
        if (i := ix.find_rule(domain)) is not None
    ]


def _preferred(hits: list[tuple[Index, int, str]]) -> tuple[Index, int, str] | None:
    """The rule served for a domain several layered indexes define: the most specific scope, then the first given."""
    # min() keeps the first of equals, so ties go to the index given first
    return min(hits, key=lambda hit: _specificity(hit[0].rule(hit[1])), default=None)


def served_index_names(indexes: list[Index]) -> list[str]:
    """The names ``get_rules``' ``index`` takes: the layered names, or a single index's build name."""
    return index_names(indexes) if len(indexes) > 1 else [index_info(ix)["name"] for ix in indexes]


def _pick_index(indexes: list[Index], wanted: Any) -> list[Index]:
    """The index named ``wanted`` (``get_rules``' ``index``), as a one-item list; None: every index."""
    if wanted is None:
        return indexes
    wanted = require_text(wanted, "index")
    names = served_index_names(indexes)
    if wanted not in names:
        raise ValueError(
            f"index: no served index is called {wanted[:MAX_DOMAIN_CHARS]!r}; served: {', '.join(names)} (the "
            "'index' field of a citation or of list_rules' rules)"
        )
    return [indexes[names.index(wanted)]]


def _specificity(rule: RuleRecord) -> float:
    """Sort key among layered rules with one domain: the most specific scope (project) first."""
    return -SCOPE_BOOST.get(rule.scope, 0.0)


def served_rules(indexes: list[Index]) -> list[RuleRecord]:
    """One rule per domain across layered indexes: the one :func:`get_rule` serves for it."""
    best: dict[str, RuleRecord] = {}
    for ix in indexes:  # in the order given: a later index wins only with a more specific scope
        for rule in ix.rules():
            if rule.id not in best or _specificity(rule) < _specificity(best[rule.id]):
                best[rule.id] = rule
    return list(best.values())


MAX_DOMAIN_CHARS = 200
"""Rule ids are short; a longer ``domain`` is refused before it is compared with every id, or echoed."""


def get_rule(indexes: Index | list[Index], domain: Any, in_index: Any = None) -> dict[str, Any]:
    """One whole rule document; an unknown domain is a ValueError naming the closest ones.

    Among layered indexes, ``in_index`` (a name from citations or ``list_rules``) picks the one to
    read; without it a domain several indexes define is served from the most specific scope (then
    the first given), as the ranking prefers it, and ``definedIn`` names every index that has it.
    """
    indexes = _as_list(indexes)
    domain = require_text(domain, "domain")
    if len(domain) > MAX_DOMAIN_CHARS:
        raise ValueError(
            f"domain: {len(domain)} characters, at most {MAX_DOMAIN_CHARS}: pass a rule id or file stem from "
            "list_rules, e.g. 'security'"
        )
    wanted = _pick_index(indexes, in_index)
    hits = rule_hits(indexes, domain)
    found = _preferred(hits) if wanted is indexes else _hit_in(hits, wanted[0])
    if found is None:
        raise ValueError(_no_rule(domain, wanted, in_index, [name for _, _, name in hits]))
    index, i, name = found
    rule = index.rule(i)
    out = {
        **rule_summary(rule),
        "scope": rule.scope,
        "whenToApply": list(rule.when_to_apply),
        "commit": index.commit,
        "content": render_rule(index, i),
    }
    if not name:
        return out
    defined_in = [n for _, _, n in hits]
    return {**out, "index": name, **({"definedIn": defined_in} if len(defined_in) > 1 else {})}


def _hit_in(hits: list[tuple[Index, int, str]], chosen: Index) -> tuple[Index, int, str] | None:
    """The one of :func:`rule_hits` in the ``chosen`` index."""
    return next((hit for hit in hits if hit[0] is chosen), None)


def _no_rule(domain: str, searched: list[Index], in_index: str | None, elsewhere: list[str]) -> str:
    """The error for a domain not found: where it is instead, else the closest domains."""
    if in_index is not None and elsewhere:
        return f"domain: no rule {domain!r} in index {in_index!r}; it is in: {', '.join(elsewhere)}"
    close = list(dict.fromkeys(d for ix in searched for d in closest_domains(ix, domain)))[:3]
    where = "this index" if in_index is None else f"index {in_index!r}"
    if not any(ix.n_rules for ix in searched):
        return f"domain: no rule {domain!r} in {where}; the index is empty."
    nearest = f"closest: {', '.join(close)}" if close else "no domain is spelled like it"
    return f"domain: no rule {domain!r} in {where}; {nearest}. Call list_rules to see every domain."


DETECT_OPTIONS = ("returnKeywords", "confidenceThreshold", "modeSlug", "files")


def detect_context(indexes: Index | list[Index], text: Any, options: Any = None) -> dict[str, Any]:
    """Layer, topics, technologies, keywords and confidence of a text; no layer below the threshold.

    Read as ``query_directives`` reads a task (:func:`~ruledex.reader.query.read_task`): over every
    layered index, with the same retrieval feedback, so both report the same layer and topics.
    """
    raw = _options(options, DETECT_OPTIONS)
    text, notes = clip_task(require_text(text, "text"))
    keep_keywords = _bool(raw, "returnKeywords", DETECT_DEFAULTS["returnKeywords"])
    threshold = raw.get("confidenceThreshold")
    if threshold is None:
        threshold = DETECT_DEFAULTS["confidenceThreshold"]
    else:
        threshold = _number(threshold, "options.confidenceThreshold", 0, 1)
    mode = check_mode(raw.get("modeSlug"))
    edited = edited_files(text, parse_files(raw["files"]) if raw.get("files") is not None else ())
    notes.extend(edited.notes())
    found = dict(read_task(_as_list(indexes), text, mode, edited.files, edited.evidence).to_dict())
    if found["detectedLayer"] is not None and found["confidence"] < threshold:
        notes.append(f"layer {found['detectedLayer']} left out: confidence {found['confidence']} < {threshold}")
        found["detectedLayer"] = None
    if not keep_keywords:
        found["keywords"] = []
    found["notes"] = notes
    return found


PRIORITY = {"MUST": "high", "SHOULD": "medium", "MAY": "low"}

LIMIT_RANGE = (1, 20)
"""``search_knowledge``'s ``limit``: the fewest and most results it returns."""
LIMIT_DEFAULT = 5
"""``search_knowledge``'s ``limit`` when not given (or null, as for every optional argument)."""


def _limit(value: Any) -> int:
    return int(_number(LIMIT_DEFAULT if value is None else value, "limit", *LIMIT_RANGE, integer=True))


def directive_ids(index: Index) -> dict[str, int]:
    """Directive id -> row number."""
    return {index.directive(i).id: i for i in range(index.n_directives)}


def search_knowledge(
    index: Index,
    query: Any,
    *,
    ids: dict[str, int],
    context_tags: Any = None,
    scope: Any = None,
    category: Any = None,
    limit: Any = LIMIT_DEFAULT,
    min_confidence: Any = 0.0,
) -> dict[str, Any]:
    """Directives as knowledge entries, best first: the same retrieval as query_directives, layer not enforced."""
    query = require_text(query, "query")
    tags = [] if context_tags is None else context_tags
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ValueError(f"contextTags: must be a list of strings (topics such as {', '.join(TOPICS[:4])}, …)")
    scope = _choice(scope, "scope", SCOPES)
    category = _choice(category, "category", LAYERS)
    limit = _limit(limit)
    min_confidence = 0.0 if min_confidence is None else _number(min_confidence, "minConfidence", 0, 1)
    if index.n_directives == 0:
        return {"results": [], "totalMatches": 0}
    named = [(t, canonical(t, TOPICS)) for t in tags]  # a tag is a topic, or words for the query
    topics = [name for _, name in named if name is not None]
    words = [t for t, name in named if name is None]
    options = {"strictLayer": category is not None, "layer": category, "topicsBias": topics}
    answer = query_directives(index, " ".join([query, *words]), None, {**options, "maxItems": 12, "tokenBudget": 8000})
    if answer["diagnostics"]["retrievalStats"]["considered"] == 0:
        return {"results": [], "totalMatches": 0}
    scored = {c["id"]: c["score"] for c in answer["citations"]}
    scored.update({o["id"]: o["score"] for o in answer["diagnostics"]["omitted"]})
    ceiling = ranking_for(index.declared_share).weights.ceiling()  # the weights the answer ranked with
    results = []
    for did, raw_score in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0])):
        row = ids[did]
        d, rule = index.directive(row), index.rule(index.directive(row).rule)
        confidence = round(min(1.0, max(0.0, raw_score / ceiling)), 3)
        if (scope and rule.scope != scope) or confidence < min_confidence:
            continue
        layers = names_from_mask(int(index.dir_layers[row]), LAYERS)
        results.append(
            {
                "id": d.id,
                "title": " > ".join([rule.title, *d.section]),
                "content": d.text,
                "rationale": d.rationale,
                "tags": list(names_from_mask(int(index.dir_topics[row]), TOPICS)),
                "scope": rule.scope,
                "category": layers[0] if layers else "*",
                "layers": list(layers),
                "severity": d.severity,
                "priority": PRIORITY[d.severity],
                "score": confidence,
                "source": {"rule": rule.id, "path": rule.path, "line": d.line, "commit": index.commit},
            }
        )
    return {"results": results[:limit], "totalMatches": len(results)}


def search_layered(searches: list[tuple[str, dict[str, Any]]], limit: Any = LIMIT_DEFAULT) -> dict[str, Any]:
    """Merge the ``search_knowledge`` answers of layered indexes (``(name, answer)``), best first.

    Each answer must have been asked for the maximum limit; entries are tagged with their index.
    """
    limit = _limit(limit)
    ranked = sorted(
        ({**entry, "index": name} for name, answer in searches for entry in answer["results"]),
        key=lambda e: (-e["score"], e["index"], e["id"]),
    )
    merged = first_copies(ranked, lambda entry: (entry["id"], entry["content"]))
    total = sum(answer["totalMatches"] for _, answer in searches) - (len(ranked) - len(merged))
    return {"results": merged[:limit], "totalMatches": total}
