"""Watched files keep one current memory each (amended in place, versions in its history)
plus small "what changed" memories linked to it.

The pure diff summary is tested with tables; the rest runs a real daemon (TestClient over
``Daemon``) whose filesystem watcher watches a folder in ``tmp_path``, so every edit goes
through inotify, the watcher's debounce, the perception filter and the memory service.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.api import query, remember

from mnemonic.config import StorageConfig
from mnemonic.encoding.file_changes import (
    change_text,
    diff_hunks,
    display_name,
    summarize_change,
)
from mnemonic.store.database import list_migrations, migrate

# ---- the diff summary (pure) ---------------------------------------------------------------

PY = """\
import csv

BATCH_SIZE = 500


class Exporter:
    def run(self, day):
        rows = self.load(day)
        return len(rows)

    def load(self, day):
        return fetch(day)


def helper():
    return 1
"""


def _edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("path", "old", "new", "added", "removed", "sections", "shown"),
    [
        # a line inside a method names the method (the nearest less-indented header)
        (
            "a.py",
            PY,
            _edit(PY, "return fetch(day)", "return fetch(day, final=True)"),
            1,
            1,
            ("load()",),
            ("- return fetch(day)", "+ return fetch(day, final=True)"),
        ),
        # a top-level line after a class is not blamed on the class or its methods
        ("a.py", PY, _edit(PY, "BATCH_SIZE = 500", "BATCH_SIZE = 1000"), 1, 1, (), None),
        ("a.py", PY, _edit(PY, "def helper():\n    return 1\n", ""), 0, 2, ("helper()",), None),
        # a renamed function is named by its new name
        ("a.py", PY, _edit(PY, "def helper():", "def helper2():"), 1, 1, ("helper2()",), None),
        (
            "a.js",
            "export async function load(day) {\n  return fetch(day);\n}\n",
            "export async function load(day) {\n  return fetch(day, true);\n}\n",
            1,
            1,
            ("load()",),
            None,
        ),
        (
            "a.js",
            "const save = async (x) => {\n  put(x);\n};\n",
            "const save = async (x) => {\n  put(x, 1);\n};\n",
            1,
            1,
            ("save()",),
            None,
        ),
        (
            "notes.md",
            "# Plan\n\n## Export\nruns at 3\n\n## Billing\nmonthly\n",
            "# Plan\n\n## Export\nruns at 2\n\n## Billing\nmonthly\n",
            1,
            1,
            ("Export",),
            ("- runs at 3", "+ runs at 2"),
        ),
        # in code a '#' line is a comment, not a heading
        ("a.py", "# Title\nx = 1\n", "# Title\nx = 2\n", 1, 1, (), None),
    ],
)
def test_summary_counts_and_names_what_changed(
    path: str,
    old: str,
    new: str,
    added: int,
    removed: int,
    sections: tuple[str, ...],
    shown: tuple[str, ...] | None,
) -> None:
    summary = summarize_change(old, new, path=path)
    assert summary is not None
    assert (summary.added, summary.removed, summary.sections) == (added, removed, sections)
    assert summary.exact
    if shown is not None:
        assert summary.lines == shown


@pytest.mark.parametrize(
    "new",
    [
        PY.replace("\n", "\n\n"),  # blank lines added
        PY.replace("    ", "\t"),  # re-indented
        PY.replace("\n", "   \n"),  # trailing spaces
        PY.replace("\n", "\r\n"),  # line endings
    ],
)
def test_whitespace_only_changes_have_no_summary(new: str) -> None:
    assert summarize_change(PY, new, path="a.py") is None


def test_quoted_lines_skip_punctuation_and_are_bounded() -> None:
    # one big hunk: three removed and three added lines are quoted, "}" never
    old = "def f():\n" + "".join(f"    a{i} = {i}\n" for i in range(30))
    new = "def f():\n" + "".join(f"    a{i} = {i + 1}\n    }}\n" for i in range(30))
    summary = summarize_change(old, new, path="a.py")
    assert summary is not None
    assert summary.added == 60 and summary.removed == 30
    assert summary.lines == ("- a0 = 0", "- a1 = 1", "- a2 = 2", "+ a0 = 1", "+ a1 = 2", "+ a2 = 3")
    assert summary.more_lines == 60 - 6  # 30 old + 30 new meaningful lines, "}" not counted
    text = change_text("proj/a.py", summary)
    assert text.splitlines()[0] == "proj/a.py changed (+60 -30 lines) in f():"
    assert text.splitlines()[-1] == "… and 54 more changed lines"
    # ten separate one-line edits: eight lines quoted in all, in file order
    old = "".join(f"k{i} = {i}\nkeep{i}\n" for i in range(10))
    new = "".join(f"k{i} = {i + 1}\nkeep{i}\n" for i in range(10))
    many = summarize_change(old, new, path="a.py")
    assert many is not None and many.lines[:2] == ("- k0 = 0", "+ k0 = 1")
    assert len(many.lines) == 8 and many.more_lines == 12
    long = summarize_change("x = 1\n", "x = '" + "y" * 500 + "'\n", path="a.py")
    assert long is not None and len(long.lines[1]) <= 2 + 160


def test_large_rewrites_fall_back_to_a_linear_count() -> None:
    old = [f"line {i}" for i in range(2000)]
    new = [f"line {i}" for i in range(0, 2000, 2)] + [f"other {i}" for i in range(100)]
    hunks, exact = diff_hunks(old, new, max_cells=1000)
    assert not exact
    assert sum(h.o2 - h.o1 for h in hunks) == 1000  # the odd lines went
    assert sum(h.n2 - h.n1 for h in hunks) == 100  # the "other" lines came
    exact_hunks, was_exact = diff_hunks(old, new)
    assert was_exact
    assert sum(h.o2 - h.o1 for h in exact_hunks) == 1000
    assert sum(h.n2 - h.n1 for h in exact_hunks) == 100


def test_change_text_and_display_name() -> None:
    summary = summarize_change("a\nb\nc\n", "a\nB\nc\n", path="x.txt")
    assert summary is not None
    assert change_text("r/x.txt", summary) == "r/x.txt changed (+1 -1 lines) near line 2:\n- b\n+ B"
    assert change_text("r/y.txt", summary, moved_from="r/x.txt").startswith(
        "r/y.txt (moved from r/x.txt) changed"
    )
    assert display_name("/w/proj/src/a.py", "/w/proj") == "proj/src/a.py"
    assert display_name("/w/proj/src/a.py", "/w/proj/") == "proj/src/a.py"
    assert display_name("/elsewhere/a.py", "/w/proj") == "/elsewhere/a.py"
    assert display_name("/w/a.py", None) == "/w/a.py"


# ---- a real daemon watching a folder --------------------------------------------------------

EXPORT = '''\
"""Invoice export: writes the day's invoices to the accounting bucket."""

import csv
import datetime as dt

BATCH_SIZE = 500
schedule = "0 3 * * *"


def run_nightly_export(day: dt.date) -> int:
    """Export every invoice of the day; returns how many were written."""
    invoices = load_invoices(day)
    written = 0
    for chunk in batched(invoices, BATCH_SIZE):
        written += write_chunk(chunk)
    return written


def load_invoices(day):
    return fetch("invoices", day=day)


def write_chunk(rows):
    with open("export.csv", "a", newline="") as out:
        csv.writer(out).writerows(rows)
    return len(rows)
'''

# six one-line edits, each saved separately
EDITS = [
    ('schedule = "0 3 * * *"', 'schedule = "0 2 * * *"'),
    ("BATCH_SIZE = 500", "BATCH_SIZE = 1000"),
    ('fetch("invoices", day=day)', 'fetch("invoices", day=day, status="final")'),
    ('open("export.csv"', 'open("invoices-export.csv"'),
    ("Export every invoice of the day", "Export every final invoice of the day"),
    ("    return written\n", "    log.info('exported %d invoices', written)\n    return written\n"),
]

STANDUP = (
    "Standup notes: we decided the invoice export runs as a nightly job instead of on every "
    "change, because the accounting system rate-limits imports during business hours."
)


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Watched:
    """A daemon watching ``root``, with helpers to save a file and wait until perception has
    handled that save (the file memories' outcome counters move)."""

    def __init__(self, make_client: Callable[..., TestClient], root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.client = make_client(
            filesystem={"enabled": True, "roots": [str(root)], "debounce_s": 0.1}
        )
        daemon = self.client.daemon  # type: ignore[attr-defined]
        self.files = daemon.files
        self.daemon = daemon
        wait_for(self._watching, "the filesystem watcher to run")

    def _watching(self) -> bool:
        return all(a.watcher.health().state == "running" for a in self.daemon.watchers)

    def handled(self) -> int:
        return sum(v for k, v in self.files.counts.items() if k != "change_memories")

    def save(self, name: str, text: str, outcome: str) -> None:
        """Write ``text`` and wait until that write was handled with ``outcome``."""
        before = self.files.counts[outcome]
        path = self.root / name
        path.write_text(text, encoding="utf-8")
        wait_for(lambda: self.files.counts[outcome] > before, f"{name}: {outcome}")

    def memories(self) -> list[dict[str, Any]]:
        body = self.client.get("/api/v1/memories", params={"limit": 200}).json()
        items: list[dict[str, Any]] = body["items"]
        return items

    def settled(self) -> None:
        """Every memory embedded and linked (recall reads vectors)."""

        def done() -> bool:
            counts = self.client.get("/api/v1/health").json()["memories"]
            return bool(counts["raw_pending"] == 0 and self.daemon.encoder.backlog == 0)

        wait_for(done, "the encoder to catch up")


def file_memories(items: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    return [
        m
        for m in items
        if m["metadata"].get("path") == str(path) and m["metadata"].get("kind") != "file_changed"
    ]


def change_memories(items: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    return [
        m
        for m in items
        if m["metadata"].get("path") == str(path) and m["metadata"].get("kind") == "file_changed"
    ]


def test_six_edits_make_one_file_memory_with_history_and_linked_changes(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    w = Watched(make_client, tmp_path / "billing")
    path = w.root / "export.py"
    text = EXPORT
    w.save("export.py", text, "remembered")
    for old, new in EDITS:
        text = text.replace(old, new, 1)
        w.save("export.py", text, "amended")

    items = w.memories()
    files = file_memories(items, path)
    assert len(files) == 1, [m["content"][:60] for m in files]
    file_memory = files[0]
    assert file_memory["content"] == text.strip()
    assert file_memory["metadata"]["versions"] == 7
    assert file_memory["metadata"]["kind"] == "file_modified"

    ctx = w.client.get(f"/api/v1/memories/{file_memory['id']}/context").json()
    history = ctx["amendments"]
    assert len(history) == 6
    assert history[0]["old_content"] == EXPORT.strip()
    assert history[-1]["new_content"] == text.strip()

    changes = change_memories(items, path)
    assert 1 <= len(changes) <= 6
    assert len(changes) == 6  # every edit here changed a meaningful line
    assert all(len(c["content"]) < 600 for c in changes)
    assert all(c["metadata"]["file_memory_id"] == file_memory["id"] for c in changes)
    by_text = "\n".join(c["content"] for c in changes)
    assert '+ schedule = "0 2 * * *"' in by_text
    assert "billing/export.py changed (+1 -1 lines) in load_invoices():" in by_text
    assert "billing/export.py changed (+1 -0 lines) in run_nightly_export():" in by_text
    linked = w.client.get(
        "/api/v1/associations",
        params={"memory_id": file_memory["id"], "relation": "part_of", "limit": 50},
    ).json()["items"]
    ends = {e["source"] for e in linked} | {e["target"] for e in linked}
    assert {c["id"] for c in changes} <= ends

    # the same content saved again: no raw memory, no memory, no amendment
    raw_before = w.client.get("/api/v1/health").json()["memories"]["raw_memories"]
    w.save("export.py", text, "unchanged")
    assert w.client.get("/api/v1/health").json()["memories"]["raw_memories"] == raw_before
    assert len(w.memories()) == len(items)
    again = w.client.get(f"/api/v1/memories/{file_memory['id']}/context").json()
    assert len(again["amendments"]) == 6

    # the note that explains the file is found, and the file comes back once, not seven times
    note = remember(w.client, STANDUP, project="billing")["memory_id"]
    w.settled()
    answer = query(w.client, "why is the invoice export a nightly job", limit=10)
    ids = [r["memory"]["id"] for r in answer["results"]]
    assert note in ids[:3], [r["memory"]["content"][:50] for r in answer["results"]]
    whole_file = [
        r for r in answer["results"] if "def run_nightly_export" in r["memory"]["content"]
    ]
    assert len(whole_file) <= 1


def test_whitespace_only_edit_amends_without_a_change_memory(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    w = Watched(make_client, tmp_path / "billing")
    path = w.root / "export.py"
    w.save("export.py", EXPORT, "remembered")
    w.save("export.py", EXPORT.replace("\n\n\n", "\n\n\n\n").replace("    ", "\t"), "amended")
    items = w.memories()
    assert len(file_memories(items, path)) == 1
    assert change_memories(items, path) == []
    assert w.files.counts["change_memories"] == 0


def test_move_and_delete_keep_the_same_memory(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    w = Watched(make_client, tmp_path / "billing")
    old_path, new_path = w.root / "export.py", w.root / "jobs" / "export.py"
    w.save("export.py", EXPORT, "remembered")
    memory_id = file_memories(w.memories(), old_path)[0]["id"]

    new_path.parent.mkdir()
    before = w.files.counts["moved"]
    old_path.rename(new_path)
    wait_for(lambda: w.files.counts["moved"] > before, "the move")
    items = w.memories()
    moved = file_memories(items, new_path)
    assert [m["id"] for m in moved] == [memory_id]
    assert moved[0]["content"] == EXPORT.strip()
    assert file_memories(items, old_path) == []
    notes = [m for m in items if m["metadata"].get("kind") == "file_changed"]
    assert [n["content"] for n in notes] == ["billing/export.py renamed to billing/jobs/export.py"]

    before = w.files.counts["deleted"]
    new_path.unlink()
    wait_for(lambda: w.files.counts["deleted"] > before, "the deletion")
    gone = w.client.get(f"/api/v1/memories/{memory_id}").json()
    assert gone["state"] == "active" and gone["content"] == EXPORT.strip()  # content kept
    assert gone["metadata"]["deleted_at"]
    assert gone["metadata"]["kind"] == "file_deleted"
    deleted = [m for m in w.memories() if m["metadata"].get("change") == "file_deleted"]
    assert [d["content"] for d in deleted] == ["billing/jobs/export.py deleted (it had 26 lines)"]
    assert deleted[0]["metadata"]["kind"] == "file_changed"

    # recreated: the same memory again, amended, no longer marked deleted
    w.save("jobs/export.py", EXPORT.replace("500", "750"), "amended")
    back = w.client.get(f"/api/v1/memories/{memory_id}").json()
    assert "deleted_at" not in back["metadata"]
    assert "BATCH_SIZE = 750" in back["content"]
    assert len(file_memories(w.memories(), new_path)) == 1


def test_a_100_kb_rewrite_is_bounded_and_the_loop_stays_responsive(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    w = Watched(make_client, tmp_path / "big")
    path = w.root / "data.py"

    def big(tag: str) -> str:
        lines, size = [], 0
        i = 0
        while size < 99_000:
            line = f"    value_{tag}_{i} = compute({i * 7919 % 100_003}, '{tag}')  # step {i}"
            if i % 25 == 0:
                line = f"def block_{tag}_{i}(x):"
            lines.append(line)
            size += len(line) + 1
            i += 1
        return "\n".join(lines) + "\n"

    w.save("data.py", big("a"), "remembered")
    w.settled()
    new = big("b")
    worst = 0.0
    before = w.files.counts["amended"]
    started = time.perf_counter()
    path.write_text(new, encoding="utf-8")
    while w.files.counts["amended"] == before:  # the loop answers while the rewrite is handled
        t0 = time.perf_counter()
        assert w.client.get("/livez").status_code == 200
        worst = max(worst, time.perf_counter() - t0)
        assert time.perf_counter() - started < 30, "the rewrite was not handled in 30 s"
    took = time.perf_counter() - started
    memory = file_memories(w.memories(), path)[0]
    assert memory["content"] == new.strip()
    change = change_memories(w.memories(), path)
    assert len(change) == 1 and len(change[0]["content"]) < 2000
    lines = len(new.splitlines())
    head, *quoted = change[0]["content"].splitlines()
    assert head.startswith(f"big/data.py changed (+{lines} -{lines} lines) in block_b_0()")
    assert [q[0] for q in quoted] == ["-", "-", "-", "+", "+", "+", "…"]
    print(f"100 KB rewrite handled in {took:.2f} s; slowest /livez {worst * 1000:.0f} ms")
    assert took < 10
    assert worst < 1.0


# ---- the migration ---------------------------------------------------------------------------


def test_migration_maps_existing_watched_files_to_their_newest_copy(tmp_path: Path) -> None:
    """A store from before the migration: each watched path maps to its newest live copy;
    other sources, change notes and archived copies are left alone."""
    ours = next(p for n, p in list_migrations() if p.name.endswith("_file_memories.sql"))
    number = int(ours.name[:4])
    folder = tmp_path / "migrations"
    folder.mkdir()
    for n, p in list_migrations():
        if n < number:
            shutil.copy(p, folder / p.name)
    db = tmp_path / "m.db"
    assert migrate(db, StorageConfig(), folder) == number - 1

    def meta(path: str, kind: str = "file_modified", watcher: str = "filesystem") -> str:
        return json.dumps({"watcher": watcher, "kind": kind, "path": path})

    rows = [  # (seq, source, state, metadata)
        (1, "filesystem", "active", meta("/p/a.py", "file_created")),
        (2, "filesystem", "active", meta("/p/a.py")),
        (3, "filesystem", "archived", meta("/p/a.py")),  # forgotten: not the current one
        (4, "filesystem", "active", meta("/p/b.md")),
        (5, "api", "active", meta("/p/c.py")),  # not a watched file
        (6, "filesystem", "active", meta("/p/a.py", "file_deleted")),  # a deletion line
        (7, "filesystem", "active", "{}"),
    ]
    with sqlite3.connect(db) as conn:
        for seq, source, state, metadata in rows:
            conn.execute(
                "INSERT INTO raw_memories (id, content, content_hash, source, timestamp,"
                " created_at) VALUES (?, 'x', 'h', ?, '2024-01-01', '2024-01-01')",
                (f"r{seq}", source),
            )
            conn.execute(
                "INSERT INTO memories (seq, id, raw_id, content, content_hash, summary, type,"
                " source, significance, salience, state, timestamp, created_at, updated_at,"
                " metadata) VALUES (?, ?, ?, 'x', 'h', 'x', 'general', ?, 0.5, 0.5, ?,"
                " '2024-01-01', '2024-01-01', '2024-01-01', ?)",
                (seq, f"m{seq}", f"r{seq}", source, state, metadata),
            )
    shutil.copy(ours, folder / ours.name)
    assert migrate(db, StorageConfig(), folder) == number
    with sqlite3.connect(db) as conn:
        mapped = dict(conn.execute("SELECT path, memory_id FROM file_memories").fetchall())
    assert mapped == {"/p/a.py": "m2", "/p/b.md": "m4"}
