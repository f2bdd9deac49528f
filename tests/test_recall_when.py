"""A question that names a time ("two weeks ago", "last Friday") is answered from it.

The phrase reader (``recall/when.py``) with exact windows, and the whole path through a
real daemon: the window lifts what is inside it (explained as ``when``), is searched as an
entry point of its own, counts back from ``asked_at``, and changes nothing when no memory
is inside it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient

from mnemonic.recall.fts_query import query_terms
from mnemonic.recall.when import SCANNED_CHARS, time_window
from tests.support.api import query, remember

ASKED = datetime(2023, 5, 31, 15, 0, tzinfo=UTC)  # a Wednesday
DAY = timedelta(days=1)
HALF_DAY = timedelta(hours=12)
MIDNIGHT = datetime(2023, 5, 31, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "start", "end"),
    [
        ("What did I fix yesterday?", MIDNIGHT - DAY - HALF_DAY, MIDNIGHT + HALF_DAY),
        (  # 14 days back, give or take a quarter
            "What gardening did I do two weeks ago?",
            ASKED - timedelta(days=17.5),
            ASKED - timedelta(days=10.5),
        ),
        ("the social media post 5 days ago", ASKED - 6.25 * DAY, ASKED - 3.75 * DAY),
        ("a couple of months ago", ASKED - 60.8 * 1.25 * DAY, ASKED - 60.8 * 0.75 * DAY),
        (  # the Friday before (May 26), the whole day widened by half a day each side
            "Who did I meet last Friday?",
            datetime(2023, 5, 26, tzinfo=UTC) - HALF_DAY,
            datetime(2023, 5, 27, tzinfo=UTC) + HALF_DAY,
        ),
        (  # asked on a Wednesday: the Saturday and Sunday before
            "What did we do last weekend?",
            datetime(2023, 5, 27, tzinfo=UTC) - HALF_DAY,
            datetime(2023, 5, 29, tzinfo=UTC) + HALF_DAY,
        ),
        (  # the calendar week before this one, Monday to Sunday
            "What did we decide last week?",
            datetime(2023, 5, 22, tzinfo=UTC) - HALF_DAY,
            datetime(2023, 5, 29, tzinfo=UTC) + HALF_DAY,
        ),
        (
            "Which shoes did I clean last month?",
            datetime(2023, 4, 1, tzinfo=UTC) - HALF_DAY,
            datetime(2023, 5, 1, tzinfo=UTC) + HALF_DAY,
        ),
        (  # "the last month" is the month up to now, not the calendar one
            "How many plants did I buy in the last month?",
            ASKED - 30.4 * DAY - HALF_DAY,
            ASKED,
        ),
        ("over the past three weeks", ASKED - 21 * DAY - HALF_DAY, ASKED),
        ("the last 3 days", ASKED - 3 * DAY - HALF_DAY, ASKED),
        # calendar dates and months, each widened by half a day each side
        (
            "What painting did Melanie show on October 13, 2022?",
            datetime(2022, 10, 13, tzinfo=UTC) - HALF_DAY,
            datetime(2022, 10, 14, tzinfo=UTC) + HALF_DAY,
        ),
        (
            "What did Gina find on 1 February, 2023?",
            datetime(2023, 2, 1, tzinfo=UTC) - HALF_DAY,
            datetime(2023, 2, 2, tzinfo=UTC) + HALF_DAY,
        ),
        (  # no year: the latest such day up to the asking one (which counts)
            "notes from the May 31st meeting",
            MIDNIGHT - HALF_DAY,
            MIDNIGHT + DAY + HALF_DAY,
        ),
        (
            "What setback did I face in October 2022?",
            datetime(2022, 10, 1, tzinfo=UTC) - HALF_DAY,
            datetime(2022, 11, 1, tzinfo=UTC) + HALF_DAY,
        ),
        (
            "How many bikes did I service in March?",
            datetime(2023, 3, 1, tzinfo=UTC) - HALF_DAY,
            datetime(2023, 4, 1, tzinfo=UTC) + HALF_DAY,
        ),
        (  # asked in May: June is last year's
            "What did I plant in June?",
            datetime(2022, 6, 1, tzinfo=UTC) - HALF_DAY,
            datetime(2022, 7, 1, tzinfo=UTC) + HALF_DAY,
        ),
        (  # December runs into the next year
            "What did I donate in December 2022?",
            datetime(2022, 12, 1, tzinfo=UTC) - HALF_DAY,
            datetime(2023, 1, 1, tzinfo=UTC) + HALF_DAY,
        ),
        (  # "on", an ordinal or "of" make a plain number next to a month its day
            "What did we decide on March 3?",
            datetime(2023, 3, 3, tzinfo=UTC) - HALF_DAY,
            datetime(2023, 3, 4, tzinfo=UTC) + HALF_DAY,
        ),
        (
            "the party on the 4th of July",
            datetime(2022, 7, 4, tzinfo=UTC) - HALF_DAY,
            datetime(2022, 7, 5, tzinfo=UTC) + HALF_DAY,
        ),
        (  # a count after a comma is no day: all of May
            "In May, 10 of us went hiking. Where?",
            datetime(2023, 5, 1, tzinfo=UTC) - HALF_DAY,
            datetime(2023, 6, 1, tzinfo=UTC) + HALF_DAY,
        ),
        (  # nor a count before a unit
            "What did I skip in March 3 times?",
            datetime(2023, 3, 1, tzinfo=UTC) - HALF_DAY,
            datetime(2023, 4, 1, tzinfo=UTC) + HALF_DAY,
        ),
        (  # the latest February that had one
            "the February 29th launch",
            datetime(2020, 2, 29, tzinfo=UTC) - HALF_DAY,
            datetime(2020, 3, 1, tzinfo=UTC) + HALF_DAY,
        ),
        (
            "Which books did I read in 2020?",
            datetime(2020, 1, 1, tzinfo=UTC) - HALF_DAY,
            datetime(2021, 1, 1, tzinfo=UTC) + HALF_DAY,
        ),
    ],
)
def test_time_phrases_read_as_windows(question: str, start: datetime, end: datetime) -> None:
    window = time_window(question, ASKED)
    assert window is not None
    assert abs((window.start - start).total_seconds()) < 1
    assert abs((window.end - end).total_seconds()) < 1


@pytest.mark.parametrize(
    "question",
    [
        "What did I fix?",
        "How many days ago did I buy a smoker?",  # asks for the distance, names no time
        "Any movie to watch tonight?",  # the present, not where a memory is
        "the last time I went hiking",
        "at last",
        "99999 days ago",
        "\uff15 days ago",  # a full-width digit: not a number int() should read
        "May I ask you something?",  # a month name alone is read only after "in" and such
        "the march on the capital",
        "a party on February 30th",  # no such day
        "What will I do in 2030?",  # a year after the asking one
        "the trip on June 5, 2024",  # a date after the asking day
        "Why step 2 may fail",  # a plain number next to a month may be a count
        "These 2 may be related",
        "I met June 5 times",
        "Summarise it in 2000 words",  # a count, not a year
        "in 1850 or so",  # outside 1900..2199: not read as a year
        "",
    ],
)
def test_no_window_without_a_past_time_phrase(question: str) -> None:
    assert time_window(question, ASKED) is None


@pytest.mark.parametrize(
    ("question", "kept"),
    [
        # a count back: its words are no search terms
        ("What milestone did I mention four weeks ago?", ["milestone", "mention"]),
        ("plants repotted a couple of weeks ago", ["plants", "repotted"]),
        ("what 5 days ago", ["days", "ago"]),  # nothing else: all kept
        # a word the question uses elsewhere too stays
        (
            "How many days did the flu last that started three days ago?",
            ["many", "days", "flu", "last", "started"],
        ),
        # other phrases stay searched: answers often repeat them ("last weekend I ...")
        ("What did John volunteer at last weekend?", ["john", "volunteer", "last", "weekend"]),
        ("the trip in June", ["trip", "june"]),
    ],
)
def test_a_count_back_is_no_search_term(question: str, kept: list[str]) -> None:
    window = time_window(question, ASKED)
    assert window is not None
    assert window.search_terms(query_terms(question)) == kept


def test_edges_of_the_calendar_and_of_the_text() -> None:
    assert time_window("900 years ago", datetime(500, 1, 1, tzinfo=UTC)) is None
    assert time_window("last year", datetime(1, 6, 1, tzinfo=UTC)) is None
    assert time_window("word " * (SCANNED_CHARS // 5) + "yesterday", ASKED) is None
    naive = time_window("yesterday", datetime.fromisoformat("2023-05-31T15:00"))  # as UTC
    assert naive is not None and naive.start.tzinfo is not None


def test_closeness_is_one_inside_and_fades_over_one_width_outside() -> None:
    window = time_window("two weeks ago", ASKED)
    assert window is not None
    width = window.end - window.start
    assert window.closeness((window.start + width / 2).timestamp()) == 1.0
    assert window.closeness((window.end + width / 2).timestamp()) == pytest.approx(0.5)
    assert window.closeness((window.start - 2 * width).timestamp()) == 0.0


# ---- through a daemon ---------------------------------------------------------------------

OLD = "Planted tomato seedlings in the raised bed by the fence."
RECENT = "Put a few new plants into the garden soil."
PLAIN = "What tomato seedlings did I plant in the raised bed by the fence?"
NAMED = PLAIN.removesuffix("?") + " two weeks ago?"
# one entry point each way (with limit 1) and no spreading: the recent note is not found
# by words alone
NARROW = {"fts_candidates": 1, "vector_candidates": 1, "spread_hops": 0, "spread_seeds": 0}


def _answer(client: TestClient, question: str, **fields: Any) -> list[tuple[str, float]]:
    results = query(client, question, project="garden", explain=True, limit=1, **fields)["results"]
    return [(r["memory"]["id"], r["explain"]["contributions"].get("when", 0.0)) for r in results]


def _store(client: TestClient) -> tuple[str, str]:
    old = remember(client, OLD, project="garden", timestamp=(ASKED - 40 * DAY).isoformat())
    recent = remember(client, RECENT, project="garden", timestamp=(ASKED - 14 * DAY).isoformat())
    return old["memory_id"], recent["memory_id"]


def test_the_named_time_is_searched_and_lifts_what_is_inside_it(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(recall=NARROW)
    old, recent = _store(client)

    # by words alone only the old note answers (one entry point, nothing spreads)
    assert [m for m, _ in _answer(client, PLAIN, asked_at=ASKED.isoformat())] == [old]
    # naming the time searches those days too: the recent note is found, first, explained
    named = _answer(client, NAMED, asked_at=ASKED.isoformat())
    assert [m for m, _ in named] == [recent] and named[0][1] > 0
    # the old note is still a candidate, with nothing from the window (40 days back is far
    # outside 14 +- 3.5): its words lift it above the recent note without the boost
    both = query(client, NAMED, project="garden", explain=True, asked_at=ASKED.isoformat())
    whens = {r["memory"]["id"]: r["explain"]["contributions"]["when"] for r in both["results"]}
    assert whens[old] == 0.0 and whens[recent] > 0
    # the same words asked a year later point to where nothing is: no change
    later = (ASKED + 365 * DAY).isoformat()
    assert _answer(client, NAMED, asked_at=later) == [(old, 0.0)]


def test_as_of_is_the_default_reference_and_zero_weight_turns_it_off(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(recall=NARROW)
    old, recent = _store(client)
    as_of = _answer(client, NAMED, as_of=ASKED.isoformat())
    assert [m for m, _ in as_of] == [recent]
    # with no asked_at and no as_of it counts from now (2026 and later): nothing inside
    assert _answer(client, NAMED) == [(old, 0.0)]

    off = make_client(recall={**NARROW, "when_weight": 0})
    old, _recent = _store(off)
    assert _answer(off, NAMED, asked_at=ASKED.isoformat()) == [(old, 0.0)]


def test_a_bad_asked_at_is_a_422(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    for value in ("last tuesday", 1685545200, "2023-13-01T00:00:00"):
        response = client.post("/api/v1/query", json={"query": "x", "asked_at": value})
        assert response.status_code == 422, response.text
        assert "asked_at" in response.text


def test_the_sql_path_searches_the_named_time_too(make_client: Callable[..., TestClient]) -> None:
    """Through SQL (``recall.index: sql``, as while the index builds) there are no vectors,
    but the named time is still a full-text entry point: the recent note shares one word
    ("plant") with the question, and one hit from the whole store is the old note."""
    client = make_client(recall={**NARROW, "index": "sql"})
    old, recent = _store(client)
    assert [m for m, _ in _answer(client, PLAIN, asked_at=ASKED.isoformat())] == [old]
    named = _answer(client, NAMED, asked_at=ASKED.isoformat())
    assert [m for m, _ in named] == [recent] and named[0][1] > 0
    later = (ASKED + 365 * DAY).isoformat()
    assert _answer(client, NAMED, asked_at=later) == [(old, 0.0)]


def test_other_times_counted_back_are_not_found_by_the_count(
    make_client: Callable[..., TestClient],
) -> None:
    """ "What did I sign four weeks ago?": a note from two months back that says "three
    weeks ago" shares the count's words, not the question's; they are no search terms,
    so full text finds only the note that shares "sign", the one inside the window."""
    client = make_client(recall={"min_score": 0})
    other = remember(
        client,
        "I repotted the spider plant three weeks ago and it is growing",
        project="p",
        timestamp=(ASKED - 60 * DAY).isoformat(),
    )["memory_id"]
    signed = remember(
        client,
        "signed the contract with my first client today",
        project="p",
        timestamp=(ASKED - 28 * DAY).isoformat(),
    )["memory_id"]
    results = query(
        client,
        "What did I sign four weeks ago?",
        project="p",
        explain=True,
        asked_at=ASKED.isoformat(),
    )["results"]
    ranks = {r["memory"]["id"]: r["explain"]["fts_rank"] for r in results}
    assert ranks[signed] == 1
    assert other in ranks and ranks[other] is None
