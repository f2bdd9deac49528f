"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint.

Ollama, LM Studio, llama.cpp's server and vLLM all speak this dialect, so one client
covers every local model server (and hosted APIs) without extra dependencies.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mnemonic.llm.embedding.base import EmbeddingError, Vectors
from mnemonic.llm.http_errors import error_detail, redact_url

if TYPE_CHECKING:
    from openai import OpenAI

logger = logging.getLogger(__name__)

_PROBE_TEXT = "dimension probe"
_SNIPPET = 200
_NO_KEY = "no-key"


class OpenAICompatibleEmbedder:
    """Embeds through an OpenAI-compatible server, checking and normalising every answer.

    ``base_url`` is what the OpenAI SDK expects, usually ending in ``/v1`` (Ollama:
    ``http://127.0.0.1:11434/v1``). When ``dim`` is not given it is learned from the first
    answer; call :meth:`probe` at start-up to learn it before anything is stored. Every
    later answer must have that dimension. Until then reading ``dim`` probes the endpoint,
    and so does ``isinstance(x, EmbeddingProvider)`` on Python 3.11 (it reads every
    protocol attribute), which raises EmbeddingError if the endpoint is down.

    ``api_key=None`` sends no ``Authorization`` header at all: local servers need none,
    and reading ``OPENAI_API_KEY`` from the environment would leak a real key to them.

    Thread safety: the underlying HTTP client is thread-safe and the learned dimension is
    set under a lock, so concurrent ``embed`` calls are fine.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float = 30.0,
        batch_size: int = 64,
        *,
        max_retries: int = 2,
    ) -> None:
        _check_settings(model, dim, timeout, batch_size, max_retries)
        self._model = model
        self._dim = dim
        self._batch_size = batch_size
        self._api_key = api_key
        self._where = redact_url(base_url)
        self._lock = threading.Lock()
        self._client = _make_client(base_url, api_key, timeout, max_retries)

    @property
    def name(self) -> str:
        return f"openai:{self._model}"

    @property
    def dim(self) -> int:
        """The vector dimension; reading it before any answer probes the endpoint once."""
        if self._dim is None:
            self.probe()
        assert self._dim is not None
        return self._dim

    def probe(self) -> int:
        """Embed one short text so the endpoint's dimension (and reachability) is known."""
        vectors = self.embed([_PROBE_TEXT])
        logger.info("embedding endpoint %s serves %s, dim %d", self._where, self.name, self._dim)
        return int(vectors.shape[1])

    def embed(self, texts: Sequence[str], *, urgent: bool = False) -> Vectors:
        """Embed in ``batch_size`` requests; ``[]`` makes no request (``(0, 0)`` if no dim
        yet). ``urgent`` changes nothing: each call is its own request."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        if len(texts) == 0:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        parts = [
            self._embed_batch(list(texts[start : start + self._batch_size]))
            for start in range(0, len(texts), self._batch_size)
        ]
        return np.vstack(parts).astype(np.float32, copy=False)

    def close(self) -> None:
        """Release the HTTP connection pool."""
        self._client.close()

    def _embed_batch(self, batch: list[str]) -> Vectors:
        payload = self._request(batch)
        raw = _parse_vectors(payload, len(batch), self._where)
        self._check_dim(raw.shape[1])
        return _normalise(raw, self._where)

    def _request(self, batch: list[str]) -> Any:
        import openai

        headers: dict[str, str | openai.Omit] = {}
        if not self._api_key:
            headers["Authorization"] = openai.omit
        try:
            response = self._client.embeddings.with_raw_response.create(
                model=self._model, input=batch, encoding_format="float", extra_headers=headers
            )
            return response.http_response.json()
        except openai.APIStatusError as exc:
            raise EmbeddingError(self._status_message(exc)) from exc
        except openai.APITimeoutError as exc:
            raise EmbeddingError(f"embedding endpoint {self._where} timed out") from exc
        except openai.APIConnectionError as exc:
            raise EmbeddingError(f"cannot reach embedding endpoint {self._where}") from exc
        except openai.OpenAIError as exc:
            raise EmbeddingError(
                f"embedding endpoint {self._where} failed: {self._redact(str(exc))}"
            ) from exc
        except ValueError as exc:  # json.JSONDecodeError and friends
            raise EmbeddingError(
                f"embedding endpoint {self._where} answered with invalid JSON"
            ) from exc

    def _status_message(self, exc: Any) -> str:
        status = int(exc.status_code)
        detail = self._redact(error_detail(exc.body))[:_SNIPPET]
        message = f"embedding endpoint {self._where} answered HTTP {status}"
        if detail:
            message += f": {detail}"
        if status == 404:
            message += f" (does base_url end in /v1, and is {self._model!r} served there?)"
        elif status in (401, 403):
            message += " (check the api key)"
        return message

    def _check_dim(self, got: int) -> None:
        with self._lock:
            if self._dim is None:
                self._dim = got
                return
            expected = self._dim
        if got != expected:
            raise EmbeddingError(
                f"embedding endpoint {self._where} returned {got}-dimensional vectors for "
                f"{self.name}, expected {expected}"
            )

    def _redact(self, text: str) -> str:
        """Servers sometimes echo the key they rejected; never carry it into our errors."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text


def _check_settings(
    model: str, dim: int | None, timeout: float, batch_size: int, max_retries: int
) -> None:
    if not model:
        raise ValueError("model must not be empty")
    if dim is not None and dim < 1:
        raise ValueError(f"dim must be positive, got {dim}")
    if not timeout > 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if max_retries < 0:
        raise ValueError(f"max_retries must not be negative, got {max_retries}")


def _make_client(base_url: str, api_key: str | None, timeout: float, max_retries: int) -> OpenAI:
    try:
        from openai import OpenAI
    except ImportError as exc:
        raise EmbeddingError("the openai package is not installed") from exc
    return OpenAI(
        base_url=base_url.rstrip("/"),
        # Never None: the SDK would fall back to OPENAI_API_KEY. Without a key of ours the
        # placeholder satisfies the SDK and each request omits the Authorization header.
        api_key=api_key or _NO_KEY,
        timeout=timeout,
        max_retries=max_retries,
    )


def _parse_vectors(payload: Any, expected_rows: int, where: str) -> Vectors:
    """Check the answer's shape before trusting it: servers differ in how they fail."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise EmbeddingError(f"embedding endpoint {where} answered without a 'data' list")
    if len(data) != expected_rows:
        raise EmbeddingError(
            f"embedding endpoint {where} returned {len(data)} vectors for {expected_rows} texts"
        )
    rows = sorted(data, key=_index_of) if all(_index_of(d) >= 0 for d in data) else data
    try:
        matrix = np.array([row["embedding"] for row in rows], dtype=np.float64)
    except (KeyError, TypeError, ValueError) as exc:
        raise EmbeddingError(f"embedding endpoint {where} returned malformed vectors") from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        raise EmbeddingError(f"embedding endpoint {where} returned vectors of uneven length")
    if not np.isfinite(matrix).all():
        raise EmbeddingError(f"embedding endpoint {where} returned non-finite values")
    return matrix.astype(np.float32)


def _index_of(row: Any) -> int:
    index = row.get("index") if isinstance(row, dict) else None
    return index if isinstance(index, int) else -1


def _normalise(matrix: Vectors, where: str) -> Vectors:
    norms = np.linalg.norm(matrix.astype(np.float64), axis=1, keepdims=True)
    if (norms < 1e-12).any():
        raise EmbeddingError(f"embedding endpoint {where} returned a zero vector")
    unit: Vectors = (matrix / norms).astype(np.float32)
    return unit
