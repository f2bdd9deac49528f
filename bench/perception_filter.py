"""Benchmark the heuristic filter: events per second through every stage but the LLM gate.

Run: ``.venv/bin/python bench/perception_filter.py`` (about half a minute). Prints Markdown
tables for BENCHMARKS.md:

* per stream: shell commands (the 6,000-line benign corpus, tests/fixtures), file saves
  (every ``.py`` file of this repository, whole), large file saves (100,000 characters
  each: the size cap), metadata-only events, git commit texts, machine noise, and all of
  them interleaved; for each the events, the share dropped, events/s (wall) and CPU µs per
  event, best of 3 runs with a fresh filter each;
* the drop reasons of the interleaved stream.

Events are built before timing; the clock moves one second per event, so the frequency
limit sees a plausible pace rather than one instant. Times are wall (``perf_counter``) and
CPU (``process_time``); on a shared machine the CPU figure is the fairer one.
"""

from __future__ import annotations

import os
import platform
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mnemonic.events.types import WatcherEvent  # noqa: E402
from mnemonic.perception import FilterConfig, HeuristicFilter  # noqa: E402

BENIGN = (ROOT / "tests" / "fixtures" / "benign_commands.txt").read_text("utf-8").splitlines()


def commands() -> list[WatcherEvent]:
    return [WatcherEvent(watcher="terminal", kind="command", content=line) for line in BENIGN]


def file_saves() -> list[WatcherEvent]:
    return [
        WatcherEvent(
            watcher="filesystem", kind="modified", content=p.read_text("utf-8"), path=str(p)
        )
        for p in sorted((ROOT / "mnemonic").rglob("*.py"))
    ]


def large_saves(count: int = 50) -> list[WatcherEvent]:
    words = (ROOT / "docs" / "ARCHITECTURE.md").read_text("utf-8")
    text = (words * (100_000 // len(words) + 1))[:99_990]
    return [
        WatcherEvent(
            watcher="filesystem",
            kind="modified",
            content=f"{i}\n{text}",
            path=f"/work/docs/big{i}.md",
        )
        for i in range(count)
    ]


def metadata_only(count: int = 2000) -> list[WatcherEvent]:
    return [
        WatcherEvent(
            watcher="filesystem",
            kind="modified",
            content="",
            path=f"/work/assets/img{i}.png",
            metadata_only=True,
            metadata={"bytes": 1000 + i, "binary": True},
        )
        for i in range(count)
    ]


def git_commits(count: int = 2000) -> list[WatcherEvent]:
    rng = random.Random(7)
    subjects = ["Fix race in cache eviction", "Add login form", "Bump deps", "Refactor parser"]
    out = []
    for i in range(count):
        sha = f"{rng.getrandbits(28):07x}"
        text = (
            f"commit {sha} on main in webapp by Ann: {rng.choice(subjects)} "
            f"({i % 7 + 1} files, +{i % 90} -{i % 13}): src/a.py, src/b.py"
        )
        out.append(WatcherEvent(watcher="git", kind="commit", content=text, path="/work/webapp"))
    return out


def noise(count: int = 2000) -> list[WatcherEvent]:
    lines = [
        "[##########          ] {i}% downloading",
        "npm WARN deprecated pkg{i}@1.0.0: no longer supported",
        " {i}%|████████      | {i}/100 [00:03<00:04]",
        "sha256:" + "0123456789abcdef" * 4,
    ]
    return [
        WatcherEvent(watcher="terminal", kind="command", content=lines[i % 4].format(i=i % 100))
        for i in range(count)
    ]


def interleave(*streams: list[WatcherEvent]) -> list[WatcherEvent]:
    mixed = [e for stream in streams for e in stream]
    random.Random(1).shuffle(mixed)
    return mixed


def run(events: list[WatcherEvent]) -> tuple[float, float, HeuristicFilter]:
    """Best wall and CPU seconds over 3 runs, and the last run's filter."""
    wall, cpu = float("inf"), float("inf")
    last = HeuristicFilter(FilterConfig())
    for _ in range(3):
        tick = [0.0]

        def clock(tick: list[float] = tick) -> float:
            tick[0] += 1.0
            return tick[0]

        f = HeuristicFilter(FilterConfig(), clock=clock, home="/home/nobody")
        w0, c0 = time.perf_counter(), time.process_time()
        for event in events:
            f.check(event)
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
        last = f
    return wall, cpu, last


def main() -> None:
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    print()
    streams = {
        "shell commands (benign corpus)": commands(),
        "file saves (this repo's .py files)": file_saves(),
        "large file saves (100,000 chars)": large_saves(),
        "metadata-only file events": metadata_only(),
        "git commit texts": git_commits(),
        "machine noise (progress, npm WARN, hashes)": noise(),
    }
    streams["all of the above, interleaved"] = interleave(*streams.values())
    print("| stream | events | dropped | events/s (wall) | CPU µs/event |")
    print("|---|---:|---:|---:|---:|")
    mixed_filter = None
    for name, events in streams.items():
        wall, cpu, f = run(events)
        stats = f.stats()
        dropped = stats["seen"] - stats["accepted"]
        print(
            f"| {name} | {len(events):,} | {dropped / len(events):.1%} | "
            f"{len(events) / wall:,.0f} | {cpu / len(events) * 1e6:,.1f} |"
        )
        mixed_filter = f
    assert mixed_filter is not None
    print()
    print("Drop reasons, interleaved stream:")
    print()
    print("| reason | events |")
    print("|---|---:|")
    reasons = Counter(mixed_filter.stats()["dropped"])
    for reason, count in reasons.most_common():
        print(f"| {reason} | {count:,} |")


if __name__ == "__main__":
    main()
