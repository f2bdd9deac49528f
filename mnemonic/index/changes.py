"""The change feed: what each write transaction changed, read back inside it.

The in-memory recall indexes must match SQLite after every write, from every write path
(the encoder, amendments, forgetting, merges, links, feedback, purges, and whatever later
agents add). Instead of asking every path to remember to update the indexes, the writer
connection carries TEMP triggers that note each changed memory, text, vector and edge in a
temp table. Before the transaction commits, :func:`read_delta` reads those notes, deletes
them, and reads the changed rows' current values: the delta is a consistent snapshot of
exactly what the transaction changed. The database applies it to the indexes right after
the commit, still holding the write lock, so deltas apply in commit order and a caller
that awaited a write finds it in the next query.

TEMP triggers live only on the writer's own connection; they are not part of the schema,
need no migration and cost one small insert into an in-memory table per changed row.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import numpy.typing as npt

from mnemonic.index.columns import COLUMN_SQL, ColumnRow
from mnemonic.index.fulltext import Analyzed, analyze
from mnemonic.store.sql_lists import marks
from mnemonic.store.vector_rows import decode, embedding_model, whole_intact

log = logging.getLogger(__name__)

ROW, TEXT, VECTOR, EDGE = 1, 2, 3, 4

TRIGGERS = (
    "CREATE TEMP TABLE IF NOT EXISTS index_changes"
    " (kind INTEGER NOT NULL, a INTEGER NOT NULL, b INTEGER, c TEXT)",
    f"CREATE TEMP TRIGGER IF NOT EXISTS index_memory_insert AFTER INSERT ON main.memories"
    f" BEGIN INSERT INTO index_changes VALUES ({TEXT}, new.seq, NULL, NULL); END",
    f"CREATE TEMP TRIGGER IF NOT EXISTS index_memory_update AFTER UPDATE ON main.memories"
    f" BEGIN INSERT INTO index_changes VALUES ({ROW}, new.seq, NULL, NULL); END",
    f"CREATE TEMP TRIGGER IF NOT EXISTS index_memory_text AFTER UPDATE OF"
    f" content, summary, concepts, timestamp ON main.memories"
    f" BEGIN INSERT INTO index_changes VALUES ({TEXT}, new.seq, NULL, NULL); END",
    f"CREATE TEMP TRIGGER IF NOT EXISTS index_memory_delete AFTER DELETE ON main.memories"
    f" BEGIN INSERT INTO index_changes VALUES ({ROW}, old.seq, NULL, NULL); END",
    *(
        f"CREATE TEMP TRIGGER IF NOT EXISTS index_vector_{event.lower()} AFTER {event}"
        f" ON main.memory_vectors BEGIN INSERT INTO index_changes"
        f" VALUES ({VECTOR}, {row}.seq, NULL, NULL); END"
        for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old"))
    ),
    *(  # a memory's passages change under its vector key: both are read again
        f"CREATE TEMP TRIGGER IF NOT EXISTS index_passage_{event.lower()} AFTER {event}"
        f" ON main.memory_passages BEGIN INSERT INTO index_changes"
        f" VALUES ({VECTOR}, {row}.seq, NULL, NULL); END"
        for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old"))
    ),
    *(
        f"CREATE TEMP TRIGGER IF NOT EXISTS index_edge_{event.lower()} AFTER {event}"
        f" ON main.associations BEGIN INSERT INTO index_changes"
        f" VALUES ({EDGE}, {row}.source_seq, {row}.target_seq, {row}.relation); END"
        for event, row in (("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old"))
    ),
)

_CHUNK = 500  # seqs per IN (...) list: far below SQLite's variable limit


def install_triggers(conn: sqlite3.Connection) -> None:
    """Make ``conn`` (the writer) note every change the indexes must follow."""
    for statement in TRIGGERS:
        conn.execute(statement)


Edge = tuple[int, int, str]  # (source seq, target seq, relation), as stored


@dataclass(slots=True)
class IndexDelta:
    """Current values of everything one transaction changed."""

    rows: list[ColumnRow] = field(default_factory=list)
    gone: list[int] = field(default_factory=list)  # memories deleted (a purge)
    texts: list[tuple[int, Analyzed]] = field(default_factory=list)
    vector_seqs: list[int] = field(default_factory=list)
    vectors: npt.NDArray[np.float32] | None = None  # one row per vector_seqs entry
    vectors_gone: list[int] = field(default_factory=list)  # deleted, or another model's
    # each changed memory's passage vectors ([n, dim], n >= 1); none: deleted, n = 0 or
    # another model's (index/passages.py)
    passages: list[tuple[int, npt.NDArray[np.float32]]] = field(default_factory=list)
    passages_gone: list[int] = field(default_factory=list)
    edges: list[tuple[int, int, str, float]] = field(default_factory=list)
    edges_gone: list[Edge] = field(default_factory=list)
    # vector rows of the model left out because their blob's size disagrees with the row
    # (damage: only a write from outside the daemon can make one, seen at a replay)
    damaged: int = 0

    def __bool__(self) -> bool:
        return bool(
            self.rows
            or self.gone
            or self.texts
            or self.vector_seqs
            or self.vectors_gone
            or self.passages
            or self.passages_gone
            or self.edges
            or self.edges_gone
        )


class DeltaReader:
    """Reads the change notes inside the writer's transaction (see module docstring)."""

    def __init__(self, model: str) -> None:
        self.model = model  # vectors of another model are not searchable (a re-embed runs)

    def __call__(self, conn: sqlite3.Connection) -> IndexDelta | None:
        notes = conn.execute("SELECT kind, a, b, c FROM temp.index_changes").fetchall()
        if not notes:
            return None
        conn.execute("DELETE FROM temp.index_changes")
        return self.current(conn, notes)

    def since(self, conn: sqlite3.Connection, position: int) -> tuple[IndexDelta, int]:
        """Current values of every key the durable log (migration 0008) noted after
        ``position``, and how many keys that was: what a checkpoint saved at ``position``
        lacks. Run it inside one read transaction, so the notes and the values agree."""
        cursor = conn.execute(
            "SELECT kind, a, b, nullif(c, '') FROM main.index_log WHERE id > ?", (position,)
        )
        read = 0

        def notes() -> Iterator[Sequence[object]]:
            # row by row, not fetchall(): one C call over a million notes kept the GIL
            # from the event loop for whole seconds at a start
            nonlocal read
            for note in cursor:
                read += 1
                yield note

        return self.current(conn, notes()), read

    def current(self, conn: sqlite3.Connection, notes: Iterable[Sequence[object]]) -> IndexDelta:
        """The current values of the keys ``notes`` name: (kind, a, b, c) as the
        triggers write them. Values are read, never taken from the notes, so reading a key
        twice, or after it changed again, gives the same delta."""
        rows: set[int] = set()
        texts: set[int] = set()
        vectors: set[int] = set()
        edges: set[Edge] = set()
        for kind, a, b, c in notes:
            seq = int(cast(int, a))
            if kind == EDGE:
                edges.add((seq, int(cast(int, b)), str(c)))
            elif kind == VECTOR:
                vectors.add(seq)
            else:
                rows.add(seq)
                if kind == TEXT:
                    texts.add(seq)
        delta = IndexDelta()
        self._rows(conn, rows, delta)
        self._texts(conn, texts - set(delta.gone), delta)
        self._vectors(conn, vectors, delta)
        self._edges(conn, edges, delta)
        return delta

    @staticmethod
    def _rows(conn: sqlite3.Connection, seqs: set[int], delta: IndexDelta) -> None:
        found: list[ColumnRow] = []
        for chunk in _chunks(sorted(seqs)):
            found.extend(
                tuple(r)
                for r in conn.execute(
                    f"SELECT {COLUMN_SQL} FROM main.memories WHERE seq IN ({marks(chunk)})",
                    chunk,
                )
            )
        delta.rows = found
        delta.gone = sorted(seqs - {r[0] for r in found})

    @staticmethod
    def _texts(conn: sqlite3.Connection, seqs: set[int], delta: IndexDelta) -> None:
        for chunk in _chunks(sorted(seqs)):
            for seq, content, summary, concepts, when in conn.execute(
                "SELECT rowid, content, summary, concepts, when_text FROM main.memories_fts"
                f" WHERE rowid IN ({marks(chunk)})",
                chunk,
            ):
                delta.texts.append((int(seq), analyze(content, summary, concepts, when)))

    def _vectors(self, conn: sqlite3.Connection, seqs: set[int], delta: IndexDelta) -> None:
        kept: list[int] = []
        blobs: list[bytes] = []
        for chunk in _chunks(sorted(seqs)):
            for seq, model, dim, blob in conn.execute(
                "SELECT seq, model, dim, vector FROM main.memory_vectors"
                f" WHERE seq IN ({marks(chunk)})",
                chunk,
            ):
                if model != self.model:
                    continue
                if whole_intact(blob, int(dim)):
                    kept.append(int(seq))
                    blobs.append(blob)
                else:
                    delta.damaged += 1
        delta.vector_seqs = kept
        delta.vectors_gone = sorted(seqs - set(kept))
        if blobs:
            # one copy of the joined bytes: np.vstack of 100k small arrays held the GIL
            # for 0.4 s at a start's replay (every blob here is whole_intact, one dim)
            joined = bytearray().join(blobs)  # writable, unlike bytes
            delta.vectors = np.frombuffer(joined, dtype=np.float32).reshape(len(blobs), -1)
        found: set[int] = set()
        for chunk in _chunks(sorted(seqs)):
            for seq, model, dim, count, blob in conn.execute(
                "SELECT seq, model, dim, count, vectors FROM main.memory_passages"
                f" WHERE seq IN ({marks(chunk)})",
                chunk,
            ):
                if embedding_model(model) != self.model:  # any recipe of it is searched
                    continue
                if len(matrix := decode(blob, int(count), int(dim))):
                    found.add(int(seq))
                    delta.passages.append((int(seq), matrix))
                elif count:
                    delta.damaged += 1
        delta.passages_gone = sorted(seqs - found)

    @staticmethod
    def _edges(conn: sqlite3.Connection, edges: set[Edge], delta: IndexDelta) -> None:
        found: dict[Edge, float] = {}
        ordered = _by_source(edges)
        for start in range(0, len(ordered), _CHUNK // 3):
            chunk = ordered[start : start + _CHUNK // 3]
            params = [v for edge in chunk for v in edge]
            for source, target, relation, strength in conn.execute(edges_sql(len(chunk)), params):
                found[(int(source), int(target), str(relation))] = float(strength)
        delta.edges = [(s, t, r, w) for (s, t, r), w in found.items()]
        delta.edges_gone = [edge for edge in ordered if edge not in found]


def _by_source(edges: set[Edge]) -> list[Edge]:
    """The edges in (source, target) order, so the seeks walk the index in order. Not
    ``sorted(edges)``: one C call over 600k tuples held the GIL for 1.9 s at a start,
    and every request waited; numpy's sort of two int arrays runs without it."""
    items = list(edges)
    sources = np.fromiter((e[0] for e in items), dtype=np.int64, count=len(items))
    targets = np.fromiter((e[1] for e in items), dtype=np.int64, count=len(items))
    return [items[i] for i in np.lexsort((targets, sources)).tolist()]


def edges_sql(count: int) -> str:
    """The current rows of ``count`` (source, target, relation) keys, one index seek each.

    Not ``(source_seq, target_seq, relation) IN (VALUES ...)``: SQLite 3.40 answers that
    with a scan of the whole table, which at a million memories (6M edges) took 0.9 s in
    every write transaction that touched an edge, and 8 s to replay 1,512 logged edges.
    The CROSS JOIN makes the key list the outer loop, so each key is one seek."""
    values = ",".join("(?, ?, ?)" for _ in range(count))
    return (
        f"WITH wanted (s, t, r) AS (VALUES {values})"
        " SELECT a.source_seq, a.target_seq, a.relation, a.strength"
        " FROM wanted CROSS JOIN main.associations AS a"
        " ON a.source_seq = wanted.s AND a.target_seq = wanted.t AND a.relation = wanted.r"
    )


def _chunks(seqs: Sequence[int]) -> Iterable[list[int]]:
    for start in range(0, len(seqs), _CHUNK):
        yield list(seqs[start : start + _CHUNK])
