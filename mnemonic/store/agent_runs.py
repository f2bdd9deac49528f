"""Persistence of agent cycles (``agent_runs``): the last run of each agent survives a
restart, and the history says when a cycle failed and why."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from mnemonic.jsonsafe import dumps_stored, loads_stored
from mnemonic.runtime.agent_runs import RunRecord
from mnemonic.store.database import Database
from mnemonic.timeutil import from_db, to_db

_KEEP_PER_AGENT = 500  # older runs are trimmed: the log is a diagnosis aid, not an archive


def _record(row: sqlite3.Row) -> RunRecord:
    summary = loads_stored(row["summary"], {})
    return RunRecord(
        id=row["id"],
        agent=row["agent"],
        trigger=row["trigger"],
        started_at=from_db(row["started_at"]),
        finished_at=from_db(row["finished_at"]) if row["finished_at"] else None,
        ok=None if row["ok"] is None else bool(row["ok"]),
        summary=summary if isinstance(summary, dict) else {},
        error=row["error"],
    )


class SQLiteRunLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def begin(self, agent: str, trigger: str, started_at: datetime) -> int:
        def work(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO agent_runs (agent, trigger, started_at) VALUES (?, ?, ?)",
                (agent, trigger, to_db(started_at)),
            )
            # ids are shared by every agent, so "the newest N of this one" is counted by
            # offset (agent_runs_agent index), not by id arithmetic
            conn.execute(
                "DELETE FROM agent_runs WHERE agent = ? AND id <= (SELECT id FROM agent_runs"
                " WHERE agent = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (agent, agent, _KEEP_PER_AGENT),
            )
            return int(cur.lastrowid or 0)

        return await self.db.run_write(work)

    async def finish(self, record: RunRecord) -> None:
        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE agent_runs SET finished_at = ?, ok = ?, summary = ?, error = ?"
                " WHERE id = ?",
                (
                    to_db(record.finished_at) if record.finished_at else None,
                    None if record.ok is None else int(record.ok),
                    dumps_stored(record.summary),
                    record.error,
                    record.id,
                ),
            )

        await self.db.run_write(work)

    async def last_runs(self) -> dict[str, RunRecord]:
        def work(conn: sqlite3.Connection) -> dict[str, RunRecord]:
            rows = conn.execute(
                "SELECT r.* FROM agent_runs r JOIN (SELECT agent, max(id) AS id FROM agent_runs"
                " WHERE finished_at IS NOT NULL GROUP BY agent) last ON last.id = r.id"
            ).fetchall()
            return {row["agent"]: _record(row) for row in rows}

        return await self.db.run_read(work)

    async def history(self, agent: str, limit: int) -> list[RunRecord]:
        def work(conn: sqlite3.Connection) -> list[RunRecord]:
            rows = conn.execute(
                "SELECT * FROM agent_runs WHERE agent = ? ORDER BY id DESC LIMIT ?",
                (agent, limit),
            ).fetchall()
            return [_record(row) for row in rows]

        return await self.db.run_read(work)
