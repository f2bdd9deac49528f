"""Purge: the one way content leaves the store for good (DESIGN principle 4's exception).

Everything else keeps text: ``forget`` archives, ``amend`` records the old content, merges
keep their sources. A purge removes a memory and every copy of its text in one
``BEGIN IMMEDIATE`` transaction, then rewrites the file so the bytes are gone too:

* the ``memories`` row, its ``memories_fts`` row, its ``memory_vectors`` row and its
  ``memory_passages`` row;
* memories merged into it (``merged_into``): a near-duplicate holds the same text, so a
  purge that left them would not remove what the caller asked to remove; and the
  consolidation gist a purged memory was merged into, which keeps every sentence of its
  sources verbatim (its other sources are merged into it, so they follow);
* every ``raw_memories`` row behind them: the raw observation of each, and the raw rows of
  exact duplicates that reinforced it (``raw_memories.memory_id``); for a project purge,
  every raw row of the project;
* ``memory_amendments`` (old and new texts), associations on either side, the
  ``file_memories`` row that maps a watched path to it;
* its membership of an episode: an episode left empty goes, one that keeps members loses
  its description (built from the purged text) and is described again by the episoder;
* its rows as a pattern's evidence (``abstraction_evidence``): a pattern left without
  evidence is demoted, then archived, by the next abstraction cycles;
* the dreamer's insights built from it (their text names terms and episode titles taken
  from their sources; the other sources stay) and every ``insight_sources`` row of the
  purged memories;
* retrieval logs that describe it: every ``retrieval_queries`` row that returned it, and
  (for purges of up to ``QUOTE_SCAN_MAX_CHARS`` of text) every query whose text quotes it,
  with their ``retrieval_feedback`` rows. A query's text is what the user typed, and
  typing the secret to find it is exactly how a purge starts.

Deleting rows is not enough: SQLite leaves deleted cells in free page space, the WAL keeps
the frames that wrote them, and FTS5 keeps old terms in index segments until they merge.
:meth:`SQLitePurger.compact` merges the FTS index (``optimize``), ``VACUUM``s (a fresh
copy of every live page; the file is truncated to it) and checkpoints with ``TRUNCATE``
(the WAL file goes to zero bytes). ``secure_delete`` is on for the purge itself, so even
a ``VACUUM`` that fails (it needs free disk for a second copy) leaves zeros where the
purged cells were.

A ``purge_audit`` row records that a purge happened, how it was asked for and how many
rows went: never ids, project names or text (see ``migrations/0003_purge_audit.sql``).
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mnemonic.store.consolidation import MERGE_META
from mnemonic.store.database import Database
from mnemonic.store.dreaming import CURSOR_META, QUERY_META, STRENGTHENED_META
from mnemonic.store.enrichment import WATERMARK_KEY as ENRICHMENT_WATERMARK_KEY
from mnemonic.store.episodes import WATERMARK_KEY as EPISODE_WATERMARK_KEY
from mnemonic.store.marks import lower_to_newest_memory, lower_to_newest_query
from mnemonic.timeutil import to_db, utcnow

log = logging.getLogger(__name__)

Scope = Literal["id", "ids", "query", "project"]

QUOTE_SCAN_MAX_CHARS = 64 * 1024
"""Up to this much purged text, every logged query is checked for quoting it (a Python
substring test per query: about 60 ms per 1 KB of text at 100k logged queries). A bigger
purge (a whole project) removes the queries that returned its memories, and for a project
purge the queries filtered to that project, but does not scan every query's text."""

MIN_QUOTE_CHARS = 4
"""Shorter query texts ("db", "ok") are not treated as quoting anything."""

FIRST_LINE_CHARS = 120


@dataclass(frozen=True, slots=True)
class PurgeItem:
    """A memory a purge would remove (or did), with the first line of its text to show."""

    id: str
    seq: int
    project: str
    state: str
    first_line: str


@dataclass(frozen=True, slots=True)
class PurgeCounts:
    memories: int = 0
    raw_memories: int = 0
    amendments: int = 0
    associations: int = 0
    queries: int = 0

    def __add__(self, other: PurgeCounts) -> PurgeCounts:
        return PurgeCounts(
            self.memories + other.memories,
            self.raw_memories + other.raw_memories,
            self.amendments + other.amendments,
            self.associations + other.associations,
            self.queries + other.queries,
        )


@dataclass(frozen=True, slots=True)
class Purged:
    """What one purge transaction removed. ``texts`` are the removed texts, held only so
    the caller can scrub query logs written while the purge ran; never stored or logged."""

    items: tuple[PurgeItem, ...]
    raw_ids: tuple[str, ...]
    query_ids: tuple[str, ...]
    counts: PurgeCounts
    texts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Compacted:
    vacuumed: bool
    checkpointed: bool


def first_line(text: str, limit: int = FIRST_LINE_CHARS) -> str:
    """The first non-empty line, shortened to ``limit`` characters."""
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def quoting(queries: Sequence[tuple[str, str]], texts: Sequence[str]) -> list[str]:
    """Ids of the ``(id, query text)`` pairs whose text occurs in any of ``texts``
    (case-insensitive; texts of fewer than ``MIN_QUOTE_CHARS`` characters never match)."""
    haystack = "\n".join(t.casefold() for t in texts)
    if not haystack:
        return []
    found: list[str] = []
    for query_id, text in queries:
        needle = text.strip().casefold()
        if len(needle) >= MIN_QUOTE_CHARS and needle in haystack:
            found.append(query_id)
    return found


class SQLitePurger:
    """Finds what a purge would remove, removes it, and makes the bytes go."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # ---- what would go ------------------------------------------------------------------
    async def preview(
        self, memory_ids: Sequence[str] = (), seqs: Sequence[int] = (), project: str | None = None
    ) -> tuple[list[PurgeItem], list[str]]:
        """The memories a purge of these ids, seqs or this project removes (merged copies
        included), and the ``memory_ids`` that name no memory."""

        def work(conn: sqlite3.Connection) -> tuple[list[PurgeItem], list[str]]:
            _select(conn, memory_ids, seqs, project)
            try:
                unknown = _unknown_ids(conn, memory_ids)
                return _items(conn), unknown
            finally:
                _drop_temp(conn)

        # temp tables are writes to the connection's own temp schema: a writer's job, but
        # no proof that the disk takes writes again (bookkeeping)
        return await self.db.run_write(work, bookkeeping=True)

    # ---- removing it --------------------------------------------------------------------
    async def purge(
        self,
        scope: Scope,
        memory_ids: Sequence[str] = (),
        seqs: Sequence[int] = (),
        project: str | None = None,
    ) -> Purged:
        """Remove the selected memories and everything that holds their text, in one
        transaction, and record the audit row. Unknown ids are ignored (the caller checks)."""

        def work(conn: sqlite3.Connection) -> Purged:
            conn.execute("PRAGMA secure_delete=ON")
            _select(conn, memory_ids, seqs, project)
            try:
                return _purge_selected(conn, scope, project)
            finally:
                _drop_temp(conn)

        return await self.db.run_write(work)

    async def scrub_queries(self, memory_ids: Sequence[str], texts: Sequence[str]) -> list[str]:
        """Remove query logs that name or quote purged memories (again: a recall that was
        answered before the purge may have recorded its query after it)."""

        def work(conn: sqlite3.Connection) -> list[str]:
            conn.execute("PRAGMA secure_delete=ON")
            _temp(conn)
            conn.executemany(
                "INSERT OR IGNORE INTO temp.purge_ids (id) VALUES (?)", [(i,) for i in memory_ids]
            )
            try:
                removed = _scrub_queries(conn, texts, None)
                lower_to_newest_query(conn, (QUERY_META,))
                return removed
            finally:
                _drop_temp(conn)

        return await self.db.run_write(work)

    async def compact(self) -> Compacted:
        """Merge the FTS index, VACUUM and truncate the WAL, so purged bytes leave the files.

        Run after the purge commits. ``VACUUM`` cannot run inside a transaction, so this is
        a maintenance unit on the writer (the write lock held, no ``BEGIN``). Its temporary
        copy goes to a file, not memory (``temp_store``), so a large store does not need
        its size in RAM. A failure (a full disk) is reported, not raised: the purge has
        committed and ``secure_delete`` already zeroed the purged cells.
        """
        await self.db.run_write(
            lambda conn: conn.execute("INSERT INTO memories_fts(memories_fts) VALUES('optimize')")
        )
        return await self.db.run_maintenance(_vacuum_and_checkpoint)

    async def audit(self, limit: int = 100) -> list[dict[str, object]]:
        """The newest audit rows (when, how asked, how many): no content, no ids."""

        def work(conn: sqlite3.Connection) -> list[dict[str, object]]:
            rows = conn.execute(
                "SELECT at, scope, memories, raw_memories, amendments, associations, queries"
                " FROM purge_audit ORDER BY id DESC LIMIT ?",
                (limit,),
            ).fetchall()
            return [dict(r) for r in rows]

        return await self.db.run_read(work)


# ---- the unit of work ---------------------------------------------------------------------


def _temp(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS purge_seqs (seq INTEGER PRIMARY KEY)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS purge_ids (id TEXT PRIMARY KEY)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS purge_raws (id TEXT PRIMARY KEY)")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS purge_queries (id TEXT PRIMARY KEY)")


def _drop_temp(conn: sqlite3.Connection) -> None:
    for name in ("purge_seqs", "purge_ids", "purge_raws", "purge_queries"):
        conn.execute(f"DROP TABLE IF EXISTS temp.{name}")


def _select(
    conn: sqlite3.Connection,
    memory_ids: Sequence[str],
    seqs: Sequence[int],
    project: str | None,
) -> None:
    """Fill ``temp.purge_seqs``/``purge_ids`` with the selection and, transitively, the
    memories merged into it, the consolidation gists built from it (whose other
    sources, merged into the gist, follow: near-duplicates of the purged text) and the
    insights drawn from it."""
    _temp(conn)
    gists = _has_table(conn, "memory_merges")
    insights = _has_table(conn, "insight_sources")
    conn.executemany(
        "INSERT OR IGNORE INTO temp.purge_seqs (seq) SELECT seq FROM memories WHERE id = ?",
        [(i,) for i in memory_ids],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO temp.purge_seqs (seq) SELECT seq FROM memories WHERE seq = ?",
        [(s,) for s in seqs],
    )
    if project is not None:
        conn.execute(
            "INSERT OR IGNORE INTO temp.purge_seqs (seq) SELECT seq FROM memories"
            " WHERE project = ?",
            (project,),
        )
    while True:
        conn.execute(
            "INSERT OR IGNORE INTO temp.purge_ids (id)"
            " SELECT id FROM memories WHERE seq IN (SELECT seq FROM temp.purge_seqs)"
        )
        added = conn.execute(
            "INSERT OR IGNORE INTO temp.purge_seqs (seq) SELECT seq FROM memories"
            " WHERE merged_into IN (SELECT id FROM temp.purge_ids)"
            " AND seq NOT IN (SELECT seq FROM temp.purge_seqs)"
        ).rowcount
        if gists:  # a consolidation gist holds every sentence of its sources verbatim
            added += conn.execute(
                "INSERT OR IGNORE INTO temp.purge_seqs (seq) SELECT gist_seq FROM memory_merges"
                " WHERE source_seq IN (SELECT seq FROM temp.purge_seqs) AND unmerged_at IS NULL"
                " AND gist_seq NOT IN (SELECT seq FROM temp.purge_seqs)"
            ).rowcount
        if insights:  # an insight names terms and episode titles taken from its sources
            added += conn.execute(
                "INSERT OR IGNORE INTO temp.purge_seqs (seq) SELECT insight_seq"
                " FROM insight_sources WHERE source_seq IN (SELECT seq FROM temp.purge_seqs)"
                " AND insight_seq NOT IN (SELECT seq FROM temp.purge_seqs)"
            ).rowcount
        if added <= 0:
            return


def _unknown_ids(conn: sqlite3.Connection, memory_ids: Sequence[str]) -> list[str]:
    return [
        i
        for i in dict.fromkeys(memory_ids)
        if conn.execute("SELECT 1 FROM temp.purge_ids WHERE id = ?", (i,)).fetchone() is None
    ]


def _items(conn: sqlite3.Connection) -> list[PurgeItem]:
    rows = conn.execute(
        "SELECT id, seq, project, state, content FROM memories"
        " WHERE seq IN (SELECT seq FROM temp.purge_seqs) ORDER BY seq"
    ).fetchall()
    return [
        PurgeItem(r["id"], int(r["seq"]), r["project"], r["state"], first_line(r["content"]))
        for r in rows
    ]


_IN_SEQS = "(SELECT seq FROM temp.purge_seqs)"
_IN_IDS = "(SELECT id FROM temp.purge_ids)"
_IN_RAWS = "(SELECT id FROM temp.purge_raws)"


def _purge_selected(conn: sqlite3.Connection, scope: Scope, project: str | None) -> Purged:
    items = _items(conn)
    texts = [t for (t,) in conn.execute(f"SELECT content FROM memories WHERE seq IN {_IN_SEQS}")]
    _select_raws(conn, project)
    texts += [
        t for (t,) in conn.execute(f"SELECT content FROM raw_memories WHERE id IN {_IN_RAWS}")
    ]
    for old, new in conn.execute(
        f"SELECT old_content, new_content FROM memory_amendments WHERE memory_id IN {_IN_IDS}"
    ):
        texts += [old, new]
    query_ids = _scrub_queries(conn, texts, project)
    amendments = conn.execute(
        f"DELETE FROM memory_amendments WHERE memory_id IN {_IN_IDS}"
    ).rowcount
    associations = conn.execute(
        f"DELETE FROM associations WHERE source_seq IN {_IN_SEQS} OR target_seq IN {_IN_SEQS}"
    ).rowcount
    if _has_table(conn, "file_memories"):
        conn.execute(f"DELETE FROM file_memories WHERE memory_id IN {_IN_IDS}")
    if _has_table(conn, "episode_memories"):
        _leave_episodes(conn)
    if _has_table(conn, "memory_merges"):  # merge records of a purged gist or source
        conn.execute(
            f"DELETE FROM memory_merges WHERE gist_seq IN {_IN_SEQS} OR source_seq IN {_IN_SEQS}"
        )
    if _has_table(conn, "abstraction_evidence"):  # a pattern's evidence (its memory goes)
        conn.execute(f"DELETE FROM abstraction_evidence WHERE memory_seq IN {_IN_SEQS}")
    if _has_table(conn, "insight_sources"):  # provenance of a purged insight or source
        conn.execute(
            f"DELETE FROM insight_sources WHERE insight_seq IN {_IN_SEQS}"
            f" OR source_seq IN {_IN_SEQS}"
        )
    conn.execute(f"DELETE FROM memory_vectors WHERE seq IN {_IN_SEQS}")
    if _has_table(conn, "memory_passages"):  # passage vectors of its sentences (0009)
        conn.execute(f"DELETE FROM memory_passages WHERE seq IN {_IN_SEQS}")
    conn.execute(f"DELETE FROM memories_fts WHERE rowid IN {_IN_SEQS}")
    memories = conn.execute(f"DELETE FROM memories WHERE seq IN {_IN_SEQS}").rowcount
    _lower_seq_marks(conn)
    raw_ids = [r for (r,) in conn.execute("SELECT id FROM temp.purge_raws ORDER BY id")]
    raws = conn.execute(f"DELETE FROM raw_memories WHERE id IN {_IN_RAWS}").rowcount
    counts = PurgeCounts(memories, raws, amendments, associations, len(query_ids))
    conn.execute(
        "INSERT INTO purge_audit (at, scope, memories, raw_memories, amendments, associations,"
        " queries) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (to_db(utcnow()), scope, memories, raws, amendments, associations, len(query_ids)),
    )
    return Purged(tuple(items), tuple(raw_ids), tuple(query_ids), counts, tuple(texts))


def _select_raws(conn: sqlite3.Connection, project: str | None) -> None:
    """The raw rows behind the purged memories (their own, and those of duplicates that
    reinforced them); for a project purge every raw row of the project. A raw row still
    named by a memory that stays is kept (the foreign key would refuse it anyway)."""
    conn.execute(
        "INSERT OR IGNORE INTO temp.purge_raws (id)"
        f" SELECT raw_id FROM memories WHERE seq IN {_IN_SEQS}"
        f" UNION SELECT id FROM raw_memories WHERE memory_id IN {_IN_IDS}"
    )
    if project is not None:
        conn.execute(
            "INSERT OR IGNORE INTO temp.purge_raws (id) SELECT id FROM raw_memories"
            " WHERE project = ?",
            (project,),
        )
    conn.execute(
        "DELETE FROM temp.purge_raws WHERE id IN"
        f" (SELECT raw_id FROM memories WHERE seq NOT IN {_IN_SEQS})"
    )


def _scrub_queries(
    conn: sqlite3.Connection, texts: Sequence[str], project: str | None
) -> list[str]:
    """Delete the query logs (and their feedback) that returned a purged memory, quote a
    purged text, or (project purge) were filtered to the purged project."""
    conn.execute(
        "INSERT OR IGNORE INTO temp.purge_queries (id) SELECT q.id FROM retrieval_queries q"
        " WHERE EXISTS (SELECT 1 FROM json_each(q.result_ids) j"
        f" WHERE j.value IN {_IN_IDS})"
    )
    if project is not None:
        conn.execute(
            "INSERT OR IGNORE INTO temp.purge_queries (id) SELECT id FROM retrieval_queries"
            " WHERE json_valid(filters) AND json_extract(filters, '$.project') = ?",
            (project,),
        )
    if texts and sum(len(t) for t in texts) <= QUOTE_SCAN_MAX_CHARS:
        logged = [(r[0], r[1]) for r in conn.execute("SELECT id, query FROM retrieval_queries")]
        conn.executemany(
            "INSERT OR IGNORE INTO temp.purge_queries (id) VALUES (?)",
            [(q,) for q in quoting(logged, texts)],
        )
    found = [q for (q,) in conn.execute("SELECT id FROM temp.purge_queries ORDER BY id")]
    if found:
        conn.execute(
            "DELETE FROM retrieval_feedback WHERE query_id IN (SELECT id FROM temp.purge_queries)"
        )
        conn.execute(
            "DELETE FROM retrieval_queries WHERE id IN (SELECT id FROM temp.purge_queries)"
        )
    return found


def _leave_episodes(conn: sqlite3.Connection) -> None:
    """Purged memories leave their episodes. An episode left empty goes (its title and
    summary were built from them); one that keeps members gets its count and span from
    them and is reopened with its description cleared, so the episoder describes it again
    from what is left, without the purged text."""
    touched = [
        r[0]
        for r in conn.execute(
            f"SELECT DISTINCT episode_id FROM episode_memories WHERE memory_seq IN {_IN_SEQS}"
        )
    ]
    conn.execute(f"DELETE FROM episode_memories WHERE memory_seq IN {_IN_SEQS}")
    now = to_db(utcnow())
    for episode_id in touched:
        count, first, last = conn.execute(
            "SELECT count(*), min(m.timestamp), max(m.timestamp) FROM episode_memories e"
            " JOIN memories m ON m.seq = e.memory_seq WHERE e.episode_id = ?",
            (episode_id,),
        ).fetchone()
        if not count:
            conn.execute("DELETE FROM episodes WHERE id = ?", (episode_id,))
            continue
        conn.execute(
            "UPDATE episodes SET memory_count = ?, started_at = ?, ended_at = ?,"
            " state = 'open', closed_at = NULL, title = '', summary = '', concepts = '[]',"
            " files = '[]', commands = '[]', described_by = 'heuristic', salience = 0,"
            " updated_at = ? WHERE id = ?",
            (count, first, last, now, episode_id),
        )


SEQ_MARKS = (
    EPISODE_WATERMARK_KEY,  # grouped into episodes through
    MERGE_META,  # compared for merges through
    ENRICHMENT_WATERMARK_KEY,  # enriched by the LLM through
    CURSOR_META,  # dreaming's replay window starts after
    STRENGTHENED_META,  # replay has strengthened neighbourhoods through
)
"""The ``system_meta`` values that mean "every memory up to this seq is done"."""


def _lower_seq_marks(conn: sqlite3.Connection) -> None:
    """The "done through" marks down to the newest rowid left (``store/marks.py``)."""
    lower_to_newest_memory(conn, SEQ_MARKS)
    lower_to_newest_query(conn, (QUERY_META,))


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


_CHECKPOINT_TRIES = 5


def _vacuum_and_checkpoint(conn: sqlite3.Connection) -> Compacted:
    vacuumed = False
    conn.execute("PRAGMA temp_store=FILE")
    try:
        conn.execute("VACUUM")
        vacuumed = True
    except sqlite3.Error as exc:
        log.warning("VACUUM after a purge failed (purged cells are zeroed, not compacted): %s", exc)
    finally:
        conn.execute("PRAGMA temp_store=MEMORY")
    checkpointed = False
    for _ in range(_CHECKPOINT_TRIES):
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            log.warning("checkpoint after a purge failed: %s", exc)
            break
        if not busy:
            checkpointed = True
            break
    if not checkpointed:
        log.warning("the WAL could not be truncated after a purge (a reader held it)")
    return Compacted(vacuumed, checkpointed)
