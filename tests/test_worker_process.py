"""Worker-process calls answer through a private file (mnemonic/runtime/worker_process.py)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from mnemonic.runtime.worker_process import PREFIX, run_in_worker


def big_answer(n: int) -> list[int]:
    """Far more than a pipe holds (64 KiB on Linux): anyio's pipe path would need many
    writes, each of which a signal can cut short."""
    return list(range(n))


def stop_then_answer(n: int) -> list[int]:
    """Stops this worker (as a debugger attaching would) before it answers; the test
    continues it. (The short write itself needs the stop to land while the worker is
    blocked on a full pipe, which a test cannot time; with the answer in a file the worker
    never writes more than a few bytes to the pipe.)"""
    os.kill(os.getpid(), signal.SIGSTOP)
    return list(range(n))


def fails() -> int:
    raise ValueError("the worker's own error")


def worker_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(PREFIX))


def test_a_large_answer_comes_back_whole_and_leaves_no_file(tmp_path: Path) -> None:
    stale = tmp_path / f"{PREFIX}clusters-{'ab' * 16}.pickle"  # a killed daemon's
    stale.write_bytes(b"junk")
    others = [  # other callers' answers, maybe in flight: kept
        tmp_path / f"{PREFIX}dreaming-{'cd' * 16}.pickle",
        tmp_path / f"{PREFIX}clusters-x-{'ef' * 16}.pickle",  # the caller "clusters-x"
    ]
    for other in others:
        other.write_bytes(b"x")
    answer = asyncio.run(run_in_worker(tmp_path, "clusters", list, big_answer, 400_000))
    assert answer == list(range(400_000))
    assert worker_files(tmp_path) == sorted(o.name for o in others)


def test_a_worker_stopped_and_continued_mid_answer_still_answers(tmp_path: Path) -> None:
    async def scenario() -> list[int]:
        task = asyncio.create_task(
            run_in_worker(tmp_path, "stopped", list, stop_then_answer, 300_000)
        )
        me = psutil.Process()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            stopped = [c for c in me.children() if c.status() == psutil.STATUS_STOPPED]
            if stopped:
                break
            await asyncio.sleep(0.05)
        assert stopped, "the worker never stopped itself"
        stopped[0].send_signal(signal.SIGCONT)
        return await asyncio.wait_for(task, 30)

    assert asyncio.run(scenario()) == list(range(300_000))
    assert worker_files(tmp_path) == []


def test_the_workers_error_and_a_wrong_answer_reach_the_caller(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="the worker's own error"):
        asyncio.run(run_in_worker(tmp_path, "fails", int, fails))
    with pytest.raises(TypeError, match="not a dict"):
        asyncio.run(run_in_worker(tmp_path, "wrong", dict, big_answer, 3))
    assert worker_files(tmp_path) == []
