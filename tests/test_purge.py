"""Purge (delete for good) and unarchive: through the REST API on a real daemon, the bytes
of the database files grepped before and after, the pure helpers in tables, and the CLI
against a daemon subprocess."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from support.api import query, remember
from support.cli import Run
from support.daemon_proc import TOKEN as PROC_TOKEN
from support.daemon_proc import running

from mnemonic.app.activity import ActivityLog, mentions
from mnemonic.config import StorageConfig
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.text import content_hash
from mnemonic.events.types import (
    Context,
    MemoryAmended,
    MemoryPurged,
    QueryExecuted,
    RawMemoryCreated,
    WatcherEvent,
)
from mnemonic.paths import Paths
from mnemonic.store.consolidation import MERGE_META, SQLiteConsolidation
from mnemonic.store.database import Database
from mnemonic.store.dreaming import CURSOR_META, QUERY_META, STRENGTHENED_META, SQLiteDreaming
from mnemonic.store.enrichment import WATERMARK_KEY as ENRICHMENT_WATERMARK
from mnemonic.store.enrichment import SQLiteEnrichment
from mnemonic.store.models import NewRaw, Source
from mnemonic.store.purge import SEQ_MARKS, SQLitePurger, first_line, quoting
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.timeutil import utcnow

# ---- helpers -------------------------------------------------------------------------------


def _plant() -> str:
    """A word that occurs nowhere else: what the grep looks for."""
    return f"kumquat{uuid.uuid4().hex[:12]}"


def _file_bytes(paths: Paths) -> dict[str, bytes]:
    db = paths.database
    return {
        p.name: p.read_bytes()
        for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"))
        if p.exists()
    }


def _found_in_files(paths: Paths, needle: str) -> list[str]:
    """Names of the database files holding ``needle`` (as UTF-8, any case)."""
    raw = needle.encode()
    return [name for name, data in _file_bytes(paths).items() if raw in data or raw in data.lower()]


def _rows(paths: Paths, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"{paths.database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return [tuple(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def _purge(client: TestClient, memory_id: str) -> dict[str, Any]:
    response = client.delete(f"/api/v1/memories/{memory_id}", params={"purge": "true"})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


# ---- the whole purge, down to the bytes ----------------------------------------------------


def test_purge_removes_every_copy_and_the_bytes_leave_the_files(
    client: TestClient, paths: Paths
) -> None:
    plant, amended_plant = _plant(), _plant()
    secret = f"the staging cluster's nickname is {plant} until the rename"
    stored = remember(client, secret, project="ops")
    memory_id, raw_id = stored["memory_id"], stored["raw_id"]
    assert client.get(f"/api/v1/memories/{memory_id}").json()["content"] == secret
    duplicate = remember(client, secret, project="ops")  # an exact duplicate reinforces it
    assert duplicate["status"] == "reinforced" and duplicate["memory_id"] == memory_id
    neighbour = remember(client, "the staging cluster rename happens on Fridays", project="ops")
    keep = remember(client, "unrelated: the coffee machine descales on Mondays", project="ops")
    amended = client.patch(
        f"/api/v1/memories/{memory_id}",
        json={"content": f"staging nickname {amended_plant} (renamed)", "reason": "renamed"},
    )
    assert amended.status_code == 200
    asked = query(client, plant, state=["active", "archived"])  # the query text is the secret
    assert memory_id in [r["memory"]["id"] for r in asked["results"]]
    rated = client.post(
        "/api/v1/feedback", json={"query_id": asked["query_id"], "quality": "helpful"}
    )
    assert rated.status_code == 200
    activity = client.get("/api/v1/activity", params={"limit": 200}).json()
    assert plant in json.dumps(activity)
    (seq,) = _rows(paths, "SELECT seq FROM memories WHERE id = ?", memory_id)[0]
    links = "SELECT count(*) FROM associations WHERE ? IN (source_seq, target_seq)"
    assert _rows(paths, links, seq) != [(0,)], "it must have links for the test to mean much"
    # the grep works: before the purge the planted words are in the files
    assert _found_in_files(paths, plant), "the grep must find the text before the purge"
    assert _found_in_files(paths, amended_plant)

    report = _purge(client, memory_id)

    assert report["dry_run"] is False
    assert [m["id"] for m in report["memories"]] == [memory_id]
    assert report["memories"][0]["first_line"] is None  # the answer does not quote it back
    assert report["removed"]["memories"] == 1
    assert report["removed"]["raw_memories"] == 2  # its own and the duplicate's
    assert report["removed"]["amendments"] == 1
    assert report["removed"]["queries"] >= 1
    assert report["vacuumed"] is True and report["checkpointed"] is True
    # the bytes are gone from the database, its WAL and the shared-memory index
    assert _found_in_files(paths, plant) == []
    assert _found_in_files(paths, amended_plant) == []
    assert _found_in_files(paths, memory_id) == []
    wal = paths.database.with_name(paths.database.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    # and the rows
    assert client.get(f"/api/v1/memories/{memory_id}").status_code == 404
    assert client.get(f"/api/v1/raw/{raw_id}").status_code == 404
    assert client.get(f"/api/v1/raw/{duplicate['raw_id']}").status_code == 404
    assert _rows(paths, "SELECT count(*) FROM memory_amendments") == [(0,)]
    assert _rows(paths, "SELECT count(*) FROM retrieval_feedback") == [(0,)]
    assert _rows(paths, "SELECT count(*) FROM memory_vectors") == [(2,)]
    assert _rows(paths, "SELECT count(*) FROM memories_fts") == [(2,)]
    assert _rows(paths, links, seq) == [(0,)]
    assert _rows(paths, "SELECT count(*) FROM memories") == [(2,)]
    # the activity buffer forgot it, the index no longer finds it, the others stay
    activity_text = json.dumps(client.get("/api/v1/activity", params={"limit": 200}).json())
    assert plant not in activity_text and amended_plant not in activity_text
    assert memory_id not in activity_text.replace('"memory_purged"', "")
    assert client.get(f"/api/v1/memories/{keep['memory_id']}").status_code == 200
    assert client.get(f"/api/v1/memories/{neighbour['memory_id']}").status_code == 200
    # an audit row says that a purge happened, not what
    audit = _rows(paths, "SELECT * FROM purge_audit")
    assert len(audit) == 1
    assert audit[0][2:] == ("id", 1, 2, 1, audit[0][6], report["removed"]["queries"])
    assert memory_id not in repr(audit) and "ops" not in repr(audit)


def test_purged_memory_is_not_found_by_meaning_or_words(client: TestClient) -> None:
    plant = _plant()
    stored = remember(client, f"the lighthouse keeper's cat is called {plant}")
    remember(client, "lighthouses guide ships along the coast at night")
    _purge(client, stored["memory_id"])
    for text in (plant, "lighthouse keeper cat name"):
        found = query(client, text, state=["active", "fading", "archived", "merged"])
        assert stored["memory_id"] not in [r["memory"]["id"] for r in found["results"]]


def test_without_purge_delete_still_archives_and_a_bad_flag_is_422(client: TestClient) -> None:
    stored = remember(client, "the release train leaves every second Tuesday")
    for params in ({}, {"purge": "false"}):
        response = client.delete(f"/api/v1/memories/{stored['memory_id']}", params=params)
        assert response.status_code == 200
        assert response.json()["state"] == "archived"
    bad = client.delete(f"/api/v1/memories/{stored['memory_id']}", params={"purge": "maybe"})
    assert bad.status_code == 422
    assert bad.json()["details"] == [{"field": "purge", "message": "must be true or false"}]
    assert client.get(f"/api/v1/memories/{stored['memory_id']}").status_code == 200
    assert client.delete("/api/v1/memories/nope", params={"purge": "true"}).status_code == 404


def test_bulk_purge_by_project_previews_then_removes_only_that_project(
    client: TestClient, paths: Paths
) -> None:
    plant = _plant()
    doomed = [
        remember(client, f"acquisition {plant} note {i}: term sheet detail", project="deal")
        for i in range(3)
    ]
    other = remember(client, "the build farm has eight runners", project="infra")
    preview = client.post("/api/v1/purge", json={"project": "deal", "dry_run": True})
    assert preview.status_code == 200
    body = preview.json()
    assert body["dry_run"] is True and body["count"] == 3 and body["removed"] is None
    assert {m["id"] for m in body["memories"]} == {d["memory_id"] for d in doomed}
    assert all(plant in m["first_line"] for m in body["memories"])
    assert _rows(paths, "SELECT count(*) FROM memories WHERE project = 'deal'") == [(3,)]

    done = client.post("/api/v1/purge", json={"project": "deal"}).json()
    assert done["removed"]["memories"] == 3 and done["removed"]["raw_memories"] == 3
    assert _rows(paths, "SELECT count(*) FROM memories WHERE project = 'deal'") == [(0,)]
    assert _rows(paths, "SELECT count(*) FROM raw_memories WHERE project = 'deal'") == [(0,)]
    assert _found_in_files(paths, plant) == []
    assert client.get(f"/api/v1/memories/{other['memory_id']}").status_code == 200
    assert _rows(paths, "SELECT scope, memories FROM purge_audit") == [("project", 3)]
    again = client.post("/api/v1/purge", json={"project": "deal"}).json()
    assert again["removed"]["memories"] == 0  # nothing left: harmless to repeat


def test_purge_by_query_is_not_logged_and_ids_must_all_exist(
    client: TestClient, paths: Paths
) -> None:
    plant = _plant()
    stored = remember(client, f"the lab's guest network is called {plant}")
    preview = client.post("/api/v1/purge", json={"query": plant, "dry_run": True}).json()
    assert stored["memory_id"] in [m["id"] for m in preview["memories"]]
    assert _rows(paths, "SELECT count(*) FROM retrieval_queries") == [(0,)]  # not logged
    assert _rows(paths, "SELECT count(*) FROM purge_audit") == [(0,)]  # a dry run purges nothing

    mixed = client.post(
        "/api/v1/purge", json={"memory_ids": [stored["memory_id"], "no-such-memory"]}
    )
    assert mixed.status_code == 404 and "no-such-memory" in mixed.json()["error"]
    assert client.get(f"/api/v1/memories/{stored['memory_id']}").status_code == 200

    done = client.post("/api/v1/purge", json={"query": plant}).json()
    assert [m["id"] for m in done["memories"]] == [stored["memory_id"]]
    assert _found_in_files(paths, plant) == []
    assert _rows(paths, "SELECT scope FROM purge_audit") == [("query",)]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"dry_run": True},
        {"memory_ids": []},
        {"memory_ids": ["a"], "project": "p"},
        {"query": "   "},
        {"query": "x", "limit": 0},
        {"project": "p", "dry_run": "yes"},
    ],
)
def test_purge_bodies_that_are_not_exactly_one_selection_are_422(
    client: TestClient, body: dict[str, Any]
) -> None:
    assert client.post("/api/v1/purge", json=body).status_code == 422


# ---- unarchive -----------------------------------------------------------------------------


def test_unarchive_brings_a_forgotten_memory_back(client: TestClient) -> None:
    stored = remember(client, "the marmalade incident happened in the build farm")
    memory_id = stored["memory_id"]
    client.delete(f"/api/v1/memories/{memory_id}")
    assert memory_id not in [
        r["memory"]["id"] for r in query(client, "marmalade incident")["results"]
    ]

    back = client.post(f"/api/v1/memories/{memory_id}/unarchive")
    assert back.status_code == 200 and back.json()["state"] == "active"
    assert memory_id in [r["memory"]["id"] for r in query(client, "marmalade incident")["results"]]
    events = client.get(
        "/api/v1/activity", params={"types": "memory_state_changed", "limit": 10}
    ).json()["items"]
    assert events[0]["payload"]["reason"] == "unarchived"
    assert events[0]["payload"]["new_state"] == "active"
    again = client.post(f"/api/v1/memories/{memory_id}/unarchive")  # not archived: unchanged
    assert again.status_code == 200 and again.json()["state"] == "active"
    assert client.post("/api/v1/memories/nope/unarchive").status_code == 404


# ---- pure helpers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("queries", "texts", "expected"),
    [
        ([("q1", "Tr0ub4dor")], ["db password is: Tr0ub4dor&3xyz"], ["q1"]),
        ([("q1", "  TR0UB4DOR&3 ")], ["db password is: Tr0ub4dor&3xyz"], ["q1"]),
        ([("q1", "db")], ["db password"], []),  # too short to count as quoting
        ([("q1", "password reset")], ["db password is: x"], []),
        ([("q1", "abcd"), ("q2", "zzzz")], ["xx abcd", "yy"], ["q1"]),
        ([("q1", "abcd")], [], []),
    ],
)
def test_quoting(queries: list[tuple[str, str]], texts: list[str], expected: list[str]) -> None:
    assert quoting(queries, texts) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("one\ntwo", "one"),
        ("\n\n  indented  \nnext", "indented"),
        ("", ""),
        ("x" * 200, "x" * 119 + "…"),
    ],
)
def test_first_line(text: str, expected: str) -> None:
    assert first_line(text) == expected


@pytest.mark.parametrize(
    ("event", "hit"),
    [
        (MemoryPurged(memory_id="m1"), True),
        (MemoryAmended(memory_id="m2", project=None, reason=None, content="m1"), False),
        (QueryExecuted(query_id="q1", query="x", project=None, results=1, took_ms=1.0), True),
        (
            RawMemoryCreated(raw_id="r9", memory_id=None, source="api", project=None, content=""),
            False,
        ),
    ],
)
def test_mentions(event: Any, hit: bool) -> None:
    assert mentions(event, {"m1", "q1"}) is hit


def test_activity_forget_drops_the_events_their_causes_and_late_arrivals() -> None:
    log = ActivityLog(size=100, content_max_chars=1000)
    seen = WatcherEvent(watcher="clipboard", kind="copy", content="secret text")
    created = RawMemoryCreated(
        raw_id="r1",
        memory_id="m1",
        source="clipboard",
        project=None,
        content="secret text",
        context=seen.context.child(),
    )
    other = RawMemoryCreated(
        raw_id="r2", memory_id="m2", source="api", project=None, content="kept", context=Context()
    )
    for event in (seen, created, other):
        log.on_event(event)
    assert log.forget({"m1", "r1"}) == 2
    assert [e["payload"]["content"] for e in log.recent(10)] == ["kept"]
    log.on_event(MemoryAmended(memory_id="m1", project=None, reason=None, content="late"))
    assert len(log.recent(10)) == 1


# ---- the CLI against a daemon subprocess ---------------------------------------------------


class _Terminal(io.StringIO):
    """Typed input at a terminal (``isatty`` true), for the confirmation prompt."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    with running(tmp_path_factory.mktemp("purge") / "home") as proc:
        env = dict(os.environ)
        env.update(
            {
                "MNEMONIC_HOME": str(proc.home),
                "MNEMONIC_PORT": str(proc.port),
                "MNEMONIC_TOKEN": PROC_TOKEN,
            }
        )
        yield env


def _typed(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: dict[str, str],
    answer: str,
    *args: str,
) -> tuple[int, str, str]:
    """The command in this process (as the ``run`` fixture) with stdin a terminal on
    which ``answer`` is typed."""
    from mnemonic.cli.main import main

    for name in [n for n in os.environ if n.upper().startswith("MNEMONIC_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "argv", ["mnemonic", *args])
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    with pytest.raises(SystemExit) as stop:
        main()
    captured = capsys.readouterr()
    code = stop.value.code
    return (code if isinstance(code, int) else 0), captured.out, captured.err


def _remember_cli(run: Run, env: dict[str, str], text: str, *extra: str) -> str:
    code, out, err = run(env, "remember", text, "--json", *extra)
    assert code == 0, err
    memory_id: str = json.loads(out)["memory_id"]
    return memory_id


def _exists(env: dict[str, str], memory_id: str) -> bool:
    response = httpx.get(
        f"http://127.0.0.1:{env['MNEMONIC_PORT']}/api/v1/memories/{memory_id}",
        headers={"Authorization": f"Bearer {env['MNEMONIC_TOKEN']}"},
        trust_env=False,
    )
    return response.status_code == 200


def test_cli_purge_refuses_without_a_terminal_or_yes(run: Run, daemon: dict[str, str]) -> None:
    memory_id = _remember_cli(run, daemon, f"cli secret one {_plant()}")
    code, _, err = run(daemon, "purge", memory_id)  # stdin is a pipe, no --yes
    assert code == 64, err
    assert "refusing to purge" in err and memory_id in err  # it showed what it would remove
    assert _exists(daemon, memory_id)
    assert run(daemon, "purge")[0] == 64  # no selection
    assert run(daemon, "purge", memory_id, "--project", "x")[0] == 64  # two selections


def test_cli_purge_with_yes_and_json(run: Run, daemon: dict[str, str]) -> None:
    memory_id = _remember_cli(run, daemon, f"cli secret two {_plant()}")
    code, out, err = run(daemon, "purge", memory_id, "--yes", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["removed"]["memories"] == 1 and result["memories"][0]["id"] == memory_id
    assert not _exists(daemon, memory_id)
    code, _, err = run(daemon, "purge", memory_id, "--yes")
    assert code == 65 and "not found" in err


def test_cli_purge_by_query_asks_and_purges_only_when_confirmed(
    run: Run,
    daemon: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    plant = _plant()
    memory_id = _remember_cli(run, daemon, f"the vault label reads {plant}", "--project", "v")
    code, out, err = _typed(monkeypatch, capsys, daemon, "no\n", "purge", "--query", plant)
    assert code == 0 and "not confirmed" in err and plant in err
    assert _exists(daemon, memory_id)
    code, out, err = _typed(monkeypatch, capsys, daemon, "purge\n", "purge", "--query", plant)
    assert code == 0, err
    shown = int(err.split(" memories will be deleted")[0].split()[-1])
    assert out.startswith(f"purged: {shown} memories")  # exactly what was shown
    assert not _exists(daemon, memory_id)


def test_cli_unarchive(run: Run, daemon: dict[str, str]) -> None:
    memory_id = _remember_cli(run, daemon, "the fire drill is on the first Monday")
    assert run(daemon, "forget", memory_id)[0] == 0
    code, out, err = run(daemon, "unarchive", memory_id)
    assert (code, out) == (0, f"active: memory {memory_id}\n"), err
    assert run(daemon, "unarchive", "0190f2a0-0000-7000-8000-000000000000")[0] == 65


def test_answers_match_the_openapi_document(client: TestClient) -> None:
    import jsonschema_rs

    spec = client.get("/openapi.json").json()

    def check(method: str, template: str, response: Any) -> None:
        answers = spec["paths"][template][method]["responses"]
        assert str(response.status_code) in answers, (template, response.status_code)
        schema = answers[str(response.status_code)]["content"]["application/json"]["schema"]
        validator = jsonschema_rs.validator_for({**schema, "components": spec["components"]})
        assert [e.message for e in validator.iter_errors(response.json())] == []

    one = remember(client, "the office plants are watered on Wednesdays", project="office")
    two = remember(client, "the office printer jams on thick paper", project="office")
    memory = "/api/v1/memories/{memory_id}"
    check("delete", memory, client.delete(f"/api/v1/memories/{one['memory_id']}"))
    check(
        "post", memory + "/unarchive", client.post(f"/api/v1/memories/{one['memory_id']}/unarchive")
    )
    check("post", memory + "/unarchive", client.post("/api/v1/memories/nope/unarchive"))
    check("delete", memory, client.delete("/api/v1/memories/x", params={"purge": "sure"}))
    check(
        "post",
        "/api/v1/purge",
        client.post("/api/v1/purge", json={"project": "office", "dry_run": True}),
    )
    check("post", "/api/v1/purge", client.post("/api/v1/purge", json={"memory_ids": ["nope"]}))
    check("post", "/api/v1/purge", client.post("/api/v1/purge", json={"query": ""}))
    check(
        "post",
        "/api/v1/purge",
        client.post("/api/v1/purge", json={"memory_ids": [two["memory_id"]]}),
    )
    check(
        "delete",
        memory,
        client.delete(f"/api/v1/memories/{one['memory_id']}", params={"purge": "1"}),
    )


# ---- a freed seq handed out again ------------------------------------------------------------


def test_a_purge_lowers_every_done_through_mark_to_the_newest_seq_left(tmp_path: Path) -> None:
    """SQLite hands the highest freed ``seq`` out again: a mark left at the purged seq
    would count the next memory as already grouped, compared, enriched and replayed."""

    async def main() -> None:
        db = Database(tmp_path / "mnemonic.db", StorageConfig())
        await db.open()
        try:
            store = SQLiteStore(db)

            async def add(text: str) -> tuple[int, str]:
                raw = NewRaw(text, Source.API, "marks", utcnow(), {})
                [done] = await store.accept([(raw, encode(text), content_hash(text))], 0.1)
                memory = await store.get(done.memory_id)
                assert memory is not None
                return memory.seq, memory.id

            first, _ = await add("the boiler was serviced in March")
            newest, newest_id = await add("the boiler needs a new pressure valve")
            other = {"unrelated.mark": "999", QUERY_META: "7"}  # no query is logged
            marks = {key: str(newest) for key in SEQ_MARKS} | other
            conn = sqlite3.connect(db.path)
            with conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO system_meta (key, value, updated_at)"
                    " VALUES (?, ?, '2026-01-01')",
                    marks.items(),
                )
            conn.close()
            await SQLitePurger(db).purge("id", memory_ids=[newest_id])

            conn = sqlite3.connect(db.path)
            stored = dict(conn.execute("SELECT key, value FROM system_meta").fetchall())
            conn.close()
            assert {k: stored[k] for k in SEQ_MARKS} == {k: str(first) for k in SEQ_MARKS}
            assert stored["unrelated.mark"] == "999"
            assert stored[QUERY_META] == "0"
            again, again_id = await add("the boiler valve was replaced")
            assert again == newest  # the scenario is real: the freed seq comes back
            assert all(int(stored[k]) < again for k in SEQ_MARKS)

            # an agent that read its marks before the purge and writes them after it
            await SQLitePurger(db).purge("id", memory_ids=[again_id])
            later = utcnow()
            await SQLiteConsolidation(db).set_meta(MERGE_META, str(again), later)
            await SQLiteEnrichment(db).settle(again, [], later)
            await SQLiteDreaming(db).set_meta(
                {CURSOR_META: str(again), STRENGTHENED_META: str(again), QUERY_META: "7"}, later
            )
            conn = sqlite3.connect(db.path)
            stored = dict(conn.execute("SELECT key, value FROM system_meta").fetchall())
            conn.close()
            for key in (MERGE_META, ENRICHMENT_WATERMARK, CURSOR_META, STRENGTHENED_META):
                assert stored[key] == str(first), key
            assert stored[QUERY_META] == "0"
        finally:
            await db.close()

    asyncio.run(main())
