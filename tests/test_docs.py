"""The README documents every command (sqlite-utils' docs test), and its quick-start stays real."""

from __future__ import annotations

import re

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
