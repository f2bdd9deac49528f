"""Crash safety and process behaviour (issue 3, section 7).

The unit tests drive ``mnemonic.sdnotify``, ``mnemonic.store.recovery`` and the runner's lock
and listener directly. Everything else runs a real ``python -m mnemonic serve`` in a
subprocess with its own MNEMONIC_HOME and port, and checks the process from outside: exit
codes, signals, SIGKILL at random moments, the files it leaves behind.
"""

from __future__ import annotations

import errno
import os
import random
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from support.daemon_proc import TOKEN, DaemonProc, free_port, running

from mnemonic import sdnotify
from mnemonic.config import StorageConfig
from mnemonic.runner import AlreadyRunning, InstanceLock, bind_listeners
from mnemonic.store import recovery
from mnemonic.store.database import migrate

NOW = datetime(2026, 3, 14, 15, 9, 26, tzinfo=UTC)
WORDS = (
    "deploy",
    "backup",
    "kafka",
    "retry",
    "cache",
    "schema",
    "nginx",
    "cron",
    "quota",
    "replica",
)


def _note(rng: random.Random, tag: str) -> str:
    picked = " ".join(rng.choice(WORDS) for _ in range(8))
    return f"{tag}: the {picked} ({uuid.uuid4().hex[:8]})"


def _seed_database(path: Path, rows: int = 300) -> None:
    """A database built by the production migrations, with some raw memories in it."""
    migrate(path, StorageConfig())
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany(
            "INSERT INTO raw_memories (id, content, content_hash, source, timestamp, created_at)"
            " VALUES (?, ?, ?, 'api', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00')",
            [(f"raw-{i}", f"note {i} " + "x" * 200, f"h{i}") for i in range(rows)],
        )
    conn.close()


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def _raw_status(path: Path) -> dict[str, str]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT id, status FROM raw_memories").fetchall())
    finally:
        conn.close()


def _unix_dgram(folder: Path) -> tuple[socket.socket, str]:
    """A bound datagram socket; sun_path is limited to 107 bytes, so fall back to /tmp."""
    path = folder / "notify.sock"
    if len(str(path)) > 100:
        path = Path(f"/tmp/mnemonic-notify-{uuid.uuid4().hex[:12]}.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    return sock, str(path)


# ---------------------------------------------------------------- sd_notify (unit)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("", None),
        ("/run/user/1000/systemd/notify", "/run/user/1000/systemd/notify"),
        ("@/org/freedesktop/systemd1/notify/123", "\0/org/freedesktop/systemd1/notify/123"),
        ("vsock:2:1234", None),
        ("relative/notify", None),
    ],
)
def test_notify_socket_addresses(value: str | None, expected: str | None) -> None:
    assert sdnotify.socket_address(value) == expected


def test_notify_sends_one_datagram_to_a_socket_file(tmp_path: Path) -> None:
    listener, path = _unix_dgram(tmp_path)
    with listener:
        listener.settimeout(5)
        assert sdnotify.notify("READY=1", "STATUS=ok", environ={"NOTIFY_SOCKET": path})
        assert listener.recv(4096) == b"READY=1\nSTATUS=ok"
        assert sdnotify.status("two\nlines  here", "STOPPING=1", environ={"NOTIFY_SOCKET": path})
        assert listener.recv(4096) == b"STOPPING=1\nSTATUS=two lines here"
    Path(path).unlink()


def test_notify_reaches_an_abstract_socket() -> None:
    name = f"mnemonic-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind("\0" + name)
        listener.settimeout(5)
        assert sdnotify.notify("READY=1", environ={"NOTIFY_SOCKET": "@" + name})
        assert listener.recv(4096) == b"READY=1"


def test_notify_is_a_quiet_no_op_when_it_cannot_send(tmp_path: Path) -> None:
    assert not sdnotify.notify("READY=1", environ={})
    assert not sdnotify.notify("READY=1", environ={"NOTIFY_SOCKET": str(tmp_path / "gone")})
    assert not sdnotify.notify("READY=1", environ={"NOTIFY_SOCKET": "@no-such-" + uuid.uuid4().hex})


# ---------------------------------------------------------------- recovery (unit)

GOOD_HEADER = (
    recovery.HEADER
    + (4096).to_bytes(2, "big")
    + bytes(6)
    + (7).to_bytes(4, "big")  # change counter
    + (10).to_bytes(4, "big")  # pages in the header
    + bytes(60)
    + (7).to_bytes(4, "big")  # version-valid-for: matches the change counter
    + bytes(4)
)


@pytest.mark.parametrize(
    ("head", "size", "wal", "kind"),
    [
        (GOOD_HEADER, 40960, False, None),
        (GOOD_HEADER, 81920, False, None),  # longer than the header says is fine
        (GOOD_HEADER, 20480, False, "truncated"),
        (GOOD_HEADER, 20480, True, None),  # a WAL to replay may hold the missing pages
        (GOOD_HEADER, 40000, False, "truncated"),
        (GOOD_HEADER[:60], 60, False, "truncated"),
        (recovery.HEADER[:9], 9, False, "truncated"),
        (b"PK\x03\x04" + bytes(96), 4096, False, "not-sqlite"),
        (
            GOOD_HEADER[:16] + (1000).to_bytes(2, "big") + GOOD_HEADER[18:],
            40960,
            False,
            "not-sqlite",
        ),
        (GOOD_HEADER[:16] + (1).to_bytes(2, "big") + GOOD_HEADER[18:], 655360, False, None),
    ],
)
def test_check_header(head: bytes, size: int, wal: bool, kind: str | None) -> None:
    assert len(GOOD_HEADER) == 100
    problem = recovery.check_header(head, size, wal_has_frames=wal)
    assert (problem.kind if problem else None) == kind


def test_inspect_accepts_healthy_missing_and_empty_files(tmp_path: Path) -> None:
    db = tmp_path / "mnemonic.db"
    assert recovery.inspect(db) is None
    db.touch()
    assert recovery.inspect(db) is None
    db.unlink()
    _seed_database(db)
    assert recovery.inspect(db) is None
    assert len(_raw_status(db)) == 300


def test_inspect_finds_garbage_truncation_and_bad_pages(tmp_path: Path) -> None:
    db = tmp_path / "mnemonic.db"
    _seed_database(db)
    good = db.read_bytes()
    page = int.from_bytes(good[16:18], "big")

    db.write_bytes(random.Random(1).randbytes(100) + good[100:])
    assert (p := recovery.inspect(db)) is not None
    assert p.kind == "not-sqlite"

    db.write_bytes(good[: len(good) // page // 2 * page])
    assert (p := recovery.inspect(db)) is not None
    assert p.kind == "truncated"

    db.write_bytes(good[:50])
    assert (p := recovery.inspect(db)) is not None
    assert p.kind == "truncated"

    # same size and header, but the pages after the schema are overwritten: only reading
    # every page (quick_check) notices
    damaged = bytearray(good)
    damaged[page * 3 : len(good) - page] = random.Random(2).randbytes(len(good) - 4 * page)
    db.write_bytes(bytes(damaged))
    assert (p := recovery.inspect(db)) is not None
    assert p.kind == "corrupt"


def test_a_wal_left_by_a_killed_process_is_not_corruption(tmp_path: Path) -> None:
    db = tmp_path / "mnemonic.db"
    _seed_database(db, rows=10)
    script = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA journal_mode=WAL')\n"
        "c.execute(\"UPDATE raw_memories SET status='encoded' WHERE id='raw-3'\")\n"
        "os._exit(0)\n"  # no close: the WAL keeps the committed change
    )
    subprocess.run([sys.executable, "-c", script, str(db)], check=True, timeout=30)
    assert (tmp_path / "mnemonic.db-wal").stat().st_size > 0
    assert recovery.inspect(db) is None
    assert _raw_status(db)["raw-3"] == "encoded"


def test_inspect_leaves_unreadable_paths_alone(tmp_path: Path) -> None:
    folder = tmp_path / "mnemonic.db"
    folder.mkdir()  # cannot be opened as a file: not ours to move
    assert recovery.inspect(folder) is None


def test_an_orphaned_wal_is_a_problem(tmp_path: Path) -> None:
    db = tmp_path / "mnemonic.db"
    (tmp_path / "mnemonic.db-wal").write_bytes(b"\x37\x7f\x06\x82" + bytes(60))
    assert (p := recovery.inspect(db)) is not None
    assert p.kind == "orphan-wal"
    notice = recovery.recover(db, NOW)
    assert notice is not None
    assert (tmp_path / "mnemonic.db.corrupt-20260314T150926Z-wal").exists()
    assert not (tmp_path / "mnemonic.db-wal").exists()


def test_move_aside_keeps_bytes_and_sidecars_together(tmp_path: Path) -> None:
    db = tmp_path / "mnemonic.db"
    contents = {"": b"main", "-wal": b"wal", "-shm": b"shm"}
    for suffix, data in contents.items():
        (tmp_path / f"mnemonic.db{suffix}").write_bytes(data)
    target = recovery.move_aside(db, NOW)
    assert target == tmp_path / "mnemonic.db.corrupt-20260314T150926Z"
    for suffix, data in contents.items():
        assert (tmp_path / f"{target.name}{suffix}").read_bytes() == data
        assert not (tmp_path / f"mnemonic.db{suffix}").exists()
    db.write_bytes(b"again")
    second = recovery.move_aside(db, NOW)
    assert second.name == "mnemonic.db.corrupt-20260314T150926Z-2"
    assert second.read_bytes() == b"again"
    assert target.read_bytes() == b"main"


def test_recover_moves_a_corrupt_file_and_explains(tmp_path: Path) -> None:
    db = tmp_path / "mnemonic.db"
    _seed_database(db)
    db.write_bytes(b"\0" * 100 + db.read_bytes()[100:])
    notice = recovery.recover(db, NOW)
    assert notice is not None
    assert "not-sqlite" in notice
    assert "mnemonic.db.corrupt-20260314T150926Z" in notice
    assert not db.exists()
    assert recovery.recover(db, NOW) is None


# ---------------------------------------------------------------- lock and listener (unit)


def test_instance_lock_is_exclusive_and_names_the_holder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = InstanceLock.acquire(data)
    try:
        assert (data / "mnemonic.lock").read_text() == f"{os.getpid()}\n"
        with pytest.raises(AlreadyRunning) as caught:
            InstanceLock.acquire(data)
        assert caught.value.holder == os.getpid()
        assert str(data / "mnemonic.lock") in str(caught.value)
    finally:
        first.release()
    again = InstanceLock.acquire(data)  # released with its descriptor, no stale lock
    again.release()


def test_bind_listeners_claims_the_port(tmp_path: Path) -> None:
    sockets = bind_listeners("127.0.0.1", 0)
    try:
        port = sockets[0].getsockname()[1]
        with pytest.raises(OSError) as caught:
            bind_listeners("127.0.0.1", port)
        assert caught.value.errno == errno.EADDRINUSE
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # listening already, before any app exists
    finally:
        for sock in sockets:
            sock.close()


# ---------------------------------------------------------------- single instance


def test_a_second_daemon_on_the_same_home_is_refused(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with running(home) as first:
        second = DaemonProc(home)
        try:
            started = time.monotonic()
            code = second.wait(timeout=30)
            took = time.monotonic() - started
            message = second.output()
        finally:
            second.close()
        assert code == 75
        assert took < 10
        assert str(home / "data" / "mnemonic.lock") in message
        assert f"pid {first.pid}" in message
        assert "Traceback" not in message
        assert httpx.get(f"{first.base_url}/readyz", timeout=5).status_code == 200


def test_a_taken_port_fails_fast_with_a_message(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        daemon = DaemonProc(tmp_path / "home", port)
        try:
            code = daemon.wait(timeout=30)
            message = daemon.output()
        finally:
            daemon.close()
    assert code == 75
    assert f"127.0.0.1:{port}" in message
    assert "Traceback" not in message


# ---------------------------------------------------------------- signals


def _writers(
    base_url: str, stop: threading.Event, acked: list[str], count: int, seed: int
) -> list[threading.Thread]:
    """``count`` clients posting single and batch writes until stopped or disconnected."""

    def work(n: int) -> None:
        rng = random.Random(seed * 100 + n)
        with httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
        ) as http:
            i = 0
            while not stop.is_set():
                i += 1
                try:
                    if i % 3 == 0:
                        items = [{"content": _note(rng, f"c{n}"), "project": "crash"}]
                        items += [{"content": _note(rng, f"c{n}")} for _ in range(3)]
                        r = http.post("/api/v1/memories/batch", json={"memories": items})
                        if r.is_success:
                            acked.extend(x["raw_id"] for x in r.json()["results"])
                    else:
                        r = http.post("/api/v1/memories", json={"content": _note(rng, f"c{n}")})
                        if r.is_success:
                            acked.append(r.json()["raw_id"])
                except httpx.TransportError:
                    return

    threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(count)]
    for thread in threads:
        thread.start()
    return threads


def _stalled_request(port: int) -> socket.socket:
    """A client that sent headers and half a body, then went quiet: shutdown must not wait
    for it forever."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(
        (
            f"POST /api/v1/memories HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            'Content-Length: 5000\r\n\r\n{"content": "half a'
        ).encode()
    )
    return sock


def test_sigterm_with_writes_in_flight_exits_0_and_checkpoints(tmp_path: Path) -> None:
    home = tmp_path / "home"
    acked: list[str] = []
    stop = threading.Event()
    with running(home) as daemon:
        threads = _writers(daemon.base_url, stop, acked, 3, seed=7)
        deadline = time.monotonic() + 20
        while len(acked) < 30 and time.monotonic() < deadline:
            time.sleep(0.02)
        daemon.send(signal.SIGTERM)
        started = time.monotonic()
        code = daemon.wait(timeout=10)
        took = time.monotonic() - started
        stop.set()
        for thread in threads:
            thread.join(timeout=15)
        output = daemon.output()
    assert code == 0, output[-2000:]
    assert took < 5.0
    assert len(acked) >= 30
    db = home / "data" / "mnemonic.db"
    wal = db.with_name("mnemonic.db-wal")
    assert not wal.exists() or wal.stat().st_size == 0, "WAL not checkpointed on shutdown"
    assert _integrity(db) == "ok"
    assert set(acked) <= set(_raw_status(db))


def test_a_stalled_client_does_not_hold_up_a_ctrl_c_shutdown(tmp_path: Path) -> None:
    with running(tmp_path / "home") as daemon:
        stalled = _stalled_request(daemon.port)
        try:
            time.sleep(0.2)
            daemon.send(signal.SIGINT)  # Ctrl-C takes the same graceful path
            started = time.monotonic()
            time.sleep(0.8)
            waited = daemon.proc.poll() is None  # shutdown is really waiting for the client
            code = daemon.wait(timeout=10)
            took = time.monotonic() - started
        finally:
            stalled.close()
    assert waited
    assert code == 0
    assert took < 5.0


def test_a_second_sigterm_forces_exit(tmp_path: Path) -> None:
    with running(tmp_path / "home") as daemon:
        stalled = _stalled_request(daemon.port)
        try:
            time.sleep(0.2)
            daemon.send(signal.SIGTERM)
            time.sleep(0.5)
            assert daemon.proc.poll() is None, "the graceful shutdown was not slow"
            daemon.send(signal.SIGTERM)
            started = time.monotonic()
            code = daemon.wait(timeout=5)
            took = time.monotonic() - started
        finally:
            stalled.close()
        output = daemon.output()
    assert code == 128 + signal.SIGTERM
    assert took < 1.0
    assert "second SIGTERM" in output


# ---------------------------------------------------------------- sd_notify (daemon)


def _datagrams_until(listener: socket.socket, line: str, timeout: float) -> list[str]:
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listener.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            message = listener.recv(4096).decode()
        except TimeoutError:
            break
        got.append(message)
        if line in message.splitlines():
            return got
    raise AssertionError(f"no {line} within {timeout}s; got {got}")


def test_sd_notify_ready_after_readyz_and_stopping_on_sigterm(tmp_path: Path) -> None:
    listener, path = _unix_dgram(tmp_path)
    with listener, running(tmp_path / "home", env={"NOTIFY_SOCKET": path}, ready=False) as daemon:
        before = _datagrams_until(listener, "READY=1", 60)
        # the first request after READY=1 must find the daemon ready: no waiting, no retry
        assert httpx.get(f"{daemon.base_url}/readyz", timeout=1).status_code == 200
        assert all("READY=1" not in m.splitlines() for m in before[:-1])
        assert any(line.startswith("STATUS=") for m in before for line in m.splitlines())
        daemon.send(signal.SIGTERM)
        after = _datagrams_until(listener, "STOPPING=1", 5)
        assert daemon.wait(timeout=5) == 0
    assert "READY=1" not in "\n".join(after)
    Path(path).unlink(missing_ok=True)


# ---------------------------------------------------------------- crash safety


def _wait_encoded(http: httpx.Client, raw_ids: list[str], timeout: float) -> dict[str, str]:
    """Poll ``/api/v1/raw/{id}`` until each is encoded or reinforced; the last statuses."""
    pending = set(raw_ids)
    last: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        for raw_id in sorted(pending):
            answer = http.get(f"/api/v1/raw/{raw_id}")
            assert answer.status_code == 200, f"acknowledged {raw_id} is gone: {answer.text}"
            last[raw_id] = answer.json()["status"]
            if last[raw_id] in ("encoded", "reinforced"):
                pending.discard(raw_id)
        if pending:
            time.sleep(0.1)
    return {r: last[r] for r in pending}


def _snapshot(data: Path, into: Path) -> Path:
    """Copy the database as the killed process left it (with its WAL), so checking it
    cannot change what the next daemon finds."""
    into.mkdir()
    for suffix in ("", "-wal"):
        source = data / f"mnemonic.db{suffix}"
        if source.exists():
            shutil.copyfile(source, into / source.name)
    return into / "mnemonic.db"


@pytest.mark.slow
@pytest.mark.timeout(600)  # 25 restarts; about 100 s on an idle 2-core machine
def test_sigkill_during_writes_loses_nothing_acknowledged(tmp_path: Path) -> None:
    rounds = int(os.environ.get("MNEMONIC_CRASH_ROUNDS", "25"))
    seed = int(os.environ.get("MNEMONIC_CRASH_SEED", str(random.randrange(2**32))))
    print(f"crash test: {rounds} rounds, seed {seed} (MNEMONIC_CRASH_SEED to repeat)")
    rng = random.Random(seed)
    home, port = tmp_path / "home", free_port()
    every_ack: list[str] = []
    previous: list[str] = []
    pending_at_kill = 0
    for round_no in range(rounds + 1):
        with running(home, port) as daemon:
            with daemon.client() as http:
                stuck = _wait_encoded(http, previous, timeout=60)
            assert not stuck, f"seed {seed} round {round_no}: never encoded {stuck}"
            if round_no == rounds:
                daemon.send(signal.SIGTERM)
                assert daemon.wait(timeout=10) == 0
                break
            acked: list[str] = []
            stop = threading.Event()
            threads = _writers(daemon.base_url, stop, acked, 3, seed=rng.randrange(2**31))
            first_ack = time.monotonic() + 15
            while not acked and time.monotonic() < first_ack:
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.4))  # the random moment, once writes flow
            daemon.proc.kill()
            daemon.wait(timeout=10)
            stop.set()
            for thread in threads:
                thread.join(timeout=15)
        copy = _snapshot(home / "data", tmp_path / f"after-kill-{round_no}")
        assert _integrity(copy) == "ok", f"seed {seed} round {round_no}"
        statuses = _raw_status(copy)
        lost = [r for r in acked if r not in statuses]
        assert not lost, f"seed {seed} round {round_no}: acknowledged but lost {lost}"
        pending_at_kill += sum(statuses[r] == "accepted" for r in acked)
        every_ack += acked
        previous = acked
    final = _raw_status(home / "data" / "mnemonic.db")
    assert _integrity(home / "data" / "mnemonic.db") == "ok"
    assert all(final[r] in ("encoded", "reinforced") for r in every_ack)
    assert len(every_ack) >= rounds
    # the claim "accepted but not yet encoded gets encoded after restart" was exercised
    assert pending_at_kill > 0, f"seed {seed}: no write was ever caught unencoded"
    print(f"crash test: {len(every_ack)} acknowledged, {pending_at_kill} unencoded at a kill")


# ---------------------------------------------------------------- corrupt database at start


@pytest.mark.parametrize("damage", ["garbage-header", "truncated"])
def test_a_corrupt_database_is_moved_aside_and_reported(tmp_path: Path, damage: str) -> None:
    home = tmp_path / "home"
    db = home / "data" / "mnemonic.db"
    db.parent.mkdir(parents=True)
    _seed_database(db)
    good = db.read_bytes()
    if damage == "garbage-header":
        db.write_bytes(random.Random(3).randbytes(100) + good[100:])
    else:
        db.write_bytes(good[: len(good) // 2])
    damaged = db.read_bytes()
    with running(home) as daemon, daemon.client() as http:
        health = http.get("/api/v1/health").json()
        stored = http.post(
            "/api/v1/memories", params={"wait": "true"}, json={"content": "after the move"}
        )
    moved = [p for p in db.parent.glob("mnemonic.db.corrupt-*") if "-wal" not in p.name]
    assert len(moved) == 1
    assert moved[0].read_bytes() == damaged
    assert health["status"] == "degraded"
    assert any(moved[0].name in reason for reason in health["reasons"]), health["reasons"]
    assert stored.status_code == 201
    assert set(_raw_status(db)) == {stored.json()["raw_id"]}


# ---------------------------------------------------------------- full disk, read-only folder


def _fill_until_503(http: httpx.Client, limit: int) -> httpx.Response:
    rng = random.Random(5)
    for _ in range(limit):
        answer = http.post("/api/v1/memories", json={"content": _note(rng, "filler") * 8})
        if answer.status_code == 503:
            return answer
        assert answer.status_code in (201, 202), answer.text
    raise AssertionError(f"no 503 after {limit} writes")


@pytest.mark.skipif(not hasattr(resource, "prlimit"), reason="needs Linux prlimit")
def test_a_full_disk_fails_writes_with_503_and_recovers_without_restart(tmp_path: Path) -> None:
    limit = 1 << 20

    def small_files() -> None:
        # soft limit only, so the test can lift it from outside; works for root too
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))

    with running(tmp_path / "home", preexec_fn=small_files) as daemon, daemon.client() as http:
        kept = http.post(
            "/api/v1/memories",
            params={"wait": "true"},
            json={
                "content": "The staging database is restored every Sunday at 02:00.",
                "project": "ops",
            },
        )
        assert kept.status_code == 201, kept.text
        memory_id = kept.json()["memory_id"]

        full = _fill_until_503(http, 5000)
        body = full.json()
        assert body["status"] == 503
        assert isinstance(body["error"], str)
        assert body["error"]
        batch = http.post("/api/v1/memories/batch", json={"memories": [{"content": "more"}]})
        assert batch.status_code == 503
        assert http.get(f"/api/v1/memories/{memory_id}").json()["id"] == memory_id
        answer = http.post(
            "/api/v1/query", json={"query": "when is staging restored", "project": "ops"}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["results"][0]["memory"]["id"] == memory_id
        health = http.get("/api/v1/health").json()  # reads in between must not hide it
        assert health["status"] == "degraded", health
        assert health["reasons"]
        assert http.post("/api/v1/memories", json={"content": "still full"}).status_code == 503

        # recovery without a restart: lift the limit on the running process
        resource.prlimit(daemon.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
        again = http.post(
            "/api/v1/memories", params={"wait": "true"}, json={"content": "disk has room again"}
        )
        assert again.status_code == 201, again.text
        deadline = time.monotonic() + 30
        while http.get("/api/v1/health").json()["status"] != "ok":
            assert time.monotonic() < deadline, http.get("/api/v1/health").json()["reasons"]
            time.sleep(0.2)
        assert daemon.proc.poll() is None


def _mount(*args: str) -> bool:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    return done.returncode == 0


@pytest.fixture
def small_mount(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of its own, so it can be made read-only (root ignores file modes)."""
    if os.geteuid() != 0:
        pytest.skip("a read-only folder needs a read-only mount, which needs root")
    if shutil.which("mount") is None:
        pytest.skip("no mount binary")
    point = tmp_path / "home" / "data"  # only the data folder: logs must stay writable
    point.mkdir(parents=True)
    if not _mount("-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", str(point)):
        pytest.skip("running as root but without permission to mount a tmpfs")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def test_a_read_only_data_folder_serves_reads_and_recovers(small_mount: Path) -> None:
    home = small_mount.parent
    with running(home) as daemon, daemon.client() as http:
        kept = http.post(
            "/api/v1/memories",
            params={"wait": "true"},
            json={"content": "The VPN config lives in the infra repo.", "project": "it"},
        )
        assert kept.status_code == 201
        memory_id = kept.json()["memory_id"]
    assert _mount("-o", "remount,ro", str(small_mount))
    with running(home) as daemon, daemon.client() as http:
        refused = http.post("/api/v1/memories", json={"content": "cannot be stored"})
        assert refused.status_code == 503, refused.text
        assert refused.json()["status"] == 503
        assert http.get(f"/api/v1/memories/{memory_id}").status_code == 200
        answer = http.post("/api/v1/query", json={"query": "where is the VPN config"})
        assert answer.json()["results"][0]["memory"]["id"] == memory_id
        assert http.get("/api/v1/health").json()["status"] == "degraded"
        assert _mount("-o", "remount,rw", str(small_mount))
        deadline = time.monotonic() + 30
        while http.post("/api/v1/memories", json={"content": "stored again"}).status_code != 202:
            assert time.monotonic() < deadline, "writes did not recover without a restart"
            time.sleep(0.5)
