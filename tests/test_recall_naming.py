"""Which questions name something (recall/naming.py): they keep the full-text weight."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from starlette.testclient import TestClient

from mnemonic.llm.embedding.onnx import OnnxEmbedder
from mnemonic.recall.naming import (
    MAX_NAMES,
    SCANNED_CHARS,
    names_something,
    proper_names,
    speakers,
    without_names,
)
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
        # not names: a sentence's first word, "I", acronyms, identifiers, stopwords, numbers
        ("Melanie went where? I asked the API about v2 and api_server in 2023", [], None),
        ("How do I tune PostgreSQL on GitHub?", [], None),
        ("What Did The Team Decide", ["Team", "Decide"], "What Did The"),
        ("How many kitchen items did I replace?", [], None),
        # a name joined to another word stays: "Tim" is not taken out of "Timothy" or "Tim-Tam"
        ("Did Tim tell Timothy about the Tim-Tam?", ["Tim", "Timothy", "Tim-Tam"], None),
    ],
)
def test_proper_names_and_the_question_without_them(
    question: str, names: list[str], without: str | None
) -> None:
    assert proper_names(question) == [n for n in names if "-" not in n]
    if without is not None:
        assert without_names(question, names) == without
    assert without_names("Did Tim tell Timothy about the Tim-Tam?", ["Tim"]) == (
        "Did tell Timothy about the Tim-Tam?"
    )
    assert proper_names(" ".join(f"and N{'a' * i}me" for i in range(20))) == [
        f"N{'a' * i}me" for i in range(MAX_NAMES)
    ]


def test_a_speaker_is_a_name_most_sampled_holders_begin_with_as_a_label() -> None:
    samples = {
        "Melanie": ["Melanie: hi", "  Melanie: so tired", "Caroline: ask Melanie"],
        "Postgres": ["Postgres 16 is out", "bumped Postgres max_connections"],
        "Tim": ["Timothy: hello", "Tim - not a label"],  # "Timothy:" labels someone else
        "Ann": [],
        "Joe": ["Joe: a", "x Joe: b"],  # half is enough
    }
    assert speakers(samples) == ["Melanie", "Joe"]
    assert speakers({"Bo": [" " * 40 + "Bo: far in"]}) == []  # only the start is read


SPEAKER_NOTES = [
    "Melanie: Wow, what an experience! How did it make you feel?",
    "Melanie: Thanks, Caroline! That means a lot to me.",
    "Melanie: The kids loved the museum trip last weekend",
    "Melanie: I signed up for a pottery class yesterday",
    "Melanie: Long runs in the evening are how I unwind and clear my head",
    "Caroline: I went to a support group in Paris last month",
]


def test_a_speakers_name_is_left_out_of_one_more_search(
    make_client: Callable[..., TestClient], embedder: OnnxEmbedder
) -> None:
    """Melanie labels five of six turns. "How does Melanie relax?" is nearest to the
    empty "Wow, what an experience!" turn, by her name; it is also searched as "How does
    relax?", in the clauses' ranking, whose first is the note about unwinding. A question
    naming only Paris (one note), or one that asks nothing without the name ("Who is
    Melanie?"), is searched as it is: no clause ranks; nor with ``common_name_share`` 0."""
    question = "How does Melanie relax?"
    wording = without_names(question, ["Melanie"])
    vectors = np.asarray(embedder.embed([question, wording, *SPEAKER_NOTES]))
    by_whole = int(np.argmax(vectors[2:] @ vectors[0]))
    by_wording = int(np.argmax(vectors[2:] @ vectors[1]))
    assert by_whole != by_wording  # the case the wording is for
    for share, searched in ((0.25, True), (0.0, False)):
        client = make_client(recall={"common_name_share": share, "min_score": 0})
        ids = [remember(client, note, project="chat")["memory_id"] for note in SPEAKER_NOTES]
        ranks = _clause_ranks(client, question)
        if searched:
            assert ranks[ids[by_wording]] == 1
        else:
            assert set(ranks.values()) == {None}
        for asked in ("What did I see in Paris?", "Who is Melanie?"):
            assert set(_clause_ranks(client, asked).values()) == {None}


def test_a_topic_held_as_widely_is_no_speaker(make_client: Callable[..., TestClient]) -> None:
    """Postgres is on half of a database project's notes, but as what they are about,
    not as a label: a question naming it is searched as it is."""
    client = make_client(recall={"min_score": 0})
    for note in [
        "bumped Postgres max_connections to 200 on the primary",
        "the Postgres replica lags during the nightly vacuum",
        "Postgres 16 upgrade is planned for the next maintenance window",
        "CI caches the pip wheels between runs",
        "Redis connection leak fixed in the worker pool",
        "Sentry alerts now go to the on-call channel",
    ]:
        remember(client, note, project="db")
    ranks = _clause_ranks(client, "What did I change about Postgres connections?", project="db")
    assert ranks and set(ranks.values()) == {None}


def _clause_ranks(
    client: TestClient, question: str, project: str = "chat"
) -> dict[str, int | None]:
    results = query(client, question, project=project, explain=True, limit=6)["results"]
    return {r["memory"]["id"]: r["explain"]["clause_rank"] for r in results}
