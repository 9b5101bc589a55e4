"""Issue #4: whole-rule evidence in retrieval and ranking (rule documents, rule candidates, diversity)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ruledex.builder.build import build
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
from ruledex.reader.rank import diverse_head
from ruledex.reader.retrieve import retrieve

from .conftest import rule_doc, write_rules


def _built(tmp_path: Path, files: dict[str, str]) -> Path:
    out = tmp_path / "i.ruledex"
    build(write_rules(tmp_path / "rules", files), out)
    return out


def test_rule_document_holds_each_heading_once_and_not_the_example_tasks(tmp_path: Path) -> None:
    body = """
    ## Kafka consumers
    - [MUST] Commit offsets only after the message is processed.
    - [MUST] Make every handler idempotent so a redelivered message is harmless.
    - [SHOULD] Bound the retry count and send poison messages to a dead-letter topic.
    """
    doc = rule_doc(body, id="streams").replace(
        "examples: [Add an endpoint, Change an endpoint]", "examples: [Paint the logo purple]"
    )
    with Index(_built(tmp_path, {"streams.md": doc})) as index:
        term = index.term_id("kafka")
        assert term is not None
        ids, tf = index.rule_postings(term)
        # the heading once as parsed and once as written, not once per directive
        assert ids.tolist() == [0] and tf.tolist() == [2]
        # example tasks are what `check --examples` tests: indexing them would make it pass by construction
        assert index.term_id("purple") is None
        assert index.rule_k1 == index.manifest["keywords"]["rule_k1"] == 2.0


def test_text_the_parser_keeps_no_directive_from_still_finds_its_rule(tmp_path: Path) -> None:
    """Code under a heading with no list, and plain paragraphs, are searched as part of the rule."""
    ktor = """---
description: Kotlin services on Ktor.
globs: "**/*.kt"
---
## Core
- Keep route handlers thin and move the work into services.

## Error handling
```kotlin
install(StatusPages) {
    exception<NotFound> { call, cause -> call.respond(HttpStatusCode.NotFound) }
}
```
"""
    other = """---
description: Python web services.
---
## Errors
- Map domain exceptions to HTTP status codes in one place.
- Never leak a stack trace in an error response.
"""
    out = _built(tmp_path, {"ktor.mdc": ktor, "python.mdc": other})
    with Index(out) as index:
        assert index.term_id("statuspage") is not None
        assert index.term_id("kt") is not None  # the globs, as written in the front matter
        answer = query_directives(index, "Return 404 for a missing user with the StatusPages plugin")
    assert answer["citations"][0]["sourcePath"] == "ktor.mdc"


def test_an_index_without_rule_k1_scores_rules_with_k1(tmp_path: Path) -> None:
    with Index(_built(tmp_path, {"a.md": rule_doc("## A\n- [MUST] Validate every request body.")})) as index:
        del index.manifest["keywords"]["rule_k1"]  # as in indexes built before it was recorded
        assert index.rule_k1 == index.k1


def test_diverse_head_caps_each_rule_and_keeps_rank_order() -> None:
    groups = np.array([0, 0, 0, 0, 1, 2, 0, 1])  # rule of each candidate position
    positions = np.array([0, 1, 2, 3, 6, 4, 5, 7])  # in rank order
    assert diverse_head(positions, groups, per_group=2, size=10).tolist() == [0, 1, 4, 5, 7]
    assert diverse_head(positions, groups, per_group=2, size=3).tolist() == [0, 1, 4]
    assert diverse_head(positions[:0], groups, per_group=2, size=3).tolist() == []


def test_a_rule_with_many_matches_does_not_crowd_out_the_others(tmp_path: Path) -> None:
    crowded = "## Migrations\n" + "\n".join(
        f"- [MUST] Database migration step {i}: keep every schema migration reversible and reviewed." for i in range(40)
    )
    single = "## Backfills\n- [MUST] Run a data backfill for a schema migration in batches, never in one transaction."
    files = {
        "crowded.md": rule_doc(crowded, id="crowded", layers='["4-Persistence"]', topics="[database]"),
        "single.md": rule_doc(single, id="single", layers='["4-Persistence"]', topics="[database]"),
    }
    with Index(_built(tmp_path, files)) as index:
        answer = query_directives(index, "Write a schema migration", options={"maxItems": 8})
    named = {c["rule"] for c in answer["citations"]} | {o["id"].split("#")[0] for o in answer["diagnostics"]["omitted"]}
    assert "single" in named
    assert sum(c["rule"] == "crowded" for c in answer["citations"]) <= 7


def test_a_rule_that_matches_as_a_whole_is_a_candidate(tmp_path: Path) -> None:
    # "rabbitmq" is only in the rule's description, in none of its directives: the rule still answers
    spread = (
        "## Queue\n- [MUST] Acknowledge a message after the handler succeeds.\n- [SHOULD] Alert on a growing backlog."
    )
    files = {
        "queue.md": rule_doc(spread, id="queue", extra="description: How our RabbitMQ consumers work\n"),
        "other.md": rule_doc("## Other\n- [MUST] Name files in kebab case.", id="other"),
    }
    with Index(_built(tmp_path, files)) as index:
        got = retrieve(index, ["rabbitmq"], [1.0], index.encoder.encode_one("rabbitmq"), depth=1)
        assert set(index.rule_directive_ids(index.find_rule("queue"))) <= set(got.ids.tolist())
        answer = query_directives(index, "rabbitmq", options={"strictLayer": False})
    assert {c["rule"] for c in answer["citations"]} == {"queue"}
    assert not any("no specific match" in n for n in answer["diagnostics"]["notes"])
