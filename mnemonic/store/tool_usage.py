"""The ``tool_usage`` table (migration 0007): one row per MCP tool call, and its summary.

Rows carry the tool's name, the client's name, the project, the latency and whether the
call worked (with a short error class on failure), never arguments or results, so nothing
here needs redaction or purging. Writes are bookkeeping and go through the single writer;
each write also drops rows older than the retention window, so the table stays small.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from mnemonic.store.database import Database
from mnemonic.timeutil import to_db


@dataclass(frozen=True, slots=True)
class ToolCall:
    at: datetime
    tool: str
    client: str
    project: str
    latency_ms: float
    ok: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ToolStat:
    tool: str
    calls: int
    errors: int
    p50_ms: float
    p95_ms: float

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "calls": self.calls,
            "errors": self.errors,
            "p50_ms": round(self.p50_ms, 3),
            "p95_ms": round(self.p95_ms, 3),
        }


def percentile(sorted_values: list[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0..1) of ascending ``sorted_values``; 0 when empty."""
    if not sorted_values:
        return 0.0
    rank = max(1, min(len(sorted_values), math.ceil(q * len(sorted_values) - 1e-9)))
    return sorted_values[rank - 1]


def summarise(rows: list[tuple[str, float, int]]) -> list[ToolStat]:
    """Per tool (most called first, then by name): calls, errors, p50 and p95 latency."""
    by_tool: dict[str, tuple[list[float], int]] = {}
    for tool, latency, ok in rows:
        latencies, errors = by_tool.get(tool, ([], 0))
        latencies.append(latency)
        by_tool[tool] = (latencies, errors + (0 if ok else 1))
    stats = []
    for tool, (latencies, errors) in by_tool.items():
        latencies.sort()
        stats.append(
            ToolStat(
                tool,
                len(latencies),
                errors,
                percentile(latencies, 0.5),
                percentile(latencies, 0.95),
            )
        )
    return sorted(stats, key=lambda s: (-s.calls, s.tool))


class SQLiteToolUsage:
    def __init__(self, db: Database, *, retention_days: float = 90.0) -> None:
        self.db = db
        self.retention = timedelta(days=retention_days)

    async def record(self, call: ToolCall) -> None:
        cutoff = to_db(call.at - self.retention)

        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO tool_usage (at, tool, client, project, latency_ms, ok, error)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    to_db(call.at),
                    call.tool,
                    call.client,
                    call.project,
                    max(0.0, call.latency_ms),
                    int(call.ok),
                    call.error,
                ),
            )
            conn.execute("DELETE FROM tool_usage WHERE at < ?", (cutoff,))

        await self.db.run_write(work, bookkeeping=True)

    async def summary(
        self, *, since: datetime | None = None, client: str | None = None
    ) -> list[ToolStat]:
        clauses, args = [], []
        if since is not None:
            clauses.append("at >= ?")
            args.append(to_db(since))
        if client is not None:
            clauses.append("client = ?")
            args.append(client)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""

        def work(conn: sqlite3.Connection) -> list[tuple[str, float, int]]:
            cur = conn.execute(f"SELECT tool, latency_ms, ok FROM tool_usage{where}", args)
            return [(str(r[0]), float(r[1]), int(r[2])) for r in cur.fetchall()]

        return summarise(await self.db.run_read(work))
