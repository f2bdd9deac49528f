"""opposing_pairs / contradicts: lexical contradiction signals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemonic.encoding.contradiction import OPPOSITE_PAIRS, contradicts, opposing_pairs


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (
            "The embedding cache is enabled.",
            "The embedding cache is disabled.",
            [("enabled", "disabled")],
        ),
        (
            "Disabled telemetry by default",
            "telemetry ENABLED by default",
            [("disabled", "enabled")],
        ),
        ("Enable WAL mode on startup", "disable WAL mode on startup", [("enable", "disable")]),
        (
            "Added the --json flag to recall",
            "Removed the --json flag from recall",
            [("added", "removed")],
        ),
        ("STRICT_MODE=true", "STRICT_MODE=false", [("true", "false")]),
        (
            "Deploys are allowed on Fridays",
            "Deploys are denied on Fridays",
            [("allowed", "denied")],
        ),
        (
            "The migration succeeded on staging",
            "The migration failed on staging",
            [("succeeded", "failed")],
        ),
        ("CI tests are passing now", "CI tests are failing now", [("passing", "failing")]),
        (
            "Latency increased after the upgrade",
            "Latency decreased after the upgrade",
            [("increased", "decreased")],
        ),
        ("The issue is open", "The issue is closed", [("open", "closed")]),
        ("We always squash merge", "We never squash merge", [("always", "never")]),
        ("Search works on the laptop", "Search is broken on the laptop", [("works", "broken")]),
        ("The repo is public", "The repo is private", [("public", "private")]),
        ("The token is valid", "The token is invalid", [("valid", "invalid")]),
        ("Python 3.13 is supported", "Python 3.13 is unsupported", [("supported", "unsupported")]),
        ("The daemon is offline", "the daemon came back online", [("offline", "online")]),
        # on/off as state words only
        ("Debug logging is on", "Debug logging is off", [("on", "off")]),
        ("Turned the feature flag off.", "The feature flag is on.", [("off", "on")]),
        ("LOG_SQL=on", "LOG_SQL=off", [("on", "off")]),
        ("verbose: on", "verbose: off", [("on", "off")]),
        # several pairs, in table order
        (
            "Enabled the cache and added a TTL",
            "Disabled the cache and removed the TTL",
            [("enabled", "disabled"), ("added", "removed")],
        ),
        # negation of the same following word
        (
            "The client is thread-safe.",
            "The client isn't thread-safe.",
            [("is thread-safe", "is not thread-safe")],
        ),
        (
            "The client is not thread-safe.",
            "The client is thread-safe.",
            [("is not thread-safe", "is thread-safe")],
        ),
        ("The index is stale", "The index is no longer stale", [("is stale", "is not stale")]),
        (
            "Tests are flaky",
            "the test isn’t flaky",
            [("is flaky", "is not flaky")],
        ),  # are ~ is, ’ ~ '
        (
            "The sync was a blocker",
            "The sync was not a blocker",
            [("was blocker", "was not blocker")],
        ),
        (
            "The worker can reconnect",
            "The worker cannot reconnect",
            [("can reconnect", "can not reconnect")],
        ),
        (
            "The upgrade will break recall",
            "The upgrade won't break recall",
            [("will break", "will not break")],
        ),
        # case-insensitive
        ("FEATURE IS ENABLED", "feature is disabled", [("enabled", "disabled")]),
    ],
)
def test_opposing_pairs_found(a: str, b: str, expected: list[tuple[str, str]]) -> None:
    assert opposing_pairs(a, b) == expected
    assert contradicts(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # same polarity
        ("The cache is enabled", "Caching is enabled again"),
        # a negated pair word agrees with its opposite
        ("The cache is not enabled", "The cache is disabled"),
        ("The upload never succeeded", "The upload failed"),
        # whole words only
        ("re-enabled the cron job", "disabled the cron job"),
        ("enabled_features = []", "disabled the cron job"),
        ("the onboarding flow", "turned the flag off"),
        # a text containing both words is discussing the contrast
        ("Toggle between enabled and disabled", "The cache is disabled"),
        ("true or false flags", "returns false"),
        # on/off as prepositions or particles
        ("It depends on the config", "Turned off the config"),
        ("Logged on to the server", "Logged off the server"),
        ("Read the docs off the wiki", "Click on the button"),
        # deliberately not pairs
        ("yes, ship it", "no, wait"),
        ("Use the sync client here", "Use the async client there"),
        # different following words
        ("The cache is warm", "The cache is not cold"),
        # negation only on stopwords / fillers
        ("It is a thing", "It is not a"),
        # unrelated
        ("Caroline went to the support group", "Melanie painted a sunset"),
        ("", ""),
        ("", "The cache is disabled"),
    ],
)
def test_no_opposing_pairs(a: str, b: str) -> None:
    assert opposing_pairs(a, b) == []
    assert not contradicts(a, b)


def test_pairs_are_oriented_from_a_to_b() -> None:
    a, b = "The repo is public", "The repo is private"
    assert opposing_pairs(a, b) == [("public", "private")]
    assert opposing_pairs(b, a) == [("private", "public")]


def test_pair_table_has_no_duplicates_or_self_pairs() -> None:
    words = [w for pair in OPPOSITE_PAIRS for w in pair]
    assert len(set(OPPOSITE_PAIRS)) == len(OPPOSITE_PAIRS)
    assert all(x != y for x, y in OPPOSITE_PAIRS)
    assert all(w == w.lower() for w in words)
    for excluded in [("yes", "no"), ("sync", "async")]:
        assert excluded not in OPPOSITE_PAIRS


sentences = st.lists(
    st.sampled_from(
        [
            "the",
            "cache",
            "is",
            "not",
            "enabled",
            "disabled",
            "on",
            "off",
            "always",
            "never",
            "true",
            "false",
            ".",
            "isn't",
        ]
    ),
    max_size=12,
).map(" ".join)


@given(sentences, sentences)
def test_opposing_pairs_is_symmetric_up_to_orientation(a: str, b: str) -> None:
    forward = opposing_pairs(a, b)
    backward = opposing_pairs(b, a)
    assert sorted((y, x) for x, y in forward) == sorted(backward)
    assert contradicts(a, b) == bool(forward)


@given(sentences)
def test_a_text_never_contradicts_itself(a: str) -> None:
    assert opposing_pairs(a, a) == []
