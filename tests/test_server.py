"""The real thing: `mnemonic serve` under uvicorn on 127.0.0.1, and the CLI against it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.daemon_proc import free_port

TOKEN = "server-test-token-abcdef"


def _env(home: Path, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"MNEMONIC_HOME": str(home), "MNEMONIC_PORT": str(port), "MNEMONIC_TOKEN": TOKEN})
    return env


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    home = tmp_path_factory.mktemp("home")
    port = free_port()
    env = _env(home, port)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnemonic", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "daemon did not become ready"
        time.sleep(0.05)
    yield base, env
    proc.terminate()
    # uvicorn re-raises the captured SIGTERM after its graceful shutdown
    assert proc.wait(timeout=15) in (0, -15)
    if proc.stderr is not None:
        proc.stderr.close()
    wal = home / "data" / "mnemonic.db-wal"
    assert not wal.exists() or wal.stat().st_size == 0, "WAL not checkpointed on shutdown"


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemonic", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_rest_over_real_http(server: tuple[str, dict[str, str]]) -> None:
    base, _ = server
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, headers=headers) as http:
        stored = http.post(
            "/api/v1/memories",
            params={"wait": "true"},
            json={"content": "The nightly backup job writes to /srv/backups.", "project": "ops"},
        )
        assert stored.status_code == 201
        answer = http.post("/api/v1/query", json={"query": "where do backups go", "project": "ops"})
        assert answer.json()["results"][0]["memory"]["id"] == stored.json()["memory_id"]
        health = http.get("/api/v1/health").json()
        assert health["status"] == "ok"
        assert health["vector_index"]["path"] == "numpy-exact"
        assert health["embedding"] == {
            "model": "all-MiniLM-L6-v2-int8",
            "dim": 384,
            "backlog": 0,
            "reembedding": {"running": False, "done": 0, "total": 0},
        }
        assert http.get("/api/v1/health", headers={"Authorization": "Bearer no"}).status_code == 401
        evil = http.get("/api/v1/health", headers={"Host": "attacker.example"})
        assert evil.status_code == 403


def test_home_folder_layout_and_private_modes(server: tuple[str, dict[str, str]]) -> None:
    home = Path(server[1]["MNEMONIC_HOME"])
    assert (home / "data" / "mnemonic.db").exists()
    assert (home / "config" / "config.yaml").read_text().startswith("# mnemonic configuration")
    assert (home / "data").stat().st_mode & 0o077 == 0
    assert (home / "logs" / "mnemonic.log").exists()


def test_cli_round_trip(server: tuple[str, dict[str, str]]) -> None:
    _, env = server
    done = _cli(
        env, "remember", "Use pnpm, not npm, in the web folder.", "--project", "web", "--json"
    )
    assert done.returncode == 0, done.stderr
    stored = json.loads(done.stdout)
    assert stored["status"] == "encoded"
    found = _cli(env, "recall", "which package manager for web", "--project", "web", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["results"][0]["memory"]["id"] == stored["memory_id"]
    # (plain "package manager" is below the relevance floor: MiniLM gives it cosine 0.18
    # to this note, where gibberish reaches 0.20, so it rightly answers nothing)
    table = _cli(env, "recall", "which package manager for web", "--explain")
    assert "pnpm" in table.stdout
    status = _cli(env, "status", "--json")
    assert json.loads(status.stdout)["memories"]["memories_active"] >= 1
    assert _cli(env, "token").stdout.strip() == TOKEN


def test_cli_says_how_to_start_when_down(tmp_path: Path) -> None:
    env = _env(tmp_path, free_port())
    result = _cli(env, "recall", "anything")
    assert result.returncode == 69
    assert "mnemonic serve" in result.stderr
    assert result.stdout == ""
