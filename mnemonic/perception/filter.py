"""The heuristic filter: which watcher events are worth becoming memories.

Stages, in order; the first that says no decides, and the drop is counted by reason:

1. ``excluded_path``: the event's path or working directory is under a runtime exclusion;
2. size bounds: ``too_short`` / ``too_long`` (a metadata-only event is measured, and
   scored, by its metadata text: ``modified /src/logo.png bytes=20480``);
3. the deny-list: ``denied_pattern`` when a configured regex matches the text or a glob
   matches the path (a glob without ``/`` matches the file name);
4. the frequency limit: ``too_frequent`` (see ``frequency``);
5. the content score against the threshold of the event's source: ``low_score``
   (see ``score``; ``git:commit`` overrides ``git``, which overrides ``min_score``);
6. the optional LLM gate, a hook the daemon may set (``decide`` only): ``llm_rejected``.

Accepted events carry their score and their resolved project. A path of a watcher listed
in ``auto_exclude_watchers`` that is rejected ``auto_exclude_per_hour`` times within an hour
(or a folder with that many rejections over at least three files) becomes a runtime
exclusion, and ``on_auto_exclude(path, reason)`` tells the daemon so it can persist it and
publish an event. The filter does no I/O beyond the project resolver's cached ``.git``
lookups, and never raises on an event.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from mnemonic.config import FilterConfig
from mnemonic.events.types import WatcherEvent
from mnemonic.perception.exclusions import RejectionTracker, RuntimeExclusions
from mnemonic.perception.frequency import FrequencyLimiter, content_key
from mnemonic.perception.projects import ProjectResolver
from mnemonic.perception.score import Score, compile_keywords, score_text

log = logging.getLogger(__name__)

_HOUR_S = 3600.0
_METADATA_TEXT_CHARS = 2000


class DropReason(StrEnum):
    TOO_SHORT = "too_short"
    TOO_LONG = "too_long"
    DENIED_PATTERN = "denied_pattern"
    TOO_FREQUENT = "too_frequent"
    LOW_SCORE = "low_score"
    EXCLUDED_PATH = "excluded_path"
    LLM_REJECTED = "llm_rejected"


@dataclass(frozen=True, slots=True)
class Accept:
    event: WatcherEvent
    score: float
    project: str | None


@dataclass(frozen=True, slots=True)
class Drop:
    reason: DropReason
    detail: str | None = None  # the pattern, exclusion or score behind it (never content)


Decision = Accept | Drop
LlmGate = Callable[[WatcherEvent, float], Awaitable[bool]]
OnAutoExclude = Callable[[str, str], None]


def event_text(event: WatcherEvent) -> str:
    """The text the filter judges: the content, or for a metadata-only event its kind,
    path and scalar metadata."""
    if not event.metadata_only:
        return event.content
    parts = [event.kind, event.path or ""]
    for key, value in _items(event.metadata):
        if isinstance(value, str | int | float | bool):
            parts.append(f"{key}={value}")
    return " ".join(p for p in parts if p)[:_METADATA_TEXT_CHARS]


def _items(metadata: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return list(metadata.items())[:50] if isinstance(metadata, Mapping) else []


class HeuristicFilter:
    """The pipeline above, with its counters, runtime exclusions and frequency memory."""

    def __init__(
        self,
        config: FilterConfig,
        *,
        resolver: ProjectResolver | None = None,
        exclusions: RuntimeExclusions | None = None,
        clock: Callable[[], float] = time.monotonic,
        llm_gate: LlmGate | None = None,
        on_auto_exclude: OnAutoExclude | None = None,
        home: str | None = None,
    ) -> None:
        self.config = config
        self.exclusions = exclusions if exclusions is not None else RuntimeExclusions()
        self.llm_gate = llm_gate
        self._resolver = resolver or ProjectResolver(home=home)
        self._clock = clock
        self._on_auto_exclude = on_auto_exclude
        self._deny = [re.compile(p) for p in config.deny_patterns]
        self._deny_paths = [os.path.expanduser(g) for g in config.deny_paths]
        self._keywords = compile_keywords(config.keywords)
        self._frequency = FrequencyLimiter(
            config.frequency_max, config.frequency_window_s, config.frequency_max_keys
        )
        self._rejections = RejectionTracker(
            config.auto_exclude_per_hour,
            _HOUR_S,
            min_files=config.auto_exclude_min_files,
            home=home,
        )
        self._auto_watchers = frozenset(config.auto_exclude_watchers)
        self._dropped: Counter[str] = Counter()
        self._counts = Counter({"seen": 0, "accepted": 0, "auto_excluded": 0, "llm_errors": 0})

    # --- decisions ----------------------------------------------------------------------------

    def check(self, event: WatcherEvent) -> Decision:
        """Every stage but the LLM gate, counted. Use ``decide`` when a gate is set."""
        self._counts["seen"] += 1
        decision = self._stages(event)
        self._count(event, decision)
        return decision

    async def decide(self, event: WatcherEvent) -> Decision:
        """``check``, then the LLM gate (when set) for an accepted event. A gate that
        fails lets the event through: losing a memory is worse than keeping a dull one."""
        decision = self.check(event)
        if self.llm_gate is None or not isinstance(decision, Accept):
            return decision
        try:
            keep = await self.llm_gate(event, decision.score)
        except Exception as exc:  # noqa: BLE001 - the hook is the daemon's code, not ours
            self._counts["llm_errors"] += 1
            log.warning("LLM gate failed (%s); keeping the event", type(exc).__name__)
            return decision
        if keep:
            return decision
        self._counts["accepted"] -= 1
        drop = Drop(DropReason.LLM_REJECTED)
        self._count(event, drop)
        return drop

    def _stages(self, event: WatcherEvent) -> Decision:
        cfg = self.config
        for where in (event.path, event.cwd):
            excluded = self.exclusions.match(where) if where else None
            if excluded is not None:
                return Drop(DropReason.EXCLUDED_PATH, excluded.path)
        text = event_text(event)
        if len(text.strip()) < cfg.min_chars:
            return Drop(DropReason.TOO_SHORT)
        if len(text) > cfg.max_chars:
            return Drop(DropReason.TOO_LONG)
        denied = self._denied(text, event.path)
        if denied is not None:
            return Drop(DropReason.DENIED_PATTERN, denied)
        key = content_key(event.watcher, event.kind, event.path, text)
        if not self._frequency.allow(key, self._clock()):
            return Drop(DropReason.TOO_FREQUENT)
        score = self.score(text)
        threshold = self.threshold(event.watcher, event.kind)
        if score.value < threshold:
            return Drop(DropReason.LOW_SCORE, f"{score.value:.2f} < {threshold:.2f}")
        project = self._resolver.resolve(path=event.path, cwd=event.cwd, project=event.project)
        return Accept(event, score.value, project)

    def score(self, text: str) -> Score:
        cfg = self.config
        return score_text(
            text, self._keywords, keyword_cap=cfg.keyword_cap, max_chars=cfg.score_max_chars
        )

    def threshold(self, watcher: str, kind: str) -> float:
        by_source = self.config.min_score_by_source
        found = by_source.get(f"{watcher}:{kind}", by_source.get(watcher))
        return self.config.min_score if found is None else found

    def _denied(self, text: str, path: str | None) -> str | None:
        for pattern in self._deny:
            if pattern.search(text):
                return pattern.pattern
        if path:
            name = os.path.basename(path)
            for glob in self._deny_paths:
                target = path if "/" in glob else name
                if fnmatch.fnmatchcase(target, glob):
                    return glob
        return None

    # --- counting and auto-exclusion -------------------------------------------------------------

    def _count(self, event: WatcherEvent, decision: Decision) -> None:
        if isinstance(decision, Accept):
            self._counts["accepted"] += 1
            return
        self._dropped[decision.reason.value] += 1
        if decision.reason is DropReason.EXCLUDED_PATH or not event.path:
            return
        if event.kind == "log_appended" and decision.reason is DropReason.LOW_SCORE:
            # a log is judged by what was just appended: a quiet stretch of INFO lines is
            # no evidence that the errors it will write later are noise
            return
        if event.watcher not in self._auto_watchers:
            return
        target = self._rejections.record(event.path, self._clock())
        if target is not None:
            self._auto_exclude(target, decision.reason)

    def _auto_exclude(self, path: str, reason: DropReason) -> None:
        if self.exclusions.match(path) is not None:
            return
        entry = self.exclusions.add(path, f"auto:{reason.value}")
        self._counts["auto_excluded"] += 1
        log.warning("excluding %s: it keeps producing rejected events (%s)", path, reason.value)
        if self._on_auto_exclude is not None:
            try:
                self._on_auto_exclude(entry.path, entry.reason)
            except Exception:  # the callback must not break filtering
                log.exception("on_auto_exclude callback failed for %s", entry.path)

    def stats(self) -> dict[str, Any]:
        """Counters for ``/api/v1/stats``: events seen and accepted, drops by reason
        (every reason present, zeros included), exclusions and frequency keys held."""
        return {
            "seen": self._counts["seen"],
            "accepted": self._counts["accepted"],
            "dropped": {reason.value: self._dropped[reason.value] for reason in DropReason},
            "auto_excluded": self._counts["auto_excluded"],
            "llm_errors": self._counts["llm_errors"],
            "exclusions": len(self.exclusions),
            "frequency_keys": len(self._frequency),
        }
