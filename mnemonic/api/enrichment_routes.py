"""``POST /api/v1/reencode``: queue memories encoded without an LLM for LLM encoding.

After an LLM outage (or when one is configured for the first time) memories stored in the
meantime carry only their heuristic encoding. This opt-in route queues those stored since
a time (an ISO timestamp, or a duration back from now such as ``7d``); the enrichment
agent works through the queue within its hourly budget. 202 with how many were queued;
409 when no LLM is configured, since nothing could ever work through the queue.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated, Protocol

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemonic.api import responses as r
from mnemonic.api.routes import invalid, parse
from mnemonic.store.enrichment import MAX_QUEUE, Queued
from mnemonic.timeutil import ensure_utc

_DURATION_RE = re.compile(r"(\d{1,6})\s*(s|m|h|d|w)", re.IGNORECASE)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MAX_BACK = timedelta(days=3650)


def parse_since(text: str, now: datetime) -> datetime:
    """A start time from ``7d``, ``12h``, ``30m``, ``90s``, ``2w`` (back from ``now``) or
    an ISO 8601 time (a time without zone is UTC). Raises ValueError with a readable
    message."""
    value = text.strip()
    match = _DURATION_RE.fullmatch(value)
    if match:
        back = timedelta(seconds=int(match.group(1)) * _UNIT_S[match.group(2).lower()])
        return now - min(back, MAX_BACK)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            "must be a duration such as 7d, 12h, 30m (s, m, h, d, w) or an ISO 8601 time"
        ) from None
    return ensure_utc(when)


class ReencodeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    since: Annotated[
        str,
        Field(
            min_length=1,
            max_length=64,
            description="Memories stored since this time: a duration back from now "
            "(7d, 12h, 30m) or an ISO 8601 time.",
        ),
    ]
    limit: Annotated[int, Field(ge=1, le=MAX_QUEUE, strict=True)] = 500


class ReencodeQueued(BaseModel):
    """How many memories were queued for LLM encoding."""

    model_config = ConfigDict(extra="forbid")

    queued: r.Count = Field(description="Memories newly queued by this request.")
    queue: r.Count = Field(description="Memories waiting in the queue now.")
    since: datetime
    limit: int


class Reencoder(Protocol):
    """What the route needs (the enrichment agent)."""

    @property
    def llm_configured(self) -> bool: ...

    async def reencode(self, since: datetime, limit: int) -> Queued: ...


def build_enrichment_routes(reencoder: Reencoder, clock: Callable[[], datetime]) -> list[Route]:
    async def reencode(request: Request) -> Response:
        body = await parse(request, ReencodeBody)
        try:
            since = parse_since(body.since, clock())
        except ValueError as exc:
            raise invalid([{"field": "body.since", "message": str(exc)}]) from None
        if not reencoder.llm_configured:
            message = (
                "no LLM is configured (llm.provider is none), so nothing could re-encode "
                "these memories; configure the llm section first"
            )
            return JSONResponse({"error": message, "status": 409}, status_code=409)
        queued = await reencoder.reencode(since, body.limit)
        answer = {
            "queued": queued.added,
            "queue": queued.size,
            "since": since.isoformat(),
            "limit": body.limit,
        }
        return JSONResponse(answer, status_code=202)

    return [Route("/api/v1/reencode", reencode, methods=["POST"])]
