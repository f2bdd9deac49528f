"""Issue 9 §3-§5 at the process level: hostile files at start, file modes, and a client
that hangs up. Real ``mnemonic serve`` processes (tests/support/daemon_proc.py)."""

from __future__ import annotations

import hashlib
import socket
import sqlite3
import stat
import time
from pathlib import Path

import pytest
from support.daemon_proc import DaemonProc, running

from mnemonic.config import load_config
from mnemonic.exits import EX_CONFIG
from mnemonic.store.database import list_migrations, migrate

BOMB = "\n".join(
    [
        'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
        *(
            f"{c}: &{c} [" + ", ".join([f"*{p}"] * 9) + "]"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        ),
    ]
)


def _exit_of(home: Path, timeout_s: float = 30.0) -> tuple[int, str, float]:
    daemon = DaemonProc(home)
    try:
        started = time.monotonic()
        code = daemon.wait(timeout_s)
        return code, daemon.output(), time.monotonic() - started
    finally:
        daemon.close()


def test_a_database_from_a_newer_build_is_refused_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    database = home / "data" / "mnemonic.db"
    database.parent.mkdir(parents=True)
    migrate(database, load_config(None).storage)
    with sqlite3.connect(database) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = hashlib.sha256(database.read_bytes()).hexdigest()
    known = list_migrations()[-1][0]

    code, output, _ = _exit_of(home)

    assert code == EX_CONFIG, output
    assert f"schema version 99, but this build of mnemonic knows versions up to {known}" in output
    assert "Upgrade mnemonic" in output
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before
    assert not database.with_name("mnemonic.db-wal").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [(BOMB, "expands to more than"), ("a: &a [1, *a]\n", "refers to a node that contains it")],
)
def test_a_yaml_alias_bomb_in_config_exits_78_at_once(
    tmp_path: Path, text: str, message: str
) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.yaml").write_text(text, encoding="utf-8")

    code, output, took = _exit_of(home)

    assert code == EX_CONFIG, output
    assert "invalid configuration" in output and message in output
    assert took < 15, took


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_database_wal_logs_and_config_are_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with running(home) as daemon, daemon.client() as http:
        assert http.post("/api/v1/memories", json={"content": "a private note"}).status_code == 202
        data, logs, config = home / "data", home / "logs", home / "config" / "config.yaml"
        files = [data / "mnemonic.db", data / "mnemonic.db-wal", config, *logs.glob("*.log")]
        assert len(files) >= 4, files
        assert {str(f): oct(_mode(f)) for f in files} == {str(f): "0o600" for f in files}


def test_files_of_an_older_build_are_made_private_at_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with running(home):
        pass
    database, config = home / "data" / "mnemonic.db", home / "config" / "config.yaml"
    database.chmod(0o644)
    config.chmod(0o644)
    with running(home):
        assert _mode(database) == 0o600
        assert _mode(config) == 0o600


def test_a_client_that_hangs_up_mid_body_is_not_an_error(tmp_path: Path) -> None:
    with running(tmp_path / "home") as daemon:
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", daemon.port)) as sock:
                sock.sendall(
                    b"POST /api/v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    b"Authorization: Bearer " + daemon_token().encode() + b"\r\n"
                    b"Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
                    b'{"content": "half'
                )
        with daemon.client() as http:  # still answering, and the hang-ups were quiet
            assert http.get("/livez").status_code == 200
        time.sleep(0.5)
        output = daemon.output()
    assert "unhandled error" not in output
    assert "Traceback" not in output


def daemon_token() -> str:
    from support.daemon_proc import TOKEN

    return TOKEN
