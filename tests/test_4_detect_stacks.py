"""Issue #4: the built-in detector knows the common stacks' words for each layer (no index needed)."""

from __future__ import annotations

import pytest

from ruledex.reader.detect import REPORTED_TOPICS, TOPIC_SHARE, detect
from ruledex.reader.index import Index
from ruledex.reader.query import detect_in_index, first_pass, query_directives
from ruledex.reader.text import keywords


@pytest.mark.parametrize(
    ("task", "layer"),
    [
        ("Move the useEffect data fetching on the profile view into a custom hook", "1-Presentation"),
        ("The SwiftUI list does not refresh after pull to refresh", "1-Presentation"),
        ("Add a Pydantic DTO and a validator to the FastAPI orders controller", "2-Application"),
        ("A coupon and a loyalty discount can both apply and the total goes negative", "3-Domain"),
        ("Add a Sequelize model and a migration for the audit rows", "4-Persistence"),
        ("Add RSpec coverage for the invoice mailer with a fake SMTP server", "5-Tests"),
        ("Write the onboarding guide that explains how to run the services locally", "6-Docs"),
        ("Add autoscaling for the worker pods and a Grafana board for the queue", "7-Deployment"),
    ],
)
def test_stack_words_name_the_layer(task: str, layer: str) -> None:
    assert detect(task).layer == layer


@pytest.mark.parametrize(
    ("task", "technologies"),
    [
        ("Move the Redux store to Zustand in our Vite app", ("redux", "zustand", "vite")),
        ("Train the PyTorch model and report scikit-learn metrics", ("pytorch", "scikit-learn")),
        ("Deploy the Next.js app to Vercel with Supabase auth", ("next.js", "supabase", "vercel")),
        ("Our ASP.NET Core API returns 500 on empty carts", ("asp.net",)),
        ("Add a Gin handler and a GORM query", ("gin", "gorm")),
        ("The React Native screen crashes on Android", ("react", "react native")),
        ("Add a Spring Boot actuator health check", ("spring", "spring boot")),
        ("Make it faster", ()),
    ],
)
def test_technologies_beyond_the_mainstream_web_stack(task: str, technologies: tuple[str, ...]) -> None:
    assert detect(task).technologies == technologies


def test_git_hooks_are_not_react_hooks() -> None:
    assert detect("Add pre-commit hooks that run the linter").layer != "1-Presentation"


def test_logged_in_is_about_sessions_not_logging(index: Index) -> None:
    """ "logged" and "logging" share a stem: a logged-in user must not pull in the logging rules."""
    assert keywords("keep the user signed-in; logged out users") == ["keep", "user", "login", "logout", "user"]
    assert keywords("we logged the error") == ["logg", "error"]  # the verb on its own still means logging
    assert "observability" not in detect("Add a fixture for a logged-in admin user").evident_topics
    answer = query_directives(index, "Add a fixture for a logged-in admin user")
    assert not any(c["id"].startswith("observability#") for c in answer["citations"])


def test_reported_topics_are_the_clear_ones_and_ranking_still_weighs_the_rest(index: Index) -> None:
    """The header names what the task is about; a word that merely brushes a topic does not get in."""
    task = "Add user registration API endpoint"
    first = first_pass(index, task)
    det = detect_in_index(index, task, None, first.vector, first.votes(index))
    best = det.topic_scores[det.topics[0]]
    assert det.topics[0] == "api" and len(det.topics) <= REPORTED_TOPICS
    assert all(det.topic_scores[t] >= TOPIC_SHARE * best for t in det.topics)
    faint = [t for t in det.evident_topics if t not in det.topics]
    assert faint and all(det.topic_scores[t] < TOPIC_SHARE * best for t in faint)
    assert det.ranking_topics() == det.evident_topics  # ranking weighs them all, by strength
    answer = query_directives(index, task)
    assert answer["context_block"].splitlines()[1].endswith(f"topics {', '.join(det.topics)}_")
    # registration is security work whether or not the header names it: the ranking weighs it
    assert "security" in det.ranking_topics()
    assert answer["citations"][0]["id"] == "security#authentication-and-passwords-2"


@pytest.mark.parametrize("task", ["hello world", "make it better"])
def test_a_task_with_no_telling_word_gets_no_layer_from_the_rules_that_match_it_best(index: Index, task: str) -> None:
    """Some directive always matches best; its layer is not the task's when the task itself says nothing."""
    answer = query_directives(index, task)
    assert answer["diagnostics"]["detectedLayer"] is None and answer["diagnostics"]["topics"] == []
    # "make it better" shares no word with the rules either: the no-match answer (core rules), still layer any
    assert answer["context_block"].splitlines()[1] in ("_layer any_", "_layer any; no specific match; core rules_")
    assert not any("strictLayer" in note for note in answer["diagnostics"]["notes"])


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("Refactor our R scripts to use the tidyverse", ("r", "tidyverse")),
        ("Cursor rules for R development", ("r",)),  # how the public corpus's R guide describes itself
        ("Fix the R&D dashboard", ()),
        ("r u sure this works", ()),
        ("rename the variable r to rate", ()),
    ],
)
def test_a_one_letter_language_is_named_only_as_a_capital_standing_alone(text: str, named: tuple[str, ...]) -> None:
    """The word tokenizer drops one-letter words, so R needs its own pattern; its guide then has a stack."""
    assert detect(text).technologies == named


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("model the payment status in TS as a discriminated union", ("typescript",)),
        ("the main JS bundle is 4 MB", ("javascript",)),
        ("add an endpoint to the .NET API", ("dotnet",)),
        ("getRepository throws in our Nest app", ("nestjs",)),
        ("Nest the routes under one prefix", ()),  # a sentence opening with the verb
        ("the ts-node script and the js file", ()),
        ("mirror it to example.net", ()),
    ],
)
def test_short_forms_are_named_only_as_written(text: str, named: tuple[str, ...]) -> None:
    """TS, JS, .NET and Nest name their technology in the case developers write them, not as words."""
    assert detect(text).technologies == named
