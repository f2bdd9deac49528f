"""The store when its folder cannot take writes, without root: a folder in place of the
``-wal`` file makes SQLite fail to open the database for writing ("unable to open database
file"), exactly as a read-only mount does, so the read-only path is covered even where the
mount-based test in test_reliability.py has to skip."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from mnemonic.config import StorageConfig
from mnemonic.errors import StorageUnavailable
from mnemonic.store.database import Database

RECOVERY_S = 1.0


def _count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])


def test_an_unwritable_database_serves_reads_and_recovers(tmp_path: Path) -> None:
    path = tmp_path / "mnemonic.db"
    blocker = tmp_path / "mnemonic.db-wal"

    async def main() -> None:
        db = Database(path, StorageConfig())
        await db.open()
        await db.run_write(lambda c: c.execute("CREATE TABLE notes (body TEXT)"))
        await db.run_write(lambda c: c.execute("INSERT INTO notes VALUES ('kept')"))
        await db.close()

        blocker.mkdir()
        db = Database(path, StorageConfig(write_recovery_s=RECOVERY_S))
        await db.open()  # does not raise: reads are still possible
        try:
            assert db.write_failure is not None
            assert "serving reads only" in db.write_failure
            assert await db.run_read(_count) == 1
            with pytest.raises(StorageUnavailable):
                await db.run_write(lambda c: c.execute("INSERT INTO notes VALUES ('lost')"))
            assert db.write_failure is not None  # health stays degraded

            blocker.rmdir()  # the folder takes writes again: no restart needed
            await db.run_write(lambda c: c.execute("INSERT INTO notes VALUES ('again')"))
            assert await db.run_read(_count) == 2  # readers see writes again
            # one write is no proof on a nearly full disk: health waits for a quiet period
            assert db.write_failure is not None
            await asyncio.sleep(RECOVERY_S + 0.1)
            assert db.write_failure is None  # and then clears without another write
        finally:
            await db.close()

    asyncio.run(main())


def test_an_unwritable_folder_without_a_database_is_an_error(tmp_path: Path) -> None:
    """Nothing to read: starting read-only would only hide the problem."""
    (tmp_path / "mnemonic.db-wal").mkdir()

    async def main() -> None:
        db = Database(tmp_path / "mnemonic.db", StorageConfig())
        with pytest.raises(sqlite3.Error):
            await db.open()
        await db.close()

    asyncio.run(main())
