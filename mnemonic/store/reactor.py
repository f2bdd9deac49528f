"""The reactor's fire log (``reactor_fires``): every time a rule fired, with the outcome,
so fire counts and the last fire of each rule survive a restart.

Not trimmed: each rule's cooldown bounds its rows (the built-ins fire a few times a day at
most), and the counts ``GET /api/v1/reactor/rules`` shows are counts of these rows.
"""

from __future__ import annotations

import sqlite3

from mnemonic.reactor.fires import Fire, FireTotals
from mnemonic.store.database import Database
from mnemonic.timeutil import from_db, to_db


class SQLiteReactorFires:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(self, fire: Fire) -> None:
        def work(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO reactor_fires (rule, at, event_type, action, ok, error)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    fire.rule,
                    to_db(fire.at),
                    fire.event_type,
                    fire.action,
                    int(fire.ok),
                    fire.error,
                ),
            )

        await self.db.run_write(work)

    async def totals(self) -> dict[str, FireTotals]:
        """Per rule: how many fires, and the last one."""

        def work(conn: sqlite3.Connection) -> dict[str, FireTotals]:
            rows = conn.execute(
                "SELECT f.*, t.n FROM reactor_fires f JOIN (SELECT rule, count(*) AS n,"
                " max(id) AS id FROM reactor_fires GROUP BY rule) t ON t.id = f.id"
            ).fetchall()
            return {
                row["rule"]: FireTotals(
                    count=int(row["n"]),
                    last=Fire(
                        rule=row["rule"],
                        at=from_db(row["at"]),
                        event_type=row["event_type"],
                        action=row["action"],
                        ok=bool(row["ok"]),
                        error=row["error"],
                    ),
                )
                for row in rows
            }

        return await self.db.run_read(work)
