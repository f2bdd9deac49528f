"""When the recall index is saved as a checkpoint (index/checkpoints.py).

The policy is a pure function (table tests); the checkpointer runs against a real daemon
on a real database: a due tick saves and prunes the log, a quiet-time rule holds a save
back during writes, and a stop over its budget leaves the log for the next start.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from mnemonic.index.checkpoints import Policy, save_reason
from mnemonic.index.snapshot import read_checkpoint
from mnemonic.paths import Paths

POLICY = Policy(change_share=0.05, min_changes=100, max_age_s=3600, quiet_s=10, stop_budget_s=1.5)

TEXTS = [
    "the staging deploy failed because the postgres migration timed out",
    "grafana alert for redis cache memory fired during the billing run",
    "kubernetes pod crash loop after the docker image upgrade",
    "merge conflict in the schema file blocked the release branch",
    "replica lag on the dashboard grew while vacuum ran on the primary",
    "the invoice pdf renderer leaks memory when fonts are missing",
]


@pytest.mark.parametrize(
    ("behind", "memories", "unsaved", "age", "quiet", "want"),
    [
        (0, 1000, True, None, 0, "built from SQLite"),  # whatever else holds
        (0, 1000, False, 99999, 99, None),  # nothing changed: nothing to save
        (99, 1000, False, 10, 99, None),  # under min_changes
        (100, 1000, False, 10, 99, "changes"),  # min_changes, quiet
        (100, 1000, False, 10, 1, None),  # due but writes keep coming
        (200, 1000, False, 10, 0, "changes"),  # twice the threshold: no more waiting
        (4999, 100_000, False, 10, 99, None),  # 5 % of 100k is 5,000
        (5000, 100_000, False, 10, 99, "changes"),
        (1, 1000, False, 3600, 99, "old"),  # any change once it is old
        (1, 1000, False, 3600, 0, None),  # ... at a quiet moment
        (1, 1000, False, None, 99, "no checkpoint yet"),
    ],
)
def test_save_reason(
    behind: int, memories: int, unsaved: bool, age: float | None, quiet: float, want: str | None
) -> None:
    got = save_reason(
        POLICY,
        behind=behind,
        memories=memories,
        unsaved_build=unsaved,
        age_s=age,
        quiet_for_s=quiet,
    )
    if want is None:
        assert got is None
    else:
        assert got is not None and want in got


def _logged(paths: Paths) -> int:
    with sqlite3.connect(paths.database) as conn:
        (count,) = conn.execute("SELECT count(*) FROM index_log").fetchone()
    return int(count)


def _fill(client: TestClient, texts: list[str]) -> None:
    items = [{"content": t, "project": "alpha"} for t in texts]
    answer = client.post(
        "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": items}
    )
    assert answer.status_code in (200, 201), answer.text


def _first_checkpoint(client: TestClient) -> None:
    """The start built the index from SQLite: the daemon saves a checkpoint at once."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        point = client.get("/api/v1/health").json()["recall_index"]["checkpoint"]
        if point["saves"]:
            assert point["last_reason"] == "built from SQLite"
            return
        time.sleep(0.02)
    raise AssertionError("no checkpoint after the build")


def test_a_due_tick_saves_a_checkpoint_and_prunes_the_log(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    client = make_client(
        recall={"snapshot_min_changes": 5, "snapshot_change_share": 0, "snapshot_quiet_s": 0}
    )
    daemon = client.daemon  # type: ignore[attr-defined]
    tick = daemon.checkpoints.tick
    _first_checkpoint(client)
    assert client.portal.call(tick) is None  # nothing changed since
    _fill(client, TEXTS[:2])
    before = _logged(paths)
    assert before >= 5  # each memory: its text, row, vector and links
    info = client.portal.call(tick)
    assert info is not None
    assert _logged(paths) == 0
    with sqlite3.connect(paths.database) as conn:
        point = read_checkpoint(conn)
    assert point is not None and point.position == info.position and point.behind == 0
    health = client.get("/api/v1/health").json()["recall_index"]["checkpoint"]
    assert health["saves"] == 2 and health["last_position"] == info.position
    assert "changes" in health["last_reason"]


def test_a_due_checkpoint_waits_for_a_quiet_moment(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    client = make_client(
        recall={"snapshot_min_changes": 5, "snapshot_change_share": 0, "snapshot_quiet_s": 600}
    )
    tick = client.daemon.checkpoints.tick  # type: ignore[attr-defined]
    _first_checkpoint(client)  # after the build: at once, quiet or not
    _fill(client, TEXTS[:1])
    assert client.portal.call(tick) is None  # due, but a write came just now
    assert _logged(paths) > 0


def test_a_stop_over_its_budget_leaves_the_log_to_the_next_start(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client(recall={"snapshot_stop_budget_s": 0})
    _first_checkpoint(first)
    _fill(first, TEXTS)
    logged = _logged(paths)
    assert logged > 0
    first.__exit__(None, None, None)
    assert first.daemon.checkpoints.skipped_at_stop  # type: ignore[attr-defined]
    assert _logged(paths) == logged  # not saved: the notes stay

    second = make_client()
    index = second.get("/api/v1/health").json()["recall_index"]
    assert index["built_from"] == "snapshot"
    assert index["replayed"] > 0
    assert len(second.daemon.index.columns) == len(TEXTS)  # type: ignore[attr-defined]
