"""The recall index saved as a checkpoint and loaded at the next start with the changes
logged since replayed onto it (index/snapshot.py, index/checkpoints.py, migration 0008).

Real daemons on the same paths: one writes and stops (or is killed), the next starts from
the checkpoint and must equal the database. A write made while no daemon runs is replayed;
a corrupt file, another checkpoint or a changed setting makes the start build from SQLite.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient
from support.daemon_proc import running
from support.index_check import assert_index_matches_database
from support.store import with_database, write_embedded

from mnemonic.config import StorageConfig
from mnemonic.index.builder import BuildStopped, read_everything
from mnemonic.index.changes import edges_sql
from mnemonic.index.fulltext import term_key
from mnemonic.index.snapshot import (
    META,
    Checkpoint,
    discard_snapshot,
    load_snapshot,
    read_checkpoint,
)
from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.paths import Paths
from mnemonic.store.database import migrate
from mnemonic.timeutil import utcnow

TOPICS = [
    "the staging deploy failed because the postgres migration timed out",
    "postgres migration on staging needs a longer statement timeout",
    "grafana alert for redis cache memory fired during the billing run",
    "redis cache eviction caused the billing invoice job to retry",
    "kubernetes pod crash loop after the docker image upgrade",
    "docker image build pipeline is flaky on the release branch",
    "merge conflict in the schema file blocked the release branch",
    "replica lag on the dashboard grew while vacuum ran on the primary",
    "latency dashboard shows the retry backoff doubling every minute",
    "decided to pin the postgres client library after the timeout incident",
    "the invoice pdf renderer leaks memory when fonts are missing",
    "release notes for the billing service mention the invoice retry fix",
]
QUERIES = [
    "postgres migration timeout",
    "billing invoice retry",
    "docker build flaky",
    "why did the pod crash",
]
TERMS = ["postgres", "migration", "billing", "invoice", "redis", "docker", "release", "lag"]


def _folder(paths: Paths) -> Path:
    return paths.data_dir / "recall-index"


def _fill(client: TestClient, texts: list[str], project: str = "alpha") -> list[str]:
    items = [{"content": t, "project": project} for t in texts]
    answer = client.post(
        "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": items}
    )
    assert answer.status_code in (200, 201), answer.text
    page = client.get("/api/v1/memories", params={"limit": 200, "state": "active"})
    return [m["id"] for m in page.json()["items"]]


def _answers(client: TestClient) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        answer = client.post("/api/v1/query", json={"query": query, "limit": 8, "min_score": 0})
        assert answer.status_code == 200, answer.text
        out.append([(r["memory"]["id"], r["score"]) for r in answer.json()["results"]])
    return out


def _same_answers(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> None:
    assert any(want), "the queries found nothing: the comparison would be empty"
    for a, b in zip(got, want, strict=True):
        assert [i for i, _ in a] == [i for i, _ in b]
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-3)


def _stop(client: TestClient) -> None:
    client.__exit__(None, None, None)


def _check(client: TestClient) -> None:
    client.portal.call(assert_index_matches_database, client.daemon, TERMS)  # type: ignore[attr-defined]


def _recall_index(client: TestClient) -> dict[str, Any]:
    health = client.get("/api/v1/health")
    assert health.status_code == 200, health.text
    described: dict[str, Any] = health.json()["recall_index"]
    return described


def _checkpoint(paths: Paths) -> Checkpoint:
    with sqlite3.connect(paths.database) as conn:
        found = read_checkpoint(conn)
    assert found is not None
    return found


def _logged(paths: Paths) -> int:
    with sqlite3.connect(paths.database) as conn:
        (count,) = conn.execute("SELECT count(*) FROM index_log").fetchone()
    return int(count)


def _wait_gone(path: Path, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not path.exists(), f"{path} is still there"


def test_a_clean_stop_saves_the_index_and_the_next_start_loads_it(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client()
    ids = _fill(first, TOPICS)
    amended = first.patch(
        f"/api/v1/memories/{ids[0]}",
        json={"content": "the staging deploy failed: the postgres migration lock timed out"},
    )
    assert amended.status_code == 200, amended.text
    assert first.delete(f"/api/v1/memories/{ids[1]}").status_code == 200  # forget: archived
    assert first.daemon.index.graph.edge_count > 0  # type: ignore[attr-defined]
    before = _answers(first)
    _stop(first)

    folder = _folder(paths)
    assert (folder / META).is_file()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for file in folder.iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file.name
    meta = json.loads((folder / META).read_text())
    point = _checkpoint(paths)
    assert (meta["token"], meta["position"]) == (point.token, point.position)
    assert point.behind == 0 and _logged(paths) == 0  # the log is pruned up to the save
    assert meta["counts"]["memories"] == len(TOPICS)

    second = make_client()
    described = _recall_index(second)
    assert described["state"] == "ready"
    assert described["built_from"] == "snapshot"
    assert described["replayed"] == 0
    assert described["build_seconds"] is not None
    assert folder.exists(), "a checkpoint stays valid until a newer one replaces it"
    _check(second)
    _same_answers(_answers(second), before)

    # the loaded parts take changes like built ones: new, amended, purged memories
    more = _fill(second, ["vacuum on the replica made the dashboard latency spike"])
    second.patch(f"/api/v1/memories/{more[0]}", json={"content": "billing invoice pdf leak"})
    assert _logged(paths) > 0  # each change is noted for the next start
    purged = second.post("/api/v1/purge", json={"memory_ids": [ids[2]]})
    assert purged.status_code == 200, purged.text
    _wait_gone(folder)  # the checkpoint held the purged memory's vector and postings
    _check(second)


def test_writes_made_while_no_daemon_runs_are_replayed_onto_the_checkpoint(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client()
    _fill(first, TOPICS[:6])
    _stop(first)
    assert (_folder(paths) / META).is_file()
    now = "2024-05-01T00:00:00.000000+00:00"
    with sqlite3.connect(paths.database) as conn:  # an offline tool, no daemon running
        seqs = [r[0] for r in conn.execute("SELECT seq FROM memories ORDER BY seq")]
        conn.execute("UPDATE memories SET salience = 0.99 WHERE seq = ?", (seqs[0],))
        conn.execute("UPDATE memories SET content = 'grafana vacuum' WHERE seq = ?", (seqs[1],))
        conn.execute("DELETE FROM associations")
        conn.execute(
            "INSERT INTO associations (source_seq, target_seq, relation, strength, created_at,"
            " updated_at) VALUES (?, ?, 'related', 0.42, ?, ?)",
            (seqs[2], seqs[3], now, now),
        )
        conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (seqs[4],))
    assert _checkpoint(paths).behind > 0

    second = make_client()
    described = _recall_index(second)
    assert described["built_from"] == "snapshot"
    assert described["replayed"] >= 5
    _check(second)  # the index equals the database: every offline change is in it
    index = second.daemon.index  # type: ignore[attr-defined]
    traits = index.columns.traits(seqs[0])
    assert traits is not None and traits.salience == pytest.approx(0.99)
    assert index.graph.edge_count == 1
    assert len(index.vectors) == 5


def test_after_kill_9_the_next_start_loads_the_checkpoint_and_replays_the_log(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    """The checkpoint is saved in the background after the first build; writes after it
    are only in the log when the daemon is killed; the next start replays them."""
    env = {
        "MNEMONIC_RECALL__SNAPSHOT_CHECK_S": "0.2",
        "MNEMONIC_RECALL__SNAPSHOT_QUIET_S": "0",
    }
    with running(paths.data_dir.parent, env=env) as proc, proc.client() as http:
        items = [{"content": t, "project": "alpha"} for t in TOPICS[:8]]
        answer = http.post(
            "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": items}
        )
        assert answer.status_code in (200, 201), answer.text
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            point = http.get("/api/v1/health").json()["recall_index"]["checkpoint"]
            if point["saves"] >= 1 and point["last_position"] >= 8:
                break
            time.sleep(0.1)
        assert point["saves"] >= 1, point
        assert point["last_reason"] in ("built from SQLite", "no checkpoint yet") or (
            "changes" in point["last_reason"]
        )
        saved_at = point["last_position"]
        items = [{"content": t, "project": "beta"} for t in TOPICS[8:]]
        answer = http.post(
            "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": items}
        )
        assert answer.status_code in (200, 201), answer.text
        proc.send(signal.SIGKILL)
        proc.wait(10)
    point = _checkpoint(paths)
    assert point.position == saved_at and point.behind > 0  # the last writes: only logged

    client = make_client()
    described = _recall_index(client)
    assert described["built_from"] == "snapshot"
    assert described["replayed"] > 0
    _check(client)
    assert len(client.daemon.index.columns) == len(TOPICS)  # type: ignore[attr-defined]


def test_a_truncated_file_is_ignored_and_the_start_builds_from_sqlite(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client()
    _fill(first, TOPICS[:6])
    before = _answers(first)
    _stop(first)
    matrix = _folder(paths) / "vectors.matrix.npy"
    data = matrix.read_bytes()
    matrix.write_bytes(data[: len(data) // 2])

    second = make_client()
    assert _recall_index(second)["built_from"] == "sqlite"
    _check(second)
    _same_answers(_answers(second), before)
    _stop(second)  # the build is saved again at the stop (small: within the budget)
    assert (_folder(paths) / META).is_file()
    assert _checkpoint(paths).behind == 0


def test_a_checkpoint_the_database_did_not_record_is_not_used(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    """An older checkpoint, or a database restored from a backup: the tokens differ."""
    first = make_client()
    _fill(first, TOPICS[:4])
    _stop(first)
    with sqlite3.connect(paths.database) as conn:
        conn.execute("UPDATE index_checkpoint SET token = 'another' WHERE id = 1")
    second = make_client()
    assert _recall_index(second)["built_from"] == "sqlite"
    _check(second)


# ---- a saved folder, loaded directly: every kind of damage is refused ----------------------


@pytest.fixture
def saved(make_client: Callable[..., TestClient], paths: Paths, tmp_path: Path) -> Path:
    """A snapshot of a few memories, copied aside (the original stays untouched)."""
    client = make_client()
    _fill(client, TOPICS[:5])
    _stop(client)
    copy = tmp_path / "saved"
    shutil.copytree(_folder(paths), copy)
    return copy


def _load(folder: Path, paths: Paths, model: str, **changes: Any) -> object:
    args: dict[str, Any] = {
        "model": model,
        "dim": 384,
        "exact_max": 200_000,
        "checkpoint": _checkpoint(paths),
    }
    args.update(changes)
    return load_snapshot(folder, **args)


def _rewrite(folder: Path, part: str, array: np.ndarray) -> None:
    """Replace one part's array and record its size and checksum, as a consistent but
    wrong file would be (so only the structural checks can catch it)."""
    meta = json.loads((folder / META).read_text())
    entry = meta["parts"][part]
    path = folder / entry["file"]
    path.unlink()
    np.save(path, array, allow_pickle=False)
    entry["bytes"] = path.stat().st_size
    entry["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    entry["shape"] = list(array.shape)
    entry["dtype"] = array.dtype.str
    (folder / META).write_text(json.dumps(meta))


def _array(folder: Path, part: str) -> np.ndarray:
    meta = json.loads((folder / META).read_text())
    loaded: np.ndarray = np.load(folder / meta["parts"][part]["file"])
    return loaded


def _flip_byte(folder: Path) -> None:
    path = folder / "fulltext.freqs.npy"
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x40
    path.write_bytes(bytes(data))


def _meta_edit(**values: Any) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        meta = json.loads((folder / META).read_text())
        meta.update(values)
        (folder / META).write_text(json.dumps(meta))

    return edit


def _offsets_backwards(folder: Path) -> None:
    offsets = _array(folder, "fulltext.offsets")
    offsets[1], offsets[2] = offsets[2], offsets[1]
    _rewrite(folder, "fulltext.offsets", offsets)


def _seq_out_of_range(folder: Path) -> None:
    seqs = _array(folder, "fulltext.seqs")
    seqs[0] = 10**6
    _rewrite(folder, "fulltext.seqs", seqs)


def _wrong_dtype(folder: Path) -> None:
    _rewrite(folder, "columns.salience", _array(folder, "columns.salience").astype(np.float64))


def _nan_vector(folder: Path) -> None:
    matrix = _array(folder, "vectors.matrix")
    matrix[-1, 0] = np.nan
    _rewrite(folder, "vectors.matrix", matrix)


def _bad_state(folder: Path) -> None:
    state = _array(folder, "columns.state")
    state[-1] = 100
    _rewrite(folder, "columns.state", state)


def _bad_edge(folder: Path) -> None:
    strength = _array(folder, "graph.strength")
    if len(strength):
        strength[0] = 2.0
        _rewrite(folder, "graph.strength", strength)
    else:
        _rewrite(folder, "graph.indptr", np.array([0, 1], np.int64))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "meta not json": lambda f: (f / META).write_text("{not json"),
    "meta a list": lambda f: (f / META).write_text("[]"),
    "meta gone": lambda f: (f / META).unlink(),
    "a file gone": lambda f: (f / "graph.other.npy").unlink(),
    "a file truncated": lambda f: (f / "fulltext.keys.npy").write_bytes(b"\x93NUMPY"),
    "a flipped byte": _flip_byte,
    "another format": _meta_edit(format=99),
    "another model": _meta_edit(model="other-model"),
    "another dim": _meta_edit(dim=768),
    "another token": _meta_edit(token="0" * 32),
    "another log position": _meta_edit(position=-5),
    "another store": _meta_edit(store="0" * 32),
    "a path in a file name": lambda f: _meta_edit(
        parts={
            **json.loads((f / META).read_text())["parts"],
            "graph.other": {"file": "../../etc/passwd"},
        }
    )(f),
    "offsets not monotone": _offsets_backwards,
    "a posting out of range": _seq_out_of_range,
    "a wrong dtype": _wrong_dtype,
    "a vector not finite": _nan_vector,
    "a state code out of range": _bad_state,
    "an edge out of bounds": _bad_edge,
    "a passage row without its vector": lambda f: _rewrite(
        f, "passages.owner", np.array([1], dtype=np.int64)
    ),
    "a passage owner out of range": lambda f: _rewrite(
        f, "passages.owner", np.array([-7], dtype=np.int64)
    ),
}


def test_a_sound_snapshot_loads(saved: Path, paths: Paths, embedder: OnnxEmbedder) -> None:
    built = _load(saved, paths, embedder.name)
    assert built is not None
    assert _load(saved, paths, embedder.name, exact_max=2) is None  # a build makes HNSW


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_snapshot_is_refused_without_raising(
    saved: Path,
    paths: Paths,
    embedder: OnnxEmbedder,
    damage: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    DAMAGE[damage](saved)
    caplog.set_level("INFO", logger="mnemonic.index.snapshot")
    assert _load(saved, paths, embedder.name) is None
    assert "snapshot" in caplog.text


# ---- HNSW, purges, the setting ----------------------------------------------------------------


def _hnsw_texts(n: int) -> list[str]:
    words = [*TERMS, "vacuum", "replica", "grafana", "kubernetes", "pipeline", "schema"]
    rng = np.random.default_rng(5)
    return [" ".join(rng.choice(words, size=7)) + f" note {i}" for i in range(n)]


def test_the_hnsw_vector_index_round_trips(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client(recall={"vector_exact_max": 10})
    _fill(first, _hnsw_texts(30))
    _stop(first)  # saved on HNSW, or not at all if the switch was still under way
    second = make_client(recall={"vector_exact_max": 10})  # from that snapshot or SQLite
    assert second.daemon.index.vectors.kind.startswith("usearch-hnsw")  # type: ignore[attr-defined]
    before = _answers(second)
    _stop(second)
    meta = json.loads((_folder(paths) / META).read_text())
    assert meta["vectors"].startswith("usearch-hnsw")
    assert (_folder(paths) / "vectors.usearch").is_file()
    signs = meta["parts"].pop("vectors.signs")
    assert signs["shape"][0] > 30 and signs["dtype"] == "<u8"
    # a checkpoint from before the sign bits: they are read back from the HNSW index
    (_folder(paths) / signs["file"]).unlink()
    (_folder(paths) / META).write_text(json.dumps(meta))

    third = make_client(recall={"vector_exact_max": 10})
    described = _recall_index(third)
    assert described["built_from"] == "snapshot"
    assert described["entry_points"]["vectors"]["kind"].startswith("usearch-hnsw")
    _check(third)
    _same_answers(_answers(third), before)


def test_the_hnsw_passage_index_round_trips(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    """Memories of two sentences give passage rows past a tiny ``vector_exact_max``: the
    passage index moves to HNSW, is saved as usearch's file with its owners, and the next
    start loads it and answers as before."""
    texts = [f"{a}. {b}" for a, b in zip(_hnsw_texts(24), reversed(_hnsw_texts(24)), strict=True)]
    first = make_client(recall={"vector_exact_max": 10})
    _fill(first, texts)
    passages = first.daemon.index.passages  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while passages.vectors.kind == "numpy-exact" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert passages.vectors.kind.startswith("usearch-hnsw") and len(passages) > 10
    _stop(first)
    meta = json.loads((_folder(paths) / META).read_text())
    assert meta["passages"].startswith("usearch-hnsw")
    assert (_folder(paths) / "passages.usearch").is_file()
    assert meta["counts"]["passages"] == len(passages)
    second = make_client(recall={"vector_exact_max": 10})
    described = _recall_index(second)
    assert described["built_from"] == "snapshot"
    assert described["entry_points"]["passages"]["kind"].startswith("usearch-hnsw")
    _check(second)
    before = _answers(second)
    _stop(second)
    discard_snapshot(_folder(paths))
    third = make_client(recall={"vector_exact_max": 10})  # from SQLite: the same answers
    assert _recall_index(third)["built_from"] == "sqlite"
    _same_answers(_answers(third), before)


def test_a_purge_leaves_nothing_of_the_memory_in_the_snapshot(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    client = make_client()
    _fill(client, TOPICS[:4])
    runbook = "the vault token rotation runbook lives in hush-hush. Rotate the token monthly."
    secret = _fill(client, [runbook], "hush")
    target = next(i for i in secret if client.get(f"/api/v1/memories/{i}").json()["project"])
    with sqlite3.connect(paths.database) as conn:
        (seq,) = conn.execute("SELECT seq FROM memories WHERE id = ?", (target,)).fetchone()
    assert client.post("/api/v1/purge", json={"memory_ids": [target]}).status_code == 200
    _stop(client)
    folder = _folder(paths)
    meta = json.loads((folder / META).read_text())
    assert "hush" not in meta["projects"]
    assert not np.any(np.load(folder / "vectors.matrix.npy")[seq])
    assert not np.load(folder / "vectors.present.npy")[seq]
    assert seq not in np.load(folder / "fulltext.seqs.npy")
    owner = np.load(folder / "passages.owner.npy")
    matrix = np.load(folder / "passages.matrix.npy")
    assert seq not in owner  # its two passages went too, their rows blanked
    freed = np.flatnonzero(owner[: len(matrix)] < 0)
    assert len(freed) == 2 and not np.any(matrix[freed])
    assert np.load(folder / "columns.state.npy")[seq] == 0
    assert np.load(folder / "columns.salience.npy")[seq] == 0


def _stored(folder: Path, part: str, keys: list[int]) -> list[bytes]:
    """The int8 bytes the saved HNSW file of ``part`` holds for ``keys``."""
    from mnemonic.index.hnsw import Index  # usearch after onnxruntime (see there)

    index = Index.restore(str(folder / f"{part}.usearch"))
    assert index is not None
    return [np.asarray(index.get(key, dtype=np.int8)).tobytes() for key in keys]


def test_a_purge_on_hnsw_overwrites_the_vectors_and_checkpoints_go_on(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    """usearch keeps a removed vector's bytes in its file until an add reuses the slot.
    After a purge the index overwrites every freed slot (``HnswVectors.scrub``), so the
    next checkpoint holds nothing of the purged memory (vector, passages, sign bits) and
    the next start loads it instead of building from SQLite."""
    texts = [f"{a}. {b}" for a, b in zip(_hnsw_texts(24), reversed(_hnsw_texts(24)), strict=True)]
    first = make_client(recall={"vector_exact_max": 10})
    ids = _fill(first, texts)
    index = first.daemon.index  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while "numpy-exact" in (index.vectors.kind, index.passages.vectors.kind):
        assert time.monotonic() < deadline, "no switch to HNSW"
        time.sleep(0.05)
    _stop(first)
    folder = _folder(paths)
    with sqlite3.connect(paths.database) as conn:
        (seq,) = conn.execute("SELECT seq FROM memories WHERE id = ?", (ids[0],)).fetchone()
    rows = [int(r) for r in np.flatnonzero(np.load(folder / "passages.owner.npy") == seq)]
    assert len(rows) == 2  # its two sentences
    vector_bytes = _stored(folder, "vectors", [seq])
    passage_bytes = _stored(folder, "passages", rows)
    assert all(b in (folder / "vectors.usearch").read_bytes() for b in vector_bytes)  # control
    assert np.any(np.load(folder / "vectors.signs.npy")[seq])

    second = make_client(recall={"vector_exact_max": 10})
    assert _recall_index(second)["built_from"] == "snapshot"
    assert second.post("/api/v1/purge", json={"memory_ids": [ids[0]]}).status_code == 200
    _wait_gone(folder)  # the old checkpoint held the purged memory
    index = second.daemon.index  # type: ignore[attr-defined]
    deadline = time.monotonic() + 10
    while index.forgot_since_build:
        assert time.monotonic() < deadline, "the freed slots were not overwritten"
        time.sleep(0.02)
    _stop(second)

    meta = json.loads((folder / META).read_text())
    assert meta["vectors"].startswith("usearch-hnsw") and meta["passages"].startswith("usearch")
    saved = (folder / "vectors.usearch").read_bytes()
    assert not any(b in saved for b in vector_bytes)
    saved = (folder / "passages.usearch").read_bytes()
    assert not any(b in saved for b in passage_bytes)
    assert not np.any(np.load(folder / "vectors.signs.npy")[seq])
    assert not np.any(np.load(folder / "passages.signs.npy")[rows])
    third = make_client(recall={"vector_exact_max": 10})
    assert _recall_index(third)["built_from"] == "snapshot"
    _check(third)


def test_with_the_setting_off_nothing_is_saved_and_an_old_snapshot_goes(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client()
    _fill(first, TOPICS[:3])
    _stop(first)
    assert _folder(paths).exists()
    leftover = paths.data_dir / ".recall-index.123.abcd.tmp"  # a crash mid-save
    leftover.mkdir()
    second = make_client(recall={"index_snapshot": False})
    assert _recall_index(second)["built_from"] == "sqlite"
    assert not _folder(paths).exists()
    assert not leftover.exists()
    _fill(second, TOPICS[3:6])
    assert _logged(paths) > 0
    daemon = second.daemon  # type: ignore[attr-defined]
    assert second.portal.call(daemon.checkpoints.tick) is None  # type: ignore[attr-defined]
    assert _logged(paths) == 0, "with no checkpoints the log must not pile up"
    assert _checkpoint(paths).token is None
    _stop(second)
    assert not _folder(paths).exists()


def test_discard_removes_the_folder_and_leftovers(tmp_path: Path) -> None:
    folder = tmp_path / "recall-index"
    for path in (folder, tmp_path / ".recall-index.1.ff.tmp", tmp_path / ".recall-index.2.ee.old"):
        path.mkdir()
        (path / "x.npy").write_bytes(b"x")
    keep = tmp_path / "mnemonic.db"
    keep.write_bytes(b"db")
    discard_snapshot(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mnemonic.db"]
    discard_snapshot(folder)  # nothing there: no error


# ---- migration 0008 ------------------------------------------------------------------------


def test_the_log_notes_every_key_the_index_copies_once(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    migrate(db, StorageConfig())
    conn = sqlite3.connect(db, isolation_level=None)
    now = "2024-05-01T00:00:00.000000+00:00"

    def notes() -> list[tuple[int, int, int, str]]:
        return [tuple(r) for r in conn.execute("SELECT kind, a, b, c FROM index_log ORDER BY id")]

    def last_note(sql: str, *args: object) -> tuple[int, int, int, str]:
        conn.execute(sql, args)
        return notes()[-1]

    point = read_checkpoint(conn)
    assert point is not None and len(point.store) == 32
    assert (point.token, point.position, point.head) == (None, 0, 0)
    for seq in (1, 2):
        conn.execute(
            "INSERT INTO raw_memories (id, content, content_hash, source, timestamp, created_at)"
            " VALUES (?, 'x', 'h', 'api', ?, ?)",
            (f"r{seq}", now, now),
        )
    assert notes() == []  # raw memories are not in the index
    for seq in (1, 2):
        assert last_note(
            "INSERT INTO memories (seq, id, raw_id, content, content_hash, summary, type,"
            " source, significance, salience, timestamp, created_at, updated_at)"
            " VALUES (?, ?, ?, 'x', 'h', 's', 'general', 'api', 0.5, 0.5, ?, ?, ?)",
            seq,
            f"m{seq}",
            f"r{seq}",
            now,
            now,
            now,
        ) == (2, seq, 0, "")
    assert last_note("UPDATE memories SET salience = 0.9 WHERE seq = 1") == (1, 1, 0, "")
    conn.execute("UPDATE memories SET content = 'y' WHERE seq = 1")  # its row and its text
    assert set(notes()[-2:]) == {(1, 1, 0, ""), (2, 1, 0, "")}
    assert last_note("INSERT INTO memory_vectors VALUES (1, 'model', 2, ?)", b"\0" * 8) == (
        3,
        1,
        0,
        "",
    )
    assert last_note("UPDATE memory_vectors SET vector = ? WHERE seq = 1", b"\1" * 8)[0] == 3
    # passages (0009) are noted under the memory's vector key, so a replay reads both
    passage = "INSERT OR REPLACE INTO memory_passages VALUES (1, 'model', 2, ?, ?)"
    assert last_note(passage, 1, b"\0" * 4) == (3, 1, 0, "")
    assert last_note(passage, 0, b"") == (3, 1, 0, "")
    assert last_note("UPDATE memory_passages SET count = 0 WHERE seq = 1") == (3, 1, 0, "")
    edge = (4, 1, 2, "similar")
    assert (
        last_note(
            "INSERT INTO associations (source_seq, target_seq, relation, strength, created_at,"
            " updated_at) VALUES (1, 2, 'similar', 0.5, ?, ?)",
            now,
            now,
        )
        == edge
    )
    assert last_note("UPDATE associations SET strength = 0.7 WHERE source_seq = 1") == edge
    assert last_note("DELETE FROM associations WHERE source_seq = 1") == edge
    assert last_note("DELETE FROM memory_vectors WHERE seq = 1")[0] == 3
    assert last_note("DELETE FROM memory_passages WHERE seq = 1") == (3, 1, 0, "")
    assert last_note("DELETE FROM memories WHERE seq = 2") == (1, 2, 0, "")
    # one note per key, the newest: seq 1 row and text, seq 2 text and row, the vector, the edge
    assert sorted(notes()) == sorted(
        [(1, 1, 0, ""), (2, 1, 0, ""), (2, 2, 0, ""), (1, 2, 0, ""), (3, 1, 0, ""), edge]
    )
    before = notes()
    conn.execute("INSERT INTO system_meta VALUES ('k', 'v', ?)", (now,))
    assert notes() == before  # other tables are not noted
    point = read_checkpoint(conn)
    assert point is not None and point.head >= len(before) and point.behind == point.head
    conn.close()


def test_term_keys_are_the_same_in_every_process() -> None:
    """A saved full-text index is keyed by term hashes: Python's ``hash()`` is salted per
    process, so keys must come from a stable hash or a loaded index finds nothing."""
    words = ["deploy", "postgr", "naïve", "日本語", "\ud800x"]
    code = (
        "import json, sys; from mnemonic.index.fulltext import term_key;"
        "print(json.dumps([term_key(w) for w in json.loads(sys.argv[1])]))"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(words)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        assert json.loads(out.stdout) == [term_key(w) for w in words]
    assert all(-(2**63) <= term_key(w) < 2**63 for w in words)


def test_a_build_stops_between_chunks_when_asked(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    """A build of a million memories takes minutes and holds a reader: a daemon told to
    stop sets the event and the build gives up at its next chunk, so the store can close."""
    client = make_client()
    _fill(client, [f"note {i} about the build stopping at chunk {i % 7}" for i in range(40)])
    _stop(client)
    conn = sqlite3.connect(paths.database, isolation_level=None)
    try:
        full = read_everything(conn, "all-MiniLM-L6-v2-int8", 384, 1000, chunk=8)
        assert len(full.columns) == 40
        stop = threading.Event()
        stop.set()
        with pytest.raises(BuildStopped):
            read_everything(conn, "all-MiniLM-L6-v2-int8", 384, 1000, chunk=8, stop=stop)
        assert not conn.in_transaction  # the read snapshot was released
    finally:
        conn.close()


def test_the_changed_edges_are_read_by_index_seeks_not_a_table_scan(tmp_path: Path) -> None:
    """Every write transaction that touches an edge reads it back (index/changes.py); a
    scan of the whole table cost 0.9 s a write at 6M edges."""
    db = tmp_path / "m.db"
    migrate(db, StorageConfig())
    conn = sqlite3.connect(db, isolation_level=None)
    now = "2024-05-01T00:00:00.000000+00:00"
    for seq in range(1, 41):
        conn.execute(
            "INSERT INTO raw_memories (id, content, content_hash, source, timestamp, created_at)"
            " VALUES (?, 'x', 'h', 'api', ?, ?)",
            (f"r{seq}", now, now),
        )
        conn.execute(
            "INSERT INTO memories (seq, id, raw_id, content, content_hash, summary, type,"
            " source, significance, salience, timestamp, created_at, updated_at)"
            " VALUES (?, ?, ?, 'x', 'h', 's', 'general', 'api', 0.5, 0.5, ?, ?, ?)",
            (seq, f"m{seq}", f"r{seq}", now, now, now),
        )
    for a in range(1, 41):
        for b in range(1, 41):
            if a != b:
                conn.execute(
                    "INSERT INTO associations (source_seq, target_seq, relation, strength,"
                    " created_at, updated_at) VALUES (?, ?, 'similar', ?, ?, ?)",
                    (a, b, (a * b % 97) / 97, now, now),
                )
    conn.execute("ANALYZE")
    wanted = [(3, 4, "similar"), (40, 1, "similar"), (5, 6, "related")]  # the last: gone
    params = [v for edge in wanted for v in edge]
    plan = " ".join(
        str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + edges_sql(3), params)
    )
    assert "SEARCH a USING" in plan and "SCAN a" not in plan, plan
    rows = conn.execute(edges_sql(3), params).fetchall()
    assert sorted(rows) == [
        (3, 4, "similar", pytest.approx(12 / 97)),
        (40, 1, "similar", pytest.approx(40 / 97)),
    ]
    conn.close()


def test_a_replay_that_outgrows_the_exact_index_moves_it_to_hnsw(
    make_client: Callable[..., TestClient], paths: Paths, embedder: OnnxEmbedder
) -> None:
    """The changes replayed at a start are applied in a worker thread; the switch to HNSW
    they call for must still start, without waiting for the next write."""
    first = make_client(recall={"vector_exact_max": 10})
    _fill(first, TOPICS[:8])
    _stop(first)
    more = [("alpha", text) for text in TOPICS[8:]]
    with_database(paths.database, lambda db: write_embedded(db, embedder, more, utcnow()))
    second = make_client(recall={"vector_exact_max": 10})
    index = second.daemon.index  # type: ignore[attr-defined]
    assert index.built_from == "snapshot" and index.replayed >= len(more)
    deadline = time.monotonic() + 30
    while not index.vectors.kind.startswith("usearch-hnsw") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert index.vectors.kind.startswith("usearch-hnsw")
    assert len(index.vectors) == len(TOPICS)
    _check(second)
