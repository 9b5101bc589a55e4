"""The bundled rule set is complete and its example tasks find their own rule."""

from __future__ import annotations

import json

import pytest

from ruledex.reader.cli import main
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
from ruledex.reader.vocab import LAYERS

from .conftest import RULES

REQUIRED_TOPICS = {
    "security", "testing", "performance", "api", "database", "frontend",
    "backend", "devops", "documentation", "accessibility", "architecture", "quality",
}  # fmt: skip


def test_size_and_coverage(index: Index) -> None:
    rules = index.rules()
    assert len(rules) >= 12
    assert index.n_directives >= 150
    assert {layer for r in rules for layer in r.layers} == set(LAYERS)
    assert {t for r in rules for t in r.topics} >= REQUIRED_TOPICS
    for rule in rules:
        assert rule.authoritative_for, rule.id
        assert rule.when_to_apply, rule.id
        assert len(rule.examples) >= 2, rule.id
    assert any("*" in r.authoritative_for for r in rules), "a core rule exists"


def test_directives_are_concrete(index: Index) -> None:
    for i in range(index.n_directives):
        words = index.directive(i).text.split()
        assert 6 <= len(words) <= 60, index.directive(i).id


def test_example_tasks_mostly_retrieve_their_rule(index: Index) -> None:
    """A floor, not the target: issue 4's `ruledex eval` measures and raises it."""
    hits, total = 0, 0
    for number, rule in enumerate(index.rules()):
        for k, task in enumerate(rule.examples):
            total += 1
            with index.leaving_out_example(index.example_row(number, k)):  # the index matches examples too
                cited = [c["rule"] for c in query_directives(index, task)["citations"]]
            hits += rule.id in cited
    assert hits / total >= 0.8, f"{hits}/{total}"


def test_bundled_rules_pass_the_strict_linter(capsys: pytest.CaptureFixture[str]) -> None:
    """What a team copying rules/ would run in CI: every example retrieves its rule in the top 3."""
    code = main(["check", str(RULES), "--examples", "--strict", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert code == 0, [f["message"] for f in findings if f["severity"] == "error"]
