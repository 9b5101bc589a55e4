"""``ruledex serve`` end to end: the SDK's client over stdio and over Streamable HTTP on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.mcpbench import HELLO
from bench.measure import free_port, stop, wait_healthy
from bench.tasks import TASKS as BENCH_TASKS

SERVE = [sys.executable, "-m", "ruledex.reader.cli", "serve"]
TASKS = list(BENCH_TASKS[:10])  # the benchmark's varied tasks: the same ones, one definition
TIMINGS = ("executionTimeMs", "stageMs")


def stable(answer: dict[str, Any]) -> dict[str, Any]:
    """A query answer minus the fields that measure time."""
    return {**answer, "diagnostics": {k: v for k, v in answer["diagnostics"].items() if k not in TIMINGS}}


async def exercise(client: Client) -> None:
    """List everything and call every tool with real tasks; assert on the answers."""
    tools = {t.name for t in (await client.list_tools()).tools}
    assert tools == {
        "query_directives",
        "detect_context",
        "list_rules",
        "get_rules",
        "search_knowledge",
        "read_graph",
        "search_nodes",
        "open_nodes",
    }
    resources = [r.uri for r in (await client.list_resources()).resources]
    assert "ruledex://rules/security" in resources
    assert [p.name for p in (await client.list_prompts()).prompts] == ["architect", "code", "debug"]

    answer = (await client.call_tool("query_directives", {"taskDescription": TASKS[0]})).structured_content
    assert "security#input-validation-1" in [c["id"] for c in answer["citations"]]
    assert "[security#input-validation-1]" in answer["context_block"]

    found = (await client.call_tool("detect_context", {"text": TASKS[2]})).structured_content
    assert found["detectedLayer"] == "4-Persistence"

    rules = (await client.call_tool("list_rules", {})).structured_content["rules"]
    assert "security" in [r["domain"] for r in rules]
    document = (await client.call_tool("get_rules", {"domain": "security"})).structured_content
    assert document["content"].startswith("# ")
    unknown = await client.call_tool("get_rules", {"domain": "secur"})
    assert unknown.is_error and "security" in unknown.content[0].text

    hits = (await client.call_tool("search_knowledge", {"query": "password hashing"})).structured_content
    assert hits["results"] and hits["results"][0]["source"]["rule"] == "security"

    graph = (await client.call_tool("read_graph", {})).structured_content
    assert any(e["entityType"] == "Rule" for e in graph["entities"])
    assert any(r["relationType"] == "contains" for r in graph["relations"])
    nodes = (await client.call_tool("search_nodes", {"query": "input validation"})).structured_content
    assert nodes["entities"]
    opened = (await client.call_tool("open_nodes", {"names": ["security"]})).structured_content
    assert [e["name"] for e in opened["entities"]] == ["security"]

    text = (await client.read_resource("ruledex://rules/security")).contents[0].text
    assert text == document["content"]
    prompt = await client.get_prompt("code", {})
    assert "call query_directives with the full task text" in prompt.messages[0].content.text

    bad = await client.call_tool("query_directives", {"taskDescription": 3})
    assert bad.is_error and "taskDescription" in bad.content[0].text
    assert not (await client.call_tool("list_rules", {})).is_error


def test_stdio_end_to_end(bundled_index: Path, tmp_path: Path) -> None:
    log = tmp_path / "queries.jsonl"
    params = StdioServerParameters(
        command=SERVE[0], args=[*SERVE[1:], "--index", str(bundled_index), "--log-queries", str(log)]
    )

    async def main() -> None:
        with anyio.fail_after(60), (tmp_path / "stderr.txt").open("w", encoding="utf-8") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                assert client.server_info.name == "ruledex"
                assert "query_directives" in (client.instructions or "")
                await exercise(client)
                await client.call_tool("query_directives", {"taskDescription": "password=hunter2 for bob@example.com"})

    anyio.run(main)
    stderr = (tmp_path / "stderr.txt").read_text(encoding="utf-8")
    assert "serving" in stderr and "over stdio" in stderr
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["tool"] == "query_directives" and "security#input-validation-1" in lines[0]["cited"]
    assert lines[-1]["task"] == "password=[secret] for [email]"


def test_stdio_stdout_carries_only_the_protocol(bundled_index: Path) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"},
        },
    }
    done = subprocess.run(
        [*SERVE, "--index", str(bundled_index)],
        input=json.dumps(initialize) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    assert messages and all(m["jsonrpc"] == "2.0" for m in messages)
    assert messages[0]["id"] == 1 and messages[0]["result"]["serverInfo"]["name"] == "ruledex"
    assert "serving" in done.stderr


def test_requests_read_before_stdin_closes_are_answered(bundled_index: Path) -> None:
    """Piped requests and then EOF: the SDK cancelled the calls still running and answered only initialize."""
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0"}}
    call = {"name": "query_directives", "arguments": {"taskDescription": TASKS[0]}}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_rules", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call},
    ]
    done = subprocess.run(
        [*SERVE, "--index", str(bundled_index)],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3], done.stderr
    assert "security" in answers[2]["result"]["content"][0]["text"]
    assert "security#input-validation-1" in answers[3]["result"]["content"][0]["text"]


HANDSHAKE = (
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
)
"""What a client sends first; its answer has id 0."""


def raw_stdio(index: Path, lines: list[str], *, initialize: bool = True) -> tuple[list[dict[str, Any]], str]:
    """Write these lines (after the handshake, unless told not to) to ``ruledex serve``; every answer and stderr."""
    handshake = [json.dumps(m) for m in HANDSHAKE]
    done = subprocess.run(
        [*SERVE, "--index", str(index)],
        input="".join(f"{line}\n" for line in [*(handshake if initialize else []), *lines]),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    return [a for a in answers if a.get("id") != 0 or not initialize], done.stderr


def test_request_params_that_do_not_fit_the_method_are_named(bundled_index: Path) -> None:
    """The SDK answered these with "Invalid request parameters" and empty data: no field named."""
    calls = {
        1: ("tools/call", {"arguments": {}}, "params.name: Field required"),
        2: ("tools/call", {"name": "list_rules", "arguments": [1]}, "params.arguments: Input should be a valid dict"),
        3: (
            "prompts/get",
            {"name": "code", "arguments": {"task": 5}},
            "params.arguments.task: Input should be a valid",
        ),
        4: ("resources/read", {}, "params.uri: Field required"),
    }
    lines = [json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": p}) for i, (m, p, _) in calls.items()]
    answers, stderr = raw_stdio(bundled_index, [*lines, json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"})])
    by_id = {a["id"]: a for a in answers}
    for i, (method, _, expected) in calls.items():
        error = by_id[i]["error"]
        assert error["code"] == -32602 and error["message"].startswith(f"Invalid params for {method}: "), error
        assert expected in error["message"], error
    assert by_id[9]["result"] == {} and "Traceback" not in stderr


def test_a_line_that_is_not_a_json_rpc_message_is_answered_over_stdio(bundled_index: Path) -> None:
    """The SDK dropped these without a word (the HTTP transport answers them), so the client waited forever."""
    lines = [
        "not json",
        json.dumps({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}),
        json.dumps([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": [1]}),
        "",  # a blank line asks nothing: no answer
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    ]
    answers, stderr = raw_stdio(bundled_index, lines)
    assert [(a["id"], a.get("error", {}).get("code")) for a in answers] == [
        (None, -32700),
        (None, -32600),
        (None, -32600),
        (None, -32600),
        (4, None),
    ]
    messages = [a["error"]["message"] for a in answers[:4]]
    assert "not JSON" in messages[0] and "jsonrpc: Input should be '2.0'" in messages[1]
    assert "batch" in messages[2] and "params: Input should be an object" in messages[3]
    assert all("one JSON-RPC 2.0 object per line" in m for m in messages)
    assert stderr.count("not a JSON-RPC message") == 4 and "Traceback" not in stderr


def test_a_request_sent_without_an_id_is_explained_on_stderr(bundled_index: Path) -> None:
    """A notification gets no answer (JSON-RPC), so a request written without an id vanished without a trace."""
    call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "list_rules", "arguments": {}}}
    answers, stderr = raw_stdio(
        bundled_index, [json.dumps(call), json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})]
    )
    assert [a["id"] for a in answers] == [1]
    assert "tools/call without an id" in stderr and "is a notification and gets no answer; give it an id" in stderr
    assert "notifications/initialized" not in stderr, "real notifications are not warned about"
    forged = {"jsonrpc": "2.0", "method": "x\nruledex serve: ERROR: forged\x1b[2J"}
    _, stderr = raw_stdio(bundled_index, [json.dumps(forged)])
    assert "\nruledex serve: ERROR: forged" not in stderr and "\x1b" not in stderr and "x\\nruledex" in stderr


def test_a_cancellation_with_a_malformed_request_id_does_not_stop_the_server(bundled_index: Path) -> None:
    """notifications/cancelled with requestId {} raised TypeError (unhashable) in the stdio wrapper: exit 1."""
    lines = [
        json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}}),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
    ]
    answers, stderr = raw_stdio(bundled_index, lines)  # check=True: exit code 0
    assert answers == [{"jsonrpc": "2.0", "id": 1, "result": {}}] and "Traceback" not in stderr


def test_a_cancellation_naming_the_id_as_a_string_settles_the_request() -> None:
    """The SDK takes "7" and 7 for one id (it cancels request 7), so the end of stdin must not wait for 7 either."""
    from ruledex.reader.stdio import InFlight

    async def settled() -> bool:
        in_flight = InFlight()
        in_flight.start(7)
        in_flight.done("7")
        in_flight.start("8")
        in_flight.done(8)
        in_flight.done(True)  # not an id (it would alias 1): ignored
        return not in_flight.ids

    assert anyio.run(settled)


def test_a_request_the_client_cancelled_is_not_waited_for_at_eof() -> None:
    """Cancelled requests get no answer (the SDK's rule), so the end of stdin must not wait for one."""
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

    from ruledex.reader.stdio import HoldEof, InFlight, NoteAnswers

    async def scenario() -> list[object]:
        send, receive = anyio.create_memory_object_stream[SessionMessage](10)
        out_send, out_receive = anyio.create_memory_object_stream[SessionMessage](10)
        in_flight = InFlight()
        async with (
            HoldEof(receive, in_flight, timeout=600) as reader,
            NoteAnswers(out_send, in_flight) as writer,
            out_receive,
        ):
            async with send:
                for message in (
                    JSONRPCRequest(jsonrpc="2.0", id=1, method="tools/list"),
                    JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/list"),
                    JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 2}),
                ):
                    await send.send(SessionMessage(message))
            seen = [await reader.receive() for _ in range(3)]
            await writer.send(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=1, result={})))
            with anyio.fail_after(30):  # a guard against a hang, not a timing: unsettled, this waits 600 s
                seen.extend([item async for item in reader])
        return seen

    assert len(anyio.run(scenario)) == 3


def _lines(*messages: dict[str, Any]) -> bytes:
    return "".join(json.dumps(m) + "\n" for m in messages).encode()


def _handshake_and(*messages: dict[str, Any]) -> bytes:
    return _lines(*HANDSHAKE, *messages)


QUERY = {"name": "query_directives", "arguments": {"taskDescription": TASKS[0]}}


@pytest.mark.parametrize("wiring", ["pipes", "stdin from a file", "files both ways", "stdout and stderr one pipe"])
def test_stdio_serves_over_pipes_files_and_a_shared_stderr(bundled_index: Path, tmp_path: Path, wiring: str) -> None:
    """Pipes are read and written by the event loop; files and a stdout shared with stderr by the SDK's transport."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(_handshake_and({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": QUERY}))
    answers_file = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers_file.open("wb") as stdout_file:
        done = subprocess.run(
            [*SERVE, "--index", str(bundled_index)],
            input=None if "file" in wiring else requests.read_bytes(),
            stdin=stdin if "file" in wiring else None,
            stdout=stdout_file if wiring == "files both ways" else subprocess.PIPE,
            stderr=subprocess.STDOUT if wiring == "stdout and stderr one pipe" else subprocess.PIPE,
            timeout=60,
            check=True,
        )
    out = answers_file.read_text(encoding="utf-8") if wiring == "files both ways" else done.stdout.decode()
    lines = out.splitlines()
    answers = {m["id"]: m for m in map(json.loads, (line for line in lines if line.startswith("{")))}
    assert sorted(answers) == [0, 1], out
    assert "security#input-validation-1" in answers[1]["result"]["content"][0]["text"]
    if wiring == "stdout and stderr one pipe":  # the log lines arrive too, each on a line of its own
        assert any("serving" in line for line in lines if not line.startswith("{"))


@pytest.mark.skipif(
    sys.platform == "win32", reason="the event loop serves POSIX pipes only; Windows keeps the SDK's transport"
)
@pytest.mark.parametrize(
    ("stdin", "stdout", "stderr", "on_the_loop"),
    [
        ("pipe", "pipe", "pipe", True),
        ("file", "pipe", "pipe", False),
        ("pipe", "file", "pipe", False),
        ("pipe", "pipe", "stdout", False),
    ],
)
def test_the_event_loop_reads_and_writes_pipes_only(
    tmp_path: Path, stdin: str, stdout: str, stderr: str, on_the_loop: bool
) -> None:
    """Pipes are served by the event loop (no thread switch per message); anything else by the SDK's threads."""
    probe = (
        "import sys; from ruledex.reader.stdio import loop_can_serve; print('LOOP', loop_can_serve(), file=sys.stderr)"
    )
    (tmp_path / "in").write_text("", encoding="utf-8")
    with (tmp_path / "in").open("rb") as file_in, (tmp_path / "out").open("wb") as file_out:
        done = subprocess.run(
            [sys.executable, "-c", probe],
            stdin=file_in if stdin == "file" else subprocess.PIPE,
            stdout=file_out if stdout == "file" else subprocess.PIPE,
            stderr=subprocess.STDOUT if stderr == "stdout" else subprocess.PIPE,
            timeout=60,
            check=True,
        )
    said = (done.stderr or done.stdout or b"").decode()
    assert f"LOOP {on_the_loop}" in said, said


@pytest.mark.skipif(sys.platform == "win32", reason="runs sh; non-blocking pipes are POSIX")
def test_stdin_and_stdout_are_blocking_again_when_the_server_ends(bundled_index: Path) -> None:
    """The loop makes the pipes non-blocking; a command run after the server on the same pipes must not inherit that."""
    script = (
        f'"{SERVE[0]}" -m ruledex.reader.cli serve --index "{bundled_index}"; '
        f'"{sys.executable}" -c "import os, sys; print(\'BLOCKING\', os.get_blocking(0), os.get_blocking(1), file=sys.stderr)"'
    )
    done = subprocess.run(["sh", "-c", script], input=_handshake_and(), capture_output=True, timeout=60, check=True)
    assert "BLOCKING True True" in done.stderr.decode(), done.stderr.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="a socket as a child's stdin/stdout is POSIX (libuv's socketpairs)")
@pytest.mark.parametrize("sockets", ["two socketpairs", "stdout half-closed by the client", "one socket both ways"])
def test_stdio_serves_over_unix_sockets(bundled_index: Path, sockets: str) -> None:
    """Node (libuv) gives a child socketpairs, not pipes, for stdin and stdout: VS Code, Cursor and Claude
    Desktop start MCP servers so. A client that only reads stdout may shut down its sending side of it."""
    if sockets == "one socket both ways":
        ours, theirs = socket.socketpair()
        child_in = child_out = theirs
        send, receive = ours, ours
    else:
        send, child_in = socket.socketpair()
        receive, child_out = socket.socketpair()
    with send, receive, child_in, child_out:
        process = subprocess.Popen(
            [*SERVE, "--index", str(bundled_index)],
            stdin=child_in.fileno(),
            stdout=child_out.fileno(),
            stderr=subprocess.PIPE,
        )
        child_in.close()
        child_out.close()
        if sockets == "stdout half-closed by the client":
            receive.shutdown(socket.SHUT_WR)  # stdout's socket turns readable (end of file) at the server's end
        try:
            send.sendall(_handshake_and({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": QUERY}))
            receive.settimeout(60)
            with receive.makefile("rb") as answers_in:
                answers = {m["id"]: m for m in (json.loads(answers_in.readline()) for _ in range(2))}
            send.shutdown(socket.SHUT_WR)
            assert process.wait(60) == 0
        finally:
            stop(process)
            assert process.stderr is not None
            stderr = process.stderr.read().decode()
            process.stderr.close()
    assert sorted(answers) == [0, 1] and "closed its end of stdout" not in stderr, stderr
    assert "security#input-validation-1" in answers[1]["result"]["content"][0]["text"]


def test_a_server_warms_up_while_the_client_is_idle_and_logs_no_query(bundled_index: Path, tmp_path: Path) -> None:
    """The first call an IDE makes, seconds after it started the server, finds the query path loaded;
    the throwaway query that loaded it is no user's, so the query log does not hold it."""
    log = tmp_path / "queries.jsonl"
    said: list[str] = []
    with subprocess.Popen(
        [*SERVE, "--index", str(bundled_index), "--log-queries", str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:  # closes the pipes
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        deadline = threading.Timer(60, process.kill)  # a server that never says it warmed up fails, not hangs
        deadline.start()
        try:
            process.stdin.write("".join(json.dumps(m) + "\n" for m in HANDSHAKE))
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 0
            for line in process.stderr:  # the client says nothing more until the server has warmed up
                said.append(line)
                if "warmed up" in line:
                    break
            assert said and "warmed up rules" in said[-1] and "for the first call in" in said[-1], said
            said.append(process.stderr.readline())
            assert "objects frozen out of the garbage collector's full passes" in said[-1], said
            assert not log.exists() or not log.read_text(encoding="utf-8"), "the warm-up is not a logged query"
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": QUERY}
            process.stdin.write(json.dumps(call) + "\n")
            process.stdin.flush()
            answer = json.loads(process.stdout.readline())
            process.stdin.close()
            assert process.wait(30) == 0
        finally:
            deadline.cancel()
            stop(process)
    assert answer["id"] == 1 and answer["result"]["structuredContent"]["citations"]
    logged = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [entry["task"] for entry in logged] == [TASKS[0]]


def piped_server(index: Path) -> subprocess.Popen[bytes]:
    """``ruledex serve`` with stdin and stdout pipes, as an MCP client starts it (stderr discarded)."""
    return subprocess.Popen(
        [*SERVE, "--index", str(index)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )


def test_a_client_that_writes_every_request_before_reading_gets_every_answer(bundled_index: Path) -> None:
    """A client that reads nothing until it has written everything: while the answers wait in a full
    stdout pipe, the server must go on reading stdin, or both sides wait for ever."""
    queries = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": QUERY} for i in range(1, 11)]
    padding = "x" * 8000  # the ten answers (~100 KB) fill stdout's pipe; then 2.4 MB of pings must still be read
    pings = [{"jsonrpc": "2.0", "id": i, "method": "ping", "params": {"pad": padding}} for i in range(11, 311)]
    process = piped_server(bundled_index)
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None

    def write_everything() -> None:
        with contextlib.suppress(BrokenPipeError):  # the server was stopped: the assertion below says why
            stdin.write(_handshake_and(*queries, *pings))
            stdin.flush()

    writer = threading.Thread(target=write_everything)
    writer.start()
    writer.join(30)  # still writing then: the server stopped reading, a deadlock (the stop below ends it)
    try:
        assert not writer.is_alive(), "the server stopped reading requests while its answers waited to be read"
        answers = [json.loads(stdout.readline()) for _ in range(311)]
        stdin.close()
        assert process.wait(60) == 0
    finally:
        stop(process)
        writer.join(30)
        for pipe in (stdin, stdout):
            with contextlib.suppress(BrokenPipeError):
                pipe.close()
    assert sorted(a["id"] for a in answers) == list(range(311))
    assert all("security#input-validation-1" in a["result"]["content"][0]["text"] for a in answers if 0 < a["id"] <= 10)


def test_every_answer_reaches_a_client_that_reads_slowly_after_closing_stdin(bundled_index: Path) -> None:
    """The answers outgrow stdout's pipe while the client waits: the server writes the last of them before it exits."""
    queries = [{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": QUERY} for i in range(1, 31)]
    process = piped_server(bundled_index)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(_handshake_and(*queries))
        process.stdin.close()
        time.sleep(1)  # ~300 KB of answers wait for a reader; the pipe holds 64 KiB
        answers = []
        for line in process.stdout:  # slowly: the last answers are still on their way as the session ends
            answers.append(json.loads(line))
            time.sleep(0.05)
        assert process.wait(60) == 0
    finally:
        stop(process)
        process.stdout.close()
    assert sorted(a["id"] for a in answers) == list(range(31))


def test_a_request_line_longer_than_64_kib_is_read_whole(bundled_index: Path) -> None:
    """asyncio's line reader stops at 64 KiB unless told otherwise; the SDK's transport had no such limit."""
    task = "Validate the signup form's input before it reaches the database. " * 2000  # ~130 KB
    call = {"name": "query_directives", "arguments": {"taskDescription": task}}
    answers, stderr = raw_stdio(
        bundled_index, [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})]
    )
    assert [a["id"] for a in answers] == [1], stderr
    assert "security" in answers[0]["result"]["content"][0]["text"] and "Traceback" not in stderr


def test_a_stray_print_in_a_tool_does_not_reach_the_protocol(bundled_index: Path) -> None:
    """stdout carries only JSON-RPC: a print in a tool (or a child process writing to fd 1) lands on stderr."""
    noisy = (
        "import functools, os, sys; from ruledex.reader import server; original = server.RuleTools.list_rules\n"
        "@functools.wraps(original)\n"
        "def list_rules(self):\n"
        "    print('stray print'); sys.stdout.flush(); os.write(1, b'stray write to fd 1\\n')\n"
        "    return original(self)\n"
        "server.RuleTools.list_rules = list_rules\n"
        "from ruledex.reader.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_rules", "arguments": {}}}
    done = subprocess.run(
        [sys.executable, "-c", noisy, "serve", "--index", str(bundled_index)],
        input=_handshake_and(call),
        capture_output=True,
        timeout=60,
        check=True,
    )
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]  # every line is JSON
    assert [a["id"] for a in answers] == [0, 1] and "security" in answers[1]["result"]["content"][0]["text"]
    assert "stray print" in done.stderr.decode() and "stray write to fd 1" in done.stderr.decode()


def test_a_client_that_closes_stdout_mid_request_stops_the_server_quietly(bundled_index: Path) -> None:
    """An IDE killed while a request runs: exit 0 and one log line, not exit 1 with a BrokenPipeError traceback."""
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0"}}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read_graph", "arguments": {}}},
    ]
    process = subprocess.Popen(
        [*SERVE, "--index", str(bundled_index)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the client's end of the pipe is gone before the answers are written
    process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    process.stdin.close()
    try:
        code = process.wait(60)
    finally:
        stop(process)
    err = process.stderr.read()
    process.stderr.close()
    assert code == 0, err
    assert "Traceback" not in err and "BrokenPipeError" not in err
    assert err.count("closed its end of stdout") == 1


def test_a_bad_index_fails_fast_with_a_clear_message(tmp_path: Path) -> None:
    missing = tmp_path / "missing.ruledex"
    done = subprocess.run(
        [*SERVE, "--index", str(missing)], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert str(missing) in done.stderr and "no such index file" in done.stderr


def test_a_taken_port_is_a_clear_error(bundled_index: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*SERVE, "--index", str(bundled_index), "--http", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 1 and f"127.0.0.1:{port}: cannot listen there" in done.stderr
    assert "serving" not in done.stderr, "nothing claims to serve on a port it could not bind"


def test_a_damaged_section_stops_the_server_before_it_serves(bundled_index: Path, tmp_path: Path) -> None:
    """A flipped byte deep in a section passes the structure check; its checksum does not."""
    damaged = tmp_path / "damaged.ruledex"
    data = bytearray(bundled_index.read_bytes())
    data[-100] ^= 0xFF
    damaged.write_bytes(bytes(data))
    done = subprocess.run(
        [*SERVE, "--index", str(damaged)], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 1 and done.stdout == ""
    assert str(damaged) in done.stderr and "checksum mismatch" in done.stderr


@pytest.fixture
def http_server(bundled_index: Path, tmp_path: Path) -> Iterator[str]:
    """``ruledex serve --http 127.0.0.1:PORT`` as a subprocess; yields the MCP URL, stops it afterwards."""
    port = free_port()
    with (tmp_path / "http-stderr.txt").open("wb") as errlog:
        process = subprocess.Popen(
            [*SERVE, "--index", str(bundled_index), "--http", f"127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
        )
        try:
            health = wait_healthy(f"http://127.0.0.1:{port}/healthz", process)
            assert health["status"] == "ok" and health["index"]["rules"] > 0
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            stop(process)
    assert "serving" in (tmp_path / "http-stderr.txt").read_text(encoding="utf-8")


def test_http_end_to_end(http_server: str) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(http_server) as client:
                await exercise(client)
            async with Client(http_server, mode="legacy") as client:
                assert client.server_info.name == "ruledex"
                assert not (await client.call_tool("list_rules", {})).is_error

    anyio.run(main)
    rebinding = urllib.request.Request(
        http_server, data=b"{}", headers={"Host": "evil.example", "Content-Type": "application/json"}, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(rebinding, timeout=10)
    assert refused.value.code in (400, 403, 421)
    refused.value.close()
    health = http_server.removesuffix("/mcp") + "/healthz"
    for header in ({"Host": "evil.example"}, {"Origin": "http://evil.example"}):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(health, headers=header), timeout=10)
        assert refused.value.code in (403, 421), "the health check names the index: same rule as /mcp"
        refused.value.close()


def test_a_body_that_is_not_a_json_rpc_message_is_answered_briefly_over_http(http_server: str) -> None:
    """The SDK answered JSON that is no message with pydantic's whole report (2 kB for {"foo": 1}) as -32602."""
    bodies = {
        b"not json": (-32700, "Parse error: not JSON ("),
        b"": (-32700, "Parse error: not JSON ("),
        b'{"foo": 1}': (-32600, "not a JSON-RPC 2.0 message (jsonrpc: Field required; method: Field required)"),
        b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}': (-32600, "jsonrpc: Input should be '2.0'"),
        b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]': (-32600, "a JSON array (a batch)"),
    }
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    for body, (code, words) in bodies.items():
        request = urllib.request.Request(http_server, data=body, headers=headers, method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400
        raw = refused.value.read()
        refused.value.close()
        error = json.loads(raw)["error"]
        assert error["code"] == code and words in error["message"], (body, error)
        assert error["message"].endswith(
            'send one JSON-RPC 2.0 object as the request body, e.g. {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
        )
        assert len(raw) < 400 and "pydantic" not in error["message"], raw

    async def still_serving() -> None:
        with anyio.fail_after(60):
            async with Client(http_server) as client:
                assert not (await client.call_tool("list_rules", {})).is_error

    anyio.run(still_serving)


def test_http_concurrent_clients_get_the_single_client_answers(http_server: str) -> None:
    async def ask(task: str) -> dict[str, Any]:
        async with Client(http_server) as client:
            result = await client.call_tool("query_directives", {"taskDescription": task})
            assert not result.is_error
            return stable(result.structured_content)

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        with anyio.fail_after(90):
            alone = {task: await ask(task) for task in TASKS}
            together: dict[str, Any] = {}

            async def one(task: str) -> None:
                together[task] = await ask(task)

            async with anyio.create_task_group() as group:
                for task in TASKS:
                    group.start_soon(one, task)
            return alone, together

    alone, together = anyio.run(main)
    assert len({json.dumps(a["citations"]) for a in alone.values()}) > 1, "the tasks have different answers"
    for task in TASKS:
        assert together[task] == alone[task], task


@pytest.mark.skipif(
    os.environ.get("RULEDEX_TEST_INSPECTOR") != "1" or shutil.which("npx") is None,
    reason="opt-in (RULEDEX_TEST_INSPECTOR=1): runs the MCP Inspector CLI through npx, which needs the npm registry",
)
def test_mcp_inspector_cli_lists_and_calls_tools(bundled_index: Path) -> None:
    inspector = ["npx", "-y", "@modelcontextprotocol/inspector", "--cli", *SERVE, "--index", str(bundled_index)]
    listed = subprocess.run([*inspector, "--method", "tools/list"], capture_output=True, text=True, timeout=300)
    if listed.returncode != 0 and "npm" in listed.stderr.lower():
        pytest.skip(f"the MCP Inspector could not be installed: {listed.stderr.strip()[-300:]}")
    assert listed.returncode == 0, listed.stderr
    assert "query_directives" in {t["name"] for t in json.loads(listed.stdout)["tools"]}
    called = subprocess.run(
        [*inspector, "--method", "tools/call", "--tool-name", "get_rules", "--tool-arg", "domain=security"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "Application security" in called.stdout


def test_a_request_before_initialize_says_to_initialize_first(bundled_index: Path) -> None:
    """The SDK's answer was "Invalid request parameters" alone, for a request whose params were fine."""
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_rules"}})
    answers, _ = raw_stdio(bundled_index, [line], initialize=False)
    message = answers[0]["error"]["message"]
    assert "before the session is initialized" in message and "initialize request first" in message
