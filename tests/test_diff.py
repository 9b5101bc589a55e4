"""`ruledex diff`: what a reviewer of a rules pull request needs to see."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ruledex.builder.build import build
from ruledex.reader.cli import main
from ruledex.reader.diff import _label

from .conftest import rule_doc, write_rules

BEFORE = """
## Input
- [SHOULD] Validate request bodies against a schema.
- [MUST] Reject unknown fields with 400.
- [MAY] Log rejected payloads without personal data.

## Output
- [MUST] Use one error format across the API.
"""


def _index(folder: Path, body: str, extra: dict[str, str] | None = None) -> Path:
    files = {"api.md": rule_doc(body, id="api")} | (extra or {})
    rules = write_rules(folder / "rules", files)
    return build(rules, folder / "x.ruledex").path


def test_diff_reports_every_kind_of_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _index(tmp_path / "a", BEFORE)
    after = (
        BEFORE.replace("[SHOULD] Validate request bodies", "[MUST] Validate request bodies")
        .replace("Reject unknown fields with 400.", "Reject unknown or duplicate fields with 400.")
        .replace("- [MAY] Log rejected payloads without personal data.\n", "")
        .replace("## Output\n", "## Output\n- [SHOULD] Include a request id in every error.\n")
    )
    new = _index(tmp_path / "b", after, {"ops.md": rule_doc("## Run\n\n- [MUST] Pin base images by digest.", id="ops")})
    assert main(["diff", str(old), str(new), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    d = result["directives"]
    assert [x["id"] for x in d["severity"]] == ["api#input-1"]
    assert d["severity"][0]["old"] == "SHOULD" and d["severity"][0]["new"] == "MUST"
    assert [x["id"] for x in d["reworded"]] == ["api#input-2"]
    assert [x["id"] for x in d["removed"]] == ["api#input-3"]
    assert {x["id"] for x in d["added"]} == {"api#output-1", "ops#run-1"}
    assert d["moved"] == [{"from": "api#output-1", "to": "api#output-2"}]
    assert result["rules"]["added"] == ["ops"]
    assert main(["diff", str(old), str(new)]) == 0
    markdown = capsys.readouterr().out
    assert markdown.startswith("## Rules diff: ")
    for heading in ("### Added", "### Removed", "### Severity changed", "### Reworded", "### Moved"):
        assert heading in markdown
    assert "SHOULD → **MUST**" in markdown


def test_identical_indexes_have_no_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _index(tmp_path / "a", BEFORE)
    assert main(["diff", str(old), str(old), "--exit-code"]) == 0
    assert "No rule or directive changed." in capsys.readouterr().out
    new = _index(tmp_path / "b", BEFORE.replace("[MAY]", "[SHOULD]"))
    assert main(["diff", str(old), str(new), "--exit-code"]) == 1


def test_a_rule_field_that_changes_answers_is_a_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Example tasks (format 1.3), globs and technologies rank rules: a pull request changing only them is reviewed."""
    old = _index(tmp_path / "a", BEFORE)
    body = rule_doc(BEFORE, id="api").replace("Change an endpoint]", "Rename an endpoint]")
    new = build(write_rules(tmp_path / "b" / "rules", {"api.md": body}), tmp_path / "b" / "x.ruledex").path
    assert main(["diff", str(old), str(new), "--exit-code"]) == 1
    assert "- `api`: examples changed" in capsys.readouterr().out


def test_a_missing_file_or_a_folder_is_named_as_such_not_only_as_a_bad_git_ref(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a repository, `diff old.ruledex new` used to answer only "not inside a git repository"."""
    old = _index(tmp_path / "a", BEFORE)
    (tmp_path / "folder").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["diff", str(old), "renamed-index"]) == 1
    err = capsys.readouterr().err
    assert "renamed-index: no such index file, and not a git ref either (.: not inside a git repository" in err
    assert main(["diff", str(old), "folder", "--json"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "folder: is a folder; diff takes two index files or two git refs" in err


def test_the_heading_names_an_untagged_builds_commit_once() -> None:
    """A build from an untagged ref is versioned by its short commit: 'rules f045d3312244 @ f045d3312244' said it twice."""
    commit = "f045d3312244a1b2c3d4e5f6a7b8c9d0e1f2a3b4"
    untagged = SimpleNamespace(manifest={"name": "rules", "version": commit[:12], "source": {"commit": commit}})
    tagged = SimpleNamespace(manifest={"name": "rules", "version": "v1.0.0", "source": {"commit": commit}})
    assert _label(untagged) == "rules f045d3312244"
    assert _label(tagged) == "rules v1.0.0 @ f045d3312244"
