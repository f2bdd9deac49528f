"""Duplicate and link decisions: numbers keep near-identical texts apart, and the check is
linear, so two 100,000-character writes no longer freeze the daemon (issue 9)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from starlette.testclient import TestClient
from support.api import remember

from mnemonic.encoding.linking import Neighbour, may_merge, numberish, supersessions
from mnemonic.store.models import Relation


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("port 6379", {"6379"}),
        ("Port 6379.", {"6379"}),  # case and a sentence's full stop do not count
        ("v1.2.3 at 10:30 on 2024-01-05", {"v1.2.3", "10:30", "2024-01-05"}),
        ("sha256 of /usr/lib64/x", {"sha256", "/usr/lib64/x"}),
        ("a1b2 x-1", {"a1b2", "x-1"}),
        ("no digits at all", set()),
        ("", set()),
        ("a" * 50 + "1", {"a" * 50 + "1"}),
    ],
)
def test_numberish(text: str, expected: set[str]) -> None:
    assert numberish(text) == expected


@pytest.mark.parametrize(
    ("a", "b", "merge"),
    [
        ("Redis listens on port 6379", "Redis listens on port 6379.", True),
        ("Redis listens on port 6379", "Redis listens on port 6380", False),
        ("the cache is enabled", "the cache is disabled", False),
        ("we use version v1.2", "we use version v1.3", False),
        ("the build is green", "The build is green", True),
    ],
)
def test_may_merge(a: str, b: str, merge: bool) -> None:
    assert may_merge(a, b) is merge


@pytest.mark.parametrize("unit", ["ab", "a", "a1.", "1", "x-"])
def test_may_merge_is_linear_on_100k_characters(unit: str) -> None:
    a = (unit * 100_000)[:100_000]
    started = time.thread_time()
    assert may_merge(a, a[:-1] + "#") in (True, False)
    # was 300 s for "ab" * 50_000 (quadratic backtracking in the number pattern)
    assert time.thread_time() - started < 1.0


@pytest.mark.slow
def test_two_long_near_identical_writes_do_not_stall_the_daemon(
    make_client: Callable[..., TestClient],
) -> None:
    """The reported incident: two ~100,000-character writes in one project, the second a
    near-duplicate of the first. Before the fix the duplicate check ran for minutes on the
    event loop and ``/livez`` did not answer."""
    client = make_client()
    # the words fill the embedder's token window, so both texts embed alike; the long
    # word without a digit is what the old number pattern went quadratic on
    body = "deploy notes " * 100 + "x" * 98_000
    first = remember(client, body + " first", project="ops")
    assert first["status"] == "encoded"
    result: dict[str, object] = {}

    def write_second() -> None:
        result.update(remember(client, body + " second", project="ops"))

    started = time.monotonic()
    writer = threading.Thread(target=write_second)
    writer.start()
    slowest = 0.0
    while writer.is_alive() and time.monotonic() - started < 60:
        asked = time.monotonic()
        assert client.get("/livez").status_code == 200
        slowest = max(slowest, time.monotonic() - asked)
        time.sleep(0.02)
    writer.join(timeout=60)
    assert not writer.is_alive()
    assert time.monotonic() - started < 30
    assert result["status"] == "reinforced"  # merged: the duplicate check did run
    assert slowest < 2.0, f"/livez took {slowest:.2f} s while the duplicate was encoded"


def test_supersession_is_found_between_statements_but_never_between_commands() -> None:
    older = Neighbour(
        7,
        0.8,
        "Checkout sessions are stored in MySQL.",
        (),
        datetime(2026, 1, 5, tzinfo=UTC),
        "decision",
        "api",
    )
    newer_text = "Checkout sessions moved from MySQL to Redis."
    when = datetime(2026, 3, 1, tzinfo=UTC)
    decided, _ = supersessions(newer_text, "decision", (), when, [older], "api")
    assert [(d.neighbour.seq, d.incoming) for d in decided] == [(7, False)]
    assert decided[0].link.relation is Relation.SUPERSEDES
    # an import dated before its neighbour: the neighbour supersedes it
    decided, _ = supersessions(
        newer_text, "decision", (), datetime(2025, 12, 1, tzinfo=UTC), [older], "api"
    )
    assert all(d.incoming for d in decided)
    # shell commands are events: none supersedes another
    assert supersessions(newer_text, "general", (), when, [older], "terminal") == ([], [])
    command = Neighbour(8, 0.8, older.content, (), older.timestamp, "general", "terminal")
    assert supersessions(newer_text, "decision", (), when, [command], "api") == ([], [])
