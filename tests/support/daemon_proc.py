"""A real ``mnemonic serve`` in a subprocess, for tests of process-level behaviour
(locks, signals, crashes, corrupt files, full disks).

Output goes to files, never pipes: a pipe nobody reads fills at 64 KB and blocks the daemon,
and an unclosed pipe fails the test under ``filterwarnings = error``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx

TOKEN = "reliability-token-0123456789"
SERVE = [sys.executable, "-m", "mnemonic", "serve"]
READY_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DaemonProc:
    """One daemon process; ``home`` is its MNEMONIC_HOME, its output lands beside it."""

    _counter = 0

    def __init__(
        self,
        home: Path,
        port: int | None = None,
        env: dict[str, str] | None = None,
        preexec_fn: Callable[[], Any] | None = None,
    ) -> None:
        DaemonProc._counter += 1
        self.home = home
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.stderr_path = home.parent / f"{home.name}-daemon-{DaemonProc._counter}.err"
        full_env = dict(os.environ)
        full_env.update(
            {
                "MNEMONIC_HOME": str(home),
                "MNEMONIC_PORT": str(self.port),
                "MNEMONIC_TOKEN": TOKEN,
            }
        )
        full_env.update(env or {})
        self._stderr: IO[bytes] = self.stderr_path.open("wb")
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            SERVE,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=self._stderr,
            stderr=subprocess.STDOUT,
            preexec_fn=preexec_fn,  # noqa: PLW1509 - the tests run no threads while spawning
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def data_dir(self) -> Path:
        return self.home / "data"

    def output(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def client(self, timeout: float = 30.0) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {TOKEN}"},
            timeout=timeout,
        )

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> float:
        """Seconds from spawn until ``/readyz`` answers 200; fails if the process dies."""
        deadline = time.monotonic() + timeout
        with httpx.Client(base_url=self.base_url, timeout=2.0) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise AssertionError(
                        f"daemon exited with {self.proc.returncode}:\n{self.output()[-3000:]}"
                    )
                try:
                    if http.get("/readyz").status_code == 200:
                        return time.monotonic() - self.started_at
                except httpx.TransportError:
                    pass
                time.sleep(0.03)
        raise AssertionError(f"daemon not ready in {timeout}s:\n{self.output()[-3000:]}")

    def send(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def close(self) -> None:
        """Make sure the process is gone and the output file closed (idempotent)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._stderr.close()


@contextmanager
def running(
    home: Path,
    port: int | None = None,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], Any] | None = None,
    *,
    ready: bool = True,
) -> Iterator[DaemonProc]:
    daemon = DaemonProc(home, port, env, preexec_fn)
    try:
        if ready:
            daemon.wait_ready()
        yield daemon
    finally:
        daemon.close()
