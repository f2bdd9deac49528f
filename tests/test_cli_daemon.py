"""The CLI against a real daemon subprocess (``python -m mnemonic serve`` on a free port):
forget, amend, status and a live ``watch``."""

from __future__ import annotations

import io
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

TOKEN = "cli-daemon-test-token"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(home: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MNEMONIC_")}
    env.update({"MNEMONIC_HOME": str(home), "MNEMONIC_PORT": str(port), "MNEMONIC_TOKEN": TOKEN})
    return env


def _start(home: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    port = _free_port()
    env = _env(home, port)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnemonic", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, "daemon exited during start"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return proc, env
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "daemon did not become ready"
        time.sleep(0.05)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    proc, env = _start(tmp_path_factory.mktemp("home"))
    yield env
    _stop(proc)


def _cli(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemonic", *args],
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """The console entry point in this process (a second faster than a subprocess; the
    daemon is still a real process): exit code, stdout and stderr."""
    from mnemonic.cli.main import main

    def invoke(env: dict[str, str], *args: str, stdin: str = "") -> tuple[int, str, str]:
        for name in [n for n in os.environ if n.upper().startswith("MNEMONIC_")]:
            monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(sys, "argv", ["mnemonic", *args])
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        with pytest.raises(SystemExit) as stop:
            main()
        captured = capsys.readouterr()
        code = stop.value.code
        return (code if isinstance(code, int) else 0), captured.out, captured.err

    return invoke


def _remember(run: Run, env: dict[str, str], text: str, project: str) -> str:
    code, out, err = run(env, "remember", text, "--project", project, "--json")
    assert code == 0, err
    memory_id: str = json.loads(out)["memory_id"]
    return memory_id


class LineReader:
    """Lines of a pipe, read by a thread so a test can wait for one with a timeout."""

    def __init__(self, pipe: IO[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(pipe,), daemon=True)
        self._thread.start()

    def _pump(self, pipe: IO[str]) -> None:
        for line in pipe:
            self.lines.put(line)

    def wait_for(self, match: Callable[[str], bool], timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "expected line did not arrive"
            try:
                line = self.lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if match(line):
                return line

    def join(self) -> None:
        self._thread.join(10)


class Watch:
    """``mnemonic watch`` as a subprocess, ready once it says it is watching."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mnemonic", "watch", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.out = LineReader(self.proc.stdout)
        self.err = LineReader(self.proc.stderr)
        self.err.wait_for(lambda line: line.startswith("watching "))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.out.join()
        self.err.join()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def test_forget_archives_and_unknown_ids_are_data_errors(run: Run, daemon: dict[str, str]) -> None:
    memory_id = _remember(run, daemon, "The staging database lives on host pg-staging-2.", "fg")
    code, out, err = run(daemon, "forget", memory_id, "--json")
    assert code == 0, err
    assert json.loads(out)["state"] == "archived"
    _, out, _ = run(daemon, "recall", "staging database host", "--project", "fg", "--json")
    assert memory_id not in [r["memory"]["id"] for r in json.loads(out)["results"]]
    assert run(daemon, "forget", memory_id) == (0, f"archived: memory {memory_id}\n", "")
    code, out, err = run(daemon, "forget", "0190f2a0-0000-7000-8000-000000000000")
    assert code == 65
    assert "404" in err and out == ""


def test_amend_from_argument_and_from_stdin(run: Run, daemon: dict[str, str]) -> None:
    memory_id = _remember(run, daemon, "Deploys go out on Tuesdays.", "amend")
    code, out, err = run(daemon, "amend", memory_id, "Deploys go out on Thursdays.", "--json")
    assert code == 0, err
    assert json.loads(out)["content"] == "Deploys go out on Thursdays."
    code, out, err = run(
        daemon,
        "amend",
        memory_id,
        "-",
        "--reason",
        "moved again",
        "--json",
        stdin="Deploys go out on Fridays after the freeze.\n",
    )
    assert code == 0, err
    assert json.loads(out)["content"] == "Deploys go out on Fridays after the freeze."
    shown = httpx.get(
        f"http://127.0.0.1:{daemon['MNEMONIC_PORT']}/api/v1/memories/{memory_id}",
        headers={"Authorization": f"Bearer {TOKEN}"},
    ).json()
    assert shown["content"] == "Deploys go out on Fridays after the freeze."
    code, out, _ = run(daemon, "amend", memory_id, "Deploys go out on Mondays.")
    assert (code, out) == (0, f"amended: memory {memory_id}\n")
    assert run(daemon, "amend", "0190f2a0-0000-7000-8000-000000000000", "text")[0] == 65
    code, out, err = run(daemon, "remember", "-", "--json", stdin="Piped into remember.\n")
    assert code == 0, err
    assert json.loads(out)["status"] == "encoded"
    code, _, err = run(daemon, "amend", memory_id, "-", stdin="x" * 100_001)
    assert code == 65
    assert "content" in err


def test_status_human_and_json(run: Run, daemon: dict[str, str]) -> None:
    _remember(run, daemon, "Status check memory for the CLI test.", "status")
    code, out, err = run(daemon, "status", "--json")
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    assert report["running"] is True
    assert report["memories"]["memories_active"] >= 1
    assert report["url"] == f"http://127.0.0.1:{daemon['MNEMONIC_PORT']}"
    assert isinstance(report["pid"], int)
    assert report["stats"]["memories"]["total"] >= 1
    human = _cli(daemon, "status")  # once as a real process
    assert human.returncode == 0
    first = human.stdout.splitlines()[0]
    assert first.startswith("mnemonic ") and f"pid {report['pid']}" in first
    assert f"url: {report['url']}" in human.stdout
    assert "memories: " in human.stdout and " active" in human.stdout


def test_watch_streams_live_events_and_ctrl_c_exits_0(run: Run, daemon: dict[str, str]) -> None:
    watch = Watch(daemon, "--json", "--types", "memory_encoded,memory_amended", "--project", "ws")
    try:
        memory_id = _remember(run, daemon, "The CI cache key includes the lockfile hash.", "ws")
        other = _remember(run, daemon, "This one is in another project.", "elsewhere")
        encoded = json.loads(watch.out.wait_for(lambda line: memory_id in line))
        assert encoded["type"] == "memory_encoded"
        assert encoded["payload"]["project"] == "ws"
        code, _, err = run(daemon, "amend", memory_id, "The CI cache key hashes the lockfile.")
        assert code == 0, err
        amended = json.loads(watch.out.wait_for(lambda line: "memory_amended" in line))
        assert amended["payload"]["memory_id"] == memory_id
        watch.proc.send_signal(signal.SIGINT)
        assert watch.proc.wait(timeout=30) == 0
        watch.out.join()
        rest = []
        while not watch.out.lines.empty():
            rest.append(watch.out.lines.get_nowait())
        assert not any(other in line for line in rest), "--project let another project in"
    finally:
        watch.close()


@pytest.mark.slow
def test_watch_exits_69_when_the_daemon_goes_away(run: Run, tmp_path: Path) -> None:
    proc, env = _start(tmp_path / "home")
    try:
        watch = Watch(env)
        try:
            memory_id = _remember(run, env, "A memory seen by the human-readable tail.", "tail")
            line = watch.out.wait_for(lambda text: "memory_encoded" in text)
            assert f"memory_id={memory_id}" in line
            _stop(proc)
            assert watch.proc.wait(timeout=30) == 69
            watch.err.wait_for(lambda text: "closed the event stream" in text)
        finally:
            watch.close()
    finally:
        _stop(proc)
