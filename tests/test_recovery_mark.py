"""The clean-stop mark: a start after a clean stop skips the page-by-page check (28 s at a
million memories); after anything else (a crash, another writer) the check runs."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path

from mnemonic.app.service import RememberInput
from mnemonic.config import StorageConfig, load_config
from mnemonic.daemon import Daemon
from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.paths import Paths
from mnemonic.store import recovery
from mnemonic.store.database import Database

PAGE = 4096


def _database(path: Path) -> None:
    async def main() -> None:
        db = Database(path, StorageConfig())
        await db.open()

        def fill(conn: sqlite3.Connection) -> None:
            conn.execute("CREATE TABLE filler (x BLOB)")
            conn.executemany("INSERT INTO filler VALUES (?)", [(os.urandom(3000),)] * 200)

        await db.run_write(fill)
        await db.close()
        assert db.closed_cleanly
        recovery.mark_clean(path)

    asyncio.run(main())


def _damage_a_middle_page(path: Path, keep_mtime: bool) -> None:
    st = path.stat()
    data = bytearray(path.read_bytes())
    middle = (len(data) // PAGE // 2) * PAGE
    data[middle : middle + PAGE] = b"\xff" * PAGE  # a b-tree page of garbage
    path.write_bytes(bytes(data))
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_cleanly_closed_file_is_trusted_once(tmp_path: Path) -> None:
    path = tmp_path / "mnemonic.db"
    _database(path)
    mark = path.with_name(path.name + recovery.CLEAN_SUFFIX)
    assert mark.exists()
    # damage the file behind the mark's back (same size, same mtime): the page scan is
    # skipped, which is what makes the start fast, and the mark is used up
    _damage_a_middle_page(path, keep_mtime=True)
    assert recovery.inspect(path) is None
    assert not mark.exists()
    # the next start has no mark: the full check runs and finds the damage
    problem = recovery.inspect(path)
    assert problem is not None and problem.kind == "corrupt"


def test_a_file_changed_after_the_mark_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "mnemonic.db"
    _database(path)
    _damage_a_middle_page(path, keep_mtime=False)  # another writer, or a crash and restore
    problem = recovery.inspect(path)
    assert problem is not None and problem.kind == "corrupt"


def test_the_daemon_marks_a_clean_stop_and_the_next_start_uses_the_mark(
    paths: Paths, embedder: OnnxEmbedder
) -> None:
    mark = paths.database.with_name(paths.database.name + recovery.CLEAN_SUFFIX)

    async def life() -> None:
        daemon = Daemon(load_config(None), paths, "t", embedder=embedder)
        await daemon.start()
        await daemon.service.remember(RememberInput("a clean stop is marked"))
        await daemon.stop()

    asyncio.run(life())
    assert mark.exists()
    assert recovery.inspect(paths.database) is None  # the runner's check at the next start
    assert not mark.exists()
