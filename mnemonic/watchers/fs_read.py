"""Reading one file for the filesystem watcher, safely: never block, never follow a link,
never read a secret, never read more than the cap.

The order of checks is the point. ``lstat`` first, so a symlink, a FIFO or a device is
recognised without opening it (opening a FIFO for reading blocks until a writer appears);
secret files are never opened at all; the size cap is applied before reading, so a 10 GB
sparse file costs one ``stat``; the file is then opened with ``O_NOFOLLOW | O_NONBLOCK``
and checked again with ``fstat``, because it may have been swapped for something else
between the two calls. A file that disappears at any point is reported as missing, which
the watcher turns into a deletion or nothing.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import Literal

BINARY_SNIFF_BYTES = 8000  # what git and grep look at to call a file binary

Status = Literal["ok", "missing", "directory", "symlink", "special", "unreadable"]


@dataclass(frozen=True, slots=True)
class FileSnapshot:
    """What one look at a path found. ``text`` is None when only metadata is kept, and
    ``reason`` then says why (``secret``, ``too_large``, ``binary``)."""

    status: Status
    size: int = 0
    mtime_ns: int = 0
    text: str | None = None
    reason: str | None = None
    decode_errors: bool = False
    error: str | None = None
    offset: int = 0  # where ``text`` starts in the file (a log tail)
    restarted: bool = False  # a log tail read from 0: the file shrank (truncated, rotated)


_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_MISSING_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR})


def read_snapshot(path: str, max_bytes: int, *, secret: bool) -> FileSnapshot:
    """Look at ``path`` and read its text if it is a small, non-secret, text file."""
    looked = _look(path, secret=secret)
    if isinstance(looked, FileSnapshot):
        return looked
    st = looked
    if st.st_size > max_bytes:
        return _meta(st, "too_large")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # replaced by a symlink since the lstat
            return FileSnapshot("symlink")
        return _failure(exc)
    try:
        st = os.fstat(fd)
        swapped = _classify_mode(st.st_mode)
        if swapped is not None:
            return FileSnapshot(swapped, size=st.st_size, mtime_ns=st.st_mtime_ns)
        if st.st_size > max_bytes:
            return _meta(st, "too_large")
        data = _read_at_most(fd, max_bytes + 1)
    except OSError as exc:
        return _failure(exc)
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew while we looked
        return _meta(st, "too_large")
    return _decode(st, data)


def _classify_mode(mode: int) -> Status | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "directory"
    return "special"  # FIFO, socket, device: reading could block or never end


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _decode(st: os.stat_result, data: bytes) -> FileSnapshot:
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return _meta(st, "binary")
    try:
        text = data.decode("utf-8")
        errors = False
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        errors = True
    return FileSnapshot(
        "ok", size=st.st_size, mtime_ns=st.st_mtime_ns, text=text, decode_errors=errors
    )


def _meta(st: os.stat_result, reason: str) -> FileSnapshot:
    """Sizes and times always come from one ``stat``, so they match what a later walk sees
    for an unchanged file (the index compares exactly these)."""
    return FileSnapshot("ok", size=st.st_size, mtime_ns=st.st_mtime_ns, reason=reason)


def _look(path: str, *, secret: bool) -> os.stat_result | FileSnapshot:
    """``lstat`` and the checks every read starts with: the answer itself when the path is
    gone, not a regular file, or a secret file (never opened); else its stat."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return _failure(exc)
    early = _classify_mode(st.st_mode)
    if early is not None:
        return FileSnapshot(early, size=st.st_size, mtime_ns=st.st_mtime_ns)
    if secret:
        return _meta(st, "secret")
    return st


def _failure(exc: OSError) -> FileSnapshot:
    if exc.errno in _MISSING_ERRNOS:
        return FileSnapshot("missing")
    return FileSnapshot("unreadable", error=f"{exc.strerror or type(exc).__name__}")


def read_tail(path: str, known_size: int | None, max_bytes: int, *, secret: bool) -> FileSnapshot:
    """What was appended to a log file since it was ``known_size`` bytes long (None: never
    read), at most its last ``max_bytes`` bytes, starting at a line when cut. A file now
    shorter than ``known_size`` was truncated or rotated: it is read from the start again.
    The same safety rules as :func:`read_snapshot` apply (no links, FIFOs or secrets)."""
    looked = _look(path, secret=secret)
    if isinstance(looked, FileSnapshot):
        return looked
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return FileSnapshot("symlink")
        return _failure(exc)
    try:
        st = os.fstat(fd)
        swapped = _classify_mode(st.st_mode)
        if swapped is not None:
            return FileSnapshot(swapped, size=st.st_size, mtime_ns=st.st_mtime_ns)
        size = st.st_size
        restarted = known_size is not None and known_size > size
        start = known_size if known_size is not None and not restarted else 0
        cut = size - start > max_bytes
        if cut:
            start = size - max_bytes
        os.lseek(fd, start, os.SEEK_SET)
        data = _read_at_most(fd, size - start)
    except OSError as exc:
        return _failure(exc)
    finally:
        os.close(fd)
    if cut and (newline := data.find(b"\n")) >= 0:  # begin at a whole line
        data, start = data[newline + 1 :], start + newline + 1
    snap = _decode(st, data)
    if snap.text is None:
        return snap
    return FileSnapshot(
        "ok",
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        text=snap.text,
        decode_errors=snap.decode_errors,
        offset=start,
        restarted=restarted,
    )
