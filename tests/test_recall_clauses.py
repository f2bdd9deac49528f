"""A question that joins facts is searched by its clauses too (recall/clauses.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from starlette.testclient import TestClient

from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.recall.clauses import MAX_CLAUSES, SCANNED_CHARS, question_clauses
from tests.support.api import query, remember


@pytest.mark.parametrize(
    ("question", "clauses"),
    [
        ("How old was I when Alex was born?", ["How old was I", "Alex was born"]),
        (
            "How many years older am I than when I graduated from college?",
            ["How many years older am I", "I graduated from college"],
        ),
        (
            "Which did I buy first, the necklace or the photo album?",
            ["Which did I buy first, the necklace", "the photo album"],
        ),
        (
            "What did Caroline do after the parade and before the move?",
            ["What did Caroline do", "the parade", "the move"],
        ),
        (
            "WHEN did the deploy break AFTER the migration ran",
            ["did the deploy break", "the migration ran"],
        ),
        # one clause of two words or more is no join
        ("What did she tell Caroline and me?", []),
        ("When did I start running?", []),
        ("How many kitchen items did I replace or fix?", []),
        ("Where did I park?", []),
        # a connective inside a word is none ("Andrew", "sinceRe", "thank")
        ("What did Andrew thank Orla for?", []),
        ("", []),
        ("the cat and the cat or the dog", ["the cat", "the dog"]),  # each clause once
    ],
)
def test_a_question_is_cut_at_its_connectives(question: str, clauses: list[str]) -> None:
    assert question_clauses(question) == clauses


def test_clauses_are_bounded_and_only_the_question_start_is_read() -> None:
    many = " and ".join(f"the step number {i}" for i in range(20))
    assert len(question_clauses(many)) == MAX_CLAUSES
    late = "x " * SCANNED_CHARS + "what I did when it broke"
    assert question_clauses(late) == []


AGE = "I turned 32 last month and I keep wondering about a career change"
OTHERS = [
    "my niece arrived at three in the morning last spring",
    "the twins came a week early but they are fine",
    "our neighbour's baby girl arrived in June",
    "the new intern starts on Monday",
    "the baby shower is next weekend",
    "my sister is expecting her first child in May",
]
QUESTION = "How old was I when Alex was born?"


@pytest.mark.parametrize("fusion", ["linear", "rrf"])
def test_each_clause_brings_its_nearest_memories(
    make_client: Callable[..., TestClient], fusion: str
) -> None:
    """The note with the asker's age is the nearest memory of "How old was I": with the
    clauses searched it heads their list (``clause_rank`` 1), and that list adds to its
    direct strength by exactly its weight; without, no result has a clause rank.

    Direct strength is the lists' weighted shares over their total weight: full text 1.3
    (the question names Alex), vectors 1.0, clauses 0.5. The note holds none of the
    question's words, so it is w/o clauses v / 2.3 and with them (v + 0.5) / 2.8, v its
    share of the whole question's vector list, the same in both daemons. Rank fusion
    normalises by the same total (1 = first in every list), so the arithmetic is the
    same for it, with v the note's reciprocal rank over the first's."""
    direct: dict[float, float] = {}
    for clause_weight in (0.0, 0.5):
        client = make_client(
            recall={"clause_weight": clause_weight, "min_score": 0, "fusion": fusion}
        )
        for note in OTHERS:
            remember(client, note, project="p")
        age = remember(client, AGE, project="p")["memory_id"]
        results = query(client, QUESTION, project="p", explain=True)["results"]
        explained = {r["memory"]["id"]: r["explain"] for r in results}
        assert explained[age]["fts_rank"] is None
        direct[clause_weight] = explained[age]["direct"]
        if clause_weight:
            assert explained[age]["clause_rank"] == 1
        else:
            assert all(e["clause_rank"] is None for e in explained.values())
    share = direct[0.0] * 2.3
    assert 0 < share < 1
    assert direct[0.5] == pytest.approx((share + 0.5) / 2.8, rel=1e-6)


def test_the_named_time_weighs_the_clauses_as_the_whole_store_does(
    make_client: Callable[..., TestClient],
) -> None:
    """A question with clauses and a named time: the one note inside the window tops the
    window's full-text and vector lists but is no clause's nearest (the notes outside
    the window are nearer each clause). Its strength from the window is then its shares
    over the same total weight as the whole store's fusion, clauses included:
    (1.0 + 1.0 + 0) / 2.5 for a plain question, not the 1.0 a fusion without the
    clauses' list would give it."""
    asked = datetime(2023, 5, 31, 15, 0, tzinfo=UTC)
    client = make_client(
        recall={"vector_candidates": 2, "fts_candidates": 2, "spread_hops": 0, "min_score": 0}
    )
    inside = remember(
        client,
        "cooked a big pot of chili on the stove",
        project="p",
        timestamp=(asked - timedelta(days=14)).isoformat(),
    )["memory_id"]
    for note in [
        "What did I cook for dinner?",
        "my sister visited two weeks ago",
        "my sister visited us two weeks ago with the kids",
        "What did I cook for the party?",
    ]:
        remember(client, note, project="p", timestamp=(asked - timedelta(days=60)).isoformat())
    question = "What did I cook when my sister visited two weeks ago?"
    assert question_clauses(question) == ["What did I cook", "my sister visited two weeks ago"]
    results = query(
        client, question, project="p", explain=True, limit=2, asked_at=asked.isoformat()
    )["results"]
    explained = {r["memory"]["id"]: r["explain"] for r in results}
    assert explained[inside]["clause_rank"] is None
    assert explained[inside]["direct"] == pytest.approx(2.0 / 2.5, rel=1e-6)


def test_the_clauses_together_are_evidence_the_question_is_met(
    make_client: Callable[..., TestClient], embedder: OnnxEmbedder
) -> None:
    """Each note meets one clause of "How many years older am I than when I graduated
    from college?" better than the whole question meets either (the question's vector
    sits between them), and neither shares a word with it. With the relevance floor set
    between the question's best cosine and the mean of the clauses' best ones, only the
    clauses' evidence can answer: the question is answered with them and with nothing
    without them."""
    question = "How many years older am I than when I graduated from college?"
    notes = [
        "I just turned 32 last month",
        "I got my Business Administration degree back in 2012",
    ]
    clauses = question_clauses(question)
    vectors = np.asarray(embedder.embed([question, *clauses, *notes]))
    whole, parts, stored = vectors[0], vectors[1:3], vectors[3:]
    best_whole = float(np.max(stored @ whole))
    clause_mean = float(np.mean(np.max(stored @ parts.T, axis=0)))
    assert best_whole + 0.02 < clause_mean  # the case the evidence is for
    floor = (best_whole + clause_mean) / 2
    answered = {}
    for clause_weight in (0.0, 0.5):
        client = make_client(
            recall={"clause_weight": clause_weight, "vector_floor": floor, "min_score": 1e-6}
        )
        for note in notes:
            remember(client, note, project="p")
        answered[clause_weight] = len(query(client, question, project="p")["results"])
    assert answered == {0.0: 0, 0.5: 2}


def test_a_one_word_clause_is_no_evidence(make_client: Callable[..., TestClient]) -> None:
    """ "How did I feel" is near any note about a mood; the other clause of the question
    is near nothing here. Counted in the clauses' mean, the mood notes would answer an
    off-topic question; with a clause of one content word the question keeps its whole
    vector's evidence, which is none (default floor)."""
    client = make_client()
    for note in [
        "I felt really anxious and sad all day",
        "I was so happy and relaxed after the concert",
        "we were thrilled when the puppy came home",
    ]:
        remember(client, note, project="p")
    question = "How did I feel when the segfault in the linker happened?"
    assert question_clauses(question) == ["How did I feel", "the segfault in the linker happened"]
    assert query(client, question, project="p")["results"] == []
