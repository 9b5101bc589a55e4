"""The fixed, varied task set every query measurement runs (the same for ruledex and the baselines).

Short and long, every layer and topic, the rules' own words and paraphrases, technology names,
a bug report, and tasks that match nothing specific (answered with the core rules).
"""

from __future__ import annotations

TASKS: tuple[str, ...] = (
    "Add user registration API endpoint",
    "Add a login button to the header",
    "Write a database migration that adds a non-null column to the orders table",
    "Fix the flaky checkout test",
    "Set up the GitHub Actions deploy pipeline with Docker",
    "Improve the README with setup instructions",
    "Add pagination to the orders list endpoint",
    "Refactor the payment service and add tests",
    "Store uploaded avatars in S3",
    "Add structured logging to the worker",
    "Store the Stripe API key for the billing service",
    "The orders page takes five seconds to load, fix it",
    "Add an index to speed up searching orders by status",
    "Make the checkout form accessible to screen readers",
    "Add retries with backoff to the shipping API client",
    "Delete a user's data on request and mask email addresses in the logs",
    "Write an ADR for choosing PostgreSQL over MongoDB",
    "Split the monolith's billing module into its own package",
    "Add a Redis cache for product prices",
    "Set up branch protection on main and write a good commit message",
    "Add a Kafka consumer for shipment events",
    "Roll back the failed release and pin the base image",
    "Model the order cancellation invariant in the domain layer",
    "Show a loading spinner while orders load",
    "Add a latency metric and an alert to the checkout endpoint",
    "Make the webhook handler idempotent",
    "Deprecate the v1 invoices API",
    "refactor",
    "tests",
    "k8s helm chart",
    "Users report that they sometimes get logged out after changing their password on the mobile app, "
    "and support says the session cookie seems to survive the reset; find out why and fix it",
    "We are migrating the reporting service from Django to FastAPI; the new endpoints must keep the same JSON "
    "error format, paginate large result sets, and read from the replica without locking the primary database "
    "during the nightly export job that backfills the analytics tables",
    "Plan the team offsite agenda",
    "Translate the marketing copy to German",
    "Bump the version number",
    "Write unit tests for the discount calculation with pytest fixtures",
    "Add two-factor login with one-time codes",
    "Reduce the JavaScript bundle size of the dashboard",
    "Handle payment gateway timeouts without charging twice",
    "Document the public API with OpenAPI and add examples",
)
"""40 tasks; every measurement round runs all of them in this order."""

QUICK_TASKS: tuple[str, ...] = TASKS[:10] + TASKS[27:33]
"""A subset for ``--quick`` runs."""
