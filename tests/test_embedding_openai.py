"""The OpenAI-compatible embedder against a scripted local server, through the real SDK."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from openai import InternalServerError, OpenAI
from support.openai_server import (
    OpenAIServer,
    Reply,
    Request,
    chat_reply,
    embeddings_reply,
    error_reply,
    hashed_embedding,
    iter_inputs,
    malformed_json_reply,
    wrong_dim_reply,
)

from mnemonic.llm.embedding.base import EmbeddingError, EmbeddingProvider, Vectors
from mnemonic.llm.embedding.openai_compat import OpenAICompatibleEmbedder

DIM = 24
EMBEDDINGS = "/v1/embeddings"

Factory = Callable[..., OpenAICompatibleEmbedder]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(embedding_dim=DIM) as running:
        yield running


@pytest.fixture
def make_embedder(server: OpenAIServer) -> Iterator[Factory]:
    """Builds embedders on the test server (no retries unless asked) and closes them."""
    made: list[OpenAICompatibleEmbedder] = []

    def factory(**kwargs: object) -> OpenAICompatibleEmbedder:
        options: dict[str, object] = {
            "base_url": server.base_url,
            "model": "nomic-embed",
            "max_retries": 0,
        }
        options.update(kwargs)
        embedder = OpenAICompatibleEmbedder(**options)  # type: ignore[arg-type]
        made.append(embedder)
        return embedder

    yield factory
    for embedder in made:
        embedder.close()


def _expected(texts: list[str]) -> Vectors:
    """What the client must return for the server's default answer: its rows, unit length."""
    raw = np.array([hashed_embedding(t, DIM) for t in texts], dtype=np.float64)
    unit: Vectors = (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)
    return unit


def test_dim_is_learned_by_probe(server: OpenAIServer, make_embedder: Factory) -> None:
    embedder = make_embedder()
    assert embedder.probe() == DIM
    assert embedder.dim == DIM
    assert embedder.name == "openai:nomic-embed"
    assert isinstance(embedder, EmbeddingProvider)
    assert len(server.requests_to(EMBEDDINGS)) == 1


def test_reading_dim_first_probes_once(server: OpenAIServer, make_embedder: Factory) -> None:
    embedder = make_embedder()
    assert embedder.dim == DIM
    assert embedder.dim == DIM
    assert len(server.requests) == 1


def test_dim_is_learned_from_the_first_embed(server: OpenAIServer, make_embedder: Factory) -> None:
    embedder = make_embedder()
    embedder.embed(["first contact"])
    assert embedder.dim == DIM
    assert len(server.requests) == 1  # no extra probe once an answer has been seen


def test_rows_are_normalised_and_match_the_server(make_embedder: Factory) -> None:
    texts = ["the cat sat", "on the mat", "", "a much longer sentence about memory daemons"]
    vectors = make_embedder().embed(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (4, DIM)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(vectors, _expected(texts), atol=1e-6)


def test_request_carries_model_and_float_encoding(
    server: OpenAIServer, make_embedder: Factory
) -> None:
    make_embedder().embed(["hello"])
    (request,) = server.requests_to(EMBEDDINGS)
    assert request.method == "POST"
    assert request.json() == {
        "model": "nomic-embed",
        "input": ["hello"],
        "encoding_format": "float",
    }


def test_batches_split_into_batch_size_requests(
    server: OpenAIServer, make_embedder: Factory
) -> None:
    texts = [f"text number {i}" for i in range(10)]
    vectors = make_embedder(batch_size=4).embed(texts)
    assert [len(b) for b in iter_inputs(server.requests_to(EMBEDDINGS))] == [4, 4, 2]
    assert [t for b in iter_inputs(server.requests) for t in b] == texts
    np.testing.assert_allclose(vectors, _expected(texts), atol=1e-6)


def test_rows_are_put_back_in_index_order(server: OpenAIServer, make_embedder: Factory) -> None:
    def reversed_answer(request: Request) -> Reply:
        inputs = request.json()["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": hashed_embedding(t, DIM)}
            for i, t in enumerate(inputs)
        ]
        return Reply.of_json({"object": "list", "model": "m", "data": data[::-1]})

    server.set_handler(EMBEDDINGS, reversed_answer)
    texts = ["alpha", "beta gamma", "delta"]
    np.testing.assert_allclose(make_embedder().embed(texts), _expected(texts), atol=1e-6)


def test_empty_input_sends_nothing(server: OpenAIServer, make_embedder: Factory) -> None:
    vectors = make_embedder(dim=DIM).embed([])
    assert vectors.shape == (0, DIM)
    assert server.requests == []


def test_a_bare_string_is_refused(server: OpenAIServer, make_embedder: Factory) -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        make_embedder().embed("one text, not a list")
    assert server.requests == []


def test_given_dim_is_enforced(make_embedder: Factory) -> None:
    with pytest.raises(EmbeddingError, match=f"returned {DIM}-dimensional vectors.*expected 32"):
        make_embedder(dim=32).embed(["x"])


def test_a_later_wrong_dim_is_refused(server: OpenAIServer, make_embedder: Factory) -> None:
    embedder = make_embedder()
    embedder.probe()
    server.script(EMBEDDINGS, wrong_dim_reply(DIM + 1))
    with pytest.raises(EmbeddingError, match=f"expected {DIM}"):
        embedder.embed(["drifted"])
    assert embedder.dim == DIM


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (error_reply(500, "model crashed"), "answered HTTP 500: model crashed"),
        (error_reply(404, "model not found"), r"HTTP 404.*base_url end in /v1"),
        (error_reply(429, "slow down"), "HTTP 429"),
        (malformed_json_reply(), "invalid JSON"),
        (Reply(status=502, body=b"<html>bad gateway</html>", content_type="text/html"), "502"),
        (Reply.of_json({"object": "list"}), "without a 'data' list"),
        (embeddings_reply([[1.0, 2.0], [3.0, 4.0]]), "returned 2 vectors for 1 texts"),
        (embeddings_reply([[0.0, 0.0, 0.0]]), "zero vector"),
        (Reply.of_json({"data": [{"index": 0, "embedding": "AAAA"}]}), "malformed vectors"),
        (Reply(body=b'{"data": [{"index": 0, "embedding": [NaN, 1.0]}]}'), "non-finite"),
    ],
)
def test_bad_answers_become_embedding_errors(
    server: OpenAIServer, make_embedder: Factory, reply: Reply, message: str
) -> None:
    server.script(EMBEDDINGS, reply)
    with pytest.raises(EmbeddingError, match=message):
        make_embedder().embed(["x"])


def test_transient_failure_is_retried_by_the_sdk(
    server: OpenAIServer, make_embedder: Factory
) -> None:
    fast_retry = Reply.of_json({"error": {"message": "busy"}}, status=503)
    server.script(
        EMBEDDINGS, Reply(fast_retry.status, fast_retry.body, headers={"retry-after-ms": "1"})
    )
    vectors = make_embedder(max_retries=1).embed(["eventually"])
    assert vectors.shape == (1, DIM)
    assert len(server.requests) == 2


def test_timeout_becomes_an_embedding_error(server: OpenAIServer, make_embedder: Factory) -> None:
    server.script(EMBEDDINGS, Reply(delay=1.0, body=b"{}"))
    with pytest.raises(EmbeddingError, match="timed out"):
        make_embedder(timeout=0.2).embed(["slow"])


def test_unreachable_endpoint_becomes_an_embedding_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the client connects
    embedder = OpenAICompatibleEmbedder(f"http://127.0.0.1:{port}/v1", "m", max_retries=0)
    try:
        with pytest.raises(EmbeddingError, match=f"cannot reach embedding endpoint .*:{port}/v1"):
            embedder.embed(["x"])
    finally:
        embedder.close()


def test_api_key_goes_in_the_authorization_header(
    server: OpenAIServer, make_embedder: Factory
) -> None:
    make_embedder(api_key="sk-local-123").embed(["x"])
    assert server.requests[0].header("Authorization") == "Bearer sk-local-123"


def test_no_api_key_sends_no_header_even_with_one_in_the_environment(
    server: OpenAIServer, make_embedder: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    make_embedder().embed(["x"])
    assert server.requests[0].header("Authorization") is None


def test_error_messages_carry_no_secrets(server: OpenAIServer) -> None:
    secret = "sk-very-secret"
    url = server.base_url.replace("http://", "http://user:hunter2@")
    embedder = OpenAICompatibleEmbedder(url, "m", api_key=secret, max_retries=0)
    server.script(EMBEDDINGS, error_reply(401, f"Incorrect API key provided: {secret}"))
    try:
        with pytest.raises(EmbeddingError) as caught:
            embedder.embed(["x"])
    finally:
        embedder.close()
    message = str(caught.value)
    assert "HTTP 401" in message
    assert "check the api key" in message
    assert secret not in message
    assert "hunter2" not in message


@pytest.mark.parametrize(
    "kwargs",
    [{"model": ""}, {"dim": 0}, {"timeout": 0.0}, {"batch_size": 0}, {"max_retries": -1}],
)
def test_invalid_settings_are_rejected(kwargs: dict[str, object]) -> None:
    options: dict[str, object] = {"base_url": "http://127.0.0.1:1/v1", "model": "m"}
    options.update(kwargs)
    with pytest.raises(ValueError):
        OpenAICompatibleEmbedder(**options)  # type: ignore[arg-type]


def test_server_scripts_chat_replies_in_order(server: OpenAIServer) -> None:
    """The test server is shared with the chat tests; check its scripted chat answers."""
    server.script("/v1/chat/completions", chat_reply("first"), error_reply(500))
    client = OpenAI(base_url=server.base_url, api_key="k", max_retries=0)

    def ask() -> str | None:
        answer = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        return answer.choices[0].message.content

    try:
        assert ask() == "first"
        with pytest.raises(InternalServerError):
            ask()
        assert ask() == "ok"  # the default once the script is used up
    finally:
        client.close()
    assert server.pending("/v1/chat/completions") == 0
    assert [r.json()["messages"][0]["content"] for r in server.requests] == ["hi", "hi", "hi"]
