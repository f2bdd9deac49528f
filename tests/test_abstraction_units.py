"""The abstraction agent's pure judgments: clustering, matching (and the super-attractor
guard), strength, grounding, states, caps, grouping and the LLM grounding check; tables
and Hypothesis properties."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonic.cli.abstractions import abstraction_line, show_lines
from mnemonic.cognition.abstraction import (
    Child,
    Known,
    LifeParams,
    MatchParams,
    accept_description,
    allowance,
    best_match,
    confidence,
    decayed,
    grounding,
    group_children,
    heuristic_title,
    near_duplicates,
    next_state,
    over_cap,
    plan_patterns,
    strength,
)
from mnemonic.cognition.clustering import (
    Cluster,
    GraphParams,
    Link,
    Node,
    find_clusters,
    qualifies,
    terms_of,
)

P = MatchParams()
LIFE = LifeParams()
DOCKER = ("docker", "compose", "container", "image")
PYTEST = ("pytest", "fixture", "conftest", "scoped")


def _cluster(seqs: range | list[int], concepts: tuple[str, ...], days: int = 3) -> Cluster:
    return Cluster(tuple(sorted(seqs)), concepts, "p", 0, days)


def _terms(seqs: range | list[int], concepts: tuple[str, ...]) -> dict[int, frozenset[str]]:
    return {s: frozenset(concepts[:2]) for s in seqs}


# ---- measures ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("live", "k", "expected"),
    [(0, 8.0, 0.0), (8, 8.0, 1 - math.exp(-1)), (1000, 8.0, 1.0), (5, 0.0, 0.0), (-3, 8.0, 0.0)],
)
def test_strength_grows_with_evidence_and_is_bounded(live: int, k: float, expected: float) -> None:
    assert strength(live, k) == pytest.approx(expected)


def test_strength_decays_without_new_evidence() -> None:
    assert decayed(0.8, 30.0, 30.0) == pytest.approx(0.4)
    assert decayed(0.8, 0.0, 30.0) == pytest.approx(0.8)
    assert decayed(0.8, 60.0, 30.0) == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("live", "total", "expected"), [(0, 0, 0.0), (3, 4, 0.75), (5, 5, 1.0), (9, 5, 1.0)]
)
def test_grounding_is_the_share_of_live_evidence(live: int, total: int, expected: float) -> None:
    assert grounding(live, total) == expected


@pytest.mark.parametrize(
    ("state", "ground", "idle", "expected"),
    [
        ("active", 0.9, 0, "active"),
        ("active", 0.1, 0, "demoted"),  # demoted first, never archived at once
        ("demoted", 0.1, 0, "archived"),
        ("demoted", 0.4, 0, "demoted"),
        ("demoted", 0.4, 31, "archived"),  # never recovered
        ("demoted", 0.6, 0, "active"),  # recovered
        ("dismissed", 1.0, 0, "dismissed"),
        ("merged", 0.0, 0, "merged"),
        ("archived", 0.0, 0, "archived"),
    ],
)
def test_states_move_one_step_per_cycle(
    state: str, ground: float, idle: float, expected: str
) -> None:
    assert next_state(state, ground, idle, LIFE) == expected


def test_over_cap_archives_the_weakest() -> None:
    rows = [("a", 0.9, 1.0), ("b", 0.1, 2.0), ("c", 0.5, 3.0), ("d", 0.1, 1.0)]
    assert over_cap(rows, 2) == ["d", "b"]
    assert over_cap(rows, 4) == []


@settings(max_examples=200, deadline=None)
@given(
    st.integers(-5, 10_000),
    st.floats(0.01, 1000),
    st.floats(0, 1),
    st.floats(0, 10_000),
    st.lists(st.floats(0, 1), max_size=20),
)
def test_measures_stay_in_range(
    live: int, k: float, v: float, idle: float, xs: list[float]
) -> None:
    assert 0.0 <= strength(live, k) <= 1.0
    assert 0.0 <= decayed(v, idle, 30.0) <= 1.0
    assert 0.0 <= grounding(max(live, 0) // 2, max(live, 0)) <= 1.0
    assert 0.0 <= confidence(xs, xs[::-1]) <= 1.0


# ---- the super-attractor guard -----------------------------------------------------------------


def test_a_docker_pattern_does_not_absorb_a_pytest_cluster_sharing_memories() -> None:
    docker = Known("d", "active", DOCKER, frozenset(range(1, 11)))
    pytest_cluster = _cluster([9, 10, *range(20, 28)], PYTEST)  # 2 memories in common
    plan = plan_patterns([pytest_cluster], [docker], _terms(range(30), PYTEST), P)
    assert plan.grown == []
    assert len(plan.created) == 1 and plan.created[0].cluster.concepts == PYTEST


def test_a_matching_cluster_adds_only_on_topic_members_and_growth_is_capped() -> None:
    docker = Known("d", "active", DOCKER, frozenset(range(1, 11)))
    members = list(range(1, 11)) + list(range(100, 140))
    terms = {s: frozenset({"docker"}) for s in members}
    for s in range(130, 140):
        terms[s] = frozenset({"pytest"})  # off topic: kept out by the guard
    plan = plan_patterns([_cluster(members, DOCKER)], [docker], terms, P)
    (grown,) = plan.grown
    assert len(grown.added) == allowance(10, P) == 10  # max(growth_min, 0.5 * 10)
    assert not set(grown.added) & set(range(130, 140))
    assert plan.guarded == 30


def test_two_clusters_in_one_cycle_share_one_growth_allowance() -> None:
    docker = Known("d", "active", DOCKER, frozenset(range(1, 11)))
    a = _cluster([*range(1, 5), *range(100, 120)], DOCKER)
    b = _cluster([*range(5, 9), *range(200, 220)], DOCKER)
    terms = {s: frozenset({"docker"}) for s in range(300)}
    plan = plan_patterns([a, b], [docker], terms, P)
    assert sum(len(g.added) for g in plan.grown) <= allowance(10, P)


def test_a_dismissed_pattern_suppresses_its_theme() -> None:
    gone = Known("x", "dismissed", DOCKER, frozenset(range(1, 11)))
    plan = plan_patterns([_cluster(range(1, 11), DOCKER)], [gone], _terms(range(20), DOCKER), P)
    assert (plan.created, plan.grown, plan.suppressed) == ([], [], 1)


def test_the_same_theme_in_fresh_memories_updates_the_pattern() -> None:
    docker = Known("d", "active", DOCKER, frozenset(range(1, 11)))
    fresh = _cluster(range(50, 60), DOCKER)  # no shared evidence, the same concepts
    plan = plan_patterns([fresh], [docker], _terms(range(60), DOCKER), P)
    assert [g.id for g in plan.grown] == ["d"] and not plan.created
    weak = _cluster(range(50, 60), ("docker", "other", "words", "here"))  # J = 1/7
    assert best_match(weak, [docker], P) is None


def test_new_patterns_per_cycle_are_capped() -> None:
    clusters = [_cluster(range(i * 10, i * 10 + 5), (f"t{i}",)) for i in range(30)]
    plan = plan_patterns(clusters, [], {}, P)
    assert len(plan.created) == P.max_new and plan.deferred == 30 - P.max_new


def test_near_duplicates_merge_into_the_older() -> None:
    old = Known("old", "active", DOCKER, frozenset(range(10)), created=1.0)
    new = Known("new", "active", DOCKER[:3], frozenset(range(4, 12)), created=2.0)
    other = Known("other", "active", PYTEST, frozenset(range(10)), created=0.5)
    assert near_duplicates([new, old, other], P) == [("new", "old")]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 15))
def test_pattern_count_stays_under_the_cap_over_many_cycles(seed: int, cap: int) -> None:
    """Random themes for 60 cycles: creation, growth and the cap never leave more than
    ``cap`` active patterns, and no pattern's evidence passes ``max_evidence``."""
    rng = random.Random(seed)
    p = MatchParams(max_new=5, max_evidence=40)
    vocabulary = [f"w{i}" for i in range(25)]
    store: dict[str, Known] = {}
    for cycle in range(60):
        clusters = []
        for _ in range(rng.randint(0, 6)):
            concepts = tuple(rng.sample(vocabulary, 3))
            start = rng.randint(0, 500)
            clusters.append(_cluster(range(start, start + rng.randint(4, 30)), concepts))
        terms = {
            s: frozenset(vocabulary[s % 25 :: 7]) | {c for cl in clusters for c in cl.concepts}
            for s in range(600)
        }
        known = [k for k in store.values() if k.state in ("active", "dismissed", "archived")]
        plan = plan_patterns(clusters, known, terms, p)
        for n, new in enumerate(plan.created):
            pid = f"{cycle}-{n}"
            store[pid] = Known(pid, "active", new.cluster.concepts, frozenset(new.evidence), cycle)
        for g in plan.grown:
            k = store[g.id]
            store[g.id] = Known(k.id, "active", g.concepts, k.evidence | set(g.added), k.created)
        active = [k for k in store.values() if k.state == "active"]
        rows = [(k.id, strength(len(k.evidence), 8.0), k.created) for k in active]
        for pid in over_cap(rows, cap):
            k = store[pid]
            store[pid] = Known(k.id, "archived", k.concepts, k.evidence, k.created)
        assert sum(k.state == "active" for k in store.values()) <= cap
        assert all(len(k.evidence) <= p.max_evidence for k in store.values())


# ---- clustering --------------------------------------------------------------------------------


def test_terms_split_phrases_into_words() -> None:
    assert terms_of(["docker compose volume", "the"], ["Redis"]) == frozenset(
        {"docker compose volume", "docker", "compose", "volume", "the", "redis"}
    )


def _themed_nodes() -> list[Node]:
    nodes = []
    for i in range(12):
        theme = ("docker", "compose") if i < 6 else ("pytest", "fixture")
        nodes.append(Node(i + 1, frozenset({*theme, f"unique{i}"}), "p", None, 700_000 + i % 3))
    nodes.append(Node(99, frozenset({"lonely"}), "p", None, 700_000))
    return nodes


@pytest.mark.parametrize("algorithm", ["louvain", "greedy"])
def test_communities_find_the_two_themes(algorithm: str) -> None:
    found = find_clusters(
        _themed_nodes(), [], GraphParams(algorithm=algorithm), min_evidence=4, max_concepts=4
    )
    assert sorted(c.seqs for c in found) == [tuple(range(1, 7)), tuple(range(7, 13))]
    assert {frozenset(c.concepts) for c in found} == {
        frozenset({"docker", "compose"}),
        frozenset({"pytest", "fixture"}),
    }


def test_linked_memories_form_a_cluster_across_episodes() -> None:
    nodes = [Node(i, frozenset({f"u{i}"}), "p", f"e{i % 2}", 1) for i in range(1, 6)]
    links = [Link(a, b, 0.9) for a in range(1, 6) for b in range(a + 1, 6)]
    nodes = [Node(n.seq, n.terms | {"shared"}, n.project, n.episode, n.day) for n in nodes]
    nodes += [Node(i, frozenset({f"v{i}"}), "p", None, 1) for i in range(10, 15)]  # no links
    (cluster,) = find_clusters(nodes, links, GraphParams(), min_evidence=4, max_concepts=3)
    assert cluster.seqs == (1, 2, 3, 4, 5) and cluster.episodes == 2


def test_a_burst_in_one_day_and_one_episode_is_no_recurring_theme() -> None:
    assert not qualifies(Cluster((1, 2, 3, 4), ("x",), "p", 1, 1), 4)
    assert qualifies(Cluster((1, 2, 3, 4), ("x",), "p", 2, 1), 4)
    assert not qualifies(Cluster((1, 2, 3), ("x",), "p", 2, 2), 4)
    assert not qualifies(Cluster((1, 2, 3, 4), (), "p", 2, 2), 4)


def test_a_common_term_links_nothing() -> None:
    nodes = [Node(i, frozenset({"code"}), "p", None, i) for i in range(1, 40)]
    assert (
        find_clusters(nodes, [], GraphParams(max_term_df=10), min_evidence=4, max_concepts=3) == []
    )


# ---- principles ---------------------------------------------------------------------------------


def test_patterns_sharing_concepts_group_into_a_principle() -> None:
    children = [
        Child("a", ("docker", "deploy"), 0.8, 1.0, "p"),
        Child("b", ("docker", "compose"), 0.6, 1.0, "p"),
        Child("c", ("pytest", "fixture"), 0.9, 1.0, "p"),
    ]
    (group,) = group_children(children, 1, 4, 13)
    assert group.children == ("a", "b") and group.concepts == ("docker",)
    assert group.project == "p"


def test_confidence_grows_with_children_and_their_strength() -> None:
    assert confidence([], []) == 0.0
    two = confidence([0.8, 0.8], [1.0, 1.0])
    four = confidence([0.8] * 4, [1.0] * 4)
    assert 0 < two < four <= 1
    assert confidence([0.8, 0.8], [0.5, 0.5]) == pytest.approx(two / 2)


# ---- titles and the LLM's grounding -------------------------------------------------------------


def test_heuristic_titles_are_bounded() -> None:
    assert (
        heuristic_title("pattern", ("docker", "compose"), 80) == "Recurring theme: docker, compose"
    )
    assert len(heuristic_title("axiom", ("x" * 50, "y" * 50), 30)) == 30


@pytest.mark.parametrize(
    ("answer", "accepted"),
    [
        ({"title": "Docker compose volumes", "description": "Volume mounts break often."}, True),
        ({"title": "Kubernetes migration", "description": "Moved to Kubernetes."}, False),
        ({"title": "Volumes", "description": "It broke 17 times."}, False),  # invented number
        ({"title": "", "description": "x"}, False),
        ({"title": "x" * 200, "description": ""}, False),
        (None, False),
    ],
)
def test_llm_descriptions_must_be_grounded(answer: dict[str, str] | None, accepted: bool) -> None:
    texts = ["Docker compose volume mounts break when the container runs as root."]
    result = accept_description(answer, ("docker", "volume"), texts, 80, 300)
    assert (result is not None) == accepted


def test_cli_lines_show_the_fields() -> None:
    item = {"id": "i1", "level": "pattern", "state": "active", "strength": 0.5,
            "evidence_count": 3, "title": "Recurring theme: docker"}  # fmt: skip
    assert abstraction_line(item) == "0.50  active       3  pattern    Recurring theme: docker  i1"
    lines = show_lines({"abstraction": {**item, "concepts": ["docker"]},
                        "evidence": [{"id": "m1", "summary": "s", "state": "active",
                                      "timestamp": "2026-01-01T00:00:00"}],
                        "children": [], "truncated": True})  # fmt: skip
    assert "concepts: docker" in lines and lines[-1].startswith("  …")
    assert any("m1 s" in line for line in lines)
