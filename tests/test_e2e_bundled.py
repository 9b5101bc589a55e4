"""End to end on the bundled rules: the answers a user relies on."""

from __future__ import annotations

from pathlib import Path

from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
from ruledex.reader.text import count_tokens


def test_registration_endpoint_gets_input_validation_must(index: Index) -> None:
    result = query_directives(index, "Add user registration API endpoint")
    ids = [c["id"] for c in result["citations"]]
    assert "security#input-validation-1" in ids
    cited = next(c for c in result["citations"] if c["id"] == "security#input-validation-1")
    assert cited["severity"] == "MUST"
    assert cited["sourcePath"] == "security.md"
    assert cited["section"] == "Input validation"
    assert "[security#input-validation-1]" in result["context_block"]
    assert result["diagnostics"]["topics"][0] == "api"
    assert result["citations"][0]["rule"] == "security"  # named in the header or not, security work leads
    assert result["diagnostics"]["detectedLayer"] == "2-Application"


def test_login_button_is_presentation(index: Index) -> None:
    result = query_directives(index, "Add a login button to the header")
    assert result["diagnostics"]["detectedLayer"] == "1-Presentation"
    assert any(c["rule"] == "frontend" for c in result["citations"])


def test_database_migration_ranks_persistence_first(index: Index) -> None:
    result = query_directives(index, "Write a database migration that adds a non-null column to the orders table")
    assert result["diagnostics"]["detectedLayer"] == "4-Persistence"
    first = result["citations"][0]
    assert first["rule"] == "database"
    assert first["severity"] == "MUST"
    # strictLayer (default) keeps only directives of the detected layer or of every layer
    for c in result["citations"]:
        d = index.directive(next(i for i in range(index.n_directives) if index.directive(i).id == c["id"]))
        assert "4-Persistence" in d.layers or "*" in d.layers


def test_must_directives_are_shown_first_and_citations_are_in_rank_order(index: Index) -> None:
    result = query_directives(index, "Add pagination to the orders list endpoint")
    picked, _, always = result["context_block"].partition("\n_Always: ")  # core.md always applies: its own part
    shown = [line.split("**")[1] for line in picked.splitlines() if line.startswith("- **")]
    assert shown == sorted(shown, key=["MUST", "SHOULD", "MAY"].index)
    assert len(shown) == sum(not c["alwaysApply"] for c in result["citations"])
    assert always.startswith("Core rules for every change_") and all(
        c["rule"] == "core" for c in result["citations"] if c["alwaysApply"]
    )
    ids_in_block = [line.rsplit("`[", 1)[1].rstrip("]`") for line in picked.splitlines() if line.startswith("- **")]
    ranked = [c for c in result["citations"] if not c["alwaysApply"]]
    assert sorted(ids_in_block) == sorted(c["id"] for c in ranked)
    assert ids_in_block != [c["id"] for c in ranked] or len(set(shown)) == 1 or shown == [c["severity"] for c in ranked]
    always_ids = [line.rsplit("`[", 1)[1].rstrip("]`") for line in always.splitlines() if line.startswith("- **")]
    assert always_ids == [c["id"] for c in result["citations"][len(ranked) :]]  # after the ranked citations


def test_token_budget_is_respected_except_guaranteed_musts(index: Index) -> None:
    tasks = [
        "Add user registration API endpoint",
        "Write a database migration for the invoices table",
        "Set up the GitHub Actions deploy pipeline with Docker",
        "Improve the README with setup instructions",
    ]
    for task in tasks:
        result = query_directives(index, task, options={"tokenBudget": 300})
        block = result["context_block"]
        assert result["diagnostics"]["tokens"] == count_tokens(block)
        if count_tokens(block) > 300:
            # only allowed when the guaranteed top MUST items alone overflow: then nothing else is added
            assert all(c["severity"] == "MUST" for c in result["citations"])
            assert len(result["citations"]) <= 3
        omitted = result["diagnostics"]["omitted"]
        assert all(o["reason"] in {"tokenBudget", "maxItems", "relevance"} for o in omitted)


def test_budget_cut_is_reported_not_silent(index: Index) -> None:
    small = query_directives(index, "Add user registration API endpoint", options={"tokenBudget": 150, "maxItems": 12})
    large = query_directives(index, "Add user registration API endpoint", options={"tokenBudget": 4000, "maxItems": 12})
    assert len(small["citations"]) < len(large["citations"])
    left_out = {o["id"] for o in small["diagnostics"]["omitted"]}
    shown = {c["id"] for c in small["citations"]}
    assert {c["id"] for c in large["citations"]} <= left_out | shown


def test_max_items_is_clamped(index: Index) -> None:
    def ranked(max_items: int) -> int:  # maxItems counts the picks, not the rules that always apply
        citations = query_directives(index, "Add user registration API endpoint", options={"maxItems": max_items})
        return sum(not c["alwaysApply"] for c in citations["citations"])

    assert ranked(50) <= 12
    assert ranked(1) >= 3


def test_same_query_same_output(index: Index) -> None:
    a = query_directives(index, "Refactor the payment service and add tests")
    b = query_directives(index, "Refactor the payment service and add tests")
    assert a["context_block"] == b["context_block"]
    assert a["citations"] == b["citations"]


def test_no_match_answers_with_core_rules(index: Index) -> None:
    result = query_directives(index, "zzqx flurble wibble")
    assert result["citations"], "core rules are shown when nothing matches"
    assert all(c["rule"] == "core" for c in result["citations"])
    assert any("no specific match" in note for note in result["diagnostics"]["notes"])


def test_no_match_and_no_core_rules_says_so_in_the_header(tmp_path: Path) -> None:
    from ruledex.builder.build import build

    from .conftest import rule_doc, write_rules

    rules = write_rules(tmp_path / "rules", {"api.md": rule_doc("- [MUST] Version every public endpoint under /v1.")})
    with Index(build(rules, tmp_path / "s.ruledex").path) as idx:
        result = query_directives(idx, "zzqx flurble wibble")
    assert not result["citations"]
    assert "no rule of this index matches the task" in result["context_block"]
    assert "core rules" not in result["context_block"], "no header promising core rules that never come"
    assert any("has no core rules" in note for note in result["diagnostics"]["notes"])


def test_severity_filter_and_layer_override(index: Index) -> None:
    result = query_directives(
        index, "Add user registration API endpoint", options={"severityFilter": ["SHOULD"], "layer": "4-Persistence"}
    )
    assert result["diagnostics"]["detectedLayer"] == "4-Persistence"
    assert result["citations"]
    assert {c["severity"] for c in result["citations"]} == {"SHOULD"}


def test_empty_rules_folder_builds_an_empty_index(tmp_path: Path) -> None:
    from ruledex.builder.build import build

    (tmp_path / "rules").mkdir()
    result = build(tmp_path / "rules", tmp_path / "empty.ruledex")
    assert result.directives == 0
    with Index(result.path) as empty:
        answer = query_directives(empty, "Add user registration API endpoint")
    assert answer["citations"] == []
    assert "index is empty" in answer["diagnostics"]["notes"][0]
    assert "empty" in answer["context_block"]


def test_directives_of_expired_rules_are_marked_stale(tmp_path: Path) -> None:
    from ruledex.builder.build import build

    from .conftest import rule_doc, write_rules

    rules = write_rules(
        tmp_path / "rules",
        {
            "old.md": rule_doc(
                "## S\n\n- [MUST] Paginate every list endpoint with a maximum page size.",
                id="old",
                extra="expires: 2020-01-01\n",
            ),
            "new.md": rule_doc(
                "## S\n\n- [MUST] Version every public endpoint in the URL path.",
                id="new",
                extra="expires: 2999-01-01\n",
            ),
        },
    )
    with Index(build(rules, tmp_path / "s.ruledex").path) as idx:
        result = query_directives(idx, "Add a paginated list endpoint with versioning", options={"strictLayer": False})
    stale = {c["rule"]: c["stale"] for c in result["citations"]}
    assert stale == {"old": True, "new": False}
    assert "_(stale: review was due 2020-01-01)_" in result["context_block"]
    assert any("past their review date" in n for n in result["diagnostics"]["notes"])


def test_a_task_the_rules_know_nothing_of_is_no_match(index: Index, tmp_path: Path) -> None:
    """No word in common, no layer, no topic: the directives closest by meaning alone are noise.

    'zzzz qqqq' is 0.5 in cosine from some directives (above the semantic floor): it returned the
    N+1-query rules on the bundled index, and an unrelated SHOULD, with no note, without core rules.
    """
    import shutil

    from ruledex.builder.build import build

    from .conftest import RULES

    for task in ("zzzz qqqq", "asdf"):
        result = query_directives(index, task)
        assert {c["rule"] for c in result["citations"]} == {"core"}, task
        assert any("no specific match" in note for note in result["diagnostics"]["notes"])
    (tmp_path / "rules").mkdir()
    shutil.copyfile(RULES / "api-design.md", tmp_path / "rules" / "api-design.md")
    with Index(build(tmp_path / "rules", tmp_path / "nocore.ruledex").path) as nocore:
        result = query_directives(nocore, "zzzz qqqq")
        assert not result["citations"] and "no rule of this index matches the task" in result["context_block"]
        assert any("no specific match" in note for note in result["diagnostics"]["notes"])
        assert query_directives(nocore, "Add pagination to the orders endpoint")["citations"], "real tasks still match"
