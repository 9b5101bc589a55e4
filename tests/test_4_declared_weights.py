"""Issue 4: rules whose authors declared their topics rank by what they declared; imported rules by their words.

ruledex rule documents state their topics, authority and when-to-apply; rules imported from Cursor,
Copilot or AGENTS.md files have them inferred. The builder marks the first kind in ``rule_flags``
and the reader picks ``DECLARED_WEIGHTS`` for an index made mostly of them (docs/relevance.md).
"""

from __future__ import annotations

from pathlib import Path

from ruledex.builder.build import build
from ruledex.reader.evaluate import ruledex_ranking
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
from ruledex.reader.rank import DECLARED_RANKING, DECLARED_SHARE, DEFAULT_RANKING, DEFAULT_WEIGHTS, ranking_for

from .conftest import rule_doc, write_rules

CURSOR_MDC = """
---
description: React component rules for the web app
globs: src/**/*.tsx
alwaysApply: false
---
# React rules

## Components
- Always use function components with hooks.
- Keep components small and give every list item a stable key.
"""


def _index(tmp_path: Path, files: dict[str, str]) -> Path:
    out = tmp_path / "rules.ruledex"
    build(write_rules(tmp_path / "rules", files), out)
    return out


def test_the_index_knows_which_rules_declare_their_topics(tmp_path: Path) -> None:
    mixed = _index(
        tmp_path,
        {
            "api.md": rule_doc("## Endpoints\n\n- [MUST] Validate every request body.", id="api"),
            "react.mdc": CURSOR_MDC,
        },
    )
    with Index(mixed) as index:
        assert index.declared_share == 0.5  # the ruledex document declares, the Cursor file's topics are inferred
    assert ranking_for(1.0) is DECLARED_RANKING and ranking_for(DECLARED_SHARE) is DECLARED_RANKING
    assert ranking_for(0.0) is DEFAULT_RANKING and ranking_for(DECLARED_SHARE - 0.01) is DEFAULT_RANKING


def _weighted(answer: dict, name: str) -> list[float]:
    return [row[name] for row in answer["diagnostics"]["scores"]]


def test_declared_rules_rank_with_the_declared_weights_unless_weights_are_given(bundled_index: Path) -> None:
    task = "Add type hints to the reporting package"
    options = {"includeDiagnostics": True}
    with Index(bundled_index) as index:
        assert index.declared_share == 1.0
        own = query_directives(index, task, options=options)
        given = query_directives(index, task, options=options, weights=DEFAULT_WEIGHTS)
        picked = ruledex_ranking(own, index)[:3]
    # DECLARED_WEIGHTS leave the whole-document BM25 out and cap each signal at its own weight
    assert set(_weighted(own, "ruleLexical")) == {0.0} and max(_weighted(given, "ruleLexical")) > 0
    assert 0 < max(_weighted(own, "semanticSim")) <= DECLARED_RANKING.weights.semantic
    # what the rules declare leads: the rule for type checks is among the first three, as its example expects
    assert "code-quality.md" in picked


def test_imported_rules_keep_the_default_weights(tmp_path: Path) -> None:
    with Index(_index(tmp_path, {"react.mdc": CURSOR_MDC})) as index:
        assert index.declared_share == 0.0
        answer = query_directives(
            index, "Give the list items in the React table stable keys", options={"includeDiagnostics": True}
        )
    assert max(_weighted(answer, "semanticSim")) > 0 and max(_weighted(answer, "ruleLexical")) > 0


def test_a_detected_layer_filters_declared_rules_only_when_detection_is_nearly_certain(bundled_index: Path) -> None:
    task = "Write a Dockerfile for our FastAPI service"  # detected as 7-Deployment, confidence about 0.6
    with Index(bundled_index) as index:
        answer = query_directives(index, task)
        chosen = query_directives(index, task, options={"layer": "7-Deployment"})
        layers = [index.directive(index.directive_positions[c["id"]]).layers for c in chosen["citations"]]
    threshold = DECLARED_RANKING.strict_min_confidence
    assert DEFAULT_RANKING.strict_min_confidence < threshold
    assert answer["diagnostics"]["confidence"] < threshold
    assert any(f"below this index's {threshold:.2f}; used as a boost" in n for n in answer["diagnostics"]["notes"])
    assert any(c["sourcePath"] == "deployment.md" for c in answer["citations"])  # the guess did not filter it out
    # a layer the caller names still filters: only its directives and those for every layer remain
    assert layers and all("7-Deployment" in ls or "*" in ls for ls in layers)


def test_a_confident_guess_below_the_declared_threshold_keeps_other_layers_rules(bundled_index: Path) -> None:
    task = "Write integration tests for the orders API"  # 5-Tests at about 0.86: filtered under the default ranking
    with Index(bundled_index) as index:
        answer = query_directives(index, task)
        layers = {
            c["sourcePath"]: index.directive(index.directive_positions[c["id"]]).layers for c in answer["citations"]
        }
    confidence = answer["diagnostics"]["confidence"]
    assert DEFAULT_RANKING.strict_min_confidence <= confidence < DECLARED_RANKING.strict_min_confidence
    assert answer["diagnostics"]["detectedLayer"] == "5-Tests"
    assert "api-design.md" in layers and "5-Tests" not in layers["api-design.md"]  # the API rules still apply


def test_declared_rules_leave_out_directives_far_below_the_best_and_say_so(bundled_index: Path, tmp_path: Path) -> None:
    from ruledex.reader.render import MIN_SHOWN

    task = "Write a database migration for the invoices table"
    with Index(bundled_index) as index:
        answer = query_directives(index, task, options={"maxItems": 12, "tokenBudget": 8000})
    cut = [o for o in answer["diagnostics"]["omitted"] if o["reason"] == "relevance"]
    ranked = [c for c in answer["citations"] if not c["alwaysApply"]]  # core.md always applies: its own part
    best = max(c["score"] for c in ranked)
    assert cut and len(ranked) < 12  # room was left: the cut, not the budget, kept them out
    assert all(o["score"] < DECLARED_RANKING.relative_cut * best for o in cut)
    assert len(ranked) >= MIN_SHOWN
    with Index(_index(tmp_path, {"react.mdc": CURSOR_MDC})) as imported:  # imported rules keep what fits
        plain = query_directives(
            imported, "Give the list items in the React table stable keys", options={"maxItems": 12}
        )
    assert DEFAULT_RANKING.relative_cut == 0 and not any(
        o["reason"] == "relevance" for o in plain["diagnostics"]["omitted"]
    )


def test_render_cuts_below_the_minimum_but_keeps_the_first_ranked_and_the_guaranteed_musts() -> None:
    from ruledex.reader.records import DirectiveRecord, RuleRecord
    from ruledex.reader.render import MIN_SHOWN, Item, render

    rule = RuleRecord(id="r", title="R", path="r.md", layers=("*",), topics=("api",))
    scores = [10.0, 3.0, 2.0, 9.0, 1.0, 0.5]  # in rank order; a MUST last, far below the minimum
    severities = ["SHOULD", "SHOULD", "SHOULD", "SHOULD", "SHOULD", "MUST"]
    items = [
        Item(DirectiveRecord(id=f"r#d-{i}", rule=0, section=("S",), severity=sev, text=f"Do thing {i}."), rule, s)
        for i, (s, sev) in enumerate(zip(scores, severities, strict=True))
    ]
    out = render(items, header="", footer="", token_budget=8000, max_items=12, min_scores={"": 8.0})
    shown = [c["id"] for c in out.citations]
    assert shown[:MIN_SHOWN] == ["r#d-0", "r#d-1", "r#d-2"]  # the first three stay whatever they score
    assert "r#d-3" in shown and "r#d-5" in shown  # 9.0 clears the minimum; the only MUST is guaranteed
    assert out.omitted == [{"id": "r#d-4", "score": 1.0, "reason": "relevance"}]


def test_only_musts_within_max_items_are_guaranteed() -> None:
    """A MUST ranked far below the shown items is not pulled up to lead the block (MUST shows first)."""
    from ruledex.reader.records import DirectiveRecord, RuleRecord
    from ruledex.reader.render import Item, render

    rule = RuleRecord(id="r", title="R", path="r.md", layers=("*",), topics=("api",))
    severities = ["SHOULD", "MUST", "SHOULD", "SHOULD", "SHOULD", "MUST"]
    items = [
        Item(
            DirectiveRecord(id=f"r#d-{i}", rule=0, section=("S",), severity=sev, text=f"Do thing {i}."), rule, 10.0 - i
        )
        for i, sev in enumerate(severities)
    ]
    out = render(items, header="", footer="", token_budget=8000, max_items=4)
    assert [c["id"] for c in out.citations] == ["r#d-0", "r#d-1", "r#d-2", "r#d-3"]
    assert out.block.startswith("- **MUST** Do thing 1.")
    tight = render(items, header="", footer="", token_budget=1, max_items=4)
    assert [c["id"] for c in tight.citations] == ["r#d-1"], "within max_items, a MUST survives any budget"
