"""extract_concepts: RAKE-style keyphrases for dev notes and chat."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonic.encoding.concepts import MAX_PHRASE_WORDS, extract_concepts
from mnemonic.encoding.text import STOPWORDS


@pytest.mark.parametrize(
    ("text", "expected_prefix"),
    [
        (
            "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
            ("lgbtq support group", "caroline", "powerful"),
        ),
        (
            "Switched the embedding cache from redis to sqlite because redis kept OOMing "
            "on the small VPS.",
            ("small vps", "embedding cache", "ooming", "redis"),
        ),
        (
            "Fixed flaky test in tests/test_store.py: the fixture used time.time() "
            "instead of a frozen clock.",
            ("fixed flaky test", "frozen clock", "test_store.py", "time.time", "fixture"),
        ),
        (
            "git commit -m 'Fix race in WorkerPool.shutdown'",
            ("fix race", "git commit", "workerpool.shutdown"),
        ),
        (
            "Melanie: I painted a sunset over the lake last week, it reminded me of our "
            "trip to Lake Tahoe.",
            ("lake tahoe", "melanie", "painted", "sunset"),
        ),
        (
            "Upgraded to Python 3.12 and bumped ruff to v0.6.9; the CI matrix still runs 3.11.",
            ("ci matrix", "bumped ruff", "v0.6.9", "python"),
        ),
    ],
)
def test_extract_concepts_ranking(text: str, expected_prefix: tuple[str, ...]) -> None:
    concepts = extract_concepts(text)
    assert concepts[: len(expected_prefix)] == expected_prefix


@pytest.mark.parametrize(
    ("text", "must_include", "must_exclude"),
    [
        # paths: only the last component is a concept
        (
            "Config lives in ~/.config/mnemonic/config.yaml now.",
            {"config.yaml"},
            {"mnemonic", ".config"},
        ),
        ("see src/mnemonic/store/sqlite.py for details", {"sqlite.py"}, {"src", "store"}),
        (
            "Upstream bug: https://github.com/openai/openai-python/issues/1234 blocks the upgrade.",
            {"upstream bug"},
            {"github.com", "openai", "https"},
        ),
        # a slash between two words is not a path
        ("support client/server and input/output modes", {"support client", "server"}, set()),
        # traceback boilerplate is not a concept
        (
            'Traceback (most recent call last):\n  File "/app/db.py", line 42, in connect\n'
            "sqlite3.OperationalError: unable to open database file",
            {"sqlite3.operationalerror", "db.py", "open database file"},
            {"traceback", "recent call last", "line"},
        ),
        # numbers, hashes, UUIDs and one-letter tokens never become concepts
        (
            "Reverted a1b2c3d4e5 after 42 failures on 2024-01-05 with 3.5 s latency; "
            "run 550e8400-e29b-41d4-a716-446655440000 x",
            {"reverted"},
            {"a1b2c3d4e5", "42", "2024-01-05", "3.5", "550e8400-e29b-41d4-a716-446655440000", "x"},
        ),
        # version-like tokens are kept
        (
            "Pinned onnxruntime to 1.18.1 for the int8 model",
            {"1.18.1", "pinned onnxruntime"},
            set(),
        ),
        # non-ASCII
        (
            "Met at the café in Zürich; naïve résumé advice 🎉 everywhere",
            {"café", "zürich", "naïve résumé advice", "everywhere"},
            set(),
        ),
        ("東京で会議。日本語のメモ", {"東京で会議", "日本語のメモ"}, set()),
        # possessive 's is dropped
        ("Caroline's painting class was great", {"caroline painting class"}, {"caroline's"}),
    ],
)
def test_extract_concepts_includes_and_excludes(
    text: str, must_include: set[str], must_exclude: set[str]
) -> None:
    concepts = set(extract_concepts(text, max_concepts=20))
    assert must_include <= concepts
    flat_words = {w for c in concepts for w in c.split()}
    assert not (must_exclude & (concepts | flat_words))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "the and of to",
        "ok thanks lol",
        "42 3.5 1e9 250ms 16gb 1,000",
        "🎉🎉🎉",
        "a b c d",
        "What did you do when it was over?",
    ],
)
def test_extract_concepts_empty_for_contentless_text(text: str) -> None:
    assert extract_concepts(text) == ()


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("handler, parse_config, loader", "parse_config"),
        ("handler, WorkerPool, loader", "workerpool"),
        ("handler, settings.py, loader", "settings.py"),
        ("handler, v2.1, loader", "v2.1"),
        ("handler, sha256, loader", "sha256"),
        ("handler, LGBTQ, loader", "lgbtq"),
        ("handler, then Caroline, loader", "caroline"),
    ],
)
def test_shape_bonuses_outrank_plain_words(text: str, first: str) -> None:
    assert extract_concepts(text)[0] == first


def test_capital_bonus_only_away_from_sentence_start() -> None:
    assert extract_concepts("handler, Loader.") == ("loader", "handler")
    assert extract_concepts("handler. Loader.") == ("handler", "loader")


def test_repeated_terms_rank_higher() -> None:
    once = extract_concepts("alpha. gamma. delta.")
    repeated = extract_concepts("alpha. gamma. delta. gamma. gamma.")
    assert once[0] == "alpha"
    assert repeated[0] == "gamma"


def test_contained_phrases_are_dropped() -> None:
    concepts = extract_concepts("LGBTQ support group. Support helps. Group hugs.")
    assert concepts[0] == "lgbtq support group"
    assert "support" not in concepts
    assert "group" not in concepts
    assert "group hugs" in concepts


def test_frequent_half_replaces_accidental_three_word_phrase() -> None:
    concepts = extract_concepts("The support group met. The support group was great.")
    assert concepts[0] == "support group"
    assert "support group met" not in concepts


def test_long_runs_are_cut_into_three_word_phrases() -> None:
    concepts = extract_concepts("quantum flux capacitor calibration routine failure")
    assert concepts == ("quantum flux capacitor", "calibration routine failure")


@pytest.mark.parametrize("limit", [0, 1, 2, 5])
def test_max_concepts_is_respected(limit: int) -> None:
    text = "alpha beta. gamma delta. epsilon zeta. eta theta. iota kappa. lambda mu."
    concepts = extract_concepts(text, max_concepts=limit)
    assert len(concepts) == limit


def test_ties_keep_first_occurrence_order() -> None:
    assert extract_concepts("zebra. apple. mango.") == ("zebra", "apple", "mango")


def test_extract_concepts_is_deterministic() -> None:
    text = "Decided to move the FTS index rebuild into the worker; WorkerPool drains first."
    assert len({extract_concepts(text) for _ in range(5)}) == 1


def test_extract_concepts_is_fast_and_linear() -> None:
    text = (
        "Switched the embedding cache from redis to sqlite because redis kept OOMing on the "
        "small VPS; see tests/test_store.py and WorkerPool.shutdown for the fix, plus notes "
        "from Caroline about the LGBTQ support group."
    )
    extract_concepts(text)
    runs = 200
    start = time.perf_counter()
    for _ in range(runs):
        extract_concepts(text)
    per_call = (time.perf_counter() - start) / runs
    assert per_call < 0.002  # target 0.2 ms; 10x headroom for loaded CI machines
    big = (text + "\n") * (100_000 // len(text))
    start = time.perf_counter()
    assert extract_concepts(big)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    "text",
    [
        "x" * 100_000,
        "ab/" * 33_000,
        "a." * 50_000,
        "/" * 100_000,
        ("word " * 20_000),
        "\n" * 100_000,
    ],
)
def test_extract_concepts_handles_pathological_input_quickly(text: str) -> None:
    start = time.perf_counter()
    extract_concepts(text)
    assert time.perf_counter() - start < 1.0


@given(st.text(max_size=400), st.integers(min_value=0, max_value=12))
def test_concepts_are_lowercase_words_of_the_text(text: str, limit: int) -> None:
    concepts = extract_concepts(text, max_concepts=limit)
    assert len(concepts) <= limit
    assert len(set(concepts)) == len(concepts)
    folded = text.casefold()
    for concept in concepts:
        assert concept == concept.lower()
        parts = concept.split(" ")
        assert 1 <= len(parts) <= MAX_PHRASE_WORDS
        for word in parts:
            assert len(word) >= 2
            assert word.casefold() in folded
            assert word not in STOPWORDS
            assert any(ch.isalpha() for ch in word) or word.count(".") >= 2
