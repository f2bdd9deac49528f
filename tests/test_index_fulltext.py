"""The in-memory BM25 index against SQLite FTS5 itself.

The reference model is a real FTS5 table with the production definition of
``memories_fts`` (same columns, same tokenizer): tokens come from ``fts5vocab``, scores
from ``-bm25(memories_fts, 1.0, 0.5, 0.5, 0.5)``. Every property runs the same operations
(add, replace, remove, compaction) on both and compares.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemonic.index import tokenize
from mnemonic.index.fulltext import FullTextIndex, analyze, compact
from mnemonic.index.tokenize import raw_tokens, tokens
from mnemonic.store.sqlite import _within_budget, match_any

SCHEMA = (
    "CREATE VIRTUAL TABLE memories_fts USING fts5 (content, summary, concepts, when_text,"
    " tokenize = 'porter unicode61 remove_diacritics 2')"
)
BM25 = "-bm25(memories_fts, 1.0, 0.5, 0.5, 0.5)"


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    conn.execute(SCHEMA)
    conn.execute("CREATE VIRTUAL TABLE vocab USING fts5vocab(memories_fts, instance)")
    yield conn
    conn.close()


def sqlite_tokens(conn: sqlite3.Connection, texts: list[str]) -> list[list[str]]:
    conn.execute("DELETE FROM memories_fts")
    conn.executemany(
        "INSERT INTO memories_fts (rowid, content) VALUES (?, ?)",
        [(i + 1, t) for i, t in enumerate(texts)],
    )
    out: list[list[tuple[int, str]]] = [[] for _ in texts]
    for term, doc, offset in conn.execute("SELECT term, doc, offset FROM vocab"):
        out[doc - 1].append((offset, term))
    return [[term for _, term in sorted(doc)] for doc in out]


# ---- tokenizer ----------------------------------------------------------------------------

ALPHABET = (
    "abcdeilnorstuyz ABCXYZ 0123456789 _-.'/:@#é É ñ ß æ ø ı İ ſ µ ς "
    "\u0301\u0308 Ω ά ё Ж 日本語 ｆｕｌｌ ① ½ 🙂 \u200d \ue000 \t\n"
)
_SUFFIXES = ["ing", "ed", "s", "ies", "ational", "ization", "ness", "ful", "ly", "e", "y"]


@st.composite
def texts(draw: st.DrawFn) -> str:
    pieces = draw(
        st.lists(
            st.one_of(
                st.text(alphabet=ALPHABET, max_size=12),
                st.sampled_from(["running", "flies", "caresses", "generalization", "hopping"]),
                st.tuples(
                    st.text(alphabet="aeiouybcdlmnrst", min_size=1, max_size=5),
                    st.sampled_from(_SUFFIXES),
                ).map("".join),
            ),
            max_size=12,
        )
    )
    return " ".join(pieces)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(texts(), min_size=1, max_size=8))
def test_tokens_equal_fts5(fts: sqlite3.Connection, docs: list[str]) -> None:
    assert [tokens(d) for d in docs] == sqlite_tokens(fts, docs)


def test_porter_matches_sqlite_on_suffix_soup(fts: sqlite3.Connection) -> None:
    """SQLite's stemmer, not Snowball's: 20k words built from every rule's suffix."""
    rng = random.Random(5)
    suffixes = [
        "ational", "tional", "enci", "anci", "izer", "logi", "bli", "alli", "entli", "eli",
        "ousli", "ization", "ation", "ator", "alism", "iveness", "fulness", "ousness",
        "aliti", "iviti", "biliti", "ical", "ness", "icate", "iciti", "ful", "ative", "alize",
        "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
        "sion", "tion", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "s", "es", "ies",
        "sses", "ss", "ed", "eed", "ing", "y", "e", "ll", "at", "bl", "iz", "ly",
    ]  # fmt: skip
    words = []
    for _ in range(20_000):
        word = "".join(rng.choice("aeiouybcdlmnrstwxz") for _ in range(rng.randint(0, 6)))
        word += "".join(rng.choice(suffixes) for _ in range(rng.randint(0, 2)))
        words.append(word or "a")
    assert [tokens(w) for w in words] == sqlite_tokens(fts, words)


def test_character_tables_match_the_linked_sqlite(fts: sqlite3.Connection) -> None:
    """Every BMP code point (and a sample above it): separator, token character (and its
    fold) or diacritic, exactly as the SQLite this process links tokenizes it."""
    rng = random.Random(3)
    codes = [c for c in range(0x80, 0x10000) if not 0xD800 <= c < 0xE000]
    codes += rng.sample(range(0x10000, 0x110000), 5_000)
    docs = [f"qq {chr(c)} zz qq{chr(c)}zz" for c in codes]
    expected = sqlite_tokens(fts, docs)
    wrong = [hex(c) for c, d, e in zip(codes, docs, expected, strict=True) if raw_tokens(d) != e]
    assert wrong == []


def test_stem_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokenize, "_STEM_CACHE_LIMIT", 500)
    for i in range(tokenize._STEM_CACHE_LIMIT + 10):
        tokenize.stem(f"w{i}ing")
    assert len(tokenize._STEMS) <= tokenize._STEM_CACHE_LIMIT
    assert tokenize.stem("hopping") == "hop"


ADVERSARIAL = [
    "a" * 100_000,
    "ab1." * 25_000,
    "e\u0301" * 50_000,
    "_" * 100_000,
    "generalizations " * 6_250,
    "".join(chr(0x80 + i % 60_000) for i in range(100_000)),
    "🙂x" * 50_000,
    "sses" * 25_000,
    "y" * 100_000,
]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_linear_on_hostile_input(text: str) -> None:
    started = time.thread_time()
    analyze(text, text[:1000], text[:200], "Monday 8 May 2023 afternoon")
    assert time.thread_time() - started < 1.0


# ---- scores -------------------------------------------------------------------------------

WORDS = [
    "cache", "caching", "cached", "redis", "port", "6379", "timeout", "retry", "retries",
    "deploy", "prod", "staging", "error", "errors", "parser", "invoice", "flaky", "tests",
    "café", "naïve", "β", "日本", "2024", "monday", "may",
]  # fmt: skip


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, str, str, str]:
    def column(max_size: int) -> str:
        return " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=max_size)))

    return column(12), column(4), column(3), column(4)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(1, 30), documents()),
        st.tuples(st.just("remove"), st.integers(1, 30), st.none()),
        st.tuples(st.just("compact"), st.none(), st.none()),
    ),
    min_size=1,
    max_size=40,
)


def _apply_sql(conn: sqlite3.Connection, seq: int, doc: tuple[str, str, str, str] | None) -> None:
    conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (seq,))
    if doc is not None:
        conn.execute(
            "INSERT INTO memories_fts (rowid, content, summary, concepts, when_text)"
            " VALUES (?, ?, ?, ?, ?)",
            (seq, *doc),
        )


def _sql_hits(conn: sqlite3.Connection, terms: list[str]) -> list[tuple[int, float]]:
    rows = conn.execute(
        f"SELECT rowid, {BM25} FROM memories_fts WHERE memories_fts MATCH ?", (match_any(terms),)
    ).fetchall()
    return [(int(r), float(s)) for r, s in rows]


def _assert_same_top(
    ours: list[tuple[int, float]], every: list[tuple[int, float]], limit: int
) -> None:
    """``ours`` is a correct top-``limit`` of ``every`` (all SQL hits), scores within 1e-9."""
    expected = dict(every)
    ranked = sorted(every, key=lambda h: (-h[1], h[0]))[:limit]
    assert len(ours) == len(ranked)
    for (seq, score), (_, want) in zip(ours, ranked, strict=True):
        assert seq in expected
        assert score == pytest.approx(expected[seq], rel=1e-9, abs=1e-12)
        assert score == pytest.approx(want, rel=1e-9, abs=1e-12)  # ties may swap seqs


def _fresh(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM memories_fts")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=OPS,
    queries=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), max_size=4),
    limit=st.integers(1, 12),
)
def test_scores_equal_fts5_bm25(
    fts: sqlite3.Connection,
    ops: list[tuple[str, int | None, tuple[str, str, str, str] | None]],
    queries: list[list[str]],
    limit: int,
) -> None:
    _fresh(fts)
    index = FullTextIndex()
    for op, seq, doc in ops:
        if op == "compact":
            index.compact_now()
            continue
        assert seq is not None
        _apply_sql(fts, seq, doc)
        index.apply(seq, analyze(*doc) if doc is not None else None)
    count = fts.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
    assert index.document_count == count
    for query in [*queries, ["cache"], WORDS]:
        terms = list(dict.fromkeys(query))
        if count == 0:
            assert index.search(terms, None, limit) == []
            continue
        _assert_same_top(index.search(terms, None, limit), _sql_hits(fts, terms), limit)
        for term in terms:
            want = fts.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (match_any([term]),)
            ).fetchone()[0]
            assert index.document_frequency(term) == want


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=st.lists(documents(), min_size=1, max_size=25),
    mask=st.lists(st.booleans(), min_size=0, max_size=30),
    terms=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6, unique=True),
)
def test_allowed_mask_filters_like_a_where_clause(
    fts: sqlite3.Connection,
    docs: list[tuple[str, str, str, str]],
    mask: list[bool],
    terms: list[str],
) -> None:
    _fresh(fts)
    index = FullTextIndex()
    for seq, doc in enumerate(docs, start=1):
        _apply_sql(fts, seq, doc)
        index.apply(seq, analyze(*doc))
    allowed = np.array(mask, dtype=np.bool_)
    every = [(s, v) for s, v in _sql_hits(fts, terms) if s < len(allowed) and allowed[s]]
    _assert_same_top(index.search(terms, allowed, 5), every, 5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=st.lists(documents(), min_size=2, max_size=30),
    terms=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8, unique=True),
    budget=st.integers(0, 40),
)
def test_match_budget_drops_the_terms_the_sql_path_drops(
    fts: sqlite3.Connection,
    docs: list[tuple[str, str, str, str]],
    terms: list[str],
    budget: int,
) -> None:
    _fresh(fts)
    index = FullTextIndex.build([[(s, analyze(*d)) for s, d in enumerate(docs, start=1)]])
    for seq, doc in enumerate(docs, start=1):
        _apply_sql(fts, seq, doc)
    kept = _within_budget(fts, terms, budget)
    every = _sql_hits(fts, kept) if kept else []
    _assert_same_top(index.search(terms, None, 10, match_budget=budget), every, 10)


def test_build_equals_applying_one_by_one(fts: sqlite3.Connection) -> None:
    rng = random.Random(11)
    docs = {
        seq: tuple(" ".join(rng.choices(WORDS, k=rng.randint(0, n))) for n in (15, 5, 3, 4))
        for seq in rng.sample(range(1, 400), 200)
    }
    chunks = [list(docs.items())[i : i + 64] for i in range(0, len(docs), 64)]
    built = FullTextIndex.build([[(s, analyze(*d)) for s, d in chunk] for chunk in chunks])
    applied = FullTextIndex()
    for seq, doc in docs.items():
        applied.apply(seq, analyze(*doc))
    for terms in (["cache", "prod"], ["日本", "β", "naïve"], WORDS):
        ours, theirs = built.search(terms, None, 20), applied.search(terms, None, 20)
        assert [s for s, _ in ours] == [s for s, _ in theirs]
        assert [v for _, v in ours] == pytest.approx([v for _, v in theirs], rel=1e-12)
    assert built.describe()["documents"] == 200
    assert built.describe()["kind"] == "bm25-memory"
    assert built.nbytes > 0


def test_writes_during_a_compaction_are_kept(fts: sqlite3.Connection) -> None:
    _fresh(fts)
    index = FullTextIndex()
    rng = random.Random(2)

    def put(seq: int) -> None:
        doc = tuple(" ".join(rng.choices(WORDS, k=rng.randint(1, 8))) for _ in range(4))
        _apply_sql(fts, seq, doc)  # type: ignore[arg-type]
        index.apply(seq, analyze(*doc))

    for seq in range(1, 60):
        put(seq)
    index.compact_now()
    for seq in range(40, 80):  # replace some base documents, add new ones
        put(seq)
    job = index.begin_compaction()
    for seq in (45, 70, 90):  # frozen documents replaced, a new one, while compacting
        put(seq)
    for seq in (1, 50, 75):
        _apply_sql(fts, seq, None)
        index.apply(seq, None)
    segment = compact(job)
    _assert_same_top(index.search(WORDS, None, 100), _sql_hits(fts, WORDS), 100)
    index.install(job, segment)
    _assert_same_top(index.search(WORDS, None, 100), _sql_hits(fts, WORDS), 100)
    index.compact_now()
    _assert_same_top(index.search(WORDS, None, 100), _sql_hits(fts, WORDS), 100)
    assert index.document_count == fts.execute("SELECT count(*) FROM memories_fts").fetchone()[0]


def test_phrase_terms_over_match_never_under_match(fts: sqlite3.Connection) -> None:
    """The documented difference: ``foo_bar`` is a phrase to FTS5; here it matches every
    document holding both tokens, so SQL's hits are a subset of ours."""
    _fresh(fts)
    docs = ["call foo_bar now", "foo and bar apart", "bar foo reversed", "only foo", "foo-bar"]
    index = FullTextIndex()
    for seq, text in enumerate(docs, start=1):
        _apply_sql(fts, seq, (text, "", "", ""))
        index.apply(seq, analyze(text, "", "", ""))
    ours = {seq for seq, _ in index.search(["foo_bar"], None, 10)}
    theirs = {seq for seq, _ in _sql_hits(fts, ["foo_bar"])}
    assert theirs == {1, 5}
    assert ours == {1, 2, 3, 5}


def test_searches_in_a_thread_while_writing() -> None:
    index = FullTextIndex()
    rng = random.Random(4)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                for seq, score in index.search(["cache", "prod", "redis"], None, 10):
                    assert seq > 0 and score > 0
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(3_000):
            seq = rng.randint(1, 5_000)
            doc = " ".join(rng.choices(WORDS, k=10))
            index.apply(seq, analyze(doc, "", "", "") if i % 7 else None)
            if i % 1_000 == 999:
                index.compact_now()
    finally:
        stop.set()
        thread.join()
    assert errors == []
