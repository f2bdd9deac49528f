"""The one interface every agent uses to ask an LLM for a judgment.

Agents never see providers, retries or breakers: they call ``Completer.complete_json`` and
get a parsed JSON object that matched the schema, or ``None`` when there is no LLM, it is
unreachable, its breaker is open, or it kept answering badly. ``None`` always means "use
your heuristic"; it is never an error the caller must handle. Prompts are built only from
stored, already redacted text, so no secret reaches a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """One structured question. ``operation`` and ``agent`` label the ``llm_usage`` row
    (for example ``("encode", "enrichment")``, ``("supersession", "encoding")``)."""

    operation: str
    agent: str
    system: str
    user: str
    schema: dict[str, Any]  # JSON Schema of the expected object (type "object")
    max_tokens: int = 512
    temperature: float = 0.0
    schema_name: str = "answer"
    metadata: dict[str, str] = field(default_factory=dict)


class Completer(Protocol):
    """What agents depend on (implemented in ``llm/completion/client.py``)."""

    @property
    def available(self) -> bool:
        """True when a call may be tried now (configured and the breaker not open)."""
        ...

    @property
    def mode(self) -> str:
        """``llm`` or ``heuristic`` (health shows it per task)."""
        ...

    async def complete_json(self, request: CompletionRequest) -> dict[str, Any] | None:
        """The parsed, schema-valid answer, or None: use the heuristic."""
        ...


class NoCompleter:
    """No LLM configured: every task uses its heuristic, nothing is queued.

    ``reason`` says why when an LLM was configured but cannot be used (litellm missing)."""

    available = False
    mode = "heuristic"

    def __init__(self, reason: str | None = None, provider: str = "none") -> None:
        self.reason = reason
        self.provider = provider

    async def complete_json(self, request: CompletionRequest) -> dict[str, Any] | None:
        return None

    def status(self) -> dict[str, Any]:
        """The same shape as ``CompletionClient.status`` (``GET /api/v1/llm/status``)."""
        return {
            "configured": False,
            "provider": self.provider,
            "base_url": "",
            "model": "",
            "mode": self.mode,
            "json_mode": None,
            "schema_supported": None,
            "breaker": None,
            "calls": 0,
            "failures": 0,
            "skipped": 0,
            "rejected": 0,
            "in_flight": 0,
            "last_error": None,
            "reason": self.reason,
        }

    def health(self) -> dict[str, Any]:
        return self.status()

    async def aclose(self) -> None:
        return None
