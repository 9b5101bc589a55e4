"""Layered indexes: organisation, team and project rules answered at once, with their origin."""

from __future__ import annotations

from pathlib import Path

import pytest

from ruledex.builder.build import build
from ruledex.reader.cli import main
from ruledex.reader.index import Index
from ruledex.reader.query import query_indexes

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


def test_single_index_citations_carry_no_index_field(index: Index) -> None:
    result = query_indexes([index], "Add user registration API endpoint")
    assert all("index" not in c for c in result["citations"])
