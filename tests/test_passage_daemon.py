"""Passage vectors in a real daemon with the real embedding model: written at encoding,
searched by recall, replaced by an amendment, gone with a purge, kept by a checkpoint,
and backfilled for a store from before migration 0009."""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Callable

import numpy as np
import pytest
from starlette.testclient import TestClient
from support.index_check import assert_index_matches_database

from mnemonic.encoding.passages import embed_with_passages
from mnemonic.index.columns import BoolArray
from mnemonic.paths import Paths
from mnemonic.store.base import Filters
from mnemonic.store.vector_rows import VectorModels, decode

STORY = (
    "Melanie: We took the kids camping by the lake last weekend. "
    "They were stoked for the dinosaur exhibit at the museum on the way back. "
    "My pottery class starts again in the autumn."
)
OTHERS = [
    "the staging deploy failed because the postgres migration timed out",
    "grafana alert for redis cache memory fired during the billing run",
    "Caroline: I went to the support group yesterday and it was powerful.",
]
QUESTION = "What do Melanie's kids like? Dinosaur museum exhibits."


def _remember(client: TestClient, content: str) -> str:
    answer = client.post("/api/v1/memories", params={"wait": "true"}, json={"content": content})
    assert answer.status_code in (200, 201), answer.text
    memory_id: str = answer.json()["memory_id"]
    return memory_id


def _row(paths: Paths, memory_id: str) -> tuple[int, int, bytes] | None:
    with sqlite3.connect(paths.database) as conn:
        row = conn.execute(
            "SELECT p.seq, p.count, p.vectors FROM memory_passages p"
            " JOIN memories m ON m.seq = p.seq WHERE m.id = ?",
            (memory_id,),
        ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), bytes(row[2]))


def _seq(paths: Paths, memory_id: str) -> int:
    with sqlite3.connect(paths.database) as conn:
        (seq,) = conn.execute("SELECT seq FROM memories WHERE id = ?", (memory_id,)).fetchone()
    return int(seq)


def _wait_for(check: Callable[[], bool], timeout_s: float = 60) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check() and time.monotonic() < deadline:
        time.sleep(0.1)
    return check()


def _everything(client: TestClient) -> BoolArray:
    index = client.daemon.index  # type: ignore[attr-defined]
    return index.columns.mask(Filters())  # type: ignore[no-any-return]


def test_a_memory_of_several_sentences_is_found_by_its_best_passage(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    client = make_client()
    story = _remember(client, STORY)
    others = [_remember(client, text) for text in OTHERS]
    seq, count, blob = _row(paths, story) or (0, 0, b"")
    assert count == 3  # one passage per sentence
    assert all((_row(paths, i) or (0, -1, b""))[1] == 0 for i in others)  # one sentence each
    daemon = client.daemon  # type: ignore[attr-defined]
    index = daemon.index
    assert index.passages.memories == 1 and len(index.passages) == 3
    query = daemon.embedder.embed([QUESTION])[0]
    stored = decode(blob, count, 384)
    best = float(np.max(stored @ query))
    whole_only = dict(index.nearest(query, 10, _everything(client), Filters()))
    with_passages = dict(index.nearest(query, 10, _everything(client), Filters(), passages=True))
    assert best > whole_only[seq]  # the dinosaur sentence beats the mean of three topics
    assert with_passages[seq] == pytest.approx(best, abs=1e-3)
    answer = client.post("/api/v1/query", json={"query": QUESTION, "limit": 3}).json()
    assert answer["results"][0]["memory"]["id"] == story


def test_the_setting_off_scores_by_the_whole_vector_only(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    client = make_client(recall={"passage_vectors": False})
    story = _remember(client, STORY)
    answer = client.post(
        "/api/v1/query", json={"query": QUESTION, "limit": 3, "explain": True}
    ).json()
    client.__exit__(None, None, None)
    on = make_client()  # the same store, the setting back on
    answer_on = on.post(
        "/api/v1/query", json={"query": QUESTION, "limit": 3, "explain": True}
    ).json()
    assert _cosine(answer_on, story) > _cosine(answer, story)


def _cosine(answer: dict[str, object], memory_id: str) -> float:
    results = answer["results"]
    assert isinstance(results, list)
    for result in results:
        if result["memory"]["id"] == memory_id:
            return float(result["explain"]["cosine"])
    raise AssertionError(f"{memory_id} not in the results")


def test_an_amendment_replaces_the_passages_and_a_purge_removes_them(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    client = make_client()
    story = _remember(client, STORY)
    index = client.daemon.index  # type: ignore[attr-defined]
    seq = _seq(paths, story)
    before = index.passages.of(seq)
    assert len(before) == 3
    amended = client.patch(
        f"/api/v1/memories/{story}",
        json={"content": "Melanie: the kids loved the lake. The museum was closed that day."},
    )
    assert amended.status_code == 200, amended.text
    assert (_row(paths, story) or (0, 0, b""))[1] == 2
    after = index.passages.of(seq)
    assert len(after) == 2 and float(np.max(after @ before.T)) < 0.999
    amended = client.patch(f"/api/v1/memories/{story}", json={"content": "Just one sentence."})
    assert amended.status_code == 200, amended.text
    assert (_row(paths, story) or (0, -1, b""))[1] == 0 and len(index.passages.of(seq)) == 0
    client.patch(f"/api/v1/memories/{story}", json={"content": STORY})
    assert len(index.passages.of(seq)) == 3
    purged = client.post("/api/v1/purge", json={"memory_ids": [story]})
    assert purged.status_code == 200, purged.text
    with sqlite3.connect(paths.database) as conn:
        assert (
            conn.execute("SELECT count(*) FROM memory_passages WHERE seq = ?", (seq,)).fetchone()[0]
            == 0
        )
    assert len(index.passages.of(seq)) == 0 and len(index.passages) == 0


def test_a_checkpoint_keeps_the_passages_and_a_restart_loads_them(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client()
    story = _remember(first, STORY)
    seq = _seq(paths, story)
    want = first.daemon.index.passages.of(seq)  # type: ignore[attr-defined]
    first.__exit__(None, None, None)  # a clean stop saves the checkpoint
    second = make_client()
    index = second.daemon.index  # type: ignore[attr-defined]
    assert index.built_from == "snapshot"
    got = index.passages.of(seq)
    assert got.shape == want.shape and np.allclose(got, want, atol=1e-6)


def test_a_store_without_passages_gets_them_in_the_background(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client()
    story = _remember(first, STORY)
    first.__exit__(None, None, None)
    with sqlite3.connect(paths.database) as conn:  # as a store from before migration 0009
        conn.execute("DELETE FROM memory_passages")
        conn.execute("DELETE FROM system_meta WHERE key = 'vectors_model'")
    assert _row(paths, story) is None
    second = make_client()
    _wait_for(lambda: _row(paths, story) is not None)
    assert (_row(paths, story) or (0, 0, b""))[1] == 3
    index = second.daemon.index  # type: ignore[attr-defined]
    _wait_for(lambda: index.passages.memories >= 1, 10)
    assert len(index.passages.of(_seq(paths, story))) == 3


def test_a_backfill_never_overwrites_an_amendment_made_while_the_model_ran(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    client = make_client()
    story = _remember(client, STORY)
    daemon = client.daemon  # type: ignore[attr-defined]
    store, name = daemon.store, daemon.embedder.name
    models = VectorModels(name, name)  # the default recipe is named by the model alone
    with sqlite3.connect(paths.database) as conn:  # as before migration 0009
        conn.execute("DELETE FROM memory_passages")
    stale = client.portal.call(store.stale_vectors, models, 10)  # type: ignore[attr-defined]
    assert [item.content for item in stale] == [STORY] and stale[0].whole_current
    amended = client.patch(
        f"/api/v1/memories/{story}",
        json={"content": "Melanie: the kids loved the lake. The museum was closed that day."},
    )
    assert amended.status_code == 200, amended.text
    old = [np.ones((3, 384), dtype=np.float32) / np.sqrt(384)]  # the old text's passages
    client.portal.call(store.store_passages, stale, old, models, 384)  # type: ignore[attr-defined]
    client.portal.call(store.store_vectors, stale, old[0][:1], models, old)  # type: ignore[attr-defined]
    assert (_row(paths, story) or (0, 0, b""))[1] == 2  # the amendment's two passages
    with sqlite3.connect(paths.database) as conn:
        (blob,) = conn.execute(
            "SELECT vector FROM memory_vectors WHERE seq = ?", (stale[0].seq,)
        ).fetchone()
    assert not np.allclose(np.frombuffer(blob, dtype=np.float32), old[0][0])


def _passage_model(paths: Paths, memory_id: str) -> str:
    with sqlite3.connect(paths.database) as conn:
        row = conn.execute(
            "SELECT p.model FROM memory_passages p JOIN memories m ON m.seq = p.seq WHERE m.id = ?",
            (memory_id,),
        ).fetchone()
    return "" if row is None else str(row[0])


def _whole(paths: Paths, seq: int) -> bytes:
    with sqlite3.connect(paths.database) as conn:
        (blob,) = conn.execute("SELECT vector FROM memory_vectors WHERE seq = ?", (seq,)).fetchone()
    return bytes(blob)


def test_changed_passage_settings_recut_every_memory_at_the_next_start(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client()
    story = _remember(first, STORY)
    seq = _seq(paths, story)
    name = first.daemon.embedder.name  # type: ignore[attr-defined]
    whole = _whole(paths, seq)
    assert _passage_model(paths, story) == name  # the default recipe: the model alone
    first.__exit__(None, None, None)

    # passage_cap 0: no passages from now on, and none left from before
    second = make_client(encoding={"passage_cap": 0})
    cut_none = f"{name}#passages(lead=4,cap=0)"
    assert _wait_for(lambda: _passage_model(paths, story) == cut_none)
    assert (_row(paths, story) or (0, -1, b""))[1] == 0
    index = second.daemon.index  # type: ignore[attr-defined]
    assert _wait_for(lambda: len(index.passages.of(seq)) == 0, 10)
    store = second.daemon.store  # type: ignore[attr-defined]
    assert _wait_for(
        lambda: second.portal.call(store.get_meta, "vectors_model") == cut_none + "+passages"  # type: ignore[attr-defined]
    )
    assert _whole(paths, seq) == whole  # only the passages were cut again
    second.__exit__(None, None, None)

    # a shorter lead: three passages again, each after the memory's first two words
    third = make_client(encoding={"passage_lead_words": 2})
    lead_two = f"{name}#passages(lead=2,cap=12)"
    assert _wait_for(lambda: _passage_model(paths, story) == lead_two)
    _, count, blob = _row(paths, story) or (0, 0, b"")
    assert count == 3
    embedder = third.daemon.embedder  # type: ignore[attr-defined]
    _vectors, passages = embed_with_passages(embedder.embed, [STORY], 2, 12)
    assert np.allclose(decode(blob, count, 384), passages[0], atol=2e-3)
    index = third.daemon.index  # type: ignore[attr-defined]
    assert _wait_for(lambda: len(index.passages.of(seq)) == 3, 10)
    third.__exit__(None, None, None)

    # a build from SQLite (no checkpoint) reads rows of a named recipe: the index must not
    # take only rows named by the bare model
    shutil.rmtree(paths.data_dir / "recall-index")
    fourth = make_client(encoding={"passage_lead_words": 2})
    index = fourth.daemon.index  # type: ignore[attr-defined]
    assert index.built_from == "sqlite"
    assert len(index.passages.of(seq)) == 3
    fourth.portal.call(assert_index_matches_database, fourth.daemon, ["dinosaur"])  # type: ignore[attr-defined]


def test_a_recut_cut_short_is_finished_even_after_the_settings_went_back(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client()
    ids = [
        _remember(
            first,
            f"Note {i}: the build broke on step {i}. We pinned numpy to 1.26 then."
            " The nightly job passed again.",
        )
        for i in range(100)
    ]
    name = first.daemon.embedder.name  # type: ignore[attr-defined]
    first.__exit__(None, None, None)

    # a new lead: the start schedules a re-cut of 100 memories, and forgets the recorded
    # recipe first, so a run stopped half-way is not mistaken for a finished one
    second = make_client(encoding={"passage_lead_words": 2})
    store = second.daemon.store  # type: ignore[attr-defined]
    recorded = second.portal.call(store.get_meta, "vectors_model")  # type: ignore[attr-defined]
    assert recorded in ("", f"{name}#passages(lead=2,cap=12)+passages")
    second.__exit__(None, None, None)  # most likely before the re-cut finished

    # back to the defaults: whatever the stopped run re-cut is cut again the default way
    make_client()
    assert _wait_for(lambda: all(_passage_model(paths, i) == name for i in ids))
    assert all((_row(paths, i) or (0, 0, b""))[1] == 3 for i in ids)


def test_a_recut_leaves_merged_twins_without_passages(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client()
    text = "The staging database password rotates every Monday morning. Dana keeps the new one."
    kept = _remember(first, text)
    answer = first.post(
        "/api/v1/memories", params={"wait": "true"}, json={"content": text + "!!"}
    ).json()
    assert answer["status"] == "reinforced" and answer["memory_id"] == kept
    with sqlite3.connect(paths.database) as conn:
        twin, state = conn.execute(
            "SELECT id, state FROM memories WHERE raw_id = ?", (answer["raw_id"],)
        ).fetchone()
    assert state == "merged"
    assert (_row(paths, twin) or (0, -1, b""))[1] == 0  # the encoder writes none for a twin
    name = first.daemon.embedder.name  # type: ignore[attr-defined]
    first.__exit__(None, None, None)

    make_client(encoding={"passage_lead_words": 2})
    recut = f"{name}#passages(lead=2,cap=12)"
    assert _wait_for(lambda: _passage_model(paths, twin) == _passage_model(paths, kept) == recut)
    assert (_row(paths, kept) or (0, 0, b""))[1] == 2
    assert (_row(paths, twin) or (0, -1, b""))[1] == 0  # never searched: still none


def test_damaged_vector_rows_are_left_out_then_embedded_again(
    make_client: Callable[..., TestClient], paths: Paths, caplog: pytest.LogCaptureFixture
) -> None:
    first = make_client()
    story = _remember(first, STORY)
    other = _remember(first, OTHERS[0])
    seq, other_seq = _seq(paths, story), _seq(paths, other)
    whole, (_, count, passages) = _whole(paths, other_seq), _row(paths, story) or (0, 0, b"")
    first.__exit__(None, None, None)
    # a page damaged on disk: one whole vector and one passage row cut short, and no
    # checkpoint, so the next start reads every row from SQLite
    with sqlite3.connect(paths.database) as conn:
        conn.execute("UPDATE memory_vectors SET vector = ? WHERE seq = ?", (whole[:100], other_seq))
        conn.execute("UPDATE memory_passages SET vectors = ? WHERE seq = ?", (passages[:7], seq))
    shutil.rmtree(paths.data_dir / "recall-index")

    second = make_client()
    index = second.daemon.index  # type: ignore[attr-defined]
    assert index.built_from == "sqlite"
    assert index.damaged == 2  # left out, not a failed build
    health = second.get("/api/v1/health").json()
    assert health["recall_index"]["damaged"] == 2
    assert any("2 stored vector rows are damaged" in r.getMessage() for r in caplog.records)
    # the repair writes both rows again, equal to a fresh embedding of their texts
    assert _wait_for(lambda: len(_whole(paths, other_seq)) == 384 * 4)
    assert _wait_for(lambda: len((_row(paths, story) or (0, 0, b""))[2]) == count * 384 * 2)
    assert np.allclose(
        np.frombuffer(_whole(paths, other_seq), dtype=np.float32),
        np.frombuffer(whole, dtype=np.float32),
        atol=1e-5,
    )
    assert np.allclose(
        decode(_row(paths, story)[2], count, 384),  # type: ignore[index]
        decode(passages, count, 384),
        atol=2e-3,
    )
    # and the index takes them from the change feed
    assert _wait_for(lambda: other_seq in index.vectors and len(index.passages.of(seq)) == count)
    second.portal.call(assert_index_matches_database, second.daemon, ["dinosaur"])  # type: ignore[attr-defined]


def test_damaged_rows_in_the_log_since_a_checkpoint_are_left_out_then_repaired(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    first = make_client()
    story = _remember(first, STORY)
    seq = _seq(paths, story)
    whole, (_, count, passages) = _whole(paths, seq), _row(paths, story) or (0, 0, b"")
    first.__exit__(None, None, None)  # a clean stop saves the checkpoint
    with sqlite3.connect(paths.database) as conn:  # the durable log notes both rows
        conn.execute("UPDATE memory_vectors SET vector = x'00' WHERE seq = ?", (seq,))
        conn.execute("UPDATE memory_passages SET vectors = x'0000' WHERE seq = ?", (seq,))
    second = make_client()
    index = second.daemon.index  # type: ignore[attr-defined]
    assert index.built_from == "snapshot"  # the replay read them: no failed load
    assert index.damaged == 2
    assert _wait_for(lambda: _whole(paths, seq) == whole)
    assert _wait_for(lambda: len((_row(paths, story) or (0, 0, b""))[2]) == len(passages))
    assert _wait_for(lambda: seq in index.vectors and len(index.passages.of(seq)) == count)
    answer = second.post("/api/v1/query", json={"query": QUESTION, "limit": 3})
    assert answer.json()["results"][0]["memory"]["id"] == story
