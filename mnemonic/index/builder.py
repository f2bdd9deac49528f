"""Reads the whole recall index out of SQLite, in one snapshot, streamed in chunks.

Runs on a reader connection's thread. Every part goes straight into its final arrays:
vectors into one preallocated matrix (no list of row blobs, no second copy at peak), edges
into four preallocated arrays, columns a chunk at a time, texts analysed row by row.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from mnemonic.index.columns import COLUMN_SQL, ColumnRow, MemoryColumns
from mnemonic.index.fulltext import Analyzed, FullTextIndex, analyze
from mnemonic.index.graph import RELATION_CODES, AssociationGraph
from mnemonic.index.passages import PassageVectors
from mnemonic.index.vectors import AdaptiveVectors
from mnemonic.store.vector_rows import PASSAGES_OF_MODEL, decode, passages_of_model, whole_intact

CHUNK = 8192


@dataclass(slots=True)
class Built:
    columns: MemoryColumns
    fulltext: FullTextIndex
    vectors: AdaptiveVectors
    graph: AssociationGraph
    passages: PassageVectors
    damaged: int = 0  # vector rows left out: their blob's size disagrees with the row


class BuildStopped(Exception):
    """The daemon is stopping: a build gives up between two chunks."""


def _batches(
    cursor: sqlite3.Cursor, size: int, stop: threading.Event | None
) -> Iterator[list[Any]]:
    """``fetchmany`` batches until the rows run out, or ``stop`` is set: a build of a
    million memories takes minutes, and the store cannot close while it reads."""
    while rows := cursor.fetchmany(size):
        if stop is not None and stop.is_set():
            raise BuildStopped
        yield rows


def read_everything(
    conn: sqlite3.Connection,
    model: str,
    dim: int,
    exact_max: int,
    chunk: int = CHUNK,
    stop: threading.Event | None = None,
) -> Built:
    """The four parts of the index as of one read transaction (``chunk`` rows a fetch)."""
    conn.execute("BEGIN")  # one snapshot: later commits reach the index as deltas
    try:
        columns = _columns(conn, chunk, stop)
        vectors, damaged_whole = _vectors(conn, model, dim, exact_max, chunk, stop)
        passages, damaged_passages = _passages(conn, model, dim, exact_max, chunk, stop)
        graph = _graph(conn, chunk, stop)
        fulltext = FullTextIndex.build(_documents(conn, chunk, stop))
    finally:
        conn.execute("COMMIT")
    return Built(
        columns=columns,
        fulltext=fulltext,
        vectors=vectors,
        graph=graph,
        passages=passages,
        damaged=damaged_whole + damaged_passages,
    )


def _columns(conn: sqlite3.Connection, chunk: int, stop: threading.Event | None) -> MemoryColumns:
    (top,) = conn.execute("SELECT coalesce(max(seq), 0) FROM memories").fetchone()
    columns = MemoryColumns(capacity=int(top) + 1)
    cursor = conn.execute(f"SELECT {COLUMN_SQL} FROM memories")
    for rows in _batches(cursor, chunk, stop):
        batch: list[ColumnRow] = [tuple(r) for r in rows]
        columns.upsert(batch)
    return columns


def _vectors(
    conn: sqlite3.Connection,
    model: str,
    dim: int,
    exact_max: int,
    chunk: int,
    stop: threading.Event | None,
) -> tuple[AdaptiveVectors, int]:
    """Exact: one preallocated matrix. Past ``exact_max``: straight into the HNSW index a
    chunk at a time, so a million float32 vectors (1.5 GB) are never in memory at once.
    Also returns how many rows were left out as damaged (``whole_intact``)."""
    (count,) = conn.execute(
        "SELECT count(*) FROM memory_vectors WHERE model = ? AND dim = ?", (model, dim)
    ).fetchone()
    vectors = AdaptiveVectors(dim, exact_max=exact_max)
    cursor = conn.execute(
        "SELECT seq, vector FROM memory_vectors WHERE model = ? AND dim = ?", (model, dim)
    )
    if count > exact_max:
        from mnemonic.index.hnsw import HnswVectors  # usearch only at scale

        hnsw = HnswVectors(dim)
        damaged = 0
        for batch in _batches(cursor, max(chunk, 1024), stop):
            rows = [r for r in batch if whole_intact(r[1], dim)]
            damaged += len(batch) - len(rows)
            if not rows:
                continue
            seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            block = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
            hnsw.set(seqs, block)
        vectors.adopt(hnsw)
        return vectors, damaged
    # Rows are placed at their seq in a matrix with headroom, which the index adopts as
    # is: no second copy at start, and the next writes do not grow (copy) it on the event
    # loop. np.zeros maps untouched rows lazily, so the headroom costs no memory until used.
    (top,) = conn.execute(
        "SELECT coalesce(max(seq), 0) FROM memory_vectors WHERE model = ? AND dim = ?",
        (model, dim),
    ).fetchone()
    matrix = np.zeros((int(top) + int(top) // 4 + 1024, dim), dtype=np.float32)
    seqs = np.empty(count, dtype=np.int64)
    filled = damaged = 0
    cursor = conn.execute(
        "SELECT seq, vector FROM memory_vectors WHERE model = ? AND dim = ? ORDER BY seq",
        (model, dim),
    )
    for rows in _batches(cursor, chunk, stop):
        for seq, blob in rows:
            if filled == count:  # cannot happen inside one snapshot; guard anyway
                break
            if not whole_intact(blob, dim):
                damaged += 1
                continue
            seqs[filled] = seq
            matrix[seq] = np.frombuffer(blob, dtype=np.float32)
            filled += 1
    vectors.load_placed(matrix, seqs[:filled])
    return vectors, damaged


def _passages(
    conn: sqlite3.Connection,
    model: str,
    dim: int,
    exact_max: int,
    chunk: int,
    stop: threading.Event | None,
) -> tuple[PassageVectors, int]:
    """Every memory's passage rows, in one matrix (rows of a memory adjacent), and how
    many memories' rows were left out as damaged (``decode``)."""
    (rows,) = conn.execute(
        "SELECT coalesce(sum(count), 0) FROM memory_passages"
        f" WHERE {PASSAGES_OF_MODEL} AND dim = ?",
        (*passages_of_model(model), dim),
    ).fetchone()
    # headroom, as for the whole vectors: untouched zero rows cost no memory until used
    matrix = np.zeros((int(rows) + int(rows) // 4 + 1024, dim), dtype=np.float32)
    owners = np.empty(int(rows), dtype=np.int64)
    filled = damaged = 0
    cursor = conn.execute(
        "SELECT seq, count, vectors FROM memory_passages"
        f" WHERE {PASSAGES_OF_MODEL} AND dim = ? AND count > 0 ORDER BY seq",
        (*passages_of_model(model), dim),
    )
    for batch in _batches(cursor, chunk, stop):
        for seq, count, blob in batch:
            mine = decode(blob, int(count), dim)
            if not len(mine):
                damaged += 1
                continue
            end = filled + len(mine)
            if end > len(owners):  # cannot happen inside one snapshot; guard anyway
                break
            matrix[filled:end] = mine
            owners[filled:end] = seq
            filled = end
    passages = PassageVectors(dim, exact_max=exact_max)
    passages.load(owners[:filled], matrix)
    return passages, damaged


def _graph(conn: sqlite3.Connection, chunk: int, stop: threading.Event | None) -> AssociationGraph:
    (count,) = conn.execute("SELECT count(*) FROM associations").fetchone()
    source = np.empty(count, dtype=np.int64)
    target = np.empty(count, dtype=np.int64)
    relation = np.empty(count, dtype=np.int8)
    strength = np.empty(count, dtype=np.float32)
    filled = 0
    cursor = conn.execute("SELECT source_seq, target_seq, relation, strength FROM associations")
    for batch in _batches(cursor, chunk, stop):
        n = min(len(batch), count - filled)
        rows = batch[:n]
        end = filled + n
        source[filled:end] = [r[0] for r in rows]
        target[filled:end] = [r[1] for r in rows]
        relation[filled:end] = [RELATION_CODES[r[2]] for r in rows]
        strength[filled:end] = [r[3] for r in rows]
        filled = end
    return AssociationGraph.build(
        source[:filled], target[:filled], relation[:filled], strength[:filled]
    )


def _documents(
    conn: sqlite3.Connection, chunk: int, stop: threading.Event | None
) -> Iterator[list[tuple[int, Analyzed]]]:
    cursor = conn.execute("SELECT rowid, content, summary, concepts, when_text FROM memories_fts")
    for rows in _batches(cursor, chunk, stop):
        yield [(int(seq), analyze(c, s, k, w)) for seq, c, s, k, w in rows]
