"""The event-loop stall watchdog on a real loop blocked with ``time.sleep``: the stall is
logged while it lasts (with where the loop is stuck), counted when it ends, and exported
by ``/metrics`` and the agent's health."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable

import pytest
from starlette.testclient import TestClient

from mnemonic.runtime.loop_watchdog import LoopWatchdog


def _block_the_loop(seconds: float) -> None:
    time.sleep(seconds)


async def _run_blocking(watchdog: LoopWatchdog) -> None:
    task = asyncio.create_task(watchdog.run())
    await asyncio.sleep(0.2)
    _block_the_loop(0.05)  # under the threshold: not a stall
    await asyncio.sleep(0.2)
    assert watchdog.stalls == 0
    _block_the_loop(0.6)  # long enough for the thread, which looks every 0.125 s
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_blocked_loop_is_logged_while_stuck_and_counted_after(
    caplog: pytest.LogCaptureFixture,
) -> None:
    watchdog = LoopWatchdog(threshold_s=0.25, interval_s=0.05)
    with caplog.at_level(logging.WARNING, logger="mnemonic.runtime.loop_watchdog"):
        asyncio.run(_run_blocking(watchdog))
    assert watchdog.stalls == 1
    assert 0.5 <= watchdog.longest_s < 2.0
    assert watchdog.health()["stalls"] == 1
    messages = [r.getMessage() for r in caplog.records]
    # from the thread, during the stall: where the loop is stuck
    during = [m for m in messages if "blocked for" in m]
    assert during and "in _block_the_loop" in during[0] and "test_loop_watchdog.py" in during[0]
    # from the task, once the loop is back: how long it was
    after = [m for m in messages if "stalled for" in m]
    assert len(after) == 1 and "stall 1" in after[0]


def test_the_daemon_exports_stalls_in_metrics_and_health(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(agents={"loop_stall_threshold_s": 0.2})
    before = _metric(client, "mnemonic_event_loop_stalls_total")
    assert client.portal is not None
    client.portal.call(_block_the_loop, 0.4)  # runs on the daemon's event loop thread
    deadline = time.monotonic() + 5
    while _metric(client, "mnemonic_event_loop_stalls_total") <= before:
        assert time.monotonic() < deadline, "the stall was not counted"
        time.sleep(0.05)
    assert _metric(client, "mnemonic_event_loop_longest_stall_seconds") >= 0.25
    agents = client.get("/api/v1/health").json()["agents"]
    detail = next(a["detail"] for a in agents if a["name"] == "loop-watchdog")
    assert detail["stalls"] >= 1 and detail["threshold_s"] == 0.2


def _metric(client: TestClient, name: str) -> float:
    text = client.get("/metrics").text
    match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert match is not None, name
    return float(match.group(1))


def test_rejects_a_threshold_that_cannot_work() -> None:
    with pytest.raises(ValueError):
        LoopWatchdog(threshold_s=0)
