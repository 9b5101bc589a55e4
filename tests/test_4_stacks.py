"""Issue #4: a task's technology stack and the rules written for it (reader/stacks.py, detection, ranking)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ruledex.builder.build import build
from ruledex.reader.detect import detect
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
from ruledex.reader.rank import DEFAULT_WEIGHTS
from ruledex.reader.stacks import PARENTS, SAME_LANGUAGE_FIT, stack_fits, stack_of
from ruledex.reader.technologies import TECHNOLOGIES

from .conftest import write_rules


def test_every_stack_names_only_technologies_detection_knows() -> None:
    known = set(TECHNOLOGIES)
    assert set(PARENTS) <= known
    assert {parent for parents in PARENTS.values() for parent in parents} <= known


def test_a_named_technology_brings_what_it_builds_on() -> None:
    assert stack_of(["nuxt"]) == {"nuxt", "vue", "javascript"}
    assert stack_of(["gin"]) == {"gin", "go"}
    assert {"java", "jpa"} <= stack_of(["hibernate"])
    assert stack_of([]) == frozenset()


@pytest.mark.parametrize(
    ("task", "rule", "fit"),
    [
        (("gin",), ("go",), 1.0),  # a Go guide for Gin work
        (("nuxt",), ("vue", "javascript"), 1.0),
        (("python",), ("django", "python"), 1.0),
        (("python",), ("django",), 0.5),  # a Django guide builds on the Python the task names
        (("vue",), ("react",), SAME_LANGUAGE_FIT),  # siblings: both JavaScript
        (("django",), ("next.js", "supabase"), 0.0),  # another stack altogether
        ((), ("react",), 0.5),  # the task names nothing: no evidence
        (("django",), (), 0.5),  # the rule names nothing
    ],
)
def test_how_well_a_rule_fits_the_task_s_stack(task: tuple[str, ...], rule: tuple[str, ...], fit: float) -> None:
    assert stack_fits(task, [rule]) == [fit]


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Order-created events sometimes go out to Kafka twice", ("kafka",)),
        ("One pod ate all the node's memory last night", ()),
        ("Our Go service leaks goroutines", ("go",)),
        ("main.go panics on startup", ("go",)),
        ("Elixir phoenix docker setup", ("docker", "elixir", "phoenix")),  # beside its own stack
        ("port the express routes to fastify", ("express", "fastify")),
    ],
)
def test_technology_names_that_are_everyday_words_count_only_as_names(text: str, named: tuple[str, ...]) -> None:
    assert detect(text, task_model=False).technologies == named


@pytest.mark.parametrize(
    ("text", "named", "language"),
    [
        ("Our tokio service deadlocks under load", ("tokio",), "rust"),
        ("Ratatui dashboard breaks on narrow terminals", ("ratatui",), "rust"),
        ("ZIO Test spec for the UserService", ("zio",), "scala"),
        ("Convert the dropdown to a Stimulus controller", ("stimulus",), "rails"),
        ("Budget app (Riverpod): roll unspent money over", ("riverpod",), "dart"),
        ("The Mongo queries do full collection scans", ("mongo",), "mongodb"),
        ("Load settings with pydantic-settings", ("pydantic",), "python"),
        ("The Livewire table re-renders on every keystroke", ("livewire",), "php"),
    ],
)
def test_libraries_name_their_language_s_stack(text: str, named: tuple[str, ...], language: str) -> None:
    found = detect(text, task_model=False).technologies
    assert found == named
    assert language in stack_of(found)


@pytest.mark.parametrize(
    "text",
    [
        "echo the request id back in the response",
        "a bevy of flaky tests in the billing suite",
        "renovate the settings page",
        "the criterion for a valid coupon is wrong",
    ],
)
def test_library_names_that_are_everyday_words_are_not_technologies(text: str) -> None:
    assert detect(text, task_model=False).technologies == ()


GO = """---
description: Go language rules.
globs: "**/*.go"
---
## Errors
- Handlers return errors wrapped with context, not as plain strings.
- Log an error once, where it is handled.
"""

NEXT = """---
description: Next.js and Supabase apps.
globs: "app/**/*.tsx"
---
## Route handlers
- Route handlers return errors as JSON with a status code and a message.
- Keep route handlers thin; move the work into server actions.
"""


def test_a_guide_for_the_task_s_own_stack_outranks_one_for_another_stack(tmp_path: Path) -> None:
    """Gin is Go: the Go guide leads though the Next.js guide shares more of the task's words."""
    out = tmp_path / "i.ruledex"
    build(write_rules(tmp_path / "rules", {"go.mdc": GO, "nextjs.mdc": NEXT}), out)
    task = "Our Gin route handlers return errors as plain text; return them as JSON"
    diagnostics = {"includeDiagnostics": True}
    with Index(out) as index:
        assert [index.rule(i).technologies for i in range(index.n_rules)] == [
            ("go",),
            ("nextjs", "next.js", "supabase"),
        ]
        answer = query_directives(index, task, options=diagnostics)
        by_words = query_directives(index, task, options=diagnostics, weights=replace(DEFAULT_WEIGHTS, stack=0.0))
        unnamed = query_directives(index, task.replace("Gin ", ""), options=diagnostics)
    assert answer["diagnostics"]["technologies"] == ["gin"]
    assert answer["citations"][0]["sourcePath"] == "go.mdc"
    assert {s["id"].split("#")[0]: s["stackMatch"] for s in answer["diagnostics"]["scores"]} == {
        "go": 8.0,
        "nextjs": 0.0,
    }
    # by its words alone the task matches the Next.js guide best
    assert by_words["citations"][0]["sourcePath"] == "nextjs.mdc"
    # a task that names no technology gives every rule the same, neutral, fit
    assert {s["stackMatch"] for s in unnamed["diagnostics"]["scores"]} == {4.0}
