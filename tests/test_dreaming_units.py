"""The dreamer's pure judgment: replay choice, bounded strengthening, co-retrieval and
neighbourhood co-activation, the term index and its idf, cross-episode link candidates and
their caps, recurring co-occurrences and insight texts; tables plus Hypothesis properties.
The CLI's human forms are plain functions of the daemon's JSON and are tested here too."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonic.cli.insights import insight_line, show_lines
from mnemonic.cognition.dreaming import (
    EpisodeNote,
    LinkParams,
    Recurrence,
    accept_insight,
    build_index,
    choose_links,
    coretrieved,
    cross_candidates,
    evidence_strength,
    insight_key,
    insight_text,
    neighbourhood_pairs,
    normalised_idf,
    pick_replay,
    recurrences,
    strengthen,
    usable_terms,
)

# ---- replay and strengthening --------------------------------------------------------------


def test_replay_takes_the_most_salient_of_the_window_in_seq_order() -> None:
    seqs = np.array([3, 5, 8, 9, 12], dtype=np.int64)
    sal = np.array([0.2, 0.9, 0.5, 0.9, 0.1])
    assert list(pick_replay(seqs, sal, 3)) == [5, 8, 9]
    assert list(pick_replay(seqs, sal, 0)) == []
    assert list(pick_replay(seqs, sal, 10)) == [3, 5, 8, 9, 12]


@pytest.mark.parametrize(
    ("s", "steps", "eta", "ceiling", "want"),
    [
        (0.5, 1, 0.1, 1.0, 0.55),
        (0.5, 2, 0.1, 1.0, 0.595),
        (0.5, 0, 0.1, 1.0, 0.5),
        (0.95, 3, 0.5, 0.9, 0.95),  # above the ceiling: left alone, never lowered
        (0.0, 1, 1.0, 0.9, 0.9),
        (1.0, 5, 0.3, 1.0, 1.0),
    ],
)
def test_strengthening_table(s: float, steps: int, eta: float, ceiling: float, want: float) -> None:
    out = strengthen(np.array([s]), np.array([steps]), eta, ceiling)
    assert out[0] == pytest.approx(want)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0, 1), min_size=1, max_size=30),
    st.integers(0, 50),
    st.floats(0, 1),
    st.floats(0.01, 1),
)
def test_strengthening_is_bounded_and_monotone(
    strengths: list[float], steps: int, eta: float, ceiling: float
) -> None:
    s = np.array(strengths)
    out = strengthen(s, np.full(len(s), steps), eta, ceiling)
    assert np.all(out >= s - 1e-12)  # never weakens
    assert np.all(out <= np.maximum(s, ceiling) + 1e-12)  # never past the ceiling
    assert np.all((out >= 0) & (out <= 1))
    # a thousand cycles of it still stay in range
    for _ in range(20):
        out = strengthen(out, np.full(len(s), 50), eta, ceiling)
    assert np.all((out >= 0) & (out <= 1))


def test_coretrieval_counts_top_results_helpful_double_and_irrelevant_none() -> None:
    steps = coretrieved(
        [[1, 2, 3, 9], [2, 1], [3, 7]],
        helpful=[[1, 2]],
        irrelevant=[7],
        top=3,
        helpful_weight=2,
    )
    assert steps[(1, 2)] == 1 + 1 + 2
    assert steps[(1, 3)] == 1 and steps[(2, 3)] == 1
    assert (3, 9) not in steps and (1, 9) not in steps  # 9 was fourth
    assert not any(7 in pair for pair in steps)


def test_neighbourhood_pairs_need_both_ends_around_one_replayed_memory() -> None:
    near = {10: [1, 2, 3], 20: [3, 4]}
    links = [(1, 2), (2, 3), (3, 4), (1, 4), (5, 6)]
    steps = neighbourhood_pairs(near, links)
    assert steps == {(1, 2): 1, (2, 3): 1, (3, 4): 1}


# ---- the index, idf and cross-episode candidates -------------------------------------------

TERMS = [
    ["quartz volume", "cache"],  # 0: episode A
    ["quartz volume", "cache"],  # 1: episode B   -> 0-1 share a rare term, other episodes
    ["quartz volume"],  # 2: episode A            -> 0-2 same episode: never
    ["cache", "redis"],  # 3: no episode
    ["cache"],  # 4: episode C
    ["cache"],  # 5
    ["cache", "redis"],  # 6: episode D         -> 3-6 share 'redis'
    ["lonely"],  # 7
]
EPISODES: list[str | None] = ["A", "B", "A", None, "C", "C", "D", None]


def _index() -> tuple[object, LinkParams]:
    index = build_index(list(range(1, len(TERMS) + 1)), TERMS, EPISODES)
    return index, LinkParams(max_df_share=0.4, max_term_df=50, min_shared_idf=0.3)


def test_the_index_counts_document_frequency_and_usable_terms() -> None:
    index = build_index(list(range(1, 9)), TERMS, EPISODES)
    df = dict(zip(index.vocab, index.df.tolist(), strict=True))
    assert df == {"quartz volume": 3, "cache": 6, "redis": 2, "lonely": 1}
    usable = dict(zip(index.vocab, usable_terms(index, 0.4, 50).tolist(), strict=True))
    assert usable == {"quartz volume": True, "cache": False, "redis": True, "lonely": False}
    assert usable_terms(index, 0.4, 2).tolist() == [False, False, True, False]  # max_term_df
    idf = normalised_idf(index.df, index.n)
    assert idf[index.vocab.index("lonely")] == pytest.approx(1.0)
    assert np.all(np.diff(idf[np.argsort(index.df)]) <= 1e-12)  # rarer: higher


def test_terms_are_case_folded_and_capped_per_memory() -> None:
    index = build_index([1, 2], [["Argo", " argo ", "A", "B", "C"], ["ARGO"]], ["x", "y"],
                        max_terms=3)  # fmt: skip
    assert index.vocab == ("argo", "a", "b")
    assert index.df.tolist() == [2, 1, 1]


def test_cross_candidates_link_rare_terms_across_episodes_only() -> None:
    index, p = _index()
    a, b, ev = cross_candidates(index, np.arange(8, dtype=np.int64), p)  # type: ignore[arg-type]
    pairs = set(zip(a.tolist(), b.tolist(), strict=True))
    assert (0, 1) in pairs and (1, 2) in pairs  # quartz volume across episodes A and B
    assert (0, 2) not in pairs  # the same episode
    assert (3, 6) in pairs  # redis
    assert not any(7 in pr for pr in pairs)
    assert (4, 5) not in pairs  # 'cache' is too common to link anything
    assert np.all(a < b) and np.all(ev >= p.min_shared_idf)


def test_cross_candidates_only_from_seeds_and_evidence_adds_up() -> None:
    index, p = _index()
    a, b, _ = cross_candidates(index, np.array([3], dtype=np.int64), p)  # type: ignore[arg-type]
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == [(3, 6)]
    two = build_index([1, 2, 3, 4], [["x", "y"], ["x", "y"], ["z"], ["z"]], ["A", "B", "C", "D"])
    params = LinkParams(max_df_share=1, min_shared_idf=0.1)
    a, b, ev = cross_candidates(two, np.arange(4, dtype=np.int64), params)
    got = dict(zip(zip(a.tolist(), b.tolist(), strict=True), ev.tolist(), strict=True))
    assert got[(0, 1)] == pytest.approx(2 * got[(2, 3)])  # two shared terms, twice the evidence


def test_evidence_strength_is_squashed_and_capped() -> None:
    out = evidence_strength(np.array([0.0001, 0.5, 1.0, 5.0, 50.0]), 0.8)
    assert np.all(out > 0) and np.all(out <= 0.8)
    assert np.all(np.diff(out) >= 0) and out[-1] == 0.8


@st.composite
def _corpus(draw: st.DrawFn) -> tuple[list[list[str]], list[str | None]]:
    n = draw(st.integers(2, 40))
    vocab = [f"t{i}" for i in range(draw(st.integers(1, 15)))]
    terms = [draw(st.lists(st.sampled_from(vocab), max_size=5)) for _ in range(n)]
    episodes = [draw(st.sampled_from([None, "e1", "e2", "e3", "e4"])) for _ in range(n)]
    return terms, episodes


@settings(max_examples=150, deadline=None)
@given(_corpus(), st.floats(0.05, 1), st.floats(0, 2), st.integers(0, 4), st.integers(0, 30))
def test_cross_link_candidates_and_choice_hold_every_cap(
    corpus: tuple[list[list[str]], list[str | None]],
    share: float,
    min_idf: float,
    per_memory: int,
    per_cycle: int,
) -> None:
    terms, episodes = corpus
    index = build_index(list(range(1, len(terms) + 1)), terms, episodes)
    p = LinkParams(share, 50, min_idf, 0.8, per_memory, per_cycle)
    seeds = np.arange(0, index.n, 2, dtype=np.int64)
    a, b, ev = cross_candidates(index, seeds, p)
    assert np.all(a < b)
    assert np.all(np.isin(a, seeds) | np.isin(b, seeds))
    ep = index.episode
    assert np.all(ep[a] != ep[b])
    assert np.all(ev >= min_idf)
    strengths = evidence_strength(ev, p.max_link_strength)
    assert np.all((strengths > 0) & (strengths <= 0.8))
    existing = {0: min(per_memory, 1)}
    chosen = choose_links(a.tolist(), b.tolist(), ev.tolist(), existing, per_memory, per_cycle)
    assert len(chosen) <= per_cycle
    have: dict[int, int] = dict(existing)
    for i in chosen:
        for m in (int(a[i]), int(b[i])):
            have[m] = have.get(m, 0) + 1
    assert all(v <= max(per_memory, existing.get(k, 0)) for k, v in have.items())


def test_choose_links_prefers_evidence_and_respects_existing_links() -> None:
    a, b, ev = [1, 1, 2, 3], [2, 3, 3, 4], [0.5, 0.9, 0.7, 0.6]
    # (1,3) first; then 1 and 3 are full, and 4 already has its one link
    assert choose_links(a, b, ev, {4: 1}, 1, 10) == [1]
    assert choose_links(a, b, ev, {4: 1}, 2, 10) == [1, 2, 0]  # (3,4): 4 is full
    assert choose_links(a, b, ev, {}, 2, 2) == [1, 2]  # the cycle cap


# ---- insights ----------------------------------------------------------------------------


def test_recurrences_need_distinct_episodes_and_skip_nested_and_known_pairs() -> None:
    terms = [
        ["flaky test", "temp dir", "test"],
        ["flaky test", "temp dir"],
        ["flaky test", "temp dir"],
        ["flaky test", "temp dir"],  # same episode as the one before
        ["other"],
    ]
    episodes: list[str | None] = ["a", "b", "c", "c", "d"]
    index = build_index([1, 2, 3, 4, 5], terms, episodes)
    found = recurrences(index, np.array([0], np.int64), min_episodes=3, max_df_share=1.0)
    assert [(r.first, r.second, r.episodes, len(r.docs)) for r in found] == [
        ("flaky test", "temp dir", 3, 4)
    ]  # ('flaky test', 'test') is nested: no insight
    assert recurrences(index, np.array([0], np.int64), min_episodes=4, max_df_share=1.0) == []
    key = insight_key("Temp Dir", "flaky test")
    assert key == "cooccurrence:flaky test|temp dir"
    again = recurrences(index, np.array([0], np.int64), min_episodes=3, max_df_share=1.0,
                        known=frozenset({key}))  # fmt: skip
    assert again == []


def test_memories_outside_episodes_do_not_count_as_episodes() -> None:
    index = build_index([1, 2, 3], [["x", "y"]] * 3, [None, None, "a"])
    assert recurrences(index, np.array([0], np.int64), min_episodes=2, max_df_share=1.0) == []


def test_insight_text_names_the_terms_count_and_first_episodes() -> None:
    r = Recurrence("flaky test", "temp dir", (1, 2, 3, 4), 4, 1.5)
    notes = [
        EpisodeNote("CI fixes", datetime(2026, 3, 2, tzinfo=UTC)),
        EpisodeNote("", datetime(2026, 3, 1, tzinfo=UTC)),
        EpisodeNote("Test cleanup", datetime(2026, 3, 5, tzinfo=UTC)),
        EpisodeNote("Late", datetime(2026, 3, 9, tzinfo=UTC)),
    ]
    assert insight_text(r, notes) == (
        '"flaky test" and "temp dir" came up together in 4 episodes: 2026-03-01; '
        "CI fixes (2026-03-02); Test cleanup (2026-03-05) and 1 more."
    )


@pytest.mark.parametrize(
    ("answer", "accepted"),
    [
        ({"insight": "The flaky checkout test kept coming back to the shared temp dir."}, True),
        ({"insight": "Kubernetes made the checkout test flaky."}, False),  # invented name
        ({"insight": "The checkout test failed 17 times."}, False),  # invented number
        ({"insight": ""}, False),
        ({"other": "x"}, False),
        (None, False),
    ],
)
def test_llm_insights_must_be_grounded(answer: dict[str, str] | None, accepted: bool) -> None:
    sources = [
        "The flaky checkout test was caused by a shared temp dir between workers.",
        "Checkout test flaky again: temp dir shared.",
    ]
    assert (accept_insight(answer, sources) is not None) is accepted


def test_cli_forms() -> None:
    item = {
        "id": "m1",
        "project": "alpha",
        "content": '"a" and "b" came up together in 3 episodes.',
        "timestamp": "2026-03-01T10:00:00+00:00",
    }
    line = insight_line(item)
    assert "[alpha]" in line and line.endswith("m1") and "3 episodes" in line
    lines = show_lines(
        {
            "insight": {**item, "state": "active", "terms": ["a", "b"], "episodes": 3},
            "sources": [{"id": "s1", "summary": "first", "timestamp": item["timestamp"]}],
        }
    )
    assert "terms: a, b" in lines and any("s1 first" in x for x in lines)
