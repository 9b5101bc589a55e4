"""Format chosen directives as a compact markdown block under a token budget, with citations.

Pure: takes ranked items, returns the block, the citations and what was left out and why. The
first :data:`GUARANTEED_MUST` MUST directives are always included, even past the budget; every
other item is added in rank order while the block stays within budget and ``max_items``. Items
are shown MUST first, then SHOULD, then MAY, each group in rank order; citations list the same items
in rank order (most relevant first), which is what a program consuming them wants. Directives of
rules past their ``expires`` date are marked stale in the block and in their citation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .records import DirectiveRecord, RuleRecord
from .text import count_tokens
from .vocab import SEVERITIES

GUARANTEED_MUST = 3
MIN_SHOWN = 3
"""The first this many ranked directives are never left out for relevance (``min_scores``)."""


class Item(NamedTuple):
    """A ranked directive with what rendering and citing it needs (a tuple: a query makes dozens)."""

    directive: DirectiveRecord
    rule: RuleRecord
    score: float
    index_name: str = ""
    commit: str = ""


@dataclass
class Rendered:
    """The block, its citations, its token count and the items left out."""

    block: str
    citations: list[dict[str, Any]]
    tokens: int
    omitted: list[dict[str, Any]] = field(default_factory=list)
    selected: list[Item] = field(default_factory=list)


def breadcrumb(item: Item) -> str:
    """``Rule > Section > Subsection``."""
    return " > ".join([item.rule.title, *item.directive.section])


def is_stale(item: Item, today: str) -> bool:
    """A directive is stale when its rule's ``expires`` date (YYYY-MM-DD) is before ``today``."""
    return bool(item.rule.expires) and item.rule.expires < today


def item_lines(item: Item, *, breadcrumbs: bool, rationale: bool, today: str = "") -> str:
    """The markdown for one directive (one line, plus an optional rationale line)."""
    d = item.directive
    text = d.text.replace("\n", " ").strip()
    where = f" — _{breadcrumb(item)}_" if breadcrumbs else ""
    stale = f" _(stale: review was due {item.rule.expires})_" if today and is_stale(item, today) else ""
    line = f"- **{d.severity}** {text}{where} `[{d.id}]`{stale}"
    if rationale and d.rationale:
        line += f"\n  Why: {d.rationale}"
    return line + "\n"


def citation(item: Item, today: str = "") -> dict[str, Any]:
    """The structured citation of one directive."""
    out = {
        "id": item.directive.id,
        "rule": item.rule.id,
        "title": item.rule.title,
        "section": " > ".join(item.directive.section),
        "severity": item.directive.severity,
        "sourcePath": item.rule.path,
        "line": item.directive.line,
        "commit": item.commit,
        "score": round(item.score, 3),
        "stale": bool(today) and is_stale(item, today),
    }
    if item.index_name:
        out["index"] = item.index_name
    return out


def render(
    ranked: list[Item],
    *,
    header: str,
    footer: str,
    token_budget: int,
    max_items: int,
    breadcrumbs: bool = True,
    rationale: bool = False,
    today: str = "",
    min_scores: dict[str, float] | None = None,
) -> Rendered:
    """Choose and format items under the budget; never drops anything without saying so.

    ``min_scores`` (index name -> score) leaves out items that score below their index's minimum,
    past the first :data:`MIN_SHOWN` ranked items and the guaranteed MUST directives.
    """
    floors = min_scores or {}
    lines: dict[int, str] = {}
    cost: dict[int, int] = {}

    def cost_of(item: Item) -> int:  # formatted on demand: items past maxItems never are
        key = id(item)
        if key not in cost:
            lines[key] = item_lines(item, breadcrumbs=breadcrumbs, rationale=rationale, today=today)
            cost[key] = count_tokens(lines[key])
        return cost[key]

    # Per-part counts add up to at least the whole block's count, so summing them keeps us in budget.
    used = count_tokens(header) + count_tokens(footer)
    musts = [item for item in ranked if item.directive.severity == "MUST"][:GUARANTEED_MUST]
    chosen: list[Item] = list(musts)
    used += sum(cost_of(item) for item in chosen)
    omitted: list[dict[str, Any]] = []
    guaranteed = {id(item) for item in musts}
    for position, item in enumerate(ranked):
        if id(item) in guaranteed:
            continue
        reason = ""
        if position >= MIN_SHOWN and item.score < floors.get(item.index_name, 0.0):
            reason = "relevance"
        elif len(chosen) >= max_items:
            reason = "maxItems"
        elif used + cost_of(item) > token_budget:
            reason = "tokenBudget"
        if reason:
            omitted.append({"id": item.directive.id, "score": round(item.score, 3), "reason": reason})
            continue
        chosen.append(item)
        used += cost_of(item)
    rank_of = {id(item): pos for pos, item in enumerate(ranked)}
    shown = sorted(chosen, key=lambda it: (SEVERITIES.index(it.directive.severity), rank_of[id(it)]))
    body = "".join(lines[id(item)] for item in shown)
    block = f"{header}{body}{footer}"
    by_rank = sorted(chosen, key=lambda it: rank_of[id(it)])
    return Rendered(block, [citation(item, today) for item in by_rank], count_tokens(block), omitted, by_rank)
