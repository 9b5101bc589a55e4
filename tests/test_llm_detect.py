"""The optional local-model detector (issue #4) against a stub HTTP server on loopback.

The stub speaks both APIs (Ollama ``/api/generate``, OpenAI ``/v1/chat/completions``); each test
scripts its reply. Every failure must come back as ``None`` — never an exception, never a hang.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ruledex.reader.detect import Detection, detect
from ruledex.reader.llm import (
    MAX_REPLY_BYTES,
    SYSTEM_PROMPT,
    LLMAnswer,
    LLMConfig,
    default_api,
    llm_detect,
    merge,
    parse_answer,
)
from ruledex.reader.vocab import LAYERS, TOPICS

TASK = "Add an index to the orders table so the monthly report query stops timing out"
GOOD = {
    "layer": "4-Persistence",
    "topics": ["database", "performance"],
    "technologies": ["PostgreSQL"],
    "confidence": 0.9,
}


@dataclass
class Script:
    """What the stub answers next; tests change it, handlers read it."""

    content: str = json.dumps(GOOD)
    status: int = 200
    body: bytes | None = None  # raw reply body, instead of the API envelope around ``content``
    length: bool = True  # send Content-Length (False: the body ends when the connection closes)
    delay: float = 0.0  # seconds to wait before answering
    trickle: bool = False  # send the body one byte at a time, 0.1 s apart
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # join handler threads on close: nothing outlives the test
    block_on_close = True
    script: Script


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        script = self.server.script
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        script.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
        if script.delay and script.release.wait(script.delay):
            return  # the test is over; the client has gone
        if script.body is not None:
            payload = script.body
        elif self.path == "/api/generate":
            payload = json.dumps({"model": body["model"], "response": script.content, "done": True}).encode()
        elif self.path == "/v1/chat/completions":
            message = {"role": "assistant", "content": script.content}
            payload = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
        else:
            self.send_error(404)
            return
        try:
            self.send_response(script.status)
            self.send_header("Content-Type", "application/json")
            if script.length:
                self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if not script.trickle:
                self.wfile.write(payload)
                return
            for i in range(len(payload)):
                self.wfile.write(payload[i : i + 1])
                self.wfile.flush()
                if script.release.wait(0.1):
                    return
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should on a timeout


@pytest.fixture
def stub() -> Iterator[tuple[str, Script]]:
    """A stub model server on 127.0.0.1 (a free port); yields its base URL and its script."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.script = Script()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.script
    finally:
        server.script.release.set()
        server.shutdown()
        server.server_close()
        thread.join()


def config(url: str, api: str = "ollama", timeout: float = 2.0, api_key: str | None = None) -> LLMConfig:
    return LLMConfig(url, "tiny", api, timeout, api_key)  # type: ignore[arg-type]


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- success --------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_answer_is_parsed_from_either_api(stub: tuple[str, Script], api: str) -> None:
    url, script = stub
    answer = llm_detect(TASK, config(url, api))
    assert answer == LLMAnswer("4-Persistence", ("database", "performance"), ("postgresql",), 0.9)
    assert len(script.requests) == 1


def test_ollama_request_asks_for_deterministic_json(stub: tuple[str, Script]) -> None:
    url, script = stub
    llm_detect(TASK, config(url, "ollama"))
    sent = script.requests[0]
    assert sent["path"] == "/api/generate"
    body = sent["body"]
    assert (body["model"], body["stream"], body["format"], body["options"]["temperature"]) == ("tiny", False, "json", 0)
    assert TASK in body["prompt"] and SYSTEM_PROMPT in body["prompt"]
    assert "Authorization" not in sent["headers"]


def test_openai_request_has_system_and_user_messages_and_bearer_key(stub: tuple[str, Script]) -> None:
    url, script = stub
    llm_detect(TASK, config(url + "/v1", "openai", api_key="sk-test"))
    sent = script.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    body = sent["body"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert TASK in body["messages"][1]["content"]
    assert (body["temperature"], body["response_format"]) == (0, {"type": "json_object"})
    assert sent["headers"]["Authorization"] == "Bearer sk-test"


def test_prompt_names_every_task_layer_and_topic() -> None:
    assert all(name in SYSTEM_PROMPT for name in LAYERS if name != "*")
    assert all(name in SYSTEM_PROMPT for name in TOPICS)


# --- the answer is validated -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "",
        '["4-Persistence"]',
        '{"layer": "9-Blockchain", "topics": [], "technologies": [], "confidence": 0.9}',
        '{"layer": 4, "topics": [], "technologies": [], "confidence": 0.9}',
        '{"layer": "4-Persistence", "topics": "database", "technologies": [], "confidence": 0.9}',
        '{"layer": "4-Persistence", "topics": [], "technologies": [1], "confidence": 0.9}',
        '{"layer": "4-Persistence", "topics": [], "technologies": [], "confidence": "high"}',
        '{"layer": "4-Persistence", "topics": [], "technologies": [], "confidence": NaN}',
        '{"layer": "4-Persistence", "topics": [], "technologies": []}',
    ],
    ids=[
        "malformed",
        "empty",
        "not-object",
        "unknown-layer",
        "layer-type",
        "topics-type",
        "tech-type",
        "conf-type",
        "nan",
        "no-conf",
    ],
)
@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_bad_answer_is_rejected(
    stub: tuple[str, Script], api: str, content: str, caplog: pytest.LogCaptureFixture
) -> None:
    url, script = stub
    script.content = content
    with caplog.at_level(logging.DEBUG, logger="ruledex.llm"):
        assert llm_detect(TASK, config(url, api)) is None
    assert [(r.name, r.levelno) for r in caplog.records] == [("ruledex.llm", logging.WARNING)], "the CLI shows warnings"
    assert "answer rejected" in caplog.text


def test_unknown_topics_are_dropped_and_known_kept(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.content = json.dumps({**GOOD, "topics": ["blockchain", "Database", "database", "vibes", "security"]})
    answer = llm_detect(TASK, config(url))
    assert answer is not None and answer.topics == ("database", "security")


@pytest.mark.parametrize(("given", "expected"), [(1.7, 1.0), (-0.2, 0.0), (1, 1.0)])
def test_confidence_is_clamped(stub: tuple[str, Script], given: float, expected: float) -> None:
    url, script = stub
    script.content = json.dumps({**GOOD, "confidence": given})
    answer = llm_detect(TASK, config(url))
    assert answer is not None and answer.confidence == expected


@pytest.mark.parametrize(
    ("layer", "expected"),
    [("persistence", "4-Persistence"), ("4-persistence", "4-Persistence"), (None, None), ("*", None)],
)
def test_layer_spellings(layer: str | None, expected: str | None) -> None:
    assert parse_answer(json.dumps({**GOOD, "layer": layer})).layer == expected


def test_code_fence_around_the_json_is_tolerated() -> None:
    assert parse_answer(f"```json\n{json.dumps(GOOD)}\n```").layer == "4-Persistence"


# --- the network fails: None, never an exception ----------------------------------------------------


@pytest.mark.parametrize("api", ["ollama", "openai"])
def test_http_error_gives_none_and_one_warning(
    stub: tuple[str, Script], api: str, caplog: pytest.LogCaptureFixture
) -> None:
    url, script = stub
    script.status, script.body = 500, b'{"error": "model \\"tiny\\" not found"}'
    with caplog.at_level(logging.DEBUG, logger="ruledex.llm"):
        assert llm_detect(TASK, config(url, api)) is None
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert "HTTP 500" in caplog.text and 'model "tiny" not found' in caplog.text


def test_reply_in_the_wrong_api_shape_gives_none(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.body = b'{"object": "list", "data": []}'
    assert llm_detect(TASK, config(url, "openai")) is None


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "read-cap"])
def test_oversized_reply_gives_none(stub: tuple[str, Script], length: bool) -> None:
    url, script = stub
    script.body, script.length = b" " * (MAX_REPLY_BYTES + 10) + json.dumps({"response": "{}"}).encode(), length
    assert llm_detect(TASK, config(url)) is None


def test_timeout_gives_none(stub: tuple[str, Script], caplog: pytest.LogCaptureFixture) -> None:
    url, script = stub
    script.delay = 30.0
    started = time.monotonic()
    assert llm_detect(TASK, config(url, timeout=0.3)) is None
    assert time.monotonic() - started < 5  # a hang guard, not a benchmark
    assert "no answer within 0.3 s" in caplog.text


def test_a_trickling_server_cannot_stretch_the_deadline(stub: tuple[str, Script]) -> None:
    # every byte arrives well within the timeout, but the whole reply would take seconds
    url, script = stub
    script.trickle = True
    started = time.monotonic()
    assert llm_detect(TASK, config(url, timeout=0.3)) is None
    assert time.monotonic() - started < 5  # a hang guard, not a benchmark


def test_connection_refused_gives_none(caplog: pytest.LogCaptureFixture) -> None:
    assert llm_detect(TASK, config(f"http://127.0.0.1:{closed_port()}")) is None
    assert "connection refused" in caplog.text


def test_empty_task_makes_no_call(stub: tuple[str, Script]) -> None:
    url, script = stub
    assert llm_detect("   ", config(url)) is None
    assert script.requests == []


# --- configuration -----------------------------------------------------------------------------------


def test_unset_or_empty_url_means_no_model() -> None:
    assert LLMConfig.from_env({}) is None
    assert LLMConfig.from_env({"RULEDEX_LLM_URL": " ", "RULEDEX_LLM_MODEL": "tiny"}) is None


def test_from_env_reads_every_variable() -> None:
    env = {
        "RULEDEX_LLM_URL": "http://localhost:8080/",
        "RULEDEX_LLM_MODEL": " qwen2.5:3b ",
        "RULEDEX_LLM_API": "OpenAI",
        "RULEDEX_LLM_TIMEOUT": "0.75",
        "RULEDEX_LLM_API_KEY": "k1",
    }
    assert LLMConfig.from_env(env) == LLMConfig("http://localhost:8080", "qwen2.5:3b", "openai", 0.75, "k1")


@pytest.mark.parametrize(
    ("url", "api"),
    [
        ("http://localhost:11434", "ollama"),
        ("http://localhost:11434/", "ollama"),
        ("http://localhost:11434/api/generate", "ollama"),
        ("http://localhost:8000/v1", "openai"),
        ("https://llm.internal/v1/chat/completions", "openai"),
    ],
)
def test_api_defaults_from_the_url(url: str, api: str) -> None:
    assert default_api(url) == api
    found = LLMConfig.from_env({"RULEDEX_LLM_URL": url, "RULEDEX_LLM_MODEL": "m"})
    assert found is not None and found.api == api


def test_openai_api_key_is_a_fallback_for_openai_only() -> None:
    env = {"RULEDEX_LLM_MODEL": "m", "OPENAI_API_KEY": "sk-env"}
    openai = LLMConfig.from_env({**env, "RULEDEX_LLM_URL": "http://h/v1"})
    ollama = LLMConfig.from_env({**env, "RULEDEX_LLM_URL": "http://h:11434"})
    assert openai is not None and openai.api_key == "sk-env"
    assert ollama is not None and ollama.api_key is None
    assert "sk-env" not in repr(openai)


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"RULEDEX_LLM_TIMEOUT": "soon"}, "RULEDEX_LLM_TIMEOUT"),
        ({"RULEDEX_LLM_TIMEOUT": "0"}, "RULEDEX_LLM_TIMEOUT"),
        ({"RULEDEX_LLM_TIMEOUT": "-1"}, "RULEDEX_LLM_TIMEOUT"),
        ({"RULEDEX_LLM_TIMEOUT": "nan"}, "RULEDEX_LLM_TIMEOUT"),
        ({"RULEDEX_LLM_TIMEOUT": "2000"}, "RULEDEX_LLM_TIMEOUT"),
        ({"RULEDEX_LLM_API": "anthropic"}, "RULEDEX_LLM_API"),
        ({"RULEDEX_LLM_MODEL": ""}, "RULEDEX_LLM_MODEL"),
        ({"RULEDEX_LLM_URL": "localhost:11434"}, "RULEDEX_LLM_URL"),
        ({"RULEDEX_LLM_URL": "ftp://localhost"}, "RULEDEX_LLM_URL"),
        ({"RULEDEX_LLM_URL": "http://localhost:port"}, "RULEDEX_LLM_URL"),
    ],
)
def test_bad_setting_raises_value_error_naming_the_variable(extra: dict[str, str], named: str) -> None:
    env = {"RULEDEX_LLM_URL": "http://localhost:11434", "RULEDEX_LLM_MODEL": "m", **extra}
    with pytest.raises(ValueError, match=named):
        LLMConfig.from_env(env)


def test_flags_override_the_environment_and_errors_name_the_flag() -> None:
    env = {"RULEDEX_LLM_URL": "http://env:11434", "RULEDEX_LLM_MODEL": "env-model", "RULEDEX_LLM_TIMEOUT": "1.5"}
    found = LLMConfig.from_flags("http://flag:8000/v1", None, None, env=env)
    assert found == LLMConfig("http://flag:8000/v1", "env-model", "openai", 1.5)
    assert LLMConfig.from_flags(None, None, None, env={}) is None
    with pytest.raises(ValueError, match="--llm-api"):
        LLMConfig.from_flags(None, None, "grpc", env=env)


def test_direct_construction_is_validated() -> None:
    with pytest.raises(ValueError, match=r"LLMConfig\.timeout"):
        LLMConfig("http://localhost:11434", "m", "ollama", timeout=0)
    with pytest.raises(ValueError, match=r"LLMConfig\.api"):
        LLMConfig("http://localhost:11434", "m", "gemini")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "api", "endpoint"),
    [
        ("http://h:11434", "ollama", "http://h:11434/api/generate"),
        ("http://h:11434/api/generate", "ollama", "http://h:11434/api/generate"),
        ("http://h:8000", "openai", "http://h:8000/v1/chat/completions"),
        ("http://h:8000/v1/", "openai", "http://h:8000/v1/chat/completions"),
        ("http://h/openai/v1/chat/completions", "openai", "http://h/openai/v1/chat/completions"),
    ],
)
def test_endpoint(url: str, api: str, endpoint: str) -> None:
    assert LLMConfig(url, "m", api).endpoint == endpoint  # type: ignore[arg-type]


# --- merging with the built-in detection ---------------------------------------------------------------


def builtin(layer: str | None = "2-Application", confidence: float = 0.5) -> Detection:
    return Detection(
        layer=layer,
        topics=("api", "backend"),
        technologies=("python",),
        keywords=("add", "endpoint"),
        confidence=confidence if layer else 0.0,
        layer_scores={"2-Application": 2.0},
        topic_scores={"api": 2.0},
    )


def answer(layer: str | None = "4-Persistence", confidence: float = 0.8) -> LLMAnswer:
    return LLMAnswer(layer, ("database", "api", "performance"), ("postgresql", "python"), confidence)


def test_merge_without_an_answer_is_the_builtin_itself() -> None:
    det = builtin()
    assert merge(det, None) is det


def test_merge_prefers_the_more_confident_model() -> None:
    merged = merge(builtin(confidence=0.5), answer(confidence=0.8))
    assert (merged.layer, merged.confidence) == ("4-Persistence", 0.8)
    assert merged.topics == ("database", "api", "performance", "backend")
    assert merged.technologies == ("python", "postgresql")
    assert (merged.keywords, merged.layer_scores, merged.topic_scores) == (
        builtin().keywords,
        builtin().layer_scores,
        builtin().topic_scores,
    )


def test_merge_keeps_the_more_confident_builtin_layer() -> None:
    merged = merge(builtin(confidence=0.9), answer(confidence=0.4))
    assert (merged.layer, merged.confidence) == ("2-Application", 0.9)
    assert merged.topics[0] == "database"


def test_merge_fills_a_missing_builtin_layer() -> None:
    merged = merge(builtin(layer=None), answer(confidence=0.1))
    assert (merged.layer, merged.confidence) == ("4-Persistence", 0.1)


def test_a_model_without_a_layer_never_removes_or_inflates_the_builtin_one() -> None:
    merged = merge(builtin(confidence=0.3), answer(layer=None, confidence=0.95))
    assert (merged.layer, merged.confidence) == ("2-Application", 0.3)
    assert "database" in merged.topics


def test_end_to_end_merge_with_the_real_detector(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.content = json.dumps({**GOOD, "confidence": 1.0})
    det = detect("Speed up the monthly report")
    merged = merge(det, llm_detect("Speed up the monthly report", config(url)))
    assert merged.layer == "4-Persistence"
    assert (merged.keywords, merged.layer_scores) == (det.keywords, det.layer_scores)
    assert merge(det, llm_detect("Speed up the monthly report", config(f"http://127.0.0.1:{closed_port()}"))) == det


def test_detect_cli_says_when_the_model_gave_nothing_usable(
    stub: tuple[str, Script], capsys: pytest.CaptureFixture[str]
) -> None:
    """A malformed reply falls back silently inside a query, but the command says so."""
    from ruledex.reader.cli import main

    url, script = stub
    script.content = "not json"
    argv = ["detect", "Speed up the monthly report", "--llm-url", url, "--llm-model", "tiny"]
    assert main([*argv, "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert notes == [f"local model at {url} gave no usable answer; used the built-in detector"]
    assert main(argv) == 0
    assert "gave no usable answer" in capsys.readouterr().err
    script.content = json.dumps(GOOD)
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == [
        f"local model at {url} answered layer 4-Persistence (confidence 0.90), topics database, performance; "
        "merged with the built-in detector, whose layer is kept when more confident"
    ], "a used answer is said too: otherwise nothing shows the model was asked"
