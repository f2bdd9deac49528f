"""The recall index saved as a checkpoint, and loaded at the next start with the changes
made since replayed onto it.

Why: at a million memories building the index from SQLite takes minutes (tokenising every
text ~1 min, the HNSW graph ~20 min); loading arrays saved earlier takes seconds.

When it is saved: in the background (``index/checkpoints.py``), after a build from SQLite
and once enough has changed, and at a stop when that fits the stop's grace period. Every
change since is noted in the durable log of migration 0008 (``index_log``) by triggers on
the tables the index copies, whoever writes (the daemon, another process, an offline
tool). A start loads the checkpoint and replays the keys the log noted after it: their
current values are read again, so a replay is idempotent. A crash or a stop that had no
time to save therefore costs a replay, not a build.

When it is used: the checkpoint records the database's random store id, its own random
token and the log position it was taken at; the database records the token and position
of the last checkpoint saved (``index_checkpoint``), in the same transaction that prunes
the log up to it. Anything else (another store, an older checkpoint, a restored backup)
means a build from SQLite. The snapshot is also refused when the embedding model,
dimension or format differ, or when any file fails its checks, and it is deleted then.

Purges: it holds vectors and postings derived from memory content, so a purge deletes it
(the next checkpoint has nothing of the purged memory). Removed columns rows, vectors,
sign bits and postings are blanked or folded out first; usearch keeps a removed vector's
bytes in its file until the slot is reused, so an HNSW index that lost memories is not
saved until its freed slots are overwritten (``HnswVectors.scrub``, run after a purge).

Format: a folder holding ``meta.json`` (format version, store, token, log position, model,
dim, counts, and per file its dtype, shape, size and SHA-256) and one ``.npy`` file per
array, written and read with ``allow_pickle=False``; an HNSW vector index as usearch's own
file. It is written into a temporary folder beside the target, each file synced, then
renamed into place; files are 0600 and the folder 0700. A load never trusts the files:
sizes and checksums first (usearch is only handed a file whose checksum matches), then
dtypes, shapes, ranges, monotone offsets and counts; any doubt returns None (logged at
info) and never raises.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from threading import Event
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from mnemonic.index.builder import Built
from mnemonic.index.columns import SOURCES, STATES, TYPES, MemoryColumns
from mnemonic.index.fulltext import FullTextIndex
from mnemonic.index.graph import MAX_SEQ, RELATIONS, AssociationGraph, Csr
from mnemonic.index.passages import PassageVectors
from mnemonic.index.vectors import AdaptiveVectors, ExactVectors
from mnemonic.private_files import PRIVATE_MODE, restrict

if TYPE_CHECKING:
    from mnemonic.index.hnsw import HnswVectors
    from mnemonic.index.recall_index import RecallIndex

log = logging.getLogger(__name__)

FORMAT = 3  # 2: validity by checkpoint token and log position (0008); 3: passages (0009)
META = "meta.json"
HNSW_FILE = "vectors.usearch"
PASSAGES_HNSW_FILE = "passages.usearch"
_META_MAX_BYTES = 64 << 20

Array = npt.NDArray[Any]

_COLUMN_DTYPES: dict[str, np.dtype[Any]] = {
    name: a.dtype for name, a in MemoryColumns().export()[0].items()
}
_TEXT_DTYPES: dict[str, np.dtype[Any]] = {
    "keys": np.dtype(np.int64),
    "offsets": np.dtype(np.int64),
    "seqs": np.dtype(np.int32),
    "freqs": np.dtype(np.float32),
    "present": np.dtype(np.bool_),
    "lengths": np.dtype(np.int32),
    "documents": np.dtype(np.int64),
}
_GRAPH_DTYPES: dict[str, np.dtype[Any]] = {
    "indptr": np.dtype(np.int64),
    "other": np.dtype(np.int32),
    "relation": np.dtype(np.int8),
    "strength": np.dtype(np.float32),
}
_EXACT_DTYPES: dict[str, np.dtype[Any]] = {
    "matrix": np.dtype(np.float32),
    "present": np.dtype(np.bool_),
}
_WHAT = {
    "columns": "per-memory filter and ranking columns indexed by seq (index/columns.py)",
    "fulltext": "BM25 base segment: sorted term keys, CSR offsets, seqs, frequencies;"
    " per-seq presence and token counts (index/fulltext.py)",
    "graph": "association CSR, both directions (index/graph.py)",
    "vectors": "unit float32 vectors indexed by seq and their presence (index/vectors.py)",
    "hnsw": "usearch HNSW index keyed by seq (index/hnsw.py)",
    "signs": "sign bits of each HNSW vector by seq, for filtered scans (index/hnsw.py)",
    "passages": "passage rows: unit float32 vectors by row, presence, and the owning seq of"
    " each row (-1: free) (index/passages.py)",
}


class NotSaved(Exception):
    """The index is in no state to be saved (not ready, a switch under way, a purge); the
    next start builds from SQLite, which is always correct."""


class _Bad(Exception):
    """A snapshot file failed a check (the message says which)."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Where the database stands: its random store id, the token and log position of the
    last checkpoint saved, and the log's newest id (all notes up to it are written)."""

    store: str
    token: str | None
    position: int
    head: int

    @property
    def behind(self) -> int:
        """Changes (counted with repeats) since the last checkpoint: what a start replays."""
        return max(0, self.head - self.position)


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    folder: Path
    position: int
    bytes: int
    seconds: float
    memories: int
    vectors: int
    edges: int


def read_checkpoint(conn: sqlite3.Connection) -> Checkpoint | None:
    """The database's checkpoint record; None before migration 0008 (a read-only old file)."""
    try:
        store = conn.execute("SELECT store FROM index_generation WHERE id = 1").fetchone()
        saved = conn.execute("SELECT token, position FROM index_checkpoint WHERE id = 1").fetchone()
        head = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'index_log'").fetchone()
    except sqlite3.OperationalError:
        return None
    if store is None or saved is None:
        return None
    position = int(saved[1])
    return Checkpoint(
        store=str(store[0]),
        token=None if saved[0] is None else str(saved[0]),
        position=position,
        head=position if head is None else max(position, int(head[0])),
    )


def record_checkpoint(conn: sqlite3.Connection, token: str | None, position: int) -> None:
    """Make ``token`` at ``position`` the checkpoint a start may use, and prune the log up
    to it, in one transaction (``token`` None: no checkpoint, the log is only pruned)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "UPDATE index_checkpoint SET token = ?, position = ? WHERE id = 1", (token, position)
        )
        conn.execute("DELETE FROM index_log WHERE id <= ?", (position,))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def forget_checkpoints(conn: sqlite3.Connection) -> int:
    """No checkpoint is valid any more and the log is pruned (the setting is off): the
    notes would only pile up. Returns how many were pruned."""
    point = read_checkpoint(conn)
    if point is None:
        return 0
    record_checkpoint(conn, None, point.head)
    return point.behind


# ---- saving ---------------------------------------------------------------------------------


def save_current(
    index: RecallIndex, folder: Path, conn: sqlite3.Connection, stop: Event | None = None
) -> SnapshotInfo:
    """Save ``index`` as the new checkpoint and prune the log behind it. Run it on the
    writer's thread with the write lock held (``Database.run_maintenance``): no write can
    commit, so the log position read first is exactly the state the index reflects.
    ``stop`` set between two files abandons the save (the daemon is stopping)."""
    point = read_checkpoint(conn)
    if point is None:
        raise NotSaved("the database has no index_log table")
    token = secrets.token_hex(16)
    info = save_snapshot(
        index, folder, store=point.store, token=token, position=point.head, stop=stop
    )
    record_checkpoint(conn, token, point.head)
    return info


def save_snapshot(
    index: RecallIndex,
    folder: Path,
    *,
    store: str,
    token: str,
    position: int,
    stop: Event | None = None,
) -> SnapshotInfo:
    """Write ``index`` to ``folder`` as of log ``position`` (replacing any snapshot there).

    The caller guarantees nothing changes the index meanwhile. Overlays and deltas are
    folded in first, so only base arrays are written."""

    def go_on() -> None:
        if stop is not None and stop.is_set():
            raise NotSaved("the daemon is stopping")

    started = time.perf_counter()
    if not index.ready:
        raise NotSaved(f"the index is {index.state}")
    vectors = index.vectors
    active = vectors.active
    passages = index.passages.vectors
    for what, each in (("vector", vectors), ("passage", passages)):
        if each.switching:
            raise NotSaved(f"the {what} index is moving to HNSW")
        if isinstance(each.active, ExactVectors) != (len(each) <= each.exact_max):
            raise NotSaved(f"the {what} index is not the kind a start would build")
        if not isinstance(each.active, ExactVectors) and index.forgot_since_build:
            raise NotSaved(f"the HNSW {what} index still holds purged vectors")
    columns, projects = index.columns.export()
    text = index.fulltext.export()
    csr = index.graph.export()
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        tmp.mkdir(mode=0o700, parents=False)
        parts: dict[str, dict[str, object]] = {}
        for name, array in columns.items():
            parts[f"columns.{name}"] = _write_array(tmp, f"columns.{name}", array, "columns")
        for name, array in text.items():
            go_on()
            parts[f"fulltext.{name}"] = _write_array(tmp, f"fulltext.{name}", array, "fulltext")
        for name in _GRAPH_DTYPES:
            go_on()
            array = getattr(csr, name)
            parts[f"graph.{name}"] = _write_array(tmp, f"graph.{name}", array, "graph")
        go_on()
        parts.update(_write_vectors(tmp, active))
        go_on()
        parts.update(_write_vectors(tmp, passages.active, "passages", PASSAGES_HNSW_FILE))
        parts["passages.owner"] = _write_array(
            tmp, "passages.owner", index.passages.owner(), "passages"
        )
        meta = {
            "format": FORMAT,
            "what": "mnemonic recall index snapshot (mnemonic/index/snapshot.py)",
            "store": store,
            "token": token,
            "position": position,
            "model": index.model,
            "dim": index.dim,
            "created_at": time.time(),
            "vectors": vectors.kind,
            "passages": passages.kind,
            "projects": projects,
            "counts": {
                "memories": len(index.columns),
                "documents": index.fulltext.document_count,
                "vectors": len(vectors),
                "passages": len(passages),
                "edges": index.graph.edge_count,
            },
            "parts": parts,
        }
        _write_private(tmp / META, json.dumps(meta, indent=1).encode("utf-8"))
        _fsync_dir(tmp)
        go_on()
        _swap(tmp, folder)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    size = sum(p.stat().st_size for p in folder.iterdir())
    info = SnapshotInfo(
        folder=folder,
        position=position,
        bytes=size,
        seconds=time.perf_counter() - started,
        memories=len(index.columns),
        vectors=len(vectors),
        edges=index.graph.edge_count,
    )
    log.info(
        "recall index checkpoint saved in %.2f s (%.1f MB, log position %d)",
        info.seconds,
        info.bytes / 1e6,
        info.position,
    )
    return info


def _write_vectors(
    folder: Path,
    active: ExactVectors | HnswVectors,
    name: str = "vectors",
    hnsw_file: str = HNSW_FILE,
) -> dict[str, dict[str, object]]:
    """The whole vectors (``name`` vectors) or the passage rows (``passages``)."""
    parts: dict[str, dict[str, object]] = {}
    if isinstance(active, ExactVectors):
        matrix, present = active.export()
        parts[f"{name}.matrix"] = _write_array(folder, f"{name}.matrix", matrix, name)
        parts[f"{name}.present"] = _write_array(folder, f"{name}.present", present, name)
        return parts
    path = folder / hnsw_file
    # usearch's own file; HnswVectors.save syncs it. Not exclusive: the caller guarantees
    # no change meanwhile, and queries keep searching during the save
    active.save(path, exclusive=False)
    restrict(path)
    parts[f"{name}.hnsw"] = {
        "file": hnsw_file,
        "bytes": path.stat().st_size,
        "sha256": _sha256(path),
        "what": _WHAT["hnsw"],
    }
    parts[f"{name}.signs"] = _write_array(folder, f"{name}.signs", active.signs, "signs")
    return parts


def _write_array(folder: Path, name: str, array: Array, part: str) -> dict[str, object]:
    path = folder / f"{name}.npy"
    array = np.ascontiguousarray(array)
    with _open_private(path) as f:
        np.save(f, array, allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    return {
        "file": path.name,
        "dtype": array.dtype.str,
        "shape": list(array.shape),
        "bytes": path.stat().st_size,
        "sha256": _sha256(path),
        "what": _WHAT[part],
    }


def _open_private(path: Path) -> Any:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_MODE)
    return os.fdopen(fd, "wb")


def _write_private(path: Path, data: bytes) -> None:
    with _open_private(path) as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _swap(tmp: Path, folder: Path) -> None:
    """Put ``tmp`` in ``folder``'s place. A directory cannot be renamed over a non-empty
    one, so an old snapshot is moved aside first; a crash in between leaves no snapshot
    (a build from SQLite), never a mixed one."""
    old = None
    if folder.exists():
        old = folder.with_name(f".{folder.name}.{os.getpid()}.{secrets.token_hex(4)}.old")
        os.rename(folder, old)
    os.rename(tmp, folder)
    _fsync_dir(folder.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def discard_snapshot(folder: Path) -> None:
    """Delete the snapshot and any leftover temporary folders beside it (a crash mid-save)."""
    targets = [folder, *folder.parent.glob(f".{folder.name}.*")]
    for path in targets:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists() or path.is_symlink():
            with contextlib.suppress(OSError):
                path.unlink()


# ---- loading --------------------------------------------------------------------------------


def load_snapshot(
    folder: Path, *, model: str, dim: int, exact_max: int, checkpoint: Checkpoint
) -> Built | None:
    """The index saved in ``folder`` if it is current and sound, else None (logged at info
    with the reason). Never raises for a bad or missing file."""
    started = time.perf_counter()
    if not (folder / META).is_file():
        log.info("no recall index snapshot: building from the database")
        return None
    try:
        built = _load(folder, model, dim, exact_max, checkpoint)
    except _Bad as exc:
        log.info("recall index snapshot not used (%s): building from the database", exc)
        return None
    except Exception as exc:  # noqa: BLE001 - a file numpy or usearch could not read
        log.info(
            "recall index snapshot not used (%s: %s): building from the database",
            type(exc).__name__,
            exc,
        )
        return None
    log.info(
        "recall index loaded from its snapshot in %.2f s (%d memories, %d vectors)",
        time.perf_counter() - started,
        len(built.columns),
        len(built.vectors),
    )
    return built


def _load(folder: Path, model: str, dim: int, exact_max: int, checkpoint: Checkpoint) -> Built:
    meta = _read_meta(folder / META)
    _expect(meta.get("format") == FORMAT, f"format {meta.get('format')!r}, not {FORMAT}")
    _expect(meta.get("store") == checkpoint.store, "saved from another database")
    _expect(
        checkpoint.token is not None and meta.get("token") == checkpoint.token,
        "not the checkpoint the database last recorded",
    )
    _expect(
        meta.get("position") == checkpoint.position,
        f"saved at log position {meta.get('position')!r}, the database's checkpoint is at"
        f" {checkpoint.position}",
    )
    _expect(meta.get("model") == model, "another embedding model")
    _expect(meta.get("dim") == dim, "another vector dimension")
    counts = meta.get("counts")
    parts = meta.get("parts")
    projects = meta.get("projects")
    _expect(isinstance(counts, dict) and isinstance(parts, dict), "meta.json lacks its parts")
    assert isinstance(counts, dict) and isinstance(parts, dict)
    _expect(
        isinstance(projects, list) and all(isinstance(p, str) for p in projects),
        "meta.json lacks the project names",
    )
    assert isinstance(projects, list)
    _expect(len(set(projects)) == len(projects), "project names repeat")

    columns = _columns(
        {n: _array(folder, parts, f"columns.{n}", d) for n, d in _COLUMN_DTYPES.items()},
        projects,
        counts,
    )
    fulltext = _fulltext(
        {n: _array(folder, parts, f"fulltext.{n}", d) for n, d in _TEXT_DTYPES.items()}, counts
    )
    graph = _graph(
        {n: _array(folder, parts, f"graph.{n}", d) for n, d in _GRAPH_DTYPES.items()}, counts
    )
    vectors = _vectors(folder, parts, meta.get("vectors"), dim, exact_max, counts)
    passages = _passages(folder, parts, meta.get("passages"), dim, exact_max, counts)
    return Built(
        columns=columns, fulltext=fulltext, vectors=vectors, graph=graph, passages=passages
    )


def _expect(condition: bool, why: str) -> None:
    if not condition:
        raise _Bad(why)


def _read_meta(path: Path) -> dict[str, Any]:
    _expect(path.stat().st_size <= _META_MAX_BYTES, "meta.json is too large")
    try:
        meta = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise _Bad(f"meta.json is not JSON ({exc})") from exc
    _expect(isinstance(meta, dict), "meta.json is not an object")
    assert isinstance(meta, dict)
    return meta


def _checked_file(folder: Path, parts: dict[str, Any], name: str) -> tuple[Path, dict[str, Any]]:
    """The part's file, after its size and SHA-256 match what meta.json recorded."""
    entry = parts.get(name)
    _expect(isinstance(entry, dict), f"{name} is missing from meta.json")
    assert isinstance(entry, dict)
    file = entry.get("file")
    _expect(
        isinstance(file, str) and file == Path(file).name and not file.startswith("."),
        f"{name}: bad file name",
    )
    assert isinstance(file, str)
    path = folder / file
    _expect(path.is_file() and not path.is_symlink(), f"{file} is missing")
    _expect(path.stat().st_size == entry.get("bytes"), f"{file} has the wrong size")
    _expect(_sha256(path) == entry.get("sha256"), f"{file} fails its checksum")
    return path, entry


def _array(folder: Path, parts: dict[str, Any], name: str, dtype: np.dtype[Any]) -> Array:
    path, entry = _checked_file(folder, parts, name)
    array = np.load(path, allow_pickle=False)
    _expect(isinstance(array, np.ndarray), f"{path.name} is not one array")
    _expect(array.dtype == dtype, f"{path.name} holds {array.dtype}, not {dtype}")
    _expect(list(array.shape) == entry.get("shape"), f"{path.name} has the wrong shape")
    _expect(array.ndim >= 1, f"{path.name} is a scalar")
    return np.ascontiguousarray(array)


def _in_range(array: Array, low: int, high: int) -> bool:
    """Every value in [low, high) (an empty array passes)."""
    return not len(array) or (int(array.min()) >= low and int(array.max()) < high)


def _columns(
    arrays: dict[str, Array], projects: list[str], counts: dict[str, Any]
) -> MemoryColumns:
    size = len(arrays["state"])
    _expect(
        all(a.ndim == 1 and len(a) == size for a in arrays.values()),
        "columns differ in length",
    )
    state = arrays["state"]
    _expect(_in_range(state, 0, len(STATES)), "a state code is out of range")
    _expect(_in_range(arrays["type"], 0, len(TYPES)), "a type code is out of range")
    _expect(_in_range(arrays["source"], 0, len(SOURCES)), "a source code is out of range")
    project = arrays["project"]
    held = state != 0
    _expect(_in_range(project[held], 0, len(projects)), "a project code is out of range")
    _expect(bool(np.all(project[~held] == -1)), "an empty row names a project")
    for name in ("timestamp", "salience", "significance", "utility"):
        _expect(bool(np.all(np.isfinite(arrays[name]))), f"column {name} is not finite")
    columns = MemoryColumns.restore(arrays, projects)
    _expect(len(columns) == counts.get("memories"), "the memory count differs")
    return columns


def _fulltext(arrays: dict[str, Array], counts: dict[str, Any]) -> FullTextIndex:
    keys, offsets = arrays["keys"], arrays["offsets"]
    seqs, freqs = arrays["seqs"], arrays["freqs"]
    present, lengths = arrays["present"], arrays["lengths"]
    _expect(keys.ndim == offsets.ndim == seqs.ndim == freqs.ndim == 1, "postings are not 1-D")
    _expect(len(offsets) == len(keys) + 1, "offsets do not match the keys")
    _expect(bool(np.all(keys[1:] > keys[:-1])), "term keys are not strictly ascending")
    _expect(int(offsets[0]) == 0 and int(offsets[-1]) == len(seqs), "offsets do not span")
    _expect(bool(np.all(offsets[1:] >= offsets[:-1])), "offsets are not monotone")
    _expect(len(freqs) == len(seqs), "frequencies do not match the seqs")
    _expect(present.ndim == lengths.ndim == 1 and len(present) == len(lengths), "bad lengths")
    _expect(_in_range(seqs, 0, len(present)), "a posting's seq is out of range")
    _expect(bool(np.all(present[seqs])), "a posting names a document not held")
    _expect(bool(np.all(np.isfinite(freqs))) and not (len(freqs) and freqs.min() <= 0), "bad freq")
    _expect(_in_range(lengths, 0, 2**31 - 1), "a document length is negative")
    documents = arrays["documents"]
    _expect(documents.shape == (1,), "bad document count")
    held = int(np.count_nonzero(present))
    _expect(0 <= int(documents[0]) <= held, "bad document count")
    _expect(held == counts.get("documents"), "the document count differs")
    return FullTextIndex.restore(arrays)


def _graph(arrays: dict[str, Array], counts: dict[str, Any]) -> AssociationGraph:
    indptr, other = arrays["indptr"], arrays["other"]
    relation, strength = arrays["relation"], arrays["strength"]
    _expect(all(a.ndim == 1 for a in arrays.values()), "graph arrays are not 1-D")
    _expect(len(indptr) >= 1 and int(indptr[0]) == 0, "bad graph offsets")
    _expect(int(indptr[-1]) == len(other), "graph offsets do not span")
    _expect(bool(np.all(indptr[1:] >= indptr[:-1])), "graph offsets are not monotone")
    _expect(len(relation) == len(strength) == len(other), "graph columns differ in length")
    _expect(len(other) % 2 == 0, "an edge lacks its reverse entry")
    _expect(_in_range(other, 0, MAX_SEQ + 1), "an edge's seq is out of range")
    _expect(_in_range(relation, 0, len(RELATIONS)), "a relation code is out of range")
    _expect(
        not len(strength) or (float(strength.min()) >= 0.0 and float(strength.max()) <= 1.0),
        "an edge strength is outside [0, 1]",
    )  # NaN fails both comparisons
    graph = AssociationGraph(Csr(indptr, other, relation, strength))
    _expect(graph.edge_count == counts.get("edges"), "the edge count differs")
    return graph


def _vectors(
    folder: Path,
    parts: dict[str, Any],
    kind: object,
    dim: int,
    exact_max: int,
    counts: dict[str, Any],
    name: str = "vectors",
) -> AdaptiveVectors:
    """Exact or HNSW, as a build from the database would choose for this many vectors
    (``name``: the whole vectors, or the passage rows)."""
    count = counts.get(name)
    _expect(isinstance(count, int) and count >= 0, f"bad {name} count")
    assert isinstance(count, int)
    vectors = AdaptiveVectors(dim, exact_max=exact_max)
    if kind == ExactVectors.kind:
        _expect(count <= exact_max, "past recall.vector_exact_max: a build makes an HNSW index")
        matrix = _array(folder, parts, f"{name}.matrix", _EXACT_DTYPES["matrix"])
        present = _array(folder, parts, f"{name}.present", _EXACT_DTYPES["present"])
        _expect(matrix.ndim == 2 and matrix.shape[1] == dim, "vectors have the wrong shape")
        _expect(present.ndim == 1 and len(present) == len(matrix), "vector presence differs")
        _expect(bool(np.all(np.isfinite(matrix))), "a vector is not finite")
        exact = ExactVectors.restore(matrix, present)
        _expect(len(exact) == count, "the vector count differs")
        vectors.adopt(exact)
        return vectors
    _expect(isinstance(kind, str) and kind.startswith("usearch-hnsw"), f"vectors {kind!r}")
    _expect(count > exact_max, "within recall.vector_exact_max: a build makes an exact index")
    path, _ = _checked_file(folder, parts, f"{name}.hnsw")
    from mnemonic.index.hnsw import HnswVectors  # usearch only at scale

    # a checkpoint from before the sign bits has none: HnswVectors reads them back
    signs = None
    if f"{name}.signs" in parts:
        signs = _array(folder, parts, f"{name}.signs", np.dtype(np.uint64))
    hnsw = HnswVectors.open(path, view=False, signs=signs)  # ValueError: signs don't match
    _expect(hnsw.dim == dim and hnsw.kind == kind, "the HNSW index differs from meta.json")
    _expect(len(hnsw) == count, "the vector count differs")
    vectors.adopt(hnsw)
    return vectors


def _passages(
    folder: Path,
    parts: dict[str, Any],
    kind: object,
    dim: int,
    exact_max: int,
    counts: dict[str, Any],
) -> PassageVectors:
    """The passage rows and their owners: every present row owned by a seq, no free row
    present, so a search never names a memory the rows do not belong to."""
    vectors = _vectors(folder, parts, kind, dim, exact_max, counts, "passages")
    owner = _array(folder, parts, "passages.owner", np.dtype(np.int64))
    _expect(owner.ndim == 1 and _in_range(owner, -1, MAX_SEQ), "passage owners out of range")
    owned = owner >= 0
    _expect(int(np.count_nonzero(owned)) == len(vectors), "passage owners and rows differ")
    if isinstance(vectors.active, ExactVectors):
        present = vectors.active.export()[1]
        length = max(len(present), len(owner))
        rows = np.zeros(length, dtype=np.bool_)
        rows[: len(present)] = present
        _expect(
            bool(np.array_equal(rows[: len(owner)], owned)) and not rows[len(owner) :].any(),
            "passage rows and their owners differ",
        )
    passages = PassageVectors(dim, exact_max=exact_max)
    passages.adopt(vectors, owner)
    return passages
