"""Cron-style schedules ("0 3 * * *": nightly at 03:00 UTC) for the background agents.

Only the expression parser and next-fire computation of ``apscheduler`` 3.x are used
(``CronTrigger``), never its scheduler: periodic work runs through the daemon's own anyio
loops. Times are UTC, so a schedule means the same on every machine and across DST.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=32)
def parse_cron(expression: str) -> Any:
    """The ``CronTrigger`` of a five-field crontab expression (minute hour day month
    weekday); ``ValueError`` saying what is wrong for a bad one."""
    from apscheduler.triggers.cron import CronTrigger

    text = expression.strip()
    if not text:
        raise ValueError("empty cron expression")
    try:
        return CronTrigger.from_crontab(text, timezone=UTC)
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"invalid cron expression {expression!r}: {exc}") from None


def next_fire(expression: str, now: datetime) -> datetime | None:
    """The first time strictly after ``now`` that ``expression`` names (UTC), or None
    when it never fires again. Pure: the scheduler passes its own clock's ``now``."""
    trigger = parse_cron(expression)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    # apscheduler returns a time >= now; a schedule firing "now" must not fire twice
    after = now.astimezone(UTC).replace(microsecond=0)
    fire = trigger.get_next_fire_time(None, after)
    if fire is not None and fire <= now:
        fire = trigger.get_next_fire_time(fire, fire + timedelta(seconds=1))
    return fire.astimezone(UTC) if fire is not None else None
