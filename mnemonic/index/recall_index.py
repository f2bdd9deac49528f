"""The in-memory recall index: columns, full text, vectors and graph, kept equal to SQLite.

SQLite stays the one source of truth. This index is a copy that answers the per-query
work (filters, BM25, nearest neighbours, spreading) with array operations:

- **built** at start from one read snapshot, streamed in chunks (``builder.py``), in a
  worker thread; writes that commit meanwhile are queued and replayed after it, in order;
- **kept current** by the change feed (``changes.py``): every write transaction reports
  what it changed, read inside the transaction, applied right after its commit;
- **rebuilt** if applying a change ever fails (the index marks itself stale and recall
  falls back to the SQL path until the rebuild is done), so a bug here costs speed,
  never a wrong answer for long.

Thread model: changes are applied on the event loop; searches run on the recaller's
worker threads. Each part is written so a search never iterates a structure a change is
resizing (see each module); the graph and full text take a short lock of their own.
"""

from __future__ import annotations

import asyncio
import logging
import math
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from mnemonic.index.builder import Built, read_everything
from mnemonic.index.changes import DeltaReader, IndexDelta, install_triggers
from mnemonic.index.columns import BoolArray, MemoryColumns, SeqArray
from mnemonic.index.fulltext import FullTextIndex
from mnemonic.index.fulltext import compact as compact_text
from mnemonic.index.graph import RELATION_CODES, AssociationGraph, build_csr
from mnemonic.index.passages import PassageVectors, best_of
from mnemonic.index.patterns import PatternSet
from mnemonic.index.snapshot import discard_snapshot, load_snapshot, read_checkpoint
from mnemonic.index.supersessions import Supersessions
from mnemonic.index.vectors import AdaptiveVectors
from mnemonic.llm.embedding import Vectors
from mnemonic.store.base import Filters
from mnemonic.store.database import in_read_transaction

log = logging.getLogger(__name__)

State = Literal["empty", "building", "ready", "stale"]
SUPERSEDES = "supersedes"


def read_supersessions(conn: sqlite3.Connection) -> list[tuple[int, int]]:
    """(newer, older) of every ``supersedes`` edge (a partial index makes this cheap)."""
    rows = conn.execute(
        "SELECT source_seq, target_seq FROM associations WHERE relation = 'supersedes'"
    ).fetchall()
    return [(int(a), int(b)) for a, b in rows]


class _Resync:
    """A change the feed could not read: the index must be rebuilt from SQLite."""


RESYNC = _Resync()


_INLINE_DELTAS = 32  # writes queued during a build applied on the loop as it ends
_CATCH_UP_ROUNDS = 8  # worker-thread rounds of catching up before the loop takes the rest
SCRUB_RETRY_S = 60.0  # after a scrub that could not be done (index/hnsw.py SCRUB_MAX)


def _scrub_all(parts: tuple[AdaptiveVectors, ...]) -> bool:
    """Each part's ``scrub`` in turn, stopping at the first that cannot be done."""
    return all(part.scrub() for part in parts)


class RecallIndex:
    """Everything recall reads per query, in memory (see the module docstring)."""

    def __init__(self, dim: int, model: str, *, vector_exact_max: int) -> None:
        self.dim = dim
        self._vector_exact_max = vector_exact_max
        self._reader = DeltaReader(model)
        self.columns = MemoryColumns()
        self.fulltext = FullTextIndex()
        self.vectors = AdaptiveVectors(dim, exact_max=vector_exact_max)
        self.passages = PassageVectors(dim, exact_max=vector_exact_max)
        self.graph = AssociationGraph()
        self.supersessions = Supersessions()
        # loaded by the daemon from the abstraction store, not by builds (index/patterns.py)
        self.patterns = PatternSet()
        self.state: State = "empty"
        self._pending: list[IndexDelta | _Resync] | None = None
        self.build_seconds: float | None = None
        self.builds = 0
        self.built_from: Literal["sqlite", "snapshot"] | None = None
        self.replayed = 0  # log keys replayed onto the snapshot at the last load
        self.damaged = 0  # vector rows the last build or replay left out (builder.py)
        # a purge since the HNSW graphs were built or scrubbed: they may hold its bytes
        self.forgot_since_build = False
        self._purges = 0  # changes that deleted memories, applied (the scrub's mark)
        self._scrubbing: asyncio.Task[None] | None = None
        self._scrub_after = 0.0  # time.monotonic() before which no scrub is tried again
        self._switches = 0  # switches to HNSW finished (a scrub that met one tries again)
        self.last_error: str | None = None
        self.last_change = 0.0  # time.monotonic() of the last change applied
        self.on_stale: Callable[[], None] | None = None  # the daemon schedules a rebuild
        # memories were deleted (a purge): a saved checkpoint must go (index/checkpoints.py)
        self.on_forgot: Callable[[], None] | None = None
        self._ready = asyncio.Event()
        self._compacting: asyncio.Task[None] | None = None
        self._switching: dict[str, asyncio.Task[None]] = {}  # "vectors", "passages"

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    async def wait_ready(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the index to be ready; whether it is. The
        encoder waits so that memories encoded during a build still find their twins and
        links; it goes on without them rather than stall when a build takes long."""
        if self.ready:
            return True
        try:
            async with asyncio.timeout(seconds):
                await self._ready.wait()
        except TimeoutError:
            return self.ready
        return self.ready

    @property
    def model(self) -> str:
        return self._reader.model

    # ---- the change feed (``Database.follow_changes``) -------------------------------------
    def setup(self, conn: sqlite3.Connection) -> None:
        install_triggers(conn)

    def read(self, conn: sqlite3.Connection) -> object | None:
        try:
            return self._reader(conn)
        except Exception as exc:  # never fail the user's write for the index's sake
            log.exception("reading the index change feed failed; the index will be rebuilt")
            self.last_error = f"change feed: {type(exc).__name__}: {exc}"
            return RESYNC

    def apply(self, delta: object) -> None:
        if not isinstance(delta, IndexDelta | _Resync):
            raise TypeError(f"not an index delta: {type(delta).__name__}")
        if self._pending is not None:
            self._pending.append(delta)
            return
        if isinstance(delta, _Resync):
            self._go_stale("a change could not be read")
            return
        if self.state != "ready":
            return  # a stale index is rebuilt from SQLite as a whole
        try:
            self._apply(delta)
        except Exception as exc:
            log.exception("applying a change to the recall index failed; rebuilding it")
            self.last_error = f"apply: {type(exc).__name__}: {exc}"
            self._go_stale("a change could not be applied")

    def _go_stale(self, why: str) -> None:
        if self.state == "stale":
            return
        log.warning("recall index is stale (%s); recall uses SQL until it is rebuilt", why)
        self.state = "stale"
        self._ready.clear()
        if self.on_stale is not None:
            self.on_stale()

    def _apply(self, delta: IndexDelta) -> None:
        self._change(delta)
        self._after_change(forgot=bool(delta.gone))

    def _change_all(self, deltas: list[IndexDelta]) -> None:
        for delta in deltas:
            self._change(delta)
        self.vectors.make_room()  # here in the thread, not at the next write on the loop
        self.passages.vectors.make_room()

    def _change(self, delta: IndexDelta) -> None:
        """The delta's changes to the parts. No event-loop call here: a build runs it in a
        worker thread for the changes it catches up on (``_catch_up``)."""
        self.last_change = time.monotonic()
        if delta.rows:
            self.columns.upsert(delta.rows)
        if delta.gone:
            self.forgot_since_build = True
            self.columns.remove(delta.gone)
            for seq in delta.gone:
                self.fulltext.apply(seq, None)
                self.graph.remove_node(seq)
                self.supersessions.remove_node(seq)
        for seq, analyzed in delta.texts:
            self.fulltext.apply(seq, analyzed)
        gone_vectors = sorted({*delta.vectors_gone, *delta.gone})
        if gone_vectors:
            self.vectors.remove(np.asarray(gone_vectors, dtype=np.int64))
        if delta.vector_seqs and delta.vectors is not None:
            self.vectors.set(np.asarray(delta.vector_seqs, dtype=np.int64), delta.vectors)
        gone_passages = sorted({*delta.passages_gone, *delta.gone})
        if gone_passages:
            self.passages.remove(gone_passages)
        for seq, matrix in delta.passages:
            self.passages.set(seq, matrix)
        for source, target, relation in delta.edges_gone:
            self.graph.remove_edge(source, target, RELATION_CODES[relation])
            if relation == SUPERSEDES:
                self.supersessions.remove(source, target)
        for source, target, relation, strength in delta.edges:
            self.graph.upsert(source, target, RELATION_CODES[relation], strength)
            if relation == SUPERSEDES:
                self.supersessions.add(source, target)
        if delta.gone:  # after the removals: a scrub that read the count sees them done
            self._purges += 1

    def _after_change(self, *, forgot: bool) -> None:
        """On the event loop after changes: a purge's checkpoint deleted, and a switch to
        HNSW or a compaction started when the parts have grown into one."""
        if forgot and self.on_forgot is not None:
            self.on_forgot()
        if self.forgot_since_build:
            self._start_scrub()
        for what, vectors in (("vectors", self.vectors), ("passages", self.passages.vectors)):
            if what not in self._switching and vectors.needs_switch:
                self._switching[what] = asyncio.get_running_loop().create_task(
                    self._switch(what), name=f"mnemonic:index-hnsw-{what}"
                )
        if self._compacting is None and (
            self.graph.needs_compaction or self.fulltext.needs_compaction()
        ):
            self._compacting = asyncio.get_running_loop().create_task(
                self._compact(), name="mnemonic:index-compact"
            )

    def _adaptive(self, what: str) -> AdaptiveVectors:
        return self.vectors if what == "vectors" else self.passages.vectors

    async def _switch(self, what: str) -> None:
        """Past ``recall.vector_exact_max`` vectors (``what``: the whole vectors, or the
        passage rows), build the HNSW index in a worker thread (both cores, tens of
        seconds at a few hundred thousand) while the exact index keeps answering; writes
        made meanwhile are replayed onto it before it takes over."""
        vectors = self._adaptive(what)
        try:
            build = vectors.begin_switch()
            try:
                hnsw = await asyncio.to_thread(build)
            except BaseException:
                vectors.abort_switch()
                raise
            if vectors is self._adaptive(what):  # not replaced by a rebuild meanwhile
                vectors.finish_switch(hnsw)
                log.info("%s search switched to %s at %d rows", what, vectors.kind, len(vectors))
                self._switches += 1
                if self.forgot_since_build:  # the new graph replayed a purge's removals
                    self._scrub_after = 0.0
                    self._start_scrub()
        except Exception:
            log.exception("building the HNSW index of the %s failed; exact search goes on", what)
        finally:
            self._switching.pop(what, None)

    def _built_afresh(self) -> None:
        """A build starts: its graphs hold no purged bytes, and a scrub may run at once."""
        self.forgot_since_build = False
        self._scrub_after = 0.0

    def _retry_scrub(self) -> None:
        if self.forgot_since_build:
            self._start_scrub()

    def _start_scrub(self) -> None:
        if self._scrubbing is None and time.monotonic() >= self._scrub_after:
            self._scrubbing = asyncio.get_running_loop().create_task(
                self._scrub(), name="mnemonic:index-scrub"
            )

    async def _scrub(self) -> None:
        """After a purge, overwrite what the HNSW graphs keep of removed vectors (in a
        worker thread: milliseconds for a few memories), so checkpoints can be saved
        again at once instead of after the next start's build from SQLite. Until it is
        done, or when it cannot be (a switch under way: it runs again when the switch
        ends; a purge of more than ``SCRUB_MAX`` rows), no HNSW checkpoint is saved."""
        try:
            while self.forgot_since_build:
                mark, switches = self._purges, self._switches
                parts = (self.vectors, self.passages.vectors)
                done = await asyncio.to_thread(_scrub_all, parts)
                if not done:
                    if self._switches != switches:  # a switch ended meanwhile: its graph
                        continue
                    if not any(part.switching for part in parts):  # its end starts one
                        # too many freed slots: later adds reuse some, a later try may pass
                        self._scrub_after = time.monotonic() + SCRUB_RETRY_S
                        asyncio.get_running_loop().call_later(SCRUB_RETRY_S, self._retry_scrub)
                    return
                if self.state != "ready":  # a build is catching up in its thread: when it
                    return  # is done, its last change starts a scrub again
                if mark == self._purges and parts == (self.vectors, self.passages.vectors):
                    self.forgot_since_build = False
        except Exception:  # the flag stays: no HNSW checkpoint until a start rebuilds
            log.exception("overwriting purged vectors in the HNSW index failed")
        finally:
            self._scrubbing = None

    async def _compact(self) -> None:
        """Fold the graph's overlay and the full text's delta into new base arrays in a
        worker thread (each 0.2-1 s of CPU at a million memories); changes arriving
        meanwhile land in fresh overlays above them, so none is lost."""
        try:
            graph = self.graph
            if graph.needs_compaction:
                job = graph.compaction_input()
                try:
                    csr = await asyncio.to_thread(build_csr, job)
                except BaseException:
                    graph.abandon(job)
                    raise
                if graph is self.graph:  # not replaced by a rebuild meanwhile
                    graph.install(job, csr)
            fulltext = self.fulltext
            if fulltext.needs_compaction():
                text_job = fulltext.begin_compaction()
                segment = await asyncio.to_thread(compact_text, text_job)
                if fulltext is self.fulltext:
                    fulltext.install(text_job, segment)
        except Exception:  # the overlays keep answering; only the compaction is lost
            log.exception("compacting the recall index failed")
        finally:
            self._compacting = None

    async def settle(self) -> None:
        """Wait for a compaction (about a second at most) and a purge's scrub (milliseconds)
        under way, so a snapshot sees one state and a stop right after a purge can still
        save one. A switch to HNSW (minutes) is not waited for: no snapshot is saved."""
        for task in (self._compacting, self._scrubbing):
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)

    # ---- building ----------------------------------------------------------------------
    async def build(
        self,
        read: Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]],
        snapshot: Path | None = None,
    ) -> None:
        """Fill the index from one read snapshot (``read`` = ``Database.run_read``), then
        replay the changes that committed while it was read. With ``snapshot`` (the folder
        of the last checkpoint, ``index/snapshot.py``) the index is loaded from it and the
        changes the log noted since are replayed, when it is the database's checkpoint;
        else it is built from SQLite."""
        started = time.perf_counter()
        self.state = "building"
        self._ready.clear()
        self._pending = []
        self._built_afresh()
        replay: IndexDelta | None = None
        try:
            loaded = None if snapshot is None else await self._load_snapshot(read, snapshot)
            built, replay = (None, None) if loaded is None else loaded
            self.built_from = "sqlite" if built is None else "snapshot"
            if built is None:
                stop = threading.Event()
                try:
                    built = await read(
                        lambda conn: read_everything(
                            conn, self.model, self.dim, self._vector_exact_max, stop=stop
                        )
                    )
                except asyncio.CancelledError:
                    stop.set()  # the reading thread gives up at its next chunk
                    raise
            # the graph keeps no direction; the few directed supersessions are read apart
            # (replayed changes after this read are idempotent on it)
            supersessions = Supersessions(await read(read_supersessions))
        except BaseException:
            self._pending = None
            self.state = "stale"
            raise
        assert isinstance(built, Built)
        self.columns, self.fulltext, self.vectors, self.passages, self.graph = (
            built.columns,
            built.fulltext,
            built.vectors,
            built.passages,
            built.graph,
        )
        self.supersessions = supersessions
        self.damaged = built.damaged + (0 if replay is None else replay.damaged)
        try:
            failed, forgot = await self._catch_up(replay)
        except BaseException:
            self._pending = None
            self.state = "stale"
            raise
        pending, self._pending = self._pending, None
        self.state = "ready"
        if failed is None:
            self._after_change(forgot=forgot)
        else:
            if forgot and self.on_forgot is not None:
                self.on_forgot()  # the checkpoint holds purged memories: it goes anyway
            self.last_error = failed
            self._go_stale("a change could not be applied")
        # the last few writes queued meanwhile, on the loop
        for delta in pending:
            self.apply(delta)
            if self.state != "ready":
                break
        if self.state == "ready":
            self._ready.set()
        self.builds += 1
        self.build_seconds = time.perf_counter() - started
        log.info(
            "recall index built from %s in %.2f s: %d memories, %d vectors, %d edges"
            " (%d changes replayed)",
            self.built_from,
            self.build_seconds,
            len(self.columns),
            len(self.vectors),
            self.graph.edge_count,
            self.replayed,
        )

    async def _catch_up(self, replay: IndexDelta | None) -> tuple[str | None, bool]:
        """Apply the log's changes since the checkpoint, then the writes queued during the
        build, in a worker thread while they are many: a replay of thousands of changes is
        seconds of work (6 s seen at 100k memories), which on the event loop would stall
        every request. The index is not ready meanwhile, so nothing else reads the parts,
        and new writes keep queueing; at most ``_INLINE_DELTAS`` are left for the loop, and
        a resync note is always left to it. Returns why a change failed (or None) and
        whether the changes purged memories."""
        pending = self._pending
        assert pending is not None
        batch: list[IndexDelta] = [replay] if replay else []
        forgot = False
        rounds = 0
        # bounded: under writes faster than the thread applies them the loop takes the rest
        while (batch or len(pending) > _INLINE_DELTAS) and rounds < _CATCH_UP_ROUNDS:
            rounds += 1
            taken = list(pending)
            resync = next((i for i, d in enumerate(taken) if isinstance(d, _Resync)), None)
            if resync is not None:  # up to it here, the rest (and its rebuild) on the loop
                pending[:] = taken[resync:]
                taken = taken[:resync]
            else:
                pending.clear()
            batch += [d for d in taken if isinstance(d, IndexDelta)]
            if not batch:
                break
            forgot = forgot or any(d.gone for d in batch)
            try:
                await asyncio.to_thread(self._change_all, batch)
            except Exception as exc:
                log.exception("applying changes to the recall index failed; rebuilding it")
                return f"apply: {type(exc).__name__}: {exc}", forgot
            batch = []
            if resync is not None:
                break
        return None, forgot

    async def _load_snapshot(
        self, read: Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]], folder: Path
    ) -> tuple[Built, IndexDelta] | None:
        """The saved checkpoint and what changed since (the log's keys, read with their
        current values in one read transaction), if it is the database's checkpoint;
        else None, and the folder is deleted (it can never be used). The pending queue
        already runs, so writes committed after the log was read are replayed after."""
        built: Built | None = None
        self.replayed = 0
        try:
            checkpoint = await read(read_checkpoint)
            if checkpoint is not None and checkpoint.token is not None:
                built = await asyncio.to_thread(
                    load_snapshot,
                    folder,
                    model=self.model,
                    dim=self.dim,
                    exact_max=self._vector_exact_max,
                    checkpoint=checkpoint,
                )
            if built is not None:
                assert checkpoint is not None
                position = checkpoint.position
                delta, self.replayed = await read(
                    # one transaction: the log's notes and the values agree
                    lambda conn: in_read_transaction(
                        conn, lambda c: self._reader.since(c, position)
                    )
                )
                return built, delta
        except Exception:  # never fail the build for the cache's sake
            log.warning("reading the recall index snapshot failed", exc_info=True)
        try:
            await asyncio.to_thread(discard_snapshot, folder)
        except OSError:
            log.warning("could not delete the recall index snapshot %s", folder, exc_info=True)
        return None

    # ---- searching (worker threads) ----------------------------------------------------
    def full_text(
        self, terms: Sequence[str], filters: Filters, limit: int, match_budget: int | None
    ) -> tuple[BoolArray, list[tuple[int, float]]]:
        """The filter mask for this query and its BM25 hits (seq, score), best first.

        ``match_budget`` drops the commonest terms first once the terms' postings add up
        to more, as the SQL path does: the same ranking, and a query's work is bounded.
        """
        allowed = self.columns.mask(filters)
        if not terms:
            return allowed, []
        return allowed, self.fulltext.search(terms, allowed, limit, match_budget)

    def common_words(
        self, words: Sequence[str], filters: Filters, share: float, sample: int
    ) -> dict[str, list[int]]:
        """Those of ``words`` that at least ``share`` of the memories ``filters`` lets
        through hold (full-text match), each with up to ``sample`` of its holders spread
        evenly over them (for a caller that reads what they say)."""
        allowed = self.columns.mask(filters)
        needed = max(1, math.ceil(share * int(np.count_nonzero(allowed))))
        common: dict[str, list[int]] = {}
        for word in words:
            holders = self.fulltext.allowed_holders(word, allowed, needed)
            if len(holders) >= needed:
                picks = np.linspace(0, len(holders) - 1, min(sample, len(holders)))
                common[word] = [int(holders[int(i)]) for i in picks]
        return common

    def nearest(
        self,
        vector: Vectors,
        k: int,
        allowed: BoolArray,
        filters: Filters,
        *,
        passages: bool = False,
    ) -> list[tuple[int, float]]:
        """The ``k`` nearest memories (seq, cosine); with ``passages`` a memory's cosine is
        its best passage's when that beats its whole vector's (``index/passages.py``)."""
        query = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        return self.nearest_each(query, k, allowed, filters, passages=passages)[0]

    def nearest_each(
        self,
        vectors: Vectors,
        k: int,
        allowed: BoolArray,
        filters: Filters,
        *,
        passages: bool = False,
    ) -> list[list[tuple[int, float]]]:
        """``nearest`` for each row of ``vectors`` under one filter: one product over the
        whole vectors and one over the passages for all rows (a question's clauses)."""
        if not len(vectors):
            return []
        candidates = (
            self.columns.project_seqs(filters.project) if filters.project is not None else None
        )
        n = len(vectors)
        whole = self.vectors.search_many(vectors, k, [allowed] * n, [candidates] * n)
        if not passages or not len(self.passages):
            return whole
        parts = self.passages.search_many(vectors, k, allowed)
        return [best_of(w, p, k) for w, p in zip(whole, parts, strict=True)]

    def nearest_many(
        self, vectors: Vectors, k: int, filters: Sequence[Filters]
    ) -> list[list[tuple[int, float]]]:
        """One product for a batch of queries (the encoder's near-duplicate search)."""
        masks: dict[Filters, BoolArray] = {}
        projects: dict[str, SeqArray] = {}
        for f in filters:  # one array object per distinct filter: queries sharing it group
            if f not in masks:
                masks[f] = self.columns.mask(f)
            if f.project is not None and f.project not in projects:
                projects[f.project] = self.columns.project_seqs(f.project)
        allowed = [masks[f] for f in filters]
        candidates = [None if f.project is None else projects[f.project] for f in filters]
        return self.vectors.search_many(vectors, k, allowed, candidates)

    def vectors_for(self, seqs: Sequence[int]) -> dict[int, Vectors]:
        return self.vectors.vectors_for(list(seqs))

    # ---- reporting -----------------------------------------------------------------------
    def describe(self) -> dict[str, object]:
        """What ``/api/v1/health`` and ``mnemonic doctor`` show about the index."""
        return {
            "state": self.state,
            "build_seconds": None if self.build_seconds is None else round(self.build_seconds, 3),
            "built_from": self.built_from,
            "replayed": self.replayed,
            "damaged": self.damaged,
            "builds": self.builds,
            "last_error": self.last_error,
            "supersessions": len(self.supersessions),
            "patterns": len(self.patterns),
            "entry_points": {
                "full_text": self.fulltext.describe() if self.ready else {"kind": "sqlite-fts5"},
                "vectors": self.vectors.describe(),
                "passages": self.passages.describe(),
                "graph": self.graph.describe() if self.ready else {"kind": "sqlite"},
                "columns": self.columns.describe(),
            },
        }
