"""Serve MCP over stdio, answering the requests already read when stdin closes.

The MCP SDK ends a stdio session at stdin's end of file and cancels every request still running,
so a client that writes its requests and closes stdin (``… | ruledex serve``, a script, a one-shot
pipe) gets no answer to the last ones, silently (modelcontextprotocol/python-sdk#2678, open). Here
the end of stdin is held back from the SDK until every request read has been answered, or
cancelled by the client, or :data:`DRAIN_SECONDS` have passed; then the session ends as before.
A client that closes stdin and waits for the server to exit, as the MCP spec asks, now gets its
answers; one that also closes stdout is a quiet stop, as before (see ``server._run_stdio``).

A line that is not a JSON-RPC 2.0 message (not JSON, another ``jsonrpc`` version, a batch) is
answered with a JSON-RPC error (:func:`unreadable`, which answers such an HTTP body too), and
logged on stderr; the SDK dropped it without a word, so the client waited for an answer that
never came.

When stdin and stdout are pipes or sockets, as an MCP client starts a server, they are read and
written by the event loop itself (:func:`stdio_streams`); the SDK reads and writes them in worker
threads, three thread switches per request.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any, Self

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import as_request_id, coerce_request_id
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from pydantic import ValidationError

log = logging.getLogger("ruledex.server")

DRAIN_SECONDS = 5.0
"""How long, after stdin closes, requests already read may take to be answered (tools take ms)."""


def _key(request_id: object) -> RequestId | None:
    """A request id as the SDK correlates it ("7" is 7), or None for a value that is no id (a client's ``{}``)."""
    valid = as_request_id(request_id)
    return None if valid is None else coerce_request_id(valid)


class InFlight:
    """The ids of the requests read and not yet answered."""

    def __init__(self) -> None:
        """Start with none (make it inside the event loop: it holds an :class:`anyio.Event`)."""
        self.ids: set[RequestId] = set()
        self._idle = anyio.Event()
        self._idle.set()

    def start(self, request_id: Any) -> None:
        """A request was read."""
        key = _key(request_id)
        if key is None:
            return
        if not self.ids:
            self._idle = anyio.Event()
        self.ids.add(key)

    def done(self, request_id: Any) -> None:
        """A request was answered (or cancelled by the client, which gets no answer then)."""
        key = _key(request_id)
        if key is None:  # e.g. a cancellation naming no valid id: it settles nothing
            return
        self.ids.discard(key)
        if not self.ids:
            self._idle.set()

    async def wait(self, timeout: float) -> None:
        """Until every request read is answered, at most ``timeout`` seconds."""
        with anyio.move_on_after(timeout):
            await self._idle.wait()


class _Wrapped:
    """A transport stream wrapped to note requests and answers: closing and ``async with`` pass through."""

    def __init__(self, inner: Any, in_flight: InFlight) -> None:
        """Wrap ``inner``, one of the stdio transport's streams."""
        self.inner = inner
        self.in_flight = in_flight

    async def aclose(self) -> None:
        """Close the transport's stream."""
        await self.inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


PER_LINE = "per line"
"""How stdio carries a message (:func:`unreadable`'s ``carrier``)."""
AS_BODY = "as the request body"
"""How Streamable HTTP carries a message: one per POST."""


def unreadable(exc: Exception, carrier: str = PER_LINE) -> JSONRPCError | None:
    """The answer to a message that is not a JSON-RPC 2.0 message (its id cannot be known, so it is null).

    ``exc``: what ``jsonrpc_message_adapter.validate_json`` raised for it; ``carrier``: how one is sent
    (:data:`PER_LINE` on stdio, :data:`AS_BODY` over HTTP). None for a blank line: nothing was asked.
    """
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if carrier == PER_LINE and errors and errors[0]["type"] == "json_invalid" and not str(errors[0]["input"]).strip():
        return None
    what_to_send = f'send one JSON-RPC 2.0 object {carrier}, e.g. {{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}'
    if not errors or any(err["type"] == "json_invalid" for err in errors):
        detail = errors[0]["msg"].removeprefix("Invalid JSON: ") if errors else str(exc)
        error = ErrorData(code=PARSE_ERROR, message=f"Parse error: not JSON ({detail}); {what_to_send}")
    elif all(isinstance(err["input"], list) and len(err["loc"]) == 1 for err in errors):
        error = ErrorData(
            code=INVALID_REQUEST,
            message=f"Invalid Request: a JSON array (a batch), which MCP does not take; {what_to_send}",
        )
    else:
        by_kind: dict[str, list[str]] = {}  # the message kinds tried (request, notification, ...) and their faults
        for err in errors:
            field = ".".join(str(p) for p in err["loc"][1:]) or "message"
            by_kind.setdefault(str(err["loc"][0]), []).append(f"{field}: {err['msg']}")
        closest = min(by_kind.values(), key=len)  # the kind it nearly is; a request on a tie (tried first)
        error = ErrorData(
            code=INVALID_REQUEST,
            message=f"Invalid Request: not a JSON-RPC 2.0 message ({'; '.join(closest)}); {what_to_send}",
        )
    return JSONRPCError(jsonrpc="2.0", id=None, error=error)


class HoldEof(_Wrapped):
    """The session's read stream: notes requests, and at end of file first waits for their answers.

    A line the transport could not read as a message is answered with :func:`unreadable` through
    ``answer`` (the session never sees it).
    """

    def __init__(
        self,
        inner: Any,
        in_flight: InFlight,
        timeout: float = DRAIN_SECONDS,
        answer: Callable[[SessionMessage], Awaitable[None]] | None = None,
    ) -> None:
        """Wrap ``inner``, the stdio transport's read stream; ``answer`` sends to the client."""
        super().__init__(inner, in_flight)
        self.timeout = timeout
        self.answer = answer

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message, as the transport's stream gives it to the SDK."""
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        """The next message; at end of file, :class:`anyio.EndOfStream` once the answers are out."""
        while True:
            try:
                item = await self.inner.receive()
            except anyio.EndOfStream:
                await self.in_flight.wait(self.timeout)
                raise
            if not isinstance(item, Exception) or self.answer is None:
                break
            error = unreadable(item)
            if error is not None:
                log.warning("answered a line that is not a JSON-RPC message: %s", error.error.message)
                await self.answer(SessionMessage(error))
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, JSONRPCRequest):
            self.in_flight.start(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            self.in_flight.done((message.params or {}).get("requestId"))
        elif isinstance(message, JSONRPCNotification) and not message.method.startswith("notifications/"):
            # JSON-RPC forbids answering a notification, so only stderr can say why nothing comes back
            log.warning(
                "%s without an id (or with one that is not a string or an integer) is a notification and gets "
                "no answer; give it an id such as 1",
                ascii(message.method)[1:-1],  # the client's text: no raw newline or escape reaches the log
            )
        return item

    def __aiter__(self) -> HoldEof:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class NoteAnswers(_Wrapped):
    """The session's write stream: passes every message on and notes the requests it answers."""

    async def send(self, item: SessionMessage, /) -> None:
        """Send ``item``; a response or error settles its request."""
        await self.inner.send(item)
        if isinstance(item.message, JSONRPCResponse | JSONRPCError):
            self.in_flight.done(item.message.id)


MAX_LINE = 1 << 30
"""The longest message line read from a pipe; the SDK's transport sets none, so neither, in practice, does this."""


class PipeLines:
    """The lines of a pipe, read by the event loop: what the SDK's transport iterates stdin for."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")  # as the SDK reads stdin


class PipeWriter:
    """A pipe or socket written by the event loop: what the SDK's transport writes its messages to.

    Not asyncio's pipe transport: that one takes a stdout socket that turns readable for closed (a
    client that shuts down its sending side of the socket it reads answers from, a half-close),
    and its buffer outlives the loop. Here a flush returns once the pipe has taken every byte, as
    the SDK's blocking write does, so nothing is left unsent when the session ends.
    """

    def __init__(self, fd: int) -> None:
        """Write to ``fd``, a non-blocking descriptor this writer does not close."""
        self.fd = fd
        self.pending = bytearray()

    async def write(self, text: str) -> None:
        """Queue ``text`` for :meth:`flush`."""
        self.pending += text.encode("utf-8")

    async def flush(self) -> None:
        """Write everything queued, waiting (without blocking the loop) while the pipe is full.

        A client that went away raises BrokenPipeError or ConnectionResetError, as a blocking write does.
        """
        while self.pending:
            try:
                written = os.write(self.fd, self.pending)
            except BlockingIOError:
                await self._writable()
                continue
            del self.pending[:written]

    async def _writable(self) -> None:
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        loop.add_writer(self.fd, lambda: ready.done() or ready.set_result(None))
        try:
            await ready
        finally:
            loop.remove_writer(self.fd)


def _pipe_or_socket(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def loop_can_serve() -> bool:
    """Whether stdin and stdout are pipes or sockets the event loop can read and write itself.

    Not when they are files or a terminal (asyncio takes only pipes, sockets and character devices,
    and a terminal's non-blocking mode would outlive the server in the shell), nor when stdout is
    stderr's file (``2>&1``): stdout's non-blocking mode would then be stderr's too.
    """
    if sys.platform == "win32":  # no fcntl, and asyncio's pipes there are not these
        return False
    backed = _fileno(sys.stdin) == 0 and _fileno(sys.stdout) == 1  # not replaced, e.g. by a test harness
    if not backed or not (_pipe_or_socket(0) and _pipe_or_socket(1)):
        return False
    try:
        return not os.path.sameopenfile(1, 2)
    except OSError:
        return True  # no stderr to share with


def _fileno(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return None


@asynccontextmanager
async def _claimed_pipes() -> AsyncIterator[tuple[PipeLines, PipeWriter]]:
    """Serve the wire from private copies of fds 0 and 1, with fd 0 on the null device and fd 1 on stderr.

    As the SDK's transport does, so a stray ``print`` or a child process cannot write into (or read
    from) the protocol; both are restored on exit, blocking again.
    """
    import fcntl  # POSIX only: loop_can_serve says no on Windows

    loop = asyncio.get_running_loop()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        sys.stdout.flush()
        os.dup2(null, 0)
        os.dup2(2, 1)
        reader = asyncio.StreamReader(limit=MAX_LINE)
        # the transport closes a copy of its own; the claim keeps the original to restore fd 0
        reading, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(os.dup(wire_in), "rb", buffering=0)
        )
        os.set_blocking(wire_out, False)
        try:
            yield PipeLines(reader), PipeWriter(wire_out)
        finally:
            reading.close()
    finally:
        os.close(null)
        for fd, wire in ((0, wire_in), (1, wire_out)):
            os.set_blocking(wire, True)
            os.dup2(wire, fd)
            os.close(wire)


@asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport's message streams, over pipes the event loop reads (see :func:`loop_can_serve`).

    Otherwise (stdin a file, a terminal ...) the SDK's own transport, which reads in worker threads.
    """
    if not loop_can_serve():
        async with stdio_server() as streams:
            yield streams
        return
    async with _claimed_pipes() as (lines, out), stdio_server(lines, out) as streams:  # type: ignore[arg-type]
        yield streams


async def run_stdio(server: MCPServer) -> None:
    """What ``server.run_stdio_async()`` does, with the end of stdin held until the answers are out."""
    lowlevel = server._lowlevel_server  # what run_stdio_async runs too; the SDK has no other handle
    async with stdio_streams() as (read_stream, write_stream):
        in_flight = InFlight()
        await lowlevel.run(
            HoldEof(read_stream, in_flight, answer=write_stream.send),
            NoteAnswers(write_stream, in_flight),
            lowlevel.create_initialization_options(),
        )
