"""The README documents every command (sqlite-utils' docs test), and its quick-start stays real."""

from __future__ import annotations

import re
from pathlib import Path

from ruledex.reader.cli import build_parser

from .conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_every_subcommand_is_documented() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    missing = [name for name in sub.choices if f"`ruledex {name}" not in README]
    assert not missing, f"README does not document: {missing}"


def test_quick_start_commands_come_first() -> None:
    blocks = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    assert 'ruledex build rules/ && ruledex query "' in blocks[0]
    assert "pytest -q" in blocks[1]


def test_rule_format_is_documented_with_a_complete_example() -> None:
    contributing = (REPO / "rules" / "CONTRIBUTING.md").read_text(encoding="utf-8")
    from ruledex.builder.parse import parse_document

    example = re.search(r"```markdown\n(.*?)\n```\n\n### Front matter", contributing, flags=re.S)
    assert example, "CONTRIBUTING.md keeps its complete example"
    doc = parse_document(example.group(1), "security.md")
    assert [d.severity for d in doc.directives] == ["MUST", "SHOULD", "MUST", "MAY"]


def test_every_front_matter_field_the_builder_accepts_is_in_the_field_table() -> None:
    """``globs`` was accepted (and written by ``ruledex import``) but missing from the table."""
    from ruledex.builder.validate import KNOWN_FIELDS

    contributing = (REPO / "rules" / "CONTRIBUTING.md").read_text(encoding="utf-8")
    table = contributing.split("### Front matter fields", 1)[1].split("\n### ", 1)[0]
    aliases = {"example_tasks"}  # named beside `examples` in the complete example
    missing = sorted(f for f in KNOWN_FIELDS - aliases if f"`{f}`" not in table)
    assert not missing, f"rules/CONTRIBUTING.md's field table does not list: {missing}"
    formats = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    assert "no globs field" not in formats, "docs/formats.md: ruledex front matter has a `globs` field"


def test_every_citation_field_is_in_docs_mcp(bundled_index: Path, tmp_path: Path) -> None:
    """docs/mcp.md listed nine citation fields; the output had ``stale``, ``alwaysApply`` and ``index`` too."""
    import shutil

    from ruledex.reader.index import Index
    from ruledex.reader.query import query_indexes

    shutil.copy(bundled_index, tmp_path / "team.ruledex")
    indexes = [Index(bundled_index), Index(tmp_path / "team.ruledex")]  # layered: citations name their index
    try:
        citations = query_indexes(indexes, "Add user registration API endpoint", None, {})["citations"]
    finally:
        for index in indexes:
            index.close()
    fields = {key for c in citations for key in c}
    documented = re.search(
        r"^`citations` are (.*?)^`diagnostics`", (REPO / "docs" / "mcp.md").read_text("utf-8"), re.S | re.M
    )
    assert documented and "index" in fields and "alwaysApply" in fields
    missing = sorted(f for f in fields if not re.search(rf"\b{f}\b", documented.group(1)))
    assert not missing, f"docs/mcp.md does not list citation fields {missing}"
