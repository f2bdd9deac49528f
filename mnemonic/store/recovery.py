"""Check the database file before the store opens it, and move a corrupt one aside.

A daemon that crashes on a corrupt file gets restarted by its supervisor and crashes again:
a crash loop that helps nobody. Instead the runner asks :func:`inspect` first; when the file
is not a usable SQLite database it is renamed (with its ``-wal``/``-shm``) to
``<name>.corrupt-<UTC timestamp>``, where a person can still try ``sqlite3 .recover`` on it,
and the daemon starts on a fresh file and reports the reason as "degraded" health.

Only real corruption counts (SQLITE_CORRUPT, SQLITE_NOTADB, a failing ``quick_check``, a
file shorter than its own header says). A file that merely cannot be opened (permissions,
I/O errors, a locked file) is left alone: moving it would throw away good data.

``quick_check`` reads every page: 28 s for the 4.5 GB file of a million memories, which
every start paid. A clean stop therefore leaves a mark (``<name>.clean``: the file's size
and modification time once the store is closed); a start that finds the file exactly as
that mark says, with no WAL frames, skips the page scan. The mark is removed at every
start, so a crash, a kill or any other writer since means a full check next time.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

HEADER = b"SQLite format 3\x00"
HEADER_SIZE = 100
SIDECARS = ("-wal", "-shm", "-journal")
CLEAN_SUFFIX = ".clean"
_CORRUPTION_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB

Kind = Literal["not-sqlite", "truncated", "corrupt", "orphan-wal"]


@dataclass(frozen=True, slots=True)
class Problem:
    kind: Kind
    detail: str


def mark_clean(path: Path) -> None:
    """After a clean close: the next start may trust the file if nothing touched it."""
    try:
        st = path.stat()
        _sidecar(path, CLEAN_SUFFIX).write_text(f"{st.st_size} {st.st_mtime_ns}\n")
    except OSError as exc:  # the next start simply checks the pages
        log.warning("could not mark %s as cleanly closed: %s", path, exc)


def _closed_cleanly(path: Path) -> bool:
    """Whether the last stop marked the file and it is unchanged since; the mark is
    removed either way (it vouches for one start only)."""
    mark = _sidecar(path, CLEAN_SUFFIX)
    try:
        text = mark.read_text()
        mark.unlink()
        st = path.stat()
    except OSError:
        return False
    return text.split() == [str(st.st_size), str(st.st_mtime_ns)]


def inspect(path: Path, *, timeout_s: float = 5.0) -> Problem | None:
    """What is wrong with the database at ``path``, or None when it looks usable.

    A missing or empty file is fine (SQLite treats it as a new database). The cheap checks
    on the header run first; ``PRAGMA quick_check`` then reads every page once, unless the
    last stop was clean and nothing touched the file since (module docstring).
    """
    wal = _sidecar(path, "-wal")
    if not path.exists():
        if wal.exists() and wal.stat().st_size > 0:
            return Problem("orphan-wal", f"{wal.name} exists without its database file")
        return None
    size = path.stat().st_size
    if size == 0:
        return None
    try:
        with path.open("rb") as handle:
            head = handle.read(HEADER_SIZE)
    except OSError as exc:  # unreadable is not corrupt: leave it for the store to report
        log.warning("could not read %s to check it: %s", path, exc)
        return None
    wal_has_frames = wal.exists() and wal.stat().st_size > 0
    clean = _closed_cleanly(path) and not wal_has_frames
    problem = check_header(head, size, wal_has_frames=wal_has_frames)
    if problem is not None or clean:
        return problem
    return _quick_check(path, timeout_s)


def check_header(head: bytes, size: int, *, wal_has_frames: bool) -> Problem | None:
    """Judge the first 100 bytes and the file size (pure, so it has table tests).

    The page count in the header is trusted only when its validity stamp matches and no
    WAL is waiting to be replayed: a checkpoint killed midway can leave page 1 newer than
    the rest of the file, and replaying the WAL repairs that.
    """
    if not head.startswith(HEADER[: min(len(head), len(HEADER))]):
        return Problem("not-sqlite", "the file does not start with the SQLite header")
    if len(head) < HEADER_SIZE:
        return Problem("truncated", f"only {size} bytes, shorter than the 100-byte header")
    raw_page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if raw_page_size == 1 else raw_page_size
    if page_size < 512 or page_size & (page_size - 1):
        return Problem("not-sqlite", f"the header names an invalid page size ({raw_page_size})")
    if wal_has_frames:
        return None
    if size % page_size:
        return Problem("truncated", f"{size} bytes is not a whole number of {page_size}-byte pages")
    pages = int.from_bytes(head[28:32], "big")
    stamp_valid = head[24:28] == head[92:96]
    if stamp_valid and pages and size < pages * page_size:
        return Problem("truncated", f"{size} bytes but the header says {pages * page_size}")
    return None


def _quick_check(path: Path, timeout_s: float) -> Problem | None:
    # read-write on purpose: a read-only connection cannot always replay a WAL left behind by
    # a killed process, and replaying it is exactly what the daemon will do next anyway
    try:
        conn = sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
    except sqlite3.Error as exc:
        log.warning("could not open %s to check it: %s", path, exc)
        return None
    try:
        rows = [str(row[0]) for row in conn.execute("PRAGMA quick_check(5)").fetchall()]
    except sqlite3.Error as exc:
        code = getattr(exc, "sqlite_errorcode", -1)
        if isinstance(code, int) and code & 0xFF in _CORRUPTION_CODES:
            return Problem("corrupt", str(exc))
        log.warning("could not check %s: %s", path, exc)
        return None
    finally:
        conn.close()
    if rows != ["ok"]:
        return Problem("corrupt", "quick_check: " + "; ".join(rows)[:300])
    return None


def corrupt_name(path: Path, now: datetime) -> Path:
    """``<name>.corrupt-<UTC timestamp>``, with a counter if that name is taken."""
    stamp = now.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    base = path.with_name(f"{path.name}.corrupt-{stamp}")
    candidate, n = base, 1
    while any(p.exists() for p in (candidate, *(_sidecar(candidate, s) for s in SIDECARS))):
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def move_aside(path: Path, now: datetime) -> Path:
    """Rename the database and its sidecar files to the ``.corrupt-`` name; return it.

    Sidecars go first: a stale ``-wal`` left beside a fresh database would be replayed
    into it. The sidecars keep their suffix so the moved set still opens as one database.
    """
    target = corrupt_name(path, now)
    for suffix in SIDECARS:
        sidecar = _sidecar(path, suffix)
        if sidecar.exists():
            os.rename(sidecar, _sidecar(target, suffix))
    if path.exists():
        os.rename(path, target)
    _fsync_dir(path.parent)
    return target


def recover(path: Path, now: datetime) -> str | None:
    """Inspect ``path``; if corrupt, move it aside and return the reason for health."""
    problem = inspect(path)
    if problem is None:
        return None
    target = move_aside(path, now)
    moved = _sidecar(target, "-wal") if problem.kind == "orphan-wal" else target
    log.error(
        "database %s is unusable (%s: %s); moved aside to %s, starting with an empty database",
        path,
        problem.kind,
        problem.detail,
        moved,
    )
    return (
        f"database was unusable at start ({problem.kind}: {problem.detail}); "
        f"moved aside to {moved} and started with an empty database"
    )


def _sidecar(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _fsync_dir(folder: Path) -> None:
    """Make the renames durable; best effort where directories cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
