"""Issue 6 on a real corpus: the public awesome-cursorrules sample (80 Cursor .mdc files) builds,
and a task about a framework retrieves that framework's rules first.

The corpus lives outside the repository (``../shared/corpora``) and is never copied into it; the
tests skip, saying why, when it is absent.
"""

from __future__ import annotations

from collections import Counter

import pytest

from ruledex.builder.build import BuildResult, build
from ruledex.builder.importer import plan_import
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives

from .conftest import SHARED

CORPUS = SHARED / "corpora" / "awesome-cursorrules" / "rules"

pytestmark = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"public corpus not found at {CORPUS} (it is kept outside the repository)"
)


@pytest.fixture(scope="module")
def corpus_build(tmp_path_factory: pytest.TempPathFactory) -> BuildResult:
    return build(CORPUS, tmp_path_factory.mktemp("corpus") / "corpus.ruledex")


@pytest.fixture(scope="module")
def corpus(corpus_build: BuildResult):
    with Index(corpus_build.path) as opened:
        yield opened


def test_corpus_builds_every_file(corpus_build: BuildResult) -> None:
    files = sorted(CORPUS.glob("*.mdc"))
    assert corpus_build.files == len(files) >= 70
    assert corpus_build.rules == len(files), corpus_build.warnings
    assert corpus_build.formats == {"cursor": len(files)}
    assert corpus_build.directives >= 20 * len(files)
    assert corpus_build.inferred_severity == corpus_build.directives  # no file has [MUST] markers


def test_corpus_records_are_sane(corpus: Index) -> None:
    rules = corpus.rules()
    directives = [corpus.directive(i) for i in range(corpus.n_directives)]
    severities = Counter(d.severity for d in directives)
    assert severities["MUST"] >= 100 and severities["SHOULD"] > severities["MUST"]
    assert all(len(d.text.split()) <= 60 for d in directives)
    assert all(d.inferred[:1] == ("severity",) for d in directives)
    react = next(r for r in rules if r.id == "react")
    assert react.globs == ("**/*.tsx", "**/*.jsx", "components/**/*")
    assert react.title == "React Best Practices" and react.format == "cursor"
    assert all(r.description for r in rules)


FRAMEWORK_TASKS = [
    (
        "Create a new Django view with a model form",
        {"python-django-best-practices-cursorrules-prompt-fi.mdc", "htmx-django-cursorrules-prompt-file.mdc"},
    ),
    ("Write a Playwright end-to-end test for login", {"playwright-e2e-testing-cursorrules-prompt-file.mdc"}),
    (
        "Add a FastAPI endpoint",
        {"fastapi.mdc", "py-fast-api.mdc", "fastapi-production-architecture-cursorrules-prompt-file.mdc"},
    ),
    ("Write a Jest unit test for the cart reducer", {"jest-unit-testing-cursorrules-prompt-file.mdc"}),
    ("Write a Cypress e2e test for checkout", {"cypress-e2e-testing-cursorrules-prompt-file.mdc"}),
    ("Write a PostgreSQL migration adding an index", {"postgresql.mdc"}),
    ("Set up a Dockerfile for the Node service", {"docker.mdc"}),
]


@pytest.mark.parametrize(("task", "expected"), FRAMEWORK_TASKS, ids=[t for t, _ in FRAMEWORK_TASKS])
def test_framework_task_retrieves_that_frameworks_rules_first(corpus: Index, task: str, expected: set[str]) -> None:
    answer = query_directives(corpus, task)["citations"]
    citations = [c for c in answer if not c["alwaysApply"]]  # the ranked picks; alwaysApply rules follow them
    assert citations, task
    assert citations[0]["sourcePath"] in expected, [c["sourcePath"] for c in citations]
    assert sum(c["sourcePath"] in expected for c in citations) * 2 >= len(citations)
    always = {c["sourcePath"] for c in answer if c["alwaysApply"]}
    assert always == {"security-devsecops-ssdls-appsec.mdc"}, "the corpus's one alwaysApply rule follows every answer"


def test_corpus_imports_into_documents_the_strict_parser_accepts() -> None:
    result = plan_import(CORPUS)  # each output is parsed with the strict parser before it is kept
    assert len(result.files) == len(list(CORPUS.glob("*.mdc")))
    assert result.skipped == []


def test_importing_then_building_ranks_like_building_directly(
    corpus_build: BuildResult, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """QA: import + build lost nDCG@10 0.903 -> 0.771 and MRR 0.939 -> 0.788: the technologies sat in a
    YAML comment (stackMatch 0), and the inferred topics were read back as declared, which switched the
    index to the declared-metadata weights. Now `technologies` and `inferred` are fields the build reads."""
    from dataclasses import replace

    from ruledex.builder.importer import import_rules
    from ruledex.reader.evaluate import evaluate, load_queries

    from .conftest import REPO

    out = tmp_path_factory.mktemp("imported")
    renamed = {f.source: f.target for f in import_rules(CORPUS, out / "rules").files}
    queries = load_queries(REPO / "tests" / "data" / "eval_cursorrules.jsonl")
    imported_queries = [replace(q, relevant={renamed[p]: g for p, g in q.relevant.items()}) for q in queries]
    with Index(corpus_build.path) as direct, Index(build(out / "rules", out / "imported.ruledex").path) as imported:
        assert imported.declared_share == direct.declared_share == 0.0
        before = {r.id: r for r in direct.rules()}
        for rule in imported.rules():
            same = before[rule.id]
            assert (rule.technologies, rule.inferred, rule.sections) == (
                same.technologies,
                same.inferred,
                same.sections,
            )
        ours = evaluate(direct, queries, rules_dir=CORPUS)["ruledex"]
        theirs = evaluate(imported, imported_queries, rules_dir=out / "rules")["ruledex"]
        task = {"files": ["src/server/main.go"]}
        first = [
            query_directives(i, "tidy up error handling", options=task)["citations"][0]["id"]
            for i in (direct, imported)
        ]
    assert first[0] == first[1] == "go#error-handling-1"
    # measured 0.9086 / 0.9085 and 0.9408 / 0.9408; 0.8985 and 0.9348 imported while the import
    # dropped the text that states no directive (test_import_export: ..._states_no_directive)
    for metric in ("ndcg@10", "mrr"):
        assert theirs[metric] >= ours[metric] - 0.003, (metric, ours[metric], theirs[metric])
