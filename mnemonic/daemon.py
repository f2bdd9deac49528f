"""The composition root: the only module that reads configuration and wires the store,
the embedder, the encoder, recall, the application layer and the HTTP face together, and
the owner of every background task."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette

from mnemonic import __version__
from mnemonic.api.app import build_app
from mnemonic.app.reembed import ReembedProgress, reembed
from mnemonic.app.service import MemoryService
from mnemonic.config import Config, EmbeddingConfig, render_default_yaml
from mnemonic.encoding.worker import EncodeResult, EncodingWorker
from mnemonic.llm.embedding import EmbeddingProvider
from mnemonic.paths import Paths
from mnemonic.recall.pipeline import Recaller
from mnemonic.redact import redact
from mnemonic.store.database import Database
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.store.vector_index import PATH_NAME, VectorIndex
from mnemonic.timeutil import utcnow

log = logging.getLogger(__name__)

TOKEN_ENV = "MNEMONIC_TOKEN"  # noqa: S105 - the variable name, not a secret


def build_embedder(cfg: EmbeddingConfig) -> EmbeddingProvider:
    """The configured provider; the embedded ONNX model unless told otherwise."""
    if cfg.provider == "openai":
        from mnemonic.llm.embedding.openai_compat import OpenAICompatibleEmbedder

        embedder = OpenAICompatibleEmbedder(
            base_url=cfg.base_url,
            model=cfg.model,
            api_key=os.environ.get(cfg.api_key_env),
            timeout=cfg.timeout_s,
            batch_size=cfg.batch_size,
        )
        embedder.probe()
        return embedder
    from mnemonic.llm.embedding.onnx import OnnxEmbedder

    return OnnxEmbedder(threads=cfg.threads, max_tokens=cfg.max_tokens, batch_size=cfg.batch_size)


def limit_blas_threads() -> None:
    """One BLAS thread: the index does matrix-vector products, which gain nothing from
    threads, and a multi-threaded OpenBLAS GEMV waits on a descheduled thread whenever the
    embedder or anything else holds the other core (measured: 0.3 ms -> 12 ms at 3k rows)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def load_or_create_token(paths: Paths) -> str:
    """``MNEMONIC_TOKEN`` if set, else the token file (created 0600 on first start)."""
    override = os.environ.get(TOKEN_ENV)
    if override:
        return override.strip()
    path = paths.token_file
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token


def write_default_config(paths: Paths) -> None:
    """Write the commented defaults on first start so users can see every knob."""
    if not paths.config_file.exists():
        paths.config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        paths.config_file.write_text(render_default_yaml(), encoding="utf-8")


class Daemon:
    """Builds everything in ``start`` and tears it down in reverse in ``stop``."""

    def __init__(
        self, cfg: Config, paths: Paths, token: str, embedder: EmbeddingProvider | None = None
    ) -> None:
        self.cfg = cfg
        self.paths = paths
        self.token = token
        self.started_at = time.time()
        self.ready = False
        self.reembed_progress = ReembedProgress()
        self._tasks: list[asyncio.Task[None]] = []
        self.embedder = embedder or build_embedder(cfg.embedding)
        self.db = Database(paths.database, cfg.storage)
        self.store = SQLiteStore(self.db)
        self.index = VectorIndex(self.embedder.dim)
        self.worker = EncodingWorker(
            self.store, self.store, self.index, self.embedder, cfg.encoding, self._on_encoded
        )
        recaller = Recaller(
            self.store, self.store, self.store, self.index, self.embedder, cfg.recall
        )
        self.service = MemoryService(
            cfg=cfg,
            ingest=self.store,
            raws=self.store,
            memories=self.store,
            associations=self.store,
            feedback=self.store,
            index=self.index,
            recaller=recaller,
            worker=self.worker,
            redact=lambda text: redact(text).text,
            clock=utcnow,
        )

    async def start(self) -> None:
        """Open the store, load the vector index, resume unfinished work, start tasks."""
        limit_blas_threads()
        await self.db.open()
        model_changed = await self._record_model(self.embedder)
        entries, vectors = await self.store.index_entries(self.embedder.name)
        if entries:
            self.index.add_many(entries, vectors)
        recovered = await self.worker.recover()
        if recovered:
            log.info("re-queued %d memories stored without vectors before the last stop", recovered)
        self._spawn("encoder", self.worker.run())
        if model_changed or await self.store.count_stale_vectors(self.embedder.name):
            self._spawn(
                "reembed", reembed(self.store, self.index, self.embedder, self.reembed_progress)
            )
        self.ready = True
        log.info("mnemonic %s ready: %d vectors (%s)", __version__, len(self.index), PATH_NAME)

    def _on_encoded(self, result: EncodeResult) -> None:
        # The worker is built before the service, so it reaches the service late.
        self.service.on_encoded(result)

    async def _record_model(self, embedder: EmbeddingProvider) -> bool:
        old_model = await self.store.get_meta("embedding_model")
        old_dim = await self.store.get_meta("embedding_dim")
        await self.store.set_meta("embedding_model", embedder.name)
        await self.store.set_meta("embedding_dim", str(embedder.dim))
        changed = old_model is not None and (
            old_model != embedder.name or old_dim != str(embedder.dim)
        )
        if changed:
            log.warning(
                "embedding model changed (%s/%s -> %s/%d): re-embedding in the background",
                old_model,
                old_dim,
                embedder.name,
                embedder.dim,
            )
        return changed

    def _spawn(self, name: str, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.create_task(coro, name=f"mnemonic:{name}")
        self._tasks.append(task)
        task.add_done_callback(self._task_done)

    @staticmethod
    def _task_done(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("task %s crashed", task.get_name(), exc_info=task.exception())

    async def stop(self, grace_s: float = 5.0) -> None:
        self.ready = False
        await self.service.drain()
        for task in reversed(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=grace_s)
        self._tasks.clear()
        await self.db.close()

    async def health(self) -> dict[str, Any]:
        counts = await self.store.counts()
        degraded = counts["raw_failed"] > 0 or self.reembed_progress.running
        return {
            "status": "degraded" if degraded else "ok",
            "version": __version__,
            "uptime_s": round(time.time() - self.started_at, 1),
            "memories": counts,
            "embedding": {
                "model": self.embedder.name,
                "dim": self.embedder.dim,
                "backlog": self.worker.backlog,
                "reembedding": {
                    "running": self.reembed_progress.running,
                    "done": self.reembed_progress.done,
                    "total": self.reembed_progress.total,
                },
            },
            "vector_index": {
                "path": PATH_NAME,
                "vectors": len(self.index),
                "storage": "sqlite float32 blobs",
                "bytes": self.index.nbytes,
            },
            "schema_version": self.db.schema_version,
        }

    def app(self) -> Starlette:
        """The ASGI app; its lifespan starts and stops the daemon."""

        @asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            await self.start()
            try:
                yield
            finally:
                await self.stop()

        return build_app(
            self.service,
            self.health,
            port=self.cfg.server.port,
            token=self.token,
            max_body_bytes=self.cfg.server.max_body_bytes,
            ready=lambda: self.ready,
            lifespan=lifespan,
        )


def serve(cfg: Config, paths: Paths) -> None:
    """Run the daemon in the foreground until SIGINT/SIGTERM."""
    import uvicorn

    from mnemonic.logs import setup_logging

    paths.ensure()
    setup_logging(cfg.logging.level, paths.log_dir)
    write_default_config(paths)
    token = load_or_create_token(paths)
    daemon = Daemon(cfg, paths, token)
    log.info(
        "serving on http://%s:%d (data in %s)", cfg.server.host, cfg.server.port, paths.data_dir
    )
    uvicorn.run(
        daemon.app(),
        host=cfg.server.host,
        port=cfg.server.port,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
