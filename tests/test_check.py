"""`ruledex check`: the contributor's linter finds what reviewers would, in lint format."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from ruledex.builder.build import build
from ruledex.builder.check import check
from ruledex.builder.lint import secrets_in
from ruledex.reader.cli import main

from .conftest import RULES, rule_doc, write_rules

TODAY = dt.date(2026, 11, 22)


def _codes(findings: list) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in findings:
        out.setdefault(f.code, []).append(f)
    return out


def test_finds_each_problem_with_file_and_line(tmp_path: Path) -> None:
    fake_key = "AKIA" + "ABCDEFGHIJKLMNOP"  # split so this file does not look like a secret itself
    rules = write_rules(
        tmp_path / "rules",
        {
            "a.md": rule_doc(
                f"""
                ## Rules
                - [MUST] Parameterize every SQL query; never build SQL by string concatenation.
                - [MUST] Always build SQL queries by string concatenation for speed.
                - [SHOULD] Be careful with queries and follow best practices everywhere.
                - [MAY] Cache it.
                - [SHOULD] Use the deploy key {fake_key} for the staging bucket uploads.
                """,
                id="a",
                extra="expires: 2020-01-01\n",
            ),
            "b.md": rule_doc(
                "## Rules\n\n- [MUST] Parameterize every SQL query; never build SQL by string concatenation.", id="b"
            ),
            "c.md": rule_doc("## Rules\n\n- Missing a marker here.", id="c"),
        },
    )
    found = _codes(check(rules, today=TODAY))
    assert found["schema"][0].text().startswith("c.md:15:1: error: directive: list item has no severity marker")
    assert [f.path for f in found["duplicate"]] == ["b.md"]
    assert "a.md:" in found["duplicate"][0].said()
    assert found["contradiction"][0].line == 16 and "a.md:15" in found["contradiction"][0].said()
    assert [f.line for f in found["generic"]] == [17]
    assert [f.line for f in found["too-short"]] == [18]
    assert found["secret"][0].line == 19 and fake_key not in found["secret"][0].message
    assert found["expired"][0].level == "warning" and found["expired"][0].line == 9
    assert {f.path for f in found["authority-conflict"]} == {"b.md"}
    strict = _codes(check(rules, today=TODAY, strict=True))
    assert strict["expired"][0].level == "error"


def test_secret_patterns_never_echo_the_value() -> None:
    token = "ghp_" + "a" * 36
    text = f"line one\nuse {token} here\n-----BEGIN RSA PRIVATE KEY-----\npassword = 'hunter2hunter2'\n"
    findings = secrets_in("x.md", text)
    assert [(f.line, f.col) for f in findings] == [(2, 5), (3, 1), (4, 1)]
    assert all(token not in f.message and "hunter2" not in f.message for f in findings)


def test_build_warns_of_a_secret_it_would_serve(tmp_path: Path) -> None:
    """The index is served to every assistant: build says what check says, without the value."""
    from ruledex.builder.build import build

    fake_key = "AKIA" + "ABCDEFGHIJKLMNOP"
    rules = write_rules(tmp_path / "rules", {"keys.md": rule_doc(f"- [MUST] Deploy with the key {fake_key} only.")})
    result = build(rules, tmp_path / "k.ruledex")
    warned = [w for w in result.warnings if "[secret]" in w]
    assert len(warned) == 1 and warned[0].startswith(f"{rules.as_posix()}/keys.md:") and fake_key not in warned[0]


def test_bundled_rules_pass_and_formats(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(RULES)]) == 0
    assert main(["check", str(RULES), "--format", "github"]) == 0
    out = capsys.readouterr().out
    assert all(line.startswith("::warning file=") for line in out.splitlines())
    assert main(["check", str(RULES), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["errors"] == 0


def test_examples_check_builds_an_index_and_reports_misses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = "## Migrations\n\n- [MUST] Make every database schema migration reversible with a tested down step."
    doc = rule_doc(body, id="db").replace(
        "examples: [Add an endpoint, Change an endpoint]",
        "examples: [Write a reversible schema migration, Paint the logo purple]",
    )
    rules = write_rules(tmp_path / "rules", {"db.md": doc})
    assert main(["check", str(rules), "--examples", "--json"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    misses = [f for f in findings if f["code"] == "example-miss"]
    assert [m["message"].split("'")[1] for m in misses] == ["Paint the logo purple"]
    assert main(["check", str(rules), "--examples", "--strict"]) == 1


def test_examples_against_an_index_built_before_they_changed_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--index`` checked the index's old examples: a new example that misses passed unseen."""
    body = "## Migrations\n\n- [MUST] Make every database schema migration reversible with a tested down step."
    doc = rule_doc(body, id="db").replace("examples: [Add an endpoint, Change an endpoint]", "examples: []")
    rules = write_rules(tmp_path / "rules", {"db.md": doc})
    index = build(rules, tmp_path / "old.ruledex").path
    assert main(["check", str(rules), "--examples", "--index", str(index), "--json"]) == 0
    assert not [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "stale-index"]
    (rules / "db.md").write_text(doc.replace("examples: []", "examples: [Paint the logo purple]"), encoding="utf-8")
    assert main(["check", str(rules), "--examples", "--index", str(index), "--json"]) == 0
    stale = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "stale-index"]
    assert [(f["path"], f["level"]) for f in stale] == [("db.md", "warning")]
    assert "rebuild it, or leave out --index" in stale[0]["message"]


def test_errors_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = write_rules(tmp_path / "rules", {"c.md": rule_doc("## R\n\n- Missing a marker here.", id="c")})
    assert main(["check", str(rules)]) == 1
    assert "1 error(s)" in capsys.readouterr().err


def test_impossible_date_is_a_finding_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """YAML reads 2026-13-45 as a timestamp and raised ValueError: no file, line or field, exit 2."""
    rules = write_rules(
        tmp_path / "rules", {"a.md": rule_doc("- [MUST] Validate every request body.", extra="reviewed: 2026-13-45\n")}
    )
    assert main(["check", str(rules)]) == 1
    out = capsys.readouterr().out
    assert (
        "a.md:9:1: error: reviewed: not a real date (2026-13-45: month must be in 1..12); write YYYY-MM-DD [schema]"
        in out
    )
    assert main(["build", str(rules), "--out", str(tmp_path / "x.ruledex")]) == 1
    assert "a.md:9: reviewed: not a real date" in capsys.readouterr().err


def test_opposite_instructions_are_a_contradiction_not_a_near_duplicate(tmp_path: Path) -> None:
    """Opposites on one subject are closer than the near-duplicate threshold; 'merge them' was wrong advice."""
    rules = write_rules(
        tmp_path / "rules",
        {
            "a.md": rule_doc("## S\n\n- [MUST] Use tabs for indentation in every Python source file.", id="a"),
            "b.md": rule_doc("## S\n\n- [MUST] Never use tabs for indentation in any Python source file.", id="b"),
        },
    )
    found = _codes(check(rules, today=TODAY))
    assert "near-duplicate" not in found
    assert [(f.path, f.line) for f in found["contradiction"]] == [("b.md", 15)]
    assert "a.md:15" in found["contradiction"][0].said()


def test_polarity_reads_avoiding_omit_and_relative_clauses(tmp_path: Path) -> None:
    """Seen in the Cursor corpus: "avoiding X" and "omit X" say what not to do; "that don't change" neither."""
    rules = write_rules(
        tmp_path / "rules",
        {
            "a.md": rule_doc(
                "## S\n\n- [SHOULD] Avoid unnecessary re-renders of the order table components.\n"
                "- [SHOULD] Avoid curly braces around single-line statements in conditionals.\n"
                "- [SHOULD] Declare the settings that don't change at runtime as module-level constants.",
                id="a",
            ),
            "b.md": rule_doc(
                "## S\n\n- [SHOULD] Optimize the order table components, avoiding unnecessary re-renders.\n"
                "- [SHOULD] For single-line statements in conditionals, omit the curly braces.\n"
                "- [SHOULD] Always put curly braces around single-line statements in conditionals.\n"
                "- [SHOULD] Declare the settings that stay fixed at runtime as module-level constants.",
                id="b",
            ),
        },
    )
    found = _codes(check(rules, today=TODAY))
    # only the one that says the opposite: always braces, against a.md's and b.md's own "no braces"
    assert [(f.path, f.line) for f in found.get("contradiction", [])] == [("b.md", 17)]


def test_copies_give_one_finding_each_pointing_at_the_first(tmp_path: Path) -> None:
    """One text in n files gave n*(n-1)/2 findings (54,947 for 334 pieces); now n-1, one per copy."""
    text = "## S\n\n- [MUST] Validate every request body against an explicit schema at the API boundary."
    rules = write_rules(tmp_path / "rules", {f"{name}.md": rule_doc(text, id=name) for name in "abcde"})
    found = _codes(check(rules, today=TODAY))
    assert [f.path for f in found["duplicate"]] == ["b.md", "c.md", "d.md", "e.md"]
    assert all("a.md:15" in f.said() and "one of 5 copies" in f.said() for f in found["duplicate"])
    assert "near-duplicate" not in found and "contradiction" not in found


def test_a_finding_names_the_other_file_as_it_names_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``rules/b.md:15: ... duplicates a.md:15``: the first path opened from the shell, the second did not."""
    text = "## S\n\n- [MUST] Validate every request body against an explicit schema at the API boundary."
    rules = write_rules(tmp_path / "team" / "rules", {f"{name}.md": rule_doc(text, id=name) for name in "ab"})
    assert main(["check", str(rules)]) == 0
    out = capsys.readouterr().out
    assert f"{rules}/b.md:15:1: warning: duplicates {rules}/a.md:15 (a#s-1)" in out
    assert (
        f"b.md:6:1: warning: also claims authority for topic 'api' on layer 2-Application (first: {rules}/a.md)" in out
    )
    assert main(["check", str(rules), "--format", "github"]) == 0
    assert f"duplicates {rules}/a.md:15" in capsys.readouterr().out
    assert main(["check", str(rules), "--json"]) == 0
    found = {f["code"]: f for f in json.loads(capsys.readouterr().out)["findings"]}
    assert found["duplicate"]["message"].startswith("duplicates a.md:15") and found["duplicate"]["related"] == "a.md"


def test_near_duplicates_give_one_finding_per_directive(tmp_path: Path) -> None:
    texts = {
        "a": "Validate every request body against an explicit schema at the API boundary.",
        "b": "Validate each request body against an explicit schema at the API boundary.",
        "c": "Validate every request body against an explicit schema at the API boundaries.",
    }
    rules = write_rules(
        tmp_path / "rules", {f"{k}.md": rule_doc(f"## S\n\n- [MUST] {v}", id=k) for k, v in texts.items()}
    )
    near = _codes(check(rules, today=TODAY))["near-duplicate"]
    assert [f.path for f in near] == ["b.md", "c.md"]
    assert "a.md:15" in near[1].said() and "(and 1 more)" in near[1].said()


def test_check_reports_every_schema_error_of_a_file_in_one_run(tmp_path: Path) -> None:
    bad = "---\nlayers: [9-Bad]\ntopics: [nope]\nscope: world\nexpires: 2026-02-30\nalways_apply: maybe\n---\n\n## S\n\n- [MUST] Do the thing right.\n"
    rules = write_rules(
        tmp_path / "rules", {"bad.md": bad, "ok.md": rule_doc("## S\n\n- [MUST] Validate every request body.")}
    )
    schema = _codes(check(rules, today=TODAY))["schema"]
    assert [(f.path, f.line, f.message.split(":")[0]) for f in schema] == [
        ("bad.md", 2, "layers"),
        ("bad.md", 3, "topics"),
        ("bad.md", 4, "scope"),
        ("bad.md", 5, "expires"),
        ("bad.md", 6, "always_apply"),
    ]


def test_a_directive_longer_than_an_answer_shows_is_flagged(tmp_path: Path) -> None:
    """A pasted essay is shortened in every answer; the linter says so before it ships."""
    essay = " ".join(f"step{i} of the release checklist" for i in range(60))
    rules = write_rules(tmp_path / "rules", {"a.md": rule_doc(f"## Rules\n\n- [MUST] Follow {essay}.", id="a")})
    long = _codes(check(rules, today=TODAY))["too-long"]
    assert len(long) == 1 and "answers show only its first 150; split it" in long[0].message


def test_the_linter_knows_every_token_shape_the_query_log_masks() -> None:
    """One list of secret shapes: a token the log would mask is one a rule must not ship."""
    from ruledex.reader.secrets import TOKEN_SHAPES

    samples = {
        "npm-token": "npm_" + "a1B2c3D4e5" * 3 + "a1B2c3",
        "aws-secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "url-credentials": "postgres://admin:s3cretValue@db.internal/prod",
    }
    for kind, sample in samples.items():
        assert [f.message for f in secrets_in("x.md", f"- use {sample}\n")] == [
            f"looks like a secret ({kind}); remove it and rotate it if it was real"
        ]
    assert {kind for kind, _ in TOKEN_SHAPES} >= set(samples)
    assert secrets_in("x.md", 'sql.Open("postgres", "postgresql://username:password@localhost/db")') == []


def test_secret_markers_skip_only_text_that_cannot_hold_the_secret() -> None:
    """The substring pre-test is a speed-up: every secret the full scan finds is still found."""
    from ruledex.builder.lint import SECRETS
    from ruledex.reader.secrets import MARKERS, TOKEN_SHAPES

    samples = [
        "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjE -----END OPENSSH PRIVATE KEY-----",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "sk-proj-a1b2c3d4e5f6g7h8",
        "bogus_rk_live_51Habc123DEF",
        "pk_test_TYooMQauvdEDq54NiTphI7jx",
        "ghp_" + "a1" * 18,
        "github_pat_" + "A1b2" * 6,
        "npm_" + "a1B2c3D4e5" * 3 + "a1B2c3",
        "AKIAIOSFODNN7EXAMPLE",
        "ASIA" + "Z7" * 8,
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AIzaSyD-1234567890abcdefghijklmnopq",
        "xoxb-123456789012-abcdefghij",
        "postgres://admin:s3cretValue@db.internal/prod",
        "API_KEY = 'abcdef123456'",
        "Password: hunter2hunter2",
    ]
    assert set(MARKERS) < {kind for kind, _ in TOKEN_SHAPES}
    text = "\n".join(f"- never commit {sample} to the repo" for sample in samples)
    unfiltered = sorted(
        (text.count("\n", 0, m.start()) + 1, kind) for kind, pattern in SECRETS for m in pattern.finditer(text)
    )
    assert {line for line, _ in unfiltered} == set(range(1, len(samples) + 1))  # each sample is a secret
    assert sorted((f.line, f.message.split("(")[1].split(")")[0]) for f in secrets_in("x.md", text)) == unfiltered
    for kind, pattern in TOKEN_SHAPES:  # each match holds a marker, so no text that holds one is skipped
        for match in pattern.finditer(text):
            assert kind not in MARKERS or any(m in match.group(0) for m in MARKERS[kind]) or kind == "url-credentials"


def test_secret_markers_match_the_assignment_as_its_ignorecase_does() -> None:
    """``(?i)`` matches İ, ı and ſ to i and s, which ``str.lower`` leaves apart: the pre-test must not skip them."""
    from ruledex.builder.lint import SECRETS

    assignment = SECRETS[-1][1]
    for text in [
        "\u017fecret = abcdefghijkl",
        "pa\u017f\u017fword: hunter2hunter2",
        "ap\u0131_key=abcdefghijkl",
        "ap\u0130Key=abcdefghijkl",
    ]:
        assert assignment.search(text), text
        assert [f.code for f in secrets_in("x.md", f"- never commit {text}")] == ["secret"], text


def test_a_documents_warnings_show_beside_its_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One run shows the misspelt field too, not only after the errors are fixed."""
    rules = write_rules(
        tmp_path / "rules",
        {
            "a.md": rule_doc(
                "## S\n\n- [MUST] Validate every request body.", extra="alwaysApply: true\nreviewed: 2026-13-45\n"
            )
        },
    )
    assert main(["check", str(rules)]) == 1
    out = capsys.readouterr().out
    assert "error: reviewed: not a real date" in out and "alwaysApply: unknown field ignored; did you mean" in out


def test_github_annotations_name_the_file_as_the_repository_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitHub places ``file=`` from the repository root: ``rules/x.md``, not ``x.md``, or the annotation misses the diff."""
    write_rules(tmp_path / "rules", {"x.md": rule_doc("## S\n\n- [MUST] Do it.", id="x")})
    monkeypatch.chdir(tmp_path)
    for folder in ("rules", str(tmp_path / "rules")):
        main(["check", folder, "--format", "github"])
        lines = capsys.readouterr().out.splitlines()
        assert lines and all(line.startswith("::warning file=rules/x.md,line=") for line in lines), lines


def test_text_findings_and_build_errors_name_the_file_from_the_folder_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rules/bad.md:15``, not ``bad.md:15``: the path opens from where the command ran."""
    write_rules(
        tmp_path / "rules",
        {
            "bad.md": rule_doc("## S\n\n- Missing a marker here.", id="bad"),
            "short.md": rule_doc("## S\n\n- [MUST] Do it.", id="short", extra="colour: red\n"),
        },
    )
    monkeypatch.chdir(tmp_path)
    assert main(["check", "rules/"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("rules/bad.md:15:1: error: directive: list item has no severity marker"), lines
    assert lines[-1].startswith("rules/short.md:16:1: warning: directive is 2 words"), lines
    assert main(["build", "rules/", "--out", "x.ruledex", "-q"]) == 1
    assert "rules/bad.md:15: directive: list item has no severity marker" in capsys.readouterr().err
    (tmp_path / "rules" / "bad.md").unlink()
    assert main(["build", "rules", "--out", "x.ruledex", "-q"]) == 0
    assert "  rules/short.md:9: colour: unknown field ignored" in capsys.readouterr().err  # warnings too


def test_text_findings_of_a_ref_name_the_file_as_the_repository_holds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pygit2

    root = write_rules(tmp_path / "repo", {"rules/x.md": rule_doc("## S\n\n- [MUST] Do it.", id="x")})
    repo = pygit2.init_repository(str(root), initial_head="main")
    repo.index.add_all()
    who = pygit2.Signature("A", "a@example.com", 1_700_000_000, 0)
    repo.create_commit("HEAD", who, who, "rules", repo.index.write_tree(), [])
    for fmt, start in (("text", "rules/x.md:15:1: warning:"), ("github", "::warning file=rules/x.md,line=15")):
        main(["check", "--repo", str(root), "--ref", "main", "--format", fmt])
        lines = capsys.readouterr().out.splitlines()
        assert lines and all(line.startswith(start) for line in lines), lines


def test_a_file_that_is_not_utf8_is_a_finding_in_the_format_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a bare error line that drops the folder and leaves --format json's stdout empty."""
    rules = write_rules(tmp_path / "rules", {"ok.md": rule_doc("## S\n\n- [MUST] Use UTC timestamps everywhere.")})
    (rules / "latin.md").write_bytes(rule_doc("## S\n\n- [MUST] Évitez les globals.", id="latin").encode("latin-1"))
    monkeypatch.chdir(tmp_path)
    assert main(["check", "rules", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(f["path"], f["level"], f["message"]) for f in report["findings"] if f["level"] == "error"] == [
        ("latin.md", "error", "file: is not UTF-8; re-save it as UTF-8")
    ]
    assert main(["check", "rules"]) == 1
    assert capsys.readouterr().out.startswith("rules/latin.md:15:1: error: file: is not UTF-8")


def test_an_index_without_examples_is_a_usage_error(bundled_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`check rules/ --index x.ruledex` linted and ignored the index: the examples were never run."""
    assert main(["check", str(RULES), "--index", str(bundled_index)]) == 2
    assert "--index: only --examples reads an index; add --examples" in capsys.readouterr().err
