"""The edited files' paths say where the work is and in what: detection, ranking and eval use them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruledex.reader.cli import main
from ruledex.reader.detect import detect
from ruledex.reader.errors import ConfigError
from ruledex.reader.evaluate import evaluate, load_queries, with_files
from ruledex.reader.globs import matches_every_file
from ruledex.reader.index import Index
from ruledex.reader.paths import (
    EXTENSIONS,
    FILE_NAMES,
    FOLDER_TECHNOLOGIES,
    MAX_NAMED,
    named_files,
    path_evidence,
    path_hint,
)
from ruledex.reader.query import query_directives
from ruledex.reader.technologies import TECHNOLOGIES
from ruledex.reader.tools import detect_context
from ruledex.reader.vocab import LAYERS, TOPICS

from .conftest import REPO, RULES


@pytest.mark.parametrize(
    ("path", "layer", "technologies"),
    [
        ("tests/test_orders.py", "5-Tests", ("python",)),
        ("src/components/Button.test.tsx", "5-Tests", ("typescript", "react")),  # a test of a component is a test
        ("src/test/java/shop/OrderServiceTest.java", "5-Tests", ("java",)),
        ("migrations/0012_add_phone.py", "4-Persistence", ("python",)),
        ("db/migrate/20240101_add_status.rb", "4-Persistence", ("ruby",)),
        (".github/workflows/ci.yml", "7-Deployment", ("github-actions",)),
        ("Dockerfile", "7-Deployment", ("docker",)),
        ("infra/main.tf", "7-Deployment", ("terraform",)),
        ("docs/adr/0003-queues.md", "6-Docs", ()),
        ("app/api/orders/route.ts", "2-Application", ("typescript", "nextjs")),
        ("orders/views.py", "2-Application", ("python",)),
        ("app/checkout/page.tsx", "1-Presentation", ("typescript", "react", "nextjs")),
        ("resources/views/welcome.blade.php", "1-Presentation", ("php", "laravel")),
        ("src/domain/order.py", "3-Domain", ("python",)),
        ("latest.go", None, ("go",)),  # not a test: only CamelCase "...Test.java" style names are test classes
        ("config/settings.py", None, ("python",)),
        # misreadings a QA pass found (2026-11-24)
        (".github/workflows/e2e-tests.yml", "7-Deployment", ("github-actions",)),  # CI, not a test
        ("docker-compose.test.yml", "7-Deployment", ("docker",)),
        ("api.Dockerfile", "7-Deployment", ("docker",)),
        ("internal/store/orders.go", None, ("go",)),  # not a frontend store
        ("src/routes/+page.svelte", "1-Presentation", ("svelte",)),  # a UI file wherever it sits
        ("app/routes/_index.tsx", "1-Presentation", ("typescript", "react")),
        ("src/app/cart.component.ts", "1-Presentation", ("typescript", "angular")),
        ("src/main/java/shop/OrderController.java", "2-Application", ("java",)),
        ("src/main/java/shop/OrderRepository.java", "4-Persistence", ("java",)),
        ("/Users/test/shop/src/components/Button.tsx", "1-Presentation", ("typescript", "react")),
    ],
)
def test_path_conventions(path: str, layer: str | None, technologies: tuple[str, ...]) -> None:
    found_layer, topics, found_techs = path_hint(path)
    assert found_layer == layer
    assert set(found_techs) == set(technologies)
    assert (layer is None) == (not topics) or layer == "3-Domain"


def test_every_name_is_one_detection_knows() -> None:
    named = {t for names in (*EXTENSIONS.values(), *FILE_NAMES.values()) for t in names}
    named |= {t for _, names in FOLDER_TECHNOLOGIES for t in names}
    assert named <= set(TECHNOLOGIES), sorted(named - set(TECHNOLOGIES))
    for path in ("tests/a.py", "Dockerfile", "docs/a.md", "db/x.sql", "api/x.py", "ui/x.css", "domain/x.py"):
        layer, topics, _ = path_hint(path)
        assert layer in LAYERS and set(topics) <= set(TOPICS)


def test_paths_as_written_anywhere() -> None:
    assert path_hint("./Tests\\Test_Orders.py") == path_hint("tests/test_orders.py")
    assert path_hint("/repo/db/migrations/1.sql")[0] == "4-Persistence"


def test_one_file_written_several_ways_counts_once() -> None:
    once = path_evidence(["tests/test_a.py", "src/components/A.tsx"])
    again = path_evidence(["tests/test_a.py", "./tests/test_a.py", "tests\\test_a.py", "src/components/A.tsx"])
    assert again == once


def test_deep_paths_are_matched_once_not_per_folder() -> None:
    """Each pattern was tried on every folder above the file: 200 paths 500 folders deep took 36 s."""
    from ruledex.reader.globs import _candidates, globs_match

    deep = "a/" * 505 + "x.py"
    assert _candidates(deep) == [deep], "one regex over the whole path: linear in its depth"
    assert globs_match(["a/"], deep) and globs_match(["**/*.py"], deep) and not globs_match(["b/**"], deep)
    assert globs_match(["app/**"], "/home/me/shop/app/page.tsx"), "an absolute path matches from any folder"
    assert globs_match(["docs"], "docs/guide/a.md"), "a pattern naming a folder matches what is in it"


def test_files_share_one_vote_and_add_their_technologies() -> None:
    one = path_evidence(["tests/test_orders.py"])
    two = path_evidence(["tests/test_orders.py", "orders/models.py"])
    assert sum(one.layers.values()) == pytest.approx(sum(two.layers.values())), "more files, not more weight"
    assert set(two.layers) == {"5-Tests", "4-Persistence"}
    assert path_evidence(["README", "notes/todo"]).layers == {}


def test_an_edited_file_places_a_task_that_says_nothing() -> None:
    vague = "Tidy this up"
    assert detect(vague).layer is None
    for path, layer in (
        ("tests/test_checkout.py", "5-Tests"),
        ("db/migrations/0042_status.sql", "4-Persistence"),
        ("src/components/OrderCard.tsx", "1-Presentation"),
    ):
        found = detect(vague, paths=path_evidence([path]))
        assert found.layer == layer
    found = detect("Write unit tests for the pricing rules", paths=path_evidence(["src/components/Price.tsx"]))
    assert found.layer == "5-Tests", "the task's own words still lead"
    named = detect("Add a Django view for invoices", paths=path_evidence(["invoices/views.py", "web/app.ts"]))
    assert named.technologies[0] == "django" and {"python", "typescript"} <= set(named.technologies)


def test_files_in_query_and_detect_context(index: Index) -> None:
    answer = query_directives(index, "Tidy this up", options={"files": ["tests/test_checkout.py"]})
    assert answer["diagnostics"]["detectedLayer"] == "5-Tests"
    assert answer["citations"][0]["sourcePath"] == "testing.md"
    assert any("only what their paths say" in note for note in answer["diagnostics"]["notes"])
    found = detect_context(index, "Tidy this up", {"files": ["db/migrations/0042_status.sql"]})
    assert found["detectedLayer"] == "4-Persistence"
    with pytest.raises(ValueError, match=r"options\.files"):
        detect_context(index, "Fix it", {"files": [1, 2]})
    with pytest.raises(ValueError, match=r"options\.files: a path of 4000 characters"):
        query_directives(index, "Fix it", options={"files": ["a/" * 2000]})


def test_catch_all_globs_tie_a_rule_to_nothing() -> None:
    assert matches_every_file(["**/*"]) and matches_every_file(["./**"]) and matches_every_file(["*"])
    assert not matches_every_file(["**/*.ts"]) and not matches_every_file(["**/*", "!**/*.md"])
    assert not matches_every_file([])


def test_eval_with_the_files_being_edited(index: Index, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With the files a developer would have open (tests/data/files_bundled.jsonl), ranking gains."""
    queries = load_queries(REPO / "tests" / "data" / "eval_bundled.jsonl")
    with_paths = with_files(queries, REPO / "tests" / "data" / "files_bundled.jsonl")
    assert sum(bool(q.files) for q in with_paths) > 0.9 * len(queries)
    plain, edited = evaluate(index, queries, rules_dir=RULES), evaluate(index, with_paths, rules_dir=RULES)
    assert edited["ruledex"]["ndcg@10"] > plain["ruledex"]["ndcg@10"], "measured 0.878 -> 0.886 (docs/relevance.md)"
    assert edited["layerAccuracy"] >= plain["layerAccuracy"]

    partial = tmp_path / "partial.jsonl"
    partial.write_text(json.dumps({"id": queries[0].id, "files": ["a.py"]}) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"partial\.jsonl: no files line for \d+ queries.*\"files\": \[\]"):
        with_files(queries, partial)
    other = tmp_path / "other.jsonl"  # another set's file: its ids (q001 ...) cover these and more
    lines = [json.dumps({"id": q.id, "files": []}) for q in queries] + ['{"id": "q999", "files": []}']
    other.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r"other\.jsonl: files lines for 1 id\(s\) that are no task of the query set, e.g. q999"
    ):
        with_files(queries, other)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q001", "files": "a.py"}\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.jsonl:1: not a files line"):
        with_files(queries, bad)
    # a line that is not an object, or lacks a field, is named as such, not as a Python exception (QA)
    for line, said in (('["q001", ["a.py"]]', "(a list)"), ('{"id": "q001"}', '(an object without "files")')):
        bad.write_text(line + "\n", encoding="utf-8")
        with pytest.raises(ConfigError) as caught:
            with_files(queries, bad)
        assert str(caught.value).startswith(f"{bad}:1: not a files line {said}; expected an object like")
        assert "Error" not in str(caught.value)
    code = main(["eval", "--queries", str(tmp_path / "missing.jsonl"), "--index", str(index.path)])
    assert code == 1 and "missing.jsonl: cannot read it" in capsys.readouterr().err


def test_no_alternative_reads_surer_than_the_detected_layer(index: Index) -> None:
    """Alternatives used a share of all evidence and the layer a share of itself and its rival (QA)."""
    for task, files in (
        ("Tidy this up", ["tests/test_a.py", "src/components/A.tsx"]),
        ("Add user registration API endpoint", []),
        ("Write a migration and a test for the new status column", []),
    ):
        found = detect_context(index, task, {"files": files} if files else None)
        assert all(alt["confidence"] <= found["confidence"] for alt in found["alternativeContexts"]), found


@pytest.mark.parametrize(
    ("task", "named"),
    [
        ("After upgrading, app/products/[id]/page.tsx crashes when reading params.id", ("app/products/[id]/page.tsx",)),
        ("Fix views.py, then app.js.", ("views.py", "app.js")),
        (
            "Bump package.json and the Dockerfile.prod (see `SignupForm.tsx`)",
            ("package.json", "Dockerfile.prod", "SignupForm.tsx"),
        ),
        ("Move app/routes/projects.$id.tsx and vercel.json;", ("app/routes/projects.$id.tsx", "vercel.json")),
        # not files: library names, URLs, npm scopes, routes, property access, versions, dotfiles
        ("Port the Next.js page to Vue.js with Chart.js on node.js", ()),
        ("See https://example.com/docs/setup.md and @nestjs/bull", ()),
        ("GET /api/orders returns params.id and req.body from v1.2.3", ()),
        ("Keep secrets in a .env file", ()),
    ],
)
def test_files_a_task_names(task: str, named: tuple[str, ...]) -> None:
    assert named_files(task) == named


def test_named_files_leave_out_given_ones_and_stop_at_the_cap() -> None:
    assert named_files("Fix views.py and urls.py", ("views.py",)) == ("urls.py",)
    listing = " ".join(f"src/m{i}.py" for i in range(MAX_NAMED + 5))
    assert len(named_files(listing)) == MAX_NAMED


def test_a_file_the_task_names_counts_as_edited(index: Index) -> None:
    """Naming a file says where the work is, as passing it in options.files does."""
    task = "Tidy up tests/test_checkout.py"
    named = query_directives(index, task, options={"includeDiagnostics": True})
    given = query_directives(index, "Tidy up", options={"files": ["tests/test_checkout.py"]})
    assert named["diagnostics"]["detectedLayer"] == given["diagnostics"]["detectedLayer"] == "5-Tests"
    assert named["citations"][0]["sourcePath"] == "testing.md"
    assert any("1 named in the task (tests/test_checkout.py)" in n for n in named["diagnostics"]["notes"])
    found = detect_context(index, "Tidy up db/migrations/0042_status.sql")
    assert found["detectedLayer"] == "4-Persistence"
    assert any("files named in the text" in n for n in found["notes"])
    assert detect_context(index, "Tidy up")["detectedLayer"] is None
