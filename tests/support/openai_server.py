"""A scripted OpenAI-compatible HTTP server for tests.

It runs on 127.0.0.1 on a free port in a background thread, so code under test talks to
it through the real ``openai`` SDK and a real socket. By default it answers

* ``POST /v1/embeddings`` with deterministic hashed bag-of-words vectors of
  ``embedding_dim`` (deliberately *not* unit length, see :func:`hashed_embedding`);
* ``POST /v1/chat/completions`` with ``default_chat_reply``;
* ``GET /v1/models`` with the one model ``model_name``.

Tests change the answers in two ways:

* :meth:`OpenAIServer.script` queues responses for a path; each request to that path
  takes the next one (FIFO) and the default answer comes back once the queue is empty.
  A queued item is a :class:`Reply` or a callable ``(Request) -> Reply``.
* :meth:`OpenAIServer.set_handler` replaces the default answer for a path.

Every request is recorded (method, path, headers, body) in :attr:`OpenAIServer.requests`.

Example::

    with OpenAIServer(embedding_dim=8) as server:
        server.script("/v1/embeddings", error_reply(500), malformed_json_reply())
        server.script("/v1/chat/completions", chat_reply("hello"))
        client = OpenAI(base_url=server.base_url, api_key="k")
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = [
    "OpenAIServer",
    "Reply",
    "Request",
    "chat_reply",
    "embeddings_reply",
    "error_reply",
    "hashed_embedding",
    "iter_inputs",
    "malformed_json_reply",
    "wrong_dim_reply",
]

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    def header(self, name: str) -> str | None:
        """Case-insensitive header lookup."""
        lowered = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lowered), None)


@dataclass(frozen=True)
class Reply:
    """A raw HTTP answer; ``delay`` seconds pass before it is sent (to test timeouts)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0

    @classmethod
    def of_json(cls, payload: Any, status: int = 200) -> Reply:
        return cls(status=status, body=json.dumps(payload).encode())


Scripted = Reply | Callable[[Request], Reply]
Handler = Callable[[Request], Reply]


def hashed_embedding(text: str, dim: int) -> list[float]:
    """A deterministic bag-of-words vector: each word adds ±1 to a hashed coordinate.

    A constant bias feature keeps the empty text away from the zero vector. The result is
    scaled by 3 so it is never unit length: clients must normalise it themselves.
    """
    vector = [0.0] * dim
    for word in [*_WORD.findall(text.lower()), "\x00bias"]:
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "big") % dim
        vector[index] += 3.0 if digest[4] & 1 else -3.0
    return vector


def _inputs(request: Request) -> list[str]:
    body = request.json() or {}
    raw = body.get("input", [])
    return [raw] if isinstance(raw, str) else [str(x) for x in raw]


def embeddings_reply(vectors: list[list[float]], model: str = "test-embed") -> Reply:
    """The OpenAI ``/v1/embeddings`` answer for the given vectors, in order."""
    return Reply.of_json(
        {
            "object": "list",
            "model": model,
            "data": [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ],
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }
    )


def wrong_dim_reply(dim: int) -> Handler:
    """Answer the request's inputs with hashed vectors of ``dim`` instead of the usual one."""
    return lambda request: embeddings_reply([hashed_embedding(t, dim) for t in _inputs(request)])


def chat_reply(
    content: str,
    model: str = "test-chat",
    finish_reason: str = "stop",
    *,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
) -> Reply:
    """The OpenAI ``/v1/chat/completions`` answer carrying one assistant message (with the
    given token counts in ``usage``)."""
    return Reply.of_json(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def error_reply(
    status: int = 500, message: str = "scripted failure", *, retry_after: str | None = None
) -> Reply:
    """An OpenAI-style error body with the given HTTP status (and a ``Retry-After``)."""
    reply = Reply.of_json(
        {"error": {"message": message, "type": "server_error", "code": None}}, status=status
    )
    if retry_after is None:
        return reply
    return Reply(status=status, body=reply.body, headers={"Retry-After": retry_after})


def malformed_json_reply(status: int = 200) -> Reply:
    """A body that claims to be JSON and is not."""
    return Reply(status=status, body=b'{"object": "list", "data": [')


class OpenAIServer:
    """The scripted server; use it as a context manager (see the module docstring)."""

    def __init__(
        self,
        embedding_dim: int = 16,
        *,
        model_name: str = "test-model",
        default_chat_reply: str = "ok",
    ) -> None:
        self.embedding_dim = embedding_dim
        self.model_name = model_name
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._queues: dict[str, deque[Scripted]] = {}
        self._handlers: dict[str, Handler] = {
            "/v1/embeddings": self._default_embeddings,
            "/v1/chat/completions": lambda _req: chat_reply(default_chat_reply),
            "/v1/models": self._default_models,
        }
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> OpenAIServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler_class(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="openai-test-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running; use it in a `with` block")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What an OpenAI client takes as ``base_url`` (it ends in ``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting -------------------------------------------------------------------

    def script(self, path: str, *replies: Scripted) -> None:
        """Queue answers for ``path``; they are used in order, before the default."""
        with self._lock:
            self._queues.setdefault(path, deque()).extend(replies)

    def set_handler(self, path: str, handler: Handler) -> None:
        """Replace the default answer for ``path`` (new paths are allowed)."""
        with self._lock:
            self._handlers[path] = handler

    def pending(self, path: str) -> int:
        """How many scripted answers for ``path`` are still unused."""
        with self._lock:
            return len(self._queues.get(path, ()))

    # -- inspection ------------------------------------------------------------------

    @property
    def requests(self) -> list[Request]:
        """A snapshot of every request so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[Request]:
        return [r for r in self.requests if r.path == path]

    def clear(self) -> None:
        """Forget recorded requests and unused scripted answers."""
        with self._lock:
            self._requests.clear()
            self._queues.clear()

    # -- answering -------------------------------------------------------------------

    def _answer(self, request: Request) -> Reply:
        with self._lock:
            self._requests.append(request)
            queue = self._queues.get(request.path)
            scripted = queue.popleft() if queue else None
            handler = self._handlers.get(request.path)
        if scripted is not None:
            return scripted if isinstance(scripted, Reply) else scripted(request)
        if handler is None:
            return error_reply(404, f"no route for {request.method} {request.path}")
        return handler(request)

    def _default_embeddings(self, request: Request) -> Reply:
        vectors = [hashed_embedding(t, self.embedding_dim) for t in _inputs(request)]
        model = (request.json() or {}).get("model", self.model_name)
        return embeddings_reply(vectors, model=str(model))

    def _default_models(self, _request: Request) -> Reply:
        return Reply.of_json(
            {
                "object": "list",
                "data": [{"id": self.model_name, "object": "model", "owned_by": "test"}],
            }
        )


def _make_handler_class(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        # HTTP/1.0 closes every connection, so shutting down never waits on keep-alive.
        protocol_version = "HTTP/1.0"

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = Request(
                method=self.command,
                path=self.path.split("?", 1)[0],
                headers=dict(self.headers.items()),
                body=body,
            )
            reply = server._answer(request)
            if reply.delay:
                time.sleep(reply.delay)
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test); nothing left to answer

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output clean; requests are recorded instead."""

    return _Handler


def iter_inputs(requests: list[Request]) -> Iterator[list[str]]:
    """The ``input`` list of each recorded embeddings request, in order."""
    for request in requests:
        yield _inputs(request)


def llm_settings(server: OpenAIServer, **overrides: Any) -> dict[str, Any]:
    """The daemon's ``llm`` settings for ``server``: no retries and short deadlines, so a
    scripted failure shows at once."""
    return {
        "provider": "openai",
        "base_url": server.base_url,
        "model": server.model_name,
        "max_retries": 0,
        "timeout_s": 5,
        "deadline_s": 10,
        **overrides,
    }
