"""The optional local-model detector, end to end through query_directives and the CLI."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ruledex.reader.cli import main
from ruledex.reader.index import Index
from ruledex.reader.llm import LLMConfig
from ruledex.reader.query import query_directives

ANSWER = {"layer": "5-Tests", "topics": ["testing"], "technologies": ["pytest"], "confidence": 0.95}


class _Ollama(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({"response": json.dumps(ANSWER)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def ollama() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ollama)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_local_model_answer_steers_detection(index: Index, ollama: str) -> None:
    task = "Users can register twice with the same email"
    plain = query_directives(index, task)
    steered = query_directives(index, task, llm=LLMConfig(ollama, "stub", "ollama"))
    assert plain["diagnostics"]["detectedLayer"] != "5-Tests"
    assert steered["diagnostics"]["detectedLayer"] == "5-Tests"
    assert "testing" in steered["diagnostics"]["topics"]
    assert "pytest" in steered["diagnostics"]["technologies"]
    assert any(n.startswith(f"local model at {ollama} answered layer 5-Tests") for n in steered["diagnostics"]["notes"])


def test_unreachable_model_falls_back_silently(index: Index) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    task = "Add user registration API endpoint"
    result = query_directives(index, task, llm=LLMConfig(f"http://127.0.0.1:{port}", "stub", "ollama", timeout=0.5))
    assert result["citations"] == query_directives(index, task)["citations"]
    assert any("built-in detector" in note for note in result["diagnostics"]["notes"])


def test_cli_flags(bundled_index: object, ollama: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "detect",
        "Users can register twice",
        "--index",
        str(bundled_index),
        "--json",
        "--llm-url",
        ollama,
        "--llm-model",
        "stub",
    ]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["detectedLayer"] == "5-Tests"
    assert main(["detect", "x", "--llm-url", "ftp://nope", "--llm-model", "m"]) == 2
    assert "--llm-url" in capsys.readouterr().err
