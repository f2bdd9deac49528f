"""What the filesystem watcher has seen: a bounded per-root index, the tree walk that
reconciles it, and the small state file that carries it across restarts.

inotify is not a complete record: it misses files written into a folder before the watch
on that folder exists, and its kernel queue overflows silently under a flood. So the
watcher keeps, per root, ``relative path -> fingerprint`` (size and mtime packed into one
int) for every eligible file, and periodically walks the tree comparing. With the index
saved at stop, the first walk after a start also reports what changed while the daemon
was not running.

Memory: about 150 bytes per file on CPython 3.11 (``bench/watch_fs.py`` measured 154 for
100,000 files with 30-character relative paths: the key string, the fingerprint int and the
dict slot), so the default cap of 200,000 files per root is about 30 MB at worst. Past the
cap new files are not indexed: they still produce live events, but reconciliation skips
files it does not know (it cannot tell a new one from an old one).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from mnemonic.watchers.fs_ignore import IgnoreRules

log = logging.getLogger(__name__)

_SIZE_BITS = 40
_SIZE_MASK = (1 << _SIZE_BITS) - 1
STATE_VERSION = 1

OnError = Callable[[str, OSError], None]


def fingerprint(size: int, mtime_ns: int) -> int:
    """Size and mtime in one int: equal fingerprints mean "unchanged" (sizes wrap at 1 TB,
    which only weakens change detection for files the watcher never reads anyway)."""
    return (mtime_ns << _SIZE_BITS) | (size & _SIZE_MASK)


def fingerprint_size(value: int) -> int:
    return value & _SIZE_MASK


class RootIndex:
    """``relative path -> fingerprint`` for one root, at most ``max_files`` entries."""

    __slots__ = ("changes", "files", "full", "max_files", "root")

    def __init__(self, root: str, max_files: int) -> None:
        self.root = root
        self.max_files = max_files
        self.files: dict[str, int] = {}
        self.full = False
        self.changes = 0  # bumped on every put/pop, so savers can tell "unchanged"

    def __len__(self) -> int:
        return len(self.files)

    def key(self, path: str) -> str:
        return path[len(self.root) + 1 :]

    def get(self, path: str) -> int | None:
        return self.files.get(self.key(path))

    def put(self, path: str, value: int) -> bool:
        """Record ``path``; False (and ``full`` set) when the cap refuses a new entry."""
        key = self.key(path)
        if key not in self.files and len(self.files) >= self.max_files:
            self.full = True
            return False
        self.files[key] = value
        self.changes += 1
        return True

    def pop(self, path: str) -> int | None:
        self.changes += 1
        return self.files.pop(self.key(path), None)

    def load(self, files: dict[str, int]) -> None:
        """Start from a saved index (truncated to the cap)."""
        for key, value in files.items():
            if len(self.files) >= self.max_files:
                self.full = True
                break
            self.files[key] = value
        self.changes += 1

    def under(self, folder: str) -> list[str]:
        """Absolute paths of indexed files inside ``folder`` (a linear scan: only used when
        a whole folder disappears)."""
        prefix = "" if folder == self.root else self.key(folder) + os.sep
        return [os.path.join(self.root, k) for k in self.files if k.startswith(prefix)]


def walk_files(
    top: str,
    rules: IgnoreRules,
    on_error: OnError,
    stop: threading.Event | None = None,
) -> Iterator[tuple[str, os.stat_result]]:
    """Every eligible regular file under ``top`` with its ``lstat``.

    Symlinks are never followed (neither to folders nor to files), and each folder's
    (device, inode) is visited once, so link and bind-mount loops terminate. Ignored
    folders are not entered. A folder that cannot be listed goes to ``on_error`` and is
    skipped; one that vanished mid-walk is skipped silently. ``stop`` ends the walk early
    (checked per folder) so a cancelled watcher does not wait for a long walk.
    """
    seen: set[tuple[int, int]] = set()
    stack = [top]
    while stack:
        if stop is not None and stop.is_set():
            return
        folder = stack.pop()
        try:
            folder_stat = os.stat(folder, follow_symlinks=False)
            ident = (folder_stat.st_dev, folder_stat.st_ino)
            if ident in seen or not stat.S_ISDIR(folder_stat.st_mode):
                continue
            seen.add(ident)
            with os.scandir(folder) as entries:
                listed = list(entries)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            on_error(folder, exc)
            continue
        for entry in listed:
            yield from _visit(entry, rules, stack, on_error)


def _visit(
    entry: os.DirEntry[str], rules: IgnoreRules, stack: list[str], on_error: OnError
) -> Iterator[tuple[str, os.stat_result]]:
    try:
        if entry.is_dir(follow_symlinks=False):
            if not rules.entry_ignored(entry.path, True):
                stack.append(entry.path)
            return
        if not entry.is_file(follow_symlinks=False):
            return  # symlinks, FIFOs, sockets, devices: never text files of their own
        if rules.entry_ignored(entry.path, False):
            return
        yield entry.path, entry.stat(follow_symlinks=False)
    except FileNotFoundError:
        return
    except OSError as exc:
        on_error(entry.path, exc)


# --- persistence -------------------------------------------------------------------------


def save_state(path: Path, indexes: dict[str, RootIndex]) -> None:
    """Write every root's index atomically (temporary file, then rename), private to the
    user: file names can be personal."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    payload = {
        "version": STATE_VERSION,
        "roots": {root: list(index.files.items()) for root, index in indexes.items()},
    }
    fd, tmp = tempfile.mkstemp(prefix=".fs-index-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            json.dump(payload, handle, separators=(",", ":"))  # ensure_ascii keeps odd names
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_state(path: Path) -> dict[str, dict[str, int]]:
    """The saved indexes by root, or ``{}`` when there is no usable state file."""
    try:
        with path.open(encoding="ascii") as handle:
            payload = json.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable filesystem watcher state %s: %s", path, exc)
        return {}
    if not isinstance(payload, dict) or payload.get("version") != STATE_VERSION:
        return {}
    roots = payload.get("roots")
    if not isinstance(roots, dict):
        return {}
    result: dict[str, dict[str, int]] = {}
    for root, items in roots.items():
        if isinstance(root, str) and isinstance(items, list):
            result[root] = {str(k): int(v) for k, v in (pair for pair in items if _is_pair(pair))}
    return result


def _is_pair(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], int)
    )
