"""Changing a file that belongs to someone else, safely: read it once, back it up before
the change, write the new text atomically with the old mode, and refuse when the file
changed under us.

A client config file is the user's (``~/.claude.json`` also holds Claude Code's own state
and is rewritten by it while it runs), so: the backup is a byte copy taken right before
the write (``<file>.mnemonic-backup-<UTC timestamp>``); the new text goes to a temporary
file in the same folder, is flushed to disk and then ``os.replace``d over the old one, so
a crash leaves the old file or the new one, never half of each; a symlinked file (dotfile
managers) is written through to its target instead of being replaced by a plain file; and
if the bytes on disk differ from what we read when we are about to replace them, we stop
rather than overwrite the other writer's change.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from mnemonic.mcp_install.model import write_error

BACKUP_MARK = ".mnemonic-backup-"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A file as read: its real path, its bytes (``None``: it does not exist), its mode."""

    path: Path
    data: bytes | None
    mode: int | None

    @property
    def text(self) -> str:
        return "" if self.data is None else self.data.decode("utf-8-sig")


def read(path: Path) -> Snapshot:
    """The file behind ``path`` (through symlinks); a missing file is an empty snapshot."""
    real = path.resolve() if path.is_symlink() else path
    try:
        data = real.read_bytes()
        mode = stat.S_IMODE(real.stat().st_mode)
    except FileNotFoundError:
        return Snapshot(real, None, None)
    except IsADirectoryError:
        raise write_error(f"{path} is a folder, not a config file") from None
    except OSError as exc:
        raise write_error(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise write_error(f"{path} is not UTF-8 text; left untouched") from None
    return Snapshot(real, data, mode)


def backup_path(path: Path, now: datetime) -> Path:
    """A backup name beside ``path`` that does not exist yet."""
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}{BACKUP_MARK}{stamp}")
    counter = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}{BACKUP_MARK}{stamp}-{counter}")
        counter += 1
    return candidate


def backup(snapshot: Snapshot, now: datetime) -> Path:
    """Copy the bytes we read (not whatever is on disk now) beside the file, same mode."""
    assert snapshot.data is not None
    target = backup_path(snapshot.path, now)
    try:
        with open(target, "xb") as handle:
            handle.write(snapshot.data)
        if snapshot.mode is not None:
            target.chmod(snapshot.mode)
    except OSError as exc:
        raise write_error(f"cannot back up {snapshot.path}: {exc.strerror or exc}") from None
    return target


def _default_mode() -> int:
    """What ``open()`` would give a new file: 0o666 less the umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(snapshot: Snapshot, text: str) -> None:
    """Replace the file with ``text`` atomically, keeping its mode; refuse when it changed
    since ``snapshot`` was read."""
    path = snapshot.path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    mode = snapshot.mode if snapshot.mode is not None else _default_mode()
    try:
        fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise write_error(f"cannot write in {path.parent}: {exc.strerror or exc}") from None
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        temp.chmod(mode)
        _check_unchanged(snapshot)
        os.replace(temp, path)
    except OSError as exc:
        raise write_error(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


def _check_unchanged(snapshot: Snapshot) -> None:
    try:
        now = snapshot.path.read_bytes()
    except FileNotFoundError:
        now = None
    if now != snapshot.data:
        raise write_error(
            f"{snapshot.path} changed while mnemonic was editing it (is the client running "
            "and rewriting it?); nothing was written",
            fix="run the command again",
        )


def unified_diff(path: Path, old: str, new: str) -> str:
    """What the change does to the file, as ``diff -u`` shows it."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=str(path) if old else "/dev/null",
        tofile=str(path),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
