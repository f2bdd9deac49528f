"""``mnemonic doctor`` against real homes: nothing running, corrupt and outdated database
files, invalid configs, a real daemon subprocess, a port held by something else, and the
OpenAI-compatible embedder endpoint (the scripted test server)."""

from __future__ import annotations

import http.server
import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from support.openai_server import OpenAIServer, error_reply
from typer.testing import CliRunner

from mnemonic.cli.doctor import (
    DISK_FAIL_BYTES,
    DISK_WARN_BYTES,
    check_folder,
    disk_status,
    register,
    service_row,
)
from mnemonic.config import StorageConfig
from mnemonic.install import ServiceStatus
from mnemonic.store.database import list_migrations, migrate

TOKEN = "doctor-test-token-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def doctor_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """mnemonic (test harness)."""

    register(app)
    return app


def run_doctor(env: dict[str, str | None]) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """(exit code, the JSON payload, its checks by name)."""
    result = CliRunner().invoke(doctor_app(), ["doctor", "--json"], env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    payload = json.loads(result.stdout)
    return result.exit_code, payload, {c["check"]: c for c in payload["checks"]}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str | None]:
    """A home that does not exist yet and a port nobody uses."""
    return {
        "MNEMONIC_HOME": str(tmp_path / "home"),
        "MNEMONIC_PORT": str(free_port()),
        "MNEMONIC_TOKEN": None,
    }


def home_of(env: dict[str, str | None]) -> Path:
    return Path(str(env["MNEMONIC_HOME"]))


def data_dir(env: dict[str, str | None]) -> Path:
    folder = home_of(env) / "data"
    folder.mkdir(parents=True, mode=0o700)
    return folder


# --- (a) nothing running ------------------------------------------------------------------


def test_nothing_running_warns_without_failing_and_creates_nothing(
    env: dict[str, str | None],
) -> None:
    code, payload, checks = run_doctor(env)
    assert code == 0 and payload["ok"] is True
    assert [c["check"] for c in payload["checks"] if c["status"] == "fail"] == []
    assert checks["daemon"]["status"] == "warn"
    assert "mnemonic serve" in checks["daemon"]["fix"]
    assert "mnemonic service install" in checks["daemon"]["fix"]
    assert checks["vector path"]["detail"].startswith("numpy-exact (daemon down)")
    assert checks["database"]["status"] == "ok"
    assert "created on first start" in checks["database"]["detail"]
    assert checks["port"] == {
        "check": "port",
        "status": "ok",
        "detail": f"{env['MNEMONIC_PORT']} is free",
        "fix": "",
    }
    assert (
        checks["embedder"]["status"] == "ok" and "sha256 verified" in checks["embedder"]["detail"]
    )
    assert checks["service"]["status"] in {"ok", "warn"}
    for row in payload["checks"]:
        assert set(row) == {"check", "status", "detail", "fix"}
        assert row["status"] == "ok" or row["fix"], f"{row['check']} needs a fix line"
    assert not home_of(env).exists(), "doctor must not create anything"


def test_human_output_is_a_table_with_a_summary(env: dict[str, str | None]) -> None:
    result = CliRunner().invoke(doctor_app(), ["doctor"], env=env)
    assert result.exit_code == 0
    assert "mnemonic doctor" in result.stdout
    for name in ("python", "config", "database", "daemon", "embedder", "vector path"):
        assert name in result.stdout
    assert "0 failures" in result.stderr


# --- (b) database files ------------------------------------------------------------------


def test_corrupt_database_fails_with_exit_1(env: dict[str, str | None]) -> None:
    (data_dir(env) / "mnemonic.db").write_bytes(b"this is not sqlite " * 500)
    code, payload, checks = run_doctor(env)
    assert code == 1 and payload["ok"] is False
    assert checks["database"]["status"] == "fail"
    assert "not a database" in checks["database"]["detail"]
    assert "move" in checks["database"]["fix"]


def _migrated(path: Path) -> None:
    migrate(path, StorageConfig())
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")


def test_truncated_database_fails(env: dict[str, str | None]) -> None:
    database = data_dir(env) / "mnemonic.db"
    _migrated(database)
    size = database.stat().st_size
    with database.open("r+b") as fh:
        fh.truncate(size // 2)
    code, _, checks = run_doctor(env)
    assert code == 1
    assert checks["database"]["status"] == "fail", checks["database"]


@pytest.mark.parametrize(
    ("user_version", "status", "words"),
    [(None, "ok", "quick_check ok"), (0, "warn", "migrated"), (99, "fail", "newer")],
)
def test_schema_version_against_the_migration_files(
    env: dict[str, str | None], user_version: int | None, status: str, words: str
) -> None:
    database = data_dir(env) / "mnemonic.db"
    _migrated(database)
    if user_version is not None:
        with closing(sqlite3.connect(database)) as conn:
            conn.execute(f"PRAGMA user_version = {user_version}")
    before = database.read_bytes()
    code, _, checks = run_doctor(env)
    assert checks["database"]["status"] == status
    assert words in checks["database"]["detail"]
    assert code == (1 if status == "fail" else 0)
    assert database.read_bytes() == before, "doctor opens the database read-only"
    if status == "ok":
        assert f"schema v{len(list_migrations())}" in checks["database"]["detail"]


# --- (d) configuration -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("yaml_text", "extra_env", "words"),
    [
        ("server:\n  port: 70000\n", {}, "server.port"),
        ("server: [unclosed\n", {}, "config.yaml"),
        ("recall:\n  no_such_key: 1\n", {}, "no_such_key"),
        ("", {"MNEMONIC_SERVER__PORT": "not-a-port"}, "server.port"),
    ],
)
def test_invalid_config_fails(
    env: dict[str, str | None], yaml_text: str, extra_env: dict[str, str], words: str
) -> None:
    config = home_of(env) / "config"
    config.mkdir(parents=True, mode=0o700)
    (config / "config.yaml").write_text(yaml_text)
    code, payload, checks = run_doctor({**env, **extra_env})
    assert code == 1 and payload["ok"] is False
    assert checks["config"]["status"] == "fail"
    assert words in checks["config"]["detail"]
    assert "config.yaml" in checks["config"]["fix"]


# --- (c) a real daemon -------------------------------------------------------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, str], int]]:
    """``python -m mnemonic serve`` on a free port; yields its env and pid."""
    home = tmp_path_factory.mktemp("daemon-home")
    port = free_port()
    env = {**os.environ, "MNEMONIC_HOME": str(home), "MNEMONIC_PORT": str(port)}
    env["MNEMONIC_TOKEN"] = TOKEN
    log_path = home / "daemon-stderr.log"
    with log_path.open("wb") as log_file:  # a file, not a pipe nobody reads
        proc = subprocess.Popen(
            [sys.executable, "-m", "mnemonic", "serve"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
    try:
        _wait_ready(port, proc, log_path)
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            stored = http.post(
                f"http://127.0.0.1:{port}/api/v1/memories",
                params={"wait": "true"},
                json={"content": "The doctor checks the vector path.", "project": "doc"},
            )
            assert stored.status_code == 201, stored.text
        yield {k: env[k] for k in ("MNEMONIC_HOME", "MNEMONIC_PORT", "MNEMONIC_TOKEN")}, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _wait_ready(port: int, proc: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log_path.read_text(errors="replace")[-2000:]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise AssertionError("the daemon did not become ready in 60 s")


def test_a_running_daemon_is_live_ready_and_reports_its_vector_path(
    daemon: tuple[dict[str, str], int],
) -> None:
    env, pid = daemon
    code, payload, checks = run_doctor({**env})
    assert code == 0 and payload["ok"] is True
    assert checks["daemon"]["status"] == "ok"
    assert "/livez 200, /readyz 200" in checks["daemon"]["detail"]
    assert checks["health"]["status"] == "ok"
    assert f"pid {pid}" in checks["health"]["detail"]
    assert checks["port"]["status"] == "ok"
    assert f"pid {pid}" in checks["port"]["detail"] and "mnemonic" in checks["port"]["detail"]
    assert checks["vector path"]["detail"].startswith("numpy-exact (1 vectors)")
    assert checks["database"]["status"] == "ok", checks["database"]
    assert "quick_check ok" in checks["database"]["detail"]
    assert checks["config"]["status"] == "ok"  # the daemon wrote its commented config.yaml


def test_a_wrong_token_is_reported(daemon: tuple[dict[str, str], int]) -> None:
    env, _ = daemon
    code, _, checks = run_doctor({**env, "MNEMONIC_TOKEN": "not-the-token"})
    assert code == 0
    assert checks["health"]["status"] == "warn"
    assert "401" in checks["health"]["detail"]
    assert checks["vector path"]["detail"].startswith("numpy-exact (daemon down)")


# --- the port held by something that is not mnemonic -------------------------------------


class NotMnemonic(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_port_held_by_another_program_is_named(env: dict[str, str | None]) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotMnemonic)
    thread = threading.Thread(target=lambda: server.serve_forever(poll_interval=0.05))
    thread.start()
    try:
        port = server.server_address[1]
        code, _, checks = run_doctor({**env, "MNEMONIC_PORT": str(port)})
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert code == 0
    assert checks["daemon"]["status"] == "warn" and "not mnemonic?" in checks["daemon"]["detail"]
    assert checks["port"]["status"] == "warn"
    assert f"held by pid {os.getpid()}" in checks["port"]["detail"]
    assert "server.port" in checks["port"]["fix"]


# --- the OpenAI-compatible embedder ------------------------------------------------------


def _openai_config(env: dict[str, str | None], base_url: str) -> None:
    config = home_of(env) / "config"
    config.mkdir(parents=True, mode=0o700)
    (config / "config.yaml").write_text(
        f"embedding:\n  provider: openai\n  base_url: {base_url}\n  api_key_env: DOCTOR_TEST_KEY\n"
    )


def test_openai_embedder_endpoint_answers_or_refuses_the_key(env: dict[str, str | None]) -> None:
    with OpenAIServer() as server:
        _openai_config(env, server.base_url)
        _, _, answered = run_doctor({**env, "DOCTOR_TEST_KEY": "k-123"})
        server.script("/v1/models", error_reply(401))
        _, _, refused = run_doctor({**env, "DOCTOR_TEST_KEY": "k-123"})
        sent = server.requests_to("/v1/models")
    assert answered["embedder"]["status"] == "ok" and "HTTP 200" in answered["embedder"]["detail"]
    assert refused["embedder"]["status"] == "warn"
    assert refused["embedder"]["fix"] == "set DOCTOR_TEST_KEY"
    assert sent[0].header("Authorization") == "Bearer k-123"
    assert all("k-123" not in row["detail"] for row in answered.values())


def test_openai_embedder_endpoint_down_is_a_warning(env: dict[str, str | None]) -> None:
    _openai_config(env, f"http://127.0.0.1:{free_port()}/v1")
    code, _, checks = run_doctor(env)
    assert code == 0
    assert checks["embedder"]["status"] == "warn" and "unreachable" in checks["embedder"]["detail"]


# --- pure verdicts -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("free", "status"),
    [
        (0, "fail"),
        (DISK_FAIL_BYTES - 1, "fail"),
        (DISK_FAIL_BYTES, "warn"),
        (DISK_WARN_BYTES - 1, "warn"),
        (DISK_WARN_BYTES, "ok"),
        (500 * DISK_WARN_BYTES, "ok"),
    ],
)
def test_disk_thresholds(free: int, status: str) -> None:
    assert disk_status(free) == status


P = Path("/u/.config/systemd/user/mnemonic.service")


@pytest.mark.parametrize(
    ("state", "status", "fix"),
    [
        (ServiceStatus(None, None, False, False, detail="no manager"), "warn", "mnemonic serve"),
        (ServiceStatus("systemd", P, True, False, detail="offline"), "warn", "mnemonic serve"),
        (ServiceStatus("systemd", P, False, True), "warn", "mnemonic service install"),
        (
            ServiceStatus("launchd", P, True, True, enabled=False),
            "warn",
            "mnemonic service install",
        ),
        (
            ServiceStatus("systemd", P, True, True, enabled=True, active=False, detail="failed"),
            "warn",
            "mnemonic service restart",
        ),
        (ServiceStatus("systemd", P, True, True, enabled=True, active=True), "ok", ""),
    ],
)
def test_service_verdicts(state: ServiceStatus, status: str, fix: str) -> None:
    row = service_row(state)
    assert (row.status, row.fix) == (status, fix)


def test_folder_verdicts(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    assert check_folder("data folder", private).status == "ok"
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    row = check_folder("data folder", shared)
    assert (row.status, row.fix) == ("warn", f"chmod 700 {shared}")
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert check_folder("data folder", a_file).status == "fail"
    assert check_folder("data folder", tmp_path / "new" / "deeper").status == "ok"


def test_unwritable_folder_fails(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root: permission bits do not stop root from writing")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        assert check_folder("data folder", locked).status == "fail"
        assert check_folder("data folder", locked / "child").status == "fail"
    finally:
        locked.chmod(0o700)
