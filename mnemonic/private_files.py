"""Files only their owner may read.

The database, its WAL, the logs and config.yaml hold memory content (redacted, but still a
person's work) and settings. Their folders are 0700, but a folder's mode is one ``chmod``
away from being opened up, and backups or copies keep the files' own modes; so the files
themselves are 0600 as well. SQLite gives a database's ``-wal`` and ``-shm`` files the
mode of the database file, so creating that file 0600 first is enough for all three.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import stat
from io import TextIOWrapper
from pathlib import Path

PRIVATE_MODE = 0o600


def create_private(path: Path) -> None:
    """Create ``path`` empty with mode 0600 if it does not exist (never truncates)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_MODE)
    except FileExistsError:
        return
    os.close(fd)


def write_private_text(path: Path, text: str) -> None:
    """Write ``text`` to a new or existing file, leaving it 0600."""
    create_private(path)
    restrict(path)
    path.write_text(text, encoding="utf-8")


def restrict(*paths: Path) -> list[Path]:
    """Take group and other permissions off each existing file; returns those changed
    (files made by an older build, or by a tool with a looser umask)."""
    changed: list[Path] = []
    for path in paths:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode & 0o077:
                path.chmod(mode & 0o700)
                changed.append(path)
        except OSError:
            continue
    return changed


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log whose current and rotated files are created 0600."""

    def _open(self) -> TextIOWrapper:
        create_private(Path(self.baseFilename))
        restrict(Path(self.baseFilename))
        return super()._open()
