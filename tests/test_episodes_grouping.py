"""Episode grouping (``cognition/episodes.py``): the canonical segmentation in tables, the
incremental regrouping against it, and properties over any order of arrival (Hypothesis,
fake timestamps)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonic.cognition.episodes import (
    Existing,
    Region,
    Rules,
    Stamp,
    assign_ids,
    close_before,
    is_due,
    next_region,
    segment,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
RULES = Rules(gap=timedelta(minutes=10), max_span=timedelta(minutes=60))


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def stamps(*minutes: float) -> list[Stamp]:
    return [Stamp(at(m), seq) for seq, m in enumerate(minutes, start=1)]


def minutes_of(groups: Sequence[Sequence[Stamp]]) -> list[list[float]]:
    return [[(s.timestamp - T0).total_seconds() / 60 for s in g] for g in groups]


# ---- the canonical segmentation ------------------------------------------------------------


@pytest.mark.parametrize(
    ("minutes", "expected"),
    [
        ((), []),
        ((0,), [[0]]),
        ((0, 10), [[0, 10]]),  # exactly the gap: same episode
        ((0, 10.01), [[0], [10.01]]),  # just over it: a new one
        ((0, 5, 30, 35), [[0, 5], [30, 35]]),
        ((30, 0, 35, 5), [[0, 5], [30, 35]]),  # input order is irrelevant
        ((0, 0, 0), [[0, 0, 0]]),  # equal timestamps never split
        # a span of exactly max_span is allowed; a minute more starts a new episode
        (tuple(range(0, 61, 10)), [list(range(0, 61, 10))]),
        (tuple(range(0, 71, 10)), [list(range(0, 61, 10)), [70]]),
    ],
)
def test_segment(minutes: tuple[float, ...], expected: list[list[float]]) -> None:
    assert minutes_of(segment(stamps(*minutes), RULES)) == expected


def test_segment_max_span_table() -> None:
    # 0..117 step 9: the first episode starts at 0 and may reach 60 -> 0..54, the next
    # starts at 63 -> 63..117 (117 - 63 = 54 <= 60)
    groups = minutes_of(segment(stamps(*range(0, 118, 9)), RULES))
    assert groups == [list(range(0, 55, 9)), list(range(63, 118, 9))]


@pytest.mark.parametrize(
    ("start", "end", "now", "due"),
    [
        (0, 5, 15, False),  # 10 minutes after the end: not yet (more than gap is needed)
        (0, 5, 15.01, True),
        (0, 59, 60, False),
        (0, 59, 60.01, True),  # the span limit has passed
        (0, 5, 3, False),  # a memory from the "future" (clock skew) keeps it open
    ],
)
def test_is_due(start: float, end: float, now: float, due: bool) -> None:
    assert is_due(at(start), at(end), at(now), RULES) is due
    end_before, start_before = close_before(at(now), RULES)
    assert (at(end) < end_before or at(start) < start_before) is due


# ---- the incremental form --------------------------------------------------------------------


class ListSource:
    """Stored episodes in a dict (what ``store/episodes.py`` reads with SQL)."""

    def __init__(self, episodes: dict[str, Existing]) -> None:
        self.episodes = sorted(episodes.values(), key=lambda e: e.start)

    def last_starting_at_or_before(self, t: datetime) -> Existing | None:
        found = [e for e in self.episodes if e.start <= t]
        return found[-1] if found else None

    def starting_after(self, t: datetime) -> Iterator[Existing]:
        return (e for e in self.episodes if e.start > t)


class Simulation:
    """The episoder's loop over an in-memory store."""

    def __init__(self, rules: Rules = RULES) -> None:
        self.rules = rules
        self.episodes: dict[str, Existing] = {}
        self.ids = (f"e{n}" for n in itertools.count())
        self.regions: list[Region] = []

    def add(self, batch: Sequence[Stamp]) -> None:
        rest: Sequence[Stamp] = batch
        while rest:
            region = next_region(ListSource(self.episodes), rest, self.rules)
            self.regions.append(region)
            planned, removed = assign_ids(region, lambda: next(self.ids))
            for gone in removed:
                del self.episodes[gone]
            for p in planned:
                self.episodes[p.id] = Existing(p.id, p.stamps)
            rest = region.rest

    def groups(self) -> list[list[int]]:
        ordered = sorted(self.episodes.values(), key=lambda e: e.start)
        return [[s.seq for s in e.stamps] for e in ordered]


def seqs(groups: Sequence[Sequence[Stamp]]) -> list[list[int]]:
    return [[s.seq for s in g] for g in groups]


def test_a_late_memory_bridges_two_episodes_into_one_keeping_the_bigger_ones_id() -> None:
    sim = Simulation()
    sim.add(stamps(0, 5, 6))  # seqs 1..3
    sim.add([Stamp(at(20), 4)])  # 14 minutes later: a second episode
    assert len(sim.episodes) == 2
    first = next(i for i, e in sim.episodes.items() if e.stamps[0].seq == 1)
    sim.add([Stamp(at(13), 5)])  # within 10 minutes of both
    assert sim.groups() == [[1, 2, 3, 5, 4]]
    assert list(sim.episodes) == [first]  # the larger episode kept its id


def test_a_late_memory_earlier_than_an_episode_reshapes_the_max_span_cuts() -> None:
    sim = Simulation()
    sim.add(stamps(*range(10, 111, 5)))  # 10..110 every 5 min: cut at 10..70, 75..110
    assert minutes_of([e.stamps for e in sorted(sim.episodes.values(), key=lambda e: e.start)]) == [
        list(range(10, 71, 5)),
        list(range(75, 111, 5)),
    ]
    sim.add([Stamp(at(2), 100)])  # earlier than everything, within the gap
    expected = segment([*stamps(*range(10, 111, 5)), Stamp(at(2), 100)], RULES)
    assert sim.groups() == seqs(expected)
    assert minutes_of(expected)[0][0] == 2 and minutes_of(expected)[0][-1] == 60


def test_a_region_stops_where_the_stored_episodes_are_already_canonical() -> None:
    sim = Simulation()
    sim.add(stamps(0, 5, 30, 35, 60, 65))  # three episodes
    sim.regions.clear()
    sim.add([Stamp(at(7), 10)])  # joins the first; the other two are not touched
    assert len(sim.regions) == 1
    region = sim.regions[0]
    assert [e.stamps[0].seq for e in region.consumed] == [1]
    assert seqs(region.groups) == [[1, 2, 10]]


def test_pending_memories_far_apart_are_regrouped_region_by_region() -> None:
    sim = Simulation()
    sim.add(stamps(0, 100, 200))
    sim.regions.clear()
    sim.add([Stamp(at(101), 10), Stamp(at(1), 11), Stamp(at(500), 12)])
    assert len(sim.regions) == 3
    assert sim.groups() == [[1, 11], [2, 10], [3], [12]]


def test_assign_ids_keeps_ids_by_overlap_and_reports_the_absorbed() -> None:
    a = Existing("a", tuple(stamps(0, 1)))
    b = Existing("b", (Stamp(at(3), 3), Stamp(at(4), 4), Stamp(at(5), 5)))
    region = Region((a, b), (tuple(sorted([*a.stamps, *b.stamps])),), ())
    planned, removed = assign_ids(region, lambda: "new")
    assert [p.id for p in planned] == ["b"]  # b holds more of the merged episode
    assert planned[0].changed and not planned[0].created
    assert removed == ["a"]
    unchanged = Region((a,), (a.stamps,), ())
    planned, removed = assign_ids(unchanged, lambda: "new")
    assert (planned[0].id, planned[0].changed, removed) == ("a", False, [])
    fresh = Region((), (tuple(stamps(0)),), ())
    planned, _ = assign_ids(fresh, lambda: "new")
    assert (planned[0].id, planned[0].created) == ("new", True)


# ---- properties -----------------------------------------------------------------------------

# minutes over ~8 hours, with repeats; gap 10, max span 60: both rules matter
MINUTES = st.lists(st.integers(min_value=0, max_value=480), min_size=1, max_size=60)


@st.composite
def arrivals(draw: st.DrawFn) -> tuple[list[Stamp], list[list[Stamp]]]:
    """A fixed set of memories, and the same set arriving in a random order and in random
    batches."""
    minutes = draw(MINUTES)
    fixed = [Stamp(at(m), seq) for seq, m in enumerate(minutes, start=1)]
    order = draw(st.permutations(fixed))
    cuts = sorted(draw(st.sets(st.integers(1, max(len(order) - 1, 1)), max_size=8)))
    batches = [list(order[i:j]) for i, j in itertools.pairwise([0, *cuts, len(order)]) if i < j]
    return fixed, batches


@settings(max_examples=300, deadline=None)
@given(arrivals())
def test_any_order_of_arrival_gives_the_canonical_grouping(
    case: tuple[list[Stamp], list[list[Stamp]]],
) -> None:
    fixed, batches = case
    sim = Simulation()
    for batch in batches:
        sim.add(batch)
    assert sim.groups() == seqs(segment(fixed, RULES))


@settings(max_examples=300, deadline=None)
@given(arrivals())
def test_every_memory_in_exactly_one_episode_and_episodes_never_overlap(
    case: tuple[list[Stamp], list[list[Stamp]]],
) -> None:
    fixed, batches = case
    sim = Simulation()
    for batch in batches:
        sim.add(batch)
        members = [s.seq for e in sim.episodes.values() for s in e.stamps]
        assert len(members) == len(set(members))  # never twice, after every batch
    members = sorted(s.seq for e in sim.episodes.values() for s in e.stamps)
    assert members == sorted(s.seq for s in fixed)
    ordered = sorted(sim.episodes.values(), key=lambda e: e.start)
    for earlier, later in itertools.pairwise(ordered):
        assert earlier.end < later.start
    for episode in ordered:
        assert episode.end - episode.start <= RULES.max_span
        assert list(episode.stamps) == sorted(episode.stamps)
