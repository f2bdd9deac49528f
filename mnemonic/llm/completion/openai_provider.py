"""Chat completions from any OpenAI-compatible endpoint through the ``openai`` SDK.

Ollama, LM Studio, llama.cpp's server, vLLM and OpenAI itself all speak this dialect, so
one provider covers every local model server without extra dependencies. The SDK's own
retries are off (``max_retries=0``): the client's policy retries, so a Retry-After is
honoured once, not twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemonic.llm.completion.provider import (
    Message,
    ModelInfo,
    ProviderAnswer,
    ProviderError,
    kind_for_status,
    parse_retry_after,
)
from mnemonic.llm.http_errors import error_detail, redact_url

if TYPE_CHECKING:
    from openai import AsyncOpenAI

_NO_KEY = "no-key"


class OpenAIProvider:
    """One model at ``base_url`` (ending in ``/v1``, e.g. ``http://127.0.0.1:11434/v1``).

    ``api_key=None`` sends no ``Authorization`` header at all: local servers need none, and
    letting the SDK read ``OPENAI_API_KEY`` would hand a real key to any local server.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None) -> None:
        if not model:
            raise ValueError("model must not be empty")
        from openai import AsyncOpenAI

        self._model = model
        self._api_key = api_key
        self._where = redact_url(base_url)
        self._client: AsyncOpenAI = AsyncOpenAI(
            base_url=base_url.rstrip("/"), api_key=api_key or _NO_KEY, max_retries=0
        )

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(provider="openai", model=self._model, base_url=self._where)

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
        extra: dict[str, Any] = {}
        if schema is not None:
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema},
            }
        try:
            response = await self._client.chat.completions.create(
                model=self._model,
                messages=[{"role": m.role, "content": m.content} for m in messages],  # type: ignore[misc]
                max_tokens=max_tokens,
                temperature=temperature,
                timeout=timeout_s,
                extra_headers=self._headers(),
                **extra,
            )
        except Exception as exc:
            raise self._error(exc) from exc
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ProviderError("server", f"{self._where} answered without choices")
        choice = choices[0]
        usage = getattr(response, "usage", None)
        return ProviderAnswer(
            text=(choice.message.content if choice.message else None) or "",
            model=str(getattr(response, "model", "") or self._model),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=str(choice.finish_reason or ""),
        )

    async def list_models(self, timeout_s: float) -> list[str]:
        try:
            page = await self._client.models.list(timeout=timeout_s, extra_headers=self._headers())
        except Exception as exc:
            raise self._error(exc) from exc
        return sorted(str(m.id) for m in page.data)

    async def health(self, timeout_s: float) -> dict[str, Any]:
        try:
            models = await self.list_models(timeout_s)
        except ProviderError as exc:
            return {
                "reachable": exc.kind not in ("connect", "timeout"),
                "models": [],
                "error": exc.message,
            }
        return {"reachable": True, "models": models, "error": None}

    async def aclose(self) -> None:
        await self._client.close()

    def _headers(self) -> dict[str, Any]:
        import openai

        return {} if self._api_key else {"Authorization": openai.omit}

    def _error(self, exc: Exception) -> ProviderError:
        """The SDK's exception as a ProviderError (the timeout test comes first: the SDK's
        timeout error is a kind of connection error)."""
        import openai

        if isinstance(exc, ProviderError):
            return exc
        if isinstance(exc, openai.APITimeoutError):
            return ProviderError("timeout", f"{self._where} timed out")
        if isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc
            return ProviderError(
                "connect", f"cannot connect to {self._where}: {self._clean(str(cause))}"
            )
        if isinstance(exc, openai.APIStatusError):
            status = int(exc.status_code)
            headers = exc.response.headers
            retry_after = parse_retry_after(headers.get("retry-after"))
            if retry_after is None and headers.get("retry-after-ms"):
                ms = parse_retry_after(headers.get("retry-after-ms"))
                retry_after = ms / 1000 if ms is not None else None
            detail = self._clean(error_detail(exc.body))
            message = f"{self._where} answered HTTP {status}" + (f": {detail}" if detail else "")
            return ProviderError(
                kind_for_status(status), message, status=status, retry_after=retry_after
            )
        if isinstance(exc, openai.OpenAIError | ValueError):  # unreadable answer
            return ProviderError(
                "server", f"{self._where} answered unreadably: {type(exc).__name__}"
            )
        raise exc

    def _clean(self, text: str) -> str:
        """Servers sometimes echo the key they rejected; never carry it into a message."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text[:300]
