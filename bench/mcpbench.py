"""Process-level measurements with a real MCP client: cold start, stdio latency, memory, HTTP concurrency.

- Cold start: from spawning ``ruledex serve`` to the first ``tools/call`` answered over stdio (the
  SDK's ``Client``, initialize handshake), beside the floor: a bare Python that only imports the
  libraries the server imports. ``ruledex query`` as a whole process, beside ``python -c "import
  numpy"``. Samples of the four are interleaved; medians and differences come from the same run.
  Then the first call of a session made a second after the handshake, as an IDE makes it, and the
  same call again.
- stdio latency: round trips of ``query_directives`` over one stdio session, every answer checked
  against the in-process answer; then the server's memory (peak RSS, anonymous, file-backed, and
  how much of the mapped index is resident).
- Concurrency: ``ruledex serve --http`` on 127.0.0.1; N pre-connected clients run N queries one
  after another and then all at once; wall time ratio, throughput, per-request p95, answers checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from .buildbench import ruledex_argv
from .measure import (
    children,
    cmdline,
    free_port,
    median,
    process_memory,
    ratio,
    stop,
    summary,
    time_to_marker,
    timed_run,
    wait_healthy,
)

FLOOR_SDK = "import anyio, msgpack, numpy, pydantic, starlette, tokenizers; import mcp.server.mcpserver; print('ready', flush=True)"
"""What the server imports, and nothing else: the cold-start floor, timed from spawn to the end of the
imports (interpreter teardown is not counted, as the server's first answer comes before its exit)."""

FLOOR_NUMPY = "import numpy"

LIGHT_CHECK = (
    "import sys, json; from ruledex.reader.cli import main; code = main(sys.argv[1:]); "
    "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'pydantic', 'starlette', 'uvicorn', 'anyio'}); "
    "print(json.dumps({'heavy': heavy, 'reader': sys.modules['ruledex.reader'].__path__[0]}), file=sys.stderr); "
    "sys.exit(code)"
)


def stable(answer: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """What must not change between transports: the block and the cited ids (not the timings)."""
    return answer["context_block"], tuple(c["id"] for c in answer["citations"])


def reference_answers(index_path: Path, tasks: Sequence[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """In-process answers, the yardstick every served answer is checked against."""
    from ruledex.reader.index import Index
    from ruledex.reader.query import query_directives

    with Index(index_path) as index:
        return {task: stable(query_directives(index, task)) for task in dict.fromkeys(tasks)}


def _stdio_client(index_path: Path, errlog: Any, env: dict[str, str] | None = None) -> Any:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    if os.environ.get("PYTHONPATH"):  # the SDK passes a minimal environment; keep a --snapshot run's code
        env = {"PYTHONPATH": os.environ["PYTHONPATH"], **(env or {})}
    argv = ruledex_argv()
    params = StdioServerParameters(command=argv[0], args=[*argv[1:], "serve", "--index", str(index_path)], env=env)
    return Client(stdio_client(params, errlog=errlog), mode="legacy")


def _server_pid(index_path: Path) -> int | None:
    """The child process serving ``index_path`` (the stdio transport does not expose it)."""
    for pid in children():
        argv = cmdline(pid)
        if "serve" in argv and str(index_path) in argv:
            return pid
    return None


async def _first_call(index_path: Path, task: str) -> dict[str, float]:
    """Spawn ``ruledex serve``, initialize, call query_directives once: ms to each point."""
    with tempfile.TemporaryFile("w+") as errlog:
        started = time.perf_counter()
        async with _stdio_client(index_path, errlog) as client:
            ready = time.perf_counter()
            result = await client.call_tool("query_directives", {"taskDescription": task})
            answered = time.perf_counter()
            if result.is_error:
                raise RuntimeError(f"query_directives failed: {result.content}")
    return {"initialized_ms": (ready - started) * 1000, "first_call_ms": (answered - started) * 1000}


def cold_start(index_path: Path, task: str, repeats: int) -> dict[str, Any]:
    """Interleaved samples of serve->first answer, the SDK-import floor, ``ruledex query``, numpy import."""
    samples: dict[str, list[float]] = {"serve_first_call": [], "serve_initialized": [], "floor_sdk_import": []}
    samples.update({"query_process": [], "floor_numpy_import": []})
    query_argv = [*ruledex_argv(), "query", task, "--index", str(index_path)]
    import mcp.client.stdio  # noqa: F401 - the client's own imports must not count as the server's start

    anyio.run(_first_call, index_path, task)  # untimed warm-up: bytecode caches, page cache
    time_to_marker([sys.executable, "-c", FLOOR_SDK])
    for r in range(repeats):
        steps = ["serve", "sdk", "query", "numpy"]
        for step in steps[r % 4 :] + steps[: r % 4]:
            if step == "serve":
                got = anyio.run(_first_call, index_path, task)
                samples["serve_first_call"].append(got["first_call_ms"])
                samples["serve_initialized"].append(got["initialized_ms"])
            elif step == "sdk":
                samples["floor_sdk_import"].append(time_to_marker([sys.executable, "-c", FLOOR_SDK]))
            elif step == "query":
                samples["query_process"].append(timed_run(query_argv)[0])
            else:
                samples["floor_numpy_import"].append(timed_run([sys.executable, "-c", FLOOR_NUMPY])[0])
    _, err = timed_run([sys.executable, "-c", LIGHT_CHECK, "query", task, "--index", str(index_path)])
    light = json.loads(err.strip().splitlines()[-1])
    med = {name: median(values) for name, values in samples.items()}
    over = None
    if med["serve_first_call"] is not None and med["floor_sdk_import"] is not None:
        over = round(med["serve_first_call"] - med["floor_sdk_import"], 1)
    return {
        "repeats": repeats,
        "median_ms": med,
        "first_call_after_idle": first_call_after_idle(index_path, task, max(1, repeats // 3)),
        "serve_over_sdk_floor_ms": over,
        "query_over_numpy_ratio": ratio(med["query_process"], med["floor_numpy_import"]),
        "query_process_imports": light["heavy"],
        "reader_code": light["reader"],
        "samples_ms": {k: [round(v, 1) for v in vs] for k, vs in samples.items()},
    }


async def _stdio_session(
    index_path: Path, tasks: Sequence[str], rounds: int, reference: dict[str, Any]
) -> dict[str, Any]:
    latencies: list[float] = []
    server_ms: list[float] = []
    mismatches: list[str] = []
    with tempfile.TemporaryFile("w+") as errlog:
        async with _stdio_client(index_path, errlog) as client:
            pid = _server_pid(index_path)
            at_start = process_memory(pid, index_path) if pid else {"available": False, "why": "server pid not found"}
            for task in tasks:  # warm-up
                await client.call_tool("query_directives", {"taskDescription": task})
            for _ in range(rounds):
                for task in tasks:
                    started = time.perf_counter()
                    result = await client.call_tool("query_directives", {"taskDescription": task})
                    latencies.append((time.perf_counter() - started) * 1000)
                    if result.is_error or stable(result.structured_content) != reference[task]:
                        mismatches.append(task)
                        continue
                    server_ms.append(float(result.structured_content["diagnostics"]["executionTimeMs"]))
            after = process_memory(pid, index_path) if pid else {"available": False, "why": "server pid not found"}
    return {
        "latency_ms": summary(latencies),
        "server_query_ms": summary(server_ms),
        "protocol_overhead_ms_p50": round(summary(latencies)["p50"] - summary(server_ms)["p50"], 3)
        if server_ms
        else None,
        "answers_checked": len(latencies),
        "mismatches": sorted(set(mismatches)),
        "memory_after_start": at_start,
        "memory_after_queries": after,
    }


HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "ruledex-bench", "version": "0"}}
"""The initialize parameters of a client that writes JSON lines itself (the tests use it too)."""


class RawClient:
    """``ruledex serve`` over stdio pipes, driven by writing and reading JSON lines (no SDK on this side)."""

    def __init__(self, index_path: Path) -> None:
        """Spawn the server and make the initialize handshake."""
        self.process = subprocess.Popen(  # inherits PYTHONPATH: a --snapshot run's code
            [*ruledex_argv(), "serve", "--index", str(index_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._ids = iter(range(1, 1 << 30))
        try:
            self.call("initialize", HELLO)
            self._send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        except BaseException:
            self.close()
            raise

    def _send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One request and its answer."""
        assert self.process.stdout is not None
        self._send(
            (json.dumps({"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}) + "\n").encode()
        )
        return json.loads(self.process.stdout.readline())

    def query(self, task: str) -> tuple[float, dict[str, Any] | None]:
        """ms for one ``query_directives`` round trip, and its structured answer (None if it failed)."""
        started = time.perf_counter()
        answer = self.call("tools/call", {"name": "query_directives", "arguments": {"taskDescription": task}})
        elapsed = (time.perf_counter() - started) * 1000
        result = answer.get("result") or {}
        return elapsed, None if result.get("isError") else result.get("structuredContent")

    def close(self) -> None:
        """Close stdin (the server stops) and wait for it."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(30)
        finally:
            stop(self.process)
            if self.process.stdout is not None:
                self.process.stdout.close()


def raw_stdio_latency(index_path: Path, tasks: Sequence[str], rounds: int, reference: dict[str, Any]) -> dict[str, Any]:
    """Round trips with a client that only writes and reads JSON lines: the server's share of a call.

    The SDK's client parses and validates every answer (about as much work again); this client
    does ``json.loads`` and checks the answer, so the round trip minus the server's query time is
    what the server's protocol handling costs.
    """
    latencies: list[float] = []
    server_ms: list[float] = []
    mismatches: list[str] = []
    client = RawClient(index_path)
    try:
        for r in range(rounds + 1):  # the first round warms up
            for task in tasks:
                elapsed, structured = client.query(task)
                if not structured or stable(structured) != reference[task]:
                    mismatches.append(task)
                elif r:
                    latencies.append(elapsed)
                    server_ms.append(float(structured["diagnostics"]["executionTimeMs"]))
    finally:
        client.close()
    raw, server = summary(latencies), summary(server_ms)
    return {
        "latency_ms": raw,
        "server_query_ms": server,
        "server_overhead_ms_p50": round(raw["p50"] - server["p50"], 3) if latencies else None,
        "mismatches": sorted(set(mismatches)),
    }


def first_call_after_idle(index_path: Path, task: str, repeats: int) -> dict[str, Any]:
    """The first ``query_directives`` round trip of a session made after an idle pause, and the same
    call again (everything loaded), with the raw client; medians over ``repeats`` spawns.

    An IDE starts its servers well before the assistant's first call. The pause is twice the
    server's own wait before it warms up (``WARM_UP_AFTER``, 0.5 s), so the warm-up has run.
    """
    from ruledex.reader.server import WARM_UP_AFTER

    idle_s = 2 * WARM_UP_AFTER
    first: list[float] = []
    again: list[float] = []
    for _ in range(repeats):
        client = RawClient(index_path)
        try:
            time.sleep(idle_s)
            for out in (first, again):
                elapsed, structured = client.query(task)
                if not structured:
                    raise RuntimeError(f"query_directives failed on {index_path}")
                out.append(elapsed)
        finally:
            client.close()
    return {"idle_s": idle_s, "repeats": repeats, "first_call_ms": median(first), "again_ms": median(again)}


def stdio_latency(index_path: Path, tasks: Sequence[str], rounds: int, reference: dict[str, Any]) -> dict[str, Any]:
    """Round trips of query_directives over one stdio session, and the server's memory; then the
    same calls from a client that only reads and writes JSON lines (:func:`raw_stdio_latency`)."""
    found = anyio.run(_stdio_session, index_path, tasks, rounds, reference)
    found["raw_client"] = raw_stdio_latency(index_path, tasks, rounds, reference)
    return found


class _Tally:
    """Calls query_directives, times it, and checks the answer against the in-process one."""

    def __init__(self, reference: dict[str, Any]) -> None:
        self.reference = reference
        self.mismatches: list[str] = []
        self.errors = 0

    async def call(self, client: Any, task: str, into: list[float]) -> None:
        """One timed call; its latency goes to ``into``, a wrong answer or an exception is counted."""
        started = time.perf_counter()
        try:
            result = await client.call_tool("query_directives", {"taskDescription": task})
        except Exception:  # counted and reported; the run goes on
            self.errors += 1
            return
        into.append((time.perf_counter() - started) * 1000)
        if result.is_error or stable(result.structured_content) != self.reference[task]:
            self.mismatches.append(task)


async def _concurrency(
    url: str, tasks: Sequence[str], counts: Sequence[int], rounds: int, reference: dict[str, Any]
) -> dict[str, Any]:
    from mcp import Client

    out: dict[str, Any] = {}
    for n in counts:
        work = [tasks[i % len(tasks)] for i in range(n)]
        seq_walls: list[float] = []
        conc_walls: list[float] = []
        seq_lat: list[float] = []
        conc_lat: list[float] = []
        tally = _Tally(reference)

        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(Client(url)) for _ in range(n)]
            for client, task in zip(clients, work, strict=True):  # warm-up: one call per session
                await tally.call(client, task, [])
            for r in range(rounds):
                for mode in ("sequential", "concurrent") if r % 2 == 0 else ("concurrent", "sequential"):
                    started = time.perf_counter()
                    if mode == "sequential":
                        for client, task in zip(clients, work, strict=True):
                            await tally.call(client, task, seq_lat)
                        seq_walls.append((time.perf_counter() - started) * 1000)
                    else:
                        async with anyio.create_task_group() as group:
                            for client, task in zip(clients, work, strict=True):
                                group.start_soon(tally.call, client, task, conc_lat)
                        conc_walls.append((time.perf_counter() - started) * 1000)
        seq, conc = median(seq_walls), median(conc_walls)
        out[str(n)] = {
            "rounds": rounds,
            "sequential_wall_ms": seq,
            "concurrent_wall_ms": conc,
            "concurrent_over_sequential": ratio(conc, seq),
            "throughput_qps": round(n / (conc / 1000), 1) if conc else None,
            "sequential_qps": round(n / (seq / 1000), 1) if seq else None,
            "concurrent_latency_ms": summary(conc_lat),
            "sequential_latency_ms": summary(seq_lat),
            "answers_checked": len(seq_lat) + len(conc_lat),
            "mismatches": sorted(set(tally.mismatches)),
            "errors": tally.errors,
        }
    return out


def http_concurrency(
    index_path: Path,
    tasks: Sequence[str],
    counts: Sequence[int],
    rounds: int,
    reference: dict[str, Any],
    *,
    blas_threads: str | None = None,
) -> dict[str, Any]:
    """Start ``ruledex serve --http 127.0.0.1:PORT``, run :func:`_concurrency`, stop the server.

    ``blas_threads`` sets OPENBLAS_NUM_THREADS/OMP_NUM_THREADS for the server (the reader pins 1
    unless the environment says otherwise): a control run showing what the pin is worth.
    """
    port = free_port()
    env = dict(os.environ)
    if blas_threads is not None:
        env.update(OPENBLAS_NUM_THREADS=blas_threads, OMP_NUM_THREADS=blas_threads)
    with tempfile.TemporaryFile() as errlog:
        process = subprocess.Popen(
            [*ruledex_argv(), "serve", "--index", str(index_path), "--http", f"127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            env=env,
        )
        try:
            wait_healthy(f"http://127.0.0.1:{port}/healthz", process)
            result = anyio.run(_concurrency, f"http://127.0.0.1:{port}/mcp", tasks, counts, rounds, reference)
            result["server_memory"] = process_memory(process.pid, index_path)
        finally:
            stop(process)
    result["blas_threads"] = blas_threads or "1 (reader default)"
    return result
