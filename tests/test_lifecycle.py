"""Restarts: unfinished encoding resumes, and a model change re-embeds in the background."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from functools import partial

import numpy as np
from support.openai_server import OpenAIServer

from mnemonic.app.service import RecallRequest, RememberInput
from mnemonic.config import load_config
from mnemonic.daemon import Daemon
from mnemonic.index.builder import read_everything
from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.llm.embedding.openai_compat import OpenAICompatibleEmbedder
from mnemonic.paths import Paths
from mnemonic.store.models import RawStatus

NOTES = [
    "The release train leaves every second Thursday.",
    "Grafana dashboards live in the observability repo.",
    "We decided to drop Python 3.10 support in March.",
    "The flaky test is test_upload_resume on macOS runners.",
]


def test_memories_stored_but_not_embedded_are_encoded_after_restart(
    paths: Paths, embedder: OnnxEmbedder
) -> None:
    async def first_run() -> list[str]:
        # a batch window far longer than the run: the worker never gets to embed
        cfg = load_config(None, encoding={"batch_wait_ms": 600_000, "batch_max": 1000})
        daemon = Daemon(cfg, paths, "t", embedder=embedder)
        await daemon.start()
        done = await daemon.service.remember_batch([RememberInput(n) for n in NOTES])
        assert {d.status for d in done} == {RawStatus.ACCEPTED}
        await daemon.stop()
        return [d.raw_id for d in done]

    raw_ids = asyncio.run(first_run())
    with sqlite3.connect(paths.database) as conn:
        assert conn.execute("SELECT count(*) FROM memories WHERE embedded = 0").fetchone()[0] == 4

    async def second_run() -> None:
        daemon = Daemon(load_config(None), paths, "t", embedder=embedder)
        await daemon.start()
        await asyncio.wait_for(daemon.encoder.wait_idle(), 30)
        for raw_id in raw_ids:
            raw = await daemon.service.get_raw(raw_id)
            assert raw.status is RawStatus.ENCODED
        answer = await daemon.service.recall(RecallRequest("when is the release train"))
        assert answer.results[0].memory.content == NOTES[0]
        assert answer.results[0].signals.vector_rank == 1
        await daemon.stop()

    asyncio.run(second_run())


def test_the_index_loads_every_vector_across_fetch_chunks(
    paths: Paths, embedder: OnnxEmbedder
) -> None:
    """Start-up streams vectors into one matrix a few rows at a time: nothing lost or
    shifted at chunk edges, and the loaded index answers like the one that was written."""
    notes = [*NOTES, *(f"{n} (second copy {i})" for i, n in enumerate(NOTES))]

    async def scenario() -> None:
        daemon = Daemon(load_config(None), paths, "t", embedder=embedder)
        await daemon.start()
        await daemon.service.remember_batch([RememberInput(n) for n in notes], wait=True)
        written = [
            await daemon.service.recall(RecallRequest(n, limit=3)) for n in ("release", "grafana")
        ]
        live = daemon.index.vectors_for(range(1, 100))
        assert len(live) == len(notes)
        for chunk in (1, 3, 8, 2048):
            built = await daemon.db.run_read(
                partial(
                    read_everything,
                    model=embedder.name,
                    dim=embedder.dim,
                    exact_max=10**6,
                    chunk=chunk,
                )
            )
            loaded = built.vectors.vectors_for(sorted(live))
            # each row is its own memory's vector (as the change feed put it in the live index)
            assert sorted(loaded) == sorted(live)
            for seq, vector in live.items():
                np.testing.assert_array_equal(loaded[seq], vector)
            assert len(built.columns) == len(notes)
        await daemon.stop()
        again = Daemon(load_config(None), paths, "t", embedder=embedder)
        await again.start()
        assert len(again.index.vectors) == len(notes)
        reread = [
            await again.service.recall(RecallRequest(n, limit=3)) for n in ("release", "grafana")
        ]
        await again.stop()
        for before, after in zip(written, reread, strict=True):
            assert [r.memory.id for r in after.results] == [r.memory.id for r in before.results]

    asyncio.run(scenario())


def test_model_change_reembeds_in_background_and_health_says_so(
    paths: Paths, embedder: OnnxEmbedder
) -> None:
    async def first_run() -> None:
        daemon = Daemon(load_config(None), paths, "t", embedder=embedder)
        await daemon.start()
        await daemon.service.remember_batch([RememberInput(n) for n in NOTES], wait=True)
        await daemon.stop()

    asyncio.run(first_run())

    with OpenAIServer(embedding_dim=24) as server:
        other = OpenAICompatibleEmbedder(server.base_url, "hash-embed", api_key="k", dim=24)

        async def second_run() -> None:
            daemon = Daemon(load_config(None), paths, "t", embedder=other)
            await daemon.start()
            health = await daemon.health()
            assert health["embedding"]["model"] == "openai:hash-embed"
            assert health["embedding"]["dim"] == 24
            deadline = time.monotonic() + 30
            while daemon.reembed_progress.running or daemon.reembed_progress.done < 4:
                assert time.monotonic() < deadline, daemon.reembed_progress
                await asyncio.sleep(0.05)
            health = await daemon.health()
            assert health["status"] == "ok"
            assert health["embedding"]["reembedding"] == {"running": False, "done": 4, "total": 4}
            assert health["vector_index"]["vectors"] == 4
            answer = await daemon.service.recall(RecallRequest("grafana dashboards repo"))
            assert answer.results[0].memory.content == NOTES[1]
            assert answer.results[0].signals.vector_rank is not None
            await daemon.stop()

        asyncio.run(second_run())
    with sqlite3.connect(paths.database) as conn:
        models = conn.execute("SELECT DISTINCT model, dim FROM memory_vectors").fetchall()
        passages = conn.execute("SELECT DISTINCT model, dim FROM memory_passages").fetchall()
        meta = dict(conn.execute("SELECT key, value FROM system_meta").fetchall())
    assert models == [("openai:hash-embed", 24)]
    assert passages == [("openai:hash-embed", 24)]  # re-embedded with the whole vectors
    assert meta["embedding_model"] == "openai:hash-embed"
    assert meta["embedding_dim"] == "24"


def test_the_stale_vector_scan_runs_once_not_at_every_start(
    paths: Paths, embedder: OnnxEmbedder
) -> None:
    """Counting stale vectors reads every vector row (9.7 s at a million memories, and
    start-up waited for it). After one finished check the model is recorded and later
    starts skip it; a model change still re-embeds (test above)."""

    def agents(health: dict[str, object]) -> list[str]:
        return [a["name"] for a in health["agents"]]  # type: ignore[index, union-attr]

    async def run(expect_check: bool) -> None:
        daemon = Daemon(load_config(None), paths, "t", embedder=embedder)
        await daemon.start()
        assert ("reembed" in agents(await daemon.health())) is expect_check
        deadline = time.monotonic() + 30
        # the recorded recipe: this model, and passages for every memory (migration 0009)
        while await daemon.store.get_meta("vectors_model") != embedder.name + "+passages":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        await daemon.service.remember_batch([RememberInput(n) for n in NOTES], wait=True)
        await daemon.stop()

    asyncio.run(run(expect_check=True))
    asyncio.run(run(expect_check=False))
