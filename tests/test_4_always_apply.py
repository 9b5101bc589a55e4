"""Rules that always apply are shown with every answer, after the ranked picks, within the budget.

An assistant given ruledex's block followed the project's rules less well than one given every
rule file, and most of the gap was the core rules, which say they apply to every task but were
shown only when nothing matched (``python -m bench.assistant``, docs/relevance.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ruledex.builder.build import build
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
from ruledex.reader.records import DirectiveRecord, RuleRecord
from ruledex.reader.render import Item, render

from .conftest import write_rules

PICKED = RuleRecord(id="api", title="HTTP API", path="api.md", layers=("2-Application",), topics=("api",))
CORE = RuleRecord(id="core", title="Core rules", path="core.md", layers=("*",), topics=(), always_apply=True)


def _item(rule: RuleRecord, n: int, severity: str = "MUST", words: int = 8, score: float = 0.0) -> Item:
    text = " ".join(["word"] * words)
    return Item(DirectiveRecord(f"{rule.id}#s-{n}", 0, ("S",), severity, text), rule, score)


def _render(ranked: list[Item], always: list[Item], budget: int = 900, max_items: int = 8):
    return render(ranked, header="## Rules\n", footer="", token_budget=budget, max_items=max_items, always=always)


def test_always_directives_follow_the_picks_without_counting_against_max_items() -> None:
    ranked = [_item(PICKED, n, score=10 - n) for n in range(1, 5)]
    always = [_item(CORE, 1), _item(CORE, 2, "SHOULD")]
    out = _render(ranked, always, max_items=3)
    picked, _, tail = out.block.partition("\n_Always: Core rules_\n")
    assert picked.count("- **") == 3 and tail.count("- **") == 2
    assert "_S_" not in tail, "always-apply lines carry no breadcrumb: their heading names the rule"
    assert [c["alwaysApply"] for c in out.citations] == [False] * 3 + [True] * 2
    assert {o["id"]: o["reason"] for o in out.omitted} == {"api#s-4": "maxItems"}


def test_an_always_directive_the_ranking_showed_is_not_repeated_and_one_it_left_out_is_shown() -> None:
    core_first, core_second = _item(CORE, 1, score=9.0), _item(CORE, 2, score=1.0)
    ranked = [core_first, *(_item(PICKED, n, score=8 - n) for n in range(1, 4)), core_second]
    out = _render(ranked, [_item(CORE, 1), _item(CORE, 2)], max_items=4)
    ids = [c["id"] for c in out.citations]
    assert ids.count("core#s-1") == 1 and ids[-1] == "core#s-2"
    assert out.citations[0]["alwaysApply"] is False, "ranked first, so cited as a pick"
    assert "core#s-2" not in {o["id"] for o in out.omitted}, "shown in the always part, so not left out"


def test_always_directives_that_do_not_fit_the_budget_are_listed_as_left_out() -> None:
    ranked = [_item(PICKED, 1, score=5.0)]
    always = [_item(CORE, n, words=40) for n in range(1, 6)]
    out = _render(ranked, always, budget=200)
    shown = [c["id"] for c in out.citations if c["alwaysApply"]]
    left = [o["id"] for o in out.omitted if o["reason"] == "tokenBudget"]
    assert shown and left and len(shown) + len(left) == 5
    assert out.tokens <= 200


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_rules(
        tmp_path_factory.mktemp("always") / "repo",
        {
            ".cursor/rules/house.mdc": "---\ndescription: House rules\nglobs: docs/**\nalwaysApply: true\n---\n"
            "- Always write user-facing text in British English.\n- You may use emoji in commit messages.\n",
            "rules/api.md": "# API\n\n- You must return 404 for unknown order ids from the orders endpoint.\n",
        },
    )
    return build(root, root.parent / "always.ruledex").path


def test_every_answer_carries_the_always_rule_whatever_its_globs_and_severity_filter_applies(
    index_path: Path,
) -> None:
    with Index(index_path) as index:
        plain = query_directives(index, "Return 404 for an unknown order id")
        editing = query_directives(index, "Return 404 for an unknown order id", options={"files": ["src/api.py"]})
        musts = query_directives(index, "Return 404 for an unknown order id", options={"severityFilter": ["MUST"]})
    for answer in (plain, editing):
        assert [c["sourcePath"] for c in answer["citations"] if c["alwaysApply"]] == [".cursor/rules/house.mdc"] * 2
        assert "\n_Always: House_\n- **MUST** Always write" in answer["context_block"]
    assert [c["severity"] for c in musts["citations"] if c["alwaysApply"]] == ["MUST"]


def test_check_examples_passes_a_rule_that_always_applies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from ruledex.reader.cli import main

    from .conftest import rule_doc

    body = "## Migrations\n\n- [MUST] Make every database schema migration reversible with a tested down step."
    db = rule_doc(body, id="db").replace("examples: [Add an endpoint, Change an endpoint]", "examples: [Paint it]")
    core = rule_doc(
        "## Scope\n\n- [MUST] Keep each change focused on the task.", id="core", extra="always_apply: true\n"
    )
    rules = write_rules(tmp_path / "rules", {"db.md": db, "core.md": core.replace("Add an endpoint", "Paint it")})
    assert main(["check", str(rules), "--examples", "--json"]) == 0
    misses = [f["path"] for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "example-miss"]
    assert misses == ["db.md"], "the always-apply rule is in every answer, so its examples pass"


def test_check_warns_when_a_rule_that_always_applies_is_long(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from ruledex.builder.lint import ALWAYS_APPLY_SHARE
    from ruledex.reader.cli import main
    from ruledex.reader.options import QueryOptions

    from .conftest import rule_doc

    def always(n: int) -> str:
        body = "\n".join(
            f"- [MUST] Keep change number {i} focused on the task and tested before review." for i in range(n)
        )
        return rule_doc(f"## Scope\n\n{body}", id="core", extra="always_apply: true\n")

    limit = int(ALWAYS_APPLY_SHARE * QueryOptions().tokenBudget)
    for n, warned in ((3, False), (40, True)):
        rules = write_rules(tmp_path / f"rules{n}", {"core.md": always(n)})
        assert main(["check", str(rules), "--json"]) == 0  # a warning, not an error
        findings = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "always-long"]
        assert bool(findings) is warned
        if warned:
            assert f"more than {limit}" in findings[0]["message"] and findings[0]["line"] > 1
