"""A memory's vectors in SQLite: its whole vector (float32, ``memory_vectors``) and its
passage vectors (float16, ``memory_passages``, migration 0009: one row per memory).

Every path that embeds a memory (the encoder, an amendment, the re-embedder) writes both
through here, in the transaction that writes the memory; the recall index reads them back
through the change feed and at builds (``decode``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]

# The recipe of the rows written before recipes were named (session 15): those rows
# record the model alone, and a store cut that way needs no re-embedding.
_UNNAMED_RECIPE = (4, 12)  # (encoding.passage_lead_words, encoding.passage_cap)
_RECIPE = "#passages("


@dataclass(frozen=True, slots=True)
class VectorModels:
    """What a memory's two vector rows record in their ``model`` column: the embedding
    model of the whole vector, and for the passages that model plus the recipe that cut
    them (``vector_models``)."""

    whole: str
    passages: str


def vector_models(model: str, lead_words: int, cap: int, *, splitter: int) -> VectorModels:
    """The names for vectors of ``model`` with passages cut by ``encoding.passage_lead_words``
    and ``encoding.passage_cap`` with version ``splitter`` of the sentence splitter
    (``encoding/passages.py``: ``SPLITTER``). A passage row of another recipe is stale, so
    changing any of them has the start-up re-embedding cut every memory's passages again
    (with ``passage_cap`` 0: none); meanwhile the index keeps searching the old rows, which
    are still vectors of the same model (``embedding_model``). Version 1, the splitter
    that cut every row before versions had names, adds nothing to the name, so those
    stores need no re-embedding."""
    if (lead_words, cap) == _UNNAMED_RECIPE and splitter == 1:
        return VectorModels(model, model)
    version = "" if splitter == 1 else f",split={splitter}"
    return VectorModels(model, f"{model}{_RECIPE}lead={lead_words},cap={cap}{version})")


def embedding_model(passage_model: str) -> str:
    """The embedding model of a passage row, whatever its recipe."""
    model, mark, _recipe = passage_model.rpartition(_RECIPE)
    return model if mark else passage_model


# SQL: a memory_passages row of any recipe of one model (``passages_of_model``)
PASSAGES_OF_MODEL = "(model = ? OR substr(model, 1, ?) = ?)"


def passages_of_model(model: str) -> tuple[str, int, str]:
    """The parameters of ``PASSAGES_OF_MODEL`` for ``model``."""
    prefix = model + _RECIPE
    return (model, len(prefix), prefix)


def write_vectors(
    conn: sqlite3.Connection, seq: int, models: VectorModels, vector: F32, passages: F32 | None
) -> None:
    """Memory ``seq``'s whole vector and, unless None, its passage vectors ([n, dim])."""
    whole = np.ascontiguousarray(vector, dtype=np.float32)
    conn.execute(
        "INSERT OR REPLACE INTO memory_vectors (seq, model, dim, vector) VALUES (?, ?, ?, ?)",
        (seq, models.whole, int(whole.shape[0]), whole.tobytes()),
    )
    if passages is not None:
        write_passages(conn, seq, models.passages, int(whole.shape[0]), passages)


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


# SQL: a row whose blob is not the size its dim (and count) say, e.g. a page damaged on
# disk. Such a row is never searched (``whole_intact``, ``decode``) and counts as stale, so
# the re-embedding writes it again (store/sqlite.py ``_STALE``).
DAMAGED_WHOLE = "length(v.vector) <> v.dim * 4"
DAMAGED_PASSAGES = "length(p.vectors) <> p.count * p.dim * 2"


def whole_intact(blob: bytes, dim: int) -> bool:
    """Whether a stored whole vector is ``dim`` float32 values."""
    return len(blob) == dim * 4


def decode(blob: bytes, count: int, dim: int) -> F32:
    """The [count, dim] float32 unit vectors of a stored passage row; a row whose size
    does not match its count and dim (damage) decodes to none rather than wrong vectors."""
    if count <= 0 or len(blob) != count * dim * 2:
        return np.zeros((0, dim), dtype=np.float32)
    matrix = np.frombuffer(blob, dtype=np.float16).astype(np.float32).reshape(count, dim)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    out: F32 = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return out
