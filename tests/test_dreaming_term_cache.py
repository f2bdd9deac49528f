"""The dreamer's term cache (``cognition.dreaming.TermCache``): kept between cycles so a
cycle parses only new or changed memories, yet its index is exactly ``build_index`` over
the store's current rows after any sequence of inserts, edits, episode moves and removals
(forgets, merges, purges), and it yields the GIL while it works."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonic.cognition.dreaming import TermCache, TermIndex, build_index

WORDS = ["Quartz", "quartz ", "cache", "redis", "temp  dir", "argo", "", "flaky test", "x"]


def _same(a: TermIndex, b: TermIndex) -> None:
    assert a.vocab == b.vocab
    for field in ("seq", "episode", "doc_ptr", "doc_terms", "post_ptr", "post_docs", "df"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field


Row = tuple[tuple[str, ...], str | None]


@st.composite
def _histories(draw: st.DrawFn) -> list[dict[int, Row]]:
    """Successive states of a store: seq -> (terms, episode)."""
    state: dict[int, Row] = {}
    next_seq = 1
    states: list[dict[int, Row]] = []
    for _ in range(draw(st.integers(1, 6))):
        for _ in range(draw(st.integers(0, 8))):  # new memories
            terms = tuple(draw(st.lists(st.sampled_from(WORDS), max_size=6)))
            state[next_seq] = (terms, draw(st.sampled_from([None, "e1", "e2"])))
            next_seq += 1
        for seq in sorted(state):
            action = draw(st.sampled_from(["keep", "keep", "edit", "move", "drop"]))
            if action == "edit":
                state[seq] = (tuple(draw(st.lists(st.sampled_from(WORDS), max_size=6))),
                              state[seq][1])  # fmt: skip
            elif action == "move":
                state[seq] = (state[seq][0], draw(st.sampled_from([None, "e1", "e3"])))
            elif action == "drop":
                del state[seq]
        states.append(dict(state))
    return states


@settings(max_examples=200, deadline=None)
@given(_histories(), st.integers(1, 4))
def test_the_cached_index_is_the_fresh_one_after_any_history(
    states: list[dict[int, Row]], max_terms: int
) -> None:
    cache = TermCache(max_terms)
    for state in states:
        seqs = sorted(state)
        terms = [state[s][0] for s in seqs]
        episodes = [state[s][1] for s in seqs]
        got = cache.index(seqs, terms, terms.__getitem__, episodes)
        _same(got, build_index(seqs, terms, episodes, max_terms=max_terms))
        assert len(cache) == len(seqs)


def test_only_new_and_changed_memories_are_parsed_and_the_gil_is_yielded() -> None:
    cache = TermCache(8)
    calls: list[int] = []
    pauses: list[int] = []
    terms = [(f"t{i % 50}", f"u{i % 7}") for i in range(10_000)]
    seqs = list(range(1, 10_001))

    def parse(i: int) -> tuple[str, ...]:
        calls.append(i)
        return terms[i]

    cache.index(seqs, terms, parse, [None] * len(seqs), pause=lambda: pauses.append(1))
    assert len(calls) == 10_000 and cache.parsed == 10_000
    assert len(pauses) >= 2  # slices of a few thousand memories
    calls.clear()
    seqs2 = [*seqs[:100], *seqs[101:], 10_001]  # one forgotten, one new
    terms2 = [*terms[:100], *terms[101:], ("new",)]
    terms2[5] = ("edited",)

    def parse2(i: int) -> tuple[str, ...]:
        calls.append(i)
        return terms2[i]

    got = cache.index(seqs2, terms2, parse2, [None] * len(seqs2))
    _same(got, build_index(seqs2, terms2, [None] * len(seqs2), max_terms=8))
    assert sorted(calls) == [5, len(seqs2) - 1] and cache.parsed == 2  # edited, new
    assert len(cache) == 10_000


def test_a_vocabulary_of_terms_no_memory_holds_is_dropped() -> None:
    cache = TermCache(4)
    for round_ in range(5):
        terms = [(f"r{round_}-{i}",) for i in range(2000)]
        got = cache.index(list(range(1, 2001)), terms, terms.__getitem__, [None] * 2000)
        assert len(got.vocab) == 2000
        _same(got, build_index(list(range(1, 2001)), terms, [None] * 2000, max_terms=4))
    assert cache.vocabulary <= 2 * 2000 + 1024  # not 5 x 2000: the unused terms went
