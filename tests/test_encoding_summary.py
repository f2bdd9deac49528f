"""extract_summary: faithful first sentence / first command line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonic.encoding.summary import ELLIPSIS, extract_summary, looks_like_command_or_code


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # plain prose: first sentence only
        ("Fixed the flaky test. It was a timing issue.", "Fixed the flaky test."),
        ("Does the cache survive restarts? Yes, it does.", "Does the cache survive restarts?"),
        ("Ship it! Then tag the release.", "Ship it!"),
        # chat lines
        (
            "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
            "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
        ),
        ("i went home. then i slept.", "i went home."),
        # abbreviations, initials, numbers, versions, file names, URLs
        (
            "Use e.g. pytest-xdist to parallelise. Then measure.",
            "Use e.g. pytest-xdist to parallelise.",
        ),
        ("Pass it i.e. the raw bytes. Done.", "Pass it i.e. the raw bytes."),
        ("Mr. Smith reviewed the PR. Merged.", "Mr. Smith reviewed the PR."),
        ("J. R. R. Tolkien wrote it. Later more.", "J. R. R. Tolkien wrote it."),
        ("Latency dropped to 3.5 ms. Nice.", "Latency dropped to 3.5 ms."),
        (
            "Bumped numpy to 2.1.3 and Python to 3.12. Next: 3.13.",
            "Bumped numpy to 2.1.3 and Python to 3.12.",
        ),
        ("Edited setup.py to add extras. Then reinstalled.", "Edited setup.py to add extras."),
        ("Edited setup.py. Then reinstalled.", "Edited setup.py."),
        ("find the bug in src/app.py. Then fix it.", "find the bug in src/app.py."),
        (
            "Docs at https://example.com/v1.2/guide.html explain it. Read them.",
            "Docs at https://example.com/v1.2/guide.html explain it.",
        ),
        ("Apples, pears etc. are fine. Bananas are not.", "Apples, pears etc. are fine."),
        ("See fig. 3 for details. Done.", "See fig. 3 for details."),
        ("Wait... what happened here? Unclear.", "Wait... what happened here?"),
        ('He said "stop." Then left.', 'He said "stop."'),
        # lines
        (
            "fix: handle empty input\n\nThe parser crashed on empty strings.",
            "fix: handle empty input",
        ),
        ("Release notes\nWe shipped v2.", "Release notes"),
        (
            "This is a long sentence that\nwraps onto the next line. And more.",
            "This is a long sentence that wraps onto the next line.",
        ),
        ("Next steps:\n- migrate the schema\n- deploy", "Next steps:"),
        ("\n\n   Leading blank lines are skipped. Yes.", "Leading blank lines are skipped."),
        # markdown markers
        ("# Release notes\nWe shipped v2.", "Release notes"),
        ("- remember to rotate the keys. soon", "remember to rotate the keys."),
        ("1. Install deps. 2. Run.", "Install deps."),
        # whitespace collapse
        ("Too    many\tspaces   here.  Second.", "Too many spaces here."),
        # CJK
        ("日本語の文です。次の文。", "日本語の文です。"),
        ("naïve café résumé 🎉 is fine. next", "naïve café résumé 🎉 is fine."),
        # no terminator
        ("just a fragment without punctuation", "just a fragment without punctuation"),
        # empty
        ("", ""),
        ("   \n\t  \n", ""),
    ],
)
def test_extract_summary_prose(text: str, expected: str) -> None:
    assert extract_summary(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('echo "Done. Next" && ls -la', 'echo "Done. Next" && ls -la'),
        ("git status", "git status"),
        ("git commit -m 'Fix race. Really.'\ngit push", "git commit -m 'Fix race. Really.'"),
        ("$ pytest -q tests/test_store.py\n3 passed in 0.2s", "$ pytest -q tests/test_store.py"),
        ("  docker compose up -d   \n", "docker compose up -d"),
        ("sudo apt-get install -y sqlite3", "sudo apt-get install -y sqlite3"),
        ("def foo(x):\n    return x. y", "def foo(x):"),
        ("import numpy as np\nnp.zeros(3)", "import numpy as np"),
        ("const x = compute(a. b);", "const x = compute(a. b);"),
        (">>> 1 + 1. \n2", ">>> 1 + 1."),
        ("user@host:~/proj$ make test", "user@host:~/proj$ make test"),
    ],
)
def test_extract_summary_commands_and_code_use_first_line(text: str, expected: str) -> None:
    assert extract_summary(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Traceback (most recent call last):\n"
            '  File "/app/mnemonic/store/db.py", line 42, in connect\n'
            "    conn = sqlite3.connect(path)\n"
            "sqlite3.OperationalError: unable to open database file\n",
            "sqlite3.OperationalError: unable to open database file",
        ),
        (
            "Traceback (most recent call last):\n"
            '  File "x.py", line 1, in <module>\n'
            "KeyError: 'user_id'\n\nI think the fixture is missing.",
            "KeyError: 'user_id'",
        ),
        (
            "Traceback (most recent call last):\n"
            '  File "a.py", line 3, in f\n'
            "KeyError: 'a'\n\n"
            "During handling of the above exception, another exception occurred:\n\n"
            "Traceback (most recent call last):\n"
            "ValueError: b",
            "KeyError: 'a'",
        ),
        (
            "Traceback (most recent call last):\n"
            '  File "m.py", line 9, in <module>\n'
            "django.core.exceptions.ImproperlyConfigured: SECRET_KEY is empty",
            "django.core.exceptions.ImproperlyConfigured: SECRET_KEY is empty",
        ),
        (
            "Traceback (most recent call last):\n  File 'x.py'\nKeyboardInterrupt",
            "KeyboardInterrupt",
        ),
        # no exception line: fall back to the header
        ("Traceback (most recent call last):\n  File 'x.py'", "Traceback (most recent call last):"),
    ],
)
def test_extract_summary_traceback_uses_exception_line(text: str, expected: str) -> None:
    assert extract_summary(text) == expected


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("git status", True),
        ("ls", True),
        ("make test", True),
        ("npm run build -- --watch", True),
        ("FOO=1 python -m mnemonic serve", True),
        ("cat /etc/hosts | grep local", True),
        ("class Store(Base):", True),
        ("fn main() {", True),
        ("SELECT id FROM memories WHERE seq > 3", True),
        ("if x is None:", True),
        ("git is great", False),
        ("find the bug in src/app.py. Then fix it", False),
        ("make all", True),
        ("make sure the tests pass before merging.", False),
        ("Make the cache optional", False),
        ("C# is great. Really.", False),
        ("UPDATE: we shipped it", False),
        ("Import the data first", False),
        ("Let's use ruff", False),
        ("Caroline: I went to the support group.", False),
    ],
)
def test_looks_like_command_or_code(line: str, expected: bool) -> None:
    assert looks_like_command_or_code(line) is expected


@pytest.mark.parametrize(
    ("text", "max_chars", "expected"),
    [
        ("The quick brown fox jumps over the lazy dog.", 20, "The quick brown fox…"),
        ("The quick brown fox jumps over the lazy dog.", 19, "The quick brown…"),
        (
            "The quick brown fox jumps over the lazy dog.",
            44,
            "The quick brown fox jumps over the lazy dog.",
        ),
        (
            "The quick brown fox jumps over the lazy dog.",
            43,
            "The quick brown fox jumps over the lazy…",
        ),
        ("Alpha, beta, gamma, delta.", 14, "Alpha, beta…"),  # trailing comma dropped
        ("Supercalifragilistic is long.", 10, "Supercali…"),  # no boundary: hard cut
        ("Hello world.", 1, "…"),
        ("git commit -m 'a very long commit message here'", 20, "git commit -m 'a…"),
    ],
)
def test_extract_summary_truncates_at_word_boundary(
    text: str, max_chars: int, expected: str
) -> None:
    result = extract_summary(text, max_chars)
    assert result == expected
    assert len(result) <= max_chars


def test_extract_summary_rejects_non_positive_max_chars() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        extract_summary("text", 0)


def test_extract_summary_on_large_input_reads_only_the_start() -> None:
    text = "First sentence here. " + ("filler words " * 10_000)
    assert extract_summary(text) == "First sentence here."
    one_line = "word " * 20_000
    result = extract_summary(one_line, 50)
    assert result.endswith(ELLIPSIS) and len(result) <= 50


def _collapsed(text: str) -> str:
    return " ".join(text.split())


prose = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=12),
        st.sampled_from(
            [".", "!", "?", "e.g.", "Mr.", "3.5", "setup.py", "\n", "\n\n", "…", "- ", "#"]
        ),
    ),
    max_size=60,
).map(" ".join)


@given(st.one_of(prose, st.text()), st.integers(min_value=1, max_value=300))
def test_summary_fits_and_is_a_prefix_of_the_collapsed_text(text: str, max_chars: int) -> None:
    summary = extract_summary(text, max_chars)
    assert len(summary) <= max_chars
    body = summary.removesuffix(ELLIPSIS)
    # Never invents: what remains is verbatim text (whitespace collapsed) ...
    assert body in _collapsed(text)
    # ... so every summary word appears in the text, in order.
    position = 0
    flat = _collapsed(text)
    for word in body.split():
        found = flat.find(word, position)
        assert found >= 0
        position = found + len(word)
    if not text.strip():
        assert summary == ""
