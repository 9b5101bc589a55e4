"""``ruledex serve``: the MCP server, over stdio (default) or Streamable HTTP.

Thin by design: every tool validates its arguments and calls a pure reader function
(:mod:`ruledex.reader.query`, :mod:`ruledex.reader.tools`); a bad argument becomes an ``isError``
result that names the field and its allowed values, and the next request is served normally.
The index is opened once (memory-mapped) before the transport starts, so a bad ``--index`` fails
at once with a clear message; the query encoder is built on the first call, not before
``initialize``. The served file is hot-reloaded when it is replaced (see
:class:`~ruledex.reader.holder.IndexHolder`). Logs go to stderr; stdout carries only the protocol.

This module and :mod:`.stdio`, which it imports, are the only ones that import the MCP SDK, so
``ruledex query`` never loads it.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    ErrorData,
    GetPromptResult,
    InputRequiredResult,
    TextContent,
    ToolAnnotations,
    jsonrpc_message_adapter,
)
from mcp.types import Resource as MCPResource
from pydantic import AnyUrl, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from . import graph, tools
from .detect import MODES
from .errors import ConfigError, RuledexError
from .holder import IndexHolder, Loaded
from .index import Index
from .query import index_names, query_directives, query_indexes
from .querylog import QueryLog, log_record
from .shapes import (
    DetectedContext,
    DetectOptionsArg,
    Domain,
    Graph,
    IndexName,
    KnowledgeResults,
    ModeSlug,
    OpenedNodes,
    QueryAnswer,
    QueryOptionsArg,
    RuleDocument,
    RuleList,
    TaskText,
    enum_schema,
    number_schema,
)
from .stdio import AS_BODY, run_stdio, unreadable
from .vocab import LAYERS, SCOPES

log = logging.getLogger("ruledex.server")
T = TypeVar("T")

RESOURCE_PREFIX = "ruledex://rules/"
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_BY_PR = "Read-only: the rules live in git and change by pull request, never by tool calls."

MODE_HINTS = {
    "architect": "Before proposing a design, also read the architecture and domain rules (list_rules, get_rules).",
    "code": "Apply the directives as you write the code and its tests.",
    "debug": "Query with the symptom and the suspected area; the testing rules apply to the regression test you add.",
}


def mode_instructions(mode: str | None = None) -> str:
    """The instruction snippet for an assistant (mode-specific when ``mode`` is given)."""
    slug = f' and modeSlug "{mode}"' if mode else ""
    text = (
        f"At the start of a task, call query_directives with the full task text{slug}, and with "
        "options.files set to the paths of the files you will edit when you know them. Follow every MUST "
        "directive in the returned context_block and prefer the SHOULD ones; when a rule shapes your change, cite "
        "its id (e.g. [security#input-validation-1]). Call query_directives again when the work moves to another "
        "layer or topic (UI, API, domain, database, tests, docs, deployment). If a directive conflicts with the "
        "user's request, say so rather than silently ignoring either. Use get_rules to read a whole rule document. "
        "The rules change by pull request to the rules repository, not by tool calls."
    )
    return f"{text} {MODE_HINTS[mode]}" if mode else text


DESCRIPTIONS = {
    "query_directives": (
        "Get the project's coding rules that apply to a task: a short markdown block (context_block) of "
        "directives, MUST first, each with its id, plus citations (rule, section, severity, source path, commit) "
        "and diagnostics (detected layer and topics, what was left out and why). Call it at the start of every "
        "task with the user's full task text (and options.files: the paths being edited, when known), and again "
        "when the work moves to another layer or topic. Follow "
        "every MUST directive. Bad options return an error naming the field and its allowed values. " + _BY_PR
    ),
    "detect_context": (
        "Detect what a text is about: architecture layer (1-Presentation, 2-Application, 3-Domain, 4-Persistence, "
        "5-Tests, 6-Docs, 7-Deployment), topics, technologies, keywords, a confidence (0-1) and alternative "
        "layers. Use it to see how query_directives reads a task or to choose options.layer/topicsBias. Below "
        "options.confidenceThreshold detectedLayer is null. Offline and fast."
    ),
    "list_rules": (
        "List every rule document in the index: domain (use it with get_rules), title, description, layers, "
        "topics, authoritativeFor, number of directives, version and last-updated date, plus which index "
        "(name, version, commit) answers. " + _BY_PR
    ),
    "get_rules": (
        "Fetch one whole rule document as markdown (content) with its description, version and last-updated "
        "date. domain is a rule id or file stem from list_rules, e.g. 'security'. With layered indexes, index "
        "(a citation's or list_rules' 'index') picks the index to read; without it a domain several indexes define "
        "comes from the most specific scope, and definedIn names them all. An unknown domain returns an error that "
        "names the closest domains. " + _BY_PR
    ),
    "search_knowledge": (
        "Search the rules like a knowledge base: individual directives ranked by relevance to query, each with "
        "title ('Rule > Section'), content, rationale, tags (topics), scope, category (layer), severity, "
        "priority (high/medium/low) and a score (0-1), plus totalMatches. contextTags favours topics (unknown "
        "tags count as extra query words); scope and category filter; limit 1-20 (default 5); minConfidence "
        "0-1 drops weaker results. Unlike query_directives, the task's layer is not enforced unless category "
        "is given. " + _BY_PR
    ),
    "read_graph": (
        "Read the whole rule index as a knowledge graph (Memory MCP shape): entities {name, entityType, "
        "observations} of types Rule, Section, Directive, Topic and Layer, and relations {from, to, "
        "relationType} of types contains, covers, authoritative_for and applies_to. It is large: prefer "
        "search_nodes or open_nodes. " + _BY_PR + " There are no tools to create or delete nodes."
    ),
    "search_nodes": (
        "Find knowledge-graph entities whose name, type or observations contain query (case-insensitive), with "
        "the relations among them. Entity names: rules by id ('security'), sections 'security > Input "
        "validation', directives 'security#input-validation-1', topics 'topic:security', layers "
        "'layer:2-Application'. " + _BY_PR
    ),
    "open_nodes": (
        "Open knowledge-graph entities by exact name (see search_nodes for the naming), with the relations "
        "among them; names that match nothing are listed in notFound (each once, cut to 80 characters, at most 20; "
        "notFoundMore counts the rest). " + _BY_PR
    ),
}

# --------------------------------------------------------------------------------------------
# The tools


class RuleTools:
    """The tool functions; each validates through the reader and answers from the current index."""

    def __init__(self, holder: IndexHolder, layers: list[IndexHolder] | None = None) -> None:
        """Answer from ``holder``'s index; ``query_directives`` also from ``layers`` (more indexes)."""
        self.holder = holder
        self.layers = layers or []

    def _run(self, work: Callable[[Loaded], T]) -> T:
        """Call ``work(loaded)`` on the current index; reader errors become tool errors."""
        try:
            with self.holder.use() as loaded:
                return work(loaded)
        except (ValueError, RuledexError) as exc:
            raise ToolError(str(exc)) from exc

    @contextmanager
    def _all(self) -> Iterator[list[Loaded]]:
        """Every served index (the first, then the layers), each kept open while in use."""
        with ExitStack() as stack:
            yield [stack.enter_context(h.use()) for h in [self.holder, *self.layers]]

    def _run_all(self, work: Callable[[list[Loaded]], T]) -> T:
        """Call ``work`` with every served index; reader errors become tool errors."""
        try:
            with self._all() as loaded:
                return work(loaded)
        except (ValueError, RuledexError) as exc:
            raise ToolError(str(exc)) from None

    def _graph(self, loaded: list[Loaded]) -> dict[str, Any]:
        graphs = [ld.cached("graph", graph.build_graph) for ld in loaded]
        return graphs[0] if len(graphs) == 1 else graph.merge_graphs(graphs)

    def query_directives(
        self, taskDescription: TaskText, modeSlug: ModeSlug = None, options: QueryOptionsArg = None
    ) -> Annotated[CallToolResult, QueryAnswer]:
        """The rules that matter for a task (the text content is the markdown block itself)."""
        if self.layers:
            answer = self._run_all(
                lambda lds: query_indexes([ld.index for ld in lds], taskDescription, modeSlug, options)
            )
        else:
            answer = self._run(lambda ld: query_directives(ld.index, taskDescription, modeSlug, options))
        return _markdown_result(answer["context_block"], answer)

    def detect_context(self, text: TaskText, options: DetectOptionsArg = None) -> DetectedContext:
        """Layer, topics, technologies and keywords of a text."""
        return self._run_all(lambda lds: tools.detect_context([ld.index for ld in lds], text, options))

    def list_rules(self) -> RuleList:
        """Every rule document."""
        return self._run_all(lambda lds: tools.list_rules([ld.index for ld in lds]))

    def get_rules(self, domain: Domain, index: IndexName = None) -> Annotated[CallToolResult, RuleDocument]:
        """One whole rule document (the text content is its markdown)."""
        document = self._run_all(lambda lds: tools.get_rule([ld.index for ld in lds], domain, index))
        return _markdown_result(document["content"], document)

    def search_knowledge(
        self,
        query: Annotated[str, Field(description="What to look for, e.g. 'password hashing'.")],
        contextTags: Annotated[list[str] | None, Field(description="Topics to favour, e.g. ['security'].")] = None,
        scope: Annotated[str | None, enum_schema(SCOPES, "Only rules of this scope.")] = None,
        category: Annotated[
            str | None, enum_schema(LAYERS, "Only directives of this layer (or of every layer).")
        ] = None,
        limit: Annotated[
            Any, number_schema("integer", *tools.LIMIT_RANGE, tools.LIMIT_DEFAULT, "Results to return.")
        ] = tools.LIMIT_DEFAULT,
        minConfidence: Annotated[Any, number_schema("number", 0, 1, 0.0, "Drop results scoring below this.")] = 0.0,
    ) -> KnowledgeResults:
        """Directives as knowledge entries."""

        def one(ld: Loaded, wanted: Any) -> dict[str, Any]:
            return tools.search_knowledge(
                ld.index,
                query,
                ids=ld.cached("ids", tools.directive_ids),
                context_tags=contextTags,
                scope=scope,
                category=category,
                limit=wanted,
                min_confidence=minConfidence,
            )

        def work(lds: list[Loaded]) -> dict[str, Any]:
            if len(lds) == 1:
                return one(lds[0], limit)
            names = index_names([ld.index for ld in lds])
            return tools.search_layered([(n, one(ld, 20)) for n, ld in zip(names, lds, strict=True)], limit)

        return self._run_all(work)

    def read_graph(self) -> Graph:
        """The whole knowledge graph."""
        return self._run_all(self._graph)

    def search_nodes(
        self, query: Annotated[str, Field(description="Text to find in names, types and observations.")]
    ) -> Graph:
        """Entities matching a text."""
        return self._run_all(lambda lds: graph.search_nodes(self._graph(lds), query))

    def open_nodes(
        self, names: Annotated[list[str], Field(description="Exact entity names, e.g. ['security'].")]
    ) -> OpenedNodes:
        """Entities by name."""
        return self._run_all(lambda lds: graph.open_nodes(self._graph(lds), names))

    def rule_document(self, domain: str) -> str:
        """The ``ruledex://rules/{domain}`` resource: a rule as markdown (an unreadable index: its message)."""
        try:
            with self._all() as loaded:
                return tools.get_rule([ld.index for ld in loaded], domain)["content"]
        except ValueError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except RuledexError as exc:
            raise ResourceError(str(exc)) from None

    def check(self) -> None:
        """Raise the error a tool would give if the served indexes cannot answer now (e.g. one rewritten in place)."""
        with self._all():
            pass

    def rule_resources(self) -> list[MCPResource]:
        """One resource per rule document of the current index (an unreadable index: an error with its message)."""
        try:
            with self._all() as loaded:
                rules = tools.served_rules([ld.index for ld in loaded])
        except RuledexError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=str(exc)) from None
        return [
            MCPResource(
                uri=f"{RESOURCE_PREFIX}{rule.id}",
                name=rule.id,
                title=rule.title,
                description=rule.description or None,
                mime_type="text/markdown",
            )
            for rule in rules
        ]


TOOL_NAMES = tuple(DESCRIPTIONS)


def on_the_loop(work: Callable[..., T], holders: list[IndexHolder]) -> Callable[..., Awaitable[T]]:
    """``work`` as a coroutine function that runs it on the event loop, not in a worker thread.

    A tool is a few milliseconds of CPU on the mapped index and never waits on the network (``serve``
    asks no local model), so a worker thread only added two thread switches and contention for the
    GIL: over stdio, 0.1-0.4 ms of each call (bench/README.md, finding 7). The exception is
    a call that looks for a replaced index file (at most once a second, or first after the file was
    rewritten in place), which may verify a whole new file: it runs in a worker thread, so other
    HTTP clients are served meanwhile.
    """

    @functools.wraps(work)
    async def run(*args: Any, **kwargs: Any) -> T:
        if any(h.look_due() for h in holders):
            return await anyio.to_thread.run_sync(functools.partial(work, *args, **kwargs))
        return work(*args, **kwargs)

    return run


def _markdown_result(markdown: str, structured: dict[str, Any]) -> CallToolResult:
    """Structured content for programs, and the markdown alone as text for the model.

    The MCP spec suggests repeating the JSON as text; for the two tools whose point is a
    token-budgeted markdown answer, the model is given that markdown instead of the JSON around it.
    """
    return CallToolResult(content=[TextContent(type="text", text=markdown)], structured_content=structured)


def _argument_help(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", []))
    parts = []
    for name, prop in schema.get("properties", {}).items():
        parts.append(f"{name} ({_kind(prop)}{', required' if name in required else ''})")
    return ", ".join(parts) or "no arguments"


def _kind(prop: dict[str, Any]) -> str:
    """A property's JSON type as a reader would say it: ``string``, ``array of string``, ``a|b``."""
    if "enum" in prop:
        return "|".join(str(v) for v in prop["enum"])
    if "anyOf" in prop:  # Optional[...] is anyOf [..., null]
        kinds = [_kind(p) for p in prop["anyOf"] if p.get("type") != "null"]
        return " or ".join(dict.fromkeys(kinds)) or "null"
    if prop.get("type") == "array":
        return f"array of {_kind(prop.get('items', {}))}"
    return str(prop.get("type", "any"))


def _problems(exc: ValidationError, whole: str) -> str:
    """``field.path: message; …`` for each error (``whole`` names the value itself)."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or whole}: {err['msg']}" for err in exc.errors())


def validation_message(tool: str, schema: dict[str, Any], exc: ValidationError) -> str:
    """A short, field-by-field message for arguments that do not fit a tool's input schema."""
    return f"Invalid arguments for {tool}: {_problems(exc, 'arguments')}. {tool} takes: {_argument_help(schema)}."


_SDK_BARE_ERROR = ErrorData(code=INVALID_PARAMS, message="Invalid request parameters", data="")
"""What the SDK answers, with nothing more, a request sent before ``initialize``."""


async def name_invalid_params(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: request params that do not fit the method get an error naming the field.

    The SDK answers them with "Invalid request parameters" and empty data, e.g. for
    ``prompts/get`` with ``{"task": 5}`` or ``tools/call`` without ``name``; and a request before
    the handshake the same way, so that one says to initialize first.
    """
    try:
        return await call_next(ctx)
    except ValidationError as exc:
        raise MCPError(
            code=INVALID_PARAMS, message=f"Invalid params for {ctx.method}: {_problems(exc, 'params')}"
        ) from None
    except MCPError as exc:
        if exc.error != _SDK_BARE_ERROR or ctx.method == "initialize":
            raise
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"{ctx.method} before the session is initialized: send the initialize request first, then "
            "the notifications/initialized notification",
        ) from None


class RuledexServer(MCPServer):
    """The ruledex MCP server: read-only tools, one resource per rule, a prompt per mode."""

    def __init__(
        self, holder: IndexHolder, *, query_log: QueryLog | None = None, layers: list[IndexHolder] | None = None
    ) -> None:
        """Serve ``holder``'s index; log every tool call to ``query_log`` if given."""
        super().__init__(
            name="ruledex",
            title="ruledex project rules",
            description="The project's coding rules for the task at hand, from a versioned, offline index.",
            instructions=mode_instructions(),
            version=_version(),
        )
        self.holder = holder
        self.query_log = query_log
        self.http_security: TransportSecurityMiddleware | None = None
        """Set when serving Streamable HTTP on loopback (:func:`http_security`)."""
        self.rule_tools = RuleTools(holder, layers)
        self._schemas: dict[str, dict[str, Any]] = {}
        for name in TOOL_NAMES:
            self.add_tool(
                on_the_loop(getattr(self.rule_tools, name), [holder, *(layers or [])]),
                name=name,
                title=name.replace("_", " "),
                description=DESCRIPTIONS[name],
                annotations=READ_ONLY,
                structured_output=True,
            )
        self.resource(
            RESOURCE_PREFIX + "{domain}",
            name="rule",
            title="Rule document",
            description="A whole rule document as markdown; the domains are listed by list_rules.",
            mime_type="text/markdown",
        )(self.rule_tools.rule_document)
        for mode in MODES:
            self.add_prompt(
                Prompt.from_function(
                    _prompt_for(mode),
                    name=mode,
                    title=f"ruledex {mode} mode",
                    description=f"Instructions for {mode} mode: when and how to ask ruledex for the project's rules.",
                )
            )
        self.custom_route("/healthz", methods=["GET"])(self._healthz)
        self.middleware.append(name_invalid_params)
        self.activity = Activity()
        self.middleware.append(self.activity)

    async def _healthz(self, request: Request) -> Response:
        if self.http_security is not None:  # the check the SDK gives /mcp: custom routes are not behind it
            refused = await self.http_security.validate_request(request)
            if refused is not None:
                return refused
        indexes = [self.holder.index, *(h.index for h in self.rule_tools.layers)]
        try:
            await anyio.to_thread.run_sync(self.rule_tools.check)  # what a tool call would find, e.g. a truncated file
        except RuledexError as exc:
            return JSONResponse({"status": "error", "error": str(exc), **tools.served_info(indexes)}, status_code=503)
        return JSONResponse({"status": "ok", **tools.served_info(indexes)})

    async def list_resources(self) -> list[MCPResource]:
        """The registered resources plus one per rule document of the index serving now."""
        return [*await super().list_resources(), *await anyio.to_thread.run_sync(self.rule_tools.rule_resources)]

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        """Read a rule document; a URI that is not one says what the resources' URIs are."""
        try:
            return await super().read_resource(uri, context)
        except ResourceNotFoundError:
            domain = str(uri).removeprefix(RESOURCE_PREFIX)
            if str(uri).startswith(RESOURCE_PREFIX) and not any(c in domain for c in "/?#"):
                raise  # a domain the index does not hold: rule_document named the closest ones
            raise ResourceNotFoundError(
                f"Unknown resource {str(uri)!r}: the rule documents are {RESOURCE_PREFIX}{{domain}}, e.g. "
                f"{RESOURCE_PREFIX}security; resources/list lists them"
            ) from None

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context[Any, Any] | None = None
    ) -> GetPromptResult | InputRequiredResult:
        """Render a prompt; an unknown prompt or argument is an error that names it and what there is."""
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:  # the SDK raises a bare ValueError: error code 0 and a traceback on stderr
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Unknown prompt {name!r}. Available prompts: "
                f"{', '.join(p.name for p in self._prompt_manager.list_prompts())}.",
            )
        known = [arg.name for arg in prompt.arguments or []]
        unknown = sorted(set(arguments or {}) - set(known))
        if unknown:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Unknown argument(s) for prompt {name}: {', '.join(unknown)}. {name} takes: "
                f"{_prompt_arguments(prompt)}.",
            )
        return await super().get_prompt(name, arguments, context)

    async def _schema(self, name: str) -> dict[str, Any]:
        if not self._schemas:
            self._schemas = {t.name: t.input_schema for t in await self.list_tools()}
        if name not in self._schemas:
            raise ToolError(f"Unknown tool {name!r}. Available tools: {', '.join(self._schemas)}.")
        return self._schemas[name]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Check the tool and argument names, call it, and log the call if asked to."""
        started = time.perf_counter()
        result: CallToolResult | InputRequiredResult | None = None
        error: str | None = None
        try:
            schema = await self._schema(name)
            unknown = sorted(set(arguments) - set(schema.get("properties", {})))
            if unknown:
                raise ToolError(
                    f"Unknown argument(s) for {name}: {', '.join(unknown)}. {name} takes: {_argument_help(schema)}."
                )
            try:
                result = await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError):
                    raise ToolError(validation_message(name, schema, exc.__cause__)) from exc.__cause__
                raise
            return result
        except ToolError as exc:
            error = str(exc)
            raise
        finally:
            if self.query_log is not None:
                _log_call(self.query_log, name, arguments, result, error, (time.perf_counter() - started) * 1000)


def _log_call(
    query_log: QueryLog, name: str, arguments: dict[str, Any], result: Any, error: str | None, latency_ms: float
) -> None:
    """Write one call to the query log; a failing log file is reported on stderr, never to the caller."""
    structured = getattr(result, "structured_content", None)
    if error is None and getattr(result, "is_error", False):
        error = " ".join(getattr(c, "text", "") for c in result.content)
    try:
        query_log.write(log_record(name, arguments, latency_ms=latency_ms, structured=structured, error=error))
    except OSError as exc:
        log.warning("cannot write the query log %s: %s", query_log.path, exc)


def _prompt_arguments(prompt: Prompt) -> str:
    """A prompt's arguments as a reader would say them: ``task (string, optional)``."""
    args = [f"{a.name} (string, {'required' if a.required else 'optional'})" for a in prompt.arguments or []]
    return ", ".join(args) or "no arguments"


def _prompt_for(mode: str) -> Callable[..., str]:
    def prompt(task: Annotated[str, Field(description="The task, to include after the instructions.")] = "") -> str:
        text = mode_instructions(mode)
        return f"{text}\n\nTask: {task}" if task.strip() else text

    return prompt


# --------------------------------------------------------------------------------------------
# Running


def parse_http(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` -> (host, port); the host defaults to 127.0.0.1 (``[::1]:8000`` for IPv6)."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--http: expected [HOST:]PORT such as 8000 or 127.0.0.1:8000, got {value!r}")
    return host or "127.0.0.1", int(port)


def _configure_logging() -> None:
    """Log to stderr (stdout is the protocol on stdio): ruledex at INFO, libraries at WARNING."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("ruledex serve: %(levelname)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)
    logging.getLogger("ruledex").setLevel(logging.INFO)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def listen(host: str, port: int) -> socket.socket:
    """A bound TCP socket for ``--http`` (port 0: any free port); a taken port is a clear error, not a log line."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"--http {host}:{port}: cannot listen there ({exc.strerror or exc}); choose another port or stop "
            "what is using it"
        ) from None
    return sock


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def http_security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection when serving on loopback (the SDK's own defaults).

    A web page's script may reach 127.0.0.1, so a foreign ``Host`` or ``Origin`` is refused, on every route.
    """
    if host not in LOOPBACK_HOSTS:
        return None
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


class AnswerUnreadable:
    """ASGI middleware: a POST body that is not a JSON-RPC 2.0 message gets :func:`.stdio.unreadable`'s answer.

    The SDK's transport answered a body that is JSON but no message (``{}``, a batch, ``"jsonrpc":
    "1.0"``) with pydantic's whole validation report (2 kB for ``{}``, a link per field) under code
    -32602, and one that is not JSON with the parser's words alone. Here its 400 answer to those is
    replaced by stdio's: -32700 or -32600, the fields at fault, and what to send. Everything else
    passes through untouched (streams are not held); the SDK still checks headers, size and session
    first, and the server serves the next request as before.
    """

    def __init__(self, app: Callable[..., Any]) -> None:
        """Wrap the SDK's Streamable HTTP app."""
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        """Serve one ASGI request, noting a POST's body to explain a refusal of it."""
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()  # what the SDK reads, after its size limit
        held: list[dict[str, Any]] = []  # a 400 answer, until it is whole

        async def noting_receive() -> dict[str, Any]:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
            return message

        async def checking_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] == 400:
                held.append(message)
                return
            if not held:
                await send(message)
                return
            held.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                for part in _explained(held, bytes(body)):
                    await send(part)
                held.clear()

        await self.app(scope, noting_receive, checking_send)


def _explained(answer: list[dict[str, Any]], body: bytes) -> list[dict[str, Any]]:
    """The SDK's 400 ``answer`` (start, body parts), or stdio's error instead when ``body`` is no JSON-RPC message."""
    try:
        jsonrpc_message_adapter.validate_json(body, by_name=False)
    except ValidationError as exc:
        error = unreadable(exc, AS_BODY)
    else:
        error = None  # a message: the SDK refused it for something else (a header, the session), as it says
    if error is None:
        return answer
    log.warning("answered a request body that is not a JSON-RPC message: %s", error.error.message)
    content = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    start = answer[0]
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers.append((b"content-length", str(len(content)).encode()))
    return [{**start, "headers": headers}, {"type": "http.response.body", "body": content}]


async def _serve_http(server: RuledexServer, sock: socket.socket) -> None:
    import uvicorn

    host, port = sock.getsockname()[:2]
    security = http_security(host)
    server.http_security = TransportSecurityMiddleware(security) if security is not None else None
    app = AnswerUnreadable(server.streamable_http_app(host=host, transport_security=security))
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, timeout_graceful_shutdown=3)
    await uvicorn.Server(config).serve(sockets=[sock])


def serve(
    index_path: Path,
    *,
    http: str | None,
    log_queries: Path | None,
    pinned_sha256: str | None = None,
    pin_config: Path | None = None,
    layers: list[Path] | None = None,
    follow: Path | None = None,
) -> int:
    """Run the MCP server until the client disconnects (stdio) or the process is stopped (HTTP).

    ``pin_config``: the config that pins ``pinned_sha256``, named when a replacement is refused.
    ``follow``: the folder the index was chosen from (``./dist``), whose newest index is served.
    """
    _configure_logging()
    address = parse_http(http) if http else None
    query_log = QueryLog(log_queries) if log_queries else None
    holder = IndexHolder(Path(index_path), pinned_sha256=pinned_sha256, pin_config=pin_config, follow=follow)
    extra: list[IndexHolder] = []
    sock = None
    try:
        extra = [IndexHolder(Path(p)) for p in layers or []]
        sock = listen(*address) if address is not None else None
        server = RuledexServer(holder, query_log=query_log, layers=extra)
        bound = sock.getsockname()[:2] if sock is not None else None
        where = "stdio" if bound is None else f"http://{_url_host(bound[0])}:{bound[1]}/mcp"
        log.info(
            "serving %s over %s%s%s",
            served_summary([holder.index, *(h.index for h in extra)]),
            where,
            f"; following the newest index in {follow}" if follow else "",
            f"; logging queries to {log_queries}" if log_queries else "",
        )
        with warming_up([holder, *extra], server.activity.idle_for, freeze=True):
            if sock is None:
                _run_stdio(server)
            else:
                anyio.run(_serve_http, server, sock)
    finally:
        if sock is not None:
            sock.close()
        holder.close()
        for layer in extra:
            layer.close()
    return 0


WARM_UP_AFTER = 0.5
"""Seconds without a request a server waits for before warming its indexes up: a client that calls
a tool right after the handshake (a script, the bench's cold start) is answered without sharing the
CPU, and a busy server has warmed up through its requests anyway."""


class Activity:
    """Request middleware that notes when the server last handled a request: the warm-up waits for a pause."""

    def __init__(self) -> None:
        """No request yet: idle since now."""
        self.running = 0
        self.last = time.monotonic()

    def idle_for(self) -> float:
        """Seconds since the last request ended (since the server was made, before any); 0 while one runs."""
        return 0.0 if self.running else time.monotonic() - self.last

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Count the request while it runs (every request, the handshake's included)."""
        self.running += 1
        try:
            return await call_next(ctx)
        finally:
            self.running -= 1
            self.last = time.monotonic()


def freeze_heap() -> int:
    """Collect garbage, then keep every object alive now out of the collector's later passes; how many.

    A server's heap is mostly what it will hold until it stops: modules, the SDK's and pydantic's
    schemas, the index's decoded records and caches. The collector's full pass walks all of it: 55-59
    ms on every index size measured, once in a while as a session's caches grow (bench/README
    finding 11). Frozen (``gc.freeze``), those objects are no longer walked; the few that later turn
    into garbage in a reference cycle stay allocated.
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


@contextmanager
def warming_up(
    holders: list[IndexHolder], idle_for: Callable[[], float], after: float = WARM_UP_AFTER, *, freeze: bool = False
) -> Iterator[threading.Thread]:
    """Warm every served index up in a background thread while serving, so the first tool call is as fast as the rest.

    An IDE starts its servers long before the assistant's first call, which used to load the query
    encoder, the task model and the index's pages itself (52-66 ms more on the bundled rules, 90-110
    ms at 100k directives; bench/README finding 11). The warm-up waits until ``idle_for()`` (seconds
    without a request, :class:`Activity`) reaches ``after``; it holds each index as a request would,
    and stopping waits for it, so nothing is closed under it. With ``freeze``, the heap is frozen
    afterwards (:func:`freeze_heap`).
    """
    stop = threading.Event()

    def run() -> None:
        wait = after
        while not stop.wait(wait):
            idle = idle_for()
            if idle >= after:
                for holder in holders:
                    if stop.is_set():
                        return
                    holder.warm_up()
                if freeze:
                    log.info("%d objects frozen out of the garbage collector's full passes", freeze_heap())
                return
            wait = after - idle

    thread = threading.Thread(target=run, name="ruledex-warm-up", daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join()


CLIENT_GONE = (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError, anyio.ClosedResourceError)
"""What writing to a client that went away raises (its end of stdout closed: the IDE was killed)."""


def _run_stdio(server: RuledexServer) -> None:
    """Serve over stdio until the client leaves; a client that closed stdout mid-request is a quiet stop."""
    try:
        anyio.run(run_stdio, server)  # requests read before stdin closed are answered first
    except (*CLIENT_GONE, BaseExceptionGroup) as exc:
        if not client_gone(exc):
            raise
        log.info("the client closed its end of stdout (stopped or killed); stopping")
        # nothing more can reach the client: send what is still buffered for stdout nowhere, so that
        # flushing it at exit is not another broken pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` (or every exception in its group) only says the client went away."""
    if isinstance(exc, BaseExceptionGroup):
        return all(client_gone(inner) for inner in exc.exceptions)
    return isinstance(exc, CLIENT_GONE)


def served_summary(indexes: list[Index]) -> str:
    """The startup log's account of the served indexes: every one, named as citations name it when layered."""
    parts = []
    for ix, name in zip(indexes, index_names(indexes), strict=True):
        info = tools.index_info(ix)
        label = f"{name}: " if name else ""
        parts.append(
            f"{label}{info['name']} {info['version']} ({info['rules']} rules, {info['directives']} directives) "
            f"from {info['path']}"
        )
    return f"{len(parts)} layered indexes: " + "; ".join(parts) if len(parts) > 1 else parts[0]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ruledex")
    except PackageNotFoundError:  # pragma: no cover
        return "0+unknown"
