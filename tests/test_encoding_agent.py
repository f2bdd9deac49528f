"""The encoding agent behind the bus: failures are retried with backoff, end in a visible
failed state (raw status, stats, health, events), and never lose the raw memory."""

from __future__ import annotations

import ast
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from support.api import BASE_URL, TOKEN, query
from support.daemon_proc import running
from support.openai_server import (
    OpenAIServer,
    Reply,
    Request,
    embeddings_reply,
    error_reply,
    hashed_embedding,
)

from mnemonic.config import load_config
from mnemonic.daemon import Daemon
from mnemonic.llm.embedding.openai_compat import OpenAICompatibleEmbedder
from mnemonic.paths import Paths


def test_failing_embedder_ends_in_failed_state_visible_everywhere(paths: Paths) -> None:
    with OpenAIServer(embedding_dim=8) as server:
        server.script("/v1/embeddings", *[error_reply(500)] * 3)
        embedder = OpenAICompatibleEmbedder(
            server.base_url, "flaky", api_key="k", dim=8, max_retries=0
        )
        cfg = load_config(
            None, encoding={"max_attempts": 3, "retry_base_s": 0.01, "batch_wait_ms": 1}
        )
        daemon = Daemon(cfg, paths, TOKEN, embedder=embedder)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        with TestClient(daemon.app(), base_url=BASE_URL, headers=headers) as client:
            response = client.post(
                "/api/v1/memories", params={"wait": "true"}, json={"content": "doomed note"}
            )
            assert response.status_code == 202
            body = response.json()
            assert body["status"] == "failed"
            raw = client.get(f"/api/v1/raw/{body['raw_id']}").json()
            assert raw["status"] == "failed" and raw["attempts"] == 3
            assert raw["error"].startswith("gave up after 3 attempts: ")
            assert "500" in raw["error"] or "InternalServerError" in raw["error"]
            assert raw["content"] == "doomed note"  # the observation is kept
            stats = client.get("/api/v1/stats").json()
            assert [f["raw_id"] for f in stats["raw"]["failed"]] == [body["raw_id"]]
            assert stats["last_errors"][0]["component"] == "encoding"
            health = client.get("/api/v1/health").json()
            assert health["status"] == "degraded"
            assert any("failed encoding" in r for r in health["reasons"])
            events = client.get(
                "/api/v1/activity", params={"types": "memory_encoding_failed"}
            ).json()["items"]
            assert [e["payload"]["will_retry"] for e in reversed(events)] == [True, True, False]
            # the endpoint recovered (script exhausted): new work encodes normally
            ok = client.post(
                "/api/v1/memories", params={"wait": "true"}, json={"content": "fine note"}
            )
            assert ok.status_code == 201 and ok.json()["status"] == "encoded"


def test_agents_never_import_agents_or_faces() -> None:
    """STYLE 3: agents cooperate through events and store protocols only."""
    root = Path(__file__).resolve().parents[1] / "mnemonic"
    forbidden = ("mnemonic.api", "mnemonic.cli", "mnemonic.daemon", "mnemonic.app")
    offenders = []
    for path in (root / "agents").rglob("*.py"):
        own = "mnemonic.agents." + path.stem
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = node.module
            elif isinstance(node, ast.Import):
                module = node.names[0].name
            else:
                continue
            other_agent = module.startswith("mnemonic.agents.") and module != own
            if other_agent or module.startswith(forbidden):
                offenders.append(f"{path.name}: {module}")
    assert offenders == []


def _inputs(request: Request) -> list[str]:
    raw = (request.json() or {}).get("input", [])
    return [raw] if isinstance(raw, str) else [str(x) for x in raw]


def _embed_unless(marker: str, bad: Reply) -> Callable[[Request], Reply]:
    """Embeds normally, except that any request holding ``marker`` gets ``bad``."""

    def handler(request: Request) -> Reply:
        texts = _inputs(request)
        if any(marker in t for t in texts):
            return bad
        return embeddings_reply([hashed_embedding(t, 8) for t in texts])

    return handler


@contextmanager
def _daemon(paths: Paths, server: OpenAIServer, **encoding: object) -> Iterator[TestClient]:
    embedder = OpenAICompatibleEmbedder(server.base_url, "e", api_key="k", dim=8, max_retries=0)
    cfg = load_config(None, encoding={"retry_base_s": 0.01, "batch_wait_ms": 1, **encoding})
    daemon = Daemon(cfg, paths, TOKEN, embedder=embedder)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(daemon.app(), base_url=BASE_URL, headers=headers) as client:
        yield client


_BATCH = [
    {"content": "the deploy script now tags every release"},
    {"content": "POISON this note cannot be embedded"},
    {"content": "staging uses the eu-west database replica"},
    {"content": "the nightly job rotates the access logs"},
]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (error_reply(500, "cannot embed this"), "HTTP 500: cannot embed this"),
        (Reply(delay=2.0), "timed out after 0.5 s"),  # hangs past the attempt's deadline
    ],
    ids=["fails", "hangs"],
)
def test_a_poisonous_memory_is_parked_and_its_batch_neighbours_are_encoded(
    paths: Paths, bad: Reply, reason: str
) -> None:
    with OpenAIServer(embedding_dim=8) as server:
        server.set_handler("/v1/embeddings", _embed_unless("POISON", bad))
        with _daemon(paths, server, max_attempts=3, batch_timeout_s=0.5) as client:
            response = client.post(
                "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": _BATCH}
            )
            results = response.json()["results"]
            assert [r["status"] for r in results] == ["encoded", "failed", "encoded", "encoded"]
            poison = client.get(f"/api/v1/raw/{results[1]['raw_id']}").json()
            assert poison["status"] == "failed" and poison["attempts"] == 3
            assert poison["error"].startswith("gave up after 3 attempts: ")
            assert reason in poison["error"]
            for ok in (results[0], results[2], results[3]):
                raw = client.get(f"/api/v1/raw/{ok['raw_id']}").json()
                # one attempt in the shared batch, the next alone
                assert raw["status"] == "encoded" and raw["attempts"] == 2
                assert raw["error"] is None
            hits = query(client, "nightly access logs")
            assert hits["results"][0]["memory"]["id"] == results[3]["memory_id"]


def test_an_attempt_that_kills_the_daemon_counts_after_a_restart(tmp_path: Path) -> None:
    """An attempt is recorded before it starts, so a memory whose encoding takes the
    process down (here: hangs until kill -9) is parked after ``max_attempts`` restarts
    instead of stalling every restart, and its batch neighbour is encoded alone."""
    home = tmp_path / "home"
    with OpenAIServer(embedding_dim=8) as server:
        server.set_handler("/v1/embeddings", _embed_unless("HANG", Reply(delay=60.0)))
        env = {
            "MNEMONIC_EMBEDDING__PROVIDER": "openai",
            "MNEMONIC_EMBEDDING__BASE_URL": server.base_url,
            "MNEMONIC_ENCODING__MAX_ATTEMPTS": "2",
            "MNEMONIC_ENCODING__RETRY_BASE_S": "0.01",
        }
        batch = [{"content": "an innocent neighbour"}, {"content": "HANG on this one"}]
        with running(home, env=env) as daemon, daemon.client() as http:
            posted = http.post("/api/v1/memories/batch", json={"memories": batch})
            innocent, hang = (r["raw_id"] for r in posted.json()["results"])
            _wait_for_request(server, "HANG", count=1)
            daemon.send(signal.SIGKILL)
            daemon.wait(10)
        with running(home, env=env) as daemon, daemon.client() as http:
            _wait_until(lambda: http.get(f"/api/v1/raw/{innocent}").json()["status"] == "encoded")
            _wait_for_request(server, "HANG", count=2)  # attempt 2, alone
            raw = http.get(f"/api/v1/raw/{hang}").json()
            assert raw["status"] == "accepted" and raw["attempts"] == 2
            assert "did not finish" in raw["error"]
            daemon.send(signal.SIGKILL)
            daemon.wait(10)
        with running(home, env=env) as daemon, daemon.client() as http:
            _wait_until(lambda: http.get(f"/api/v1/raw/{hang}").json()["status"] == "failed")
            raw = http.get(f"/api/v1/raw/{hang}").json()
            assert raw["attempts"] == 2 and raw["content"] == "HANG on this one"
            assert raw["error"].startswith("gave up after 2 attempts: attempt 2 did not finish")
            assert http.get("/livez").status_code == 200
        assert len(_requests_with(server, "HANG")) == 2  # never tried a third time


def _requests_with(server: OpenAIServer, marker: str) -> list[Request]:
    return [r for r in server.requests_to("/v1/embeddings") if marker in r.body.decode()]


def _wait_for_request(server: OpenAIServer, marker: str, count: int) -> None:
    _wait_until(lambda: len(_requests_with(server, marker)) >= count)


def _wait_until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)
