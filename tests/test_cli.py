"""The command line: every verb works, errors go to stderr with exit codes 0/1/2."""

from __future__ import annotations

import builtins
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from ruledex.builder.commands import _require_build_deps
from ruledex.reader.cli import build_parser, main
from ruledex.reader.errors import ConfigError

from .conftest import RULES, rule_doc, write_rules


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_build_then_query_from_dist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["build", str(RULES)], capsys)
    assert code == 0
    assert "found" in err and "wrote" in err  # progress on stderr
    assert out.startswith("Built dist/") and "directives" in out
    code, out, _ = run(["query", "Add user registration API endpoint"], capsys)  # newest in ./dist
    assert code == 0
    assert "security#input-validation-1" in out
    code, out, _ = run(["query", "Add user registration API endpoint", "--json"], capsys)
    payload = json.loads(out)
    assert set(payload) == {"context_block", "citations", "diagnostics"}
    assert {"detectedLayer", "topics", "keywords", "confidence", "retrievalStats", "executionTimeMs"} <= set(
        payload["diagnostics"]
    )
    assert set(payload["diagnostics"]["retrievalStats"]) == {"searched", "considered", "selected"}


def test_build_json_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["build", str(RULES), "--out", str(tmp_path / "r.ruledex"), "--json", "-q"], capsys)
    summary = json.loads(out)
    assert code == 0
    assert summary["rules"] >= 12 and summary["directives"] >= 150
    assert len(summary["sha256"]) == 64


def test_build_errors_name_file_line_and_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = write_rules(
        tmp_path / "rules",
        {
            "good.md": rule_doc("## S\n\n- [MUST] Do the thing."),
            "bad.md": rule_doc("## S\n\n- Missing marker.", id="bad"),
        },
    )
    out = tmp_path / "x.ruledex"
    code, _, err = run(["build", str(rules), "--out", str(out), "-q"], capsys)
    assert code == 1
    assert "bad.md:15: directive: list item has no severity marker" in err
    assert not out.exists()


def test_a_failed_build_lists_its_warnings_after_its_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count said warnings and only errors followed; now every one is listed, errors first."""
    write_rules(
        tmp_path / "rules",
        {
            "bad.md": rule_doc("## S\n\n- Missing marker.", id="bad", extra="colour: red\n"),
            "odd.md": rule_doc("## S\n\n- [MUST] Version every public endpoint.", id="odd", extra="size: big\n"),
        },
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["build", "rules", "--out", "x.ruledex", "-q"], capsys)
    assert code == 1 and out == "" and not (tmp_path / "x.ruledex").exists()
    assert err.splitlines() == [
        "rules/bad.md:16: directive: list item has no severity marker; start it with [MUST], [SHOULD] or [MAY], "
        "or set `severity:` in the front matter",
        "2 warning(s):",
        "  rules/bad.md:9: colour: unknown field ignored; known fields are listed in rules/CONTRIBUTING.md",
        "  rules/odd.md:9: size: unknown field ignored; known fields are listed in rules/CONTRIBUTING.md",
        "ruledex: error: 1 error(s), 2 warning(s); no index written",
    ]


def test_detect_list_show_info_verify(bundled_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = str(bundled_index)
    code, out, _ = run(["detect", "Add a login button to the header", "--index", idx, "--json"], capsys)
    assert code == 0 and json.loads(out)["detectedLayer"] == "1-Presentation"
    code, out, _ = run(["list", "--index", idx, "--json"], capsys)
    assert code == 0 and "security" in {r["domain"] for r in json.loads(out)}
    code, out, _ = run(["show", "security", "--index", idx], capsys)
    assert code == 0 and out.startswith("# Application security") and "Input validation" in out
    assert "\nWhen to apply: " in out and "\nExample tasks: " in out  # what tasks are matched against
    code, out, err = run(["show", "secur", "--index", idx], capsys)
    assert code == 1 and "closest: security" in err
    code, out, err = run(["show", "zzzz", "--index", idx], capsys)
    assert code == 1 and "closest" not in err and "no domain is spelled like it (see `ruledex list`)" in err
    code, out, _ = run(["info", idx], capsys)
    assert code == 0 and "directives" in out and "model:" in out
    assert re.search(r"246 directives, \d+ example tasks", out)  # the bundled rules' examples are matched too
    code, out, _ = run(["info", idx, "--json"], capsys)
    assert json.loads(out)["format_version"] == [1, 3]
    code, out, _ = run(["verify", idx], capsys)
    assert code == 0 and out.startswith("ok: ")


def test_usage_errors_exit_2(bundled_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["query"])
    assert caught.value.code == 2
    with pytest.raises(SystemExit) as caught:
        main(["query", "x", "--mode", "dance"])
    assert caught.value.code == 2
    code, _, err = run(["query", "x", "--index", str(bundled_index), "--severity", "OFTEN"], capsys)
    assert code == 2 and "--severity: unknown value" in err and "MUST, SHOULD, MAY" in err


def test_missing_index_is_a_failure_with_a_remedy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["query", "anything"], capsys)
    assert code == 1 and "ruledex build" in err
    code, _, err = run(["query", "anything", "--index", "nope.ruledex"], capsys)
    assert code == 1 and "nope.ruledex" in err


def test_build_without_builder_dependencies_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: object, **kwargs: object) -> object:
        if name in ("marko", "model2vec"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ConfigError, match=r"pip install 'ruledex\[build\]'") as caught:
        _require_build_deps()
    assert "marko" in str(caught.value) and "model2vec" in str(caught.value)


def test_every_subcommand_has_an_example() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        assert "Example:" in (p.epilog or ""), name


def test_empty_rules_folder_via_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rules").mkdir()
    code, out, err = run(["build", str(tmp_path / "rules"), "--out", str(tmp_path / "e.ruledex"), "-q"], capsys)
    assert code == 0 and "0 directives" in out
    assert "other rule files found" in err and "the index will be empty" in err, "said, not silent"
    code, out, _ = run(["query", "Add an endpoint", "--index", str(tmp_path / "e.ruledex"), "--json"], capsys)
    assert code == 0 and "index is empty" in json.loads(out)["diagnostics"]["notes"][0]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_manifest_records_git_commit_and_dirty_flag(tmp_path: Path) -> None:
    import pygit2

    from ruledex.builder.build import build
    from ruledex.reader.index import Index

    repo_dir = tmp_path / "repo"
    rules = write_rules(repo_dir / "rules", {"a.md": rule_doc("## S\n\n- [MUST] Do the thing.")})
    repo = pygit2.init_repository(str(repo_dir))
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("T", "t@example.com", 1_700_000_000, 0)
    commit = repo.create_commit("HEAD", sig, sig, "rules", repo.index.write_tree(), [])
    result = build(rules, tmp_path / "a.ruledex")
    with Index(result.path) as idx:
        assert idx.manifest["source"]["commit"] == str(commit)
        assert idx.manifest["source"]["dirty"] is False
        assert idx.manifest["source"]["path"] == "rules"
        assert idx.manifest["build_time"] == "2023-11-14T22:13:20Z"
    (rules / "a.md").write_text(rule_doc("## S\n\n- [MUST] Do another thing."), encoding="utf-8")
    with Index(build(rules, tmp_path / "b.ruledex").path) as idx:
        assert idx.manifest["source"]["dirty"] is True
    assert os.path.exists(tmp_path / "b.ruledex.sha256")


def test_paths_that_are_not_what_the_command_needs_are_one_line_errors(
    bundled_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each of these was a traceback, a silent pass, or a file written elsewhere (QA, 2026-11-24)."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["check", str(tmp_path / "nope")], capsys)
    assert code == 1 and "not a folder of rule documents" in err, "a typo in CI must not go green"
    code, _, err = run(["build", "-q"], capsys)  # no rules/ here: a team with only Cursor rules or an AGENTS.md
    assert code == 1 and "`.` reads a repository's .cursor/rules, AGENTS.md" in err
    code, _, err = run(["build", str(RULES), "--name", "../../evil", "-q"], capsys)
    assert code == 1 and "--name" in err and not list(tmp_path.parent.glob("evil*"))
    (tmp_path / "folder").mkdir()
    code, _, err = run(["build", str(RULES), "--out", str(tmp_path / "folder"), "-q"], capsys)
    assert code == 1 and "is a folder" in err and "Traceback" not in err
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    code, _, err = run(["export", "--format", "agents-md", "--out", "a-file", "--index", str(bundled_index)], capsys)
    assert code == 1 and "a-file: is a file; --out takes the folder" in err
    code, _, err = run(["diff", str(bundled_index), "missing.ruledex"], capsys)
    assert code == 1 and "missing.ruledex: no such index file" in err
    code, _, err = run(["detect", "  "], capsys)
    assert code == 2 and "non-empty" in err


def test_query_options_out_of_range_say_so(bundled_index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ruledex.reader.options import QueryOptions

    code, _, err = run(["query", "Add an endpoint", "--index", str(bundled_index), "--token-budget", "50"], capsys)
    assert code == 0 and "tokenBudget 50 is outside 100-8000: used 100" in err
    with pytest.raises(SystemExit) as caught:
        main(["query", "x", "--token-budget", "-5"])
    assert caught.value.code == 2
    for bad in ({"layer": ["2-Application", "7-Deployment"]}, {"layer": []}, {"tokenBudget": float("nan")}):
        with pytest.raises(ValueError, match=r"options\.(layer|tokenBudget)"):
            QueryOptions.from_dict(bad)
    with pytest.raises(ValueError, match=r"options\.maxItems"):
        QueryOptions.from_dict({"maxItems": 1e400})


def test_option_names_are_read_in_any_case() -> None:
    """A client writes "Security" or "4-persistence" as readily as "must": each means the vocabulary's name."""
    from ruledex.reader.options import QueryOptions

    got = QueryOptions.from_dict(
        {"topicsBias": ["Security ", "API"], "layer": "4-persistence", "severityFilter": "must"}
    )
    assert (got.topicsBias, got.layer, got.severityFilter) == (("security", "api"), "4-Persistence", ("MUST",))
    with pytest.raises(ValueError, match=r"options\.topicsBias: unknown value 'secure'"):
        QueryOptions.from_dict({"topicsBias": "secure"})


def test_verify_json_reports_a_failure_on_stdout_too(
    bundled_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damaged = tmp_path / "damaged.ruledex"
    data = bytearray(bundled_index.read_bytes())
    data[-100] ^= 0xFF
    damaged.write_bytes(bytes(data))
    code, out, err = run(["verify", str(damaged), "--json"], capsys)
    assert code == 1 and "checksum mismatch" in err
    verdict = json.loads(out)
    assert verdict["ok"] is False and verdict["section"] and "checksum mismatch" in verdict["error"]
    code, out, _ = run(["verify", str(bundled_index), "--json"], capsys)
    assert code == 0 and json.loads(out)["ok"] is True


@pytest.mark.parametrize("command", [["list"], ["show", "core"], ["detect", "hi"], ["export", "--format", "cursor"]])
def test_commands_of_one_index_refuse_a_second(
    command: list[str], bundled_index: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only query and serve layer several indexes; elsewhere a second --index must not win silently."""
    out = ["--out", str(tmp_path)] if command[0] == "export" else []
    with pytest.raises(SystemExit) as done:
        main([*command, *out, "--index", str(bundled_index), "--index", str(bundled_index)])
    assert done.value.code == 2
    assert "--index: given twice; this command reads one index" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--topic", "foo"], "--topic: unknown value 'foo'"),
        (["--layer", "9-Foo"], "--layer: unknown value '9-Foo'"),
        (["--severity", "X"], "--severity: unknown value 'X'"),
    ],
)
def test_query_errors_name_the_flags_typed(
    flags: list[str], message: str, bundled_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The MCP tool says options.topicsBias; the command line says --topic."""
    assert main(["query", "Add an endpoint", "--index", str(bundled_index), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ruledex: error: {message}") and "options." not in err
    assert main(["query", " ", "--index", str(bundled_index)]) == 2
    assert capsys.readouterr().err.startswith("ruledex: error: TASK: must be a non-empty string")


def test_serve_help_says_layered_indexes_answer_every_tool(capsys: pytest.CaptureFixture[str]) -> None:
    """It said layering was "for query_directives"; every tool reads all the layered indexes (docs/mcp.md)."""
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "for query_directives" not in text and "every tool answers from all" in text


def test_a_task_of_dash_is_read_from_stdin(
    bundled_index: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gh issue view 12 | ruledex query -`: "-" was taken as the task itself and matched nothing."""
    import io
    import sys

    def stdin(text: str) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))

    stdin("Add user registration API endpoint\n\nIt must rate-limit signups.\n")
    code, out, _ = run(["query", "-", "--index", str(bundled_index)], capsys)
    assert code == 0 and "security#input-validation-1" in out and "no specific match" not in out
    stdin("Fix the flaky checkout test")
    code, out, _ = run(["detect", "-", "--index", str(bundled_index), "--json"], capsys)
    assert code == 0 and json.loads(out)["detectedLayer"] == "5-Tests"
    stdin("  \n")
    code, _, err = run(["query", "-", "--index", str(bundled_index)], capsys)
    assert code == 2 and "TASK: must be a non-empty string" in err
    stdin("Add user registration API endpoint. " * 400)  # an issue body: more than a query reads
    code, out, err = run(["query", "-", "--index", str(bundled_index)], capsys)
    assert code == 0 and "ruledex: note: the task has 14400 characters; only the first 8000 are read" in err


def test_build_never_overwrites_a_file_that_is_not_an_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--out rules/api.md` by a slip replaced a rule file with 8 MB of index; an index is still replaced."""
    rules = write_rules(tmp_path / "rules", {"api.md": rule_doc("## S\n\n- [MUST] Use UTC timestamps everywhere.")})
    before = (rules / "api.md").read_bytes()
    code, out, err = run(["build", str(rules), "--out", str(rules / "api.md"), "-q"], capsys)
    assert code == 1 and out == "" and (rules / "api.md").read_bytes() == before
    assert f"{rules / 'api.md'}: exists and is not a ruledex index, which the build would overwrite" in err
    assert not (rules / "api.md.sha256").exists()
    code, _, err = run(["build", str(rules), "--out", str(rules), "-q"], capsys)
    assert code == 1 and "is a folder; pass the path of a file to write" in err
    index = tmp_path / "x.ruledex"
    assert run(["build", str(rules), "--out", str(index), "-q"], capsys)[0] == 0
    assert run(["build", str(rules), "--out", str(index), "-q"], capsys)[0] == 0  # a rebuild replaces it


def test_an_index_url_says_to_pin_it(capsys: pytest.CaptureFixture[str]) -> None:
    """It was read as a path, "https:/example.com/r.ruledex: no such index file"."""
    url = "https://example.com/releases/r.ruledex"
    for argv in (["query", "Add an endpoint", "--index", url], ["info", url], ["list", "--index", url]):
        code, _, err = run(argv, capsys)
        assert code == 2 and f"{url}: an index is read from a local file; to use a release asset, pin it" in err


@pytest.mark.skipif(sys.platform == "win32", reason="Windows has no SIGTERM to catch: os.kill terminates at once")
def test_a_build_killed_while_writing_leaves_the_old_index_and_no_temp_file(
    tmp_path: Path, bundled_index: Path
) -> None:
    """SIGTERM (a cancelled CI job) killed the process mid-write and left an 8 MB hidden temp file."""
    import subprocess

    out = tmp_path / "rules.ruledex"
    shutil.copy(bundled_index, out)
    before = out.read_bytes()
    script = (
        "import os, signal, sys\n"
        "from ruledex.reader.cli import main\n"
        "real = os.fsync\n"
        "def fsync(fd):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"  # delivered while the temp file is open
        "    real(fd)\n"
        "os.fsync = fsync\n"
        f"sys.exit(main(['build', {str(RULES)!r}, '--out', {str(out)!r}, '--name', 'other', '-q']))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 143, done.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rules.ruledex"] and out.read_bytes() == before


def test_a_task_swallowed_by_files_says_where_it_went(capsys: pytest.CaptureFixture[str]) -> None:
    """`query --files a.py "task"`: --files took the task as a path, and the error said only "required: task"."""
    for argv in (["query", "--files", "src/a.py", "Add a login endpoint"], ["detect", "--files", "a.py", "Fix it"]):
        with pytest.raises(SystemExit) as caught:
            main(argv)
        err = capsys.readouterr().err
        assert caught.value.code == 2 and "--files took it as a path: put the task before --files" in err
    with pytest.raises(SystemExit):
        main(["eval"])
    assert "--files took" not in capsys.readouterr().err
