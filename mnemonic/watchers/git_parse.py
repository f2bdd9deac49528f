"""Pure parsing for the git watcher: reflog lines, ``diff-tree``/``status`` output, and the
bounded summaries built from them.

Nothing here runs git or touches the disk, so every rule has a table test. The output
parsers are incremental (``feed`` bytes as they arrive) and keep bounded state whatever the
size of the output: a commit or checkout of 50,000 files costs counts, a handful of example
paths and a capped table of folders, never a list of 50,000 names.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from enum import StrEnum

ZERO_SHA = re.compile(r"0{40}(?:0{24})?")
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_REFLOG = re.compile(
    r"(?P<old>[0-9a-f]{40,64}) (?P<new>[0-9a-f]{40,64}) (?P<who>[^\t]{0,1024}?)"
    r" (?P<ts>\d{1,12}) (?P<tz>[+-]\d{4})(?:\t(?P<msg>.*))?"
)
_CHECKOUT = re.compile(r"checkout: moving from (?P<src>.{1,1024}) to (?P<dst>.{1,1024})")
_FOLDER_CAP = 4096  # distinct folders counted before the rest go to "other"


class Move(StrEnum):
    """What a reflog entry means for the watcher."""

    SWITCH = "switch"  # checkout/switch: a branch switch, no new commits
    JUMP = "jump"  # HEAD moved to existing history (clone, rebase start): nothing new
    COMMITS = "commits"  # commit, merge, pull, cherry-pick, rebase pick, reset...: old..new


@dataclass(frozen=True, slots=True)
class ReflogEntry:
    old: str | None  # None for the first entry of a new repository
    new: str
    at: datetime | None
    message: str

    @property
    def move(self) -> Move:
        return classify(self.message)

    def switch(self) -> tuple[str, str] | None:
        """(from, to) names of a checkout entry, else None."""
        m = _CHECKOUT.fullmatch(self.message)
        return (m["src"], m["dst"]) if m else None


def parse_reflog_line(line: str) -> ReflogEntry | None:
    """One line of ``logs/HEAD``: ``old new Name <email> ts tz<TAB>message``; None when
    the line is not one (a torn write is read again on the next poll)."""
    m = _REFLOG.fullmatch(line.rstrip("\n"))
    if m is None:
        return None
    old = None if ZERO_SHA.fullmatch(m["old"]) else m["old"]
    return ReflogEntry(old, m["new"], _timestamp(m["ts"], m["tz"]), m["msg"] or "")


def _timestamp(ts: str, tz: str) -> datetime | None:
    try:
        sign = -1 if tz[0] == "-" else 1
        offset = timezone(sign * timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5])))
        return datetime.fromtimestamp(int(ts), tz=offset).astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        return None


def classify(message: str) -> Move:
    if message.startswith("checkout: moving from "):
        return Move.SWITCH
    if message.startswith("clone:") or "(start)" in message.split(":", 1)[0]:
        return Move.JUMP
    return Move.COMMITS


def split_complete_lines(data: bytes) -> tuple[list[str], int]:
    """The complete lines in ``data`` and how many bytes they span (a partial last line
    is left for the next read)."""
    end = data.rfind(b"\n")
    if end < 0:
        return [], 0
    text = data[: end + 1].decode("utf-8", errors="replace")
    return text.splitlines(), end + 1


def display_ref(name: str | None) -> str:
    """A branch name for people: ``refs/heads/x`` -> ``x``; a full hash -> ``detached at
    1a2b3c4``; None -> ``detached HEAD``."""
    if not name:
        return "detached HEAD"
    if _SHA.fullmatch(name):
        return f"detached at {name[:7]}"
    return name.removeprefix("refs/heads/")


# --- incremental output parsers ------------------------------------------------------------


@dataclass(slots=True)
class PathTally:
    """Counts paths by folder with bounded memory, keeping the first few as examples."""

    max_examples: int
    total: int = 0
    examples: list[str] = field(default_factory=list)
    folders: Counter[str] = field(default_factory=Counter)

    def add(self, path: str) -> None:
        self.total += 1
        if len(self.examples) < self.max_examples:
            self.examples.append(path)
        key = folder_key(path)
        if key in self.folders or len(self.folders) < _FOLDER_CAP:
            self.folders[key] += 1
        else:
            self.folders["other"] += 1

    def top_folders(self, n: int = 5) -> list[tuple[str, int]]:
        """The busiest folders; one level deeper when a single top folder holds almost all
        (``vendor/`` alone says less than ``vendor/lib/`` and ``vendor/docs/``)."""
        top: Counter[str] = Counter()
        for key, count in self.folders.items():
            top[_shown(key.split("/", 1)[0])] += count
        if len(top) == 1 and len(self.folders) > 1:
            top = Counter({_shown(k): v for k, v in self.folders.items()})
        return top.most_common(n)


def _shown(key: str) -> str:
    return key if key in (".", "other") else key + "/"


def folder_key(path: str) -> str:
    """The first two folders of a path (``src/app/x.py`` -> ``src/app``; ``a.py`` -> ``.``)."""
    parts = path.split("/")
    if len(parts) == 1:
        return "."
    return "/".join(parts[: min(2, len(parts) - 1)])


class _NulRecords:
    """Splits a NUL-separated byte stream into records across chunk boundaries."""

    def __init__(self) -> None:
        self._rest = b""

    def records(self, chunk: bytes) -> list[bytes]:
        if not chunk:
            return []
        parts = (self._rest + chunk).split(b"\0")
        self._rest = parts.pop()
        return parts


@dataclass(slots=True)
class DiffSummary:
    """What changed between two trees: counts, line totals (when known) and examples."""

    tally: PathTally
    added: int = 0
    modified: int = 0
    deleted: int = 0
    insertions: int = 0
    deletions: int = 0
    binary: int = 0
    lines_counted: bool = False

    @property
    def files(self) -> int:
        return self.tally.total


class NameStatusParser:
    """Reads ``git diff-tree -r -z --name-status`` (tree comparison only: cheap even for
    50,000 files, because no blob is opened)."""

    def __init__(self, max_examples: int) -> None:
        self.summary = DiffSummary(PathTally(max_examples))
        self._split = _NulRecords()
        self._status: str | None = None

    def write(self, chunk: bytes) -> int:
        for record in self._split.records(chunk):
            if self._status is None:
                self._status = record[:1].decode("ascii", errors="replace")
                continue
            self._count(self._status, record.decode("utf-8", errors="replace"))
            self._status = None
        return len(chunk)

    def _count(self, status: str, path: str) -> None:
        s = self.summary
        if status == "A":
            s.added += 1
        elif status == "D":
            s.deleted += 1
        else:
            s.modified += 1
        s.tally.add(path)


class NumstatParser:
    """Reads ``git diff-tree -r -z --numstat`` into line totals (``-`` marks a binary
    file). Paths are not kept: the name-status pass already has them."""

    def __init__(self) -> None:
        self.insertions = 0
        self.deletions = 0
        self.binary = 0
        self._split = _NulRecords()

    def write(self, chunk: bytes) -> int:
        for record in self._split.records(chunk):
            fields = record.split(b"\t", 2)
            if len(fields) < 3:
                continue
            if fields[0] == b"-":
                self.binary += 1
                continue
            try:
                self.insertions += int(fields[0])
                self.deletions += int(fields[1])
            except ValueError:
                continue
        return len(chunk)


@dataclass(slots=True)
class StatusSummary:
    """The working tree against HEAD, from ``git status --porcelain -z``."""

    tally: PathTally
    modified: int = 0
    added: int = 0
    deleted: int = 0
    untracked: int = 0
    conflicted: int = 0
    digest: str = ""  # of the set of changed paths: an event only when it changes

    @property
    def changed(self) -> int:
        return self.tally.total


class StatusParser:
    """Reads ``git status --porcelain=v1 -z --no-renames``: ``XY path`` records."""

    def __init__(self, max_examples: int) -> None:
        self.summary = StatusSummary(PathTally(max_examples))
        self._split = _NulRecords()
        self._hash = hashlib.blake2b(digest_size=16)
        self.summary.digest = self._hash.hexdigest()

    def write(self, chunk: bytes) -> int:
        for record in self._split.records(chunk):
            if len(record) < 4:
                continue
            self._hash.update(record[3:] + b"\0")
            xy = record[:2].decode("ascii", errors="replace")
            self._count(xy, record[3:].decode("utf-8", errors="replace"))
        self.summary.digest = self._hash.hexdigest()
        return len(chunk)

    def _count(self, xy: str, path: str) -> None:
        s = self.summary
        if "?" in xy:
            s.untracked += 1
        elif "U" in xy or xy in ("AA", "DD"):
            s.conflicted += 1
        elif "D" in xy:
            s.deleted += 1
        elif "A" in xy:
            s.added += 1
        else:
            s.modified += 1
        s.tally.add(path)


EMPTY_STATUS_DIGEST = hashlib.blake2b(digest_size=16).hexdigest()
