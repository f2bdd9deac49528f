"""Who holds a TCP port on 127.0.0.1: ``install`` refuses to start a service whose port is
taken, and ``doctor`` names the process that has it."""

from __future__ import annotations

import importlib
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Listener:
    pid: int
    name: str
    cmdline: tuple[str, ...]

    @property
    def is_mnemonic(self) -> bool:
        """``.../bin/mnemonic serve`` or ``python -m mnemonic serve`` (the only command
        that listens)."""
        return "serve" in self.cmdline and any(Path(a).name == "mnemonic" for a in self.cmdline)

    def describe(self) -> str:
        return f"pid {self.pid} ({self.name})"


def port_in_use(port: int) -> bool:
    """Something accepts connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def listening_process(port: int) -> Listener | None:
    """The process listening on ``port``, when this user may see it.

    ``net_connections`` needs root on macOS; there the user's own processes are asked one
    by one instead (a daemon of this user is among them).
    """
    psutil: Any = importlib.import_module("psutil")  # psutil ships no type information
    gone = (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess)
    try:
        conns = [(c.pid, c) for c in psutil.net_connections(kind="inet")]
    except psutil.AccessDenied:
        conns = []
        for proc in psutil.process_iter():
            try:
                conns.extend((proc.pid, c) for c in proc.net_connections(kind="inet"))
            except gone:
                continue
    pids = {pid for pid, c in conns if pid and _listens(c, port, psutil.CONN_LISTEN)}
    for pid in sorted(pids):
        try:
            proc = psutil.Process(pid)
            return Listener(pid, str(proc.name()), tuple(str(a) for a in proc.cmdline()))
        except gone:
            continue
    return None


def _listens(conn: Any, port: int, listen: str) -> bool:
    return bool(conn.status == listen and conn.laddr and conn.laddr.port == port)
