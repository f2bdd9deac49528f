"""Perception end to end, under ``mnemonic serve`` (a real daemon process): all four
watchers configured from ``config.yaml``, the secret fixture pushed through every write path
(a watched file, shell history, git commit messages, REST and the CLI), and afterwards the
database, its WAL, the log folder, the daemon's output and every ``/ws`` frame are grepped
for every secret value of the fixture.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from support.daemon_proc import TOKEN, DaemonProc, running
from support.secrets import all_secret_values, load_secret_cases
from support.ws import FrameRecorder

GIT = shutil.which("git")


def wait_for(
    check: Callable[[], Any],
    timeout: float = 60.0,
    what: str = "",
    report: Callable[[], Any] | None = None,
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    detail = f": {report()}" if report is not None else ""
    raise AssertionError(f"timed out waiting for {what or check}{detail}")


def git(repo: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run([GIT or "git", *args], cwd=repo, env=env, check=True, capture_output=True)


def write_config(home: Path, config: dict[str, Any]) -> None:
    folder = home / "config"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A watched source tree, a git repository, a bash history file and a daemon home."""
    root = tmp_path / "work" / "webshop"
    root.mkdir(parents=True)
    repo = tmp_path / "repos" / "billing"
    repo.mkdir(parents=True)
    history = tmp_path / "shell" / ".bash_history"
    history.parent.mkdir()
    yield {"root": root, "repo": repo, "history": history, "home": tmp_path / "home"}


def perception_config(world: dict[str, Path]) -> dict[str, Any]:
    return {
        # the filter's own judgement is tested elsewhere: here everything must pass it,
        # so that every secret really reaches the write path
        "filter": {"min_score": 0.0, "min_score_by_source": {}, "frequency_max": 0},
        "filesystem": {"roots": [str(world["root"])], "debounce_s": 0.3},
        "shell_history": {"files": [str(world["history"])], "poll_interval_s": 0.2},
        "git": {"roots": [str(world["repo"].parent)], "poll_interval_s": 0.2, "max_depth": 1},
        "clipboard": {"enabled": True, "poll_interval_s": 0.2},
        "perception": {"projects": [{"name": "shop", "paths": [str(world["root"])]}]},
    }


# the conftest switches these watchers off for hermetic daemons; this test wants them on
WATCHERS_ON = {"MNEMONIC_SHELL_HISTORY__ENABLED": "true", "MNEMONIC_GIT__ENABLED": "true"}


def health(http: httpx.Client) -> dict[str, Any]:
    return dict(http.get("/api/v1/health").json())


def agent(h: dict[str, Any], name: str) -> dict[str, Any]:
    return next(a for a in h["agents"] if a["name"] == name)


def stats(http: httpx.Client) -> dict[str, Any]:
    return dict(http.get("/api/v1/stats").json())


@pytest.mark.slow
@pytest.mark.skipif(GIT is None, reason="the git binary is not installed")
def test_secrets_never_reach_the_database_logs_or_stream(world: dict[str, Path]) -> None:
    cases = load_secret_cases()
    assert len(cases) >= 40
    single_line = [c.text for c in cases if "\n" not in c.text]
    git(world["repo"], "init", "-q", "-b", "main")
    (world["repo"] / "README").write_text("billing\n")
    git(world["repo"], "add", ".")
    git(world["repo"], "commit", "-q", "-m", "initial import")
    # history written before the start is imported (initial_entries), the rest is tailed
    world["history"].write_text("\n".join(single_line[:10]) + "\n", encoding="utf-8")
    write_config(world["home"], perception_config(world))

    with running(world["home"], env=WATCHERS_ON) as daemon, daemon.client() as http:
        recorder = FrameRecorder(f"ws://127.0.0.1:{daemon.port}/ws")
        try:
            h = health(http)
            names = {a["name"] for a in h["agents"]}
            assert {"perception", "watcher:filesystem", "watcher:terminal"} <= names
            assert {"watcher:git", "watcher:clipboard"} <= names
            # no clipboard on a headless machine: disabled with a reason, not a crash
            clip = agent(h, "watcher:clipboard")
            assert clip["state"] in {"running", "finished"}
            # the first look at a repository only records where it stands: commit after it
            wait_for(
                lambda: (
                    (d := agent(health(http), "watcher:git")["detail"]["detail"])
                    and d.get("repositories") == 1
                    and d.get("polls", 0) >= 2
                ),
                what="the git watcher to find the repository",
            )
            push_secrets(daemon, http, world, cases, single_line)
            sources = ("filesystem", "terminal", "git", "api")
            wait_for(
                lambda: all(stats(http)["memories"]["by_source"].get(s) for s in sources),
                what=f"memories from each of {sources}",
                report=lambda: (agent(health(http), "watcher:git"), stats(http)["perception"]),
            )
            wait_for(lambda: http.get("/api/v1/health").json()["embedding"]["backlog"] == 0)
            stored = http.get("/api/v1/memories", params={"limit": 200}).json()["items"]
            assert any("[REDACTED:" in m["content"] for m in stored)
            shop = [m for m in stored if m["source"] == "filesystem"]
            assert shop and all(m["project"] == "shop" for m in shop)
        finally:
            recorder.close()
        daemon.send(signal.SIGTERM)
        assert daemon.wait(30) == 0

    assert recorder.frames, "the stream delivered nothing"
    assert any('"watcher_event"' in f for f in recorder.frames)
    places = {
        "stream": "\n".join(recorder.frames).encode(),
        "daemon output": daemon.stderr_path.read_bytes(),
    }
    data = world["home"] / "data"
    for path in [*data.glob("mnemonic.db*"), *(world["home"] / "logs").rglob("*")]:
        if path.is_file():
            places[str(path)] = path.read_bytes()
    assert any(name.endswith("mnemonic.db") for name in places)
    leaks = [
        (secret[:12], where)
        for secret in all_secret_values()
        for where, blob in places.items()
        if secret.encode() in blob
    ]
    assert not leaks, leaks


def push_secrets(
    daemon: DaemonProc,
    http: httpx.Client,
    world: dict[str, Path],
    cases: list[Any],
    single_line: list[str],
) -> None:
    everything = "\n".join(c.text for c in cases)
    # 1. a watched file (text files up to 100 KB are read whole)
    (world["root"] / "deploy-notes.md").write_text(
        "# deploy notes: the release failed because of these settings\n" + everything + "\n"
    )
    # 2. shell history, appended while the watcher runs
    with world["history"].open("a", encoding="utf-8") as handle:
        handle.write("\n".join(single_line[10:]) + "\n")
    # 3. git commit messages, a few fixture lines each
    for n in range(0, len(single_line), 6):
        (world["repo"] / f"change-{n}.txt").write_text(f"change {n}\n")
        git(world["repo"], "add", ".")
        git(
            world["repo"],
            "commit",
            "-q",
            "-m",
            f"fix deploy {n}\n\n" + "\n".join(single_line[n : n + 6]),
        )
    # 4. REST, one item per fixture case
    for case in cases:
        answer = http.post("/api/v1/memories", json={"content": f"note: {case.text}"})
        assert answer.status_code in (201, 202), answer.text
    # 5. the CLI: the whole fixture on stdin, and one case as an argument
    env = {**os.environ, "MNEMONIC_HOME": str(daemon.home), "MNEMONIC_PORT": str(daemon.port)}
    env["MNEMONIC_TOKEN"] = TOKEN
    cli = [sys.executable, "-m", "mnemonic", "remember"]
    done = subprocess.run(
        [*cli, "-", "--json"],
        check=False,
        input=everything,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["memory_id"]
    done = subprocess.run(
        [*cli, single_line[0]], check=False, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_exclusions_are_effective_at_once_and_survive_a_restart(world: dict[str, Path]) -> None:
    config = perception_config(world)
    config["git"] = {"enabled": False}
    config["clipboard"] = {"enabled": False}
    write_config(world["home"], config)
    noisy = world["root"] / "generated"
    noisy.mkdir()
    with running(world["home"]) as daemon, daemon.client() as http:
        assert http.get("/api/v1/exclusions").json() == {"items": []}
        bad = http.post("/api/v1/exclusions", json={"path": "relative/dir"})
        assert bad.status_code == 422
        assert http.post("/api/v1/exclusions", json={"path": "/a\u0000b"}).status_code == 422
        assert http.post("/api/v1/exclusions", json={}).status_code == 422
        added = http.post("/api/v1/exclusions", json={"path": str(noisy), "reason": "generated"})
        assert added.status_code == 201
        assert added.json()["origin"] == "user" and added.json()["created"] is True
        again = http.post("/api/v1/exclusions", json={"path": str(noisy) + "/"})
        assert again.status_code == 200 and again.json()["created"] is False
        (noisy / "out.txt").write_text("error: generated output failed again\n")
        (world["root"] / "kept.txt").write_text("decision: we keep the billing retry at 3\n")
        s = wait_for(
            lambda: (x := stats(http))["perception"]["filter"]["dropped"]["excluded_path"] and x,
            what="the excluded file to be dropped",
        )
        wait_for(lambda: stats(http)["perception"]["remembered"] >= 1, what="kept.txt stored")
        items = http.get("/api/v1/memories", params={"source": "filesystem"}).json()["items"]
        assert [m["metadata"]["path"] for m in items] == [str(world["root"] / "kept.txt")]
        assert s["perception"]["filter"]["exclusions"] == 1
        listed = http.get("/api/v1/exclusions").json()["items"]
        assert [e["path"] for e in listed] == [str(noisy)]
    with running(world["home"]) as daemon, daemon.client() as http:
        listed = http.get("/api/v1/exclusions").json()["items"]
        assert [(e["path"], e["reason"]) for e in listed] == [(str(noisy), "generated")]
        gone = http.delete("/api/v1/exclusions", params={"path": str(noisy)})
        assert gone.status_code == 200 and gone.json()["removed"] is True
        assert http.delete("/api/v1/exclusions", params={"path": str(noisy)}).status_code == 404
        assert http.get("/api/v1/exclusions").json() == {"items": []}
        (noisy / "later.txt").write_text("error: the generated build failed after all\n")
        wait_for(
            lambda: any(
                m["metadata"]["path"].endswith("later.txt")
                for m in http.get("/api/v1/memories", params={"source": "filesystem"}).json()[
                    "items"
                ]
            ),
            what="a file in the no longer excluded folder to be stored",
        )


@pytest.mark.slow
@pytest.mark.skipif(GIT is None, reason="the git binary is not installed")
def test_what_happened_while_down_and_before_watching_is_remembered(
    world: dict[str, Path],
) -> None:
    """A real daemon: a new root's README is read at once, commits made while the daemon
    was stopped are remembered at the next start, and the shell hook's lines give a
    command its project and exit status."""
    git(world["repo"], "init", "-q", "-b", "main")
    (world["repo"] / "README").write_text("billing\n")
    git(world["repo"], "add", ".")
    git(world["repo"], "commit", "-q", "-m", "initial import")
    (world["root"] / "README.md").write_text("# webshop\nWe decided to keep the cart in redis.\n")
    config = perception_config(world)
    config["clipboard"] = {"enabled": False}
    config["git"]["initial_commits"] = 0
    write_config(world["home"], config)

    def memories(http: httpx.Client, source: str) -> list[dict[str, Any]]:
        params = {"source": source, "limit": 100}
        return list(http.get("/api/v1/memories", params=params).json()["items"])

    with running(world["home"], env=WATCHERS_ON) as daemon, daemon.client() as http:
        readme = wait_for(
            lambda: [m for m in memories(http, "filesystem") if "redis" in m["content"]],
            what="the new root's README",
        )
        assert readme[0]["metadata"]["kind"] == "file_indexed"
        wait_for(
            lambda: agent(health(http), "watcher:git")["detail"]["detail"].get("polls", 0) >= 2,
            what="the git watcher's first look",
        )
        daemon.send(signal.SIGTERM)
        assert daemon.wait(30) == 0

    (world["repo"] / "fix.txt").write_text("fix\n")
    git(world["repo"], "add", ".")
    git(world["repo"], "commit", "-q", "-m", "fix the invoice rounding error while down")
    hook = world["home"] / "data" / "shell-hook.jsonl"
    line = {
        "v": 1,
        "shell": "bash",
        "t": int(time.time()),
        "status": 2,
        "cwd": str(world["root"]),
        "cmd": "pytest tests/test_cart.py",
    }
    hook.write_text(json.dumps(line) + "\n")

    with running(world["home"], env=WATCHERS_ON) as daemon, daemon.client() as http:
        commits = wait_for(
            lambda: [m for m in memories(http, "git") if "rounding" in m["content"]],
            what="the commit made while the daemon was down",
        )
        assert commits[0]["metadata"]["event"]["detected_by"] == "catch_up"
        assert not [m for m in memories(http, "git") if "initial import" in m["content"]]
        failed = wait_for(
            lambda: [m for m in memories(http, "terminal") if "test_cart" in m["content"]],
            what="the hooked command",
        )
        assert failed[0]["metadata"]["event"]["exit_status"] == 2
        assert failed[0]["project"] == "shop"
        assert "(exit status 2: failed)" in failed[0]["content"]
