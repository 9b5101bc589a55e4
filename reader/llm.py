"""An optional local-model detector: ask an Ollama or OpenAI-compatible server for a task's context.

The built-in detector (:mod:`.detect`) is offline and fast, but it only counts words. A local model
reads a task the way a person does ("make checkout survive a flaky payment provider" is about
reliability, not tests). It is used only when configured (``--llm-url`` or ``RULEDEX_LLM_URL``) and
it can never make a query fail or hang:

* one deadline, :attr:`LLMConfig.timeout`, covers connect, send, wait and read;
* the reply is read up to :data:`MAX_REPLY_BYTES`, never further;
* the answer is validated against :data:`~.vocab.LAYERS` and :data:`~.vocab.TOPICS`; a reply that is
  not the JSON asked for, or names a layer ruledex does not know, is rejected whole, while unknown
  topics are only dropped (the known ones are still evidence);
* every failure returns ``None`` and logs one line on the ``ruledex.llm`` logger, and the caller
  keeps the built-in detection (:func:`merge` with ``None`` is the identity).

Log level: WARNING for every failure, whether the server cannot be used at all (refused, timed out,
HTTP error, a reply that is not the API's shape: the configuration needs fixing) or the model
answered and its answer was rejected (a weak model does that now and then). The commands show
warnings only, and a rejected answer's cause (not JSON, an unknown layer) is what a user tuning a
model or its prompt needs to see; the answer's notes say only that the built-in detection stands.

Standard library only (:mod:`http.client`, :mod:`json`), so the reader stays light; :mod:`http.client` is
imported only when a model is asked (with :mod:`ssl` and :mod:`email` it costs ~40 ms of every process).
:mod:`urllib.request` is not used: its timeout bounds each socket operation, not the call, so a
server that trickles bytes could hold a query for minutes; and it would send a request for
``localhost`` through ``HTTP_PROXY`` unless ``no_proxy`` says otherwise. This module connects
directly, never through a proxy. Name resolution is the one step the deadline cannot bound (the
resolver does not take a timeout): use ``localhost`` or an IP address.

Configuration (flags override the environment, see :meth:`LLMConfig.from_flags`):

==========================  ===============  ==================================================
Variable                    Flag             Meaning
==========================  ===============  ==================================================
``RULEDEX_LLM_URL``         ``--llm-url``    server base URL or full endpoint; unset: no model
``RULEDEX_LLM_MODEL``       ``--llm-model``  model name, required with a URL (``llama3.2:3b``)
``RULEDEX_LLM_API``         ``--llm-api``    ``ollama`` or ``openai``; default from the URL
``RULEDEX_LLM_TIMEOUT``     (none)           seconds for the whole call, default 2.0, max 300
``RULEDEX_LLM_API_KEY``     (none)           bearer token; ``OPENAI_API_KEY`` for ``openai``
==========================  ===============  ==================================================
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import urlsplit

from .detect import Detection
from .vocab import ANY_LAYER, LAYER_HINTS, TASK_LAYERS, TOPICS

if TYPE_CHECKING:
    import socket

log = logging.getLogger("ruledex.llm")

Api = Literal["ollama", "openai"]
APIS: tuple[Api, ...] = ("ollama", "openai")

ENV_URL = "RULEDEX_LLM_URL"
ENV_MODEL = "RULEDEX_LLM_MODEL"
ENV_API = "RULEDEX_LLM_API"
ENV_TIMEOUT = "RULEDEX_LLM_TIMEOUT"
ENV_API_KEY = "RULEDEX_LLM_API_KEY"
ENV_OPENAI_KEY = "OPENAI_API_KEY"

DEFAULT_TIMEOUT = 2.0
"""Seconds for the whole call. A 3B model on a laptop answers this prompt in about a second."""

MAX_TIMEOUT = 300.0
"""A longer timeout is surely a typo (milliseconds for seconds); it is refused, not obeyed."""

MAX_REPLY_BYTES = 64 * 1024
"""The answer is a few hundred bytes; a bigger reply is a wrong endpoint or a runaway model."""

MAX_TASK_CHARS = 4000
"""Task text sent to the model is cut here: a local model's time grows with the prompt."""

MAX_TOPICS = 4
MAX_TECHNOLOGIES = 8
MAX_TECHNOLOGY_CHARS = 40

OLLAMA_PATH = "/api/generate"
OPENAI_PATH = "/v1/chat/completions"

SYSTEM_PROMPT = (
    "You classify a software development task for an index of coding rules.\n"
    "Answer with one JSON object and nothing else, exactly these keys:\n"
    '{"layer": <one layer name below, or null>, "topics": [<topic names>], '
    '"technologies": [<names>], "confidence": <number from 0 to 1>}\n\n'
    "layer: the architecture layer where the work happens, spelled exactly as listed; null if none fits.\n"
    + "".join(f"- {name}: {LAYER_HINTS[name]}\n" for name in TASK_LAYERS)
    + "topics: up to 4, most relevant first, only from this list: "
    + ", ".join(TOPICS)
    + ".\n"
    "technologies: languages, frameworks, databases and tools the task names or clearly implies, lower case.\n"
    "confidence: how sure you are of the layer."
)
"""Instructions sent with every task. Listing the exact names is what lets the answer be validated."""


@dataclass(frozen=True)
class LLMConfig:
    """Where the local model is and how to talk to it (validated on construction).

    Attributes:
        url: Server base URL (``http://localhost:11434``) or the full endpoint URL.
        model: Model name as the server knows it.
        api: ``ollama`` (``/api/generate``) or ``openai`` (``/v1/chat/completions``).
        timeout: Seconds for the whole call, connect to last byte.
        api_key: Bearer token, if the server wants one; kept out of ``repr`` so logs never show it.
    """

    url: str
    model: str
    api: Api
    timeout: float = DEFAULT_TIMEOUT
    api_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        """Refuse a configuration that could only fail later, at query time, silently."""
        _check_url(self.url, "LLMConfig.url")
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError(f"LLMConfig.model: must be a non-empty model name, got {self.model!r}")
        _check_api(self.api, "LLMConfig.api")
        _check_timeout(self.timeout, "LLMConfig.timeout")
        if self.api_key is not None and not isinstance(self.api_key, str):
            raise ValueError("LLMConfig.api_key: must be a string or None")

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> LLMConfig | None:
        """Read the ``RULEDEX_LLM_*`` variables; ``None`` when ``RULEDEX_LLM_URL`` is unset or empty.

        Args:
            env: The environment to read (a plain dict in tests).

        Returns:
            The configuration, or ``None``: the built-in detector alone is the default.

        Raises:
            ValueError: A variable holds a bad value; the message names the variable.
        """
        return cls.from_flags(env=env)

    @classmethod
    def from_flags(
        cls,
        url: str | None = None,
        model: str | None = None,
        api: str | None = None,
        *,
        env: Mapping[str, str] = os.environ,
    ) -> LLMConfig | None:
        """Combine command-line flags with the environment: a flag given wins over its variable.

        There are no flags for the timeout and the API key: the timeout rarely changes per call, and
        a key on a command line is visible to every user of the machine (``ps``).

        Args:
            url: ``--llm-url``, or ``None`` when not given.
            model: ``--llm-model``, or ``None``.
            api: ``--llm-api``, or ``None``.
            env: The environment for everything not given as a flag.

        Returns:
            The configuration, or ``None`` when no URL is given either way.

        Raises:
            ValueError: A bad value; the message names the flag or variable it came from.
        """
        raw_url, url_src = _pick(url, "--llm-url", env, ENV_URL)
        if raw_url is None or not raw_url.strip():
            return None
        raw_url = raw_url.strip().rstrip("/")
        _check_url(raw_url, url_src)
        raw_model, _ = _pick(model, "--llm-model", env, ENV_MODEL)
        if raw_model is None or not raw_model.strip():
            raise ValueError(
                f"--llm-model (or ${ENV_MODEL}): required when {url_src} is set; name the model to run, e.g. llama3.2:3b"
            )
        raw_api, api_src = _pick(api, "--llm-api", env, ENV_API)
        chosen = raw_api.strip().lower() if raw_api and raw_api.strip() else default_api(raw_url)
        _check_api(chosen, api_src)
        raw_timeout = env.get(ENV_TIMEOUT, "").strip()
        timeout = DEFAULT_TIMEOUT
        if raw_timeout:
            try:
                timeout = float(raw_timeout)
            except ValueError:
                raise ValueError(
                    f"{ENV_TIMEOUT}: must be a number of seconds (e.g. 2.5), got {raw_timeout!r}"
                ) from None
        _check_timeout(timeout, ENV_TIMEOUT)
        key = env.get(ENV_API_KEY) or (env.get(ENV_OPENAI_KEY) if chosen == "openai" else None)
        return cls(raw_url, raw_model.strip(), cast(Api, chosen), timeout, key.strip() if key else None)

    @property
    def endpoint(self) -> str:
        """The URL to POST to: the base URL plus the API's path, unless the URL already ends with it."""
        base = self.url.rstrip("/")
        path = urlsplit(base).path
        if self.api == "ollama":
            return base if path.endswith(OLLAMA_PATH) else base + OLLAMA_PATH
        if path.endswith("/chat/completions"):
            return base
        # OpenAI clients take a base URL ending in /v1; accept that form too.
        return base + "/chat/completions" if path.endswith("/v1") else base + OPENAI_PATH


@dataclass(frozen=True)
class LLMAnswer:
    """A validated answer of the local model: known layer (or none), known topics, clamped confidence."""

    layer: str | None
    topics: tuple[str, ...]
    technologies: tuple[str, ...]
    confidence: float


def default_api(url: str) -> Api:
    """Guess the API from a URL: Ollama's bare host or ``/api/generate``, otherwise OpenAI-compatible."""
    path = urlsplit(url).path.rstrip("/")
    return "ollama" if not path or path.endswith(OLLAMA_PATH) else "openai"


def _pick(flag: str | None, flag_name: str, env: Mapping[str, str], env_name: str) -> tuple[str | None, str]:
    """The value to use and the name to blame in an error message."""
    return (flag, flag_name) if flag is not None else (env.get(env_name), env_name)


def _check_url(url: object, name: str) -> None:
    if not isinstance(url, str):
        raise ValueError(f"{name}: must be a URL string, got {url!r}")
    parts = urlsplit(url)
    try:
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        raise ValueError(f"{name}: the port in {url!r} is not a number from 0 to 65535") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{name}: must be an http:// or https:// URL such as http://localhost:11434, got {url!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"{name}: must not carry a query or fragment, got {url!r}")


def _check_api(api: object, name: str) -> None:
    if api not in APIS:
        raise ValueError(f"{name}: must be one of {', '.join(APIS)}, got {api!r}")


def _check_timeout(timeout: object, name: str) -> None:
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or not 0 < timeout <= MAX_TIMEOUT
    ):
        raise ValueError(f"{name}: must be seconds, more than 0 and at most {MAX_TIMEOUT:g}, got {timeout!r}")


# --- the call -------------------------------------------------------------------------------------


class _Unusable(Exception):
    """The server answered, but not with something usable (HTTP error, wrong shape, too big)."""


def llm_detect(text: str, config: LLMConfig) -> LLMAnswer | None:
    """Ask the configured model for the task's layer, topics and technologies.

    Never raises for anything the server or the network does: the local model is an optional
    helper, and a query must be answered with or without it.

    Args:
        text: The task description (cut to :data:`MAX_TASK_CHARS`).
        config: Where the model is; build it with :meth:`LLMConfig.from_env` or ``from_flags``.

    Returns:
        The validated answer, or ``None`` (logged on ``ruledex.llm``) when there is none to use.
    """
    if not text.strip():
        return None
    import http.client  # ~40 ms with ssl and email: only a configured model pays for it, not every query

    started = time.monotonic()
    endpoint = config.endpoint
    try:
        content = _content(_post(endpoint, _request_body(text, config), config, started + config.timeout), config.api)
    except (_Unusable, OSError, http.client.HTTPException) as exc:
        log.warning("local model at %s not used (%s); using the built-in detector", endpoint, _reason(exc, config))
        return None
    try:
        answer = parse_answer(content)
    except ValueError as exc:
        log.warning("local model at %s answered, answer rejected (%s); using the built-in detector", endpoint, exc)
        return None
    log.debug("local model at %s answered in %.0f ms: %s", endpoint, (time.monotonic() - started) * 1000, answer)
    return answer


def _reason(exc: Exception, config: LLMConfig) -> str:
    """One line saying why the server could not be used, worded for the person who configured it."""
    if isinstance(exc, _Unusable):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return f"no answer within {config.timeout:g} s; raise {ENV_TIMEOUT} if the model is slow to load"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused: is the server running?"
    return f"{type(exc).__name__}: {exc}"


def build_prompt(text: str) -> str:
    """The user message: the task, cut to :data:`MAX_TASK_CHARS`."""
    return f"Task:\n{text.strip()[:MAX_TASK_CHARS]}"


def _request_body(text: str, config: LLMConfig) -> bytes:
    body: dict[str, Any]
    if config.api == "ollama":
        # JSON mode can pad a finished object with endless whitespace (ollama/ollama#2577); num_predict
        # stops it early, and the object before the padding still parses.
        body = {
            "model": config.model,
            "prompt": f"{SYSTEM_PROMPT}\n\n{build_prompt(text)}",
            "stream": False,
            "format": "json",
            "options": {"temperature": 0, "num_predict": 256},
        }
    else:
        body = {
            "model": config.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": build_prompt(text)},
            ],
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
    return json.dumps(body).encode("utf-8")


def _post(url: str, body: bytes, config: LLMConfig, deadline: float) -> bytes:
    """POST ``body`` and return the reply body, all before ``deadline`` (``time.monotonic``)."""
    import http.client

    parts = urlsplit(url)
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(cast(str, parts.hostname), parts.port, timeout=config.timeout)
    headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "ruledex"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    raw: socket.socket | None = None
    try:
        conn.connect()
        raw = conn.sock
        conn.sock = _DeadlineSocket(raw, deadline)
        conn.request("POST", parts.path or "/", body=body, headers=headers)
        with conn.getresponse() as response:
            if response.status != 200:
                detail = _error_detail(response.read(512))
                raise _Unusable(f"HTTP {response.status} {response.reason}{detail}")
            length = response.getheader("Content-Length", "")
            if length.isdigit() and int(length) > MAX_REPLY_BYTES:
                raise _Unusable(f"reply of {length} bytes is over the {MAX_REPLY_BYTES} byte limit")
            data = response.read(MAX_REPLY_BYTES + 1)
            if len(data) > MAX_REPLY_BYTES:
                raise _Unusable(f"reply is over the {MAX_REPLY_BYTES} byte limit")
            return data
    finally:
        conn.close()
        if raw is not None:
            raw.close()


def _error_detail(data: bytes) -> str:
    """The server's own error message, short and on one line (Ollama: ``{"error": "model not found"}``)."""
    text = data.decode("utf-8", "replace")
    try:
        payload = json.loads(text)
        error = payload.get("error") if isinstance(payload, dict) else None
        text = str(error.get("message", error) if isinstance(error, dict) else error or text)
    except ValueError:
        pass
    text = " ".join(text.split())
    return f": {text[:200]}" if text else ""


class _DeadlineSocket:
    """Stands in for the connected socket so that every send and receive ends by one deadline.

    A socket timeout bounds a single operation, and http.client reads a reply in many of them: a
    server sending a byte a second would never time out. Setting the timeout to the time left before
    each operation bounds the whole exchange. http.client uses only these four methods after connect.
    """

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def _arm(self) -> None:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        self._sock.settimeout(left)

    def sendall(self, data: bytes) -> None:
        """Send everything before the deadline."""
        self._arm()
        self._sock.sendall(data)

    def recv_into(self, buffer: memoryview | bytearray) -> int:
        """Receive what is there, waiting no later than the deadline."""
        self._arm()
        return self._sock.recv_into(buffer)

    def makefile(self, mode: str = "rb") -> io.BufferedReader:
        """The buffered reader http.client parses the response from."""
        return io.BufferedReader(_Receiver(self))

    def close(self) -> None:
        """Do nothing: :func:`_post` closes the real socket when the exchange is over.

        http.client closes the connection of a ``Connection: close`` reply *before* its body is
        read; a real socket defers that until its reader is closed, and so does this.
        """


class _Receiver(io.RawIOBase):
    """The raw byte stream under :meth:`_DeadlineSocket.makefile`."""

    def __init__(self, sock: _DeadlineSocket) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        """Always: this is the receive side."""
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:
        """Fill ``buffer`` with what the socket has (0 at end of stream)."""
        return self._sock.recv_into(buffer)


# --- the answer -----------------------------------------------------------------------------------


def _content(reply: bytes, api: Api) -> str:
    """The model's text out of the API's envelope (Ollama ``response``; OpenAI ``choices[0].message.content``)."""
    try:
        envelope = json.loads(reply.decode("utf-8"))
    except ValueError:
        raise _Unusable(f"the reply is not JSON; is this an {api} endpoint?") from None
    try:
        content = envelope["response"] if api == "ollama" else envelope["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise _Unusable(f"the reply is not an {api} answer; check --llm-api / {ENV_API}") from None
    if not isinstance(content, str):
        raise _Unusable(f"the reply is not an {api} answer: the model's text is {type(content).__name__}")
    return content


def parse_answer(content: str) -> LLMAnswer:
    """Validate the model's JSON text into an :class:`LLMAnswer`.

    Strict where a wrong value would mislead (layer, types, confidence), lenient where the rest of
    the answer is still good (unknown topics are dropped, technologies are normalised). A Markdown
    code fence around the JSON is removed: some OpenAI-compatible servers ignore ``response_format``.

    Args:
        content: The model's answer text.

    Returns:
        The answer.

    Raises:
        ValueError: Saying what is wrong: not JSON, a wrong type, an unknown layer.
    """
    text = _strip_fence(content)
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise ValueError(f"the model's answer is not JSON ({exc}): {text[:80]!r}") from None
    if not isinstance(data, dict):
        raise ValueError(f"the model's answer is {type(data).__name__}, not a JSON object")
    if "layer" not in data or "confidence" not in data:
        raise ValueError("the model's answer lacks layer or confidence")
    confidence = data["confidence"]
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not math.isfinite(confidence):
        raise ValueError(f"confidence must be a number, got {confidence!r}")
    return LLMAnswer(
        layer=_layer(data["layer"]),
        topics=tuple(t for t in dict.fromkeys(_strings(data, "topics")) if t in TOPICS)[:MAX_TOPICS],
        technologies=tuple(
            t for t in dict.fromkeys(_strings(data, "technologies")) if 0 < len(t) <= MAX_TECHNOLOGY_CHARS
        )[:MAX_TECHNOLOGIES],
        confidence=min(1.0, max(0.0, float(confidence))),
    )


def _strip_fence(content: str) -> str:
    text = content.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        text = text[3:-3]
        if text.startswith("json"):
            text = text[4:]
    return text.strip()


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


_LAYER_NAMES = {name.lower(): name for name in TASK_LAYERS} | {
    name.split("-", 1)[1].lower(): name for name in TASK_LAYERS
}
"""Accepted spellings: the exact name in any case, or without its number (``persistence``)."""


def _layer(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"layer must be a string or null, got {value!r}")
    key = value.strip().lower()
    if key in ("", ANY_LAYER, "null", "none"):
        return None
    if key not in _LAYER_NAMES:
        raise ValueError(f"unknown layer {value!r}")
    return _LAYER_NAMES[key]


def _strings(data: dict[str, Any], key: str) -> list[str]:
    """A list of strings under ``key`` (missing: empty), lower-cased and stripped."""
    values = data.get(key)
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{key} must be a list of strings, got {values!r}"[:160])
    return [v.strip().lower() for v in values if v.strip()]


# --- combining with the built-in detector ----------------------------------------------------------


def llm_note(config: LLMConfig, answer: LLMAnswer | None) -> str:
    """The note a query's diagnostics and ``ruledex detect`` carry: whether the model's answer was used, and what it said.

    Without it a user who configured a model cannot tell a used answer from an ignored one.
    """
    if answer is None:
        return f"local model at {config.url} gave no usable answer; used the built-in detector"
    topics = ", ".join(answer.topics) or "none"
    return (
        f"local model at {config.url} answered layer {answer.layer or 'none'} (confidence {answer.confidence:.2f}), "
        f"topics {topics}; merged with the built-in detector, whose layer is kept when more confident"
    )


def merge(builtin: Detection, answer: LLMAnswer | None) -> Detection:
    """Combine the built-in detection with the model's answer (pure).

    The model's layer wins when it is at least as confident, or when the built-in detector claimed
    none; a model answering "no layer" never removes the built-in one, and then leaves the
    confidence alone (a confident "no idea" is not confidence in the built-in layer). Topics put
    the model's first, as it reads meaning rather than words; keywords and the score tables stay the
    built-in detector's, so diagnostics still explain the word evidence.

    Args:
        builtin: What :func:`~.detect.detect` found.
        answer: What :func:`llm_detect` returned; ``None`` returns ``builtin`` itself.

    Returns:
        The combined detection.
    """
    if answer is None:
        return builtin
    layer, confidence = builtin.layer, builtin.confidence
    if answer.layer is not None:
        if builtin.layer is None or answer.confidence >= builtin.confidence:
            layer = answer.layer
        confidence = max(builtin.confidence, answer.confidence)
    return dataclasses.replace(
        builtin,
        layer=layer,
        topics=tuple(dict.fromkeys([*answer.topics, *builtin.topics]))[:MAX_TOPICS],
        technologies=tuple(dict.fromkeys([*builtin.technologies, *answer.technologies])),
        confidence=confidence,
    )
