"""Any text is a valid FTS5 query once sanitised (property-tested against real SQLite)."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonic.recall.fts_query import MAX_TERMS, query_terms, to_match

_CONN = sqlite3.connect(":memory:")
_CONN.execute(
    "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')"
)
_CONN.execute("INSERT INTO t VALUES ('the quick brown fox jumps over the lazy dog café 日本語')")

FTS_SYNTAX = st.sampled_from(
    ['"', "*", "(", ")", "AND", "OR", "NOT", "NEAR(", "NEAR", ":", "^", "-", "+", "{", "}", "'"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=20), FTS_SYNTAX), max_size=12).map(" ".join))
def test_any_text_is_a_valid_match(text: str) -> None:
    match = to_match(text)
    if match is None:
        assert not query_terms(text)
        return
    _CONN.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)).fetchall()


def test_terms_drop_stopwords_but_never_everything() -> None:
    assert query_terms("What did Caroline do at the support group?") == [
        "caroline",
        "support",
        "group",
    ]
    assert query_terms("what is it") == ["what", "is", "it"]
    assert to_match("   ") is None
    assert to_match("NEAR(fox lazy)") is not None
    hits = _CONN.execute("SELECT rowid FROM t WHERE t MATCH ?", (to_match("NEAR(fox"),)).fetchall()
    assert hits == [(1,)]


def test_term_count_is_bounded() -> None:
    text = " ".join(f"word{i}" for i in range(200))
    assert len(query_terms(text)) == MAX_TERMS
