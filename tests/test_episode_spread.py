"""Questions about several events spread their answers over episodes.

The cue test (``recall/intent.py``), the grouped MMR (``recall/mmr.py``), and the whole
path through a real daemon: memories grouped into episodes by the episoder, then a count
question answered from both episodes while any other question keeps its ranking.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient

from mnemonic.recall.intent import SCANNED_CHARS, asks_across_events
from mnemonic.recall.mmr import mmr_order
from tests.support.api import query, remember

ACROSS = [
    "How many doctor's appointments did I go to in March?",
    "How much did I spend on gifts for my sister?",
    "What is the total distance I covered in my four road trips?",
    "How many hours did we spend altogether on the migration?",
    "Which book did I finish reading first, 'The Hate U Give' or 'The Nightingale'?",
    "How many days passed between the workshop and the day I planted the saplings?",
    "Which streaming service did I start using most recently, Netflix or Hulu?",
    "For my commute, how much more was the taxi compared to the train?",
    "List the bugs we fixed in the parser.",
    "What did Melanie and Caroline both paint?",
]
ONE_EVENT = [
    "When did Caroline go to the LGBTQ support group?",
    "What did the doctor say about my knee?",
    "Who did I go with to the music event last Saturday?",
    "Where does the frobnicator cache live?",
    "Was the first half of September a good month? Answer yes or no.",  # "or" past the "?"
    "What was the first bug in the parser?",  # an ordering word with no alternative
    "",
]


@pytest.mark.parametrize("question", ACROSS)
def test_counts_totals_sets_and_comparisons_ask_across_events(question: str) -> None:
    assert asks_across_events(question)


@pytest.mark.parametrize("question", ONE_EVENT)
def test_a_question_about_one_event_does_not(question: str) -> None:
    assert not asks_across_events(question)


def test_only_the_start_of_a_long_text_is_read() -> None:
    filler = "word " * (SCANNED_CHARS // 5)
    assert not asks_across_events(filler + "how many")
    assert asks_across_events("how many " + filler)
    # cue words split by the cut are not read either: no match on a partial word
    assert not asks_across_events("x" * (SCANNED_CHARS - 3) + "how many")


def _unit(*values: float) -> np.ndarray:
    vec = np.array(values, dtype=np.float32)
    return vec / np.linalg.norm(vec)


# three strong candidates from one episode, one weaker from another, one in no episode;
# vectors all orthogonal, so plain MMR keeps the relevance order
RANKED = [(1, 1.0), (2, 0.95), (3, 0.9), (4, 0.6), (5, 0.5)]
VECTORS = {seq: _unit(*(1.0 if i == seq - 1 else 0.0 for i in range(5))) for seq in range(1, 6)}
EPISODES = {1: "morning", 2: "morning", 3: "morning", 4: "evening"}


def test_grouped_mmr_reaches_the_next_episode_before_a_third_turn() -> None:
    assert mmr_order(RANKED, VECTORS, 5, 0.8) == [1, 2, 3, 4, 5]
    spread = mmr_order(RANKED, VECTORS, 5, 0.8, groups=EPISODES, group_factor=0.5)
    assert spread[:2] == [1, 4]  # 0.6 beats 0.95 * 0.5
    assert spread.index(5) < spread.index(3)  # no episode: never discounted; 3 is at x0.25
    assert sorted(spread) == [1, 2, 3, 4, 5]  # reordered, nothing dropped


def test_a_factor_of_one_or_no_groups_changes_nothing() -> None:
    plain = mmr_order(RANKED, VECTORS, 5, 0.8)
    assert mmr_order(RANKED, VECTORS, 5, 0.8, groups=EPISODES, group_factor=1.0) == plain
    assert mmr_order(RANKED, VECTORS, 5, 0.8, groups={}, group_factor=0.1) == plain


# ---- through a daemon ---------------------------------------------------------------------

QUIET: dict[str, Any] = {
    "episodes": {"interval_s": 3600},
    "reactor": {"enabled": False},
    "orchestrator": {"enabled": False},
}
MORNING = [  # one visit, three turns that match the question well
    "Went to my doctor's appointment with Dr. Patel about my knee this morning.",
    "The doctor's appointment with Dr. Patel ran late; she ordered an x-ray of my knee.",
    "After the doctor's appointment I picked up a knee brace at the pharmacy.",
]
LATER = "Saw the doctor again on Friday, a quick appointment for my flu shot."
COUNT = "How many doctor's appointments did I go to?"
PLAIN = "What did the doctor do at my appointment?"


def _order(client: TestClient, question: str) -> tuple[list[str], list[str | None]]:
    answer = query(client, question, project="health", limit=4, explain=True)
    results = answer["results"]
    return [r["memory"]["id"] for r in results], [r["explain"]["episode"] for r in results]


def test_a_count_question_is_answered_from_every_episode(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(recall={"episode_spread": 0.1}, **QUIET)
    start = (datetime.now(UTC) - timedelta(days=5)).replace(microsecond=0)
    morning = [
        remember(
            client,
            text,
            project="health",
            timestamp=(start + timedelta(minutes=2 * i)).isoformat(),
        )["memory_id"]
        for i, text in enumerate(MORNING)
    ]
    later = remember(
        client, LATER, project="health", timestamp=(start + timedelta(days=3)).isoformat()
    )["memory_id"]

    # no episodes yet: relevance alone, and the later visit ranks below the morning's turns
    before, episodes = _order(client, COUNT)
    assert set(before) == {*morning, later} and before[-1] == later
    assert episodes == [None] * 4
    plain_before, _ = _order(client, PLAIN)

    response = client.post("/api/v1/agents/episoding/run", params={"wait": "true"})
    assert response.status_code == 200, response.text
    assert response.json()["run"]["summary"]["assigned"] == 4
    listed = client.get("/api/v1/episodes", params={"project": "health"}).json()["items"]
    assert [e["memory_count"] for e in listed] == [1, 3]  # newest first
    later_episode, morning_episode = (e["id"] for e in listed)

    after, episodes = _order(client, COUNT)
    assert after[0] == before[0] and after[1] == later  # the second visit comes second
    assert sorted(after) == sorted(before)  # reordered, nothing lost
    expected = {**dict.fromkeys(morning, morning_episode), later: later_episode}
    assert episodes == [expected[memory_id] for memory_id in after]

    # a question about one event keeps its ranking and names no episode
    plain_after, episodes = _order(client, PLAIN)
    assert plain_after == plain_before
    assert episodes == [None] * 4
