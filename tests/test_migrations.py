"""Migrations: numbered, applied once, tracked by user_version, backed up before upgrades."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import stat
from pathlib import Path

from mnemonic.config import StorageConfig
from mnemonic.store.database import Database, list_migrations, migrate, migrations_dir


def test_fresh_database_gets_every_migration(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    version = migrate(db, StorageConfig())
    assert version == len(list_migrations())
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == version
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "raw_memories",
        "memories",
        "memories_fts",
        "memory_vectors",
        "associations",
        "retrieval_feedback",
        "memory_amendments",
        "system_meta",
    } <= tables
    assert migrate(db, StorageConfig()) == version  # idempotent


def test_upgrade_backs_up_and_failed_migration_rolls_back(tmp_path: Path) -> None:
    folder = tmp_path / "migrations"
    shutil.copytree(migrations_dir(), folder)
    db = tmp_path / "m.db"
    base = migrate(db, StorageConfig(), folder)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO system_meta VALUES ('k', 'v', 'now')")
    bad = folder / f"{base + 1:04d}_broken.sql"
    bad.write_text("CREATE TABLE half (x INTEGER);\nTHIS IS NOT SQL;\n", encoding="utf-8")
    try:
        migrate(db, StorageConfig(), folder)
        raise AssertionError("broken migration applied")
    except sqlite3.OperationalError:
        pass
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == base
        assert conn.execute("SELECT name FROM sqlite_master WHERE name='half'").fetchone() is None
    backups = list(tmp_path.glob("m.db.v*.bak"))
    assert backups
    assert stat.S_IMODE(backups[0].stat().st_mode) == 0o600  # a copy of every memory
    with sqlite3.connect(backups[0]) as conn:
        assert conn.execute("SELECT value FROM system_meta WHERE key='k'").fetchone()[0] == "v"
    bad.write_text("CREATE TABLE half (x INTEGER);\n", encoding="utf-8")
    assert migrate(db, StorageConfig(), folder) == base + 1


def test_opening_the_store_makes_an_older_builds_readable_backups_private(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    migrate(db, StorageConfig())
    old = tmp_path / "m.db.v3.20260101T000000Z.bak"
    old.write_bytes(b"a copy of every memory")
    old.chmod(0o644)
    other = tmp_path / "notes.bak"
    other.write_bytes(b"not ours")
    other.chmod(0o644)

    async def open_and_close() -> None:
        database = Database(db, StorageConfig())
        await database.open()
        await database.close()

    asyncio.run(open_and_close())
    assert stat.S_IMODE(old.stat().st_mode) == 0o600
    assert stat.S_IMODE(other.stat().st_mode) == 0o644  # only the store's own backups
