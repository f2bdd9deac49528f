"""normalise / content_hash / words / STOPWORDS / identifier shapes."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonic.encoding.text import (
    STOPWORDS,
    content_hash,
    has_letter,
    is_identifier,
    normalise,
    words,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  Hello   World  ", "hello world"),
        ("line one\n\tline two\r\n", "line one line two"),
        ("Straße", "strasse"),
        ("ＦＵＬＬ－ｗｉｄｔｈ", "full-width"),  # NFKC folds full-width forms
        ("ﬁle", "file"),  # ligature
        ("Café  NAÏVE", "café naïve"),
        ("cafe\u0301", "café"),  # decomposed -> composed
        ("rm -rf build/", "rm -rf build/"),  # punctuation kept
        ("don't", "don't"),
        ("日本語  テキスト", "日本語 テキスト"),
        ("Ship it 🚀\u00a0now", "ship it 🚀 now"),  # NBSP is whitespace after NFKC
        ("", ""),
        (" \n\t ", ""),
    ],
)
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Fixed the bug in parser.py", "fixed  the BUG in\nparser.py"),
        ("  git status ", "GIT STATUS"),
        (
            "Caroline: I went to the LGBTQ support group.",
            "caroline: i went to the lgbtq support group.",
        ),
        ("cafe\u0301", "CAFÉ"),
    ],
)
def test_content_hash_equal_for_whitespace_and_case_variants(a: str, b: str) -> None:
    assert content_hash(a) == content_hash(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("rm -rf build", "rm -rf build/"),
        ("enable the cache", "disable the cache"),
        ("v1.2", "v12"),
        ("foo_bar", "foo bar"),
    ],
)
def test_content_hash_differs_for_different_content(a: str, b: str) -> None:
    assert content_hash(a) != content_hash(b)


def test_content_hash_is_sha256_hex_of_normalised_text() -> None:
    expected = hashlib.sha256(b"hello world").hexdigest()
    assert content_hash("  Hello\n World ") == expected
    assert len(expected) == 64


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fixed the flaky test.", ["Fixed", "the", "flaky", "test"]),
        ("see setup.py and os.path.join", ["see", "setup.py", "and", "os.path.join"]),
        ("bumped to v1.2.3 (was 1.2.0)", ["bumped", "to", "v1.2.3", "was", "1.2.0"]),
        ("foo_bar and __init__ and CamelCase", ["foo_bar", "and", "__init__", "and", "CamelCase"]),
        ("don't stop", ["don't", "stop"]),
        ("it’s fine", ["it’s", "fine"]),
        ("pip install pytest-timeout --upgrade", ["pip", "install", "pytest-timeout", "upgrade"]),
        ("e.g. this", ["e.g", "this"]),
        ("end. Next", ["end", "Next"]),
        ("/usr/lib/python3/site.py", ["usr", "lib", "python3", "site.py"]),
        ("https://example.com/a", ["https", "example.com", "a"]),
        ("café naïve résumé", ["café", "naïve", "résumé"]),
        ("cafe\u0301 au lait", ["cafe\u0301", "au", "lait"]),  # combining mark stays inside
        ("नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),  # Devanagari vowel signs are not splits
        ("日本語のテキスト、です", ["日本語のテキスト", "です"]),
        ("ship it 🚀🎉 now", ["ship", "it", "now"]),
        ("a - b -- c", ["a", "b", "c"]),
        ("2024-01-05 at 3.5s", ["2024-01-05", "at", "3.5s"]),
        ("students' work", ["students", "work"]),
        ("", []),
    ],
)
def test_words(text: str, expected: list[str]) -> None:
    assert words(text) == expected


@pytest.mark.parametrize(
    "word",
    ["what", "when", "where", "who", "how", "which", "did", "does", "the", "and", "isn't", "i"],
)
def test_stopwords_contains_function_and_question_words(word: str) -> None:
    assert word in STOPWORDS


@pytest.mark.parametrize(
    "word", ["caroline", "support", "group", "sqlite", "error", "decided", "cache", "python"]
)
def test_stopwords_excludes_content_words(word: str) -> None:
    assert word not in STOPWORDS


def test_stopwords_are_lowercase_and_sized_for_english() -> None:
    assert all(w == w.lower() for w in STOPWORDS)
    assert 150 <= len(STOPWORDS) <= 230


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("foo_bar", True),
        ("MAX_RETRIES", True),
        ("__init__", True),
        ("getUser", True),
        ("WorkerPool", True),
        ("HTTPServer", True),
        ("setup.py", True),
        ("os.path.join", True),
        ("v1.2", True),
        ("1.2.3", True),
        ("3.5", False),
        ("42", False),
        ("Python", False),
        ("LGBTQ", False),
        ("pytest-timeout", False),
        ("café", False),
    ],
)
def test_is_identifier(token: str, expected: bool) -> None:
    assert is_identifier(token) is expected


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("abc", True),
        ("日本", True),
        ("v1", True),
        ("123", False),
        ("3.5", False),
        ("__", False),
        ("0㉈", False),
    ],
)
def test_has_letter(token: str, expected: bool) -> None:
    assert has_letter(token) is expected


@given(st.text())
def test_normalise_is_idempotent(text: str) -> None:
    once = normalise(text)
    assert normalise(once) == once


@given(st.text(), st.sampled_from([" ", "  ", "\n", "\t ", "\r\n"]))
def test_content_hash_ignores_whitespace_runs(text: str, sep: str) -> None:
    pieces = text.split()
    assert content_hash(sep + sep.join(pieces) + sep) == content_hash(" ".join(pieces))


@given(st.text(alphabet=st.characters(codec="latin-1", categories=["L", "N", "P", "Zs"])))
def test_content_hash_ignores_case(text: str) -> None:
    assert content_hash(text.upper()) == content_hash(text.lower()) == content_hash(text)


@given(st.text())
def test_words_are_substrings_without_whitespace(text: str) -> None:
    position = 0
    for token in words(text):
        found = text.find(token, position)
        assert found >= 0  # tokens come out in order, unchanged
        position = found + len(token)
        assert token.strip() == token and token
        assert not any(ch.isspace() for ch in token)
