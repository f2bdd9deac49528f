"""What a completion provider does, and how it fails.

A provider makes exactly one request per ``complete`` call: no retries, no breaker, no
parsing beyond pulling the text and token counts out of the answer. The client
(``client.py``) owns the policy; keeping providers this thin is what lets the OpenAI SDK
and litellm sit behind the same retry, breaker and repair logic.

Failures are one exception type, :class:`ProviderError`, whose ``kind`` says what went
wrong in terms the policy needs (retry it? count it against the breaker? tell the user
the model name is wrong?), so no SDK exception class leaks past a provider.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Protocol

ErrorKind = Literal[
    "connect",  # nothing answers at the URL
    "timeout",  # the request took longer than its timeout
    "rate_limited",  # 429
    "server",  # 5xx, or an answer the SDK could not read
    "auth",  # 401/403
    "not_found",  # 404: usually the model name (or a base_url without /v1)
    "unsupported",  # 400/422: the server refused the request (e.g. response_format)
    "bad_request",  # any other 4xx
]

RETRYABLE: frozenset[str] = frozenset({"connect", "timeout", "rate_limited", "server"})


class ProviderError(Exception):
    """One failed request. ``message`` is safe to log (no key, no prompt)."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


@dataclass(frozen=True, slots=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class ProviderAnswer:
    """The text of one answer and what it cost (tokens as the server counted them; 0 when
    it did not say)."""

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = ""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    provider: str
    model: str
    base_url: str  # without credentials or query; "" when the provider picks it


class CompletionProvider(Protocol):
    """One model behind one endpoint."""

    @property
    def info(self) -> ModelInfo: ...

    async def complete(
        self,
        messages: list[Message],
        *,
        schema: dict[str, Any] | None,
        schema_name: str,
        max_tokens: int,
        temperature: float,
        timeout_s: float,
    ) -> ProviderAnswer:
        """One request. With ``schema`` the server is asked for that JSON shape through
        ``response_format``; without, the text is free (the prompt asks for JSON)."""
        ...

    async def list_models(self, timeout_s: float) -> list[str]:
        """The model names the endpoint offers (``/v1/models``); raises ProviderError."""
        ...

    async def health(self, timeout_s: float) -> dict[str, Any]:
        """Reachability: ``{"reachable": bool, "models": [...], "error": str | None}``."""
        ...

    async def aclose(self) -> None: ...


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header: a number of seconds, or an HTTP date.

    Negative, unreadable or absurd (over a day) values are ignored: a server's header must
    not park a task for longer than the deadline logic can reason about.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        parsed: float | None = float(text)
    except ValueError:
        parsed = _seconds_until(text)
    if parsed is None or math.isnan(parsed) or parsed < 0 or parsed > 86400:
        return None  # unreadable, negative or absurd
    seconds = parsed
    return seconds


def _seconds_until(http_date: str) -> float | None:
    from datetime import UTC, datetime
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(http_date)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def kind_for_status(status: int) -> ErrorKind:
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "server"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    if status in (400, 422):
        return "unsupported"
    return "bad_request"
