"""The episoding agent: groups new memories into episodes, closes the ones nothing can
extend any more, describes them and announces each with ``EpisodeClosed``.

One cycle is bounded (``batches_per_cycle`` batches of ``batch_size`` memories, at most
``close_per_cycle`` episodes closed) and idempotent: memories already grouped are never
read again (the watermark), and a closed episode is not closed twice, so a second cycle
at the same time changes nothing. Descriptions use the LLM when one is available and the
heuristic otherwise (see ``cognition/episode_description.py``); an episode reshaped by a
late memory with a past timestamp is reopened and closed again by the next cycle.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from mnemonic.cognition.episode_description import (
    Description,
    Limits,
    MemberText,
    apply_answer,
    build_request,
    describe,
)
from mnemonic.cognition.episodes import Rules, is_due
from mnemonic.config import EpisodesConfig
from mnemonic.events.types import EpisodeClosed, Event
from mnemonic.llm.completion.base import Completer
from mnemonic.store.episodes import BatchResult, EpisodeRow, MemberBrief
from mnemonic.timeutil import new_id

log = logging.getLogger(__name__)

EVENT_MEMORY_IDS = 200  # ids carried by one EpisodeClosed (memory_count has the total)


class EpisodeStore(Protocol):
    """What the agent needs of ``store.episodes.SQLiteEpisodes``."""

    async def assign_batch(
        self, limit: int, rules: Rules, new_id: Callable[[], str], now: datetime
    ) -> BatchResult: ...

    async def due(self, now: datetime, rules: Rules, limit: int) -> list[str]: ...

    async def members(self, episode_id: str, limit: int) -> list[MemberText]: ...

    async def save_description(
        self, episode_id: str, description: Description, now: datetime, *, close: bool
    ) -> bool: ...

    async def get(self, episode_id: str) -> EpisodeRow | None: ...

    async def memories_of(self, episode_id: str, limit: int) -> list[MemberBrief]: ...

    async def counts(self) -> dict[str, int]: ...


def limits_of(cfg: EpisodesConfig) -> Limits:
    return Limits(
        summary_max_chars=cfg.summary_max_chars,
        title_max_chars=cfg.title_max_chars,
        max_concepts=cfg.max_concepts,
        max_files=cfg.max_files,
        max_commands=cfg.max_commands,
        llm_max_members=cfg.llm_max_members,
    )


class EpisodingAgent:
    """Run by the lead's scheduler (``run_cycle``), one cycle at a time."""

    name = "episoding"

    def __init__(
        self,
        store: EpisodeStore,
        publish: Callable[[Event], None],
        clock: Callable[[], datetime],
        config: EpisodesConfig,
        completer: Completer,
    ) -> None:
        self._store = store
        self._publish = publish
        self._clock = clock
        self._cfg = config
        self._completer = completer
        self._rules = Rules.of(config.gap_s, config.max_span_s)
        self._limits = limits_of(config)
        self._open = 0
        self._closed_total = 0
        self._described = {"llm": 0, "heuristic": 0}
        self._last_cycle: datetime | None = None

    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        now = self._clock()
        grouped = await self._group(now)
        touched = grouped.touched
        due = await self._store.due(now, self._rules, self._cfg.close_per_cycle)
        closing = set(due)
        for episode_id in touched:
            if episode_id not in closing:
                await self._describe_open(episode_id, now)
        by = {"llm": 0, "heuristic": 0}
        closed = 0
        for episode_id in due:
            described = await self._describe(episode_id, now, close=True, use_llm=True)
            if described is not None:
                closed += 1
                by[described] += 1
        counts = await self._store.counts()
        self._open = counts.get("open", 0)
        self._closed_total += closed
        for key, n in by.items():
            self._described[key] += n
        self._last_cycle = now
        return {
            "trigger": trigger,
            "assigned": grouped.taken,
            "episodes_created": grouped.created,
            "episodes_absorbed": grouped.removed,
            "episodes_touched": len(touched),
            "closed": closed,
            "described_llm": by["llm"],
            "described_heuristic": by["heuristic"],
            "open": self._open,
            # more memories after the watermark, or more episodes due than one cycle closes
            "backlog": grouped.more or len(due) >= self._cfg.close_per_cycle,
        }

    async def _group(self, now: datetime) -> BatchResult:
        """Up to ``batches_per_cycle`` batches; the totals (an episode absorbed by a later
        batch may be listed as touched: describing it finds nothing and skips it)."""
        taken = created = removed = 0
        touched: dict[str, None] = {}
        more = False
        for _ in range(self._cfg.batches_per_cycle):
            batch = await self._store.assign_batch(self._cfg.batch_size, self._rules, new_id, now)
            taken += batch.taken
            created += batch.created
            removed += batch.removed
            touched.update(dict.fromkeys(batch.touched))
            more = batch.more
            if not more:
                break
        return BatchResult(taken, tuple(touched), created, removed, more)

    async def _describe_open(self, episode_id: str, now: datetime) -> None:
        """A heuristic description for an episode still growing, so lists show what it is
        about; one already due (a later cycle closes it) is left for that cycle."""
        episode = await self._store.get(episode_id)
        if episode is None or is_due(episode.started_at, episode.ended_at, now, self._rules):
            return
        await self._describe(episode_id, now, close=False, use_llm=False)

    async def _describe(
        self, episode_id: str, now: datetime, *, close: bool, use_llm: bool
    ) -> str | None:
        """Describe one episode (and close it); returns who described it, or None when
        the episode is gone or was already closed."""
        episode = await self._store.get(episode_id)
        if episode is None:
            return None
        members = await self._store.members(episode_id, self._cfg.describe_max_members)
        if not members:
            return None
        # pure, but a thousand members is real work: off the event loop
        description = await asyncio.to_thread(describe, episode.project, members, self._limits)
        if use_llm and self._completer.available:
            request = build_request(episode.project, members, self._limits)
            answer = await self._completer.complete_json(request)
            description = apply_answer(answer, description, episode.project, members, self._limits)
        saved = await self._store.save_description(episode_id, description, now, close=close)
        if not saved:
            return None
        if close:
            ids = await self._store.memories_of(episode_id, EVENT_MEMORY_IDS)
            self._publish(
                EpisodeClosed(
                    episode_id=episode_id,
                    project=episode.project or None,
                    memory_ids=tuple(m.id for m in ids),
                    title=description.title,
                    memory_count=episode.memory_count,
                    started_at=episode.started_at,
                    ended_at=episode.ended_at,
                    described_by=description.described_by,
                )
            )
        return description.described_by

    def health(self) -> dict[str, Any]:
        return {
            "mode": self._completer.mode,
            "open_episodes": self._open,
            "closed_total": self._closed_total,
            "described_llm": self._described["llm"],
            "described_heuristic": self._described["heuristic"],
            "last_cycle_at": self._last_cycle.isoformat() if self._last_cycle else None,
        }
