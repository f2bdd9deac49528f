"""The CLI against a real daemon subprocess (``python -m mnemonic serve`` on a free port):
forget, amend, status and a live ``watch``."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from support.cli import Run, cli
from support.daemon_proc import TOKEN, DaemonProc, free_port, running

# `python -m mnemonic` with Ctrl-C restored: a suite started in the background
# (`make test &`) runs with SIGINT ignored, children inherit that, and Python then never
# raises KeyboardInterrupt; these tests send SIGINT on purpose.
WITH_CTRL_C = [
    sys.executable,
    "-c",
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler);"
    " sys.argv[0] = 'mnemonic'; runpy.run_module('mnemonic', run_name='__main__')",
]


def _env(daemon: DaemonProc) -> dict[str, str]:
    """What a client of ``daemon`` needs; the rest of this environment is kept, so the
    test-wide MNEMONIC_* settings (watchers off) reach the subprocess CLI too."""
    env = dict(os.environ)
    env.update(
        {
            "MNEMONIC_HOME": str(daemon.home),
            "MNEMONIC_PORT": str(daemon.port),
            "MNEMONIC_TOKEN": TOKEN,
        }
    )
    return env


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with running(tmp_path_factory.mktemp("cli") / "home") as proc:
        yield _env(proc)


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
            [*WITH_CTRL_C, "watch", *args],
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
    human = cli(daemon, "status")  # once as a real process
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
def test_watch_reconnects_when_the_daemon_restarts(run: Run, tmp_path: Path) -> None:
    """A stopped daemon closes the stream with 1012; the tail waits, reconnects to the
    restarted daemon and goes on printing its events."""
    home, port = tmp_path / "home", free_port()
    proc = DaemonProc(home, port)
    try:
        proc.wait_ready()
        env = _env(proc)
        watch = Watch(env)
        try:
            memory_id = _remember(run, env, "A memory seen by the human-readable tail.", "tail")
            line = watch.out.wait_for(lambda text: "memory_encoded" in text)
            assert f"memory_id={memory_id}" in line
            proc.close()
            watch.err.wait_for(lambda text: "closed the event stream (code 1012" in text)
            assert watch.proc.poll() is None  # still waiting for the daemon
            proc = DaemonProc(home, port)
            proc.wait_ready()
            watch.err.wait_for(lambda text: text.startswith("reconnected"), timeout=60)
            again = _remember(run, env, "A memory after the restart reaches the tail.", "tail")
            line = watch.out.wait_for(lambda text: "memory_encoded" in text)
            assert f"memory_id={again}" in line
        finally:
            watch.close()
    finally:
        proc.close()


# --- browsing commands -------------------------------------------------------------------


def test_remember_from_the_cli_has_its_own_source(run: Run, daemon: dict[str, str]) -> None:
    memory_id = _remember(run, daemon, "The CLI source label is cli, not terminal.", "src")
    code, out, err = run(daemon, "show", memory_id, "--json")
    assert code == 0, err
    assert json.loads(out)["memory"]["source"] == "cli"
    code, out, err = run(daemon, "list", "--source", "cli", "--project", "src", "--json")
    assert code == 0, err
    assert [m["id"] for m in json.loads(out)["items"]] == [memory_id]


def test_recall_shows_each_results_id_source_date_and_project(
    run: Run, daemon: dict[str, str]
) -> None:
    memory_id = _remember(run, daemon, "The nightly backup runs at 02:00 on host vault.", "rec")
    code, out, err = run(daemon, "recall", "nightly backup host", "--project", "rec")
    assert code == 0, err
    head = out.splitlines()[0].split("  ")
    assert head[1] == memory_id and head[2].startswith("cli/")
    assert head[3][:4].isdigit()  # the local date
    assert head[-1] == "rec"
    assert "nightly backup" in out.splitlines()[1]
    assert out.splitlines()[-1].startswith("query id: ")


def test_recall_reads_as_of_asked_at_and_a_window_and_refuses_a_bad_time(
    run: Run, daemon: dict[str, str]
) -> None:
    memory_id = _remember(run, daemon, "The standup moved to 09:30 on Tuesdays.", "when")
    ask = ["recall", "what happened with the standup two weeks ago", "--project", "when"]
    code, out, err = run(daemon, *ask, "--json", "--explain")
    assert code == 0, err
    [now] = json.loads(out)["results"]
    assert now["memory"]["id"] == memory_id
    assert now["explain"]["contributions"].get("when", 0.0) == 0.0  # nothing then

    later = datetime.now(UTC) + timedelta(days=14)
    code, out, err = run(daemon, *ask, "--asked-at", later.isoformat(), "--json", "--explain")
    assert code == 0, err
    [asked] = json.loads(out)["results"]
    assert asked["explain"]["contributions"]["when"] > 0  # asked in two weeks: today

    tomorrow = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    for hidden in (["--as-of", "2001-01-01"], ["--until", "2001-01-01"], ["--since", tomorrow]):
        code, out, err = run(daemon, *ask, *hidden, "--json")
        assert code == 0, err
        assert json.loads(out)["results"] == [], hidden

    code, out, err = run(daemon, *ask, "--asked-at", "the day after payday")
    assert code == 65, (out, err)
    assert "asked_at" in err


def test_list_show_projects_feedback_and_stats(run: Run, daemon: dict[str, str]) -> None:
    first = _remember(run, daemon, "The payments service retries webhooks five times.", "brw")
    second = _remember(run, daemon, "Webhook retries back off exponentially.", "brw")
    code, out, err = run(daemon, "list", "--project", "brw")
    assert code == 0, err
    heads = [line.split("  ") for line in out.splitlines() if not line.startswith(" ")]
    assert [h[0] for h in heads] == [second, first]  # newest first, whole ids
    assert all(h[1].startswith("cli/") and h[-1] == "brw" for h in heads)

    run(daemon, "amend", first, "The payments service retries webhooks six times.")
    code, out, err = run(daemon, "show", first)
    assert code == 0, err
    assert f"id: {first}" in out and "project: brw" in out
    assert "history (1 amendments):" in out
    assert "was: The payments service retries webhooks five times." in out
    code, out, _ = run(daemon, "show", first, "--json")
    assert set(json.loads(out)) >= {"memory", "associations", "neighbours", "amendments"}
    assert run(daemon, "show", "0190f2a0-0000-7000-8000-000000000000")[0] == 65

    code, out, err = run(daemon, "projects", "--json")
    assert code == 0, err
    found = {p["name"]: p for p in json.loads(out)["items"]}
    assert found["brw"]["memories"] == 2
    code, out, _ = run(daemon, "projects")
    assert any(line.split()[:2] == ["brw", "2"] for line in out.splitlines())

    code, out, err = run(daemon, "recall", "webhook retries", "--project", "brw", "--json")
    query_id = json.loads(out)["query_id"]
    code, out, err = run(daemon, "feedback", query_id, "helpful", first, "--json")
    assert code == 0, err
    assert json.loads(out) == {"query_id": query_id, "updated": 1}
    assert run(daemon, "feedback", query_id, "great")[0] == 64

    code, out, err = run(daemon, "stats", "--json")
    assert code == 0, err
    assert json.loads(out)["memories"]["total"] >= 2
    code, out, _ = run(daemon, "stats")
    assert out.startswith("memories: ") and "by source: " in out and "cli " in out


def test_exclusions_add_list_remove(run: Run, daemon: dict[str, str], tmp_path: Path) -> None:
    path = str(tmp_path / "private")
    code, out, err = run(daemon, "exclusions", "add", path, "--reason", "secrets")
    assert (code, out) == (0, f"excluded: {path}\n"), err
    code, out, err = run(daemon, "exclusions", "--json")
    assert code == 0, err
    assert path in [row["path"] for row in json.loads(out)["items"]]
    code, out, _ = run(daemon, "exclusions")
    assert any(line.startswith(path) and "secrets" in line for line in out.splitlines())
    assert run(daemon, "exclusions", "remove", path) == (0, f"removed: {path}\n", "")
    assert run(daemon, "exclusions", "remove", path)[0] == 65  # 404: not excluded
    assert run(daemon, "exclusions", "add", "relative/path")[0] == 65  # 422


# --- serving -----------------------------------------------------------------------------


def test_a_second_serve_says_so_before_anything_that_looks_like_serving(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    with running(home) as first:
        second = DaemonProc(home)  # another port: only the folder is shared
        try:
            assert second.wait(timeout=60) == 75
            output = second.output()
        finally:
            second.close()
        assert "another mnemonic daemon" in output and str(first.pid) in output
        before = output.split("another mnemonic daemon", 1)[0].lower()
        for word in ("serving", "starting on", "ready", "listening"):
            assert word not in before, output
        assert "serving" not in output.lower() and "ready on" not in output


@pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")),
    reason="needs a Linux machine without a display",
)
def test_clipboard_without_a_clipboard_is_disabled_with_its_reason_in_status(
    run: Run, tmp_path: Path
) -> None:
    with running(tmp_path / "home", env={"MNEMONIC_CLIPBOARD__ENABLED": "true"}) as proc:
        env = _env(proc)
        deadline = time.monotonic() + 30
        while True:
            code, out, err = run(env, "status", "--json")
            assert code == 0, err
            clipboard = json.loads(out)["watchers"].get("clipboard") or {}
            if clipboard.get("state") == "disabled" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert clipboard["state"] == "disabled", out
        message = clipboard["message"]
        assert "xclip" in message and "http" not in message and "\n" not in message
        health = json.loads(out)
        agent = next(a for a in health["agents"] if a["name"] == "watcher:clipboard")
        assert agent["detail"]["state"] == "disabled"  # /api/v1/health itself
        code, out, _ = run(env, "status")
        assert "watcher:clipboard disabled" in out
        assert f"clipboard watcher disabled: {message}" in out
