"""From the ``llm`` config section to a provider and a ``Completer`` (used by the
composition root and by ``mnemonic llm test``, which talks to the model directly)."""

from __future__ import annotations

import logging
import os

from mnemonic.config import LlmConfig
from mnemonic.llm.completion.base import NoCompleter
from mnemonic.llm.completion.client import CompletionClient, UsageRecorder
from mnemonic.llm.completion.provider import CompletionProvider

log = logging.getLogger(__name__)

LlmClient = CompletionClient | NoCompleter


def build_provider(cfg: LlmConfig) -> CompletionProvider:
    """The configured provider; ``LitellmMissing`` (with the install command) when litellm
    is configured but absent. ``provider: none`` is not a provider: check it first."""
    api_key = os.environ.get(cfg.api_key_env) or None if cfg.api_key_env else None
    if cfg.provider == "litellm":
        from mnemonic.llm.completion.litellm_provider import LitellmProvider

        explicit_url = "base_url" in cfg.model_fields_set
        return LitellmProvider(cfg.model, api_key, cfg.base_url if explicit_url else None)
    if cfg.provider == "openai":
        from mnemonic.llm.completion.openai_provider import OpenAIProvider

        return OpenAIProvider(cfg.base_url, cfg.model, api_key)
    raise ValueError(f"no LLM provider configured (llm.provider: {cfg.provider})")


def build_completer(cfg: LlmConfig, usage: UsageRecorder | None) -> LlmClient:
    """``NoCompleter`` for ``provider: none``, and (with the reason in status) when the
    configured provider cannot be built: an LLM is an improvement, never a requirement."""
    if cfg.provider == "none":
        return NoCompleter()
    try:
        provider = build_provider(cfg)
    except (RuntimeError, ValueError) as exc:  # LitellmMissing is a RuntimeError
        log.error("LLM disabled, every task uses its heuristic: %s", exc)
        return NoCompleter(reason=str(exc), provider=cfg.provider)
    return CompletionClient(provider, cfg, usage)
