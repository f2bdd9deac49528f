"""classify_type / initial_salience / significance, plus the combined encode()."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonic.encoding.classify import (
    DEFAULT_SALIENCE,
    SMALL_TALK_SCORE,
    classify_type,
    initial_salience,
    is_small_talk,
    significance,
)
from mnemonic.encoding.heuristic import encode
from mnemonic.encoding.text import words
from mnemonic.store.models import Encoded, MemoryType

# Short aliases keep the tables readable (N = iNsight; "I" is an ambiguous name).
E, D, N, L, G, H = (
    MemoryType.ERROR,
    MemoryType.DECISION,
    MemoryType.INSIGHT,
    MemoryType.LEARNING,
    MemoryType.GENERAL,
    MemoryType.HANDOFF,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # errors: failure artifacts
        (
            "Traceback (most recent call last):\n"
            '  File "x.py", line 1, in <module>\n'
            "KeyError: 'user_id'",
            E,
        ),
        ("ValueError: invalid literal for int() with base 10: 'abc'", E),
        ("fatal: not a git repository (or any of the parent directories): .git", E),
        ("error[E0308]: mismatched types", E),
        ("panic: runtime error: index out of range [3] with length 3", E),
        ("Segmentation fault (core dumped)", E),
        ("The build exited with code 137 after OOM", E),
        ("Process finished with exit code 1", E),
        ("npm ERR! code ERESOLVE", E),
        ("thread 'main' panicked at 'called `Option::unwrap()` on a `None` value'", E),
        ('Exception in thread "main" java.lang.NullPointerException', E),
        # errors: weak words, when nothing more specific matches
        ("pytest: 2 failed, 10 passed", E),
        ("Got a permission denied error when writing to /var/lib.", E),
        ("Fixed: ImportError when numpy is missing", E),
        ("The nightly job crashed again", E),
        ("zsh: command not found: uv", E),
        # decisions
        ("Decided to use SQLite FTS5 instead of Tantivy for keyword search.", D),
        ("We'll ship the CLI first and the web UI later.", D),
        ("we will pin numpy below 3", D),
        ("Going with uvicorn over hypercorn.", D),
        ("Let's use ruff for both linting and formatting.", D),
        ("Switched to structured logging.", D),
        ("We chose MIT for the license", D),
        ("Settled on 384-dim embeddings.", D),
        ("Decided to retry on error instead of failing the batch.", D),  # beats weak error
        # learnings
        ("TIL: git worktree lets you check out two branches at once.", L),
        ("Today I learned that sqlite WAL mode needs the -shm file.", L),
        ("How to reset a branch: git reset --hard origin/main", L),
        ("Finally figured out how to profile asyncio tasks.", L),
        ("Note to self: rotate the API token every 90 days.", L),
        ("Remember that the staging DB is read-only on Fridays.", L),
        ("TIL the error message for a missing venv is misleading.", L),  # beats weak error
        # insights
        ("Turns out the flaky test was caused by a shared tmp dir.", N),
        ("Root cause: the cache key ignored the project name.", N),
        ("I realised the embedder is loaded twice per request.", N),
        ("I realized why the index was stale.", N),
        ("The test fails because the fixture leaks a connection.", N),
        ("The reason is that FTS5 tokenises on dots.", N),
        ("The real problem was the default timeout, which explains the retries.", N),
        ("Key insight: recall quality depends on concepts.", N),
        # handoffs
        ("Handoff: the migration is half done; next steps are backfilling concepts.", H),
        ("Picking up where Sam left off on the recall ranking.", H),
        ("For whoever picks this up: the worker needs a restart after config changes.", H),
        ("Handing over to the night shift.", H),
        ("Next steps:\n- migrate the schema\n- deploy", H),
        ("TODO for Alex: review the redaction rules", H),
        ("Stopped where I left off yesterday: the error in test_api.py", H),  # beats error
        ("Handoff.\nTraceback (most recent call last):\nValueError: x", H),  # framing wins
        # general: chat and small talk must not over-trigger
        ("Caroline: I went to the LGBTQ support group yesterday and it was so powerful.", G),
        ("Melanie: That's great! I painted a lake sunset last week.", G),
        ("I'm picking up the kids at 5.", G),
        ("We will see.", G),
        ("I don't know how to feel about it.", G),
        ("I went home because I was tired.", G),  # bare "because" is not insight
        ("Because of the holiday, the release moves to Monday.", G),
        ("I started to panic when the demo froze.", G),
        ("til tomorrow then", G),  # lower-case "til" is "until"
        ("ok", G),
        ("", G),
    ],
)
def test_classify_type(text: str, expected: MemoryType) -> None:
    assert classify_type(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # strong error artifacts beat decision/learning/insight wording ...
        ("Decided to look into it.\nTraceback (most recent call last):\nOSError: x", E),
        ("TIL about this one:\nSegmentation fault (core dumped)", E),
        ("Turns out the job exited with code 2", E),
        # ... but weak error words lose to all of them
        ("Turns out the error was a stale cache", N),
        ("Learned how exceptions propagate through anyio task groups", L),
        ("Going with fail-fast: any failed check aborts the deploy", D),
    ],
)
def test_classify_precedence(text: str, expected: MemoryType) -> None:
    assert classify_type(text) is expected


def test_default_salience_table() -> None:
    assert dict(DEFAULT_SALIENCE) == {
        MemoryType.DECISION: 0.85,
        MemoryType.ERROR: 0.8,
        MemoryType.INSIGHT: 0.9,
        MemoryType.LEARNING: 0.8,
        MemoryType.GENERAL: 0.7,
        MemoryType.HANDOFF: 0.95,
    }
    with pytest.raises(TypeError):
        DEFAULT_SALIENCE[MemoryType.GENERAL] = 1.0  # type: ignore[index]


@pytest.mark.parametrize("memory_type", list(MemoryType))
def test_initial_salience_uses_default_table(memory_type: MemoryType) -> None:
    assert initial_salience(memory_type) == DEFAULT_SALIENCE[memory_type]


@pytest.mark.parametrize(
    ("memory_type", "table", "expected"),
    [
        (D, {D: 0.5}, 0.5),
        (E, {G: 0.3}, 0.3),  # missing type -> the table's general entry
        (E, {D: 0.1}, 0.8),  # no general either -> the default for the type
        (H, {H: 1.7}, 1.0),  # clamped
        (H, {H: -2.0}, 0.0),
    ],
)
def test_initial_salience_with_custom_table(
    memory_type: MemoryType, table: dict[MemoryType, float], expected: float
) -> None:
    assert initial_salience(memory_type, table) == expected


@pytest.mark.parametrize(
    "text",
    [
        "ok",
        "OK!",
        "thanks",
        "Thank you 🙏",
        "lol",
        "hahaha",
        "lolol",
        "sounds good",
        "👍",
        "...",
        " ",
        "",
    ],
)
def test_small_talk_is_low(text: str) -> None:
    assert is_small_talk(words(text))
    for memory_type in MemoryType:
        assert significance(text, memory_type) == SMALL_TALK_SCORE


@pytest.mark.parametrize(
    "text", ["ok but the cache is stale", "thanks, merged PR 42", "hello_world", "haha hash"]
)
def test_not_small_talk(text: str) -> None:
    assert not is_small_talk(words(text))
    assert significance(text, G) > SMALL_TALK_SCORE


@pytest.mark.parametrize(
    ("higher", "lower"),
    [
        # identifiers, numbers and paths make a note more significant
        (
            "Raised WORKER_BATCH to 64 in mnemonic/encoding/worker.py to drain faster",
            "Raised the batch size in the worker so that it drains faster",
        ),
        # a statement beats the same words as a question
        (
            "The worker drains the queue before it shuts down cleanly",
            "Does the worker drain the queue before it shuts down cleanly?",
        ),
        # a sentence beats a fragment
        ("Caroline went to the LGBTQ support group and found it powerful.", "support group"),
        # a focused note beats a huge paste
        ("Pinned numpy below 3 because onnxruntime wheels lag behind.", "word " * 2000),
    ],
)
def test_significance_orders_texts(higher: str, lower: str) -> None:
    assert significance(higher, G) > significance(lower, G)


@pytest.mark.parametrize(
    ("higher_type", "lower_type"),
    [(D, G), (N, G), (H, G), (E, G), (L, G), (D, E), (H, L)],
)
def test_significance_type_weight(higher_type: MemoryType, lower_type: MemoryType) -> None:
    text = "The recall cache is rebuilt on startup from the memories table"
    assert significance(text, higher_type) > significance(text, lower_type)


def test_significance_example_values() -> None:
    # documented arithmetic: 0.45 base + 0.1 length + 0.1 identifier + 0.05 number + 0.15 decision
    assert significance("Decided to set WORKER_BATCH to 64 for the encoder", D) == 0.85
    # 0.45 - 0.15 (two words)
    assert significance("support group", G) == 0.3


@given(st.text(), st.sampled_from(list(MemoryType)))
def test_significance_is_bounded(text: str, memory_type: MemoryType) -> None:
    value = significance(text, memory_type)
    assert 0.0 <= value <= 1.0


# --- encode() -----------------------------------------------------------------


def test_encode_combines_the_heuristics() -> None:
    text = (
        "Decided to use SQLite FTS5 for keyword search. Tantivy was faster but adds a "
        "Rust build step to every install."
    )
    enc = encode(text)
    assert isinstance(enc, Encoded)
    assert enc.type is D
    assert enc.summary == "Decided to use SQLite FTS5 for keyword search."
    assert "sqlite fts5" in enc.concepts
    assert enc.salience == 0.85
    assert enc.significance == significance(text, D)


def test_encode_explicit_type_wins() -> None:
    text = "Traceback (most recent call last):\nValueError: x"
    assert encode(text).type is E
    enc = encode(text, explicit_type=H)
    assert enc.type is H
    assert enc.salience == 0.95
    assert enc.significance == significance(text, H)


def test_encode_passes_limits_and_table_through() -> None:
    text = "alpha beta. gamma delta. epsilon zeta. eta theta. The quick brown fox jumps."
    enc = encode(text, summary_max_chars=8, max_concepts=2, salience_table={G: 0.42})
    assert enc.summary == "alpha…"
    assert len(enc.concepts) == 2
    assert enc.salience == 0.42


def test_encode_empty_text() -> None:
    enc = encode("")
    assert enc == Encoded(
        summary="", concepts=(), type=G, significance=SMALL_TALK_SCORE, salience=0.7
    )
