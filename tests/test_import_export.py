"""Issue 6: `ruledex import` (foreign -> ruledex documents) and `ruledex export` (index -> AGENTS.md,
Cursor .mdc, Copilot instructions) within a stated byte budget."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ruledex.builder.build import build, parse_all
from ruledex.builder.importer import import_rules, plan_import
from ruledex.builder.parse import parse_document
from ruledex.builder.source import SourceFile, path_format, read_sources, rule_files
from ruledex.reader.cli import main
from ruledex.reader.errors import ConfigError, RuleErrors
from ruledex.reader.export import GENERATED_MARK, export_index, write_export
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives

from .conftest import rule_doc, write_rules

FOREIGN = {
    ".cursor/rules/react.mdc": """
        ---
        description: React component rules
        globs: **/*.tsx, **/*.jsx
        alwaysApply: false
        ---
        # React

        - Always use function components.
        - Avoid: inline styles for layout
        ## State
        - Prefer a reducer for complex state.
          - Keep actions serialisable.

        Never mutate props. Props are owned by the parent.

        ```tsx
        const [state, dispatch] = useReducer(reducer, initial);
        ```
        ### Effects
        - Clean up every subscription in the effect's return.
        """,
    "services/api/AGENTS.md": "# API\n\n## Errors\n- Return problem details on every 4xx and 5xx.\n- You may add a `hint` field.\n",
    ".github/instructions/sql.instructions.md": '---\napplyTo: "**/*.sql"\n---\n- Migrations MUST be reversible.\n',
    "rules/database.md": "# Database\n\n- Index every foreign key column.\n",
    "own.md": rule_doc("## S\n\n- [MUST] Keep this ruledex rule as it is.", id="own"),
}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def shape(docs: list) -> dict[str, list[tuple]]:
    return {
        doc.rule.id: [
            (d.id, d.severity, d.text, d.section, d.rationale, d.examples, d.layers, d.topics) for d in doc.directives
        ]
        for doc in docs
    }


def test_import_round_trip_builds_with_the_strict_parser(tmp_path: Path) -> None:
    source = write_rules(tmp_path / "repo", FOREIGN)
    out = tmp_path / "rules"
    result = import_rules(source, out)
    assert sorted(f.target for f in result.files) == [
        "react.md",
        "rules/database.md",
        "services/api/agents.md",
        "sql.md",
    ]
    assert any("own.md: already a ruledex document" in s for s in result.skipped)
    imported = [parse_document((out / f.target).read_text(encoding="utf-8"), f.target) for f in result.files]
    assert all(doc.rule.format == "ruledex" and not doc.warnings for doc in imported)
    foreign = [d for d in parse_all(read_sources(source))[0] if d.rule.format != "ruledex"]
    # the same directives, ids, severities, sections, rationale, examples, layers and topics;
    # only a leading "Avoid:" is reworded, or the strict parser would read it as a label
    as_text = json.dumps(shape(foreign), ensure_ascii=False).replace("Avoid: inline", "Avoid — inline")
    assert json.dumps(shape(imported), ensure_ascii=False) == as_text
    react = (out / "react.md").read_text(encoding="utf-8")
    assert 'globs: ["**/*.tsx", "**/*.jsx"]' in react or "globs: ['**/*.tsx', '**/*.jsx']" in react
    assert "- [MUST] Always use function components." in react
    assert "- [SHOULD] Avoid — inline styles for layout" in react  # a leading "Avoid:" would be read as a label
    assert "authoritative_for" in (out / "rules/database.md").read_text(encoding="utf-8")
    built = build(out, tmp_path / "imported.ruledex")
    assert built.directives == sum(len(d.directives) for d in foreign)
    assert built.inferred_severity == 0  # every severity is now written down


def test_import_never_overwrites_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_rules(tmp_path / "repo", {"AGENTS.md": "- Run the tests before pushing.\n"})
    out = tmp_path / "rules"
    code, stdout, _ = run(["import", str(source), "--out", str(out)], capsys)
    assert code == 0 and "AGENTS.md -> " in stdout and "1 with inferred severity" in stdout
    (out / "agents.md").write_text("curated by hand\n", encoding="utf-8")
    code, _, err = run(["import", str(source), "--out", str(out)], capsys)
    assert code == 1 and "agents.md: already exists; nothing was written" in err
    assert (out / "agents.md").read_text(encoding="utf-8") == "curated by hand\n"
    code, stdout, _ = run(["import", str(source), "--out", str(out), "--force", "--json"], capsys)
    assert code == 0 and json.loads(stdout)["files"][0]["target"] == "agents.md"
    assert "[SHOULD] Run the tests before pushing." in (out / "agents.md").read_text(encoding="utf-8")
    with pytest.raises(ConfigError, match="no such file or folder"):
        import_rules(tmp_path / "missing", out)


def test_a_folder_where_a_file_goes_writes_nothing_even_with_force(
    bundled_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """import wrote the files before the folder, then failed; export failed with a traceback."""
    source = write_rules(tmp_path / "repo", {".cursorrules": "- Use strict mode.\n", "AGENTS.md": "- Run the tests.\n"})
    out = tmp_path / "rules"
    (out / "agents.md").mkdir(parents=True)
    code, _, err = run(["import", str(source), "--out", str(out), "--force"], capsys)
    assert code == 1 and f"{out / 'agents.md'}: is a folder where a file goes; nothing was written" in err
    assert [p.name for p in out.iterdir()] == ["agents.md"]
    (tmp_path / "web" / "AGENTS.md").mkdir(parents=True)
    argv = ["export", "--format", "agents-md", "--out", str(tmp_path / "web"), "--index", str(bundled_index)]
    code, _, err = run([*argv, "--force"], capsys)
    assert code == 1 and "AGENTS.md: is a folder where a file goes; nothing was written" in err


def test_import_of_one_file_reads_only_it_and_keeps_its_format(tmp_path: Path) -> None:
    """`ruledex import .github/copilot-instructions.md` converts that file, read as Copilot's, not the repository."""
    repo = write_rules(
        tmp_path / "repo",
        {
            ".github/copilot-instructions.md": "# Team\n\n- Always enable TypeScript strict mode in every package.\n",
            "AGENTS.md": "- Run the tests before pushing.\n",
        },
    )
    result = import_rules(repo / ".github" / "copilot-instructions.md", tmp_path / "out")
    assert [(f.source, f.directives) for f in result.files] == [(".github/copilot-instructions.md", 1)]
    assert not (tmp_path / "out" / "agents.md").exists()
    assert path_format(result.files[0].source) == "copilot"


def test_import_reports_skipped_files(tmp_path: Path) -> None:
    source = write_rules(tmp_path / "repo", {"a.mdc": "- Use UTC.\n", "empty.mdc": "\n"})
    result = plan_import(source)
    assert [f.target for f in result.files] == ["a.md"]
    assert result.skipped == ["empty.mdc:1: file: is empty; file skipped"]


@pytest.fixture(scope="module")
def foreign_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = write_rules(tmp_path_factory.mktemp("foreign") / "repo", FOREIGN)
    return build(source, source.parent / "foreign.ruledex").path


def test_index_keeps_globs_format_and_inferred_fields(foreign_index: Path) -> None:
    with Index(foreign_index) as index:
        rules = {r.id: r for r in index.rules()}
        assert rules["react"].globs == ("**/*.tsx", "**/*.jsx")
        assert rules["react"].format == "cursor"
        assert rules["services/api/agents"].globs == ("services/api/**",)
        assert rules["own"].format == "ruledex" and rules["own"].globs == ()
        react = index.directives_of(index.find_rule("react"))
        assert react[0].inferred == ("severity", "layers", "topics")
        assert react[0].severity == "MUST"


def test_export_agents_md_within_budget_and_says_what_was_left_out(
    bundled_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Index(bundled_index) as index:
        everything = export_index(index, "agents-md", 10**7)
        assert not everything.omitted
        total = index.n_directives
    assert len(everything.included) == total
    budget = 6000
    code, stdout, err = run(
        [
            "export",
            "--format",
            "agents-md",
            "--index",
            str(bundled_index),
            "--out",
            str(tmp_path),
            "--max-bytes",
            str(budget),
        ],
        capsys,
    )
    assert code == 0
    text = (tmp_path / "AGENTS.md").read_text(encoding="utf-8")
    assert len(text.encode()) <= budget
    assert GENERATED_MARK in text.splitlines()[0]
    assert "of 6000 bytes" in stdout
    budget_arg = ["--max-bytes", str(budget)]
    code, stdout, _ = run(
        [
            "export",
            "--format",
            "agents-md",
            "--index",
            str(bundled_index),
            "--out",
            str(tmp_path),
            "--json",
            *budget_arg,
        ],
        capsys,
    )
    left_out = json.loads(stdout)["omitted"]
    kept = [line for line in text.splitlines() if line.startswith("- **")]
    assert len(left_out) + len(kept) == total
    assert f"left out {len(left_out)} directive(s)" in err and "--json lists their ids" in err
    assert len(err.splitlines()) == 1, "one summary line on stderr, not one line per id"
    trailer = text.rstrip().splitlines()[-1]
    assert trailer.startswith(f"<!-- ruledex export: left out {len(left_out)} of {total} directive(s)")
    # MUST directives are kept first; a short SHOULD or MAY may fill a gap no left-out MUST fits
    others = [line for line in kept if not line.startswith("- **MUST**")]
    assert len(others) <= 2 < len(kept) and all(len(line) < 160 for line in others)


def test_export_budget_too_small_is_a_clear_failure(bundled_index: Path, tmp_path: Path, capsys) -> None:
    code, _, err = run(
        ["export", "--format", "agents-md", "--index", str(bundled_index), "--out", str(tmp_path), "--max-bytes", "50"],
        capsys,
    )
    assert code == 1 and "too small for even one directive" in err
    assert not (tmp_path / "AGENTS.md").exists()


def _read_back(root: Path) -> list[SourceFile]:
    """Exported files as sources, past the marker that makes build skip them: does the format round-trip?"""
    files = [p.relative_to(root).as_posix() for p in rule_files(root)]
    return [SourceFile(rel, (root / rel).read_text(encoding="utf-8"), path_format(rel) or "markdown") for rel in files]


def test_export_cursor_keeps_globs_and_reads_back(foreign_index: Path, tmp_path: Path) -> None:
    with Index(foreign_index) as index:
        result = export_index(index, "cursor")
    written = write_export(result, tmp_path)
    assert tmp_path / ".cursor/rules/react.mdc" in written
    react = (tmp_path / ".cursor/rules/react.mdc").read_text(encoding="utf-8")
    assert react.startswith(
        "---\ndescription: React component rules\nglobs: **/*.tsx, **/*.jsx\nalwaysApply: false\n---\n"
    )
    assert "- **MUST** Always use function components." in react
    again = {d.rule.path: d for d in parse_all(_read_back(tmp_path))[0]}
    reread = again[".cursor/rules/react.mdc"]
    assert reread.rule.globs == ("**/*.tsx", "**/*.jsx")
    assert [d.severity for d in reread.directives] == ["MUST", "SHOULD", "SHOULD", "MUST", "SHOULD"]
    assert all("severity" not in d.inferred for d in reread.directives)  # the markers are read back
    core = (tmp_path / ".cursor/rules/own.mdc").read_text(encoding="utf-8")
    assert "alwaysApply: false" in core and "globs: \n" in core


def test_export_copilot_apply_to(foreign_index: Path, tmp_path: Path) -> None:
    with Index(foreign_index) as index:
        result = export_index(index, "copilot")
    write_export(result, tmp_path)
    sql = (tmp_path / ".github/instructions/sql.instructions.md").read_text(encoding="utf-8")
    assert sql.startswith('---\napplyTo: "**/*.sql"\n')
    api = (tmp_path / ".github/instructions/services-api-agents.instructions.md").read_text(encoding="utf-8")
    assert 'applyTo: "services/api/**"' in api
    reread = {d.rule.path: d.rule for d in parse_all(_read_back(tmp_path))[0]}
    assert reread[".github/instructions/sql.instructions.md"].globs == ("**/*.sql",)


def test_export_for_a_task_is_the_query_block(bundled_index: Path, tmp_path: Path) -> None:
    task = "Add user registration API endpoint"
    with Index(bundled_index) as index:
        result = export_index(index, "agents-md", task=task)
        cited = [c["id"] for c in query_directives(index, task)["citations"]]
    assert sorted(result.included) == sorted(cited)
    assert result.files[0].text.splitlines()[1] == f"# Project rules for: {task}"


def test_export_refuses_to_replace_a_hand_written_file(bundled_index: Path, tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("# Our own notes\n", encoding="utf-8")
    with Index(bundled_index) as index:
        result = export_index(index, "agents-md", 4000)
    with pytest.raises(ConfigError, match="not written by ruledex export"):
        write_export(result, tmp_path)
    assert (tmp_path / "AGENTS.md").read_text(encoding="utf-8") == "# Our own notes\n"
    write_export(result, tmp_path, force=True)
    write_export(result, tmp_path)  # our own export is replaced freely
    assert GENERATED_MARK in (tmp_path / "AGENTS.md").read_text(encoding="utf-8")


def test_export_and_globs_import_nothing_heavy() -> None:
    probe = (
        "import sys\nimport ruledex.reader.export, ruledex.reader.globs\n"
        "print([m for m in ('marko', 'yaml', 'pygit2', 'model2vec', 'torch') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_foreign_builds_are_byte_identical_and_crlf_blind(tmp_path: Path) -> None:
    lf = write_rules(tmp_path / "lf", FOREIGN)
    crlf = write_rules(tmp_path / "crlf", FOREIGN)
    for path in crlf.rglob("*"):
        if path.is_file():
            path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    first = build(lf, tmp_path / "a.ruledex")
    again = build(lf, tmp_path / "b.ruledex")
    windows = build(crlf, tmp_path / "c.ruledex")
    assert first.sha256 == again.sha256 == windows.sha256


@pytest.mark.parametrize("fmt", ["cursor", "copilot"])
def test_multi_file_export_stays_within_the_budget_together(bundled_index: Path, tmp_path: Path, fmt: str) -> None:
    budget = 9000
    with Index(bundled_index) as index:
        result = export_index(index, fmt, budget)
        total = index.n_directives
    assert result.size <= budget
    assert result.omitted and len(result.included) + len(result.omitted) == total
    written = write_export(result, tmp_path)
    assert sum(p.stat().st_size for p in written) == result.size
    cut = [f for f in result.files if "<!-- ruledex export: left out" in f.text]
    assert cut, "files that lost directives say so at their end"
    if result.omitted_rules:
        assert "whole rule(s)" in result.files[-1].text


def test_import_keeps_globs_and_always_apply_as_real_fields(tmp_path: Path) -> None:
    """Curating imported rules must not lose what files they apply to."""
    from ruledex.builder.build import build
    from ruledex.builder.importer import import_rules
    from ruledex.reader.index import Index

    src = tmp_path / "src"
    (src / ".cursor" / "rules").mkdir(parents=True)
    (src / ".cursor" / "rules" / "react.mdc").write_text(
        "---\ndescription: React\nglobs: src/**/*.tsx\nalwaysApply: true\n---\n- Always type component props.\n",
        encoding="utf-8",
    )
    out = tmp_path / "rules"
    import_rules(src, out)
    with Index(build(out, tmp_path / "imported.ruledex").path) as index:
        (rule,) = index.rules()
    assert rule.format == "ruledex"
    assert rule.globs == ("src/**/*.tsx",)
    assert rule.always_apply is True


def test_a_tight_budget_keeps_the_core_rules_and_a_little_of_every_rule(bundled_index: Path) -> None:
    """Not the MUSTs of the first rules in alphabetical order (accessibility, api-design ...) only."""
    with Index(bundled_index) as index:
        tight = export_index(index, "agents-md", 4000)
        rule_of = {d.id: index.rule(r).id for r in range(index.n_rules) for d in index.directives_of(r)}
        core_musts = [
            d.id
            for r in range(index.n_rules)
            if index.rule(r).always_apply
            for d in index.directives_of(r)
            if d.severity == "MUST"
        ]
    kept = set(tight.included)
    assert set(core_musts) <= kept, "the rules that always apply are kept first"
    assert len({rule_of[i] for i in kept}) >= 10, "many rules keep their first MUST"


def _notes(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("<!-- ruledex export:")]


@pytest.mark.parametrize("fmt", ["agents-md", "cursor", "copilot"])
@pytest.mark.parametrize("budget", [1200, 3000, 9000, 20000])
def test_every_format_stays_within_max_bytes(bundled_index: Path, tmp_path: Path, fmt: str, budget: int) -> None:
    with Index(bundled_index) as index:
        result = export_index(index, fmt, budget)
        total = index.n_directives
    written = write_export(result, tmp_path)
    assert result.size == sum(p.stat().st_size for p in written) <= budget
    assert len(result.included) + len(result.omitted) == total


@pytest.mark.parametrize("fmt", ["agents-md", "cursor", "copilot"])
def test_the_budget_goes_to_directives_not_to_lists_of_what_was_left_out(bundled_index: Path, fmt: str) -> None:
    """QA: a 32 KiB Cursor export of the Cursor corpus kept 27 directives in 19,065 bytes, 9,850 of them
    `<!-- left out ... -->` id lists. The notes are one short line each, and the budget is filled."""
    budget = 9000
    with Index(bundled_index) as index:
        result = export_index(index, fmt, budget)
        directive_ids = {d.id for r in range(index.n_rules) for d in index.directives_of(r)}
    assert result.omitted
    notes = [note for f in result.files for note in _notes(f.text)]
    assert all(len(note.encode()) <= 100 for note in notes[:-1]) and len(notes[-1].encode()) <= 200, notes
    assert not any(i in note for note in notes for i in directive_ids), "ids are for --json, not the files"
    assert sum(len(note.encode()) + 2 for note in notes) <= 0.15 * result.size
    assert result.size >= 0.95 * budget, "what the notes no longer take goes to directives"


@pytest.mark.parametrize("fmt", ["cursor", "copilot"])
def test_multi_file_notes_count_every_directive_left_out(bundled_index: Path, fmt: str) -> None:
    """Nothing dropped silently: per-file counts plus the whole rules' directives add up to the summary."""
    with Index(bundled_index) as index:
        result = export_index(index, fmt, 6000)
        size = {index.rule(r).id: len(index.directives_of(r)) for r in range(index.n_rules)}
    per_file = [note for f in result.files[:-1] for note in _notes(f.text)] + _notes(result.files[-1].text)[:-1]
    counted = sum(int(note.split("left out ")[1].split(" ")[0]) for note in per_file)
    whole = sum(size[rule] for rule in result.omitted_rules)
    summary = _notes(result.files[-1].text)[-1]
    assert counted + whole == len(result.omitted)
    assert f"left out {len(result.omitted)} of {sum(size.values())} directive(s)" in summary
    assert f"and {len(result.omitted_rules)} whole rule(s)" in summary or not result.omitted_rules


@pytest.mark.parametrize("fmt", ["agents-md", "cursor", "copilot"])
def test_a_small_budget_keeps_the_first_must_of_every_rule_that_has_one(bundled_index: Path, fmt: str) -> None:
    """docs/formats.md: within a severity, every rule's first directive of it before any rule's second
    (by rank among the rule's MUSTs, not by where the MUST sits in the file)."""
    with Index(bundled_index) as index:
        result = export_index(index, fmt, 12000)
        musts = {
            index.rule(r).id: [d.id for d in index.directives_of(r) if d.severity == "MUST"]
            for r in range(index.n_rules)
        }
    kept = set(result.included)
    assert any(len(kept & set(ids)) >= 2 for ids in musts.values()), "the budget reaches second MUSTs"
    assert all(ids[0] in kept for ids in musts.values() if ids)


def test_imported_metadata_is_read_back_as_inferred_until_a_reviewer_takes_it_out(tmp_path: Path) -> None:
    """What import guessed stays marked as guessed through a build (technologies too); a reviewed field
    (its name taken out of `inferred`) counts as the author's."""
    from ruledex.builder.keywords import written_text
    from ruledex.reader.format import RULE_DECLARED

    source = write_rules(tmp_path / "src", {".cursor/rules/react.mdc": FOREIGN[".cursor/rules/react.mdc"]})
    out = tmp_path / "rules"
    (imported,) = import_rules(source, out).files
    text = imported.text
    assert 'technologies: ["react"]' in text and 'inferred: ["layers", "topics", "technologies"' in text
    doc = parse_document(text, imported.target)
    direct = parse_all(read_sources(source))[0][0]
    assert (doc.rule.technologies, doc.rule.inferred) == (direct.rule.technologies, direct.rule.inferred)
    searched = written_text(text, imported.target)
    assert "Layer:" in text and "Layer:" not in searched and "inferred" not in searched
    with Index(build(out, tmp_path / "a.ruledex").path) as index:
        assert index.declared_share == 0.0 and index.rule(0).technologies == ("react",)
    (out / imported.target).write_text(text.replace('"topics", ', ""), encoding="utf-8")
    with Index(build(out, tmp_path / "b.ruledex").path) as index:
        assert index.rule_flags[0] & RULE_DECLARED and index.declared_share == 1.0
    (out / imported.target).write_text(text.replace('inferred: ["', 'inferred: ["guessed", "'), encoding="utf-8")
    with pytest.raises(RuleErrors, match=r"react.md:\d+: inferred: unknown field name 'guessed'; use one of"):
        build(out, tmp_path / "c.ruledex")


RTL = """
    ---
    description: RTL layout rules
    globs: **/*
    ---
    # RTL

    You are an expert in building applications that support Hebrew, Arabic, Persian and Urdu.

    ## Layout

    - Always use CSS logical properties instead of physical ones.
    - Flexbox

    | physical | logical |
    | margin-left | margin-inline-start |

    ## Fonts

    ```css
    body { font-family: Vazirmatn; }
    ```
    """


def test_import_keeps_the_words_of_text_that_states_no_directive(tmp_path: Path) -> None:
    """QA: an intro persona line, a one-word item, a table and code under a heading with no instruction
    make no directive; the import dropped them while a direct build searches the source file whole, so
    the RTL rule was not found for "Arabic and Hebrew" once imported (nDCG@10 0.964 -> 0.174)."""
    from ruledex.reader.text import keywords

    source = write_rules(tmp_path / "src", {".cursor/rules/rtl.mdc": RTL})
    out = tmp_path / "rules"
    (imported,) = import_rules(source, out).files
    text = imported.text
    assert "\n> You are an expert in building applications that support Hebrew, Arabic" in text
    assert "> - Flexbox" in text and "> | margin-left | margin-inline-start |" in text
    assert "```css\nbody { font-family: Vazirmatn; }\n```" in text
    doc = parse_document(text, imported.target)
    direct = parse_all(read_sources(source))[0][0]
    assert shape([doc]) == shape([direct]) and len(doc.directives) == 1  # no note became a directive
    assert doc.rule.description == direct.rule.description == "RTL layout rules"
    with (
        Index(build(source, tmp_path / "direct.ruledex").path) as built_directly,
        Index(build(out, tmp_path / "imported.ruledex").path) as built_imported,
    ):
        for word in keywords("Hebrew Arabic Persian Urdu expert flexbox margin Vazirmatn"):
            counts = [i.rule_postings(i.term_id(word))[1].tolist() for i in (built_directly, built_imported)]
            assert counts[0] == counts[1] != [], word  # the rule's whole text holds each word as often


def test_import_writes_nested_items_too_long_to_fold_as_directives_not_notes(tmp_path: Path) -> None:
    from .test_adapters import LONG_NESTED

    source = write_rules(tmp_path / "src", {".cursor/rules/errors.mdc": LONG_NESTED})
    (imported,) = import_rules(source, tmp_path / "rules").files
    text = imported.text
    assert "- [SHOULD] Use early returns for error conditions to avoid deeply nested if statements." in text
    assert "- [MUST] Prioritize error handling and edge cases: Never swallow errors." in text
    assert text.count("Use early returns") == 1  # not also quoted as a note
    assert "> - Sentry" in text
    doc = parse_document(text, imported.target)
    direct = parse_all(read_sources(source))[0][0]
    assert shape([doc]) == shape([direct]) and len(doc.directives) == 7


HAND_WRITTEN = "# Team notes\n\n- Always run `make lint` before pushing.\n- Never commit `.env` files.\n"


def _quick_start() -> list[list[str]]:
    """The commands of docs/formats.md's first snippet, as written (comments dropped)."""
    import re
    import shlex

    from .conftest import REPO

    text = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, flags=re.S)
    assert block, "docs/formats.md keeps its quick-start snippet"
    return [shlex.split(line, comments=True)[1:] for line in block.group(1).splitlines() if line.strip()]


def _directives(stdout: str) -> int:
    return int(stdout.split(" sections, ")[1].split(" directives")[0])


def test_the_formats_quick_start_works_as_written_and_does_not_feed_on_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """QA: run literally, the snippet's export failed on the hand-written AGENTS.md (with --force it
    replaced it), and each `ruledex build .` then read the export too: directives 16 -> 32 -> 63."""
    repo = write_rules(
        tmp_path / "repo", {k: v for k, v in FOREIGN.items() if k not in ("own.md", "rules/database.md")}
    )
    (repo / "AGENTS.md").write_text(HAND_WRITTEN, encoding="utf-8")
    monkeypatch.chdir(repo)
    commands = _quick_start()
    assert [c[0] for c in commands] == ["build", "query", "import", "build", "export"]
    counts = []
    for argv in commands:
        code, stdout, err = run(argv, capsys)
        assert code == 0, (argv, err)
        if argv[0] == "build":
            counts.append(_directives(stdout))
    assert counts[0] == counts[1] > 0, "the curated documents hold what the sources held"
    assert (repo / "AGENTS.md").read_text(encoding="utf-8") == HAND_WRITTEN
    exported = [p for p in repo.rglob("AGENTS.md") if GENERATED_MARK in p.read_text(encoding="utf-8")]
    assert len(exported) == 1
    # again, with the export inside the folders that are read: it is skipped, nothing grows
    shutil.copy(exported[0], repo / "rules" / "AGENTS.md")
    code, stdout, err = run(["import", ".", "--out", "rules/", "--force", "--json"], capsys)
    assert code == 0 and sum("generated by ruledex export" in s for s in json.loads(stdout)["skipped"]) == 2
    code, stdout, _ = run(["build", "rules/"], capsys)
    assert _directives(stdout) == counts[1] and "skipped 1 file(s) generated by ruledex export" in stdout


def test_build_and_check_skip_what_export_wrote_beside_the_sources(tmp_path: Path) -> None:
    from ruledex.builder.check import check

    source = write_rules(tmp_path / "src", FOREIGN)
    first = build(source, tmp_path / "a.ruledex")
    with Index(first.path) as index:
        write_export(export_index(index, "agents-md"), source)
        write_export(export_index(index, "cursor"), source / "sub")
    again = build(source, tmp_path / "b.ruledex")
    assert again.directives == first.directives and again.generated == 1 + first.rules
    assert again.sha256 == first.sha256
    assert not [f for f in check(source) if "AGENTS.md" in f.path or f.path.startswith("sub/")]


def test_export_task_and_max_items_are_checked_like_querys(
    bundled_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty --task exported the whole index; --max-items 0 or -3 passed silently as 3."""
    base = ["export", "--format", "agents-md", "--out", str(tmp_path / "out"), "--index", str(bundled_index)]
    code, _, err = run([*base, "--task", "  "], capsys)
    assert code == 2 and "--task: must be a non-empty task; leave --task out to export the whole index" in err
    with pytest.raises(SystemExit) as caught:
        main([*base, "--task", "Add a login endpoint", "--max-items", "0"])
    assert caught.value.code == 2 and "--max-items: must be at least 1, got 0" in capsys.readouterr().err
    code, _, err = run([*base, "--task", "Add a login endpoint", "--max-items", "40"], capsys)
    assert code == 0 and "ruledex: note: options.maxItems 40 is outside 3-12: used 12" in err


def test_importing_nothing_is_a_failure_that_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It printed "Imported 0 file(s) ...; review them, then run `ruledex build`" and exited 0."""
    source = write_rules(tmp_path / "src", {"notes.txt": "Lunch is at noon.\n"})
    code, out, err = run(["import", str(source / "notes.txt"), "--out", str(tmp_path / "out")], capsys)
    assert code == 1 and out == "" and "notes.txt:1: directives: none found" in err
    assert f"{source / 'notes.txt'}: nothing imported: every rule file was skipped (above)" in err
    (tmp_path / "none").mkdir()
    code, out, err = run(["import", str(tmp_path / "none"), "--out", str(tmp_path / "out"), "--json"], capsys)
    assert code == 1 and json.loads(out)["files"] == [] and "nothing imported: it holds no rule files" in err
    assert not (tmp_path / "out").exists()
