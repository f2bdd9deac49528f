"""Start a real mnemonic daemon in a subprocess for benchmarks (fresh MNEMONIC_HOME)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

TOKEN = "bench-token-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_daemon(
    settings: dict[str, str] | None = None, home: Path | None = None
) -> Iterator[tuple[httpx.Client, float]]:
    """Yield an authorised client and the seconds from spawn to a healthy /api/v1/health."""
    with tempfile.TemporaryDirectory(prefix="mnemonic-bench-") as tmp:
        port = free_port()
        env = dict(os.environ)
        env.update(
            {
                "MNEMONIC_HOME": str(home or tmp),
                "MNEMONIC_PORT": str(port),
                "MNEMONIC_TOKEN": TOKEN,
                "MNEMONIC_LOGGING__LEVEL": "WARNING",
            }
        )
        env.update(settings or {})
        started = time.perf_counter()
        # stderr to a file, not a pipe nobody reads: 64 KB of logs would block the daemon
        log_path = Path(tmp) / "daemon-stderr.log"
        log_file = log_path.open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "mnemonic", "serve"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=600,
        )
        try:
            cold = _wait_healthy(client, proc, started, log_path)
            yield client, cold
        finally:
            client.close()
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
            log_file.close()


def _wait_healthy(
    client: httpx.Client, proc: subprocess.Popen[bytes], started: float, log_path: Path
) -> float:
    deadline = started + 120
    while time.perf_counter() < deadline:
        if proc.poll() is not None:
            stderr = log_path.read_text(errors="replace")
            raise RuntimeError(f"daemon exited with {proc.returncode}: {stderr[-2000:]}")
        try:
            if client.get("/api/v1/health").status_code == 200:
                return time.perf_counter() - started
        except httpx.TransportError:
            pass
        time.sleep(0.02)
    raise RuntimeError("daemon did not become healthy in 120 s")
