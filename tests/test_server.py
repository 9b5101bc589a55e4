"""The MCP server in memory: every tool, resource and prompt, bad input, hot reload, the query log."""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from ruledex.builder.build import build
from ruledex.reader import task_model
from ruledex.reader.catalog import render_rule
from ruledex.reader.encode import Encoder
from ruledex.reader.errors import ConfigError
from ruledex.reader.holder import IndexHolder
from ruledex.reader.index import Index
from ruledex.reader.query import MAX_TASK_CHARS, query_directives
from ruledex.reader.querylog import QueryLog, log_record, mask_secrets
from ruledex.reader.server import (
    TOOL_NAMES,
    RuledexServer,
    freeze_heap,
    listen,
    mode_instructions,
    parse_http,
    warming_up,
)

from .conftest import REPO, rule_doc, write_rules

TIMINGS = ("executionTimeMs", "stageMs")


def without_timings(answer: dict[str, Any]) -> dict[str, Any]:
    """A query answer minus the fields that measure time."""
    diagnostics = {k: v for k, v in answer["diagnostics"].items() if k not in TIMINGS}
    return {**answer, "diagnostics": diagnostics}


def with_client(server: RuledexServer, body: Callable[[Client], Awaitable[Any]]) -> Any:
    """Run ``body`` with an in-memory client connected to ``server``."""

    async def main() -> Any:
        with anyio.fail_after(60):
            async with Client(server) as client:
                return await body(client)

    return anyio.run(main)


def call(server: RuledexServer, name: str, arguments: dict[str, Any] | None = None) -> Any:
    """One tool call in a fresh session."""
    return with_client(server, lambda c: c.call_tool(name, arguments or {}))


def error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    return " ".join(c.text for c in result.content)


@pytest.fixture
def holder(bundled_index: Path) -> Iterator[IndexHolder]:
    opened = IndexHolder(bundled_index, check_interval=0)
    yield opened
    opened.close()


@pytest.fixture
def server(holder: IndexHolder) -> RuledexServer:
    return RuledexServer(holder)


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-rule index, to swap in for the bundled one."""

    folder = tmp_path_factory.mktemp("tiny")
    rules = write_rules(folder / "rules", {"sample.md": rule_doc("- [MUST] Validate every request body.")})
    return build(rules, folder / "tiny.ruledex").path


@pytest.fixture(scope="module")
def empty_index(tmp_path_factory: pytest.TempPathFactory) -> Path:

    folder = tmp_path_factory.mktemp("empty")
    (folder / "rules").mkdir()
    return build(folder / "rules", folder / "empty.ruledex").path


# --- tools, resources, prompts -------------------------------------------------------------


def test_tools_are_listed_with_schemas_descriptions_and_output_schemas(server: RuledexServer) -> None:
    tools = with_client(server, lambda c: c.list_tools()).tools
    assert [t.name for t in tools] == list(TOOL_NAMES)
    for tool in tools:
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema and tool.output_schema["type"] == "object"
        assert len(tool.description or "") > 80
        assert tool.annotations and tool.annotations.read_only_hint is True
    by_name = {t.name: t for t in tools}
    assert by_name["query_directives"].input_schema["required"] == ["taskDescription"]
    options = by_name["query_directives"].input_schema["properties"]["options"]["properties"]
    assert {"strictLayer", "maxItems", "tokenBudget", "severityFilter", "topicsBias", "layer"} <= set(options)
    for name in ("read_graph", "search_nodes", "open_nodes", "query_directives"):
        assert "pull request" in by_name[name].description


def test_query_directives_answers_like_the_reader(server: RuledexServer, index: Index) -> None:
    task = "Add user registration API endpoint"
    result = call(server, "query_directives", {"taskDescription": task})
    assert not result.is_error
    answer = result.structured_content
    assert without_timings(answer) == without_timings(query_directives(index, task))
    assert "security#input-validation-1" in [c["id"] for c in answer["citations"]]
    assert answer["context_block"].startswith("## Project rules for this task")
    assert [c.text for c in result.content] == [answer["context_block"]], "the model reads the markdown block"


def test_query_directives_options_and_mode_are_passed_through(server: RuledexServer, index: Index) -> None:
    task = "Fix the flaky checkout test"
    options = {"maxItems": 4, "tokenBudget": 400, "severityFilter": ["MUST"], "includeDiagnostics": True}
    result = call(server, "query_directives", {"taskDescription": task, "modeSlug": "debug", "options": options})
    expected = query_directives(index, task, "debug", options)
    assert without_timings(result.structured_content) == without_timings(expected)
    assert {c["severity"] for c in result.structured_content["citations"]} == {"MUST"}


def test_detect_context(server: RuledexServer) -> None:
    text = "Write a database migration that adds a non-null column to the orders table"
    result = call(server, "detect_context", {"text": text})
    found = result.structured_content
    assert json.loads(result.content[0].text) == found, "other tools repeat their JSON as text"
    assert found["detectedLayer"] == "4-Persistence"
    assert "database" in found["topics"]
    assert found["keywords"] and 0 < found["confidence"] <= 1
    strict = call(
        server, "detect_context", {"text": text, "options": {"confidenceThreshold": 1.0, "returnKeywords": False}}
    ).structured_content
    assert strict["detectedLayer"] is None
    assert strict["keywords"] == []
    assert strict["notes"]


def test_list_rules_and_get_rules(server: RuledexServer, index: Index) -> None:
    listed = call(server, "list_rules").structured_content
    domains = [r["domain"] for r in listed["rules"]]
    assert "security" in domains and listed["total"] == index.n_rules
    assert listed["index"]["rules"] == index.n_rules
    result = call(server, "get_rules", {"domain": "security"})
    document = result.structured_content
    assert document["content"] == render_rule(index, index.find_rule("security"))
    assert result.content[0].text == document["content"]
    assert document["description"] and document["version"]
    assert "lastUpdated" in document


def test_get_rules_with_an_unknown_domain_suggests_the_closest(server: RuledexServer) -> None:
    text = error_text(call(server, "get_rules", {"domain": "secur"}))
    assert "secur" in text and "security" in text and "list_rules" in text
    text = error_text(call(server, "get_rules", {"domain": "zzzz"}))  # it named the first three ids as "closest"
    assert "closest" not in text and "no domain is spelled like it" in text and "list_rules" in text


def test_search_knowledge(server: RuledexServer) -> None:
    found = call(
        server, "search_knowledge", {"query": "password hashing", "contextTags": ["security"]}
    ).structured_content
    results = found["results"]
    assert 0 < len(results) <= 5 and found["totalMatches"] >= len(results)
    assert results[0]["source"]["rule"] == "security"
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    for r in results:
        assert set(r) >= {"id", "title", "content", "tags", "scope", "category", "priority", "severity", "score"}
    one = call(server, "search_knowledge", {"query": "password hashing", "limit": 1}).structured_content
    assert len(one["results"]) == 1
    layer = call(server, "search_knowledge", {"query": "add an index", "category": "4-Persistence"}).structured_content
    assert layer["results"] and all({"4-Persistence", "*"} & set(r["layers"]) for r in layer["results"])
    lower = call(server, "search_knowledge", {"query": "add an index", "category": "4-persistence"}).structured_content
    assert lower == layer, "a layer name in another case is the same layer"
    none = call(server, "search_knowledge", {"query": "password hashing", "scope": "team"}).structured_content
    assert none == {"results": [], "totalMatches": 0}
    assert (
        call(server, "search_knowledge", {"query": "password", "minConfidence": 1.0}).structured_content["results"]
        == []
    )
    assert call(server, "search_knowledge", {"query": "zzqx flurble wibble"}).structured_content["results"] == []


def test_empty_index_answers_with_empty_lists(empty_index: Path) -> None:
    holder = IndexHolder(empty_index)
    try:
        server = RuledexServer(holder)
        assert call(server, "search_knowledge", {"query": "anything"}).structured_content == {
            "results": [],
            "totalMatches": 0,
        }
        assert call(server, "list_rules").structured_content["rules"] == []
        answer = call(server, "query_directives", {"taskDescription": "Add an endpoint"}).structured_content
        assert answer["citations"] == []
        assert call(server, "read_graph").structured_content == {"entities": [], "relations": []}
    finally:
        holder.close()


def test_graph_tools(server: RuledexServer, index: Index) -> None:
    graph = call(server, "read_graph").structured_content
    types = {e["entityType"] for e in graph["entities"]}
    assert types == {"Rule", "Section", "Directive", "Topic", "Layer"}
    assert sum(e["entityType"] == "Rule" for e in graph["entities"]) == index.n_rules
    assert sum(e["entityType"] == "Directive" for e in graph["entities"]) == index.n_directives
    assert {r["relationType"] for r in graph["relations"]} == {"contains", "covers", "authoritative_for", "applies_to"}
    names = {e["name"] for e in graph["entities"]}
    assert len(names) == len(graph["entities"]), "entity names are unique"
    assert all(r["from"] in names and r["to"] in names for r in graph["relations"])
    assert {"from": "security", "to": "security > Input validation", "relationType": "contains"} in graph["relations"]
    assert {
        "from": "security > Input validation",
        "to": "security#input-validation-1",
        "relationType": "contains",
    } in graph["relations"]

    found = call(server, "search_nodes", {"query": "Input validation"}).structured_content
    assert "security > Input validation" in {e["name"] for e in found["entities"]}
    opened = call(server, "open_nodes", {"names": ["security", "security > Input validation", "nope"]})
    opened = opened.structured_content
    assert {e["name"] for e in opened["entities"]} == {"security", "security > Input validation"}
    assert opened["relations"] == [
        {"from": "security", "to": "security > Input validation", "relationType": "contains"}
    ]
    assert opened["notFound"] == ["nope"] and opened["notFoundMore"] == 0


def test_open_nodes_echoes_unknown_names_cut_short_and_capped(server: RuledexServer) -> None:
    """Every unknown name came back whole: 1,000 names of 10 kB answered with 10 MB of the client's text."""
    long_name = "x" * 10_000
    names = ["security", long_name, long_name, *(f"made-up-{i}" for i in range(30))]
    opened = call(server, "open_nodes", {"names": names})
    assert not opened.is_error
    found = opened.structured_content
    assert [e["name"] for e in found["entities"]] == ["security"]
    assert found["notFound"][0] == "x" * 79 + "…" and len(found["notFound"]) == 20
    assert found["notFound"][1:] == [f"made-up-{i}" for i in range(19)]
    assert found["notFoundMore"] == 31 - 20  # distinct unknown names: the long one once, and 30 others
    assert len(json.dumps(found)) < 5_000


HUGE = "x" * 100_000


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("query_directives", {"taskDescription": "Add an endpoint", "modeSlug": HUGE}, "modeSlug: unknown mode"),
        ("query_directives", {"taskDescription": "Add an endpoint", "options": {"maxItems": [HUGE]}}, "maxItems"),
        ("query_directives", {"taskDescription": "Add an endpoint", "options": {"strictLayer": HUGE}}, "strictLayer"),
        ("query_directives", {"taskDescription": "Add an endpoint", "options": {"topicsBias": [HUGE]}}, "topicsBias"),
        ("query_directives", {"taskDescription": "Add an endpoint", "options": {"layer": [HUGE]}}, "layer"),
        (
            "detect_context",
            {"text": "Add an endpoint", "options": {"confidenceThreshold": HUGE}},
            "confidenceThreshold",
        ),
        ("search_knowledge", {"query": "passwords", "scope": HUGE}, "scope: unknown value"),
        ("search_knowledge", {"query": "passwords", "limit": [HUGE] * 3}, "limit: must be an integer"),
    ],
)
def test_an_error_quotes_a_bad_value_cut_short(
    server: RuledexServer, tool: str, arguments: dict[str, Any], field: str
) -> None:
    """Errors quoted the bad value whole: a 100 kB option came back as a 100 kB error message."""
    text = error_text(call(server, tool, arguments))
    assert field in text and "xxxx…" in text and len(text) < 600, text[:300]


def test_resources_are_the_rule_documents(server: RuledexServer, index: Index) -> None:
    async def body(client: Client) -> tuple[Any, Any, Any]:
        listed = await client.list_resources()
        templates = await client.list_resource_templates()
        read = await client.read_resource("ruledex://rules/security")
        return listed, templates, read

    listed, templates, read = with_client(server, body)
    uris = [r.uri for r in listed.resources]
    assert len(uris) == index.n_rules and "ruledex://rules/security" in uris
    assert all(r.mime_type == "text/markdown" for r in listed.resources)
    assert [t.uri_template for t in templates.resource_templates] == ["ruledex://rules/{domain}"]
    assert read.contents[0].text == render_rule(index, index.find_rule("security"))

    async def unknown(client: Client) -> MCPError:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("ruledex://rules/secur")
        return caught.value

    assert "security" in str(with_client(server, unknown))


def test_prompts_give_the_mode_instructions(server: RuledexServer) -> None:
    async def body(client: Client) -> tuple[Any, Any]:
        return await client.list_prompts(), await client.get_prompt("debug", {"task": "Fix the flaky test"})

    listed, prompt = with_client(server, body)
    assert [p.name for p in listed.prompts] == ["architect", "code", "debug"]
    text = prompt.messages[0].content.text
    assert "At the start of a task, call query_directives with the full task text" in text
    assert 'modeSlug "debug"' in text and text.endswith("Task: Fix the flaky test")


def test_initialize_carries_the_instructions(server: RuledexServer) -> None:
    async def body(client: Client) -> tuple[Any, Any]:
        return client.server_info, client.instructions

    info, instructions = with_client(server, body)
    assert info.name == "ruledex"
    assert "call query_directives" in instructions


# --- bad input never kills the server ------------------------------------------------------

BAD_CALLS = [
    ("query_directives", {}, ["taskDescription", "required"]),
    ("query_directives", {"taskDescription": 42}, ["taskDescription", "string"]),
    ("query_directives", {"taskDescription": "   "}, ["taskDescription", "non-empty"]),
    ("query_directives", {"taskDescription": "x", "modeSlug": "writer"}, ["modeSlug", "architect, code, debug"]),
    ("query_directives", {"taskDescription": "x", "options": "fast"}, ["options"]),
    ("query_directives", {"taskDescription": "x", "options": {"maxItems": "many"}}, ["options.maxItems", "3-12"]),
    ("query_directives", {"taskDescription": "x", "options": {"bogus": 1}}, ["bogus", "allowed", "strictLayer"]),
    ("query_directives", {"taskDescription": "x", "options": {"strictLayer": "yes"}}, ["options.strictLayer"]),
    ("query_directives", {"taskDescription": "x", "options": {"severityFilter": ["CRITICAL"]}}, ["MUST, SHOULD, MAY"]),
    ("query_directives", {"taskDescription": "x", "options": {"layer": "9-Space"}}, ["options.layer", "4-Persistence"]),
    (
        "query_directives",
        {"taskDescription": "x", "options": {"topicsBias": ["astrology"]}},
        ["topicsBias", "security"],
    ),
    ("query_directives", {"taskDescription": "x", "mode": "debug"}, ["Unknown argument", "mode", "modeSlug"]),
    ("detect_context", {"text": "x", "options": {"confidenceThreshold": 2}}, ["confidenceThreshold", "0 to 1"]),
    ("detect_context", {"text": "x", "options": {"returnKeywords": "no"}}, ["options.returnKeywords"]),
    ("detect_context", {"text": "x", "options": {"modeSlug": "review"}}, ["modeSlug", "architect"]),
    ("detect_context", {"text": ["x"]}, ["text", "string"]),
    ("get_rules", {}, ["domain", "required"]),
    ("get_rules", {"domain": ""}, ["domain", "non-empty"]),
    ("search_knowledge", {"query": "x", "limit": 0}, ["limit", "1 to 20"]),
    ("search_knowledge", {"query": "x", "limit": 21}, ["limit", "1 to 20"]),
    ("search_knowledge", {"query": "x", "limit": "lots"}, ["limit", "integer"]),
    ("search_knowledge", {"query": "x", "minConfidence": 1.5}, ["minConfidence", "0 to 1"]),
    ("search_knowledge", {"query": "x", "scope": "galaxy"}, ["scope", "global, team, project"]),
    ("search_knowledge", {"query": "x", "category": "Backend"}, ["category", "2-Application"]),
    ("search_knowledge", {"query": "x", "contextTags": "security"}, ["contextTags", "(array of string)"]),
    ("search_nodes", {"query": ""}, ["query", "non-empty"]),
    ("open_nodes", {"names": "security"}, ["names"]),
    ("open_nodes", {}, ["names", "required"]),
    ("list_rules", {"verbose": True}, ["Unknown argument", "verbose"]),
    ("drop_rules", {}, ["Unknown tool", "drop_rules", "query_directives"]),
]


def test_bad_input_is_a_clear_tool_error_and_the_next_request_is_served(server: RuledexServer) -> None:
    async def body(client: Client) -> list[tuple[str, Any, Any]]:
        seen = []
        for name, arguments, _ in BAD_CALLS:
            bad = await client.call_tool(name, arguments)
            good = await client.call_tool("list_rules", {})
            seen.append((name, bad, good))
        return seen

    for (name, arguments, fragments), (_, bad, good) in zip(BAD_CALLS, with_client(server, body), strict=True):
        text = error_text(bad)
        for fragment in fragments:
            assert fragment in text, f"{name}({arguments}): {fragment!r} not in {text!r}"
        assert not good.is_error and good.structured_content["total"] > 0


def test_oversized_task_is_truncated_and_noted(server: RuledexServer) -> None:
    task = "Add user registration API endpoint. " * 1000
    result = call(server, "query_directives", {"taskDescription": task})
    assert not result.is_error
    notes = result.structured_content["diagnostics"]["notes"]
    assert any("truncated" in n and str(MAX_TASK_CHARS) in n for n in notes)


def test_max_items_is_clamped_not_refused(server: RuledexServer) -> None:
    result = call(server, "query_directives", {"taskDescription": "Add an API endpoint", "options": {"maxItems": 50}})
    assert not result.is_error
    assert sum(not c["alwaysApply"] for c in result.structured_content["citations"]) <= 12


# --- hot reload ----------------------------------------------------------------------------


def served_copy(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    served = folder / "served.ruledex"
    shutil.copyfile(source, served)
    return served


def replace_atomically(source: Path, served: Path, data: bytes | None = None) -> None:
    """Publish like CI does: write a temporary file beside the served one, then rename over it."""
    tmp = served.with_name(".incoming.tmp")
    tmp.write_bytes(source.read_bytes() if data is None else data)
    os.replace(tmp, served)


def test_replaced_index_is_served_after_an_atomic_rename(bundled_index: Path, tiny_index: Path, tmp_path: Path) -> None:
    served = served_copy(bundled_index, tmp_path)
    holder = IndexHolder(served, check_interval=0)
    try:
        server = RuledexServer(holder)

        async def body(client: Client) -> tuple[Any, Any]:
            before = await client.call_tool("list_rules", {})
            replace_atomically(tiny_index, served)
            after = await client.call_tool("list_rules", {})
            return before, after

        before, after = with_client(server, body)
        assert before.structured_content["total"] > 1
        assert [r["domain"] for r in after.structured_content["rules"]] == ["sample"]
    finally:
        holder.close()


def test_a_replacement_that_fails_verification_is_refused(
    bundled_index: Path, tiny_index: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    served = served_copy(bundled_index, tmp_path)
    holder = IndexHolder(served, check_interval=0)
    corrupt = bytearray(bundled_index.read_bytes())
    corrupt[-100] ^= 0xFF  # inside the last section: the header is fine, the checksum is not
    try:
        server = RuledexServer(holder)
        expected = call(server, "list_rules").structured_content["total"]

        async def body(client: Client) -> tuple[Any, Any, Any]:
            replace_atomically(bundled_index, served, bytes(corrupt))
            refused = await client.call_tool("list_rules", {})
            again = await client.call_tool("query_directives", {"taskDescription": "Add an API endpoint"})
            replace_atomically(tiny_index, served)
            fixed = await client.call_tool("list_rules", {})
            return refused, again, fixed

        with caplog.at_level(logging.INFO, logger="ruledex"):
            refused, again, fixed = with_client(server, body)
        assert refused.structured_content["total"] == expected, "the old index keeps serving"
        assert not again.is_error and again.structured_content["citations"]
        errors = [r for r in caplog.records if r.levelno == logging.ERROR and "refused" in r.getMessage()]
        assert len(errors) == 1 and "checksum" in errors[0].getMessage()
        assert fixed.structured_content["total"] == 1, "a later good file is picked up"
    finally:
        holder.close()


def test_an_index_in_use_is_not_closed_by_a_swap(bundled_index: Path, tiny_index: Path, tmp_path: Path) -> None:
    served = served_copy(bundled_index, tmp_path)
    holder = IndexHolder(served, check_interval=0)
    try:
        with holder.use() as first:
            replace_atomically(tiny_index, served)
            assert holder.maybe_reload()
            assert first.retired and not first.closed
            assert query_directives(first.index, "Add an API endpoint")["citations"]
            with holder.use() as second:
                assert second is not first and second.index.n_rules == 1
        assert first.closed
    finally:
        holder.close()


def test_the_file_is_checked_at_most_every_interval(bundled_index: Path, tiny_index: Path, tmp_path: Path) -> None:
    served = served_copy(bundled_index, tmp_path)
    holder = IndexHolder(served, check_interval=3600)
    try:
        replace_atomically(tiny_index, served)
        assert not holder.maybe_reload()
        with holder.use() as loaded:
            assert loaded.index.n_rules > 1
    finally:
        holder.close()


@pytest.mark.parametrize(
    ("check_interval", "rewrite_in_place", "on_the_loop"), [(3600, False, True), (0, False, False), (3600, True, False)]
)
def test_a_tool_runs_on_the_event_loop_unless_it_looks_for_a_new_file(
    bundled_index: Path,
    tiny_index: Path,
    tmp_path: Path,
    check_interval: float,
    rewrite_in_place: bool,
    on_the_loop: bool,
) -> None:
    """A call is milliseconds of CPU: a worker thread only adds switches. Looking for a replaced file
    may verify a whole new one, so that call (at most one per interval, or the first after the file
    was rewritten in place) runs off the loop."""
    threads: list[bool] = []

    class Recording(IndexHolder):
        def use(self) -> Any:
            threads.append(threading.current_thread() is threading.main_thread())
            return super().use()

    served = served_copy(bundled_index, tmp_path)
    holder = Recording(served, check_interval=check_interval)
    try:
        if rewrite_in_place:
            shutil.copyfile(tiny_index, served)  # same inode, new bytes: verified before it is served
        answer = call(RuledexServer(holder), "list_rules")
        assert not answer.is_error and (answer.structured_content["total"] == 1) == rewrite_in_place
    finally:
        holder.close()
    assert threads == [on_the_loop]


def test_an_index_overwritten_in_place_never_crashes_the_server(
    bundled_index: Path, tiny_index: Path, tmp_path: Path
) -> None:
    """``cp`` or ``truncate`` over the served file changes the bytes under the mapping (a SIGBUS if read)."""
    served = served_copy(bundled_index, tmp_path)
    holder = IndexHolder(served, check_interval=3600)  # in-place changes are looked for on every request
    try:
        server = RuledexServer(holder)
        with open(served, "r+b") as fh:  # truncated in place: same inode, no rename
            fh.truncate(4096)
        broken = call(server, "query_directives", {"taskDescription": "Add an API endpoint"})
        assert broken.is_error and "overwritten in place" in broken.content[0].text
        shutil.copyfile(tiny_index, served)  # a good file copied over it, in place again
        fixed = call(server, "list_rules")
        assert not fixed.is_error and fixed.structured_content["total"] == 1
    finally:
        holder.close()


def test_a_warm_up_loads_what_the_first_query_would(
    bundled_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An IDE starts the server long before the first call: that call must not build the encoder or read the task model."""
    loads: list[str] = []
    from_json, read_model = Encoder.from_json, task_model.read_model

    def counting_encoder(*args: Any) -> Encoder:
        loads.append("encoder")
        return from_json(*args)

    def counting_model(path: Path) -> task_model.TaskModel:
        loads.append("task model")
        return read_model(path)

    monkeypatch.setattr(Encoder, "from_json", counting_encoder)
    monkeypatch.setattr(task_model, "read_model", counting_model)
    task_model.shipped_model.cache_clear()
    holder = IndexHolder(served_copy(bundled_index, tmp_path))  # a new Index: nothing of it loaded yet
    try:
        holder.warm_up()
        assert sorted(loads) == ["encoder", "task model"]
        loads.clear()
        answer = call(RuledexServer(holder), "query_directives", {"taskDescription": "Rotate the database password"})
        assert not answer.is_error and answer.structured_content["citations"]
        assert loads == [], "the first call loaded nothing"
    finally:
        holder.close()
        task_model.shipped_model.cache_clear()


def test_a_warm_up_that_fails_is_logged_and_the_next_request_says_why(
    bundled_index: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    served = served_copy(bundled_index, tmp_path)
    holder = IndexHolder(served, check_interval=3600)
    try:
        with open(served, "r+b") as fh:  # truncated in place while the server starts
            fh.truncate(4096)
        with caplog.at_level(logging.INFO, logger="ruledex"):
            holder.warm_up()  # never raises
        said = [
            (r.levelno, r.getMessage())
            for r in caplog.records
            if r.getMessage().startswith(("no warm-up", "warmed up"))
        ]
        assert len(said) == 1 and said[0][0] == logging.WARNING
        assert said[0][1].startswith("no warm-up: ") and "overwritten in place" in said[0][1]
        broken = call(RuledexServer(holder), "query_directives", {"taskDescription": "Add an API endpoint"})
        assert broken.is_error and "overwritten in place" in broken.content[0].text
    finally:
        holder.close()


def test_the_warm_up_waits_for_a_pause_in_the_requests(bundled_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that calls at once is answered without a warm-up sharing the CPU; a server stopping first never warms up."""
    warmed = threading.Event()
    monkeypatch.setattr(IndexHolder, "warm_up", lambda self: warmed.set())
    holder = IndexHolder(bundled_index)
    busy = [True]
    try:
        with warming_up([holder], lambda: 3600.0, after=3600):  # stopped before the pause ends: no warm-up, no wait
            pass
        assert not warmed.is_set()
        with warming_up([holder], lambda: 0.0 if busy[0] else 10.0, after=0.05) as thread:
            assert not warmed.wait(0.5), "no warm-up while requests come"
            busy[0] = False
            assert warmed.wait(30)
        assert not thread.is_alive()
    finally:
        holder.close()


def test_every_request_counts_as_activity(server: RuledexServer) -> None:
    """What the warm-up waits on: the handshake and every call, tools or not."""
    before = server.activity.last
    assert server.activity.idle_for() >= 0.0 and server.activity.running == 0

    async def body(client: Client) -> float:
        after_handshake = server.activity.last
        await client.list_tools()
        assert server.activity.last > after_handshake
        return after_handshake

    assert with_client(server, body) > before
    assert server.activity.running == 0


def test_freezing_the_heap_keeps_live_objects_out_of_the_collector() -> None:
    try:
        assert freeze_heap() > 1000  # modules, the SDK, pydantic's schemas
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0


# --- the query log -------------------------------------------------------------------------

SECRETS = [
    ("deploy with sk-live-abc123def456ghi789", "abc123def456"),
    ("push with ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghij"),
    ("the key is AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("login with password=hunter2 please", "hunter2"),
    ('{"password": "hunter2"}', "hunter2"),
    ("my password is hunter2", "hunter2"),
    ("mail bob@example.com about it", "bob@example.com"),
    ("Authorization: Bearer abc123def456ghi789jkl", "abc123def456"),
    ("connect to postgres://admin:s3cret@db.internal/prod", "s3cret"),
    ("API_KEY: abcd1234efgh", "abcd1234efgh"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----", "MIIBOgIBAAJBAK"),
    ("deploy with secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),  # an AWS secret access key
    ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ("export DB_PASS=hunter2 && make", "hunter2"),
    ("npm token npm_" + "a1B2c3D4e5" * 3 + "a1B2c3", "a1B2c3D4e5"),
    ("unknown argument bogus_sk-proj-abc123def456", "abc123def456"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_secrets_and_emails_are_masked(text: str, secret: str) -> None:
    masked = mask_secrets(text)
    assert secret not in masked
    assert "[" in masked


def test_ordinary_task_text_is_not_masked() -> None:
    for text in (
        "Add user registration API endpoint",
        "Add basic authentication to the admin API; the password field is hashed and the token is valid",
        "use sk-learn for the model",
        "Basic Authentication for the admin, then the commit 3f786850e387550fdab836ed7e6dc881de23001b",
    ):
        assert mask_secrets(text) == text


def test_query_log_has_one_masked_line_per_call(holder: IndexHolder, tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    server = RuledexServer(holder, query_log=QueryLog(path))
    task = "Add user registration API endpoint; password=hunter2, ask bob@example.com, key sk-live-abc123def456ghi789"

    async def body(client: Client) -> Any:
        answer = await client.call_tool("query_directives", {"taskDescription": task, "modeSlug": "code"})
        await client.call_tool("get_rules", {"domain": "secur"})
        await client.call_tool("query_directives", {})
        await client.call_tool("drop_rules", {})
        return answer

    answer = with_client(server, body)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["tool"] for line in lines] == ["query_directives", "get_rules", "query_directives", "drop_rules"]
    first = lines[0]
    for secret in ("hunter2", "bob@example.com", "abc123def456"):
        assert secret not in path.read_text(encoding="utf-8")
    assert first["task"].startswith("Add user registration API endpoint; password=[secret]")
    assert first["mode"] == "code" and first["ok"] is True
    assert log_record("query_directives", {"modeSlug": "sk-proj-abc123def456"}, latency_ms=1)["mode"] == "[api-key]"
    assert first["detectedLayer"] == answer.structured_content["diagnostics"]["detectedLayer"]
    assert first["topics"] == answer.structured_content["diagnostics"]["topics"]
    assert first["cited"] == [c["id"] for c in answer.structured_content["citations"]]
    assert first["latencyMs"] >= 0 and first["time"].endswith("Z")
    assert [line["ok"] for line in lines[1:]] == [False, False, False]
    assert "security" in lines[1]["error"]


def test_query_log_record_is_pure() -> None:
    record = log_record("search_knowledge", {"query": "x"}, latency_ms=1.23456, structured={"results": [{"id": "a"}]})
    assert record["cited"] == ["a"] and record["latencyMs"] == 1.235 and record["task"] == "x"


def test_query_log_never_goes_to_stdout(tmp_path: Path) -> None:
    for name in ("-", "/dev/stdout"):
        with pytest.raises(ConfigError, match="stdout"):
            QueryLog(Path(name))
    with pytest.raises(ConfigError, match="cannot append"):
        QueryLog(tmp_path / "missing-folder" / "q.jsonl")


def test_query_log_is_off_by_default(server: RuledexServer) -> None:
    assert server.query_log is None


# --- odds and ends -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("8765", ("127.0.0.1", 8765)), ("0.0.0.0:80", ("0.0.0.0", 80)), ("[::1]:9000", ("::1", 9000))],
)
def test_parse_http(value: str, expected: tuple[str, int]) -> None:
    assert parse_http(value) == expected


@pytest.mark.parametrize("value", ["", "host:", "host:port", "70000"])
def test_parse_http_refuses_bad_addresses(value: str) -> None:
    with pytest.raises(ValueError, match="--http"):
        parse_http(value)


def test_http_connections_send_small_answers_at_once() -> None:
    """Nagle's algorithm is off on every accepted connection. asyncio sets TCP_NODELAY only on sockets
    made with the TCP protocol number; without it a small answer waited up to 40 ms for the client's
    delayed ACK (bench/README.md, finding 6)."""
    import asyncio

    async def accepted_nodelay() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Note(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        sock = listen("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Note, sock=sock)  # as uvicorn serves it
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            try:
                return await asyncio.wait_for(seen, 10)
            finally:
                writer.close()

    assert asyncio.run(accepted_nodelay()) != 0


def test_server_imports_no_builder_dependency() -> None:
    heavy = ["marko", "pygit2", "model2vec", "torch", "transformers"]
    probe = f"import sys, ruledex.reader.server\nprint([m for m in {heavy!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_tool_and_argument_is_documented(server: RuledexServer) -> None:
    docs = (REPO / "docs" / "mcp.md").read_text(encoding="utf-8")
    for tool in with_client(server, lambda c: c.list_tools()).tools:
        assert f"`{tool.name}`" in docs, tool.name
        for argument in tool.input_schema.get("properties", {}):
            assert f"`{argument}`" in docs, f"{tool.name}.{argument}"
    for option in ("strictLayer", "maxItems", "tokenBudget", "returnKeywords", "confidenceThreshold"):
        assert f"`{option}`" in docs
    assert mode_instructions() in docs, "docs/mcp.md shows the mode snippet the server sends"


def test_hot_reload_refuses_a_replacement_that_breaks_the_pin(
    tmp_path: Path, bundled_index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A pinned index stays pinned: a rebuilt file with another sha256 is not swapped in.

    The refusal names the config that pins it (it said ``ruledex.toml`` for a pin in
    ``pyproject.toml`` or a parent folder), and says that after re-pinning the server must be
    restarted: it reads the pin once, so re-pinning alone left it refusing the new file.
    """
    from ruledex.reader.format import file_sha256

    served = tmp_path / "served.ruledex"
    shutil.copy(bundled_index, served)
    config = tmp_path / "pyproject.toml"
    holder = IndexHolder(served, check_interval=0.0, pinned_sha256=file_sha256(served), pin_config=config)
    try:
        before = holder.index
        rules = write_rules(tmp_path / "other", {"x.md": rule_doc("## S\n\n- [MUST] Do the other thing now.")})
        os.replace(build(rules, tmp_path / "o.ruledex").path, served)
        with caplog.at_level(logging.ERROR, logger="ruledex.server"):
            assert holder.maybe_reload() is False
        assert holder.index is before
        assert f"({config})" in caplog.text and "and restart `ruledex serve`" in caplog.text
    finally:
        holder.close()


def test_layered_indexes_answer_query_directives_together(bundled_index: Path, tmp_path: Path) -> None:
    """serve --index org --index project: one answer from both, each citation naming its index."""
    rules = write_rules(
        tmp_path / "project",
        {
            "api.md": rule_doc(
                "## Pagination\n\n- [MUST] Paginate list endpoints with opaque cursors.",
                id="project-api",
                extra="scope: project\n",
            )
        },
    )
    project = build(rules, tmp_path / "project.ruledex", name="project").path
    org, proj = IndexHolder(bundled_index, check_interval=0), IndexHolder(project, check_interval=0)
    try:
        result = call(
            RuledexServer(org, layers=[proj]),
            "query_directives",
            {"taskDescription": "Add pagination to the orders list endpoint"},
        )
        cited = result.structured_content["citations"]
        assert cited[0]["index"] == "project" and cited[0]["rule"] == "project-api"
        names = {c["index"] for c in cited}
        assert len(names) == 2 and "project" in names, "both layers contribute and are named"
        org_name = next(n for n in names if n != "project")

        # the catalogue and graph tools read every layer too
        server = RuledexServer(org, layers=[proj])
        listed = call(server, "list_rules", {}).structured_content
        origin = {r["domain"]: r["index"] for r in listed["rules"]}
        assert origin["project-api"] == "project" and origin["security"] == org_name
        assert [i["layer"] for i in listed["indexes"]] == [org_name, "project"]
        assert listed["total"] == org.index.n_rules + 1
        document = call(server, "get_rules", {"domain": "project-api"}).structured_content
        assert document["index"] == "project" and "opaque cursors" in document["content"]
        assert call(server, "get_rules", {"domain": "security"}).structured_content["index"] == org_name
        found = call(server, "search_knowledge", {"query": "paginate list endpoints cursors", "limit": 20})
        assert {e["index"] for e in found.structured_content["results"]} == {org_name, "project"}
        graph = call(server, "open_nodes", {"names": ["project-api", "security", "topic:api"]}).structured_content
        assert graph["notFound"] == []
        assert {e["name"] for e in graph["entities"]} == {"project-api", "security", "topic:api"}
        uris = {str(r.uri) for r in with_client(server, lambda c: c.list_resources()).resources}
        assert {"ruledex://rules/project-api", "ruledex://rules/security"} <= uris
    finally:
        org.close()
        proj.close()


def test_non_finite_numbers_are_errors_naming_the_field(holder: IndexHolder) -> None:
    """Raw JSON 1e400 parses to inf (an SDK client would send null); it was an OverflowError naming nothing."""
    from ruledex.reader.tools import detect_context, directive_ids, search_knowledge

    for bad in (float("inf"), float("nan")):
        with pytest.raises(ValueError, match=r"options\.confidenceThreshold"):
            detect_context(holder.index, "Add an API endpoint", {"confidenceThreshold": bad})
        with pytest.raises(ValueError, match="limit"):
            search_knowledge(holder.index, "password hashing", ids=directive_ids(holder.index), limit=bad)
        with pytest.raises(ValueError, match=r"options\.tokenBudget"):
            query_directives(holder.index, "Add an API endpoint", options={"tokenBudget": bad})


def test_layered_get_rules_reads_the_cited_index(bundled_index: Path, tmp_path: Path) -> None:
    """Two indexes both built as 'rules' and both defining 'security': the citation's index fetches its rule."""
    rules = write_rules(
        tmp_path / "project",
        {"security.md": rule_doc("## Tokens\n\n- [MUST] Rotate project API tokens every 90 days.", id="security")},
    )
    project = build(rules, tmp_path / "proj.ruledex").path
    org, proj = IndexHolder(bundled_index, check_interval=0), IndexHolder(project, check_interval=0)
    try:
        server = RuledexServer(org, layers=[proj])
        listed = call(server, "list_rules").structured_content
        names = [i["layer"] for i in listed["indexes"]]
        assert names == ["bundled", "proj"], "clashing build names fall back to file stems"
        answer = call(server, "query_directives", {"taskDescription": "Add user registration API endpoint"})
        cited = {c["index"] for c in answer.structured_content["citations"] if c["rule"] == "security"}
        assert cited == {"bundled", "proj"}, "both indexes' security rules answer, each named"
        titles = {}
        for name in cited:
            document = call(server, "get_rules", {"domain": "security", "index": name}).structured_content
            assert document["index"] == name
            titles[name] = document["title"]
        assert titles == {"bundled": "Application security", "proj": "Sample security"}
        preferred = call(server, "get_rules", {"domain": "security"}).structured_content
        assert preferred["index"] == "bundled", "equal scopes: the index given first"
        assert preferred["definedIn"] == ["bundled", "proj"]
        unknown = error_text(call(server, "get_rules", {"domain": "security", "index": "rules"}))
        assert "index:" in unknown and "bundled, proj" in unknown
        missing = error_text(call(server, "get_rules", {"domain": "testing", "index": "proj"}))
        assert "in index 'proj'; it is in: bundled" in missing
    finally:
        org.close()
        proj.close()


def healthz(server: RuledexServer) -> tuple[int, dict[str, Any]]:
    """GET /healthz on ``server`` (no transport): the status code and the JSON body."""
    from starlette.requests import Request

    request = Request({"type": "http", "method": "GET", "path": "/healthz", "headers": [], "query_string": b""})
    response = anyio.run(server._healthz, request)
    return response.status_code, json.loads(response.body)


@pytest.mark.parametrize("layered", [False, True])
def test_detect_context_reads_a_task_as_query_directives_does(
    layered: bool, bundled_index: Path, tiny_index: Path
) -> None:
    """Same layer, topics and confidence as the answer's diagnostics, over every layered index."""
    org = IndexHolder(bundled_index, check_interval=0)
    extra = [IndexHolder(tiny_index, check_interval=0)] if layered else []
    server = RuledexServer(org, layers=extra)
    keys = ("detectedLayer", "topics", "confidence", "technologies", "keywords")
    try:
        for task in ("Write a Cypress API test for login", "Add user registration API endpoint", "Validate the body"):
            for options in ({}, {"files": ["tests/test_login.py"]}):
                found = call(server, "detect_context", {"text": task, "options": options}).structured_content
                answer = call(server, "query_directives", {"taskDescription": task, "options": options})
                diagnostics = answer.structured_content["diagnostics"]
                assert {k: found[k] for k in keys} == {k: diagnostics[k] for k in keys}, (task, options)
    finally:
        org.close()
        for holder in extra:
            holder.close()


def test_healthz_and_the_startup_log_name_every_layered_index(bundled_index: Path, tiny_index: Path) -> None:
    from ruledex.reader.server import served_summary

    org, team = IndexHolder(bundled_index, check_interval=0), IndexHolder(tiny_index, check_interval=0)
    try:
        status, body = healthz(RuledexServer(org, layers=[team]))
        assert status == 200 and body["status"] == "ok"
        assert body["index"]["path"] == str(bundled_index)
        assert [(i["layer"], i["path"]) for i in body["indexes"]] == [
            ("bundled", str(bundled_index)),
            ("tiny", str(tiny_index)),
        ]
        summary = served_summary([org.index, team.index])
        assert summary.startswith("2 layered indexes: bundled: ") and "tiny: rules" in summary
        assert str(tiny_index) in summary and str(bundled_index) in summary
    finally:
        org.close()
        team.close()


def test_an_index_overwritten_in_place_is_reported_by_healthz_and_resources(
    bundled_index: Path, tiny_index: Path, tmp_path: Path
) -> None:
    """/healthz and the resources give the tools' clear message, not 200 ok or 'Internal server error'."""
    served = served_copy(bundled_index, tmp_path)
    holder = IndexHolder(served, check_interval=3600)
    try:
        server = RuledexServer(holder)
        assert healthz(server)[0] == 200
        with open(served, "r+b") as fh:
            fh.truncate(4096)
        tool_error = error_text(call(server, "list_rules"))
        assert "overwritten in place" in tool_error
        status, body = healthz(server)
        assert status == 503 and body["status"] == "error" and tool_error.endswith(body["error"])

        async def resources(client: Client) -> list[str]:
            messages = []
            for request in (client.list_resources(), client.read_resource("ruledex://rules/security")):
                with pytest.raises(MCPError) as caught:
                    await request
                messages.append(str(caught.value))
            return messages

        for message in with_client(server, resources):
            assert "overwritten in place" in message and str(served) in message
        shutil.copyfile(tiny_index, served)  # a good file copied over it: healthy again
        assert healthz(server)[0] == 200
    finally:
        holder.close()


def publish(data: bytes, target: Path, mtime: float) -> None:
    """Publish a new build as ``ruledex build`` does: a temporary file beside it, renamed into place."""
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(data)
    os.utime(tmp, (mtime, mtime))
    os.replace(tmp, target)


@pytest.mark.parametrize("follow", [True, False])
def test_an_index_chosen_from_dist_follows_the_newest_build(
    follow: bool, bundled_index: Path, tiny_index: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A rebuild writes a new file name (rules-<version>.ruledex): without --index or a pin, serve it."""
    dist = tmp_path / "dist"
    first = served_copy(bundled_index, dist)
    holder = IndexHolder(first, check_interval=0, follow=dist if follow else None)
    corrupt = bytearray(bundled_index.read_bytes())
    corrupt[-100] ^= 0xFF  # the header is fine, the last section's checksum is not
    now = first.stat().st_mtime
    try:
        server = RuledexServer(holder)

        async def body(client: Client) -> list[Any]:
            seen = [(await client.call_tool("list_rules", {})).structured_content]
            publish(tiny_index.read_bytes(), dist / "rules-v2.ruledex", now + 10)
            seen.append((await client.call_tool("list_rules", {})).structured_content)
            publish(bytes(corrupt), dist / "rules-v3.ruledex", now + 20)
            seen.append((await client.call_tool("list_rules", {})).structured_content)
            seen.append((await client.call_tool("list_rules", {})).structured_content)
            return seen

        with caplog.at_level(logging.INFO, logger="ruledex"):
            before, after, refused, again = with_client(server, body)
        assert before["total"] > 1
        if not follow:  # --index or a pin: the file given, nothing else
            assert after["total"] == refused["total"] == before["total"]
            return
        assert after["total"] == 1 and after["index"]["path"] == str(dist / "rules-v2.ruledex")
        assert refused == again == after, "a newest file that fails verification is refused; the last good one serves"
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1 and "rules-v3.ruledex" in errors[0] and "checksum" in errors[0]
    finally:
        holder.close()


@pytest.mark.parametrize(("argv", "follows"), [([], True), (["--index", "dist/a.ruledex"], False)])
def test_serve_follows_dist_only_when_it_chose_the_index_there(
    argv: list[str], follows: bool, bundled_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ruledex.reader import server as server_module
    from ruledex.reader.cli import main

    served_copy(bundled_index, tmp_path / "dist").rename(tmp_path / "dist" / "a.ruledex")
    monkeypatch.chdir(tmp_path)
    given: dict[str, Any] = {}
    monkeypatch.setattr(server_module, "serve", lambda **kwargs: given.update(kwargs) or 0)
    assert main(["serve", *argv]) == 0
    assert given["index_path"].name == "a.ruledex"
    assert given["follow"] == ((tmp_path / "dist").absolute() if follows else None)


def test_empty_mode_string_limits_and_prompt_arguments_are_checked(server: RuledexServer) -> None:
    """modeSlug '' (outside the schema's enum), limit '5' (a string) and an unknown prompt argument."""
    for name, arguments in (
        ("query_directives", {"taskDescription": "Add an endpoint", "modeSlug": ""}),
        ("detect_context", {"text": "Add an endpoint", "options": {"modeSlug": ""}}),
    ):
        message = error_text(call(server, name, arguments))
        assert "modeSlug" in message and "architect, code, debug" in message
    assert "limit: must be an integer from 1 to 20, got '5'" in error_text(
        call(server, "search_knowledge", {"query": "password hashing", "limit": "5"})
    )
    schema = next(t for t in with_client(server, lambda c: c.list_tools()).tools if t.name == "search_knowledge")
    properties = schema.input_schema["properties"]
    assert (properties["limit"]["minimum"], properties["limit"]["maximum"]) == (1, 20)
    assert (properties["minConfidence"]["minimum"], properties["minConfidence"]["maximum"]) == (0, 1)

    async def prompt(client: Client) -> str:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("code", {"bogus": "1"})
        assert (await client.get_prompt("code", {"task": "Add an endpoint"})).messages
        return str(caught.value)

    message = with_client(server, prompt)
    assert "bogus" in message and "task (string, optional)" in message


def test_an_unknown_prompt_is_an_invalid_params_error_naming_the_prompts(
    server: RuledexServer, caplog: pytest.LogCaptureFixture
) -> None:
    """prompts/get 'nope' was error code 0 with a traceback on stderr, and did not say which prompts exist."""

    async def body(client: Client) -> MCPError:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("nope", {})
        assert (await client.get_prompt("code", {})).messages  # the session goes on
        return caught.value

    with caplog.at_level(logging.ERROR):
        error = with_client(server, body)
    assert error.error.code == -32602
    assert "'nope'" in error.error.message and "architect, code, debug" in error.error.message
    assert "Traceback" not in caplog.text and not [r for r in caplog.records if r.exc_info]


def test_null_limit_and_min_confidence_mean_the_defaults(server: RuledexServer) -> None:
    """Every other optional argument takes null as "not given"; these two were errors ("got None")."""
    given = {"query": "password hashing", "limit": None, "minConfidence": None, "scope": None}
    nulls = call(server, "search_knowledge", given)
    defaults = call(server, "search_knowledge", {"query": "password hashing"})
    assert not nulls.is_error, error_text(nulls)
    assert nulls.structured_content == defaults.structured_content and len(defaults.structured_content["results"]) == 5


@pytest.mark.parametrize("uri", ["file:///etc/passwd", "ruledex://rules/security/extra", "ruledex://rule/security"])
def test_a_uri_that_is_no_rule_document_says_what_the_resources_are(server: RuledexServer, uri: str) -> None:
    """It was "Unknown resource: file:///etc/passwd", with nothing on what to read instead."""

    async def body(client: Client) -> MCPError:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
        return caught.value

    message = str(with_client(server, body))
    assert uri in message and "ruledex://rules/{domain}" in message and "resources/list" in message


def test_a_refused_in_place_rewrite_says_why_in_the_tool_error(
    bundled_index: Path, tiny_index: Path, tmp_path: Path
) -> None:
    """The reason (truncated, another sha256 than the pin) was only on stderr, which an IDE rarely shows."""
    from ruledex.reader.format import file_sha256

    served = served_copy(bundled_index, tmp_path)
    holder = IndexHolder(served, check_interval=3600, pinned_sha256=file_sha256(served))
    try:
        server = RuledexServer(holder)
        shutil.copyfile(tiny_index, served)  # a good index, but not the pinned one, copied in place
        pinned = error_text(call(server, "list_rules"))
        assert "overwritten in place" in pinned and "expected sha256" in pinned
        assert f"({served}: " not in pinned, "the reason does not name the file again"
        with open(served, "r+b") as fh:
            fh.truncate(100)
        assert "truncated" in error_text(call(server, "list_rules"))
    finally:
        holder.close()


def test_query_log_lines_hold_whatever_separators_the_task_has(tmp_path: Path) -> None:
    """A task pasted with U+2028 or NEL (U+0085) was written raw: splitlines() then cut the record in two."""
    log = QueryLog(tmp_path / "q.jsonl")
    task = "Add login\u2028then logout\u2029and\x85more"
    log.write(log_record("query_directives", {"taskDescription": task}, latency_ms=1))
    lines = (tmp_path / "q.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["task"] == task
