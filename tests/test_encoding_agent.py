"""The encoding agent behind the bus: failures are retried with backoff, end in a visible
failed state (raw status, stats, health, events), and never lose the raw memory."""

from __future__ import annotations

import ast
from pathlib import Path

from starlette.testclient import TestClient
from support.api import BASE_URL, TOKEN
from support.openai_server import OpenAIServer, error_reply

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
