"""Full-text entry points at 100k and 1M memories: SQL BM25 vs tuned FTS5 vs in-memory BM25.

Fills a temp SQLite (production migrations) with synthetic developer memories from
``bench/latency.py`` straight through SQL: ``memories`` rows (project, state; no raw rows,
no vectors) and their ``memories_fts`` rows (summary = the first 12 words, concepts =
project, source and two words, when_text as the store writes it). Then, for the same
queries (half filtered by project, like bench/latency.py), per-query latency of:

  a   today's path: ``SQLiteStore.full_text`` (match budget 8000) through the async store
  b1  the same SQL with match budget 2000
  b2  the 3 rarest terms only
  b3  FTS5 ``ORDER BY rank LIMIT`` (rank = the same bm25 weights) inside a sub-query, the
      filter joined outside it (can return fewer than ``limit`` when the filter is narrow)
  c   ``FullTextIndex.search`` (every term, exact BM25 over the whole store)
  c8  ``FullTextIndex.search`` with match budget 8000 (should equal a)

plus the in-memory index's build time (tokenising vs arrays) and memory, and how much of
each variant's top 10 agrees with a's.

    python bench/fulltext.py [--sizes 100000,1000000] [--queries 300]

Not a test: it prints a table. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from mnemonic.config import StorageConfig
from mnemonic.index.fulltext import FullTextIndex, analyze
from mnemonic.recall.fts_query import query_terms
from mnemonic.store.base import Filters
from mnemonic.store.database import Database
from mnemonic.store.sqlite import SQLiteStore, _within_budget, match_any
from mnemonic.timeutil import when_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from latency import PROJECTS, iter_corpus, make_queries

LIMIT = 60
TOP = 10
CHUNK = 20_000


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(np.array(samples), q * 100)) if samples else 0.0


def fill(path: Path, n: int) -> None:
    db = Database(path, StorageConfig())
    asyncio.run(_open_close(db))  # the production migrations
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    started = time.perf_counter()
    mems: list[tuple[object, ...]] = []
    fts: list[tuple[object, ...]] = []

    def flush() -> None:
        conn.executemany(
            "INSERT INTO memories (seq, id, raw_id, content, content_hash, summary, concepts,"
            " type, source, project, significance, salience, timestamp, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, '', ?, ?, 'general', ?, ?, 0.5, 0.5, ?, ?, ?)",
            mems,
        )
        conn.executemany(
            "INSERT INTO memories_fts (rowid, content, summary, concepts, when_text)"
            " VALUES (?, ?, ?, ?, ?)",
            fts,
        )
        conn.commit()
        mems.clear()
        fts.clear()

    rng = random.Random(5)
    for seq, item in enumerate(iter_corpus(n), start=1):
        words = item.content.split()
        summary = " ".join(words[:12])
        concepts = [item.project, item.source, *rng.sample(words, min(2, len(words)))]
        ts = item.timestamp.isoformat()
        mems.append(
            (seq, f"m{seq}", f"r{seq}", item.content, summary, str(concepts), item.source,
             item.project, ts, ts, ts)
        )  # fmt: skip
        fts.append((seq, item.content, summary, " ".join(concepts), when_text(item.timestamp)))
        if len(mems) >= CHUNK:
            flush()
            if seq % 100_000 == 0:
                progress(f"  fill {seq:,}/{n:,} ({time.perf_counter() - started:.0f} s)")
    flush()
    conn.close()


async def _open_close(db: Database) -> None:
    await db.open()
    await db.close()


def build_index(path: Path) -> tuple[FullTextIndex, dict[str, float]]:
    """The start-up build as the lead would stream it: rows in chunks, analyzed, built."""
    conn = sqlite3.connect(path)
    rss0 = rss_mb()
    timings = {"analyze_s": 0.0, "read_s": 0.0}

    def chunks() -> Iterator[list[tuple[int, object]]]:
        last = 0
        while True:
            t0 = time.perf_counter()
            rows = conn.execute(
                "SELECT rowid, content, summary, concepts, when_text FROM memories_fts"
                " WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (last, CHUNK),
            ).fetchall()
            t1 = time.perf_counter()
            timings["read_s"] += t1 - t0
            if not rows:
                return
            out = [(r[0], analyze(r[1], r[2], r[3], r[4])) for r in rows]
            timings["analyze_s"] += time.perf_counter() - t1
            last = rows[-1][0]
            yield out  # type: ignore[misc]

    started = time.perf_counter()
    index = FullTextIndex.build(chunks())  # type: ignore[arg-type]
    total = time.perf_counter() - started
    conn.close()
    timings["build_s"] = total
    timings["arrays_s"] = total - timings["analyze_s"] - timings["read_s"]
    timings["rss_growth_mb"] = rss_mb() - rss0
    timings["nbytes_mb"] = index.nbytes / 1e6
    return index, timings


def timed(fn: Callable[[], list[int]]) -> tuple[float, list[int]]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def run(n: int, queries: int, keep: bool) -> dict[str, object]:
    home = Path(tempfile.mkdtemp(prefix=f"mnemonic-fulltext-{n}-"))
    path = home / "bench.db"
    row: dict[str, object] = {"size": n}
    try:
        t0 = time.perf_counter()
        fill(path, n)
        row["fill_s"] = time.perf_counter() - t0
        progress(f"size {n:,}: filled in {row['fill_s']:.0f} s; building the index")
        index, build = build_index(path)
        row["build"] = build
        progress(f"  built: {build}")
        # columns for the allowed masks
        conn = sqlite3.connect(path, check_same_thread=False)
        seqs_projects = conn.execute("SELECT seq, project FROM memories").fetchall()
        size = max(s for s, _ in seqs_projects) + 1
        project_of = np.full(size, -1, np.int16)
        code = {p: i for i, p in enumerate(PROJECTS)}
        for s, p in seqs_projects:
            project_of[s] = code[p]
        del seqs_projects
        everything = np.zeros(size, np.bool_)
        everything[1:] = True
        texts = {item.content for item in iter_corpus(min(n, 50_000))}
        qs = make_queries(queries, texts)
        store_db = Database(path, StorageConfig())
        loop = asyncio.new_event_loop()
        loop.run_until_complete(store_db.open())
        store = SQLiteStore(store_db)
        rank = "bm25(memories_fts, 1.0, 0.5, 0.5, 0.5)"

        def sql(kept: list[str], project: str | None) -> list[int]:
            if not kept:
                return []
            where, params = ("m.project = ?", [project]) if project else ("1", [])
            return [
                r[0]
                for r in conn.execute(
                    f"SELECT f.rowid, {rank} AS rank FROM memories_fts f JOIN memories m"
                    f" ON m.seq = f.rowid WHERE memories_fts MATCH ? AND {where}"
                    " AND m.state IN ('active', 'fading') ORDER BY rank LIMIT ?",
                    [match_any(kept), *params, LIMIT],
                )
            ]

        def rarest(terms: list[str], k: int) -> list[str]:
            return (
                _within_budget(conn, terms, 1)[:1]
                if len(terms) < 2
                else sorted((t for t in terms if _df(conn, t) > 0), key=lambda t: _df(conn, t))[:k]
            )

        def ranked_limit(terms: list[str], project: str | None) -> list[int]:
            where, params = ("m.project = ?", [project]) if project else ("1", [])
            return [
                r[0]
                for r in conn.execute(
                    "SELECT f.seq FROM (SELECT rowid AS seq, rank FROM memories_fts"
                    " WHERE memories_fts MATCH ? AND rank MATCH"
                    " 'bm25(1.0, 0.5, 0.5, 0.5)' ORDER BY rank LIMIT ?) f"
                    f" JOIN memories m ON m.seq = f.seq WHERE {where}"
                    " AND m.state IN ('active', 'fading') ORDER BY f.rank",
                    [match_any(terms), LIMIT * 4, *params],
                )
            ][:LIMIT]

        variants: dict[str, Callable[[list[str], str | None], list[int]]] = {
            "a": lambda t, p: [
                s
                for s, _ in loop.run_until_complete(
                    store.full_text(t, Filters(project=p), LIMIT, 8000)
                )
            ],
            "b1": lambda t, p: sql(_within_budget(conn, t, 2000), p),
            "b2": lambda t, p: sql(rarest(t, 3), p),
            "b3": ranked_limit,
        }

        def mem(budget: int | None) -> Callable[[list[str], str | None], list[int]]:
            def go(terms: list[str], project: str | None) -> list[int]:
                allowed = everything if project is None else project_of == code[project]
                return [s for s, _ in index.search(terms, allowed, LIMIT, budget)]

            return go

        variants["c"] = mem(None)
        variants["c8"] = mem(8000)
        lat: dict[str, list[float]] = {k: [] for k in variants}
        agree: dict[str, list[float]] = {k: [] for k in variants}
        for i, (text, project) in enumerate(qs):
            terms = query_terms(text)
            proj = project if i % 2 else None
            tops: dict[str, list[int]] = {}
            for name, fn in variants.items():
                ms, out = timed(lambda fn=fn, t=terms, p=proj: fn(t, p))  # type: ignore[misc]
                lat[name].append(ms)
                tops[name] = out[:TOP]
            base = set(tops["a"])
            for name in variants:
                if base:
                    agree[name].append(len(base & set(tops[name])) / len(base))
        loop.run_until_complete(store_db.close())
        loop.close()
        conn.close()
        row["latency"] = {
            k: (pct(v, 0.5), pct(v, 0.95), max(v)) for k, v in lat.items()
        }  # fmt: skip
        row["agreement"] = {k: float(np.mean(v)) if v else 0.0 for k, v in agree.items()}
        row["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        row["index"] = index.describe()
    finally:
        if not keep:
            shutil.rmtree(home, ignore_errors=True)
    return row


_DF: dict[str, int] = {}


def _df(conn: sqlite3.Connection, term: str) -> int:
    if term not in _DF:
        _DF[term] = conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (match_any([term]),)
        ).fetchone()[0]
    return _DF[term]


NAMES = {
    "a": "a: SQL bm25, budget 8000 (today)",
    "b1": "b1: SQL bm25, budget 2000",
    "b2": "b2: SQL bm25, 3 rarest terms",
    "b3": "b3: FTS5 ORDER BY rank LIMIT 240, filter outside",
    "c": "c: in-memory BM25, all terms",
    "c8": "c8: in-memory BM25, budget 8000",
}


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| memories | entry point | p50 ms | p95 ms | max ms | top-10 agreement with a |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lat = r["latency"]
        agree = r["agreement"]
        assert isinstance(lat, dict) and isinstance(agree, dict)
        for key, name in NAMES.items():
            p50, p95, top = lat[key]
            lines.append(
                f"| {r['size']:,} | {name} | {p50:.2f} | {p95:.2f} | {top:.1f}"
                f" | {agree[key] * 100:.1f}% |"
            )
    lines.append("")
    for r in rows:
        b = r["build"]
        assert isinstance(b, dict)
        lines.append(
            f"- {r['size']:,}: fill {r['fill_s']:.0f} s; index build {b['build_s']:.1f} s"
            f" (SQLite read {b['read_s']:.1f} s, tokenise {b['analyze_s']:.1f} s, arrays"
            f" {b['arrays_s']:.1f} s); index {b['nbytes_mb']:.0f} MB of arrays, RSS growth"
            f" {b['rss_growth_mb']:.0f} MB, process max RSS {r['maxrss_mb']:.0f} MB;"
            f" {r['index']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    rows = [run(int(s), args.queries, args.keep) for s in args.sizes.split(",") if s.strip()]
    print(table(rows))


if __name__ == "__main__":
    main()
