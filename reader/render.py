"""Format chosen directives as a compact markdown block under a token budget, with citations.

Pure: takes ranked items, returns the block, the citations and what was left out and why. The
first :data:`GUARANTEED_MUST` MUST directives among the first ``max_items`` ranked are always
included, even past the budget (a MUST ranked far below, say a TensorFlow rule for a Django task,
is not pulled up to lead the block); every other item is added in rank order while the block stays
within budget and ``max_items``. Items
are shown MUST first, then SHOULD, then MAY, each group in rank order; citations list the same items
in rank order (most relevant first), which is what a program consuming them wants. Directives of
rules past their ``expires`` date are marked stale in the block and in their citation.

Directives of rules that always apply (``always_apply``, Cursor's ``alwaysApply``) that the ranking
did not show follow in a section of their own, one line each without breadcrumbs, while the budget
lasts: they do not count against ``max_items`` and no relevance cut removes them. Their citations
come after the ranked ones, marked ``alwaysApply``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .records import DirectiveRecord, RuleRecord
from .text import count_tokens, tokens_for
from .vocab import SEVERITIES

GUARANTEED_MUST = 3
MAX_SHOWN_WORDS = 150
"""A directive longer than this is shortened in the block (its rule keeps the whole text): one
pasted essay must not take a whole token budget, guaranteed MUST or not. The bundled rules' longest
directive has 37 words, the public Cursor corpus's 60."""
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
    words = text.split() if len(text) > 2 * MAX_SHOWN_WORDS else ()  # shorter text cannot hold more words
    if len(words) > MAX_SHOWN_WORDS:
        text = " ".join(words[:MAX_SHOWN_WORDS]) + f" … _(shortened from {len(words)} words: see the rule)_"
    where = f" — _{breadcrumb(item)}_" if breadcrumbs else ""
    stale = f" _(stale: review was due {item.rule.expires})_" if today and is_stale(item, today) else ""
    # layered indexes can hold different directives under one id (each has its own api.md): name the index
    origin = f" _({item.index_name})_" if item.index_name else ""
    line = f"- **{d.severity}** {text}{where} `[{d.id}]`{origin}{stale}"
    if rationale and d.rationale:
        line += f"\n  Why: {d.rationale}"
    return line + "\n"


def always_heading(rule: RuleRecord) -> str:
    """The line that opens an always-apply rule's section of the block."""
    return f"\n_Always: {rule.title}_\n"


def citation(item: Item, today: str = "", always: bool = False) -> dict[str, Any]:
    """The structured citation of one directive (``always``: shown because its rule always applies)."""
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
        "alwaysApply": always,
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
    always: list[Item] | None = None,
) -> Rendered:
    """Choose and format items under the budget; never drops anything without saying so.

    ``min_scores`` (index name -> score) leaves out items that score below their index's minimum,
    past the first :data:`MIN_SHOWN` ranked items and the guaranteed MUST directives. ``always``
    holds the directives of always-apply rules, in the order to show them; those the ranked part
    did not show follow it while the budget lasts.
    """
    floors = min_scores or {}
    # items are kept by their position in ``ranked`` (its order is the rank order)
    lines: dict[int, str] = {}
    cost: dict[int, int] = {}
    n_words: dict[int, int] = {}

    def cost_of(position: int) -> int:  # formatted on demand: items past maxItems never are
        if position not in cost:
            line = lines[position] = item_lines(
                ranked[position], breadcrumbs=breadcrumbs, rationale=rationale, today=today
            )
            n_words[position] = len(line.split())
            cost[position] = tokens_for(len(line), n_words[position])  # count_tokens(line), split once
        return cost[position]

    # Per-part counts add up to at least the whole block's count, so summing them keeps us in budget.
    header_words, footer_words = len(header.split()), len(footer.split())
    used = tokens_for(len(header), header_words) + tokens_for(len(footer), footer_words)
    musts = [pos for pos, item in enumerate(ranked[:max_items]) if item.directive.severity == "MUST"][:GUARANTEED_MUST]
    chosen: list[int] = list(musts)
    used += sum(cost_of(pos) for pos in chosen)
    omitted: list[dict[str, Any]] = []
    guaranteed = set(musts)
    for position, item in enumerate(ranked):
        if position in guaranteed:
            continue
        reason = ""
        if position >= MIN_SHOWN and item.score < floors.get(item.index_name, 0.0):
            reason = "relevance"
        elif len(chosen) >= max_items:
            reason = "maxItems"
        elif used + cost_of(position) > token_budget:
            reason = "tokenBudget"
        if reason:
            omitted.append({"id": item.directive.id, "score": round(item.score, 3), "reason": reason})
            continue
        chosen.append(position)
        used += cost_of(position)
    chosen.sort()
    by_rank = [ranked[pos] for pos in chosen]
    # MUST first, then SHOULD, then MAY; the sort is stable, so each group stays in rank order
    shown = sorted(chosen, key=lambda pos: SEVERITIES.index(ranked[pos].directive.severity))
    extra, extra_body, extra_words, omitted = _always_part(
        always or [], by_rank, omitted, used, token_budget, rationale, today
    )
    body = "".join([lines[pos] for pos in shown]) + extra_body
    block = f"{header}{body}{footer}"
    # Every body part ends with a newline: after a header that ends in whitespace (or none), no word
    # spans two parts, so the block's words are the parts' words (its characters always add up).
    if not header or header[-1].isspace():
        words = header_words + sum([n_words[pos] for pos in shown]) + extra_words + footer_words
        tokens = tokens_for(len(block), words)
    else:
        tokens = count_tokens(block)
    citations = [citation(item, today) for item in by_rank] + [citation(item, today, always=True) for item in extra]
    return Rendered(block, citations, tokens, omitted, by_rank + extra)


def _always_part(
    always: list[Item],
    chosen: list[Item],
    omitted: list[dict[str, Any]],
    used: int,
    token_budget: int,
    rationale: bool,
    today: str,
) -> tuple[list[Item], str, int, list[dict[str, Any]]]:
    """Always-apply directives the ranked part did not show, under the budget: (items, markdown, its words, omitted).

    An always-apply directive the ranked part left out is shown here instead, so its ``omitted``
    entry goes; one that does not fit is listed in ``omitted`` with reason ``tokenBudget``.
    """
    if not always:  # most indexes: nothing to add, nothing to copy
        return [], "", 0, omitted
    shown = {_key(it) for it in chosen}
    extra: list[Item] = []
    parts: list[str] = []
    opened: set[tuple[str, str]] = set()
    left_out: list[dict[str, Any]] = []
    n_words = 0
    for item in always:
        if _key(item) in shown:
            continue
        line = item_lines(item, breadcrumbs=False, rationale=rationale, today=today)
        rule_key = (item.index_name, item.rule.id)
        heading = "" if rule_key in opened else always_heading(item.rule)
        heading_words, line_words = len(heading.split()), len(line.split())
        cost = tokens_for(len(heading), heading_words) + tokens_for(len(line), line_words)
        if used + cost > token_budget:
            left_out.append({"id": item.directive.id, "score": round(item.score, 3), "reason": "tokenBudget"})
            continue
        opened.add(rule_key)
        parts.append(heading + line)
        extra.append(item)
        shown.add(_key(item))
        used += cost
        n_words += heading_words + line_words  # the heading ends with a newline
    settled = {it.directive.id for it in extra} | {o["id"] for o in left_out}  # shown here, or out for the budget
    return extra, "".join(parts), n_words, [o for o in omitted if o["id"] not in settled] + left_out


def _key(item: Item) -> tuple[str, str]:
    """One directive, whichever layered index's copy (see :func:`~ruledex.reader.query.unique_directives`)."""
    return item.directive.id, item.directive.text
