"""Git-native lifecycle (issue #5): build from refs, history, reproducible and incremental builds."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from ruledex.builder.build import build
from ruledex.reader.cli import main
from ruledex.reader.errors import RuleErrors
from ruledex.reader.index import Index

from .conftest import rule_doc, write_rules

ALICE = pygit2.Signature("Alice", "alice@example.com", 1_700_000_000, 0)
BOB = pygit2.Signature("Bob", "bob@example.com", 1_700_086_400, 0)


def _commit(repo: pygit2.Repository, message: str, who: pygit2.Signature) -> str:
    repo.index.add_all()
    repo.index.write()
    parents = [] if repo.head_is_unborn else [repo.head.target]
    return str(repo.create_commit("HEAD", who, who, message, repo.index.write_tree(), parents))


@pytest.fixture
def rules_repo(tmp_path: Path) -> tuple[Path, pygit2.Repository, dict[str, str]]:
    root = tmp_path / "origin"
    (root / "rules").mkdir(parents=True)
    (root / "README.md").write_text("# rules repo\n", encoding="utf-8")
    (root / "rules" / "api.md").write_text(
        rule_doc("## S\n\n- [MUST] Version every public endpoint.", id="api"), encoding="utf-8"
    )
    (root / "rules" / "db.md").write_text(
        rule_doc("## S\n\n- [MUST] Make every migration reversible.", id="db"), encoding="utf-8"
    )
    repo = pygit2.init_repository(str(root), initial_head="main")
    first = _commit(repo, "first rules", ALICE)
    (root / "rules" / "api.md").rename(root / "rules" / "http-api.md")
    second = _commit(repo, "rename api rule", BOB)
    repo.create_tag("v1.0.0", repo.head.target, pygit2.enums.ObjectType.COMMIT, ALICE, "release")
    return root, repo, {"first": first, "second": second}


def test_build_from_ref_reads_the_commit_not_the_working_tree(tmp_path: Path, rules_repo: tuple) -> None:
    root, _repo, commits = rules_repo
    (root / "rules" / "db.md").write_text(rule_doc("## S\n\n- [MUST] Uncommitted edit.", id="db"), encoding="utf-8")
    result = build(None, tmp_path / "r.ruledex", repo=root, ref="v1.0.0")
    with Index(result.path) as index:
        m = index.manifest
        texts = [index.directive(i).text for i in range(index.n_directives)]
        rules = {r.path: r for r in index.rules()}
    assert "Make every migration reversible." in texts and "Uncommitted edit." not in texts
    assert m["source"]["commit"] == commits["second"] and m["source"]["ref"] == "v1.0.0"
    assert m["source"]["path"] == "rules" and len(m["source"]["tree"]) == 40 and m["source"]["dirty"] is False
    assert m["version"] == "v1.0.0"
    # history: the renamed file's last change is the rename (Bob); the untouched one is Alice's
    assert rules["http-api.md"].last_author == "Bob" and rules["http-api.md"].last_commit == commits["second"]
    assert rules["db.md"].last_author == "Alice" and rules["db.md"].last_updated == "2023-11-14T22:13:20Z"


def test_older_ref_and_subdir_errors(tmp_path: Path, rules_repo: tuple) -> None:
    root, _repo, commits = rules_repo
    with Index(build(None, tmp_path / "old.ruledex", repo=root, ref=commits["first"]).path) as index:
        assert sorted(r.path for r in index.rules()) == ["api.md", "db.md"]
    assert main(["build", "--repo", str(root), "--ref", "no-such-ref", "--out", str(tmp_path / "x.ruledex"), "-q"]) == 1
    assert (
        main(
            [
                "build",
                "--repo",
                str(root),
                "--ref",
                "main",
                "--path",
                "nope",
                "--out",
                str(tmp_path / "x.ruledex"),
                "-q",
            ]
        )
        == 1
    )


def test_with_ref_the_folder_given_is_the_rules_folder_inside_the_commit(
    tmp_path: Path, rules_repo: tuple, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``build docs/rules --ref v2`` silently built ``rules/``: the folder given was ignored (QA)."""
    root, repo, _commits = rules_repo
    (root / "team").mkdir()
    (root / "team" / "style.md").write_text(
        rule_doc("## S\n\n- [MUST] Name branches after their ticket.", id="style"), encoding="utf-8"
    )
    _commit(repo, "team rules", ALICE)
    out = tmp_path / "team.ruledex"
    args = ["--repo", str(root), "--ref", "main"]
    for folder in ("team", "team/", "./team", str(root / "team")):
        assert main(["build", folder, *args, "--out", str(out), "-q"]) == 0, folder
        with Index(out) as index:
            assert [r.path for r in index.rules()] == ["style.md"] and index.manifest["source"]["path"] == "team"
    assert main(["check", "team", *args]) == 0
    assert "in main:team" in capsys.readouterr().err
    # given twice, differently, or outside the repository: a usage error saying so, nothing built
    out.unlink()
    assert main(["build", "team", *args, "--path", "rules", "--out", str(out), "-q"]) == 2
    assert "given twice, as 'team' and --path 'rules'" in capsys.readouterr().err and not out.exists()
    assert main(["check", str(tmp_path), *args]) == 2
    assert "outside the repository" in capsys.readouterr().err
    # the same folder both ways is fine; no folder still means rules/ when the commit has one
    assert main(["build", "team", *args, "--path", "team/", "--out", str(out), "-q"]) == 0
    monkeypatch.chdir(root)
    assert main(["build", "--ref", "main", "--out", str(out), "-q"]) == 0
    with Index(out) as index:
        assert index.manifest["source"]["path"] == "rules"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_two_clones_build_byte_identical_indexes(tmp_path: Path, rules_repo: tuple) -> None:
    root, _repo, _commits = rules_repo
    outs = []
    for name in ("clone-a", "nested/elsewhere/clone-b"):
        clone = tmp_path / name
        clone.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
        outs.append(build(clone / "rules", tmp_path / f"{clone.name}.ruledex").path)
        outs.append(build(None, tmp_path / f"{clone.name}-ref.ruledex", repo=clone, ref="v1.0.0").path)
    assert outs[0].read_bytes() == outs[2].read_bytes()
    assert outs[1].read_bytes() == outs[3].read_bytes()
    with Index(outs[0]) as index:
        assert str(tmp_path) not in str(index.manifest), "no absolute path inside the index"


def test_incremental_build_reuses_unchanged_files_and_is_byte_identical(tmp_path: Path, rules_repo: tuple) -> None:
    root, _repo, _commits = rules_repo
    first = build(root / "rules", tmp_path / "first.ruledex")
    (root / "rules" / "db.md").write_text(
        rule_doc("## S\n\n- [MUST] Make every migration reversible and tested.", id="db"), encoding="utf-8"
    )
    full = build(root / "rules", tmp_path / "full.ruledex")
    incremental = build(root / "rules", tmp_path / "incremental.ruledex", previous=first.path)
    assert incremental.reused == 1
    assert incremental.path.read_bytes() == full.path.read_bytes()


def test_incremental_build_still_reports_the_warnings_of_the_files_it_reuses(tmp_path: Path, rules_repo: tuple) -> None:
    root, _repo, _commits = rules_repo
    odd = rule_doc("## S\n\n- [MUST] Keep every endpoint documented.", id="http-api", extra="alwaysApply: true\n")
    (root / "rules" / "http-api.md").write_text(odd, encoding="utf-8")
    first = build(root / "rules", tmp_path / "first.ruledex")
    said = [w for w in first.warnings if "alwaysApply" in w]
    assert said, first.warnings
    (root / "rules" / "db.md").write_text(
        rule_doc("## S\n\n- [MUST] Make every migration reversible and tested.", id="db"), encoding="utf-8"
    )
    full = build(root / "rules", tmp_path / "full.ruledex")
    incremental = build(root / "rules", tmp_path / "incremental.ruledex", previous=first.path)
    assert incremental.reused == 1  # http-api.md, with its warning
    assert [w for w in incremental.warnings if "alwaysApply" in w] == said
    assert incremental.path.read_bytes() == full.path.read_bytes()


def test_incremental_with_another_model_reuses_nothing(
    tmp_path: Path, rules_repo: tuple, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _repo, _commits = rules_repo
    first = build(root / "rules", tmp_path / "first.ruledex")
    import ruledex.builder.build as builder

    monkey_version = builder.tool_version
    builder.tool_version = lambda: "0.0.0-other"
    try:
        again = build(root / "rules", tmp_path / "again.ruledex", previous=first.path)
    finally:
        builder.tool_version = monkey_version
    assert again.reused == 0


def test_incremental_with_other_code_of_the_same_version_reuses_nothing(
    tmp_path: Path, rules_repo: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Development commits share a version number; a parser change between them must not reuse stale records."""
    import ruledex.builder.build as builder

    root, _repo, _commits = rules_repo
    first = build(root / "rules", tmp_path / "first.ruledex")
    with Index(first.path) as index:
        assert index.manifest["tool"]["code"] == builder.code_fingerprint()
    monkeypatch.setattr(builder, "code_fingerprint", lambda: "0123456789abcdef")
    said: list[str] = []
    again = build(root / "rules", tmp_path / "again.ruledex", previous=first.path, progress=said.append)
    assert again.reused == 0
    assert any("built by other ruledex code" in line for line in said), said


def test_incremental_with_an_unreadable_previous_index_builds_in_full(tmp_path: Path, rules_repo: tuple) -> None:
    root, _repo, _commits = rules_repo
    first = build(root / "rules", tmp_path / "first.ruledex")
    damaged = tmp_path / "old-format.ruledex"
    damaged.write_bytes(first.path.read_bytes()[:100])  # e.g. a file an older, incompatible ruledex wrote
    said: list[str] = []
    again = build(root / "rules", tmp_path / "again.ruledex", previous=damaged, progress=said.append)
    assert again.reused == 0
    assert again.path.read_bytes() == first.path.read_bytes()
    assert any(line.startswith(f"not reusing {damaged}: it cannot be read") for line in said), said


def test_crlf_rules_build_the_same_index_as_lf(tmp_path: Path) -> None:
    from .conftest import RULES

    built = []
    for name, newline in (("lf", b"\n"), ("crlf", b"\r\n")):
        folder = tmp_path / name / "rules"
        folder.mkdir(parents=True)
        for path in RULES.glob("*.md"):
            (folder / path.name).write_bytes(path.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", newline))
        built.append(build(folder, tmp_path / f"{name}.ruledex").path.read_bytes())
    assert built[0] == built[1]


def test_diff_between_two_refs(rules_repo: tuple, capsys: pytest.CaptureFixture[str]) -> None:
    root, _repo, commits = rules_repo
    assert main(["diff", commits["first"], "v1.0.0", "--repo", str(root), "--json"]) == 0
    result = __import__("json").loads(capsys.readouterr().out)
    # the rule keeps its front-matter id across the rename: same rule, new path, directives moved
    assert result["rules"]["changed"] == [{"id": "api", "fields": ["path"]}]
    assert result["directives"]["moved"] == [{"from": "api#s-1", "to": "http-api#s-1"}]
    assert result["directives"]["added"] == [] and result["directives"]["removed"] == []


def test_check_a_ref(rules_repo: tuple, capsys: pytest.CaptureFixture[str]) -> None:
    root, _repo, _commits = rules_repo
    (root / "rules" / "db.md").write_text("# broken working tree, not committed\n\n- no marker\n", encoding="utf-8")
    assert main(["check", "--repo", str(root), "--ref", "v1.0.0", "--json"]) == 0
    assert __import__("json").loads(capsys.readouterr().out)["errors"] == 0


def test_a_rule_file_never_committed_gets_no_commit(tmp_path: Path) -> None:
    """Only the files a root commit holds are credited to it; a new file has no last change yet."""
    from ruledex.reader.catalog import render_rule, rule_summary

    root = tmp_path / "repo"
    write_rules(root / "rules", {"api.md": rule_doc("## S\n\n- [MUST] Version every public endpoint.", id="api")})
    repo = pygit2.init_repository(str(root), initial_head="main")
    first = _commit(repo, "first rules", ALICE)
    write_rules(root / "rules", {"db.md": rule_doc("## S\n\n- [MUST] Make every migration reversible.", id="db")})
    with Index(build(root / "rules", tmp_path / "w.ruledex").path) as index:
        rules = {r.path: (i, r) for i, r in enumerate(index.rules())}
        shown = render_rule(index, rules["db.md"][0])
        assert rules["api.md"][1].last_commit == first and rules["api.md"][1].last_author == "Alice"
        new = rules["db.md"][1]
        assert (new.last_commit, new.last_updated, new.last_author) == ("", "", "")
        assert rule_summary(new)["lastCommit"] == "" and "last updated" not in shown


def test_a_second_root_is_credited_only_with_what_it_holds(tmp_path: Path) -> None:
    """History merged from an unrelated repository has two root commits; each added only its files."""
    from ruledex.builder.gitsource import last_changes

    root = tmp_path / "repo"
    write_rules(root / "rules", {"api.md": rule_doc("## S\n\n- [MUST] Version every public endpoint.", id="api")})
    repo = pygit2.init_repository(str(root), initial_head="main")
    first = repo.revparse_single(_commit(repo, "api rules", ALICE))
    tree = repo.TreeBuilder()  # a root commit holding only README.md, newer than the first: walked first
    tree.insert("README.md", repo.create_blob(b"# other history\n"), pygit2.enums.FileMode.BLOB)
    side = repo.create_commit(None, BOB, BOB, "unrelated root", tree.write(), [])
    write_rules(root / "rules", {"db.md": rule_doc("## S\n\n- [MUST] Make every migration reversible.", id="db")})
    repo.index.add_all()
    merge = repo.create_commit("HEAD", ALICE, ALICE, "db rules", repo.index.write_tree(), [first.id, side])
    found = last_changes(repo, repo[merge], {"rules/api.md": "api.md", "rules/db.md": "db.md"})
    assert found["api.md"].commit == str(first.id) and found["db.md"].commit == str(merge)


@pytest.mark.skipif(sys.platform == "win32", reason="making symbolic links needs privileges on Windows")
def test_a_symbolic_link_in_a_commit_is_followed_inside_it(tmp_path: Path, rules_repo: tuple) -> None:
    """A linked rule (rules/db.md -> ../shared/db.md, AGENTS.md -> CLAUDE.md) was read as its target's
    path: no directives, one warning, and the tag's index quietly lacked the rule the working tree had."""
    root, repo, _commits = rules_repo
    (root / "shared").mkdir()
    (root / "rules" / "db.md").rename(root / "shared" / "db.md")
    (root / "rules" / "db.md").symlink_to(Path("..") / "shared" / "db.md")
    (root / "rules" / "CLAUDE.md").write_text("- Always run the tests before pushing.\n", encoding="utf-8")
    (root / "rules" / "AGENTS.md").symlink_to("CLAUDE.md")
    _commit(repo, "share the db rule", ALICE)
    from_tree = build(root / "rules", tmp_path / "w.ruledex")
    from_ref = build(None, tmp_path / "r.ruledex", repo=root, ref="HEAD")
    with Index(from_tree.path) as a, Index(from_ref.path) as b:
        texts = [b.directive(i).text for i in range(b.n_directives)]
        assert texts == [a.directive(i).text for i in range(a.n_directives)]
    assert "Make every migration reversible." in texts and not from_ref.warnings
    for name, target in [("out.md", "/etc/hosts"), ("gone.md", "nowhere.md"), ("dir.md", "../shared")]:
        (root / "rules" / name).symlink_to(target)
    _commit(repo, "bad links", ALICE)
    with pytest.raises(RuleErrors) as caught:
        build(None, tmp_path / "bad.ruledex", repo=root, ref="HEAD")
    assert [str(e) for e in caught.value.errors] == [
        "rules/dir.md:1: file: is a link to the folder ../shared; link a file, or remove the link",
        "rules/gone.md:1: file: is a broken link (to nowhere.md) in this commit; fix the link or remove it",
        "rules/out.md:1: file: is a link to /etc/hosts, outside the repository; a build from a ref reads only "
        "the commit's files",
    ]
