"""A memory's vectors in SQLite: its whole vector (float32, ``memory_vectors``) and its
passage vectors (float16, ``memory_passages``, migration 0009: one row per memory).

Every path that embeds a memory (the encoder, an amendment, the re-embedder) writes both
through here, in the transaction that writes the memory; the recall index reads them back
through the change feed and at builds (``decode``).
"""

from __future__ import annotations

import sqlite3

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]


def write_vectors(
    conn: sqlite3.Connection, seq: int, model: str, vector: F32, passages: F32 | None
) -> None:
    """Memory ``seq``'s whole vector and, unless None, its passage vectors ([n, dim])."""
    whole = np.ascontiguousarray(vector, dtype=np.float32)
    conn.execute(
        "INSERT OR REPLACE INTO memory_vectors (seq, model, dim, vector) VALUES (?, ?, ?, ?)",
        (seq, model, int(whole.shape[0]), whole.tobytes()),
    )
    if passages is not None:
        write_passages(conn, seq, model, int(whole.shape[0]), passages)


def write_passages(conn: sqlite3.Connection, seq: int, model: str, dim: int, vectors: F32) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO memory_passages (seq, model, dim, count, vectors)"
        " VALUES (?, ?, ?, ?, ?)",
        passage_row(seq, model, dim, vectors),
    )


def passage_row(seq: int, model: str, dim: int, vectors: F32) -> tuple[int, str, int, int, bytes]:
    """The row for ``vectors`` ([n, dim], n may be 0) of memory ``seq``."""
    matrix = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    return (seq, model, dim, len(matrix), np.ascontiguousarray(matrix, np.float16).tobytes())


def decode(blob: bytes, count: int, dim: int) -> F32:
    """The [count, dim] float32 unit vectors of a stored passage row; a row whose size
    does not match its count and dim (damage) decodes to none rather than wrong vectors."""
    if count <= 0 or len(blob) != count * dim * 2:
        return np.zeros((0, dim), dtype=np.float32)
    matrix = np.frombuffer(blob, dtype=np.float16).astype(np.float32).reshape(count, dim)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: F32 = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return out
