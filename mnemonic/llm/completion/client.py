"""``CompletionClient``: the policy around one provider, implementing ``Completer``.

Every judgment (``complete_json``) is bounded four ways, so an LLM that is slow, down or
confused costs a task a bounded wait and then its heuristic, never a hang or a queue:

* a deadline over the whole judgment (every request, retry and repair);
* retries of transient failures (connection, timeout, 429, 5xx) with jittered backoff,
  waiting at least what a ``Retry-After`` header asks, and never past the deadline;
* a circuit breaker (``breaker.py``): after N failed judgments in a row calls are refused
  at once until a cool-down passes and one probe succeeds;
* a concurrency limit: at most ``max_concurrency`` judgments in flight; a caller waits at
  most ``max_wait_s`` for a slot (and only a few may wait), then gets None.

Structured output: ``response_format`` JSON schema where the server takes it (``auto``
learns when it does not), and always the strict parse -> validate -> repair loop of
``structured.py`` on the answer, so small local models that ignore ``response_format``
still work. One ``llm_usage`` row records each judgment that reached the provider.

Prompts are redacted again before they leave (a second line of defence: callers build
them only from stored, redacted text), and never logged above DEBUG.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from mnemonic.config import LlmConfig
from mnemonic.llm.completion.base import CompletionRequest
from mnemonic.llm.completion.breaker import CircuitBreaker
from mnemonic.llm.completion.prices import Price, estimate_cost, price_table
from mnemonic.llm.completion.provider import (
    CompletionProvider,
    Message,
    ProviderAnswer,
    ProviderError,
)
from mnemonic.llm.completion.structured import parse_answer, repair_instruction, schema_instruction
from mnemonic.redact import redact
from mnemonic.store.llm_usage import UsageRow
from mnemonic.timeutil import utcnow

log = logging.getLogger(__name__)

WAITERS_PER_SLOT = 4  # callers that may wait for a slot, per slot; more get None at once
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0


class UsageRecorder(Protocol):
    async def record(self, row: UsageRow) -> None: ...


def retry_delay(attempt: int, retry_after: float | None, rand: float) -> float:
    """Seconds before retry ``attempt`` (0-based). A server's Retry-After is honoured (plus
    up to 10% jitter, so callers told the same second do not return in lockstep);
    otherwise exponential backoff with equal jitter, between half and all of
    ``0.5 * 2**attempt`` seconds, capped at 8 s."""
    if retry_after is not None:
        return retry_after * (1.0 + 0.1 * rand)
    ceiling = min(BACKOFF_CAP_S, BACKOFF_BASE_S * (2.0**attempt))
    return ceiling / 2 + rand * ceiling / 2


@dataclass(slots=True)
class _Call:
    """What one judgment cost so far (summed over its requests)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None  # the last error class
    reached: bool = False  # some request got an answer from the server

    def add(self, answer: ProviderAnswer) -> None:
        self.reached = True
        self.prompt_tokens += answer.prompt_tokens
        self.completion_tokens += answer.completion_tokens


class _NoTime(Exception):
    """The deadline leaves no room for another request or wait."""


class CompletionClient:
    """See the module docstring. ``clock`` is monotonic seconds (breaker, deadline)."""

    def __init__(
        self,
        provider: CompletionProvider,
        cfg: LlmConfig,
        usage: UsageRecorder | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = utcnow,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.provider = provider
        self.cfg = cfg
        self._usage = usage
        self._clock = clock
        self._now = now
        self._sleep = sleep
        self._rand = rand
        self.breaker = CircuitBreaker(cfg.breaker_failures, cfg.breaker_cooldown_s, clock)
        self._slots = asyncio.Semaphore(cfg.max_concurrency)
        self._prices = price_table(prices_from_config(cfg.prices))
        self._schema_refused = False  # auto mode learned the server refuses response_format
        self._schema_accepted = False  # a request with response_format was answered
        self._waiting = 0
        self.in_flight = 0
        self.calls = 0  # judgments that reached the provider
        self.failures = 0  # of those, how many gave no usable answer
        self.skipped = 0  # refused by the open breaker
        self.rejected = 0  # no free slot in time
        self.last_error: str | None = None

    # -- Completer ---------------------------------------------------------------------

    @property
    def available(self) -> bool:
        return self.breaker.would_allow()

    @property
    def mode(self) -> str:
        return "llm" if self.available else "heuristic"

    async def complete_json(self, request: CompletionRequest) -> dict[str, Any] | None:
        if not self.breaker.would_allow():
            self.skipped += 1
            return None
        if self._waiting >= WAITERS_PER_SLOT * self.cfg.max_concurrency:
            self.rejected += 1
            return None
        if not await self._acquire():
            self.rejected += 1
            return None
        try:
            if not self.breaker.allow():  # opened while waiting, or another call probes
                self.skipped += 1
                return None
            self.in_flight += 1
            try:
                return await self._judge(request)
            finally:
                self.in_flight -= 1
        finally:
            self._slots.release()

    async def _acquire(self) -> bool:
        self._waiting += 1
        try:
            async with asyncio.timeout(self.cfg.max_wait_s):
                await self._slots.acquire()
            return True
        except TimeoutError:
            return False
        finally:
            self._waiting -= 1

    # -- one judgment ------------------------------------------------------------------

    async def _judge(self, request: CompletionRequest) -> dict[str, Any] | None:
        call = _Call()
        started = self._clock()
        result: dict[str, Any] | None = None
        transport_failed = False
        try:
            async with asyncio.timeout(self.cfg.deadline_s):
                result = await self._converse(request, call, started + self.cfg.deadline_s)
        except TimeoutError:
            call.error, transport_failed = "deadline", True
            self.last_error = f"no answer within the deadline of {self.cfg.deadline_s:g} s"
        except _NoTime:
            call.error, transport_failed = "deadline", True
            self.last_error = f"no answer within the deadline of {self.cfg.deadline_s:g} s"
        except ProviderError as exc:
            call.error, transport_failed = exc.kind, True
            self.last_error = exc.message
            log.warning("llm %s/%s failed: %s", request.agent, request.operation, exc.message)
        except Exception:
            log.exception("llm %s/%s: unexpected failure", request.agent, request.operation)
            call.error, transport_failed = "internal", True
        except BaseException:
            self.breaker.release()
            raise
        if transport_failed and not call.reached:
            self.breaker.failure()
        else:
            self.breaker.success()
        latency_ms = (self._clock() - started) * 1000
        self.calls += 1
        if result is None:
            self.failures += 1
        await self._record(request, call, latency_ms, success=result is not None)
        return result

    async def _converse(
        self, request: CompletionRequest, call: _Call, deadline: float
    ) -> dict[str, Any] | None:
        """Ask, check, and re-ask with the problem named, ``repair_attempts`` times."""
        system = redact(request.system).text + schema_instruction(request.schema)
        messages = [Message("system", system), Message("user", redact(request.user).text)]
        for _round in range(1 + self.cfg.repair_attempts):
            answer = await self._ask(request, messages, call, deadline)
            value, problem, error_class = parse_answer(answer.text, request.schema)
            if value is not None:
                call.error = None
                return value
            call.error = error_class
            self.last_error = f"unusable answer ({error_class})"
            log.info(
                "llm %s/%s: unusable answer (%s), %s",
                request.agent,
                request.operation,
                error_class,
                "asking again" if _round < self.cfg.repair_attempts else "giving up",
            )
            log.debug("llm answer was: %r; problem: %s", answer.text[:500], problem)
            messages = [
                *messages,
                Message("assistant", redact(answer.text).text),
                Message("user", repair_instruction(problem)),
            ]
        return None

    async def _ask(
        self, request: CompletionRequest, messages: list[Message], call: _Call, deadline: float
    ) -> ProviderAnswer:
        """One answer, retrying transient failures; ``auto`` drops ``response_format``
        for good when the server refuses it."""
        while True:
            use_schema = self.cfg.json_mode == "schema" or (
                self.cfg.json_mode == "auto" and not self._schema_refused
            )
            try:
                answer = await self._request_with_retries(
                    request, messages, call, deadline, use_schema
                )
            except ProviderError as exc:
                if not (use_schema and self.cfg.json_mode == "auto" and exc.kind == "unsupported"):
                    raise
                self._schema_refused = True
                log.info("llm server refused response_format json_schema; using prompt mode")
                continue
            self._schema_accepted = self._schema_accepted or use_schema
            return answer

    async def _request_with_retries(
        self,
        request: CompletionRequest,
        messages: list[Message],
        call: _Call,
        deadline: float,
        use_schema: bool,
    ) -> ProviderAnswer:
        attempt = 0
        while True:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise _NoTime
            call.requests += 1
            try:
                answer = await self.provider.complete(
                    messages,
                    schema=request.schema if use_schema else None,
                    schema_name=request.schema_name,
                    max_tokens=request.max_tokens,
                    temperature=request.temperature,
                    timeout_s=min(self.cfg.timeout_s, remaining),
                )
            except ProviderError as exc:
                call.error = exc.kind
                if not exc.retryable or attempt >= self.cfg.max_retries:
                    raise
                delay = retry_delay(attempt, exc.retry_after, self._rand())
                if self._clock() + delay >= deadline:
                    raise
                log.info(
                    "llm request failed (%s), retry %d in %.2f s", exc.kind, attempt + 1, delay
                )
                await self._sleep(delay)
                attempt += 1
                continue
            call.add(answer)
            return answer

    async def _record(
        self, request: CompletionRequest, call: _Call, latency_ms: float, *, success: bool
    ) -> None:
        if self._usage is None or call.requests == 0:
            return
        model = self.provider.info.model
        row = UsageRow(
            at=self._now(),
            operation=request.operation,
            agent=request.agent,
            provider=self.provider.info.provider,
            model=model,
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
            latency_ms=latency_ms,
            success=success,
            error=None if success else call.error,
            cost_usd=estimate_cost(model, call.prompt_tokens, call.completion_tokens, self._prices),
        )
        try:
            await self._usage.record(row)
        except Exception:  # bookkeeping must never fail a judgment
            log.warning("recording llm usage failed", exc_info=True)

    # -- status ------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        info = self.provider.info
        return {
            "configured": True,
            "provider": info.provider,
            "base_url": info.base_url,
            "model": info.model,
            "mode": self.mode,
            "json_mode": self.cfg.json_mode,
            "schema_supported": False if self._schema_refused else self._schema_accepted or None,
            "breaker": {
                "state": self.breaker.state,
                "consecutive_failures": self.breaker.consecutive_failures,
                "times_opened": self.breaker.times_opened,
                "retry_in_s": round(self.breaker.retry_in(), 1),
            },
            "calls": self.calls,
            "failures": self.failures,
            "skipped": self.skipped,
            "rejected": self.rejected,
            "in_flight": self.in_flight,
            "last_error": self.last_error,
            "reason": None,
        }

    def health(self) -> dict[str, Any]:
        return self.status()

    async def aclose(self) -> None:
        await self.provider.aclose()


def prices_from_config(prices: Mapping[str, Any]) -> dict[str, Price]:
    return {k: Price(v.input, v.output) for k, v in prices.items()}
