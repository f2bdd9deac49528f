"""Counts over every memory (``/projects``, ``/stats``, ``/timeline``) taken from the recall
index's columns (``app/aggregates.py``): equal to the SQL answers, current right after each
write, and from SQL while the index is not ready."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import numpy as np
import pytest
from starlette.testclient import TestClient
from support.api import remember

from mnemonic.app.aggregates import (
    Aggregates,
    bucket_counts,
    from_epoch,
    held,
    memory_counts,
    project_rows,
)
from mnemonic.index.columns import STATES, TYPES, ColumnView, MemoryColumns, epoch_seconds
from mnemonic.store.base import Filters
from mnemonic.store.dashboard import SQLiteDashboard
from mnemonic.store.models import MemoryState, MemoryType, Source
from mnemonic.timeutil import to_db

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
T = TypeVar("T")


def _at(minutes: float, micros: int = 0) -> str:
    return (T0 + timedelta(minutes=minutes, microseconds=micros)).isoformat()


def _call(client: TestClient, fn: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine of the daemon on the daemon's own event loop."""
    portal: Any = client.portal
    result: T = portal.call(fn)
    return result


# ---- pure helpers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "when",
    [
        T0,
        T0 + timedelta(microseconds=1),
        T0 + timedelta(microseconds=999_999),
        datetime(1999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2100, 6, 1, 0, 0, 0, 500_001, tzinfo=UTC),
    ],
)
def test_from_epoch_recovers_the_stored_microsecond(when: datetime) -> None:
    stamp = float(epoch_seconds([to_db(when)])[0])
    assert from_epoch(stamp) == when


def test_from_epoch_round_trips_random_instants() -> None:
    rng = random.Random(7)
    whens = [T0 + timedelta(microseconds=rng.randrange(0, 10**15)) for _ in range(2000)]
    stamps = epoch_seconds([to_db(w) for w in whens])
    assert [from_epoch(float(s)) for s in stamps] == whens


def _view(rows: list[tuple[str, str, str, float]], projects: tuple[str, ...]) -> ColumnView:
    """A view over (state, type, project, minutes after T0) rows at seqs 1.. (seq 0 empty)."""
    n = len(rows) + 1
    state = np.zeros(n, np.int8)
    kind = np.zeros(n, np.int8)
    project = np.full(n, -1, np.int32)
    stamp = np.zeros(n, np.float64)
    for seq, (s, t, p, minutes) in enumerate(rows, start=1):
        state[seq] = STATES.index(s)
        kind[seq] = TYPES.index(t)
        project[seq] = projects.index(p) if p in projects else len(projects)
        stamp[seq] = (T0 + timedelta(minutes=minutes)).timestamp()
    source = np.where(state != 0, 1, 0).astype(np.int8)
    return ColumnView(state, kind, source, project, stamp, projects)


def test_counts_leave_out_rows_a_purge_or_a_new_project_is_changing() -> None:
    view = _view(
        [("active", "general", "a", 0), ("fading", "error", "", 1), ("active", "general", "b", 2)],
        ("a", ""),  # "b" was created after the view was taken
    )
    view.project[1] = -1  # a purge on the event loop: project cleared, state not yet
    assert held(view).tolist() == [2]
    counts = memory_counts(view)
    assert counts["by_project"] == {"": 1}
    assert counts["by_state"] == {"fading": 1} and counts["by_type"] == {"error": 1}
    (row,) = project_rows(view)
    assert (row.name, row.memories, row.active) == ("", 1, 1)


def test_project_rows_order_and_spans() -> None:
    view = _view(
        [
            ("active", "general", "old", 0),
            ("archived", "general", "old", 30),
            ("active", "general", "new", 10),
            ("merged", "general", "new", 50),
            ("active", "general", "tie", 50),
        ],
        ("old", "new", "tie"),
    )
    rows = project_rows(view)
    assert [r.name for r in rows] == ["new", "tie", "old"]  # last_at desc, then name
    new, _, old = rows
    assert (new.memories, new.active) == (2, 1)
    assert (old.first_at, old.last_at) == (T0, T0 + timedelta(minutes=30))


@pytest.mark.parametrize(
    ("minutes", "bucket"),
    [(0, 0), (0.999, 0), (1, 1), (1.0001, 1), (9.99999, 9), (10, 9)],
)
def test_bucket_counts_edges(minutes: float, bucket: int) -> None:
    view = _view([("active", "decision", "p", minutes)], ("p",))
    mask = view.state != 0
    counts = bucket_counts(view, mask, T0, 60.0, 10)
    assert counts[bucket] == {"decision": 1}
    assert sum(len(c) for c in counts) == 1


# ---- the daemon ----------------------------------------------------------------------------


def _projects(client: TestClient) -> dict[str | None, dict[str, Any]]:
    return {p["name"]: p for p in client.get("/api/v1/projects").json()["items"]}


def _timeline_totals(client: TestClient, **params: Any) -> list[int]:
    answer = client.get("/api/v1/timeline", params={"buckets": 4, **params})
    assert answer.status_code == 200, answer.text
    return [b["total"] for b in answer.json()["buckets"]]


def test_each_write_shows_at_once_in_projects_stats_and_timeline(client: TestClient) -> None:
    assert client.daemon.index.ready  # type: ignore[attr-defined]
    first = remember(
        client, "The billing deploy uses blue-green.", project="billing", timestamp=_at(0)
    )["memory_id"]
    remember(client, "Invoices go out nightly.", project="billing", timestamp=_at(30))
    assert _projects(client)["billing"]["memories"] == 2
    assert client.get("/api/v1/stats").json()["memories"]["by_project"] == {"billing": 2}
    window = {"since": _at(0), "until": _at(60)}
    assert _timeline_totals(client, **window) == [1, 0, 1, 0]

    remember(client, "The infra pipeline runs in Jenkins.", project="infra", timestamp=_at(59))
    projects = _projects(client)
    assert projects["infra"]["memories"] == 1
    assert projects["infra"]["last_at"] == _at(59)
    assert list(projects) == ["infra", "billing"]  # most recently active first
    stats = client.get("/api/v1/stats").json()["memories"]
    assert stats["by_project"] == {"billing": 2, "infra": 1} and stats["total"] == 3
    assert _timeline_totals(client, **window) == [1, 0, 1, 1]

    assert client.delete(f"/api/v1/memories/{first}").status_code == 200  # archived
    billing = _projects(client)["billing"]
    assert (billing["memories"], billing["active"]) == (2, 1)
    stats = client.get("/api/v1/stats").json()["memories"]
    assert stats["by_state"] == {"active": 2, "archived": 1}
    assert _timeline_totals(client, **window) == [0, 0, 1, 1]  # active and fading only
    assert _timeline_totals(client, state="archived", **window) == [1, 0, 0, 0]

    purged = client.delete(f"/api/v1/memories/{first}", params={"purge": "true"})
    assert purged.status_code == 200, purged.text
    assert _projects(client)["billing"]["memories"] == 1
    assert client.get("/api/v1/stats").json()["memories"]["by_state"] == {"active": 2}
    assert _timeline_totals(client, state="archived", **window) == [0, 0, 0, 0]


def _seed_varied(client: TestClient) -> None:
    rng = random.Random(11)
    kinds = [t for t in MemoryType if t is not MemoryType.HANDOFF]
    ids = []
    for i in range(24):
        made = remember(
            client,
            f"Note {i}: the {rng.choice(['queue', 'ledger', 'cache'])} job number {i} ran.",
            project=rng.choice(["billing", "infra", "", "search"]),
            type=kinds[i % len(kinds)].value,
            source=rng.choice([Source.API, Source.CLI]).value,
            # whole and fractional milliseconds, one exactly on a bucket edge
            timestamp=_at(i * 7.5, micros=rng.choice([0, 1, 999, 500_000])),
        )
        ids.append(made["memory_id"])
    for memory_id in ids[::5]:
        assert client.delete(f"/api/v1/memories/{memory_id}").status_code == 200


def test_columns_answer_as_sql_does(client: TestClient) -> None:
    _seed_varied(client)
    daemon: Any = client.daemon  # type: ignore[attr-defined]
    aggregates: Aggregates = daemon.aggregates
    assert daemon.index.ready
    assert _call(client, aggregates.projects) == _call(client, daemon.browser.projects)
    assert _call(client, aggregates.breakdown) == _call(client, daemon.browser.breakdown)
    sql = SQLiteDashboard(daemon.db)
    counted = 0
    for filters in (
        Filters(),
        Filters(states=None),
        Filters(project="billing"),
        Filters(project="", types=(MemoryType.ERROR, MemoryType.DECISION)),
        Filters(sources=(Source.CLI,), states=(MemoryState.ARCHIVED,)),
        Filters(project="nowhere"),
    ):
        span = _call(client, partial(aggregates.span, filters))
        assert span == _call(client, partial(sql.span, filters))
        since, until = span or (T0, T0 + timedelta(hours=1))
        for buckets, start in ((1, since), (7, since), (23, since), (40, T0 + timedelta(hours=1))):
            asked = (filters, start, until, buckets, filters.project, 500)
            mine = _call(client, partial(aggregates.timeline, *asked))
            theirs = _call(client, partial(sql.timeline, *asked))
            assert mine == theirs, (filters, buckets)
            counted += mine.total
    assert counted > 100  # the comparisons saw memories, not only empty answers


@dataclass
class _Index:
    """The recall index as the aggregates see it: whether it is ready, its columns."""

    ready: bool
    columns: MemoryColumns


def test_sql_answers_while_the_index_is_not_ready(client: TestClient) -> None:
    remember(client, "Deploys go through Jenkins.", project="infra", timestamp=_at(0))
    daemon: Any = client.daemon  # type: ignore[attr-defined]
    empty = MemoryColumns()  # what a fresh index holds before its build
    for ready, expected in ((False, ["infra"]), (True, [])):
        aggregates = Aggregates(_Index(ready, empty), daemon.browser, SQLiteDashboard(daemon.db))
        assert [p.name for p in _call(client, aggregates.projects)] == expected
        counts = _call(client, aggregates.breakdown)
        assert counts["by_project"] == ({"infra": 1} if not ready else {})
        assert counts["raw_by_status"] == {"encoded": 1}  # from SQL either way
        asked = (Filters(), T0, T0 + timedelta(hours=1), 4, None, 10)
        timeline = _call(client, partial(aggregates.timeline, *asked))
        assert timeline.total == (1 if not ready else 0)
