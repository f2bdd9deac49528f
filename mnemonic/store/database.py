"""The one place that opens and configures SQLite connections.

All writes go through a single writer connection inside ``BEGIN IMMEDIATE`` transactions
(serialised by a lock, so a writer never meets SQLITE_BUSY from itself); reads use a small
pool of read-only connections, which WAL lets run beside the writer. With WAL and
``synchronous=NORMAL`` a committed transaction survives the process being killed; only a
power loss can take the last few commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import logging
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar, cast

import aiosqlite

from mnemonic.config import StorageConfig
from mnemonic.errors import StorageUnavailable
from mnemonic.private_files import create_private, restrict

log = logging.getLogger(__name__)
T = TypeVar("T")

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migrations_dir() -> Path:
    """Migrations ship inside the wheel as ``mnemonic/_migrations``; a checkout has them at
    the repository's top level."""
    packaged = Path(__file__).resolve().parents[1] / "_migrations"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "migrations"


def list_migrations(folder: Path | None = None) -> list[tuple[int, Path]]:
    found: list[tuple[int, Path]] = []
    for path in sorted((folder or migrations_dir()).glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if match is None:
            raise RuntimeError(f"migration file name not understood: {path.name}")
        found.append((int(match.group(1)), path))
    numbers = [n for n, _ in found]
    if numbers != list(range(1, len(numbers) + 1)):
        raise RuntimeError(f"migrations must be numbered 1..n without gaps, found {numbers}")
    return found


class SchemaTooNew(RuntimeError):
    """The database was written by a newer build: serving it could corrupt what that build
    relies on, so this one refuses to start and writes nothing to it."""

    def __init__(self, path: Path, found: int, known: int) -> None:
        super().__init__(
            f"{path} has schema version {found}, but this build of mnemonic knows versions up "
            f"to {known}: a newer mnemonic wrote it. Upgrade mnemonic, or move the file aside "
            "(with its -wal and -shm files) to start with an empty store. Nothing was written."
        )
        self.found = found
        self.known = known


def stored_schema_version(path: Path) -> int | None:
    """``user_version`` of the file at ``path``, read without writing (``mode=ro``); None
    when there is no file or SQLite cannot read it (recovery and open report that)."""
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def check_schema(path: Path, folder: Path | None = None) -> None:
    """Raise :class:`SchemaTooNew` before anything touches a file from a newer build."""
    found = stored_schema_version(path)
    known = list_migrations(folder)[-1][0]
    if found is not None and found > known:
        raise SchemaTooNew(path, found, known)


def _private_files(path: Path) -> None:
    """The database and its sidecars are the owner's alone (see ``private_files``); an
    unwritable folder is reported by the open that follows, not here."""
    with contextlib.suppress(OSError):
        create_private(path)
    restrict(path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))
    # backups an older build left readable by anyone before a migration (``_backup``)
    with contextlib.suppress(OSError):
        restrict(*path.parent.glob(f"{glob.escape(path.name)}.v*.bak"))


def configure(conn: sqlite3.Connection, cfg: StorageConfig, *, read_only: bool) -> None:
    """Apply the pragmas every connection needs."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA busy_timeout={int(cfg.busy_timeout_ms)}")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA journal_size_limit={int(cfg.journal_size_limit_bytes)}")
    conn.execute(f"PRAGMA cache_size=-{int(cfg.cache_size_kib)}")
    conn.execute("PRAGMA temp_store=MEMORY")
    if read_only:
        conn.execute("PRAGMA query_only=ON")


def migrate(path: Path, cfg: StorageConfig, folder: Path | None = None) -> int:
    """Bring the database at ``path`` to the newest schema; returns the version.

    Each migration runs in one transaction with ``user_version`` set inside it, so a crash
    leaves either the old or the new schema. Existing data is copied aside first.
    """
    check_schema(path, folder)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        configure(conn, cfg, read_only=False)
        current = int(conn.execute("PRAGMA user_version").fetchone()[0])
        pending = [(n, p) for n, p in list_migrations(folder) if n > current]
        if not pending:
            return current
        if current > 0:
            _backup(conn, path, current)
        for number, file in pending:
            script = file.read_text(encoding="utf-8")
            try:
                conn.executescript(
                    f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;"
                )
            except sqlite3.Error:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            log.info("applied migration %s", file.name)
            current = number
        return current
    finally:
        conn.close()


def _backup(conn: sqlite3.Connection, path: Path, version: int) -> None:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.v{version}.{stamp}.bak")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    create_private(target)  # a copy of every memory: the owner's alone, like the database
    with sqlite3.connect(target) as dest:
        conn.backup(dest)
    dest.close()
    log.info("backed up the database before migrating (%s)", target.name)


class Database:
    """Owns the writer connection and the reader pool of one database file."""

    def __init__(self, path: Path, cfg: StorageConfig) -> None:
        self.path = path
        self._cfg = cfg
        self._writer: aiosqlite.Connection | None = None
        self._write_failure: str | None = None
        self._failed_at = 0.0  # monotonic time of the latest storage failure
        self._written_since_failure = False
        self._write_lock = asyncio.Lock()
        self._readers: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
        self._all_readers: list[aiosqlite.Connection] = []
        self._stale: set[aiosqlite.Connection] = set()  # replaced readers still in use
        self._closing: set[asyncio.Future[None]] = set()
        self._read_only = False  # readers opened immutable: a recovery reopens them too
        self.closed_cleanly = False  # set by ``close``
        self._feed: ChangeFeed | None = None
        self.schema_version = 0

    def follow_changes(self, feed: ChangeFeed) -> None:
        """Have every write transaction report what it changed to ``feed`` (the in-memory
        recall indexes): ``feed.setup`` runs on each writer connection opened from now on,
        ``feed.read`` inside each write transaction before it commits, ``feed.apply`` with
        that result right after the commit, with the write lock still held."""
        self._feed = feed

    async def open(self) -> None:
        """Migrate and open the writer and readers. A data folder that cannot be written
        (read-only mount, full disk at start) still serves reads when the file exists:
        readers open it immutable, writes answer "storage unavailable", and the first
        write after the folder is writable again reopens everything."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _private_files(self.path)
        try:
            await self._open_writable()
        except sqlite3.Error as exc:
            if _storage_code(exc) is None or not self.path.exists():
                raise
            await self._open_read_only(exc)

    async def _open_writable(self) -> None:
        self.schema_version = await asyncio.to_thread(migrate, self.path, self._cfg)
        writer = await self._connect(read_only=False)
        readers = [await self._connect(read_only=True) for _ in range(self._cfg.read_connections)]
        self._writer = writer
        self._swap_readers(readers)
        self._read_only = False

    async def _open_read_only(self, exc: sqlite3.Error) -> None:
        readers = [await self._connect_immutable() for _ in range(self._cfg.read_connections)]
        version = await _on_thread(
            readers[0], lambda c: int(c.execute("PRAGMA user_version").fetchone()[0])
        )
        latest = list_migrations()[-1][0]
        if version > latest:
            for reader in readers:
                await reader.close()
            raise SchemaTooNew(self.path, version, latest)
        if version != latest:
            for reader in readers:
                await reader.close()
            raise exc  # an older schema cannot be served without migrating it first
        self.schema_version = version
        self._swap_readers(readers)
        self._read_only = True
        self._failed(f"the data folder cannot be written ({exc}); serving reads only")
        log.warning("opened %s read-only: %s", self.path, exc)

    async def _reopen_writable(self) -> None:
        """Called with the write lock held when there is no writer: after a read-only
        start everything reopens (the immutable readers would never see new writes);
        after a failed write only the writer does (WAL readers are unaffected). Opening is
        not proof of recovery: see ``write_failure`` for when the failure clears."""
        try:
            if self._read_only:
                await self._open_writable()
            else:
                self._writer = await self._connect(read_only=False)
        except sqlite3.Error as exc:
            if _storage_code(exc) is None:
                raise
            self._failed(f"the data folder cannot be written ({exc}); serving reads only")
            raise StorageUnavailable(f"storage unavailable: {exc}") from exc

    def _swap_readers(self, readers: list[aiosqlite.Connection]) -> None:
        """Replace the reader pool; readers in use are closed when they come back."""
        self._stale.update(self._all_readers)
        while not self._readers.empty():
            idle = self._readers.get_nowait()
            if idle in self._stale:
                self._stale.discard(idle)
                self._closing.add(asyncio.ensure_future(idle.close()))
        self._all_readers = list(readers)
        for reader in readers:
            self._readers.put_nowait(reader)

    async def _connect(self, *, read_only: bool) -> aiosqlite.Connection:
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        conn.row_factory = sqlite3.Row
        await _on_thread(conn, partial(configure, cfg=self._cfg, read_only=read_only))
        if not read_only and self._feed is not None:
            await _on_thread(conn, self._feed.setup)
        return conn

    async def _connect_immutable(self) -> aiosqlite.Connection:
        """A reader that needs no ``-shm``/``-wal`` (which a read-only folder cannot hold):
        SQLite trusts the file not to change, true while nobody can write it."""
        uri = f"{self.path.resolve().as_uri()}?mode=ro&immutable=1"
        conn = await aiosqlite.connect(uri, uri=True, isolation_level=None)
        conn.row_factory = sqlite3.Row
        await conn.execute("PRAGMA query_only=ON")
        return conn

    async def _drop_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                await writer.close()
            except sqlite3.Error as exc:
                log.debug("closing the failed writer: %s", exc)

    async def close(self) -> None:
        """Checkpoint the WAL into the main file, then close every connection.
        ``closed_cleanly`` says whether the checkpoint went through and every connection
        closed (the next start may then skip the page-by-page check, ``recovery.py``)."""
        clean = self._writer is not None and not self._read_only
        if self._writer is not None:
            async with self._write_lock:
                try:
                    await self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error as exc:  # full or read-only: the WAL stays, still valid
                    log.warning("could not checkpoint the WAL at close: %s", exc)
                    clean = False
                await self._writer.close()
            self._writer = None
        for reader in self._all_readers:
            await reader.close()
        self._all_readers.clear()
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        self.closed_cleanly = clean

    async def run_write(
        self, fn: Callable[[sqlite3.Connection], T], *, bookkeeping: bool = False
    ) -> T:
        """Run ``fn`` in one ``BEGIN IMMEDIATE`` transaction on the writer's thread.

        One thread hop per unit of work instead of one per statement; the lock keeps the
        writer's transactions strictly one after another. A ``bookkeeping`` write (a query
        log row) is small enough to fit in WAL pages a nearly full disk still has, so its
        success does not count as the storage having recovered.
        """
        async with self._writer_locked() as writer:
            feed = self._feed
            try:
                result, changed, delta = await _on_thread(
                    writer, partial(_in_transaction, fn=fn, feed=feed)
                )
            except sqlite3.Error as exc:
                if _storage_code(exc) is None:
                    raise
                self._failed(f"{type(exc).__name__}: {exc}")
                log.warning("write failed, storage unavailable: %s", self._write_failure)
                # SQLite may have fallen back to read-only on this connection for good:
                # the next write opens a fresh one (and finds out whether the disk recovered)
                await self._drop_writer()
                raise StorageUnavailable(f"storage unavailable: {exc}") from exc
            # only a commit that changed rows hints that the disk takes writes again: a no-op
            # transaction commits without writing a page even on a full disk
            if self._write_failure is not None and changed and not bookkeeping:
                self._written_since_failure = True
            if feed is not None and delta is not None:
                feed.apply(delta)
            return result

    async def run_maintenance(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` on the writer's thread with the write lock held but no transaction
        open: for what SQLite refuses inside one (``VACUUM``, ``wal_checkpoint``). Used by
        a purge to make deleted bytes leave the file; ``fn`` handles its own errors."""
        async with self._writer_locked() as writer:
            result = await _on_thread(writer, fn)
            feed = self._feed
            if feed is not None:
                # a pragma such as temp_store drops TEMP tables and triggers: set them again
                await _on_thread(writer, feed.setup)
                # what a maintenance step (no transaction of its own) changed, read in one
                delta = await _on_thread(writer, partial(in_read_transaction, fn=feed.read))
                if delta is not None:
                    feed.apply(delta)
            return result

    @contextlib.asynccontextmanager
    async def _writer_locked(self) -> AsyncIterator[aiosqlite.Connection]:
        """The writer, with the write lock held (reopened first after a failure)."""
        if self._writer is None and not self._all_readers:
            raise RuntimeError("database is not open")
        async with self._write_lock:
            if self._writer is None:
                await self._reopen_writable()
            writer = self._writer
            assert writer is not None
            yield writer

    @property
    def write_failure(self) -> str | None:
        """Why writes fail, until they have worked again for ``write_recovery_s``.

        On a nearly full disk some commits still fit (in WAL frames or pages SQLite
        already has) while others fail, so one successful write is no proof: health
        flipped to ok between two 503s. The failure clears once a write that changed rows
        succeeded and no storage error followed for ``storage.write_recovery_s``.
        """
        if (
            self._write_failure is not None
            and self._written_since_failure
            and time.monotonic() - self._failed_at >= self._cfg.write_recovery_s
        ):
            log.info("writes succeed again after: %s", self._write_failure)
            self._write_failure = None
        return self._write_failure

    def _failed(self, reason: str) -> None:
        self._write_failure = reason
        self._failed_at = time.monotonic()
        self._written_since_failure = False

    async def run_read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn`` on a pooled read-only connection's thread."""
        if not self._all_readers:
            raise RuntimeError("database is not open")
        conn = await self._readers.get()
        try:
            return await _on_thread(conn, fn)
        finally:
            if conn in self._stale:
                self._stale.discard(conn)
                await conn.close()
            else:
                self._readers.put_nowait(conn)


# SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN (primary codes)
_STORAGE_CODES = {8, 10, 13, 14}


def _storage_code(exc: sqlite3.Error) -> int | None:
    """The primary result code when ``exc`` means the disk, not the statement, is at fault."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _STORAGE_CODES:
        return code & 0xFF
    text = str(exc).lower()
    if "disk is full" in text or "readonly database" in text or "disk i/o error" in text:
        return 13
    return None


async def _on_thread(conn: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """Run ``fn(sqlite3_connection)`` on the aiosqlite connection's own thread.

    aiosqlite exposes this only as ``_execute``; it is the same mechanism its public
    methods use, and it lets a whole unit of work run without a hop per statement.
    """
    run = cast(Callable[..., Awaitable[T]], conn._execute)
    return await run(fn, conn._conn)


def _in_transaction(
    conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T], feed: ChangeFeed | None
) -> tuple[T, bool, object | None]:
    """``fn``'s result, whether the committed transaction changed any row, and what the
    change feed read of it (None without a feed or changes)."""
    before = conn.total_changes
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
        delta = feed.read(conn) if feed is not None else None
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result, conn.total_changes != before, delta


def in_read_transaction(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """``fn`` inside one read transaction, so everything it reads is of one moment."""
    conn.execute("BEGIN")
    try:
        return fn(conn)
    finally:
        conn.execute("COMMIT")


class ChangeFeed(Protocol):
    """Follows every write (see ``Database.follow_changes``). ``read`` must not raise for
    a fault of its own: a failing read would roll the user's write back."""

    def setup(self, conn: sqlite3.Connection) -> None: ...

    def read(self, conn: sqlite3.Connection) -> object | None: ...

    def apply(self, delta: object) -> None: ...
