"""Passage vectors: the texts a memory is split into, the in-memory rows that search them
and collapse hits to their memory by max (encoding/passages.py, index/passages.py,
store/vector_rows.py)."""

from __future__ import annotations

import sqlite3
import threading

import numpy as np
import pytest

from mnemonic.encoding.passages import (
    SEPARATOR,
    embed_passages,
    embed_with_passages,
    passage_texts,
    sentences,
)
from mnemonic.index.passages import PassageVectors, best_of
from mnemonic.store.vector_rows import (
    PASSAGES_OF_MODEL,
    VectorModels,
    decode,
    embedding_model,
    passage_row,
    passages_of_model,
    vector_models,
)

DIM = 8


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.normal(size=(n, DIM)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


# ---- texts -----------------------------------------------------------------------------------


def test_a_memory_of_one_sentence_has_no_passages() -> None:
    assert passage_texts("The deploy failed on staging last night.", 4, 12) == []
    # pieces under three words are no sentence of their own
    assert passage_texts("Thanks! The deploy failed on staging last night.", 4, 12) == []


def test_each_sentence_is_led_by_the_memorys_first_words() -> None:
    text = "Caroline: I went to the support group. It was powerful! Next week is the parade."
    got = passage_texts(text, 2, 12)
    assert got == [
        "Caroline: I went to the support group.",  # it starts with the lead: kept as is
        f"Caroline: I{SEPARATOR}It was powerful!",
        f"Caroline: I{SEPARATOR}Next week is the parade.",
    ]
    assert passage_texts(text, 0, 12)[1] == "It was powerful!"


def test_past_the_cap_runs_of_adjacent_sentences_cover_the_whole_text() -> None:
    parts = [f"Sentence number {i} is here." for i in range(10)]
    got = passage_texts(" ".join(parts), 0, 3)
    assert len(got) == 3
    assert " ".join(got) == " ".join(parts)  # nothing dropped, order kept
    assert [g.count("Sentence") for g in got] == [4, 3, 3]
    assert passage_texts(" ".join(parts), 4, 0) == []


def test_paragraph_breaks_end_a_unit_without_punctuation() -> None:
    note = "deploy checklist for staging\n\nrun the migration with a longer timeout"
    assert sentences(note) == [
        "deploy checklist for staging",
        "run the migration with a longer timeout",
    ]


def test_a_huge_text_gives_at_most_cap_passages_and_keeps_every_word() -> None:
    text = "word " * 200_000 + ". " + "another sentence with words. " * 20_000
    got = passage_texts(text, 4, 12)
    assert len(got) == 12
    assert sum(len(p.split()) for p in got) >= 200_000 + 20_000 * 4


def test_embed_with_passages_embeds_once_and_hands_each_memory_its_rows() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return np.arange(len(texts) * 2, dtype=np.float32).reshape(len(texts), 2)

    contents = ["One sentence only here.", "First part is here. Second part is here."]
    whole, passages = embed_with_passages(embed, contents, 1, 12)
    assert len(calls) == 1 and calls[0][:2] == contents
    assert whole.tolist() == [[0, 1], [2, 3]]
    assert [p.shape[0] for p in passages] == [0, 2]
    assert passages[1].tolist() == [[4, 5], [6, 7]]  # its rows, in order


def test_a_backfill_embeds_the_passages_alone() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return np.ones((len(texts), 2), dtype=np.float32)

    contents = ["One sentence only here.", "First part is here. Second part is here."]
    passages = embed_passages(embed, contents, 0, 12, 2)
    assert calls == [["First part is here.", "Second part is here."]]  # no whole text
    assert [p.shape for p in passages] == [(0, 2), (2, 2)]
    assert embed_passages(embed, contents[:1], 0, 12, 2)[0].shape == (0, 2)
    assert len(calls) == 1  # nothing to embed: no call at all


# ---- storage ---------------------------------------------------------------------------------


def test_a_row_round_trips_through_float16_as_unit_vectors() -> None:
    rng = np.random.default_rng(1)
    vectors = _unit(rng, 3)
    seq, model, dim, count, blob = passage_row(7, "m", DIM, vectors)
    assert (seq, model, dim, count, len(blob)) == (7, "m", DIM, 3, 3 * DIM * 2)
    back = decode(blob, count, dim)
    assert np.allclose(np.linalg.norm(back, axis=1), 1.0, atol=1e-5)
    assert np.all(np.sum(back * vectors, axis=1) > 0.9999)
    assert decode(blob[:-2], count, dim).shape == (0, DIM)  # damaged: none, not wrong ones
    assert passage_row(7, "m", DIM, np.zeros((0, DIM), np.float32))[3] == 0


# ---- the in-memory rows ----------------------------------------------------------------------


def test_a_memory_scores_by_its_best_passage_and_appears_once() -> None:
    rng = np.random.default_rng(2)
    index = PassageVectors(DIM, exact_max=1000)
    rows = _unit(rng, 9)
    for seq, start in ((3, 0), (5, 3), (8, 6)):
        index.set(seq, rows[start : start + 3])
    query = rows[4]
    hits = index.search(query, 3, None)
    assert hits[0][0] == 5
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert len({s for s, _ in hits}) == len(hits)  # one hit per memory
    for seq, score in hits:
        assert score == pytest.approx(float(np.max(index.of(seq) @ query)), abs=1e-5)


def test_the_filter_is_a_mask_over_seqs() -> None:
    rng = np.random.default_rng(3)
    index = PassageVectors(DIM, exact_max=1000)
    rows = _unit(rng, 4)
    index.set(1, rows[:2])
    index.set(2, rows[2:])
    allowed = np.zeros(3, dtype=np.bool_)
    allowed[2] = True
    assert [s for s, _ in index.search(rows[0], 5, allowed)] == [2]
    assert index.search(rows[0], 5, np.zeros(3, dtype=np.bool_)) == []
    assert index.search(rows[0], 5, np.zeros(2, dtype=np.bool_)) == []  # shorter mask


def test_replacing_and_removing_reuse_rows_and_forget_the_old_ones() -> None:
    rng = np.random.default_rng(4)
    index = PassageVectors(DIM, exact_max=1000)
    old = _unit(rng, 3)
    index.set(1, old)
    new = _unit(rng, 2)
    index.set(1, new)
    assert len(index) == 2 and index.memories == 1
    assert np.allclose(index.of(1), new)
    assert index.owner().tolist().count(1) == 2  # the third old row is free (-1)
    index.set(2, _unit(rng, 1))
    assert len(index.owner()) == 3  # the freed row was reused, no new one
    index.remove([1, 99])
    assert index.memories == 1 and len(index) == 1
    assert index.search(new[0], 5, None)[0][0] == 2
    index.set(2, np.zeros((0, DIM), np.float32))  # none: removed
    assert len(index) == 0 and index.search(new[0], 5, None) == []


def test_a_snapshot_owner_array_restores_the_same_answers() -> None:
    rng = np.random.default_rng(5)
    index = PassageVectors(DIM, exact_max=1000)
    for seq in range(1, 6):
        index.set(seq, _unit(rng, int(rng.integers(1, 4))))
    index.remove([3])
    restored = PassageVectors(DIM, exact_max=1000)
    restored.adopt(index.vectors, index.owner())
    query = _unit(rng, 1)[0]
    assert restored.search(query, 5, None) == index.search(query, 5, None)
    assert restored.memories == 4
    free = index.owner().tolist().index(-1)
    restored.set(6, _unit(rng, 2))  # the free row of 3 first, then a new one
    assert restored.owner()[free] == 6
    assert len(restored.owner()) == len(index.owner()) + 1


def test_loading_at_start_groups_rows_by_their_owner() -> None:
    rng = np.random.default_rng(6)
    rows = _unit(rng, 5)
    index = PassageVectors(DIM, exact_max=1000)
    index.load(np.array([4, 4, 7, 7, 7]), rows)
    assert index.memories == 2
    assert np.allclose(index.of(7), rows[2:])
    with pytest.raises(RuntimeError):
        index.load(np.array([1]), rows[:1])


def test_past_the_exact_limit_the_rows_search_through_hnsw() -> None:
    rng = np.random.default_rng(7)
    index = PassageVectors(DIM, exact_max=10)
    rows = _unit(rng, 40)
    index.load(np.repeat(np.arange(1, 21), 2), rows)
    assert index.vectors.kind.startswith("usearch-hnsw")
    assert index.search(rows[7], 1, None)[0][0] == 4  # rows 6 and 7 belong to seq 4


def test_best_of_keeps_each_memorys_higher_cosine() -> None:
    whole = [(1, 0.5), (2, 0.4)]
    passages = [(2, 0.7), (3, 0.45), (1, 0.2)]
    assert best_of(whole, passages, 3) == [(2, 0.7), (1, 0.5), (3, 0.45)]
    assert best_of(whole, passages, 1) == [(2, 0.7)]


def test_a_search_never_returns_a_memory_its_filter_excludes_while_rows_move() -> None:
    """Rows freed by one memory are handed to the next; a search in another thread that
    made its mask before the move must not report the row under a memory the filter
    excludes."""
    rng = np.random.default_rng(8)
    index = PassageVectors(DIM, exact_max=1000)
    rows = _unit(rng, 4)
    index.set(1, rows[:2])
    allowed = np.zeros(4, dtype=np.bool_)
    allowed[1] = True  # seq 2 and 3 are filtered out
    stop = threading.Event()
    seen: set[int] = set()

    def search() -> None:
        while not stop.is_set():
            seen.update(seq for seq, _ in index.search(rows[0], 3, allowed))

    worker = threading.Thread(target=search)
    worker.start()
    try:
        for i in range(3000):  # seq 1's rows go to 2 or 3 and come back, over and over
            other = 2 + i % 2
            index.remove([1])
            index.set(other, rows[:2])
            index.remove([other])
            index.set(1, rows[:2])
    finally:
        stop.set()
        worker.join()
    assert seen <= {1}


def test_passage_rows_name_their_recipe_unless_it_is_the_unnamed_one() -> None:
    # rows from before names: the first splitter with the first lead and cap
    assert vector_models("m", 4, 12, splitter=1) == VectorModels("m", "m")
    named = vector_models("m", 2, 12, splitter=1)
    assert named == VectorModels("m", "m#passages(lead=2,cap=12)")
    assert vector_models("m", 4, 0, splitter=1).passages == "m#passages(lead=4,cap=0)"
    # another splitter is another recipe, even with the unnamed lead and cap
    resplit = vector_models("m", 4, 12, splitter=2)
    assert resplit == VectorModels("m", "m#passages(lead=4,cap=12,split=2)")
    assert embedding_model(resplit.passages) == "m"
    assert embedding_model(named.passages) == "m" == embedding_model("m")
    # a model whose name extends another's is another model, with or without a recipe
    rows = ["m", named.passages, "m2", "m2#passages(lead=2,cap=12)", "m#other", resplit.passages]
    with sqlite3.connect(":memory:") as conn:
        conn.execute("CREATE TABLE memory_passages (model TEXT)")
        conn.executemany("INSERT INTO memory_passages VALUES (?)", [(r,) for r in rows])
        found = conn.execute(
            f"SELECT model FROM memory_passages WHERE {PASSAGES_OF_MODEL} ORDER BY model",
            passages_of_model("m"),
        ).fetchall()
    assert [r[0] for r in found] == ["m", named.passages, resplit.passages]
    assert [embedding_model(r) for r in rows] == ["m", "m", "m2", "m2", "m#other", "m"]
    # a model whose own name holds the mark: the SQL and the feed agree on it
    odd = vector_models("a#passages(x)", 2, 12, splitter=1).passages
    assert embedding_model(odd) == "a#passages(x)"
    with sqlite3.connect(":memory:") as conn:
        conn.execute("CREATE TABLE memory_passages (model TEXT)")
        conn.executemany("INSERT INTO memory_passages VALUES (?)", [(odd,), ("a",)])
        (hit,) = conn.execute(
            f"SELECT model FROM memory_passages WHERE {PASSAGES_OF_MODEL}",
            passages_of_model("a#passages(x)"),
        ).fetchall()
    assert hit == (odd,)
