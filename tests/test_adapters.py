"""Issue 6: other tools' rule files (Cursor, AGENTS.md, CLAUDE.md, Copilot, Cline, Windsurf, plain
markdown) become rules, sections and directives, with inferred severity and kept globs."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

import pytest

from ruledex.builder.adapters import assign_ids, parse_foreign, preferred_id, read_front_matter
from ruledex.builder.blobs import js_to_markdown
from ruledex.builder.build import parse_all
from ruledex.builder.ids import VALID_ID
from ruledex.builder.infer import chunk, directive_layers, infer_severity, is_instruction, split_sentences
from ruledex.builder.parse import ParsedDocument
from ruledex.builder.source import MAX_FOREIGN_BYTES, path_format, read_sources
from ruledex.reader.errors import RuleErrors
from ruledex.reader.globs import expand_braces, glob_match, globs_match, matching_rules
from ruledex.reader.records import RuleRecord

from .conftest import rule_doc, write_rules


def parse_folder(folder: Path) -> tuple[dict[str, ParsedDocument], list[str]]:
    parsed, warnings, _reused = parse_all(read_sources(folder))
    return {doc.rule.path: doc for doc in parsed}, warnings


def texts(doc: ParsedDocument) -> list[tuple[str, str]]:
    return [(d.severity, d.text) for d in doc.directives]


CURSOR_MDC = """
---
description: React component rules for the web app
globs: **/*.tsx, src/components/**/*.{ts,tsx}
alwaysApply: false
---
# React rules

## Components
- Always use function components with hooks.
- Prefer composition over inheritance.
- You may colocate small helper hooks with the component.
- Keep components small

## State
Never mutate state in place. It breaks memoisation.
Consider a reducer when state has more than three fields.
"""


def test_cursor_mdc_maps_front_matter_sections_and_severities(tmp_path: Path) -> None:
    docs, warnings = parse_folder(write_rules(tmp_path / "repo", {".cursor/rules/react.mdc": CURSOR_MDC}))
    doc = docs[".cursor/rules/react.mdc"]
    assert warnings == []
    assert doc.rule.id == "react"
    assert doc.rule.format == "cursor"
    assert doc.rule.title == "React rules"
    assert doc.rule.globs == ("**/*.tsx", "src/components/**/*.{ts,tsx}")
    assert doc.rule.always_apply is False
    assert doc.rule.description == "React component rules for the web app"
    assert doc.rule.when_to_apply[0] == "React component rules for the web app"
    assert "react" in doc.rule.technologies
    assert texts(doc) == [
        ("MUST", "Always use function components with hooks."),
        ("SHOULD", "Prefer composition over inheritance."),
        ("MAY", "You may colocate small helper hooks with the component."),
        ("SHOULD", "Keep components small"),
        ("MUST", "Never mutate state in place."),
        ("MAY", "Consider a reducer when state has more than three fields."),
    ]
    never = doc.directives[4]
    assert never.rationale == "It breaks memoisation."
    assert never.section == ("State",)
    assert never.id == "react#state-1"
    assert never.line == 15
    assert all(d.inferred == ("severity", "layers", "topics") for d in doc.directives)
    assert doc.directives[0].layers == ("1-Presentation",)  # "component" names the layer


SWIFTUI_MDC = """
---
description: SwiftUI view and screen rules
globs: "**/*.swift"
---
# SwiftUI views

- Keep each view small; split a screen into child views.
- Use the navigation stack for screen transitions.
- Give every tappable row a button style and a visible focus state.
- Keep the layout readable at the largest font sizes.
- Prefer `.task(id:)` over `.onAppear` so the invoice total and discount calculation stops when the user leaves.
"""


def test_directive_layers_add_the_rules_own() -> None:
    assert directive_layers(("3-Domain",), ("1-Presentation",)) == ("1-Presentation", "3-Domain")
    assert directive_layers(("4-Persistence",), ("*",)) == ("4-Persistence",)
    assert directive_layers((), ("1-Presentation",)) == ("*",)  # names no layer: applies anywhere


def test_inferred_directive_keeps_its_rules_layer_under_strict_filter(tmp_path: Path) -> None:
    """A line whose own words read as another layer still answers tasks of the layer its file is for."""
    from ruledex.builder.build import build
    from ruledex.reader.index import Index
    from ruledex.reader.query import query_directives

    root = write_rules(tmp_path / "r", {"swiftui.mdc": SWIFTUI_MDC})
    docs, _ = parse_folder(root)
    doc = docs["swiftui.mdc"]
    assert doc.rule.layers == ("1-Presentation",)
    lifecycle = doc.directives[4]
    assert "3-Domain" in lifecycle.layers and "1-Presentation" in lifecycle.layers
    out = tmp_path / "swift.ruledex"
    build(root, out)
    with Index(out) as index:
        answer = query_directives(
            index,
            "The data load in onAppear keeps running after the screen closes",
            options={"layer": "1-Presentation"},
        )
    assert lifecycle.id in {c["id"] for c in answer["citations"]}


def test_when_to_apply_names_the_rules_technologies_as_they_are_written(tmp_path: Path) -> None:
    """A task naming the stack matches the rule by its when-to-apply; the phrase reads as people write it."""
    text = "---\ndescription: Vue 3 stores with Pinia in TypeScript, served by Go\n---\n- Keep stores small.\n"
    docs, _ = parse_folder(write_rules(tmp_path / "r", {"vue-pinia.mdc": text}))
    assert docs["vue-pinia.mdc"].rule.when_to_apply[-1] == "TypeScript, Go, Vue, Pinia"


def test_cursor_always_apply_and_quoted_yaml_globs(tmp_path: Path) -> None:
    text = '---\ndescription: "Core rules"\nglobs: ["src/**/*.py", "tests/**"]\nalwaysApply: true\n---\n- Never commit secrets.\n'
    docs, _ = parse_folder(write_rules(tmp_path / "r", {"core.mdc": text}))
    rule = docs["core.mdc"].rule
    assert rule.globs == ("src/**/*.py", "tests/**")
    assert rule.always_apply is True
    assert rule.description == "Core rules"


def test_globs_that_are_not_text_are_named_not_turned_into_globs_that_match_nothing(tmp_path: Path) -> None:
    files = {
        "a.mdc": "---\ndescription: React rules\nglobs: {a: 1}\n---\n- Use function components with hooks.\n",
        "b.mdc": '---\ndescription: TS rules\nglobs: [["a"], null, "src/**/*.ts"]\n---\n- Enable strict mode.\n',
        "c.instructions.md": "---\napplyTo: 3\n---\n- Keep handlers thin.\n",
    }
    docs, warnings = parse_folder(write_rules(tmp_path / "r", files))
    assert docs["a.mdc"].rule.globs == () and docs["b.mdc"].rule.globs == ("src/**/*.ts",)
    assert docs["c.instructions.md"].rule.globs == ()
    assert "a.mdc:3: globs: an object, not a glob or a list of globs; left out, so the rule applies to every file" in (
        "\n".join(warnings)
    )
    assert any(w.startswith("b.mdc:3: globs: 2 of its entries not text (a list, null); left out") for w in warnings)
    assert any(w.startswith("c.instructions.md:2: applyTo: an integer, not a glob") for w in warnings)


def test_a_title_or_description_that_is_not_text_is_named_and_a_list_of_lines_is_joined(tmp_path: Path) -> None:
    files = {
        "a.mdc": "---\ndescription:\n  - React component rules\n  - for the web app\n---\n- Use function components.\n",
        "b.mdc": "---\ntitle: {a: 1}\ndescription: [[x], y]\n---\n- Enable strict mode.\n",
    }
    docs, warnings = parse_folder(write_rules(tmp_path / "r", files))
    assert docs["a.mdc"].rule.description == "React component rules for the web app"
    assert docs["b.mdc"].rule.title == "B" and "{" not in docs["b.mdc"].rule.description
    assert "b.mdc:2: title: an object, not text; left out; write it as text" in warnings
    assert "b.mdc:3: description: a list, not text; left out; write it as text" in warnings


def test_legacy_cursorrules_prose_persona_and_code(tmp_path: Path) -> None:
    text = """
    You are an expert in Python and FastAPI.

    Use type hints for every function signature. Pydantic models validate the input for you.
    Do not use mutable default arguments.

    ```python
    def handler(items: list[str] | None = None) -> None: ...
    ```
    """
    docs, _ = parse_folder(write_rules(tmp_path / "repo", {".cursorrules": text}))
    doc = docs[".cursorrules"]
    assert doc.rule.format == "cursorrules"
    assert doc.rule.id == "cursorrules"
    assert doc.rule.title == "Cursor rules"
    assert texts(doc) == [
        ("SHOULD", "Use type hints for every function signature."),
        ("MUST", "Do not use mutable default arguments."),
    ]
    assert doc.directives[0].rationale == "Pydantic models validate the input for you."
    assert doc.directives[1].examples == (("python", "def handler(items: list[str] | None = None) -> None: ..."),)
    assert "fastapi" in doc.rule.technologies


def test_agents_md_nested_applies_to_its_folder(tmp_path: Path) -> None:
    root = write_rules(
        tmp_path / "repo",
        {
            "AGENTS.md": "# Agent guide\n\n## Testing\n- Run `pytest -q` before every commit.\n",
            "services/api/AGENTS.md": "- Validate request bodies with Pydantic models.\n- Return RFC 9457 problem details on errors.\n",
            "CLAUDE.md": "## Style\n- Never use `print` for logging.\n",
        },
    )
    docs, _ = parse_folder(root)
    top, nested, claude = docs["AGENTS.md"], docs["services/api/AGENTS.md"], docs["CLAUDE.md"]
    assert (top.rule.id, top.rule.globs, top.rule.format) == ("agents", (), "agents-md")
    assert (nested.rule.id, nested.rule.globs) == ("services/api/agents", ("services/api/**",))
    assert nested.rule.title == "AGENTS.md (services/api)"
    assert texts(nested) == [
        ("SHOULD", "Validate request bodies with Pydantic models."),
        ("SHOULD", "Return RFC 9457 problem details on errors."),
    ]
    assert nested.directives[0].id == "services/api/agents#top-1"
    assert (claude.rule.format, texts(claude)) == ("claude-md", [("MUST", "Never use `print` for logging.")])


def test_copilot_instructions_and_apply_to(tmp_path: Path) -> None:
    root = write_rules(
        tmp_path / "repo",
        {
            ".github/copilot-instructions.md": "Always write tests for new endpoints.\n",
            ".github/instructions/sql.instructions.md": (
                '---\napplyTo: "**/*.sql,db/migrations/**"\n---\n'
                "- Migrations MUST be reversible.\n- Should not lock large tables.\n"
            ),
            ".github/workflows/ci.md": "- Not a rule file.\n",
        },
    )
    docs, _ = parse_folder(root)
    assert set(docs) == {".github/copilot-instructions.md", ".github/instructions/sql.instructions.md"}
    repo_wide, scoped = docs[".github/copilot-instructions.md"], docs[".github/instructions/sql.instructions.md"]
    assert (repo_wide.rule.id, repo_wide.rule.globs) == ("copilot-instructions", ())
    assert texts(repo_wide) == [("MUST", "Always write tests for new endpoints.")]
    assert (scoped.rule.id, scoped.rule.format) == ("sql", "copilot")
    assert scoped.rule.globs == ("**/*.sql", "db/migrations/**")
    assert texts(scoped) == [("MUST", "Migrations MUST be reversible."), ("SHOULD", "Should not lock large tables.")]
    assert scoped.directives[0].layers == ("4-Persistence",)


def test_cline_and_windsurf(tmp_path: Path) -> None:
    root = write_rules(
        tmp_path / "repo",
        {
            ".clinerules/10-style.md": "- Prefer small pure functions.\n",
            ".clinerules/20-git.txt": "- Never force-push to main.\n",
            ".windsurfrules": "- Document every public function.\n",
            ".windsurf/rules/api.md": "---\ntrigger: always_on\n---\n- Version the public API.\n",
            ".windsurf/rules/ui.md": "---\ntrigger: glob\nglobs: web/**/*.vue\n---\n- Use the design-system buttons.\n",
        },
    )
    docs, _ = parse_folder(root)
    assert {p: d.rule.format for p, d in docs.items()} == {
        ".clinerules/10-style.md": "cline",
        ".clinerules/20-git.txt": "cline",
        ".windsurfrules": "windsurf",
        ".windsurf/rules/api.md": "windsurf",
        ".windsurf/rules/ui.md": "windsurf",
    }
    assert docs[".clinerules/20-git.txt"].directives[0].severity == "MUST"
    assert docs[".windsurf/rules/api.md"].rule.always_apply is True
    assert docs[".windsurf/rules/ui.md"].rule.globs == ("web/**/*.vue",)
    assert docs[".windsurf/rules/ui.md"].rule.always_apply is False


def test_plain_markdown_one_file_per_domain(tmp_path: Path) -> None:
    text = """
    # React

    Last Updated: 2025-03-01
    Description: How we write React components
    Version: 1.4

    ## Hooks
    - Call hooks only at the top level of a component.
    """
    docs, _ = parse_folder(write_rules(tmp_path / "rules", {"react.md": text}))
    rule = docs["react.md"].rule
    assert (rule.id, rule.format, rule.title) == ("react", "markdown", "React")
    assert (rule.last_updated, rule.version, rule.description) == ("2025-03-01", "1.4", "How we write React components")
    assert rule.when_to_apply[0] == "How we write React components"
    assert texts(docs["react.md"]) == [("SHOULD", "Call hooks only at the top level of a component.")]


def test_file_named_after_a_topic_is_authoritative_for_it(tmp_path: Path) -> None:
    docs, _ = parse_folder(write_rules(tmp_path / "rules", {"database.md": "- Index every foreign key column.\n"}))
    rule = docs["database.md"].rule
    assert rule.authoritative_for == ("database",)
    assert "database" in rule.topics
    assert "authoritative_for" in rule.inferred


def test_ruledex_documents_still_use_the_strict_parser(tmp_path: Path) -> None:
    good = rule_doc("## S\n\n- [MUST] Do the thing.")
    root = write_rules(tmp_path / "rules", {"own.md": good, "team.mdc": "- Prefer small commits.\n"})
    docs, _ = parse_folder(root)
    assert docs["own.md"].rule.format == "ruledex"
    assert docs["own.md"].directives[0].inferred == ()
    assert docs["team.mdc"].rule.format == "cursor"
    (root / "bad.md").write_text(rule_doc("## S\n\n- Missing marker.", id="bad"), encoding="utf-8")
    with pytest.raises(RuleErrors, match=r"bad\.md:15: directive: list item has no severity marker"):
        parse_all(read_sources(root))


def test_ruledex_front_matter_with_broken_yaml_is_an_error_not_a_fallback(tmp_path: Path) -> None:
    root = write_rules(
        tmp_path / "rules", {"x.md": "---\nlayers: [2-Application\ntopics: [api]\n---\n- [MUST] Do it.\n"}
    )
    with pytest.raises(RuleErrors, match=r"x\.md:2: front matter: invalid YAML"):
        parse_all(read_sources(root))


def test_unreadable_foreign_files_are_skipped_with_a_warning(tmp_path: Path) -> None:
    root = write_rules(
        tmp_path / "rules",
        {
            "ok.mdc": "- Use UTC timestamps everywhere.\n",
            "empty.mdc": "\n\n",
            "broken.mdc": "---\ndescription: x\nthis line is not a key\nglobs: a\n---\n- Use X.\n",
            "unclosed.mdc": "---\ndescription: never closed\n- Use X.\n",
            "prose.md": "Our team loves clean code and good coffee.\n",
            "quotes.mdc": "---\ndescription: q\n---\n- Use X.\n\n" + "> " * 30 + "x\n",
        },
    )
    (root / "latin1.mdc").write_bytes("- Évitez les globals.\n".encode("latin-1"))
    (root / "huge.mdc").write_bytes(b"- Use a linter.\n" * (MAX_FOREIGN_BYTES // 16 + 1))
    docs, warnings = parse_folder(root)
    assert set(docs) == {"ok.mdc"}
    joined = "\n".join(warnings)
    assert "empty.mdc:1: file: is empty; file skipped" in joined
    assert "broken.mdc:3: front matter: cannot read 'this line is not a key'" in joined
    assert "unclosed.mdc:1: front matter: opened with '---' but never closed; file skipped" in joined
    assert "prose.md:1: directives: none found" in joined
    assert "quotes.mdc:6: markdown: a quote nested 30 levels deep" in joined  # not hours of parsing
    assert "latin1.mdc:1: file: is not UTF-8; re-save it as UTF-8; file skipped" in joined
    assert f"exceeds the {MAX_FOREIGN_BYTES}-byte limit" in joined and "huge.mdc" in joined


def test_unreadable_ruledex_document_is_still_an_error(tmp_path: Path) -> None:
    root = tmp_path / "rules"
    root.mkdir()
    (root / "own.md").write_bytes(rule_doc("## S\n\n- [MUST] Évitez.").encode("latin-1"))
    with pytest.raises(RuleErrors, match=r"own\.md:\d+: file: is not UTF-8"):
        parse_all(read_sources(root))


def test_a_utf16_or_lone_cr_ruledex_document_is_still_read_as_one(tmp_path: Path) -> None:
    """Saved as UTF-16 ("Unicode" in Windows editors) or with classic-Mac line ends, a document keeps
    its strict reading: its problems stay errors, never a warning that drops it or an inference."""
    root = tmp_path / "rules"
    root.mkdir()
    (root / "wide.md").write_bytes(rule_doc("## S\n\n- [MUST] Use UTC.", id="wide").encode("utf-16"))
    (root / "mac.md").write_bytes(rule_doc("## S\n\n- [MUTS] Use UTC.", id="mac").replace("\n", "\r").encode())
    with pytest.raises(RuleErrors) as caught:
        parse_all(read_sources(root))
    assert [str(e) for e in caught.value.errors] == [
        "mac.md:15: directive: unknown severity 'MUTS'; use one of MUST, SHOULD, MAY",
        "wide.md:1: file: is UTF-16; re-save it as UTF-8",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="making symbolic links needs privileges on Windows")
def test_a_file_that_cannot_be_opened_is_an_error_not_a_traceback_or_a_silent_skip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broken link or a file without read permission: an unread *.md may be a rule document."""
    root = write_rules(tmp_path / "rules", {"ok.md": rule_doc("## S\n\n- [MUST] Use UTC timestamps everywhere.")})
    (root / "gone.md").symlink_to(tmp_path / "nowhere.md")
    (root / "locked.md").write_text("x", encoding="utf-8")
    (root / ".cursorrules").symlink_to(tmp_path / "nowhere")
    real = Path.read_bytes

    def read_bytes(path: Path) -> bytes:  # chmod 000 does not stop root, who runs some CI
        if path.name == "locked.md":
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    with pytest.raises(RuleErrors) as caught:
        parse_all(read_sources(root))
    assert [str(e) for e in caught.value.errors] == [
        f"gone.md:1: file: is a broken link (to {tmp_path / 'nowhere.md'}); fix the link or remove it",
        "locked.md:1: file: cannot be read (Permission denied); check its permissions",
    ]
    assert caught.value.warnings == [
        f".cursorrules:1: file: is a broken link (to {tmp_path / 'nowhere'}); fix the link or remove it; file skipped"
    ]


def test_which_paths_are_rule_files() -> None:
    cases = {
        "react.mdc": "cursor",
        ".cursor/rules/a/b.mdc": "cursor",
        ".cursor/rules/a.md": "cursor",
        ".cursorrules": "cursorrules",
        "pkg/.cursorrules": "cursorrules",
        "AGENTS.md": "agents-md",
        "pkg/CLAUDE.md": "claude-md",
        ".github/copilot-instructions.md": "copilot",
        ".github/instructions/x.instructions.md": "copilot",
        ".github/instructions/x.md": None,
        ".github/workflows/ci.md": None,
        ".clinerules": "cline",
        ".clinerules/a.md": "cline",
        ".windsurfrules": "windsurf",
        ".windsurf/rules/a.md": "windsurf",
        "rules/react.md": "markdown",
        "README.md": None,
        "_drafts/x.md": None,
        ".hidden/x.md": None,
        "notes.txt": None,
    }
    assert {p: path_format(p) for p in cases} == cases


def test_ids_are_short_unique_and_stable() -> None:
    assert preferred_id(".cursor/rules/react.mdc") == "react"
    assert preferred_id("pkg/.cursor/rules/react.mdc") == "pkg/react"
    assert preferred_id(".github/instructions/db.instructions.md") == "db"
    assert preferred_id("services/api/AGENTS.md") == "services/api/agents"
    ids, warnings = assign_ids(["react.mdc", ".cursor/rules/react.mdc", "vue.mdc"], {"vue"})
    assert ids == {"react.mdc": "react-mdc", ".cursor/rules/react.mdc": "cursor/rules/react-mdc", "vue.mdc": "vue-mdc"}
    assert len(warnings) == 3 and all("using" in w for w in warnings)


def test_non_ascii_file_names_get_valid_recognisable_distinct_ids() -> None:
    """über.md was 'ber'; 日本.md and 中文.md were both 'rules', renamed to 'md' and 'md-2' with a warning."""
    names = ["über.md", "日本.md", "中文.md", "api 日本.md", "Straße.md"]
    ids, warnings = assign_ids(names, set())
    assert warnings == []
    assert ids["über.md"] == "uber" and ids["Straße.md"] == "Strasse"
    assert (
        ids["日本.md"].startswith("rule-") and ids["中文.md"].startswith("rule-") and ids["日本.md"] != ids["中文.md"]
    )
    assert ids["api 日本.md"].startswith("api-")
    assert all(VALID_ID.match(i) for i in ids.values())
    nfd = unicodedata.normalize("NFD", "日本ü.md")  # macOS spells file names decomposed
    assert preferred_id(nfd) == preferred_id(unicodedata.normalize("NFC", nfd))


def test_nested_cursor_rules_are_scoped_to_their_folder(tmp_path: Path) -> None:
    root = write_rules(
        tmp_path / "repo",
        {
            "web/.cursor/rules/ui.mdc": "---\nglobs: *.tsx, src/**/*.css\n---\n- Use tokens for colours.\n",
            "web/.cursor/rules/all.mdc": "- Keep the bundle under 200 KB.\n",
        },
    )
    docs, _ = parse_folder(root)
    assert docs["web/.cursor/rules/ui.mdc"].rule.globs == ("web/**/*.tsx", "web/src/**/*.css")
    assert docs["web/.cursor/rules/all.mdc"].rule.globs == ("web/**",)


@pytest.mark.parametrize(
    ("sentence", "severity"),
    [
        ("Validate all input at the boundary.", "SHOULD"),
        ("You MUST validate all input.", "MUST"),
        ("Tokens SHALL expire after one hour.", "MUST"),
        ("Always pin dependency versions.", "MUST"),
        ("Never log passwords.", "MUST"),
        ("Do not catch bare exceptions.", "MUST"),
        ("Don't use `any`.", "MUST"),
        ("This is REQUIRED for every endpoint.", "MUST"),
        ("Functions should be short.", "SHOULD"),
        ("Prefer `const` over `let`.", "SHOULD"),
        ("Avoid global state.", "SHOULD"),
        ("Use X; otherwise it may crash.", "SHOULD"),
        ("You may inline trivial helpers.", "MAY"),
        ("Consider caching expensive lookups.", "MAY"),
        ("Optionally add a changelog entry.", "MAY"),
        ("Comments MAY use emoji.", "MAY"),
        ("Name the flag `must_refresh`.", "SHOULD"),  # words in code do not count
    ],
)
def test_severity_from_wording(sentence: str, severity: str) -> None:
    assert infer_severity(sentence) == severity


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Use descriptive names.", True),
        ("When testing a login page, implement the page-object pattern.", True),
        ("**Selector Usage**: Use data-testid selectors.", True),
        ("Tests should be independent.", True),
        ("You are an expert in Django.", False),
        ("Svelte 5 introduces runes.", False),
        ("Cache invalidation is hard.", False),
        ("In Next.js 15, params are promises.", False),
    ],
)
def test_which_sentences_are_instructions(sentence: str, expected: bool) -> None:
    assert is_instruction(sentence) is expected


def test_sentences_and_directive_sized_chunks() -> None:
    assert split_sentences("Use e.g. `a.b()` here. Then stop. Done!") == [
        "Use e.g. `a.b()` here.",
        "Then stop.",
        "Done!",
    ]
    sentences = [f"Sentence number {i} has exactly seven words." for i in range(12)]
    pieces = chunk(sentences)
    assert all(len(p.split()) <= 60 for p in pieces)
    assert [p.count(".") for p in pieces] == [2] * 6
    long_sentence = " ".join(["word"] * 150)
    assert all(len(p.split()) <= 60 for p in chunk([long_sentence]))


def test_long_list_item_is_split_and_nested_items_fold_when_short(tmp_path: Path) -> None:
    long_item = " ".join(f"Use tool {i} for task {i}." for i in range(20))
    text = f"""
    ## Checks
    - Include the following checks:
      - Lint with ruff.
      - Type-check with mypy.
    - {long_item}
    """
    docs, _ = parse_folder(write_rules(tmp_path / "rules", {"ci.mdc": text}))
    directives = docs["ci.mdc"].directives
    assert directives[0].text == "Include the following checks:\n- Lint with ruff.\n- Type-check with mypy."
    rest = directives[1:]
    assert len(rest) > 1 and all(len(d.text.split()) <= 60 for d in rest)
    assert " ".join(d.text for d in rest) == long_item


LONG_NESTED = """
# Errors

## Handling
- Prioritize error handling and edge cases:
  - Handle errors and edge cases at the beginning of functions.
  - Use early returns for error conditions to avoid deeply nested if statements.
  - Place the happy path last in the function for improved readability.
  - Avoid unnecessary else statements; use the if-return pattern instead.
    - Prefer guard clauses that return early from the function body.
  - Never swallow errors.
  - Sentry
- Log every failure with its request id.
"""


def test_nested_items_too_long_to_fold_are_directives_of_their_own(tmp_path: Path) -> None:
    """They made no directive at all (their words were only kept as a note for the import)."""
    docs, _ = parse_folder(write_rules(tmp_path / "rules", {"errors.mdc": LONG_NESTED}))
    doc = docs["errors.mdc"]
    assert [(d.line, d.severity, d.text) for d in doc.directives] == [
        (4, "SHOULD", "Prioritize error handling and edge cases:"),
        (5, "SHOULD", "Handle errors and edge cases at the beginning of functions."),
        (6, "SHOULD", "Use early returns for error conditions to avoid deeply nested if statements."),
        (7, "SHOULD", "Place the happy path last in the function for improved readability."),
        (
            8,
            "SHOULD",
            "Avoid unnecessary else statements; use the if-return pattern instead.\n"
            "- Prefer guard clauses that return early from the function body.",
        ),
        (10, "MUST", "Prioritize error handling and edge cases: Never swallow errors."),  # too short alone
        (12, "SHOULD", "Log every failure with its request id."),
    ]
    assert all(d.section == ("Handling",) for d in doc.directives)
    assert [n.text for n in doc.notes] == ["- Sentry"]  # a one-word item is still no instruction


def test_label_paragraph_before_a_list_is_a_section(tmp_path: Path) -> None:
    text = "Key Principles\n\n- Write small modules.\n\nError Handling:\n\n- Fail fast on bad input.\n"
    docs, _ = parse_folder(write_rules(tmp_path / "rules", {"py.mdc": text}))
    assert [d.section for d in docs["py.mdc"].directives] == [("Key Principles",), ("Error Handling",)]


def test_one_instruction_per_line_paragraph(tmp_path: Path) -> None:
    text = "# Focus\n\n**1** **Names**: Use descriptive test names\n**2** **Setup**: Put setup in beforeEach\n**3** **Waits**: Never sleep in tests\n"
    docs, _ = parse_folder(write_rules(tmp_path / "rules", {"e2e.mdc": text}))
    assert texts(docs["e2e.mdc"]) == [
        ("SHOULD", "**Names**: Use descriptive test names"),
        ("SHOULD", "**Setup**: Put setup in beforeEach"),
        ("MUST", "**Waits**: Never sleep in tests"),
    ]


def test_whole_file_wrapped_in_a_markdown_fence(tmp_path: Path) -> None:
    text = "```markdown\n# Temporal rules\n\n## Testing\n- Mock activities in workflow tests.\n```\n"
    docs, _ = parse_folder(write_rules(tmp_path / "rules", {"t.mdc": text}))
    doc = docs["t.mdc"]
    assert doc.rule.title == "Temporal rules"
    assert [(d.section, d.text) for d in doc.directives] == [(("Testing",), "Mock activities in workflow tests.")]


def test_javascript_style_prompt_file(tmp_path: Path) -> None:
    text = """
    // HTMX with Django .cursorrules

    // HTMX best practices

    const bestPractices = [
      "Use Django's template system with HTMX attributes",
      "Never return JSON to an hx-get request",
    ];

    // Folder structure

    const folderStructure = `
    app/
      templates/
    `;

    // Additional instructions

    const additional = `
    1. Implement CSRF protection for HTMX requests
    `;
    """
    body = write_rules(tmp_path / "rules", {"htmx.mdc": text})
    docs, _ = parse_folder(body)
    assert [(d.section, d.severity, d.text) for d in docs["htmx.mdc"].directives] == [
        (("HTMX best practices",), "SHOULD", "Use Django's template system with HTMX attributes"),
        (("HTMX best practices",), "MUST", "Never return JSON to an hx-get request"),
        (("Additional instructions",), "SHOULD", "Implement CSRF protection for HTMX requests"),
    ]
    assert docs["htmx.mdc"].directives[1].line == 7
    assert js_to_markdown("# not javascript\n") is None


def test_json_blob(tmp_path: Path) -> None:
    text = '{"rules": {"coding_style": {"description": "Style.", "rules": [{"description": "Comments should say why."}]}}}\n'
    docs, _ = parse_folder(write_rules(tmp_path / "rules", {"astro.mdc": text}))
    assert [(d.section, d.text) for d in docs["astro.mdc"].directives] == [
        (("Coding style",), "Comments should say why.")
    ]


def test_crlf_and_bom_read_like_lf(tmp_path: Path) -> None:
    a = write_rules(tmp_path / "a", {"x.mdc": CURSOR_MDC})
    b = tmp_path / "b"
    b.mkdir()
    lf = (a / "x.mdc").read_text(encoding="utf-8")
    (b / "x.mdc").write_bytes(("\ufeff" + lf.replace("\n", "\r\n")).encode())
    assert parse_folder(a)[0]["x.mdc"] == parse_folder(b)[0]["x.mdc"]


def test_lenient_front_matter() -> None:
    fm = read_front_matter("---\ndescription: a: b\nglobs: *.py\n---\nbody\n", "x.mdc")
    assert fm.values == {"description": "a: b", "globs": "*.py"}
    assert (fm.body, fm.body_line) == ("body\n", 5)
    not_front_matter = read_front_matter("---\n\nJust a rule line.\n\n---\n- Use X.\n", "x.md")
    assert not_front_matter.values == {} and not_front_matter.body_line == 1


def test_parse_foreign_refuses_a_ruledex_document() -> None:
    from ruledex.builder.source import SourceFile

    with pytest.raises(ValueError, match="ruledex document"):
        parse_foreign(SourceFile("x.md", "---\nlayers: ['*']\n---\n"), "x")


# --- globs: which rules apply to the files a task touches (reader/globs.py) ---


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "app/main.py", True),
        ("*.py", "main.py", True),
        ("app/**/*.py", "app/x.py", True),
        ("app/**/*.py", "app/a/b/x.py", True),
        ("app/**/*.py", "lib/app/x.py", False),
        ("**/*.{ts,tsx}", "src/a.tsx", True),
        ("**/*.{ts,tsx}", "src/a.js", False),
        ("src/**", "src/a/b.c", True),
        ("src/**", "srcx/a", False),
        ("docs", "docs/intro.md", True),
        ("docs/", "docs/intro.md", True),
        ("docs/", "docs", False),
        ("/Dockerfile", "Dockerfile", True),
        ("/Dockerfile", "svc/Dockerfile", False),
        ("Dockerfile", "svc/Dockerfile", True),
        ("docker-compose*.yml", "docker-compose.prod.yml", True),
        ("?.md", "a.md", True),
        ("?.md", "ab.md", False),
        ("[!ab].md", "b.md", False),
        ("[a-c].md", "b.md", True),
        ("**/*", "anything/at/all", True),
        ("./src/*.ts", "src/a.ts", True),
        ("src/*.ts", "./src/a.ts", True),
        ("src/*.ts", "src\\a.ts", True),
        ("src/*.ts", "src/a/b.ts", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


def test_brace_sets_and_exclusions() -> None:
    assert expand_braces("a/{b,c{d,e}}") == ["a/b", "a/cd", "a/ce"]
    assert expand_braces("{a,b") == ["{a,b"]
    assert globs_match(["**/*.ts", "!**/*.test.ts"], "src/x.ts") is True
    assert globs_match(["**/*.ts", "!**/*.test.ts"], "src/x.test.ts") is False


def test_matching_rules() -> None:
    def rule(i: str, *globs: str) -> RuleRecord:
        return RuleRecord(id=i, title=i, path=f"{i}.mdc", layers=("*",), topics=("quality",), globs=globs)

    rules = [rule("react", "**/*.tsx"), rule("sql", "**/*.sql", "db/**"), rule("core"), rule("api", "services/api/**")]
    assert matching_rules(rules, ["web/App.tsx"]) == {0}
    assert matching_rules(rules, ["db/seed.py", "services/api/main.py"]) == {1, 3}
    assert matching_rules(rules, []) == set()
    assert matching_rules(rules, ["README.md"]) == set()


def test_a_code_fence_or_html_comment_never_closed_is_a_warning_not_a_silent_drop(tmp_path: Path) -> None:
    """Markdown reads an unclosed block to the end of the file: the rules after it would vanish as code."""
    fence = "```python\nx = 1\n\n## Logging\n\n- [MUST] Never log secrets.\n"
    root = write_rules(
        tmp_path / "rules",
        {
            "own.md": rule_doc(f"## Time\n\n- [MUST] Use UTC timestamps everywhere.\n\n{fence}"),
            "AGENTS.md": "# Agents\n\n- Use UTC timestamps everywhere.\n<!-- TODO\n\n- Never log secrets.\n",
            "closed.mdc": "- Use UTC timestamps:\n  ```python\n  now()\n- Never log secrets.\n",
            "wrapped.mdc": "```markdown\n# Rules\n\n- Use UTC timestamps everywhere.\n",
        },
    )
    docs, warnings = parse_folder(root)
    assert [len(docs[p].directives) for p in ("own.md", "AGENTS.md", "closed.mdc", "wrapped.mdc")] == [1, 1, 2, 1]
    assert warnings == [
        "own.md:17: markdown: '```' is never closed, so everything after it is read as code, not rules; "
        "close it with '```'",
        "AGENTS.md:4: markdown: '<!--' is never closed, so everything after it is read as HTML, not rules; "
        "close it with '-->'",
    ]
