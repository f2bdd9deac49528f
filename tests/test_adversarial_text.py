"""Every text function that sees stored or watched text stays linear on hostile input.

Issue 9: one regex with quadratic backtracking (``\\w*\\d`` retried from every position of
a long word) froze the daemon for minutes on two 100,000-character writes. This guard
feeds every regex and text function of encoding, redaction, perception and recall the
longest allowed input (100,000 characters) shaped to hurt: repeated units, long digit and
word runs, no spaces, unbalanced openers, mixed noise. A call over the budget fails.

The budget is CPU time of this thread (``time.thread_time``), so a busy CI machine does
not fail it, with room on top: the slowest case measured is ~0.35 s on an idle 2-core
machine. A quadratic pattern on these inputs costs tens of seconds to minutes.
Run with ``-s`` to see the slowest case per function.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from mnemonic import project_names
from mnemonic.config import FilterConfig
from mnemonic.encoding import (
    classify,
    concepts,
    contradiction,
    file_changes,
    heuristic,
    linking,
    summary,
    text,
)
from mnemonic.events.types import WatcherEvent
from mnemonic.perception import frequency, projects, score
from mnemonic.perception.filter import HeuristicFilter, event_text
from mnemonic.recall import clauses, evidence, fts_query, intent, mmr, naming, when
from mnemonic.redact import is_secret_path, redact, redact_json
from mnemonic.store.models import MemoryType

N = 100_000
BUDGET_S = 1.0

_UNITS = (
    # digits and words glued together, the shape of the original bug
    "a1.", "1", "ab", "a", "aB", "_", "a1", "1.", "1:", "1.2.3-", "deadbeef",
    # separators and punctuation runs, no spaces
    "-", "=", ".", "'", '"', "(", "[", "/a", "://", "key:", "x=", "a-", "…",
    # whitespace
    " ", "\n", "\\\n", "\t",
    # words the rules look for, repeated
    "word ", "is not ", "on ", "ha", "Mr. ", "ERROR: ", "SELECT ", "$ ", "a@b:", "FOO=1 ",
    "Traceback (most recent call last):\n", '  File "x.py", line 1\n',
    # what the secret rules look for
    "ghp_", "sk-", "AKIA", "password=", "--password ", "-----BEGIN ", "Bearer ",
    # progress bars
    "━", "[####] 45%\n",
    # other scripts, combining marks, astral characters
    "e\u0301", "日本", "\u0915\u093f", "🙂",
)  # fmt: skip


def _fill(unit: str) -> str:
    return (unit * (N // len(unit) + 1))[:N]


def _cases() -> dict[str, str]:
    rng = random.Random(9)
    out = {f"{unit!r}*": _fill(unit) for unit in _UNITS}
    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    out["random base64"] = "".join(rng.choice(alnum + "+/=") for _ in range(N))
    out["random printable"] = "".join(
        rng.choice("abcdefghij ABC0123456789.:/-_'\"=@#%$!?\n\t()[]{}") for _ in range(N)
    )
    vocabulary = ["the", "cache", "is", "enabled", "not", "port", "6379", "v1.2.3", "a_b"]
    out["random words"] = " ".join(rng.choice(vocabulary) for _ in range(N // 5))[:N]
    out["digits then a letter"] = "1" * (N - 1) + "a"
    out["letters then a digit"] = "a" * (N - 1) + "1"
    return out


CASES = _cases()
_KEYWORDS = score.compile_keywords({"error": 0.2, "todo": 0.1, "root cause": 0.2})
_FILTER = HeuristicFilter(
    FilterConfig(score_max_chars=N, max_chars=N, frequency_max=0, min_chars=1),
    home="/home/someone",
)
_RESOLVER = projects.ProjectResolver(home="/home/someone")
_NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _other(s: str) -> str:
    """A near-identical second text, as two consecutive writes would be."""
    return s[:-1] + ("x" if s[-1] != "x" else "y")


def _links(s: str) -> object:
    neighbours = [
        linking.Neighbour(i, 0.9, _other(s), ("a", "b"), _NOW - timedelta(seconds=i))
        for i in range(2)
    ]
    return linking.choose_links(
        s, ("a", "b"), _NOW, neighbours, min_similarity=0.5, max_links=5, temporal_window_s=60
    )


def _lines(s: str) -> str:
    """``s`` as a file of 40-character lines: the diff works line by line."""
    return "\n".join(s[i : i + 40] for i in range(0, len(s), 40))


def _redacted(s: str) -> str:
    return redact(s).text


def _watched(s: str) -> WatcherEvent:
    return WatcherEvent(watcher="filesystem", kind="modified", content=s, path="/tmp/x/y.txt")


FUNCTIONS: dict[str, Callable[[str], object]] = {
    # encoding
    "text.normalise": text.normalise,
    "text.content_hash": text.content_hash,
    "text.words": text.words,
    "text.is_identifier": text.is_identifier,
    "text.has_letter": text.has_letter,
    "summary.extract_summary": summary.extract_summary,
    "summary.looks_like_command_or_code": summary.looks_like_command_or_code,
    "concepts.extract_concepts": concepts.extract_concepts,
    "classify.classify_type": classify.classify_type,
    "classify.significance": lambda s: classify.significance(s, MemoryType.GENERAL),
    "contradiction.opposing_pairs": lambda s: contradiction.opposing_pairs(s, _other(s)),
    "linking.numberish": linking.numberish,
    "linking.may_merge": lambda s: linking.may_merge(s, _other(s)),
    "linking.choose_links": _links,
    "heuristic.encode": heuristic.encode,
    "file_changes.summarize_change": lambda s: file_changes.summarize_change(
        _lines(s), _lines(_other(s)), path="/tmp/x.py"
    ),
    "project_names.clean_project": lambda s: project_names.clean_project(s, _redacted),
    "project_names.project_problem": lambda s: project_names.project_problem(s, _redacted),
    # redaction
    "redact.redact": redact,
    "redact.redact_json": lambda s: redact_json(
        {"k": s[: N // 2], s[N // 2 : N // 2 + 100]: [s[N // 2 + 100 :]]},
        lambda t: redact(t).text,
    ),
    "redact.is_secret_path": is_secret_path,
    # perception
    "score.score_text": lambda s: score.score_text(s, _KEYWORDS, max_chars=N),
    "score.noise_penalties": score.noise_penalties,
    "score.has_word": lambda s: score.has_word(s, s[:3]),
    "frequency.content_key": lambda s: frequency.content_key("w", "k", "/p", s),
    "filter.check": lambda s: _FILTER.check(_watched(s)),
    "filter.event_text": lambda s: event_text(_watched(s)),
    "projects.resolve": lambda s: _RESOLVER.resolve(path="/" + s, cwd="/" + s),
    # recall
    "fts_query.query_terms": fts_query.query_terms,
    "fts_query.to_match": fts_query.to_match,
    "evidence.coverage": lambda s: evidence.coverage(
        evidence.content_terms(fts_query.query_terms(s[:2000])), s
    ),
    "mmr.word_pairs": mmr.word_pairs,
    "intent.asks_across_events": intent.asks_across_events,
    "clauses.question_clauses": clauses.question_clauses,
    "naming.names_something": naming.names_something,
    "naming.proper_names": naming.proper_names,
    "naming.without_names": lambda s: naming.without_names(s, naming.proper_names(s)),
    "when.time_window": lambda s: when.time_window(s, _NOW),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_linear_on_adversarial_input(name: str) -> None:
    function = FUNCTIONS[name]
    timings: list[tuple[float, float, str]] = []
    for case, shaped in CASES.items():
        # a suffix of its own per function, so no cache shared between rows hides a cost
        value = shaped[: N - len(name)] + name
        started, wall = time.thread_time(), time.perf_counter()
        function(value)
        timings.append((time.thread_time() - started, time.perf_counter() - wall, case))
    timings.sort(reverse=True)
    cpu, wall, case = timings[0]
    print(f"{name}: slowest {case} {cpu * 1000:.0f} ms CPU ({wall * 1000:.0f} ms wall)")
    over = [f"{c} {t:.2f} s" for t, _, c in timings if t > BUDGET_S]
    assert not over, f"{name} over {BUDGET_S} s of CPU on: {', '.join(over)}"
