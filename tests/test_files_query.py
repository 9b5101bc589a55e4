"""File-aware queries: rules tied to the files being edited rank first; alwaysApply rules are always in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruledex.builder.build import build
from ruledex.reader.cli import main
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives

from .conftest import write_rules

FILES = {
    ".cursor/rules/react.mdc": """---
description: React component conventions
globs: src/components/**/*.tsx
alwaysApply: false
---
- Always write function components with typed props.
- Never mutate props or state directly.
""",
    ".github/instructions/migrations.instructions.md": """---
applyTo: "db/migrations/**/*.sql"
---
- Always make every schema change reversible with a down migration.
- Never rename a column in one step; add, backfill, then drop.
""",
    ".cursor/rules/house.mdc": """---
description: House rules
alwaysApply: true
---
- Always answer in British English spelling in user-facing text.
""",
    "rules/naming.md": """# Naming

- You should name boolean variables as questions, like isReady or hasAccess.
""",
}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_rules(tmp_path_factory.mktemp("mixed") / "repo", FILES)
    return build(root, root.parent / "mixed.ruledex").path


def test_globs_and_always_apply_are_kept(mixed: Path) -> None:
    with Index(mixed) as index:
        rules = {r.path: r for r in index.rules()}
        # the per-rule flags table (what queries read) agrees with the records
        assert index.always_apply_rules == {i for i, r in enumerate(index.rules()) if r.always_apply}
        assert set(index.glob_rules) == {i for i, r in enumerate(index.rules()) if r.globs}
    assert rules[".cursor/rules/react.mdc"].globs == ("src/components/**/*.tsx",)
    assert rules[".github/instructions/migrations.instructions.md"].globs == ("db/migrations/**/*.sql",)
    assert rules[".cursor/rules/house.mdc"].always_apply is True


def test_edited_file_pulls_its_rule_first(mixed: Path) -> None:
    task = "Fix the bug in this file"  # the words name no rule: the edited file decides
    with Index(mixed) as index:
        plain = query_directives(index, task)
        with_sql = query_directives(index, task, options={"files": ["db/migrations/0042_status.sql"]})
        with_tsx = query_directives(
            index, task, options={"files": ["src/components/orders/OrderCard.tsx"], "includeDiagnostics": True}
        )
    assert with_sql["citations"][0]["sourcePath"] == ".github/instructions/migrations.instructions.md"
    assert with_tsx["citations"][0]["sourcePath"] == ".cursor/rules/react.mdc"
    assert with_tsx["diagnostics"]["scores"][0]["fileMatch"] > 0
    assert not any(c["sourcePath"].startswith(".cursor/rules/react") for c in plain["citations"])
    for answer in (plain, with_sql, with_tsx):
        assert any(c["sourcePath"] == ".cursor/rules/house.mdc" for c in answer["citations"]), (
            "alwaysApply is always in"
        )


def test_rule_scoped_to_other_files_ranks_lower_but_stays(mixed: Path) -> None:
    """Editing a .tsx file demotes the migration rule; a task about columns still gets it."""
    task = "Change this to handle the new status field"
    options = {"includeDiagnostics": True, "maxItems": 12}
    with Index(mixed) as index:
        plain = query_directives(index, task, options=options)
        with_tsx = query_directives(index, task, options={**options, "files": ["src/components/OrderCard.tsx"]})
    fit = {s["id"].split("#")[0]: s["fileMatch"] for s in with_tsx["diagnostics"]["scores"]}
    assert fit["react"] > fit["migrations"] == 0.0, "tied rule first, the rule scoped to other files last"
    assert all(s["fileMatch"] == 0.0 for s in plain["diagnostics"]["scores"]), "no file given: no file signal"
    cited = [c["sourcePath"] for c in with_tsx["citations"]]
    assert ".github/instructions/migrations.instructions.md" in cited, "still a candidate: the words ask for it"
    assert ".cursor/rules/react.mdc" in cited and not any("react" in c["sourcePath"] for c in plain["citations"])


def test_files_option_is_validated_and_reported(mixed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Index(mixed) as index, pytest.raises(ValueError, match=r"options\.files"):
        query_directives(index, "x", options={"files": [3]})
    argv = ["query", "Change the status handling", "--index", str(mixed), "--files", "db/migrations/1.sql", "--json"]
    assert main(argv) == 0
    notes = json.loads(capsys.readouterr().out)["diagnostics"]["notes"]
    assert any("rules tied to them: migrations" in n for n in notes)


def test_a_vague_task_takes_its_layer_from_the_edited_file(mixed: Path) -> None:
    """Retrieval feedback does not place a task with no telling word; the file being edited does."""
    with Index(mixed) as index:
        plain = query_directives(index, "make it better")
        editing = query_directives(index, "make it better", options={"files": ["db/migrations/0042_status.sql"]})
    assert plain["diagnostics"]["detectedLayer"] is None and plain["diagnostics"]["topics"] == []
    assert editing["diagnostics"]["detectedLayer"] == "4-Persistence"
    assert editing["diagnostics"]["topics"] == ["database"]
    assert editing["citations"][0]["sourcePath"] == ".github/instructions/migrations.instructions.md"
