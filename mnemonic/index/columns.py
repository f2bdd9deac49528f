"""The per-memory columns recall filters and ranks by, as numpy arrays indexed by seq.

``memories.seq`` is SQLite's integer primary key, dense from 1, so a column is a plain
array and a filter is a handful of vectorised comparisons producing ``allowed``: a bool
array indexed by seq that every entry point (full text, vectors, graph) takes instead of
running SQL. At a million memories the eight columns hold about 30 MB.

Thread safety: searches read the columns from worker threads while the event loop applies
changes. Growing replaces the whole :class:`_Arrays` bundle at once, so a reader that took
``self._arrays`` sees arrays of one capacity; a row changed under a running search gives
that search the old or the new value of a field, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mnemonic.distinct import distinct
from mnemonic.store.base import Filters
from mnemonic.store.models import MemoryState, MemoryType, Source
from mnemonic.timeutil import ensure_utc, from_db

STATES: tuple[str, ...] = ("", *(s.value for s in MemoryState))
"""State codes: the index in this tuple; 0 = no memory at this seq."""
TYPES: tuple[str, ...] = ("", *(t.value for t in MemoryType))
SOURCES: tuple[str, ...] = ("", *(s.value for s in Source))
_STATE = {name: code for code, name in enumerate(STATES) if name}
_TYPE = {name: code for code, name in enumerate(TYPES) if name}
_SOURCE = {name: code for code, name in enumerate(SOURCES) if name}

BoolArray = npt.NDArray[np.bool_]
SeqArray = npt.NDArray[np.int64]


COLUMN_SQL = "seq, project, type, source, state, timestamp, salience, significance, utility"
"""The ``memories`` columns a :data:`ColumnRow` holds, in order (for ``SELECT``)."""

ColumnRow = tuple[int, str, str, str, str, str, float, float, float]
"""One ``memories`` row as ``SELECT {COLUMN_SQL}`` returns it (timestamp as stored)."""


def epoch_seconds(stored: Sequence[str]) -> npt.NDArray[np.float64]:
    """Stored timestamps (``timeutil.to_db``: ISO 8601, microseconds, UTC) as seconds
    since the epoch, equal to ``datetime.timestamp()`` of the same value, so a filter's
    ``since`` compares here exactly as the text comparison does in SQL."""
    plain = [text[:26] if text.endswith("+00:00") and len(text) == 32 else "" for text in stored]
    out = np.empty(len(stored), dtype=np.float64)
    if all(plain):
        micros = np.array(plain, dtype="datetime64[us]").astype(np.int64)
        out[:] = micros / 1_000_000
        return out
    for i, text in enumerate(stored):  # an unusual stored form: parse it the slow way
        out[i] = ensure_utc(from_db(text)).timestamp()
    return out


@dataclass(frozen=True, slots=True)
class Traits:
    """What ranking needs of one candidate, read from the columns (no SQL)."""

    type: str
    source: str
    state: str
    timestamp: float  # seconds since the epoch, UTC
    salience: float
    significance: float
    utility: float


@dataclass(frozen=True, slots=True)
class ColumnView:
    """The grouping columns as one bundle of one capacity, for aggregate reads (counts by
    state, type, source or project; spans of time) in a worker thread. The arrays are the
    live ones, not copies: read them, never write; a row changed meanwhile reads old or
    new. ``projects`` holds the names known when the view was taken (a code past its end
    is a project created since)."""

    state: npt.NDArray[np.int8]
    type: npt.NDArray[np.int8]
    source: npt.NDArray[np.int8]
    project: npt.NDArray[np.int32]
    timestamp: npt.NDArray[np.float64]
    projects: tuple[str, ...]


@dataclass(slots=True)
class _Arrays:
    state: npt.NDArray[np.int8]
    type: npt.NDArray[np.int8]
    source: npt.NDArray[np.int8]
    project: npt.NDArray[np.int32]
    timestamp: npt.NDArray[np.float64]
    salience: npt.NDArray[np.float32]
    significance: npt.NDArray[np.float32]
    utility: npt.NDArray[np.float32]

    @classmethod
    def empty(cls, capacity: int) -> _Arrays:
        return cls(
            state=np.zeros(capacity, np.int8),
            type=np.zeros(capacity, np.int8),
            source=np.zeros(capacity, np.int8),
            project=np.full(capacity, -1, np.int32),
            timestamp=np.zeros(capacity, np.float64),
            salience=np.zeros(capacity, np.float32),
            significance=np.zeros(capacity, np.float32),
            utility=np.ones(capacity, np.float32),
        )

    @property
    def capacity(self) -> int:
        return len(self.state)

    def grown(self, capacity: int) -> _Arrays:
        bigger = _Arrays.empty(capacity)
        n = self.capacity
        for name in _FIELDS:
            getattr(bigger, name)[:n] = getattr(self, name)
        return bigger

    @property
    def nbytes(self) -> int:
        return sum(int(getattr(self, name).nbytes) for name in _FIELDS)


_FIELDS = (
    "state",
    "type",
    "source",
    "project",
    "timestamp",
    "salience",
    "significance",
    "utility",
)


class MemoryColumns:
    """Every memory's filter and ranking fields, kept current by the change feed."""

    def __init__(self, capacity: int = 1024) -> None:
        self._arrays = _Arrays.empty(max(capacity, 16))
        self._projects: dict[str, int] = {}
        self._project_names: list[str] = []
        self._project_seqs: dict[int, SeqArray] = {}  # cached per project; dropped on change
        self._count = 0

    def __len__(self) -> int:
        """How many seqs hold a memory (any state)."""
        return self._count

    @property
    def capacity(self) -> int:
        return self._arrays.capacity

    @property
    def nbytes(self) -> int:
        return self._arrays.nbytes

    def _ensure(self, seq: int) -> _Arrays:
        arrays = self._arrays
        if seq < arrays.capacity:
            return arrays
        # 1.25x, not 2x: a doubling at a million memories would hold 15 MB of empty rows
        capacity = max(seq + 1, arrays.capacity + arrays.capacity // 4 + 1024)
        self._arrays = arrays.grown(capacity)
        return self._arrays

    def _project_code(self, project: str) -> int:
        code = self._projects.get(project)
        if code is None:
            code = self._projects[project] = len(self._projects)
            self._project_names.append(project)
        return code

    def project_of(self, seq: int) -> str | None:
        arrays = self._arrays
        if not 0 <= seq < arrays.capacity or arrays.state[seq] == 0:
            return None
        return self._project_names[int(arrays.project[seq])]

    def view(self) -> ColumnView:
        arrays = self._arrays
        return ColumnView(
            state=arrays.state,
            type=arrays.type,
            source=arrays.source,
            project=arrays.project,
            timestamp=arrays.timestamp,
            projects=tuple(self._project_names),
        )

    def seqs(self) -> SeqArray:
        """Every seq that holds a memory, ascending."""
        return np.flatnonzero(self._arrays.state != 0)

    def upsert(self, rows: Sequence[ColumnRow]) -> None:
        """Add or replace memories from their rows; vectorised, so the start-up load of a
        million rows costs a few array assignments per chunk, not a call per row."""
        if not rows:
            return
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        arrays = self._ensure(int(seqs.max()))
        codes = np.fromiter(
            (self._project_code(r[1]) for r in rows), dtype=np.int32, count=len(rows)
        )
        self._count += int(np.count_nonzero(arrays.state[seqs] == 0))
        for code in {*arrays.project[seqs].tolist(), *codes.tolist()}:
            self._project_seqs.pop(int(code), None)
        arrays.project[seqs] = codes
        arrays.type[seqs] = [_TYPE.get(r[2], 0) for r in rows]
        arrays.source[seqs] = [_SOURCE.get(r[3], 0) for r in rows]
        arrays.timestamp[seqs] = epoch_seconds([r[5] for r in rows])
        arrays.salience[seqs] = [r[6] for r in rows]
        arrays.significance[seqs] = [r[7] for r in rows]
        arrays.utility[seqs] = [r[8] for r in rows]
        arrays.state[seqs] = [_STATE[r[4]] for r in rows]  # last: the row is whole first

    def remove(self, seqs: Sequence[int]) -> None:
        """The memories at ``seqs`` are gone (purged): no filter allows them any more."""
        arrays = self._arrays
        for seq in seqs:
            if seq >= arrays.capacity or arrays.state[seq] == 0:
                continue
            arrays.state[seq] = 0
            self._count -= 1
            self._project_seqs.pop(int(arrays.project[seq]), None)
            arrays.project[seq] = -1

    def has(self, seq: int) -> bool:
        arrays = self._arrays
        return 0 <= seq < arrays.capacity and bool(arrays.state[seq] != 0)

    def mask(self, filters: Filters | None) -> BoolArray:
        """``allowed``: True at each seq whose memory passes ``filters`` (None = present)."""
        arrays = self._arrays
        mask: BoolArray = arrays.state != 0
        if filters is None:
            return mask
        if filters.project is not None:
            code = self._projects.get(filters.project)
            if code is None:
                return np.zeros(arrays.capacity, dtype=np.bool_)
            mask &= arrays.project == code
        for values, column, codes, size in (
            (filters.states, arrays.state, _STATE, len(STATES)),
            (filters.types, arrays.type, _TYPE, len(TYPES)),
            (filters.sources, arrays.source, _SOURCE, len(SOURCES)),
        ):
            if values is not None:
                lookup = np.zeros(size, dtype=np.bool_)
                for value in values:
                    code = codes.get(str(value))
                    if code is not None:
                        lookup[code] = True
                mask &= lookup[column]
        if filters.since is not None:
            mask &= arrays.timestamp >= ensure_utc(filters.since).timestamp()
        if filters.until is not None:
            mask &= arrays.timestamp <= ensure_utc(filters.until).timestamp()
        if filters.min_salience is not None:
            mask &= arrays.salience >= np.float32(filters.min_salience)
        return mask

    def project_seqs(self, project: str) -> SeqArray:
        """The seqs of one project's memories (any state), cached until it changes: a
        project-scoped scan gathers these rows instead of reading every row."""
        code = self._projects.get(project)
        if code is None:
            return np.zeros(0, dtype=np.int64)
        cached = self._project_seqs.get(code)
        if cached is None:
            arrays = self._arrays
            cached = np.flatnonzero((arrays.project == code) & (arrays.state != 0))
            self._project_seqs[code] = cached
        return cached

    def traits(self, seq: int) -> Traits | None:
        arrays = self._arrays
        if not 0 <= seq < arrays.capacity or arrays.state[seq] == 0:
            return None
        return Traits(
            type=TYPES[int(arrays.type[seq])],
            source=SOURCES[int(arrays.source[seq])],
            state=STATES[int(arrays.state[seq])],
            timestamp=float(arrays.timestamp[seq]),
            salience=float(arrays.salience[seq]),
            significance=float(arrays.significance[seq]),
            utility=float(arrays.utility[seq]),
        )

    # ---- snapshots (``index/snapshot.py``) ------------------------------------------------
    def export(self) -> tuple[dict[str, npt.NDArray[np.generic]], list[str]]:
        """Copies of the column arrays (by field name) and the project names by code, for a
        snapshot. Rows of removed (purged) memories are blanked and the names of projects
        no memory uses any more left out, so a snapshot keeps nothing of a purged memory."""
        arrays = self._arrays
        held = arrays.state != 0
        blank = _Arrays.empty(arrays.capacity)
        out: dict[str, npt.NDArray[np.generic]] = {}
        for name in _FIELDS:
            column = getattr(blank, name)
            column[held] = getattr(arrays, name)[held]
            out[name] = column
        used = distinct(arrays.project[held])
        used = used[used >= 0]
        recode = np.full(len(self._project_names) + 1, -1, np.int32)
        recode[used] = np.arange(len(used), dtype=np.int32)
        out["project"] = recode[out["project"]]  # -1 stays -1 (the last slot)
        return out, [self._project_names[int(code)] for code in used]

    @classmethod
    def restore(
        cls, arrays: dict[str, npt.NDArray[np.generic]], projects: Sequence[str]
    ) -> MemoryColumns:
        """Columns from :meth:`export`'s output, which the caller has checked (dtypes,
        equal lengths, codes in range: ``snapshot.py``); the arrays are adopted."""
        columns = cls(capacity=0)
        columns._arrays = _Arrays(**{name: arrays[name] for name in _FIELDS})  # type: ignore[arg-type]
        columns._project_names = list(projects)
        columns._projects = {name: code for code, name in enumerate(columns._project_names)}
        columns._count = int(np.count_nonzero(columns._arrays.state))
        return columns

    def describe(self) -> dict[str, object]:
        return {
            "kind": "numpy-columns",
            "memories": self._count,
            "projects": len(self._projects),
            "bytes": self.nbytes,
        }
