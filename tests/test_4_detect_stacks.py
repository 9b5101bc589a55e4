"""Issue #4: the built-in detector knows the common stacks' words for each layer (no index needed)."""

from __future__ import annotations

import pytest

from ruledex.reader.detect import detect


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


def test_git_hooks_are_not_react_hooks() -> None:
    assert detect("Add pre-commit hooks that run the linter").layer != "1-Presentation"
