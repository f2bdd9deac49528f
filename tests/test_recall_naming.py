"""Which questions name something (recall/naming.py): they keep the full-text weight."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from starlette.testclient import TestClient

from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.recall.naming import SCANNED_CHARS, names_something, proper_names, without_names
from tests.support.api import query, remember


@pytest.mark.parametrize(
    ("question", "named"),
    [
        # described only: matched better by meaning
        ("How many kitchen items did I replace or fix?", False),
        ("Which streaming service did I start using most recently?", False),
        ("What was the social media activity I participated 5 days ago?", False),
        ("I went to the store. What did I buy there?", False),  # sentence starts
        ("I'm looking for tips, e.g. on phone batteries", False),
        ("what did caroline say about the adoption", False),  # lower case: plain
        ("", False),
        ("Question: What did I buy for the party?", False),  # a colon starts a sentence
        ("remind me\nWhere did I park", False),  # so does a line break
        ("the 3rd time I went running, at 5pm, after the 10k", False),  # quantities
        ("is it OK to skip the warm-up?", False),
        # a proper name, possessive or not
        ("What did Caroline say about the adoption?", True),
        ("What is Caroline's identity?", True),
        ("How old was I when Alex was born?", True),
        ("How many stars do I need on my Starbucks app?", True),
        # capitals, numbers, identifiers
        ("How many MCU films did I watch?", True),
        ("ECONNREFUSED from the cache again", True),
        ("why does GitPython hang", True),
        ("the api_server crash on deploy", True),
        ("which commit touched src/app.py", True),
        ("where is config.yaml read", True),
        ("what broke on 2023-05-01", True),
        ("the fix for issue 4521", True),
        ("what did @dana say", True),
        ("any tips for cities, e.g. Paris?", True),  # "e.g." ends no sentence
        ("should we move to ipv6", True),
    ],
)
def test_names_something(question: str, named: bool) -> None:
    assert names_something(question) is named


def test_only_the_start_of_a_long_text_is_read() -> None:
    tail = " Caroline"
    assert names_something("x " * 10 + tail)
    assert not names_something("x " * SCANNED_CHARS + tail)


def test_a_plain_question_weighs_full_text_less_through_the_daemon(
    make_client: Callable[..., TestClient],
) -> None:
    """The same question typed with and without a capital: the embedding model is uncased
    and the full text folds case, so both find the same hits with the same scores, and
    only the full-text weight differs (1.3 named, 1.0 plain, vectors 1.0). A hit found by
    vectors alone has the fused strength v / (w + 1), v its vector share, so the named
    question's must be the plain one's times 2.0 / 2.3: a lower weight on the full text
    is a larger share for meaning. (Dana is on a quarter of the notes, so the question
    without her name would be searched too, a third list: off here.)"""
    client = make_client(recall={"common_name_share": 0})
    notes = [
        "Dana booked the noodle place for the team lunch",
        "no releases go out from Friday until the audit is over",
        "the deploy pipeline runs the migrations before the web servers",
        "lunch on Thursday is at the noodle place",
    ]
    for note in notes:
        remember(client, note, project="team")

    def vector_only(question: str) -> dict[str, float]:
        results = query(client, question, project="team", explain=True)["results"]
        return {
            r["memory"]["id"]: float(r["explain"]["direct"])
            for r in results
            if r["explain"]["fts_rank"] is None
        }

    plain = vector_only("when will dana pause shipping")
    named = vector_only("when will Dana pause shipping")
    assert names_something("when will Dana") and not names_something("when will dana")
    assert len(plain) == 3 and plain.keys() == named.keys()
    for memory_id, strength in plain.items():
        assert strength > 0
        assert named[memory_id] == pytest.approx(strength * 2.0 / 2.3, rel=1e-6)


def test_the_sql_path_weighs_the_full_text_by_the_same_cue(
    make_client: Callable[..., TestClient],
) -> None:
    """Through SQL (``recall.index: sql``, as while the index builds) the full text is the
    only entry point, so its best hit's fused strength is w / (w + 1): 1.3 / 2.3 named,
    1.0 / 2.0 plain."""
    client = make_client(recall={"index": "sql"})
    remember(client, "Dana booked the noodle place for the team lunch", project="team")
    remember(client, "lunch on Thursday is at the noodle place", project="team")

    def best(question: str) -> float:
        results = query(client, question, project="team", explain=True)["results"]
        top = next(r for r in results if r["explain"]["fts_rank"] == 1)
        return float(top["explain"]["direct"])

    assert best("where is dana booking lunch") == pytest.approx(1.0 / 2.0, rel=1e-6)
    assert best("where is Dana booking lunch") == pytest.approx(1.3 / 2.3, rel=1e-6)


@pytest.mark.parametrize(
    ("question", "names", "without"),
    [
        ("What does Melanie do to destress?", ["Melanie"], "What does do to destress?"),
        ("What do Melanie's kids like?", ["Melanie"], "What do kids like?"),
        ("What did Tim and John see in Paris?", ["Tim", "John", "Paris"], "What did and see in ?"),
        # not names: a sentence's first word, "I", acronyms, identifiers, numbers
        ("Melanie went where? I asked the API about v2 and api_server in 2023", [], None),
        ("How many kitchen items did I replace?", [], None),
        # a name inside another word stays: "Tim" is not taken out of "Timothy"
        ("What did Tim tell Timothy?", ["Tim", "Timothy"], "What did tell ?"),
    ],
)
def test_proper_names_and_the_question_without_them(
    question: str, names: list[str], without: str | None
) -> None:
    assert proper_names(question) == names
    if without is not None:
        assert without_names(question, names) == without
    assert without_names("What did Tim tell Timothy?", ["Tim"]) == "What did tell Timothy?"


SPEAKER_NOTES = [
    "Melanie: Wow, what an experience! How did it make you feel?",
    "Melanie: Been running longer lately, a great way to clear my head after work",
    "Melanie: The kids loved the museum trip last weekend",
    "Melanie: Thanks, Caroline! That means a lot to me.",
    "Melanie: I signed up for a pottery class yesterday",
    "Caroline: I went to a support group in Paris last month",
]


def test_a_name_most_memories_hold_is_left_out_of_one_more_search(
    make_client: Callable[..., TestClient], embedder: OnnxEmbedder
) -> None:
    """Melanie is on five of six notes: "What does Melanie do to destress?" is also
    searched as "What does do to destress?", in the clauses' ranking, whose first is the
    note nearest that wording. Paris is on one note, so a question naming only Paris is
    searched as it is (no clause ranks), and with ``common_name_share`` 0 neither is."""
    question = "What does Melanie do to destress?"
    wording = without_names(question, ["Melanie"])
    vectors = np.asarray(embedder.embed([wording, *SPEAKER_NOTES]))
    nearest = int(np.argmax(vectors[1:] @ vectors[0]))
    for share, searched in ((0.25, True), (0.0, False)):
        client = make_client(recall={"common_name_share": share, "min_score": 0})
        ids = [remember(client, note, project="chat")["memory_id"] for note in SPEAKER_NOTES]

        ranks = _clause_ranks(client, question)
        if searched:
            assert ranks[ids[nearest]] == 1
        else:
            assert set(ranks.values()) == {None}
        assert set(_clause_ranks(client, "What did I see in Paris?").values()) == {None}


def _clause_ranks(client: TestClient, question: str) -> dict[str, int | None]:
    results = query(client, question, project="chat", explain=True, limit=6)["results"]
    return {r["memory"]["id"]: r["explain"]["clause_rank"] for r in results}
