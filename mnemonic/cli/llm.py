"""``mnemonic llm status|usage|test``: what the daemon's LLM is doing, what it cost, and
one real round trip that says plainly what is wrong when it fails.

``status`` and ``usage`` ask the daemon. ``test`` talks to the configured model directly,
from the same configuration the daemon reads, so it works while the daemon is down (the
moment one usually wants it): one small JSON question, and on failure a diagnosis
("cannot connect to <url>: ...; is the server running?", "model 'x' not found; the server
offers: a, b", a rejected key, a timeout) with an exit code from ``exits.py``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.exits import (
    EX_CONFIG,
    EX_DATAERR,
    EX_OK,
    EX_TEMPFAIL,
    EX_UNAVAILABLE,
)
from mnemonic.cli.runtime import call, emit_json, emit_line, err, load
from mnemonic.config import LlmConfig

if TYPE_CHECKING:
    from mnemonic.llm.completion.provider import CompletionProvider, ProviderError

llm_app = typer.Typer(help="The LLM used for judgments: status, usage, a test round trip.")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON.")]

TEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "word": {"type": "string"}},
    "required": ["ok", "word"],
}
TEST_SYSTEM = "You are a connectivity check. Follow the format exactly."
TEST_USER = 'Answer with ok set to true and word set to "pong".'
MODELS_SHOWN = 20


@dataclass(slots=True)
class RoundTrip:
    ok: bool
    provider: str
    base_url: str
    model: str
    code: int = EX_OK
    latency_ms: float = 0.0
    answer: dict[str, Any] | None = None
    schema_supported: bool | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None  # the error class
    diagnosis: str = ""
    models: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "provider": self.provider,
            "base_url": self.base_url,
            "model": self.model,
            "latency_ms": round(self.latency_ms, 1),
            "answer": self.answer,
            "schema_supported": self.schema_supported,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "error": self.error,
            "diagnosis": self.diagnosis,
            "exit_code": self.code,
        }


def _failure(result: RoundTrip, error: str, diagnosis: str, code: int) -> RoundTrip:
    result.ok, result.error, result.diagnosis, result.code = False, error, diagnosis, code
    return result


async def round_trip(cfg: LlmConfig, timeout_s: float) -> RoundTrip:
    """One question to the configured model, diagnosed. Never raises for the model's or
    the endpoint's faults: they are the result."""
    from mnemonic.llm.completion.build import build_provider
    from mnemonic.llm.completion.litellm_provider import LitellmMissing

    result = RoundTrip(ok=False, provider=cfg.provider, base_url=cfg.base_url, model=cfg.model)
    if cfg.provider == "none":
        return _failure(
            result,
            "not_configured",
            "no LLM configured (llm.provider: none): set llm.provider to openai (any "
            "OpenAI-compatible server) or litellm, and llm.model, in config.yaml",
            EX_CONFIG,
        )
    try:
        provider = build_provider(cfg)
    except LitellmMissing as exc:
        return _failure(result, "not_installed", str(exc), EX_CONFIG)
    result.base_url = provider.info.base_url or cfg.base_url
    try:
        return await _ask(provider, cfg, timeout_s, result)
    finally:
        await provider.aclose()


async def _ask(
    provider: CompletionProvider, cfg: LlmConfig, timeout_s: float, result: RoundTrip
) -> RoundTrip:
    from mnemonic.llm.completion.provider import Message, ProviderError
    from mnemonic.llm.completion.structured import parse_answer, schema_instruction

    messages = [
        Message("system", TEST_SYSTEM + schema_instruction(TEST_SCHEMA)),
        Message("user", TEST_USER),
    ]
    use_schema = cfg.json_mode != "prompt"
    started = time.monotonic()
    while True:
        try:
            answer = await provider.complete(
                messages,
                schema=TEST_SCHEMA if use_schema else None,
                schema_name="check",
                max_tokens=64,
                temperature=0.0,
                timeout_s=timeout_s,
            )
            break
        except ProviderError as exc:
            if use_schema and cfg.json_mode == "auto" and exc.kind == "unsupported":
                use_schema, result.schema_supported = False, False
                continue
            result.latency_ms = (time.monotonic() - started) * 1000
            return await _diagnose(provider, cfg, timeout_s, result, exc)
    result.latency_ms = (time.monotonic() - started) * 1000
    if use_schema:
        result.schema_supported = True
    result.prompt_tokens, result.completion_tokens = answer.prompt_tokens, answer.completion_tokens
    value, problem, error_class = parse_answer(answer.text, TEST_SCHEMA)
    if value is None:
        hint = "" if cfg.json_mode == "prompt" else "; try llm.json_mode: prompt"
        return _failure(
            result,
            error_class,
            f"the model answered, but not with the JSON asked for ({problem}){hint}; "
            "mnemonic re-asks in that case, so it may still work",
            EX_DATAERR,
        )
    result.ok, result.answer = True, value
    result.diagnosis = f"{cfg.model} answered in {result.latency_ms:.0f} ms"
    return result


async def _diagnose(
    provider: CompletionProvider,
    cfg: LlmConfig,
    timeout_s: float,
    result: RoundTrip,
    exc: ProviderError,
) -> RoundTrip:
    """The failed request's kind as a sentence that names the fix."""
    url = result.base_url
    if exc.kind == "connect":
        detail = exc.message.split(": ", 1)[-1]
        return _failure(
            result,
            "connect",
            f"cannot connect to {url}: {detail}; is the server running?",
            EX_UNAVAILABLE,
        )
    if exc.kind == "timeout":
        return _failure(
            result,
            "timeout",
            f"{url} did not answer within {timeout_s:g} s; is the model still loading, or too "
            "large for this machine? (llm.timeout_s)",
            EX_TEMPFAIL,
        )
    if exc.kind == "auth":
        return _failure(
            result,
            "auth",
            f"{url} refused the API key (HTTP {exc.status}): put the key in the "
            f"{cfg.api_key_env} environment variable (llm.api_key_env)",
            EX_CONFIG,
        )
    if exc.kind in ("not_found", "unsupported", "bad_request"):
        offered = await _models(provider, timeout_s)
        if offered is not None and cfg.model not in offered:
            names = ", ".join(offered[:MODELS_SHOWN]) or "no models"
            more = (
                f" (and {len(offered) - MODELS_SHOWN} more)" if len(offered) > MODELS_SHOWN else ""
            )
            result.models = offered
            return _failure(
                result,
                "model_not_found",
                f"model '{cfg.model}' not found; the server offers: {names}{more}",
                EX_CONFIG,
            )
        if exc.kind == "not_found":
            return _failure(
                result, "not_found", f"{exc.message} (does llm.base_url end in /v1?)", EX_CONFIG
            )
        return _failure(result, exc.kind, exc.message, EX_DATAERR)
    return _failure(result, exc.kind, exc.message, EX_TEMPFAIL)


async def _models(provider: CompletionProvider, timeout_s: float) -> list[str] | None:
    from mnemonic.llm.completion.provider import ProviderError

    try:
        models: list[str] = await provider.list_models(timeout_s)
    except ProviderError:
        return None
    return models


# ---- commands -------------------------------------------------------------------------------


@llm_app.command("test")
def check_command(
    timeout: Annotated[
        float | None, typer.Option(min=0.1, help="Seconds to wait (default llm.timeout_s).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """One real round trip to the configured model (works with the daemon down)."""
    cfg, _paths = load()
    result = asyncio.run(round_trip(cfg.llm, timeout or cfg.llm.timeout_s))
    if as_json:
        emit_json(result.to_json())
    elif result.ok:
        emit_line(
            f"ok: {result.model} at {result.base_url or result.provider} answered "
            f"{result.answer} in {result.latency_ms:.0f} ms"
            f" (response_format json_schema: {_yes_no(result.schema_supported)})"
        )
    else:
        err.print(f"[red]llm test failed:[/red] {escape(result.diagnosis)}", highlight=False)
    if result.code != EX_OK:
        raise typer.Exit(result.code)


@llm_app.command("status")
def status_command(as_json: JsonFlag = False) -> None:
    """The daemon's LLM: configured, mode, breaker, calls and failures."""
    status = call("GET", "/api/v1/llm/status")
    if as_json:
        emit_json(status)
        return
    if not status["configured"]:
        emit_line(f"llm: not configured (provider {status['provider']}); mode heuristic")
        if status.get("reason"):
            emit_line(f"reason: {status['reason']}")
        return
    breaker = status["breaker"] or {}
    emit_line(f"llm: {status['provider']} {status['model']} at {status['base_url']}")
    emit_line(f"mode: {status['mode']} (json_mode {status['json_mode']})")
    line = f"breaker: {breaker.get('state')}"
    if breaker.get("state") == "open":
        line += f", next probe in {breaker.get('retry_in_s')} s"
    emit_line(line)
    emit_line(
        f"calls: {status['calls']}, failures: {status['failures']}, skipped: "
        f"{status['skipped']}, rejected: {status['rejected']}, in flight: {status['in_flight']}"
    )
    if status.get("last_error"):
        emit_line(f"last error: {status['last_error']}")


@llm_app.command("usage")
def usage_command(
    days: Annotated[int | None, typer.Option(min=1, help="Only the last N days.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """LLM calls, tokens and estimated cost by day, operation and model."""
    usage = call("GET", "/api/v1/llm/usage", **({"days": days} if days else {}))
    if as_json:
        emit_json(usage)
        return
    totals = usage["totals"]
    emit_line(
        f"calls: {totals['calls']} ({totals['failures']} failed), tokens: "
        f"{totals['prompt_tokens']} in / {totals['completion_tokens']} out, "
        f"cost: ${totals['cost_usd']:.4f}, latency avg: {totals['latency_ms_avg']:.0f} ms"
    )
    for title, key in (("by operation", "by_operation"), ("by model", "by_model")):
        if usage[key]:
            emit_line(f"{title}:")
            for group in usage[key]:
                emit_line(f"  {group['key']}: {group['calls']} calls, ${group['cost_usd']:.4f}")


def _yes_no(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no, prompt mode")


def register(app: typer.Typer) -> None:
    app.add_typer(llm_app, name="llm")
