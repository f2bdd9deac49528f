"""The terminal watcher: new commands from bash, zsh and fish history files.

It polls the files (cheap: one ``stat`` each when nothing changed) rather than using
inotify, because shells rewrite their history by writing a new file and renaming it over
the old one (zsh's ``HIST_SAVE_BY_COPY``, bash's trimming to ``HISTFILESIZE``), which a
watch on the old inode would miss.

Per file it remembers the inode, the offset read up to, a digest of the bytes just before
that offset and the keys (timestamp, command) of the last entries, in a JSON file under the
state folder, so a restart resumes where it stopped. A new inode, a file shorter than the
offset or changed bytes before it mean the file was rewritten: the watcher reads it again
and resumes after the last entries it had already seen, so a rewrite re-imports nothing.

A file seen for the first time (at the first start, or when it appears later) contributes
only its last ``initial_entries`` commands: enough for mnemonic to know what the user was
just doing, without turning years of history into thousands of memories at once.

Commands from a leading space (``HISTCONTROL=ignorespace``), ``HISTIGNORE`` patterns and
trivial commands become ``WatcherEventDropped`` events (counted, never with the text).
bash and zsh do not record the working directory, and fish's ``paths`` are the arguments
that named existing files, not the working directory, so ``cwd`` stays empty for them.
The opt-in shell hook (``mnemonic shell-hook bash|zsh|fish``) fills that gap: the shell
appends one JSON line per command (text, folder, exit status, time) to
``<data>/shell-hook.jsonl``, read here first each poll like any history file. Its events
have ``cwd`` (so a project) and ``exit_status``; a failed command says so in its text
(``(exit status 2: failed)``), which the filter's keywords score up. The same command from
a history file is then not told twice (``history_dedupe``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemonic.config import ShellHistoryConfig
from mnemonic.events.types import WatcherEvent, WatcherEventDropped
from mnemonic.redact.paths import is_secret_path
from mnemonic.runtime.clock import Clock, SystemClock
from mnemonic.watchers.base import Emit, WatcherHealth
from mnemonic.watchers.history_dedupe import HookDedupe
from mnemonic.watchers.history_formats import (
    HistoryEntry,
    Shell,
    bash_has_timestamps,
    detect_shell,
    parse,
    parse_hook,
    skip_reason,
    split_histignore,
)

log = logging.getLogger(__name__)

WATCHER = "terminal"
STATE_FILE = "shell_history.json"
_STATE_VERSION = 1
_TAIL_BYTES = 64  # bytes before the offset whose digest detects an in-place rewrite
_RECENT_KEYS = 256  # entry keys kept per file to resume after a rewrite
_ALIGN_KEYS = 3  # consecutive keys that must match to resume after a rewrite
_HEAD_BYTES = 4096  # bytes read to recognise the format
_INT_FIELDS = ("inode", "device", "offset", "size", "mtime_ns")
_HOOK_PRIME_BYTES = 64 * 1024  # hook lines re-read at start to recognise duplicates
_Held = tuple[HistoryEntry, Shell, str]  # a history entry waiting for the hook's record


# --- per-file state and reading (runs on a worker thread) ---------------------------------


@dataclass(frozen=True, slots=True)
class FileState:
    inode: int
    device: int
    offset: int
    size: int
    mtime_ns: int
    shell: Shell
    bash_multiline: bool
    tail: str  # digest of up to _TAIL_BYTES bytes before offset
    recent: tuple[str, ...] = ()  # keys of the last entries read
    last_ts: int | None = None
    previous: str | None = None  # digest of the last command, for HISTIGNORE's "&"
    more: bool = False  # the last read stopped before the end of the file
    skip_line: bool = False  # inside a line too long to read: skip to its end


@dataclass(frozen=True, slots=True)
class FileRead:
    """What one poll found in one file; applied only after its events were emitted."""

    entries: list[HistoryEntry]
    state: FileState
    how: str  # first | appended | rewritten | unchanged
    oversized: int = 0


def entry_key(entry: HistoryEntry) -> str:
    raw = f"{entry.timestamp}\x00{entry.command}".encode()
    return hashlib.blake2b(raw, digest_size=8).hexdigest()


def command_digest(command: str) -> str:
    return hashlib.blake2b(command.encode(), digest_size=8).hexdigest()


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def resume_after(
    entries: Sequence[HistoryEntry], recent: Sequence[str], last_ts: int | None, limit: int
) -> list[HistoryEntry]:
    """The entries of a rewritten file that were not read before.

    The shell's rewrite keeps the old entries in order and adds new ones at the end, so
    the watcher resumes after the last place where its last few keys appear in a row.
    When they appear nowhere (another file took its place), it keeps unseen entries no
    older than the last one read, at most ``limit`` of them, like a first read.
    """
    keys = [entry_key(e) for e in entries]
    window = list(recent[-_ALIGN_KEYS:])
    if window:
        for end in range(len(keys), len(window) - 1, -1):
            if keys[end - len(window) : end] == window:
                return list(entries[end:])
    seen = set(recent)
    fresh = [
        e
        for e, k in zip(entries, keys, strict=True)
        if k not in seen and (last_ts is None or e.timestamp is None or e.timestamp >= last_ts)
    ]
    return fresh[-limit:] if limit else []


def _read_range(path: Path, start: int, length: int) -> bytes:
    with path.open("rb") as handle:
        handle.seek(start)
        return handle.read(length)


def _tail_digest(path: Path, offset: int) -> str:
    start = max(0, offset - _TAIL_BYTES)
    return _digest(_read_range(path, start, offset - start))


def _next_state(
    path: Path,
    st: os.stat_result,
    base: FileState,
    offset: int,
    entries: Sequence[HistoryEntry],
) -> FileState:
    recent = (*base.recent, *(entry_key(e) for e in entries))[-_RECENT_KEYS:]
    stamps = [e.timestamp for e in entries if e.timestamp is not None]
    return replace(
        base,
        inode=st.st_ino,
        device=st.st_dev,
        offset=offset,
        size=st.st_size,
        mtime_ns=st.st_mtime_ns,
        tail=_tail_digest(path, offset),
        recent=recent,
        last_ts=max(stamps) if stamps else base.last_ts,
    )


def _whole_read(
    path: Path, st: os.stat_result, max_bytes: int
) -> tuple[FileState, list[HistoryEntry]]:
    """Parse the end of a file (all of it when smaller than ``max_bytes``) from an entry
    boundary; returns a blank state for the file and its entries."""
    head = _read_range(path, 0, _HEAD_BYTES)
    shell = detect_shell(path.name, head)
    multiline = shell == "bash" and bash_has_timestamps(head)
    start = max(0, st.st_size - max_bytes)
    data = _read_range(path, start, st.st_size - start)
    base = start
    if start > 0:  # begin after a line break, and drop the first entry: it may be a piece
        cut = data.find(b"\n") + 1
        data, base = data[cut:], start + cut
    result = parse(shell, data, at_eof=True, bash_multiline=multiline)
    entries = result.entries[1:] if start > 0 else result.entries
    blank = FileState(st.st_ino, st.st_dev, 0, 0, 0, shell, multiline, "")
    return replace(blank, offset=base + result.consumed), entries


def read_history_file(
    path: Path, state: FileState | None, *, initial_entries: int, max_read_bytes: int
) -> FileRead:
    """Read what is new in one history file since ``state`` (None: never read)."""
    st = path.stat()
    if state is None:
        blank, entries = _whole_read(path, st, max_read_bytes)
        new_state = _next_state(path, st, blank, blank.offset, entries)
        chosen = entries[-initial_entries:] if initial_entries else []
        return FileRead(chosen, new_state, "first")
    moved = (st.st_ino, st.st_dev) != (state.inode, state.device)
    unchanged = (st.st_size, st.st_mtime_ns) == (state.size, state.mtime_ns)
    if not moved and unchanged and not state.more:
        return FileRead([], state, "unchanged")  # the common case: one stat, no read
    if moved or st.st_size < state.offset or _tail_digest(path, state.offset) != state.tail:
        blank, entries = _whole_read(path, st, max_read_bytes)
        blank = replace(blank, recent=state.recent, last_ts=state.last_ts, previous=None)
        new = resume_after(entries, state.recent, state.last_ts, initial_entries)
        return FileRead(new, _next_state(path, st, blank, blank.offset, new), "rewritten")
    if st.st_size == state.offset:
        return FileRead([], replace(state, size=st.st_size, mtime_ns=st.st_mtime_ns), "unchanged")
    data = _read_range(path, state.offset, max_read_bytes)
    at_eof = state.offset + len(data) >= st.st_size
    skipped = 0
    if state.skip_line:  # the rest of an oversized line
        newline = data.find(b"\n")
        skipped = newline + 1 if newline >= 0 else len(data)
    result = parse(state.shell, data[skipped:], at_eof=at_eof, bash_multiline=state.bash_multiline)
    consumed, oversized, skip_line = skipped + result.consumed, 0, False
    if consumed == 0 and len(data) >= max_read_bytes:  # one entry larger than a whole read
        consumed, oversized, skip_line = len(data), 1, True
    skip_line = skip_line or (state.skip_line and skipped == len(data))
    new_state = _next_state(path, st, state, state.offset + consumed, result.entries)
    new_state = replace(new_state, more=not at_eof, skip_line=skip_line)
    return FileRead(result.entries, new_state, "appended", oversized)


# --- persistence ------------------------------------------------------------------------------


def load_states(file: Path) -> dict[str, FileState]:
    """The saved per-file states; an unreadable or foreign file starts afresh (logged)."""
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("shell history state %s unreadable (%s); starting afresh", file, exc)
        return {}
    if not isinstance(raw, dict) or raw.get("version") != _STATE_VERSION:
        log.warning("shell history state %s has an unknown shape; starting afresh", file)
        return {}
    states: dict[str, FileState] = {}
    for path, item in raw.get("files", {}).items():
        try:
            state = FileState(**{**item, "recent": tuple(item.get("recent", ()))})
        except TypeError:
            state = None
        if state is None or not all(isinstance(getattr(state, n), int) for n in _INT_FIELDS):
            log.warning("shell history state for %s ignored: unexpected fields", path)
            continue
        states[path] = state
    return states


def save_states(file: Path, states: Mapping[str, FileState]) -> None:
    """Write atomically (temporary file and rename), private to the user."""
    file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    payload = {
        "version": _STATE_VERSION,
        "files": {path: {**asdict(s), "recent": list(s.recent)} for path, s in states.items()},
    }
    temporary = file.with_name(f".{file.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)
    os.replace(temporary, file)


# --- the watcher ------------------------------------------------------------------------------


def default_history_files(environ: Mapping[str, str], home: Path) -> list[Path]:
    files = [Path(environ["HISTFILE"]).expanduser()] if environ.get("HISTFILE") else []
    data_home = Path(environ.get("XDG_DATA_HOME") or home / ".local" / "share")
    files += [home / ".bash_history", home / ".zsh_history", home / ".zhistory"]
    files.append(data_home / "fish" / "fish_history")
    return files


_SKIPPED = ("unreadable", "secret")


@dataclass(slots=True)
class _Tracked:
    status: str = "missing"  # missing | ok | unreadable | secret
    warned: set[str] = field(default_factory=set)


class ShellHistoryWatcher:
    """Polls history files and emits one ``WatcherEvent(kind="command")`` per new command."""

    name = WATCHER

    def __init__(
        self,
        config: ShellHistoryConfig,
        state_dir: Path,
        *,
        clock: Clock | None = None,
        environ: Mapping[str, str] | None = None,
        home: Path | None = None,
        hook_file: Path | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._state_file = Path(state_dir).expanduser() / STATE_FILE
        self._clock = clock or SystemClock()
        env = os.environ if environ is None else environ
        home_dir = Path.home() if home is None else home
        configured = [Path(p).expanduser() for p in config.files]
        self._hook = str(hook_file) if hook_file is not None else None
        hook = [hook_file] if hook_file is not None else []  # first: its records win
        self._files = _unique(hook + (configured or default_history_files(env, home_dir)))
        self._wall = wall
        self._dedupe: HookDedupe[_Held] = HookDedupe(
            config.hook_dedupe_window_s, config.hook_hold_s
        )
        spec = config.histignore
        if config.use_env_histignore and env.get("HISTIGNORE"):
            spec = f"{spec}:{env['HISTIGNORE']}" if spec else env["HISTIGNORE"]
        self._histignore = split_histignore(spec)
        self._states: dict[str, FileState] = {}
        self._tracked = {str(p): _Tracked() for p in self._files}
        self._dropped: Counter[str] = Counter()
        self._polls = 0
        self._save_error: str | None = None
        self._health = WatcherHealth()

    @property
    def files(self) -> list[Path]:
        return list(self._files)

    def health(self) -> WatcherHealth:
        self._health.detail = {
            "polls": self._polls,
            "dropped": dict(self._dropped),
            "hook_file": self._hook,
            "waiting_for_hook": len(self._dedupe),
            "files": {
                path: {
                    "status": tracked.status,
                    "shell": s.shell if (s := self._states.get(path)) else None,
                    "offset": s.offset if s else None,
                }
                for path, tracked in self._tracked.items()
            },
        }
        return self._health

    async def run(self, emit: Emit) -> None:
        self._health.state = "running"
        try:
            self._states = await asyncio.to_thread(load_states, self._state_file)
            if self._hook is not None:
                for entry in await asyncio.to_thread(_hook_tail, Path(self._hook)):
                    self._dedupe.hooked(entry.command, entry.timestamp or self._wall())
            while True:
                await self._poll(emit)
                await self._clock.sleep(self._config.poll_interval_s)
        finally:
            self._health.state = "stopped"

    async def _poll(self, emit: Emit) -> None:
        reads = await asyncio.to_thread(self._scan, dict(self._states))
        changed = False
        for path, read in reads.items():
            state = self._emit_file(emit, path, read)
            changed = changed or state != self._states.get(path)
            self._states[path] = state
        duplicates, ready = self._dedupe.release(self._clock.now())
        for _, _, path in duplicates:
            self._drop(emit, path, "hook_duplicate")
        for entry, shell, path in ready:
            self._emit_command(emit, entry, shell, path)
        if changed:
            try:
                await _save_shielded(self._state_file, dict(self._states))
                self._save_error = None
            except OSError as exc:  # keep going: offsets stay in memory until it works
                if self._save_error is None:
                    self._health.warnings += 1
                    log.warning("cannot save %s: %s", self._state_file, exc)
                self._save_error = f"cannot save {self._state_file}: {exc.strerror or exc}"
        self._update_health()
        self._polls += 1

    def _scan(self, states: dict[str, FileState]) -> dict[str, FileRead]:
        reads: dict[str, FileRead] = {}
        for path in self._files:
            key = str(path)
            tracked = self._tracked[key]
            if is_secret_path(path):
                self._warn_once(tracked, "secret", "%s looks like a secret file; not read", key)
                tracked.status = "secret"
                continue
            try:
                reads[key] = read_history_file(
                    path,
                    states.get(key),
                    initial_entries=self._config.initial_entries,
                    max_read_bytes=self._config.max_read_bytes,
                )
                tracked.status = "ok"
            except FileNotFoundError:
                tracked.status = "missing"
            except OSError as exc:
                tracked.status = "unreadable"
                self._warn_once(tracked, type(exc).__name__, "cannot read %s: %s", key, exc)
            except Exception:  # one odd file must not crash-loop the watcher
                tracked.status = "unreadable"
                if "bug" not in tracked.warned:
                    tracked.warned.add("bug")
                    self._health.warnings += 1
                    log.exception("reading history file %s failed", key)
        return reads

    def _emit_file(self, emit: Emit, path: str, read: FileRead) -> FileState:
        """Emit one file's new commands (or their drops); returns the state to keep."""
        previous = self._states[path].previous if path in self._states else None
        if read.how == "rewritten":
            log.info("history file %s was rewritten; %d new entries", path, len(read.entries))
        for _ in range(read.oversized):
            self._drop(emit, path, "too_large")
        for entry in read.entries:
            digest = command_digest(entry.command)
            failed = entry.exit_status not in (None, 0)
            reason = skip_reason(
                entry.command,
                same_as_previous=digest == previous,
                ignore_space=self._config.ignore_space,
                histignore=self._histignore,
                trivial=() if failed else self._config.trivial_commands,  # a failure tells
            )
            previous = digest
            if reason is None and len(entry.command.encode()) > self._config.max_command_bytes:
                reason = "too_large"
            if reason is not None:
                self._drop(emit, path, reason)
                continue
            self._route(emit, entry, read.state.shell, path)
        return replace(read.state, previous=previous)

    def _route(self, emit: Emit, entry: HistoryEntry, shell: Shell, path: str) -> None:
        """Tell a command now, or drop it as the hook's duplicate, or let it wait for the
        hook's record of it (see ``history_dedupe``)."""
        when = float(entry.timestamp) if entry.timestamp else self._wall()
        if path == self._hook:
            self._dedupe.hooked(entry.command, when)
        elif self._dedupe.duplicate(entry.command, when):
            self._drop(emit, path, "hook_duplicate")
            return
        elif self._dedupe.in_use(self._wall()):
            pushed = self._dedupe.hold((entry, shell, path), entry.command, when, self._clock.now())
            if pushed is not None:
                self._emit_command(emit, *pushed)
            return
        self._emit_command(emit, entry, shell, path)

    def _emit_command(self, emit: Emit, entry: HistoryEntry, shell: Shell, path: str) -> None:
        emit(_command_event(entry, shell, path))
        self._health.events += 1

    def _drop(self, emit: Emit, path: str, reason: str) -> None:
        self._dropped[reason] += 1
        emit(WatcherEventDropped(watcher=WATCHER, kind="command", reason=reason, path=path))

    def _warn_once(self, tracked: _Tracked, kind: str, message: str, *args: object) -> None:
        if kind not in tracked.warned:
            tracked.warned.add(kind)
            self._health.warnings += 1
            log.warning(message, *args)

    def _update_health(self) -> None:
        bad = [f"{p} ({t.status})" for p, t in self._tracked.items() if t.status in _SKIPPED]
        if bad or self._save_error:
            self._health.state = "degraded"
            skipped = f"skipped {', '.join(bad)}" if bad else None
            self._health.message = "; ".join(m for m in (skipped, self._save_error) if m)
        elif not any(t.status == "ok" for t in self._tracked.values()):
            self._health.state = "running"
            self._health.message = "no history file found yet; new ones are picked up"
        else:
            self._health.state = "running"
            self._health.message = None


async def _save_shielded(file: Path, states: dict[str, FileState]) -> None:
    """Save on a worker thread; a stop during the write waits for it (a few kilobytes), so
    offsets of commands already emitted are not lost."""
    save = asyncio.ensure_future(asyncio.to_thread(save_states, file, states))
    try:
        await asyncio.shield(save)
    except asyncio.CancelledError:
        await save
        raise


def _command_event(entry: HistoryEntry, shell: Shell, path: str) -> WatcherEvent:
    metadata: dict[str, Any] = {"shell": entry.shell or shell, "history_file": path}
    if entry.duration_s is not None:
        metadata["duration_s"] = entry.duration_s
    if entry.paths:
        metadata["paths"] = list(entry.paths)
    content = entry.command
    if shell == "hook":
        metadata["via"] = "shell_hook"
    if entry.exit_status is not None:
        metadata["exit_status"] = entry.exit_status
        if entry.exit_status != 0:
            outcome = "interrupted" if entry.exit_status == 130 else "failed"
            content = f"{entry.command}\n(exit status {entry.exit_status}: {outcome})"
    return WatcherEvent(
        watcher=WATCHER,
        kind="command",
        content=content,
        cwd=entry.cwd,
        occurred_at=_when(entry.timestamp),
        metadata=metadata,
    )


def _hook_tail(path: Path) -> list[HistoryEntry]:
    """The hook's last lines (to recognise history-file duplicates after a restart)."""
    try:
        size = path.stat().st_size
        data = _read_range(path, max(0, size - _HOOK_PRIME_BYTES), _HOOK_PRIME_BYTES)
    except OSError:
        return []
    if size > _HOOK_PRIME_BYTES:
        data = data[data.find(b"\n") + 1 :]
    return parse_hook(data).entries


def _when(timestamp: int | None) -> datetime | None:
    """A history timestamp as a datetime; a corrupt one (year 300000) is just unknown."""
    if not timestamp:
        return None
    try:
        return datetime.fromtimestamp(timestamp, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _unique(paths: Sequence[Path]) -> list[Path]:
    """Drop paths that name the same file ($HISTFILE is usually ~/.bash_history too)."""
    seen: set[str] = set()
    unique: list[Path] = []
    for path in paths:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            unique.append(path)
    return unique
