"""Layered indexes: organisation, team and project rules answered at once, with their origin."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ruledex.builder.build import build
from ruledex.reader.cli import main
from ruledex.reader.index import Index
from ruledex.reader.query import index_names, query_indexes
from ruledex.reader.tools import search_layered

from .conftest import rule_doc, write_rules


def _index(folder: Path, name: str, doc: str) -> Path:
    return build(write_rules(folder / "rules", {f"{name}.md": doc}), folder / f"{name}.ruledex", name=name).path


def test_project_rule_outranks_global_rule_and_citations_name_their_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    org = _index(
        tmp_path / "org",
        "org",
        rule_doc(
            "## Pagination\n\n- [MUST] Paginate every list endpoint with offset and limit parameters.", id="org-api"
        ),
    )
    project = _index(
        tmp_path / "project",
        "project",
        rule_doc(
            "## Pagination\n\n- [MUST] Paginate every list endpoint with opaque cursor parameters.",
            id="project-api",
            extra="scope: project\n",
        ),
    )
    with Index(org) as a, Index(project) as b:
        result = query_indexes([a, b], "Add pagination to the list endpoint")
    cited = [(c["index"], c["rule"]) for c in result["citations"]]
    assert cited[0] == ("project", "project-api")
    assert ("org", "org-api") in cited
    assert "project" in result["context_block"] and "org" in result["context_block"]
    assert main(["query", "Add pagination to the list endpoint", "--index", str(org), "--index", str(project)]) == 0
    out = capsys.readouterr().out
    assert out.index("opaque cursor") < out.index("offset and limit")


def test_layered_block_and_score_rows_name_the_index_of_a_shared_id(tmp_path: Path) -> None:
    """Two layers each with their own ``api.md``: one id, two directives; the block and --explain tell them apart."""
    org_doc = rule_doc("## Errors\n\n- [MUST] Return errors as problem details.", id="api")
    project_doc = rule_doc(
        "## Errors\n\n- [MUST] Return errors as the legacy envelope.", id="api", extra="scope: project\n"
    )
    org, project = (
        build(write_rules(tmp_path / name, {"api.md": doc}), tmp_path / f"{name}.ruledex", name=name).path
        for name, doc in (("org", org_doc), ("project", project_doc))
    )
    with Index(org) as a, Index(project) as b:
        result = query_indexes([a, b], "Change the error format of the endpoint", options={"includeDiagnostics": True})
    block = result["context_block"]
    assert "`[api#errors-1]` _(project)_" in block and "`[api#errors-1]` _(org)_" in block
    rows = {(row["index"], row["id"]): row for row in result["diagnostics"]["scores"]}
    for c in result["citations"]:
        row = rows[(c["index"], c["id"])]
        assert row["scopeBoost"] == (2.0 if c["index"] == "project" else 0.0)
        assert row["total"] == c["score"], "the parts add up to the citation's score, scope boost included"


def test_single_index_citations_carry_no_index_field(index: Index) -> None:
    result = query_indexes([index], "Add user registration API endpoint")
    assert all("index" not in c for c in result["citations"])


def test_layered_index_names_are_distinct_when_build_names_clash(tmp_path: Path) -> None:
    """Every build is called 'rules' unless named: the names fall back to file stems, then numbers."""
    doc = rule_doc("## Pagination\n\n- [MUST] Paginate every list endpoint with opaque cursor parameters.")
    rules = write_rules(tmp_path / "rules", {"sample.md": doc})
    org = build(rules, tmp_path / "org.ruledex").path
    team = build(rules, tmp_path / "team" / "org.ruledex").path
    named = build(rules, tmp_path / "named.ruledex", name="project").path
    with Index(org) as a, Index(team) as b, Index(named) as c:
        assert a.manifest["name"] == b.manifest["name"] == "rules"
        assert index_names([a, c]) == ["rules", "project"], "distinct build names are kept"
        assert index_names([a, b, c]) == ["org", "org-2", "project"]
        assert index_names([a]) == [""]


def test_overlapping_indexes_show_each_directive_once(index: Index, bundled_index: Path, tmp_path: Path) -> None:
    """An organisation's and a team's index sharing rules (core.md): one copy of each directive."""
    copy = tmp_path / "team.ruledex"
    shutil.copyfile(bundled_index, copy)
    task = "Add user registration API endpoint"
    roomy = {"tokenBudget": 3000}  # the layered block's lines also name their index: room for both to show all
    single = query_indexes([index], task, options=roomy)
    with Index(copy) as team:
        layered = query_indexes([index, team], task, options=roomy)
    ids = [c["id"] for c in layered["citations"]]
    assert len(ids) == len(set(ids)), ids
    assert ids == [c["id"] for c in single["citations"]]
    assert layered["context_block"].count("[core#safety-1]") == 1


def test_search_layered_keeps_the_best_copy_of_a_shared_directive() -> None:
    entry = {"id": "core#safety-1", "content": "Never commit secrets.", "score": 0.9}
    other = {"id": "api#x-1", "content": "Paginate.", "score": 0.5}
    merged = search_layered(
        [("org", {"results": [entry, other], "totalMatches": 2}), ("team", {"results": [entry], "totalMatches": 1})],
        limit=5,
    )
    assert [(e["index"], e["id"]) for e in merged["results"]] == [("org", "core#safety-1"), ("org", "api#x-1")]
    assert merged["totalMatches"] == 2


@pytest.mark.parametrize("command", [["query", "Add an endpoint"], ["serve"]])
def test_the_same_index_given_twice_is_refused(
    command: list[str], bundled_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    again = bundled_index.parent / ".." / bundled_index.parent.name / bundled_index.name
    assert main([*command, "--index", str(bundled_index), "--index", str(again)]) == 2
    err = capsys.readouterr().err
    assert "--index" in err and "given twice" in err and str(bundled_index) in err
