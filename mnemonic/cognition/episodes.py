"""Grouping memories into episodes: pure, clock-injected, independent of arrival order.

An episode is a stretch of work in one project. Memories are grouped by their *own*
timestamps (an import or a benchmark writes last month's memories today), so the grouping
of a fixed set of timestamps is defined without reference to when they arrived: the
**canonical segmentation** of a project's memories sorted by time starts a new episode at
a memory that comes more than ``gap`` after the previous one, or more than ``max_span``
after the first memory of the current episode. Episodes of a project therefore never
overlap, and each spans at most ``max_span``.

The episoder keeps the stored episodes equal to that segmentation as memories arrive in
any order, without re-reading a project's whole history each time. Greedy segmentation is
decided left to right, so an episode boundary depends only on the memories before it;
adding memories at time ``t`` can only change episodes from the one that reaches ``t``
onwards, and only until the new segmentation starts an episode exactly where a stored one
starts (after that point nothing changed, so every later episode is the same).
:func:`next_region` finds that stretch (a *region*) for the earliest pending memory;
:func:`assign_ids` keeps the stored ids of the episodes it reshapes. The caller writes a
region, then asks for the next one, until nothing is pending.

An episode is *closed* once nothing can extend it in real time: ``now - end > gap``, or
its span limit has passed (``now - start > max_span``). A late memory with a past
timestamp can still join or reshape a closed episode; it is then reopened and closed (and
described) again by the next cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol


@dataclass(frozen=True, slots=True, order=True)
class Stamp:
    """A memory as grouping sees it: when it happened, and its key."""

    timestamp: datetime
    seq: int


@dataclass(frozen=True, slots=True)
class Rules:
    gap: timedelta
    max_span: timedelta

    @classmethod
    def of(cls, gap_s: float, max_span_s: float) -> Rules:
        return cls(timedelta(seconds=gap_s), timedelta(seconds=max_span_s))


@dataclass(frozen=True, slots=True)
class Existing:
    """A stored episode and its members, sorted by time."""

    id: str
    stamps: tuple[Stamp, ...]

    @property
    def start(self) -> datetime:
        return self.stamps[0].timestamp

    @property
    def end(self) -> datetime:
        return self.stamps[-1].timestamp


class EpisodeSource(Protocol):
    """The stored episodes of one project, read lazily (the store implements it over SQL,
    tests over a list). Episodes of a project never overlap, so "by start" is a total
    order."""

    def last_starting_at_or_before(self, t: datetime) -> Existing | None: ...

    def starting_after(self, t: datetime) -> Iterator[Existing]:
        """Episodes starting strictly after ``t``, earliest first."""
        ...


@dataclass(frozen=True, slots=True)
class Region:
    """Stored episodes to replace by new groups (the canonical segmentation of their
    members and the pending memories among them); ``rest`` is still pending."""

    consumed: tuple[Existing, ...]
    groups: tuple[tuple[Stamp, ...], ...]
    rest: tuple[Stamp, ...]


def breaks(prev: Stamp, start: Stamp, nxt: Stamp, rules: Rules) -> bool:
    """Does ``nxt`` start a new episode after ``prev``, in one that started at ``start``?"""
    return (
        nxt.timestamp - prev.timestamp > rules.gap
        or nxt.timestamp - start.timestamp > rules.max_span
    )


def segment(stamps: Iterable[Stamp], rules: Rules) -> list[tuple[Stamp, ...]]:
    """The canonical segmentation (see the module docstring) of any set of memories."""
    groups: list[tuple[Stamp, ...]] = []
    current: list[Stamp] = []
    for stamp in sorted(stamps):
        if current and breaks(current[-1], current[0], stamp, rules):
            groups.append(tuple(current))
            current = []
        current.append(stamp)
    if current:
        groups.append(tuple(current))
    return groups


def next_region(source: EpisodeSource, pending: Sequence[Stamp], rules: Rules) -> Region:
    """The region the earliest pending memory reshapes (``pending`` must not be empty).

    It starts at the stored episode that reaches the earliest pending memory within
    ``gap`` (that episode's start is a canonical boundary), or at the memory itself when
    none does, and walks forward merging stored episodes and pending memories until a new
    episode would begin exactly at a stored episode's start with no pending memory before
    it: from there on the stored episodes are already canonical.
    """
    todo = sorted(pending)
    first = todo[0]
    consumed: list[Existing] = []
    before = source.last_starting_at_or_before(first.timestamp)
    if before is not None and first.timestamp <= before.end:
        # inside a stored episode: it only grows (no gap widens, its span and boundaries
        # stay), the common case of a late memory; no segmentation needed
        inside = [p for p in todo if p.timestamp <= before.end]
        grown = tuple(sorted((*before.stamps, *inside)))
        return Region((before,), (grown,), tuple(todo[len(inside) :]))
    if before is not None and before.end + rules.gap >= first.timestamp:
        consumed.append(before)
        after = source.starting_after(before.start)
    else:
        after = source.starting_after(first.timestamp)
    upcoming = next(after, None)
    members = list(consumed[0].stamps) if consumed else []
    taken = 0  # pending memories merged so far
    while True:
        # the next stored episode joins while a pending memory precedes its start or the
        # segmentation has not yet settled on a boundary at its start
        if upcoming is None:
            members += todo[taken:]
            taken = len(todo)
            break
        pending_first = taken < len(todo) and todo[taken].timestamp <= upcoming.start
        if pending_first:
            members.append(todo[taken])
            taken += 1
            continue
        # no pending memory before ``upcoming``: does the segmentation so far start a new
        # episode at its first memory? Then the region ends here.
        groups = segment(members, rules)
        last = groups[-1] if groups else ()
        if not last or breaks(last[-1], last[0], upcoming.stamps[0], rules):
            break
        consumed.append(upcoming)
        members += upcoming.stamps
        upcoming = next(after, None)
    return Region(tuple(consumed), tuple(segment(members, rules)), tuple(todo[taken:]))


@dataclass(frozen=True, slots=True)
class Planned:
    """One episode of a region after regrouping: its id (kept from the stored episode it
    overlaps most, else new), its members, and whether its membership changed."""

    id: str
    stamps: tuple[Stamp, ...]
    created: bool
    changed: bool
    added: tuple[int, ...] = ()  # seqs that were not members of this episode before

    @property
    def start(self) -> datetime:
        return self.stamps[0].timestamp

    @property
    def end(self) -> datetime:
        return self.stamps[-1].timestamp


def assign_ids(region: Region, new_id: Callable[[], str]) -> tuple[list[Planned], list[str]]:
    """Ids for the region's groups, and the stored ids no group keeps (to delete).

    Each stored episode gives its id to the group holding most of its members (ties: the
    earlier group), so an episode that only grew keeps its id and its description.
    """
    owner: dict[int, int] = {}  # seq -> index of its group
    for index, group in enumerate(region.groups):
        for stamp in group:
            owner[stamp.seq] = index
    claims: list[tuple[int, int, str]] = []  # (-overlap, group, id)
    for old in region.consumed:
        counts: dict[int, int] = {}
        for stamp in old.stamps:
            at = owner.get(stamp.seq)
            if at is not None:
                counts[at] = counts.get(at, 0) + 1
        claims += [(-n, g, old.id) for g, n in counts.items()]
    given: dict[int, str] = {}
    used: set[str] = set()
    for _, index, old_id in sorted(claims):
        if index not in given and old_id not in used:
            given[index] = old_id
            used.add(old_id)
    before = {old.id: {s.seq for s in old.stamps} for old in region.consumed}
    planned: list[Planned] = []
    for index, group in enumerate(region.groups):
        kept = given.get(index)
        seqs = {s.seq for s in group}
        if kept is None:
            added = tuple(s.seq for s in group)
            planned.append(Planned(new_id(), group, created=True, changed=True, added=added))
        else:
            added = tuple(s.seq for s in group if s.seq not in before[kept])
            changed = before[kept] != seqs
            planned.append(Planned(kept, group, created=False, changed=changed, added=added))
    removed = [old.id for old in region.consumed if old.id not in used]
    return planned, removed


def is_due(start: datetime, end: datetime, now: datetime, rules: Rules) -> bool:
    """Can nothing extend this episode in real time any more?"""
    return now - end > rules.gap or now - start > rules.max_span


def close_before(now: datetime, rules: Rules) -> tuple[datetime, datetime]:
    """(end bound, start bound): an open episode is due when its end is before the first
    or its start before the second (the SQL form of :func:`is_due`)."""
    return now - rules.gap, now - rules.max_span
