"""The ``llm_usage`` table (migration 0006): one row per LLM judgment, and its totals.

Rows carry no prompt or answer text, only what a call was for, what it cost and how it
went, so nothing here needs redaction or purging. Writes are bookkeeping (small rows a
nearly full disk still takes) and go through the single writer like every other write.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mnemonic.store.database import Database
from mnemonic.timeutil import to_db


@dataclass(frozen=True, slots=True)
class UsageRow:
    at: datetime
    operation: str
    agent: str
    provider: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    success: bool
    error: str | None = None  # the error class ("timeout", "schema_invalid", ...), never text
    cost_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class UsageTotals:
    calls: int
    failures: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_ms_avg: float

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "failures": self.failures,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost_usd": round(self.cost_usd, 8),
            "latency_ms_avg": round(self.latency_ms_avg, 1),
        }


@dataclass(frozen=True, slots=True)
class UsageSummary:
    since: datetime | None
    totals: UsageTotals
    by_day: list[tuple[str, UsageTotals]]
    by_operation: list[tuple[str, UsageTotals]]
    by_model: list[tuple[str, UsageTotals]]


_AGGREGATE = (
    "COUNT(*), COALESCE(SUM(1 - success), 0), COALESCE(SUM(prompt_tokens), 0),"
    " COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cost_usd), 0), COALESCE(AVG(latency_ms), 0)"
)
# key expression -> how groups are ordered (days in time order, others by calls)
_GROUPS = {
    "day": ("substr(at, 1, 10)", "key"),
    "operation": ("operation", "2 DESC, key"),
    "model": ("model", "2 DESC, key"),
}


def _totals(row: sqlite3.Row | tuple[Any, ...], offset: int = 0) -> UsageTotals:
    return UsageTotals(
        calls=int(row[offset]),
        failures=int(row[offset + 1]),
        prompt_tokens=int(row[offset + 2]),
        completion_tokens=int(row[offset + 3]),
        cost_usd=float(row[offset + 4]),
        latency_ms_avg=float(row[offset + 5]),
    )


class SQLiteLlmUsage:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, row: UsageRow) -> None:
        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO llm_usage (at, operation, agent, provider, model, prompt_tokens,"
                " completion_tokens, latency_ms, success, error, cost_usd)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    to_db(row.at),
                    row.operation,
                    row.agent,
                    row.provider,
                    row.model,
                    max(0, row.prompt_tokens),
                    max(0, row.completion_tokens),
                    max(0.0, row.latency_ms),
                    int(row.success),
                    row.error,
                    max(0.0, row.cost_usd),
                ),
            )

        await self.db.run_write(work, bookkeeping=True)

    async def summary(self, since: datetime | None = None) -> UsageSummary:
        """Totals over rows at or after ``since`` (all rows when None): overall, per UTC
        day (oldest first), per operation and per model (most calls first)."""
        where, args = ("WHERE at >= ?", (to_db(since),)) if since else ("", ())

        def work(conn: sqlite3.Connection) -> UsageSummary:
            total = conn.execute(f"SELECT {_AGGREGATE} FROM llm_usage {where}", args).fetchone()
            groups: dict[str, list[tuple[str, UsageTotals]]] = {}
            for name, (key, order) in _GROUPS.items():
                rows = conn.execute(
                    f"SELECT {key} AS key, {_AGGREGATE} FROM llm_usage {where}"
                    f" GROUP BY key ORDER BY {order}",
                    args,
                ).fetchall()
                groups[name] = [(str(r[0]), _totals(r, 1)) for r in rows]
            return UsageSummary(
                since=since,
                totals=_totals(total),
                by_day=groups["day"],
                by_operation=groups["operation"],
                by_model=groups["model"],
            )

        return await self.db.run_read(work)
