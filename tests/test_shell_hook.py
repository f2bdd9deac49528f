"""The opt-in shell hook: ``mnemonic shell-hook bash`` run in a real interactive bash writes
one JSON line per command (text, folder, exit status, time), and the terminal watcher turns
those lines into events with a working folder (so a project) and an exit status, without
telling the same command again from the plain history file.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from mnemonic.config import FilterConfig, ShellHistoryConfig
from mnemonic.events.types import Event, WatcherEvent, WatcherEventDropped
from mnemonic.perception.filter import Accept, HeuristicFilter
from mnemonic.perception.projects import ProjectResolver
from mnemonic.runtime.clock import FakeClock
from mnemonic.watchers.history_dedupe import HookDedupe
from mnemonic.watchers.history_formats import HistoryEntry, detect_shell, parse_hook
from mnemonic.watchers.shell_history import ShellHistoryWatcher


def hook_snippet(shell: str, home: Path) -> str:
    env = {**os.environ, "MNEMONIC_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-m", "mnemonic", "shell-hook", shell],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def run_bash(rc: Path, script: str, cwd: Path) -> None:
    """``script`` typed into an interactive bash that reads ``rc`` at start."""
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "TERM": "dumb", "HISTFILE": "/dev/null"}
    done = subprocess.run(
        ["bash", "--noprofile", "--rcfile", str(rc), "-i"],
        input=script,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def read_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line, strict=False) for line in path.read_text().splitlines()]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "work" / "billing"
    folder.mkdir(parents=True)
    return folder


def test_bash_hook_writes_one_json_line_per_command(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "mn"
    snippet = hook_snippet("bash", home)
    hook_file = home / "data" / "shell-hook.jsonl"
    assert str(hook_file) in snippet
    code = [line for line in snippet.splitlines() if not line.lstrip().startswith("#")]
    # no network, no call back into mnemonic: a printf append is all a prompt costs
    assert not [line for line in code if re.search(r"\b(curl|wget|nc|mnemonic) ", line)]
    rc = tmp_path / "bashrc"
    rc.write_text(snippet)
    started = int(time.time())
    script = "\n".join(
        [
            f"cd {project}",
            "true",
            "",  # an empty line: no new command, nothing written
            "false",
            'echo "a \\"quoted\\" back\\\\slash"',
            "for i in 1 2; do",
            "echo $i",
            "done",
            "exit 0",
        ]
    )
    (home / "data").mkdir(parents=True)
    run_bash(rc, script, tmp_path)
    lines = read_lines(hook_file)
    assert [line["cmd"] for line in lines] == [
        f"cd {project}",
        "true",
        "false",
        'echo "a \\"quoted\\" back\\\\slash"',
        "for i in 1 2; do echo $i; done",
    ]
    assert [line["status"] for line in lines] == [0, 0, 1, 0, 0]
    assert {line["cwd"] for line in lines} == {str(project)}
    assert {line["shell"] for line in lines} == {"bash"}
    assert all(started - 1 <= int(line["t"]) <= time.time() + 1 for line in lines)  # type: ignore[call-overload]
    assert hook_file.stat().st_mode & 0o777 == 0o600


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_hook_writes_one_json_line_per_command(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "mn"
    (home / "data").mkdir(parents=True)
    zdot = tmp_path / "zdot"
    zdot.mkdir()
    (zdot / ".zshrc").write_text(hook_snippet("zsh", home))
    script = f"cd {project}\nfalse\necho done\nexit 0\n"
    env = {"PATH": os.environ["PATH"], "ZDOTDIR": str(zdot), "HOME": str(tmp_path)}
    subprocess.run(
        ["zsh", "-i"], input=script, env=env, text=True, capture_output=True, timeout=30, check=True
    )
    lines = read_lines(home / "data" / "shell-hook.jsonl")
    assert [(line["cmd"], line["status"]) for line in lines] == [
        (f"cd {project}", 0),
        ("false", 1),
        ("echo done", 0),
    ]
    assert lines[1]["cwd"] == str(project)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_hook_writes_one_json_line_per_command(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "mn"
    (home / "data").mkdir(parents=True)
    rc = tmp_path / "hook.fish"
    rc.write_text(hook_snippet("fish", home))
    script = f"source {rc}\ncd {project}\nfalse\necho done\nexit 0\n"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    subprocess.run(
        ["fish", "-i", "--no-config"],
        input=script,
        env=env,
        text=True,
        capture_output=True,
        timeout=30,
        check=True,
    )
    lines = read_lines(home / "data" / "shell-hook.jsonl")
    assert [(line["cmd"], line["status"]) for line in lines][-2:] == [
        ("false", 1),
        ("echo done", 0),
    ]


# --- the watcher reads the hook's lines ---------------------------------------------------------

HOOK_LINE_CASES = [
    (b'{"v":1,"shell":"bash","t":1700000000,"status":2,"cwd":"/w/b","cmd":"make"}\n', 1),
    (b'{"v":1,"cmd":"ok \\"q\\""}\n', 1),
    (b"not json\n", 0),
    (b'{"v":1,"status":0}\n', 0),  # no command
    (b'["a list"]\n', 0),
    (b'{"v":1,"cmd":"torn', 0),  # no newline yet: not consumed
]


@pytest.mark.parametrize(("data", "count"), HOOK_LINE_CASES)
def test_parse_hook_lines(data: bytes, count: int) -> None:
    result = parse_hook(data)
    assert len(result.entries) == count
    assert result.consumed == (len(data) if data.endswith(b"\n") else 0)


def test_parse_hook_fields_and_detection() -> None:
    line = b'{"v":1,"shell":"zsh","t":1700000000,"status":130,"cwd":"/w/b","cmd":"sleep 9"}\n'
    (entry,) = parse_hook(line).entries
    assert entry == HistoryEntry("sleep 9", 1700000000, cwd="/w/b", exit_status=130, shell="zsh")
    assert detect_shell("shell-hook.jsonl", b"") == "hook"
    assert detect_shell("whatever", line) == "hook"


def test_hook_dedupe_rules() -> None:
    d: HookDedupe[str] = HookDedupe(window_s=100.0, hold_s=10.0)
    assert not d.in_use(1000.0)
    d.hooked("make test", 1000.0)
    assert d.in_use(1050.0) and not d.in_use(1200.0)
    assert d.duplicate(" make test ", 1090.0) and not d.duplicate("make test", 1101.0)
    assert not d.duplicate("make deploy", 1000.0)
    assert d.hold("early", "pytest", 1000.0, now=0.0) is None
    assert d.hold("other", "ls -la", 1000.0, now=0.0) is None
    assert d.release(5.0) == ([], [])
    d.hooked("pytest", 1003.0)  # the hook's line came after the history's
    assert d.release(6.0) == (["early"], [])
    assert d.release(11.0) == ([], ["other"])


async def _until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10.0
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("the watcher did not poll in time")
        await asyncio.sleep(0.002)


async def _watch(tmp_path: Path, hook_file: Path, history: Path, steps: list[float]) -> list[Event]:
    clock = FakeClock()
    watcher = ShellHistoryWatcher(
        ShellHistoryConfig(files=[str(history)], hook_hold_s=60.0, initial_entries=100),
        tmp_path / "state",
        clock=clock,
        environ={},
        home=tmp_path,
        hook_file=hook_file,
    )
    events: list[Event] = []
    task = asyncio.create_task(watcher.run(events.append))
    try:
        for step in steps:
            await _until(lambda: clock.sleepers >= 1)
            polls = int(watcher.health().detail["polls"])
            await clock.advance(step)
            await _until(lambda: int(watcher.health().detail["polls"]) > polls)  # noqa: B023
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return events


def test_hook_lines_become_events_with_folder_and_exit_status(
    tmp_path: Path, project: Path
) -> None:
    now = int(time.time())
    hook_file = tmp_path / "data" / "shell-hook.jsonl"
    hook_file.parent.mkdir()
    history = tmp_path / ".bash_history"
    lines = [
        {"v": 1, "shell": "bash", "t": now - 30, "status": 0, "cwd": str(project), "cmd": "make"},
        {"v": 1, "shell": "bash", "t": now - 20, "status": 2, "cwd": str(project), "cmd": "ls x"},
    ]
    hook_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    # bash writes the same commands to its history file (at exit), plus one from a shell
    # without the hook
    history.write_text(f"#{now - 31}\nmake\n#{now - 21}\nls x\n#{now - 10}\nmake deploy\n")
    events = asyncio.run(_watch(tmp_path, hook_file, history, [2.0, 61.0, 2.0]))
    told = [e for e in events if isinstance(e, WatcherEvent)]
    assert [e.content for e in told] == ["make", "ls x\n(exit status 2: failed)", "make deploy"]
    make, failed, plain = told
    assert make.cwd == str(project) and make.metadata["exit_status"] == 0
    assert make.metadata["via"] == "shell_hook" and make.metadata["shell"] == "bash"
    assert failed.metadata["exit_status"] == 2  # "ls x" is trivial, but a failure tells
    assert plain.cwd is None and plain.metadata["history_file"] == str(history)
    dropped = [e.reason for e in events if isinstance(e, WatcherEventDropped)]
    # the history's "make" is the hook's; its "ls x" has no status, so it is just trivial
    assert dropped == ["hook_duplicate", "trivial"]
    # the filter gives the command its project from the folder, and scores the failure up
    flt = HeuristicFilter(FilterConfig(), resolver=ProjectResolver(home=str(tmp_path)))
    accepted = flt.check(failed)
    assert isinstance(accepted, Accept) and accepted.project == "billing"
    assert flt.score(failed.content).value > flt.score("ls x").value
