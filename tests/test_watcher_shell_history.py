"""The shell history watcher: the format parsers (table tests, plus files written by the
real shells when they are installed) and the watcher on real files in tmp_path, appended
to, truncated, rotated and rewritten while it runs, driven by a fake clock."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonic.events.types import Event, WatcherEvent, WatcherEventDropped
from mnemonic.runtime.clock import FakeClock
from mnemonic.watchers.history_formats import (
    HistoryEntry,
    bash_has_timestamps,
    detect_shell,
    fish_unescape,
    is_trivial,
    matches_histignore,
    metafy,
    parse_bash,
    parse_fish,
    parse_zsh,
    skip_reason,
    split_histignore,
    unmetafy,
)
from mnemonic.watchers.shell_history import (
    STATE_FILE,
    ShellHistoryConfig,
    ShellHistoryWatcher,
    entry_key,
    resume_after,
)

# --- zsh metafication ---------------------------------------------------------------------


def test_metafy_round_trips_every_byte() -> None:
    data = bytes(range(256))
    encoded = metafy(data)
    assert unmetafy(encoded) == data
    # Only NUL and 0x83..0xa2 are escaped, each as Meta + byte^0x20.
    assert len(encoded) == 256 + 1 + (0xA2 - 0x83 + 1)
    assert metafy(b"\x00") == b"\x83\x20"
    assert metafy(b"\x83") == b"\x83\xa3"
    assert metafy(b"\xa3") == b"\xa3"


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        (b"plain ascii", b"plain ascii"),
        # zsh 5.9 wrote these bytes for "echo café 日本" (checked with the real zsh).
        (
            b"echo caf\xc3\xa9 \xe6\x83\xb7\xa5\xe6\x83\xbc\xac",
            "echo café 日本".encode(),
        ),
        (b"end\x83", b"end\x83"),  # a Meta with nothing after it stays, as in zsh
        (b"\x83\x20", b"\x00"),
    ],
)
def test_unmetafy(stored: bytes, expected: bytes) -> None:
    assert unmetafy(stored) == expected


# --- parsers: bash ----------------------------------------------------------------------------


def _commands(entries: list[HistoryEntry]) -> list[str]:
    return [e.command for e in entries]


@pytest.mark.parametrize(
    ("data", "multiline", "at_eof", "commands", "stamps", "consumed"),
    [
        (b"ls\nmake test\n", False, True, ["ls", "make test"], [None, None], 13),
        (b"ls\nmake te", False, True, ["ls"], [None], 3),  # half a line waits
        (
            b"#1700000000\nmake\n#1700000005\ngit push\n",
            True,
            True,
            ["make", "git push"],
            [1700000000, 1700000005],
            38,
        ),
        # A timestamp still waiting for its command is not consumed.
        (b"#1700000000\nmake\n#1700000005\n", True, True, ["make"], [1700000000], 17),
        # bash's multi-line entries: lines up to the next timestamp are one command.
        (
            b"#1\nfor i in 1 2\ndo echo $i\ndone\n#2\necho done\n",
            True,
            True,
            ["for i in 1 2\ndo echo $i\ndone", "echo done"],
            [1, 2],
            45,
        ),
        # Mid-file, the last multi-line entry may still grow: held back.
        (b"#1\nmake\n#2\nfor i\n", True, False, ["make"], [1], 8),
        # Without timestamps at the top, every line is a command.
        (b"for i in 1 2\ndone\n", False, True, ["for i in 1 2", "done"], [None, None], 18),
        (b"ls\r\n\n  \n", False, True, ["ls"], [None], 8),  # CR and blank lines
    ],
)
def test_parse_bash(
    data: bytes,
    multiline: bool,
    at_eof: bool,
    commands: list[str],
    stamps: list[int | None],
    consumed: int,
) -> None:
    result = parse_bash(data, multiline=multiline, at_eof=at_eof)
    assert _commands(result.entries) == commands
    assert [e.timestamp for e in result.entries] == stamps
    assert result.consumed == consumed


def test_bash_has_timestamps() -> None:
    assert bash_has_timestamps(b"#1700000000\nls\n")
    assert not bash_has_timestamps(b"ls\n#1700000000\n")
    assert not bash_has_timestamps(b"# a comment\n")


# --- parsers: zsh ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "commands", "stamps", "durations", "consumed"),
    [
        (b": 1700000000:3;make test\n", ["make test"], [1700000000], [3], 25),
        (b"plain command\n", ["plain command"], [None], [None], 14),
        # A newline inside a command is written as backslash + newline.
        (
            b": 1700000000:0;for i in 1 2\\\ndo echo $i\\\ndone\n: 1700000009:1;ls -l\n",
            ["for i in 1 2\ndo echo $i\ndone", "ls -l"],
            [1700000000, 1700000009],
            [0, 1],
            67,
        ),
        # A command ending in a backslash is written with a space after it.
        (b": 1700000000:0;echo trailing\\ \n", ["echo trailing\\"], [1700000000], [0], 31),
        # Without EXTENDED_HISTORY a leading colon is escaped.
        (b"\\:colon start\n", [":colon start"], [None], [None], 14),
        # A record still waiting for its continuation line is left for later.
        (b": 1:0;ok\n: 2:0;for i\\\n", ["ok"], [1], [0], 9),
        # Old files stored the finish time instead of the elapsed seconds.
        (b": 1700000000:1700000042;old\n", ["old"], [1700000000], [42], 28),
        (b": 1700000000\n", [], [], [], 13),  # no second colon: no command (as zsh)
    ],
)
def test_parse_zsh(
    data: bytes,
    commands: list[str],
    stamps: list[int | None],
    durations: list[int | None],
    consumed: int,
) -> None:
    result = parse_zsh(data)
    assert _commands(result.entries) == commands
    assert [e.timestamp for e in result.entries] == stamps
    assert [e.duration_s for e in result.entries] == durations
    assert result.consumed == consumed


def test_parse_zsh_unmetafies_multibyte_commands() -> None:
    line = b": 1700000000:0;" + metafy("echo café 日本 \x00".encode()) + b"\n"
    (entry,) = parse_zsh(line).entries
    assert entry.command == "echo café 日本 \x00"


# --- parsers: fish ---------------------------------------------------------------------------


FISH = (
    b"- cmd: ls /tmp\n"
    b"  when: 1700000000\n"
    b"  paths:\n"
    b"    - /tmp\n"
    b'- cmd: echo "a\\\\b" \\n next\n'
    b"  when: 1700000005\n"
)


def test_parse_fish_items_escapes_and_paths() -> None:
    result = parse_fish(FISH)
    assert result.consumed == len(FISH)
    assert [(e.command, e.timestamp, e.paths) for e in result.entries] == [
        ("ls /tmp", 1700000000, ("/tmp",)),
        ('echo "a\\b" \n next', 1700000005, ()),
    ]


@pytest.mark.parametrize(
    ("data", "at_eof", "commands", "consumed"),
    [
        (FISH, False, ["ls /tmp"], 54),  # the last item may still grow mid-file
        (b"  when: 1\n    - /x\n- cmd: ok\n", True, ["ok"], 29),  # a read that began mid-item
        (b"---\n%YAML\n- cmd: ok\n  when: 7\n", True, ["ok"], 30),  # YAML noise ignored
        (b"- cmd: ok\n  when: 7", True, ["ok"], 10),  # half a line waits
    ],
)
def test_parse_fish_boundaries(
    data: bytes, at_eof: bool, commands: list[str], consumed: int
) -> None:
    result = parse_fish(data, at_eof=at_eof)
    assert _commands(result.entries) == commands
    assert result.consumed == consumed


@pytest.mark.parametrize(
    ("raw", "text"),
    [(b"a\\\\b", b"a\\b"), (b"a\\nb", b"a\nb"), (b"a\\tb", b"a\\tb"), (b"end\\", b"end\\")],
)
def test_fish_unescape(raw: bytes, text: bytes) -> None:
    assert fish_unescape(raw) == text


@pytest.mark.parametrize(
    ("name", "head", "shell"),
    [
        ("fish_history", b"", "fish"),
        ("anything", b"- cmd: ls\n  when: 1\n", "fish"),
        ("history", b": 1700000000:0;ls\n", "zsh"),
        (".zsh_history", b"ls\n", "zsh"),
        (".zhistory", b"", "zsh"),
        (".histfile", b"", "zsh"),
        (".bash_history", b"ls\n", "bash"),
        ("my_history", b"#1700000000\nls\n", "bash"),
        (".zsh_history", b"#1700000000\nls\n", "bash"),  # content wins over the name
    ],
)
def test_detect_shell(name: str, head: bytes, shell: str) -> None:
    assert detect_shell(name, head) == shell


# --- skip rules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "patterns"),
    [
        ("ls:&:[bf]g:exit", ["ls", "&", "[bf]g", "exit"]),
        ("a\\:b:c", ["a:b", "c"]),
        ("::x:", ["x"]),
        ("", []),
    ],
)
def test_split_histignore(spec: str, patterns: list[str]) -> None:
    assert split_histignore(spec) == patterns


@pytest.mark.parametrize(
    ("command", "same", "patterns", "ignored"),
    [
        ("make", True, ["&"], True),
        ("make", False, ["&"], False),
        ("fg", False, ["[bf]g"], True),
        ("ssh prod", False, ["ssh *"], True),
        ("ssh", False, ["ssh *"], False),  # anchored, whole line, no implicit *
        ("echo a&b", False, ["echo a\\&b"], True),
        ("echo a&b", False, ["echo a&b"], True),
    ],
)
def test_matches_histignore(command: str, same: bool, patterns: list[str], ignored: bool) -> None:
    assert matches_histignore(command, same, patterns) is ignored


TRIVIAL = ShellHistoryConfig().trivial_commands


@pytest.mark.parametrize(
    ("command", "trivial"),
    [
        ("ls", True),
        ("ls  -la   src", True),
        ("cd ~/projects/mnemonic", True),
        ("git status", True),
        ("git status --short", False),  # only the bare form
        ("cd src && make test", False),  # chaining is more than a glance
        ("ls | wc -l", False),
        ("ls > files.txt", False),
        ("pwd; make", False),
        ("cd $(git rev-parse --show-toplevel)", False),
        ("make test", False),
        ("  exit  ", True),
    ],
)
def test_is_trivial(command: str, trivial: bool) -> None:
    assert is_trivial(command, TRIVIAL) is trivial


@pytest.mark.parametrize(
    ("command", "same", "reason"),
    [
        (" export TOKEN=abc", False, "ignorespace"),
        ("\tsecret", False, "ignorespace"),
        ("ssh prod", False, "histignore"),
        ("make test", True, "histignore"),  # "&"
        ("ls -la", False, "trivial"),
        ("make test", False, None),
    ],
)
def test_skip_reason(command: str, same: bool, reason: str | None) -> None:
    got = skip_reason(
        command,
        same_as_previous=same,
        ignore_space=True,
        histignore=["ssh *", "&"],
        trivial=TRIVIAL,
    )
    assert got == reason


# --- resuming after a rewrite ------------------------------------------------------------------


def _e(command: str, ts: int | None = None) -> HistoryEntry:
    return HistoryEntry(command, ts)


@pytest.mark.parametrize(
    ("entries", "recent", "last_ts", "limit", "expected"),
    [
        # The rewrite kept the known tail: resume after it.
        (["a", "b", "c", "d", "e"], ["b", "c", "d"], None, 10, ["e"]),
        # The known tail appears twice: resume after the last occurrence.
        (["x", "y", "z", "x", "y", "z", "n"], ["x", "y", "z"], None, 10, ["n"]),
        # Trimmed from the front (zsh HISTSIZE): still found.
        (["c", "d", "e", "f"], ["a", "b", "c", "d"], None, 10, ["e", "f"]),
        # Another file took its place: unseen entries, at most ``limit``.
        (["p", "q", "r"], ["a", "b", "c"], None, 2, ["q", "r"]),
        (["p", "q"], ["a", "b", "c"], None, 0, []),
        (["a", "p"], ["z", "a", "b"], None, 10, ["p"]),  # seen ones are not repeated
    ],
)
def test_resume_after(
    entries: list[str], recent: list[str], last_ts: int | None, limit: int, expected: list[str]
) -> None:
    keys = [entry_key(_e(c)) for c in recent]
    got = resume_after([_e(c) for c in entries], keys, last_ts, limit)
    assert _commands(got) == expected


def test_resume_after_skips_entries_older_than_the_last_read() -> None:
    entries = [_e("old", 10), _e("older", 5), _e("new", 30)]
    got = resume_after(entries, [entry_key(_e("gone", 20))], 20, 10)
    assert _commands(got) == ["new"]


# --- files written by the real shells --------------------------------------------------------


def _run(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> None:
    subprocess.run(argv, input=stdin, env=env, capture_output=True, timeout=30, check=False)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_real_zsh_history_file(tmp_path: Path) -> None:
    history = tmp_path / ".zsh_history"
    script = tmp_path / "gen.zsh"
    script.write_text(
        "setopt extended_history\n"
        f"HISTFILE={history}\nSAVEHIST=100\nHISTSIZE=100\n"
        "print -s 'echo café 日本'\n"
        "print -s $'for i in 1 2\\ndo echo $i\\ndone'\n"
        "print -s 'echo trailing\\'\n"
        "print -s ':colon start'\n"
        "fc -W\n",
        encoding="utf-8",
    )
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    _run(["zsh", "-f", "-i", "-c", f"source {script}"], env)
    data = history.read_bytes()
    assert b"\x83" in data  # 日 and 本 really are metafied on disk
    assert detect_shell(history.name, data) == "zsh"
    result = parse_zsh(data)
    assert result.consumed == len(data)
    assert _commands(result.entries) == [
        "echo café 日本",
        "for i in 1 2\ndo echo $i\ndone",
        "echo trailing\\",
        ":colon start",
    ]
    assert all(e.timestamp and e.duration_s == 0 for e in result.entries)


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_real_bash_history_file(tmp_path: Path) -> None:
    history = tmp_path / ".bash_history"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "HISTFILE": str(history),
        "HISTTIMEFORMAT": "%F ",
        "HISTCONTROL": "",
    }
    commands = b"shopt -s lithist cmdhist\nfor i in 1 2\ndo echo $i\ndone\necho done\nhistory -a\n"
    _run(["bash", "--norc", "-i"], env, commands)
    data = history.read_bytes()
    assert bash_has_timestamps(data)
    result = parse_bash(data, multiline=True)
    assert _commands(result.entries) == [
        "shopt -s lithist cmdhist",
        "for i in 1 2\ndo echo $i\ndone",
        "echo done",
        "history -a",
    ]


# --- the watcher on real files ------------------------------------------------------------------


def _zsh_line(ts: int, command: str, duration: int = 0) -> bytes:
    body = metafy(command.encode()).replace(b"\n", b"\\\n")
    return f": {ts}:{duration};".encode() + body + b"\n"


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


class Harness:
    """Runs a watcher on a fake clock and collects what it emits."""

    def __init__(self, watcher: ShellHistoryWatcher, clock: FakeClock, interval: float) -> None:
        self.watcher = watcher
        self.clock = clock
        self.interval = interval
        self.emitted: list[Event] = []
        self.task: asyncio.Task[None] | None = None

    @property
    def polls(self) -> int:
        return int(self.watcher.health().detail.get("polls", 0))

    @property
    def commands(self) -> list[str]:
        return [e.content for e in self.emitted if isinstance(e, WatcherEvent)]

    @property
    def dropped(self) -> list[WatcherEventDropped]:
        return [e for e in self.emitted if isinstance(e, WatcherEventDropped)]

    async def _until(self, check: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 10.0
        while not check():
            if self.task is not None and self.task.done():
                self.task.result()  # raise what the watcher raised
            assert time.monotonic() < deadline, "the watcher did not poll in time"
            await asyncio.sleep(0.002)

    async def started(self) -> None:
        self.task = asyncio.create_task(self.watcher.run(self.emitted.append))
        await self._until(lambda: self.polls >= 1)

    async def poll(self) -> None:
        """One more poll: wait until the watcher sleeps, then move the clock past it."""
        await self._until(lambda: self.clock.sleepers >= 1)
        before = self.polls
        await self.clock.advance(self.interval)
        await self._until(lambda: self.polls > before)

    async def stop(self) -> float:
        assert self.task is not None
        started = time.monotonic()
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task
        return time.monotonic() - started


@asynccontextmanager
async def running(
    tmp_path: Path,
    *,
    environ: dict[str, str] | None = None,
    state_dir: Path | None = None,
    **config: Any,
) -> AsyncIterator[Harness]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    settings = ShellHistoryConfig(**{"poll_interval_s": 2.0, **config})
    clock = FakeClock()
    watcher = ShellHistoryWatcher(
        settings,
        state_dir or tmp_path / "state",
        clock=clock,
        environ=environ or {},
        home=home,
    )
    harness = Harness(watcher, clock, settings.poll_interval_s)
    await harness.started()
    try:
        yield harness
    finally:
        if harness.task is not None and not harness.task.done():
            await harness.stop()


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "home"
    folder.mkdir()
    yield folder


def test_default_files_follow_histfile_and_xdg(tmp_path: Path, home: Path) -> None:
    custom = tmp_path / "custom_history"
    environ = {"HISTFILE": str(custom), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    watcher = ShellHistoryWatcher(ShellHistoryConfig(), tmp_path, environ=environ, home=home)
    assert watcher.files == [
        custom,
        home / ".bash_history",
        home / ".zsh_history",
        home / ".zhistory",
        tmp_path / "xdg" / "fish" / "fish_history",
    ]
    same = {"HISTFILE": str(home / ".bash_history")}  # the same file is watched once
    watcher = ShellHistoryWatcher(ShellHistoryConfig(), tmp_path, environ=same, home=home)
    assert watcher.files.count(home / ".bash_history") == 1


async def _bash_appended(tmp_path: Path, home: Path) -> None:
    history = home / ".bash_history"
    history.write_bytes(b"#1700000000\nmake old-1\n#1700000001\nmake old-2\n#1700000002\nls\n")
    async with running(tmp_path, initial_entries=2) as h:
        # First start: only the last 2 entries; "ls" is trivial and dropped.
        assert h.commands == ["make old-2"]
        assert [d.reason for d in h.dropped] == ["trivial"]
        _append(history, b"#1700000100\npytest -x tests/\n#1700000101\ngit push\n")
        await h.poll()
        assert h.commands == ["make old-2", "pytest -x tests/", "git push"]
        event = next(e for e in h.emitted if isinstance(e, WatcherEvent) and "pytest" in e.content)
        assert event.watcher == "terminal" and event.kind == "command"
        assert event.occurred_at == datetime.fromtimestamp(1700000100, UTC)
        assert event.cwd is None
        assert event.metadata == {"shell": "bash", "history_file": str(history)}
        await h.poll()  # nothing new: nothing emitted twice
        assert len(h.commands) == 3


def test_bash_history_appended_while_running(tmp_path: Path, home: Path) -> None:
    asyncio.run(_bash_appended(tmp_path, home))


async def _zsh_appended(tmp_path: Path, home: Path) -> None:
    history = home / ".zsh_history"
    history.write_bytes(_zsh_line(1700000000, "echo before"))
    async with running(tmp_path, initial_entries=0) as h:
        assert h.commands == []  # initial_entries=0: nothing already there
        _append(history, _zsh_line(1700000010, "grep -r 'café' 日本/", duration=4))
        _append(history, _zsh_line(1700000020, "for f in *.py\ndo ruff check $f\ndone"))
        await h.poll()
        assert h.commands == ["grep -r 'café' 日本/", "for f in *.py\ndo ruff check $f\ndone"]
        first = next(e for e in h.emitted if isinstance(e, WatcherEvent))
        assert first.metadata == {"shell": "zsh", "history_file": str(history), "duration_s": 4}
        # Half a record (a continuation still to come) waits for the rest.
        _append(history, b": 1700000030:0;echo one\\\n")
        await h.poll()
        assert len(h.commands) == 2
        _append(history, b"two\n")
        await h.poll()
        assert h.commands[-1] == "echo one\ntwo"


def test_zsh_history_appended_while_running_with_metafied_bytes(tmp_path: Path, home: Path) -> None:
    asyncio.run(_zsh_appended(tmp_path, home))


async def _fish_appended(tmp_path: Path, home: Path) -> None:
    history = home / ".local" / "share" / "fish" / "fish_history"
    history.parent.mkdir(parents=True)
    history.write_bytes(b"- cmd: cargo build\n  when: 1700000000\n")
    async with running(tmp_path) as h:
        assert h.commands == ["cargo build"]
        _append(history, b"- cmd: vim src/main.rs\n  when: 1700000050\n  paths:\n")
        _append(history, b"    - src/main.rs\n- cmd: echo a\\\\b\\nc\n  when: 1700000060\n")
        await h.poll()
        assert h.commands == ["cargo build", "vim src/main.rs", "echo a\\b\nc"]
        vim = next(e for e in h.emitted if isinstance(e, WatcherEvent) and "vim" in e.content)
        assert vim.metadata["paths"] == ["src/main.rs"]
        assert vim.cwd is None  # fish's paths are arguments, not the working directory
        assert vim.occurred_at == datetime.fromtimestamp(1700000050, UTC)


def test_fish_history_appended_while_running(tmp_path: Path, home: Path) -> None:
    asyncio.run(_fish_appended(tmp_path, home))


async def _truncated(tmp_path: Path, home: Path) -> None:
    history = home / ".bash_history"
    history.write_bytes(b"make a\nmake b\nmake c\n")
    async with running(tmp_path) as h:
        assert h.commands == ["make a", "make b", "make c"]
        # bash trimming to HISTFILESIZE, in place: same inode, shorter, then a new command.
        with history.open("r+b") as handle:
            handle.truncate(0)
            handle.write(b"make c\nmake d\n")
        await h.poll()
        assert h.commands == ["make a", "make b", "make c", "make d"]
        # Emptied, then new commands: they are all new.
        history.write_bytes(b"")
        await h.poll()
        history.write_bytes(b"cargo test\n")
        await h.poll()
        assert h.commands[-1] == "cargo test"
        assert len(h.commands) == 5


def test_truncation_starts_over_without_duplicates(tmp_path: Path, home: Path) -> None:
    asyncio.run(_truncated(tmp_path, home))


async def _rotated(tmp_path: Path, home: Path) -> None:
    history = home / ".zsh_history"
    history.write_bytes(b"".join(_zsh_line(1700000000 + i, f"make step-{i}") for i in range(5)))
    async with running(tmp_path) as h:
        assert len(h.commands) == 5
        # zsh's HIST_SAVE_BY_COPY: a new file with the old entries (trimmed) and a new one,
        # renamed over the history file. Only the new command is new.
        rewritten = home / ".zsh_history.new"
        rewritten.write_bytes(
            b"".join(_zsh_line(1700000000 + i, f"make step-{i}") for i in range(2, 5))
            + _zsh_line(1700000100, "make deploy")
        )
        inode = history.stat().st_ino
        os.replace(rewritten, history)
        assert history.stat().st_ino != inode
        await h.poll()
        assert h.commands[5:] == ["make deploy"]
        # logrotate style: the file moves away and a fresh one starts.
        history.rename(home / ".zsh_history.1")
        await h.poll()
        assert h.watcher.health().detail["files"][str(history)]["status"] == "missing"
        history.write_bytes(_zsh_line(1700000200, "make fresh"))
        await h.poll()
        assert h.commands[5:] == ["make deploy", "make fresh"]


def test_rotation_and_rewrite_resume_without_duplicates(tmp_path: Path, home: Path) -> None:
    asyncio.run(_rotated(tmp_path, home))


async def _restart(tmp_path: Path, home: Path) -> None:
    history = home / ".bash_history"
    history.write_bytes(b"make one\nmake two\n")
    async with running(tmp_path) as h:
        assert h.commands == ["make one", "make two"]
        _append(history, b"make three\n")
        await h.poll()
        took = await h.stop()
        assert took < 1.0
        assert h.watcher.health().state == "stopped"
    state = json.loads((tmp_path / "state" / STATE_FILE).read_text())
    assert state["files"][str(history)]["offset"] == history.stat().st_size
    assert "make" not in json.dumps(state)  # offsets and digests, never commands
    _append(history, b"make four\n")
    async with running(tmp_path) as h:
        assert h.commands == ["make four"]


def test_restart_resumes_from_saved_offset(tmp_path: Path, home: Path) -> None:
    asyncio.run(_restart(tmp_path, home))


async def _skips(tmp_path: Path, home: Path) -> None:
    history = home / ".bash_history"
    history.write_bytes(b"")
    environ = {"HISTIGNORE": "ssh *"}
    async with running(tmp_path, environ=environ, histignore="&:kubectl get *") as h:
        _append(
            history,
            b" export API_TOKEN=hunter2\n"  # leading space
            b"ssh prod-db\n"  # $HISTIGNORE
            b"kubectl get pods\n"  # configured pattern
            b"make test\n"
            b"make test\n"  # "&": same as the previous command
            b"ls -la\n"
            b"cd src\n"
            b"git status\n"
            b"git status --porcelain\n",
        )
        await h.poll()
        assert h.commands == ["make test", "git status --porcelain"]
        reasons = [d.reason for d in h.dropped]
        assert reasons == [
            "ignorespace",
            "histignore",
            "histignore",
            "histignore",
            "trivial",
            "trivial",
            "trivial",
        ]
        for drop in h.dropped:
            assert drop.watcher == "terminal" and drop.kind == "command"
            assert drop.path == str(history)
            payload = json.dumps(drop.to_json())
            assert "hunter2" not in payload and "prod-db" not in payload
        detail = h.watcher.health().detail
        assert detail["dropped"] == {"ignorespace": 1, "histignore": 3, "trivial": 3}


def test_leading_space_histignore_and_trivial_are_dropped(tmp_path: Path, home: Path) -> None:
    asyncio.run(_skips(tmp_path, home))


async def _appears_later(tmp_path: Path, home: Path) -> None:
    async with running(tmp_path) as h:
        health = h.watcher.health()
        assert health.state == "running"
        assert health.message is not None and "no history file" in health.message
        history = home / ".zsh_history"
        history.write_bytes(_zsh_line(1700000000, "docker compose up"))
        await h.poll()
        assert h.commands == ["docker compose up"]
        assert h.watcher.health().message is None
        _append(history, _zsh_line(1700000001, "docker compose logs -f api"))
        await h.poll()
        assert h.commands == ["docker compose up", "docker compose logs -f api"]


def test_history_file_appearing_later_is_picked_up(tmp_path: Path, home: Path) -> None:
    asyncio.run(_appears_later(tmp_path, home))


async def _limits(tmp_path: Path, home: Path) -> None:
    history = home / ".bash_history"
    history.write_bytes(b"")
    async with running(tmp_path, max_command_bytes=256, max_read_bytes=4096) as h:
        _append(history, b"echo " + b"x" * 300 + b"\nmake ok\n")
        await h.poll()
        assert h.commands == ["make ok"]
        # One line longer than a whole read is skipped rather than blocking the file.
        _append(history, b"y" * 5000 + b"\nmake after\n")
        await h.poll()
        await h.poll()
        assert h.commands[-1] == "make after"
        assert [d.reason for d in h.dropped] == ["too_large", "too_large"]


def test_size_limits_drop_and_move_on(tmp_path: Path, home: Path) -> None:
    asyncio.run(_limits(tmp_path, home))


async def _big_first_read(tmp_path: Path, home: Path) -> None:
    history = home / ".bash_history"
    history.write_bytes(b"".join(f"make target-{i}\n".encode() for i in range(2000)))
    async with running(tmp_path, initial_entries=3, max_read_bytes=4096) as h:
        assert h.commands == ["make target-1997", "make target-1998", "make target-1999"]


def test_first_read_of_a_large_file_takes_only_the_end(tmp_path: Path, home: Path) -> None:
    asyncio.run(_big_first_read(tmp_path, home))


async def _secret(tmp_path: Path, home: Path) -> None:
    secret = home / ".env"
    secret.write_bytes(b"AWS_SECRET_ACCESS_KEY=abc\n")
    async with running(tmp_path, files=[str(secret)]) as h:
        assert h.emitted == []
        health = h.watcher.health()
        assert health.state == "degraded"
        assert health.detail["files"][str(secret)]["status"] == "secret"


def test_secret_file_is_never_read(tmp_path: Path, home: Path) -> None:
    asyncio.run(_secret(tmp_path, home))


async def _unreadable(tmp_path: Path, home: Path) -> None:
    history = home / ".bash_history"
    history.write_bytes(b"make one\n")
    history.chmod(0)
    try:
        async with running(tmp_path) as h:
            await h.poll()
            health = h.watcher.health()
            assert health.state == "degraded"
            assert health.warnings == 1  # warned once, not once per poll
            assert h.emitted == []
    finally:
        history.chmod(0o600)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads chmod 000 files anyway")
def test_unreadable_file_degrades_with_one_warning(tmp_path: Path, home: Path) -> None:
    asyncio.run(_unreadable(tmp_path, home))


async def _directory(tmp_path: Path, home: Path) -> None:
    (home / ".bash_history").mkdir()  # an odd file that fails to open, even for root
    async with running(tmp_path) as h:
        await h.poll()
        health = h.watcher.health()
        assert health.state == "degraded"
        assert health.warnings == 1  # warned once, not once per poll
        assert health.detail["files"][str(home / ".bash_history")]["status"] == "unreadable"
        assert h.emitted == []


def test_unopenable_path_degrades_with_one_warning(tmp_path: Path, home: Path) -> None:
    asyncio.run(_directory(tmp_path, home))


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    (entry,) = parse_bash(b"echo \xff\xfe ok\n", multiline=False).entries
    assert entry.command == "echo \ufffd\ufffd ok"


async def _odd_timestamps(tmp_path: Path, home: Path) -> None:
    history = home / ".bash_history"
    history.write_bytes(b"#9999999999999999999\nmake far-future\n")
    async with running(tmp_path) as h:
        (event,) = [e for e in h.emitted if isinstance(e, WatcherEvent)]
        assert event.content == "make far-future" and event.occurred_at is None


def test_corrupt_timestamp_is_unknown_not_fatal(tmp_path: Path, home: Path) -> None:
    asyncio.run(_odd_timestamps(tmp_path, home))


async def _bad_state(tmp_path: Path, home: Path, caplog: pytest.LogCaptureFixture) -> None:
    history = home / ".bash_history"
    history.write_bytes(b"make one\n")
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / STATE_FILE).write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="mnemonic.watchers.shell_history"):
        async with running(tmp_path) as h:
            assert h.commands == ["make one"]  # started afresh
    assert any("unreadable" in r.getMessage() for r in caplog.records)
    state = json.loads((state_dir / STATE_FILE).read_text())
    state["files"][str(history)]["offset"] = "nine"
    (state_dir / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
    async with running(tmp_path) as h:
        assert h.commands == ["make one"]  # the malformed entry was ignored, not trusted


def test_corrupt_state_file_starts_afresh(
    tmp_path: Path, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    asyncio.run(_bad_state(tmp_path, home, caplog))


async def _unsaveable(tmp_path: Path, home: Path) -> None:
    history = home / ".bash_history"
    history.write_bytes(b"make one\n")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the state folder should be", encoding="utf-8")
    async with running(tmp_path, state_dir=blocker) as h:
        _append(history, b"make two\n")
        await h.poll()
        _append(history, b"make three\n")
        await h.poll()
        assert h.commands == ["make one", "make two", "make three"]  # no repeats
        health = h.watcher.health()
        assert health.state == "degraded" and health.warnings == 1
        assert health.message is not None and "cannot save" in health.message


def test_unsaveable_state_degrades_but_keeps_watching(tmp_path: Path, home: Path) -> None:
    asyncio.run(_unsaveable(tmp_path, home))


@given(st.binary(max_size=64))
def test_unmetafy_inverts_metafy(data: bytes) -> None:
    assert unmetafy(metafy(data)) == data


@given(st.lists(st.sampled_from([0x83, 0xA3, 0x41, 0x00, 0x9C, 0x20]), max_size=12))
def test_unmetafy_matches_zsh_loop(raw: list[int]) -> None:
    """The fast path (split on Meta) agrees with zsh's byte loop on any input."""
    data = bytes(raw)
    out, i = bytearray(), 0
    while i < len(data):
        if data[i] == 0x83 and i + 1 < len(data):
            out.append(data[i + 1] ^ 0x20)
            i += 2
        else:
            out.append(data[i])
            i += 1
    assert unmetafy(data) == bytes(out)
