"""The "after the thinking half ran" phase of the retrieval benchmarks (issue 12 §8).

``age_store`` moves every memory's ``created_at`` and ``last_accessed_at`` back by N days,
as if the daemon had learned them that long ago: decay measures elapsed time from those
(never from a memory's own timestamp, which for imports is years old), so this is what a
fake clock would do to a real store, without a test-only clock in the daemon. It writes
through SQLite beside the running daemon (WAL; the recall index does not hold these
columns). ``run_agents`` then runs one cycle of each named agent through the REST API, as
``mnemonic run NAME`` does, and returns their summaries.

This is right for one "age, then run" step (what the retrieval benchmarks do). A
simulation of many days must also move consolidation's decay watermarks and the links'
``created_at`` (``bench/lifecycle.py`` ``advance_clock``): decay resumes from where the
previous cycle left each memory, in real time.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any


def age_store(database: Path, days: float) -> int:
    """Shift learning and access times ``days`` into the past; the rows moved."""
    if days <= 0:
        return 0
    shift = timedelta(days=days)
    conn = sqlite3.connect(database, timeout=60)
    try:
        rows = conn.execute("SELECT seq, created_at, last_accessed_at FROM memories").fetchall()

        def back(value: str | None) -> str | None:
            if value is None:
                return None
            return (datetime.fromisoformat(value) - shift).isoformat(timespec="microseconds")

        with conn:
            conn.executemany(
                "UPDATE memories SET created_at = ?, last_accessed_at = ? WHERE seq = ?",
                [(back(c), back(a), seq) for seq, c, a in rows],
            )
        return len(rows)
    finally:
        conn.close()


def run_agents(client: Any, names: list[str]) -> dict[str, Any]:
    """One cycle of each agent, in order, waiting for each (``?wait=true``)."""
    out: dict[str, Any] = {}
    for name in names:
        t0 = time.perf_counter()
        response = client.post(f"/api/v1/agents/{name}/run", params={"wait": "true"}, timeout=3600)
        response.raise_for_status()
        run = response.json()["run"]
        if not run["ok"]:
            raise RuntimeError(f"agent {name} failed: {run['error']}")
        out[name] = {"took_s": time.perf_counter() - t0, "summary": run["summary"]}
    return out
