"""A daemon of its own for browser tests that cannot use the shared ``web_daemon``
(tests/web/conftest.py): token rotation (the shared daemon's token comes from
``MNEMONIC_TOKEN``, which rotation refuses, and other tests hold it) and insights (the
dreamer needs ``dreaming.max_df_share`` raised to find anything in a dozen memories).

The token lives in the token file here (``MNEMONIC_TOKEN`` set blank), as for a person
who ran ``mnemonic serve`` without the variable.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from mnemonic.api_token import configured_token
from mnemonic.paths import resolve_paths
from support.daemon_proc import DaemonProc


@dataclass
class LabDaemon:
    proc: DaemonProc
    token_file: Path

    @property
    def base_url(self) -> str:
        return self.proc.base_url

    def token(self) -> str:
        token = configured_token(resolve_paths(self.proc.home), None)
        assert token, "the daemon wrote no token file"
        return token

    def http(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {token or self.token()}"},
            timeout=60.0,
        )

    def login_url(self) -> str:
        with self.http() as http:
            answer = http.post("/api/v1/dashboard/login-links")
        assert answer.status_code == 201, answer.text
        url: str = answer.json()["url"]
        return url

    def run_agent(self, name: str, timeout_s: float = 30.0) -> dict[str, Any]:
        """One cycle of ``name``, waited for. A cycle the reactor started (an episode
        closing starts the dreamer) answers 409 until it ends: then ask again."""
        deadline = time.monotonic() + timeout_s
        with self.http() as http:
            while True:
                answer = http.post(f"/api/v1/agents/{name}/run", params={"wait": "true"})
                if answer.status_code != 409 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        assert answer.status_code == 200, answer.text
        run: dict[str, Any] = answer.json()["run"]
        assert run["ok"] is True, run
        return run


@contextmanager
def lab_daemon(home: Path, env: dict[str, str] | None = None) -> Iterator[LabDaemon]:
    proc = DaemonProc(home, env={"MNEMONIC_TOKEN": "", **(env or {})})
    try:
        proc.wait_ready()
        yield LabDaemon(proc, resolve_paths(home).token_file)
    finally:
        proc.close()
        shutil.rmtree(home, ignore_errors=True)
