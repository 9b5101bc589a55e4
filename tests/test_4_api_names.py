"""Issue #4: API identifiers name their technology ("useEffect runs twice" is React work)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ruledex.builder.build import build
from ruledex.reader.detect import detect
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
from ruledex.reader.rank import DEFAULT_WEIGHTS
from ruledex.reader.technologies import API_NAMES, TECHNOLOGIES

from .conftest import write_rules


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("useEffect runs twice in development", ("react",)),
        ("the onAppear load keeps running", ("swiftui",)),
        ("defineProps type error after the upgrade", ("vue",)),
        ("cy.intercept never matches the request", ("cypress",)),
        ("@Autowired field is null in the test", ("spring",)),
        ("StatelessWidget rebuilds on every keystroke", ("flutter",)),
        ("add a msg.sender check to withdraw", ("solidity",)),
        ("the list page needs select_related", ("django",)),
        ("jest.mock is not hoisted", ("jest",)),  # "jest" alone is an everyday word
        ("two goroutines leak per request", ("go",)),  # a plural
        ("the go handler reads gin.Context", ("go", "gin")),  # confirms the everyday word of its stack
    ],
)
def test_an_api_identifier_names_its_technology(text: str, named: tuple[str, ...]) -> None:
    assert detect(text, task_model=False).technologies == named


@pytest.mark.parametrize(
    "text",
    [
        "setState is called after unmount",  # React and Flutter both
        "the effect of useeffect-style hooks",  # not as code writes it
        "store.$state is stale after a reset",  # Pinia's $state, not Svelte's rune
        "the onAppearance handler",  # part of a longer identifier
        "mock the clock in the billing test",
    ],
)
def test_identifiers_of_several_ecosystems_or_not_written_as_code_name_nothing(text: str) -> None:
    assert detect(text, task_model=False).technologies == ()


def test_every_identifier_names_one_known_technology_by_itself() -> None:
    assert set(API_NAMES) <= set(TECHNOLOGIES)
    owners: dict[str, str] = {}
    for tech, identifiers in API_NAMES.items():
        for identifier in identifiers:
            assert owners.setdefault(identifier, tech) == tech, f"{identifier} is listed for two technologies"
            assert tech in detect(f"why does {identifier} fail here", task_model=False).technologies, identifier


REACT = """---
description: React components and hooks.
globs: "**/*.tsx"
---
## Effects
- Clean up subscriptions when the component unmounts.
- Keep effects free of work that belongs in event handlers.
"""

VUE = """---
description: Vue 3 single-file components.
globs: "**/*.vue"
---
## Data loading
- Load a page's data once, when the page is shown, and show a spinner while it loads.
- Cancel a page's requests when the page is left.
"""


def test_a_task_naming_a_react_hook_prefers_the_react_guide(tmp_path: Path) -> None:
    """By its words the task matches the Vue guide; useEffect says it is React work."""
    out = tmp_path / "i.ruledex"
    build(write_rules(tmp_path / "rules", {"react.mdc": REACT, "vue.mdc": VUE}), out)
    task = "useEffect fetches the data twice; cancel the request when the component unmounts"
    options = {"includeDiagnostics": True}
    with Index(out) as index:
        assert [index.rule(i).technologies for i in range(index.n_rules)] == [("react",), ("vue",)]
        answer = query_directives(index, task, options=options)
        by_words = query_directives(index, task, options=options, weights=replace(DEFAULT_WEIGHTS, stack=0.0))
    assert answer["diagnostics"]["technologies"] == ["react"]
    assert answer["citations"][0]["sourcePath"] == "react.mdc"
    assert by_words["citations"][0]["sourcePath"] == "vue.mdc"


def test_an_api_identifier_counts_as_its_technology_name_for_detection(index: Index) -> None:
    """On rules that name no technology, "useEffect runs twice" still reads as React (frontend) work.

    Found by a QA pass: once example tasks were matched, the deployment rules led this answer on the
    word "runs"; the identifier now says "react" to the detector, as the word would.
    """
    assert detect("useEffect runs twice", task_model=False).topic_scores["frontend"] > 0  # as "react" would
    assert detect("the effect runs twice", task_model=False).topic_scores["frontend"] == 0
    answer = query_directives(index, "useEffect runs twice")
    assert answer["diagnostics"]["topics"][0] == "frontend"
    assert answer["citations"][0]["rule"] == "frontend"
