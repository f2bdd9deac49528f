"""Consolidation's pure judgment: decay, states, watermarks, link pruning, merge rules,
gists, faithfulness and cron schedules. Properties run with Hypothesis over a fake clock."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonic.cognition.decay import (
    ACTIVE,
    ARCHIVED,
    DAY,
    FADING,
    MERGED,
    TYPE_CODES,
    DecayParams,
    Rows,
    Watermarks,
    decay,
)
from mnemonic.cognition.links import PruneParams, prune_mask
from mnemonic.cognition.merging import (
    Candidate,
    MergeParams,
    accept_summary,
    clusters,
    faithful,
    heuristic_gist,
    may_join,
    plan_gist,
)
from mnemonic.config import DEFAULT_HALF_LIVES, load_config
from mnemonic.cron import next_fire

P = DecayParams(half_life_days=DEFAULT_HALF_LIVES)
T0 = 1_700_000_000.0


def _rows(
    n: int,
    *,
    salience: float | list[float] = 0.8,
    kind: str = "general",
    utility: float | list[float] = 1.0,
    state: int = ACTIVE,
    created: float = T0,
    accessed: float = np.nan,
) -> Rows:
    return Rows(
        seq=np.arange(1, n + 1, dtype=np.int64),
        type=np.full(n, TYPE_CODES[kind], dtype=np.int64),
        state=np.full(n, state, dtype=np.int64),
        salience=np.broadcast_to(np.asarray(salience, dtype=np.float64), (n,)).copy(),
        utility=np.broadcast_to(np.asarray(utility, dtype=np.float64), (n,)).copy(),
        created=np.full(n, created),
        accessed=np.full(n, accessed),
    )


def _apply(rows: Rows, salience: np.ndarray, state: np.ndarray) -> Rows:
    return Rows(rows.seq, rows.type, state, salience, rows.utility, rows.created, rows.accessed)


# ---- decay ------------------------------------------------------------------------------


def test_salience_halves_above_the_floor_after_one_half_life_past_the_grace() -> None:
    rows = _rows(1, salience=0.85)
    now = T0 + (P.grace_days + 30) * DAY  # general: 30 days
    out = decay(rows, np.full(1, -np.inf), now, P)
    assert out.salience[0] == pytest.approx(0.05 + 0.8 / 2)


@pytest.mark.parametrize(
    ("kind", "slower_than_general"),
    [("decision", True), ("error", True), ("learning", True), ("general", False)],
)
def test_decisions_and_errors_decay_slower(kind: str, slower_than_general: bool) -> None:
    now = T0 + 60 * DAY
    general = decay(_rows(1), np.full(1, -np.inf), now, P).salience[0]
    other = decay(_rows(1, kind=kind), np.full(1, -np.inf), now, P).salience[0]
    assert bool(other > general) is slower_than_general


def test_handoffs_never_decay_nor_fade() -> None:
    rows = _rows(1, kind="handoff", salience=0.2)
    out = decay(rows, np.full(1, -np.inf), T0 + 900 * DAY, P)
    assert out.salience[0] == 0.2 and out.state[0] == ACTIVE and not out.changed[0]


def test_recent_access_and_positive_feedback_protect() -> None:
    now = T0 + 100 * DAY
    plain = decay(_rows(1), np.full(1, -np.inf), now, P).salience[0]
    accessed = decay(_rows(1, accessed=now - DAY), np.full(1, -np.inf), now, P).salience[0]
    helpful = decay(_rows(1, utility=1.5), np.full(1, -np.inf), now, P).salience[0]
    unhelpful = decay(_rows(1, utility=0.5), np.full(1, -np.inf), now, P).salience[0]
    assert accessed == 0.8  # inside the grace period after an access
    assert unhelpful < plain < helpful


def test_states_follow_thresholds_and_archiving_needs_idleness() -> None:
    sal = [0.5, 0.2, 0.1, 0.1, 0.35]
    rows = Rows(
        seq=np.arange(1, 6, dtype=np.int64),
        type=np.zeros(5, dtype=np.int64),
        state=np.array([ACTIVE, ACTIVE, ACTIVE, ACTIVE, FADING], dtype=np.int64),
        salience=np.array(sal),
        utility=np.array([1.0, 1.0, 1.0, 1.5, 1.0]),
        created=np.array([T0, T0, T0, T0, T0]),
        accessed=np.array([np.nan, np.nan, np.nan, np.nan, np.nan]),
    )
    # since = now: no decay at all, only the state rules
    now = T0 + 40 * DAY
    out = decay(rows, np.full(5, now), now, P)
    assert list(out.salience) == sal
    # 0.5 active; 0.2 fading; 0.1 idle 40 days archived; 0.1 but helpful: only fading;
    # 0.35 fading stays fading below revive_above (hysteresis)
    assert list(out.state) == [ACTIVE, FADING, ARCHIVED, FADING, FADING]
    recent = decay(rows, np.full(5, T0 + 5 * DAY), T0 + 5 * DAY, P)
    assert recent.state[2] == FADING  # not idle long enough to archive


def test_merged_memories_are_left_alone() -> None:
    rows = _rows(3, state=MERGED, salience=0.1)
    out = decay(rows, np.full(3, -np.inf), T0 + 400 * DAY, P)
    assert not out.changed.any()


@settings(max_examples=15, deadline=None)
@given(
    salience=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30),
    utility=st.floats(0.5, 1.5),
    kind=st.sampled_from(sorted(DEFAULT_HALF_LIVES)),
    steps=st.lists(st.floats(0.0, 5 * DAY), min_size=1000, max_size=1000),
    accesses=st.lists(st.integers(0, 999), max_size=5),
)
def test_salience_stays_in_range_over_a_thousand_cycles(
    salience: list[float], utility: float, kind: str, steps: list[float], accesses: list[int]
) -> None:
    """Salience never rises, never leaves [0, 1], never drops below the floor it started
    above; a cycle repeated at the same time changes nothing; states are fixed points."""
    n = len(salience)
    rows = _rows(n, salience=salience, kind=kind, utility=utility)
    wm = Watermarks()
    now = T0
    for i, step in enumerate(steps):
        now += step
        if i in accesses:
            rows = Rows(
                rows.seq, rows.type, rows.state, rows.salience, rows.utility, rows.created,
                np.full(n, now),
            )  # fmt: skip
        out = decay(rows, wm.since(rows.seq), now, P)
        assert np.all(out.salience <= rows.salience)
        assert np.all((out.salience >= 0) & (out.salience <= 1))
        above = rows.salience >= P.salience_floor
        assert np.all(out.salience[above] >= P.salience_floor)
        wm.mark(0, 2**62, now)
        rows = _apply(rows, out.salience, out.state)
        again = decay(rows, wm.since(rows.seq), now, P)
        assert not again.changed.any()


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.integers(0, 60), st.integers(0, 60), st.floats(0, 1e6)),
        min_size=1,
        max_size=12,
    )
)
def test_watermarks_remember_the_latest_mark_of_each_seq(
    ops: list[tuple[int, int, float]],
) -> None:
    wm = Watermarks()
    model = {s: -np.inf for s in range(1, 70)}
    for lo, hi, at in ops:
        wm.mark(lo, hi, at)
        for s in range(lo + 1, hi + 1):
            model[s] = at
        wm = Watermarks.from_json(wm.to_json())
    seqs = np.arange(1, 70, dtype=np.int64)
    assert list(wm.since(seqs)) == [model[s] for s in range(1, 70)]
    assert len(wm.times) <= 2 * len(ops) + 1


# ---- links ------------------------------------------------------------------------------


def test_prune_spares_strong_used_young_and_structural_links() -> None:
    now = T0 + 100 * DAY
    mask = prune_mask(
        strength=np.array([0.05, 0.5, 0.05, 0.05, 0.05]),
        activation_count=np.array([0, 0, 2, 0, 0], dtype=np.int64),
        created=np.array([T0, T0, T0, now - DAY, T0]),
        protected=np.array([False, False, False, False, True]),
        now=now,
        p=PruneParams(below=0.1, age_days=30),
    )
    assert list(mask) == [True, False, False, False, False]


# ---- merging ----------------------------------------------------------------------------

MP = MergeParams()


@pytest.mark.parametrize(
    ("a", "b", "joins"),
    [
        (
            "Run make test before pushing to main.",
            "Always run make test before pushing to main.",
            True,
        ),
        ("Run make test before pushing to main.", "Always run make test before pushing.", False),
        ("deploy to staging", "deploy to production", False),
        (
            "Deploy the web app to staging every Friday.",
            "Deploy the web app to production every Friday.",
            False,
        ),
        ("Redis listens on port 6379.", "Redis listens on port 6380.", False),
        ("The feature flag is enabled.", "The feature flag is disabled.", False),
    ],
)
def test_only_restatements_may_join(a: str, b: str, joins: bool) -> None:
    assert may_join(a, b, MP) == joins


def _cand(seq: int, content: str, ts: str = "2024-01-01", kind: str = "general") -> Candidate:
    return Candidate(seq, f"m{seq}", "p", kind, content, ts)


def test_clusters_are_disjoint_bounded_and_need_every_member_to_agree() -> None:
    found = {
        1: _cand(1, "Run make test before pushing."),
        2: _cand(2, "Always run make test before pushing."),
        3: _cand(3, "Never run make test before pushing."),  # contradicts 2? words differ
        4: _cand(4, "Run make test before pushing.", kind="decision"),
    }
    near = {1: [(2, 0.97), (3, 0.96), (4, 0.99)], 2: [(1, 0.97)]}
    groups = clusters([1, 2], near, found, MP)
    assert groups == [[1, 2]]  # 3 says something 2 does not; 4 is another type
    small = clusters(
        [1], {1: [(i, 0.99) for i in range(2, 10)]}, {i: _cand(i, "x y z") for i in range(1, 10)},
        MergeParams(max_cluster=3),
    )  # fmt: skip
    assert small == [[1, 2, 3]]


def test_the_gist_keeps_every_distinct_sentence_in_time_order() -> None:
    gist = heuristic_gist(
        [
            "We deploy with make deploy. It needs VPN access.",
            "we deploy with   make deploy",
            "We deploy with make deploy. Staging uses the eu-west-1 region!",
        ]
    )
    assert gist.splitlines() == [
        "We deploy with make deploy.",
        "It needs VPN access.",
        "Staging uses the eu-west-1 region!",
    ]


def test_a_gist_over_the_length_cap_is_skipped() -> None:
    long = [_cand(1, "alpha " * 50), _cand(2, "beta " * 50)]
    assert plan_gist(long, MergeParams(gist_max_chars=200)) is None
    assert plan_gist(long, MergeParams(gist_max_chars=1000)) is not None


def test_an_llm_summary_must_keep_every_name_and_number() -> None:
    sources = ["Sessions live in Redis 7.2, configured in session_store.py."]
    assert faithful("Redis 7.2 holds sessions (session_store.py).", sources)
    assert not faithful("Sessions live in Redis.", sources)  # dropped 7.2, session_store.py
    assert not faithful("Redis 7.2 holds sessions (session_store.py) on port 6379.", sources)
    assert accept_summary({"summary": "Redis 7.2 via session_store.py"}, sources) is not None
    assert accept_summary({"summary": 42}, sources) is None
    assert accept_summary(None, sources) is None


# ---- schedules --------------------------------------------------------------------------


def test_next_fire_of_a_nightly_cron() -> None:
    at = datetime(2024, 5, 1, 2, 0, tzinfo=UTC)
    assert next_fire("0 3 * * *", at) == datetime(2024, 5, 1, 3, 0, tzinfo=UTC)
    fired = datetime(2024, 5, 1, 3, 0, tzinfo=UTC)
    assert next_fire("0 3 * * *", fired) == datetime(2024, 5, 2, 3, 0, tzinfo=UTC)


def test_a_bad_cron_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"consolidation\.cron"):
        load_config(None, consolidation={"cron": "0 25 * * *"})
    with pytest.raises(ValueError, match="half_life_days"):
        load_config(None, consolidation={"half_life_days": {"gossip": 3}})
    cfg = load_config(None, consolidation={"cron": "30 2 * * 1", "half_life_days": {"error": 7}})
    assert cfg.consolidation.cron == "30 2 * * 1"
    assert cfg.consolidation.half_life_days["error"] == 7
    assert "decision" not in cfg.consolidation.half_life_days  # a set dict is what was set
    # (the agent merges the defaults in for the types left out)
