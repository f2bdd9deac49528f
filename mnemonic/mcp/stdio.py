"""``mnemonic mcp``: the MCP server over stdio, forwarding every call to the running daemon.

The client starts this process in its workspace, so the working folder names the session's
project. Nothing here opens the database: tools call the daemon's REST API, so the daemon
stays the only writer and its indexes the only ones. When the daemon is down a tool answers
with an error saying so and the exact command that starts it; with ``mcp.autostart`` this
process starts the daemon itself (once at a time) and retries the call.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import subprocess
import sys
import time

import httpx

from mnemonic.config import Config
from mnemonic.mcp.backend import RestBackend
from mnemonic.mcp.server import build_server
from mnemonic.paths import Paths
from mnemonic.perception import ProjectResolver

log = logging.getLogger(__name__)


def start_command() -> str:
    """The command that starts the daemon for this install (``MNEMONIC_HOME`` kept)."""
    home = os.environ.get("MNEMONIC_HOME")
    prefix = f"MNEMONIC_HOME={shlex.quote(home)} " if home else ""
    return f"{prefix}mnemonic serve"


def down_message(url: str) -> str:
    return (
        f"mnemonic is not running at {url}. Start it with: {start_command()} (in a terminal),"
        " or install it as a service with: mnemonic service install. Then call the tool again."
    )


class Autostart:
    """Starts ``mnemonic serve`` in the background and waits until it is ready."""

    def __init__(self, url: str, timeout_s: float, log_file: str) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.log_file = log_file
        self._lock = asyncio.Lock()

    async def __call__(self) -> bool:
        async with self._lock:
            if await self._ready():
                return True
            log.warning("daemon not running at %s; starting it", self.url)
            await asyncio.to_thread(self._spawn)
            deadline = time.monotonic() + self.timeout_s
            while time.monotonic() < deadline:
                if await self._ready():
                    return True
                await asyncio.sleep(0.2)
            return False

    def _spawn(self) -> None:
        with open(self.log_file, "ab") as out:
            subprocess.Popen(
                [sys.executable, "-m", "mnemonic", "serve"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # outlives this stdio process
            )

    async def _ready(self) -> bool:
        try:
            async with httpx.AsyncClient(timeout=2.0, trust_env=False) as http:
                return (await http.get(f"{self.url}/readyz")).status_code == 200
        except httpx.TransportError:
            return False


async def serve_stdio(cfg: Config, paths: Paths, base_url: str, token: str) -> None:
    on_down = None
    if cfg.mcp.autostart:
        paths.log_dir.mkdir(parents=True, exist_ok=True)
        on_down = Autostart(
            base_url, cfg.mcp.autostart_timeout_s, str(paths.log_dir / "autostart.log")
        )
    backend = RestBackend(
        base_url,
        token,
        timeout_s=cfg.mcp.request_timeout_s,
        down_message=down_message(base_url),
        on_down=on_down,
    )
    server = build_server(
        backend,
        ProjectResolver(cfg.perception.projects),
        cwd=os.getcwd(),
        context_limit=cfg.mcp.context_limit,
    )
    try:
        await server.run_stdio_async()
    finally:
        await backend.aclose()
