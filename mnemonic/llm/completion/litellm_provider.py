"""Other LLM providers (Anthropic, Gemini, Bedrock, ...) through ``litellm``, an optional
extra: ``pip install 'mnemonic[litellm]'``.

litellm is imported only when this provider is configured: it costs ~3 s and ~300 MB.
Before the import, its cost map is pinned to the copy inside the package
(``LITELLM_LOCAL_MODEL_COST_MAP``: otherwise it downloads one at import, which fails
offline and phones home) and its telemetry is turned off. The pin in pyproject.toml admits
one known-good release: 1.82.7, 1.82.8 and 1.107.0 were compromised on PyPI.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

from mnemonic.llm.completion.provider import (
    Message,
    ModelInfo,
    ProviderAnswer,
    ProviderError,
    kind_for_status,
    parse_retry_after,
)
from mnemonic.llm.http_errors import error_detail, redact_url

INSTALL_HINT = "pip install 'mnemonic[litellm]'"


class LitellmMissing(RuntimeError):
    """litellm is configured but not installed."""


def import_litellm() -> ModuleType:
    """litellm, quiet and offline; LitellmMissing with the install command when absent."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    try:
        import litellm  # type: ignore[import-not-found, unused-ignore]
    except ImportError as exc:
        raise LitellmMissing(
            f"llm.provider is litellm but litellm is not installed: {INSTALL_HINT}"
        ) from exc
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    module: ModuleType = litellm
    return module


class LitellmProvider:
    """``model`` in litellm's ``provider/model`` form (``anthropic/claude-3-5-haiku``)."""

    def __init__(self, model: str, api_key: str | None = None, base_url: str | None = None):
        if not model:
            raise ValueError("model must not be empty")
        self._litellm = import_litellm()
        self._model = model
        self._api_key = api_key
        self._base_url = base_url

    @property
    def info(self) -> ModelInfo:
        where = redact_url(self._base_url) if self._base_url else ""
        return ModelInfo(provider="litellm", model=self._model, base_url=where)

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
        kwargs: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "timeout": timeout_s,
            "num_retries": 0,
        }
        if self._api_key:
            kwargs["api_key"] = self._api_key
        if self._base_url:
            kwargs["api_base"] = self._base_url
        if schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": schema},
            }
        try:
            response = await self._litellm.acompletion(**kwargs)
        except Exception as exc:
            raise self._error(exc) from exc
        choice = response.choices[0]
        usage = getattr(response, "usage", None)
        return ProviderAnswer(
            text=str(getattr(choice.message, "content", "") or ""),
            model=str(getattr(response, "model", "") or self._model),
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=str(getattr(choice, "finish_reason", "") or ""),
        )

    async def list_models(self, timeout_s: float) -> list[str]:
        """litellm has no portable listing; the configured model is what it offers."""
        return [self._model]

    async def health(self, timeout_s: float) -> dict[str, Any]:
        return {"reachable": None, "models": [self._model], "error": None}

    async def aclose(self) -> None:
        return None

    def _error(self, exc: Exception) -> ProviderError:
        name = type(exc).__name__
        status = getattr(exc, "status_code", None)
        if "Timeout" in name:
            return ProviderError("timeout", f"{self._model} timed out")
        if "APIConnectionError" in name and not isinstance(status, int):
            return ProviderError("connect", f"cannot connect for {self._model}: {self._clean(exc)}")
        if isinstance(status, int) and status >= 400:
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None) or {}
            retry_after = parse_retry_after(headers.get("retry-after")) if headers else None
            detail = self._clean(error_detail(getattr(exc, "message", "") or str(exc)))
            return ProviderError(
                kind_for_status(status),
                f"{self._model}: HTTP {status}: {detail}",
                status=status,
                retry_after=retry_after,
            )
        return ProviderError("server", f"{self._model} failed: {name}: {self._clean(exc)}")

    def _clean(self, value: object) -> str:
        text = str(value)
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text[:300]
