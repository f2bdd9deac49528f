"""Shared fixtures: real SQLite files from the production migrations, the real embedding
model (loaded once per session), and the real app behind Starlette's TestClient."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.api import BASE_URL, TOKEN
from support.cli import Run, in_process

from mnemonic.config import Config, load_config
from mnemonic.daemon import Daemon
from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.paths import Paths, resolve_paths


@pytest.fixture(scope="session", autouse=True)
def _hermetic_watchers() -> Iterator[None]:
    """Daemons in tests (in-process and subprocesses) must not read this machine's shell
    history or scan its home folder for git repositories: the watchers that are on by
    default are switched off here, and the perception tests switch them on explicitly
    with their own roots."""
    mp = pytest.MonkeyPatch()
    mp.setenv("MNEMONIC_SHELL_HISTORY__ENABLED", "false")
    mp.setenv("MNEMONIC_GIT__ENABLED", "false")
    yield
    mp.undo()


@pytest.fixture(scope="session")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder()


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    p = resolve_paths(tmp_path / "home")
    p.ensure()
    return p


@pytest.fixture
def make_client(paths: Paths, embedder: OnnxEmbedder) -> Iterator[Callable[..., TestClient]]:
    """Start a daemon (optionally with config overrides) and return an authorised client."""
    clients: list[TestClient] = []

    def factory(**overrides: Any) -> TestClient:
        cfg: Config = load_config(None, **overrides)
        daemon = Daemon(cfg, paths, TOKEN, embedder=embedder)
        client = TestClient(
            daemon.app(), base_url=BASE_URL, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        client.__enter__()
        client.daemon = daemon  # type: ignore[attr-defined]
        clients.append(client)
        return client

    yield factory
    for client in reversed(clients):
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client()


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """The ``mnemonic`` command in this process: ``run(env, *args, stdin=...)``."""
    return in_process(monkeypatch, capsys)
