"""Reactor rules as data (``reactor/rules.py``, ``matcher.py``, ``cooldown.py``): what a
rule may say, how a bad one is refused (naming it), how conditions match event payloads,
and that cooldowns hold, over tables and Hypothesis."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mnemonic.config import load_config
from mnemonic.events.types import ALL_EVENT_TYPES, EpisodeClosed, MetaObservation
from mnemonic.reactor.cooldown import Cooldowns
from mnemonic.reactor.matcher import matches
from mnemonic.reactor.rules import (
    BUILTIN_RULES,
    OPERATORS,
    Condition,
    RuleError,
    check_agents,
    event_fields,
    parse_rule,
    parse_rules,
)


def rule(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "r1",
        "on": "meta_observation",
        "when": {},
        "do": {"run_agent": "consolidation"},
        "cooldown_s": 10,
    }
    base.update(overrides)
    return base


# ---- validation ----------------------------------------------------------------------------

BAD: list[tuple[dict[str, Any], str]] = [
    (rule(on="meta_observed"), "unknown event type 'meta_observed'"),
    (rule(when={"kindd": "dead_ratio"}), "unknown field 'kindd'"),
    (rule(when={"kind": {"like": "dead"}}), "unknown operator 'like'"),
    (rule(when={"kind": {"gt": 3}}), "gt needs a numeric field"),
    (rule(when={"value": {"gt": "high"}}), "gt compares with a number"),
    (rule(when={"value": {"gt": True}}), "gt compares with a number"),
    (rule(when={"severity": {"in": []}}), "in takes a list"),
    (rule(when={"severity": {}}), "an empty condition"),
    (rule(when={"kind": {"eq": {"a": 1}}}), "compares with text, numbers"),
    (rule(when={"kind.sub": "x"}), "only mapping fields have keys"),
    (rule(when={"detail.": "x"}), "only mapping fields have keys"),
    (rule(when={"severity": {"exists": "yes"}}), "exists takes true or false"),
    (rule(when=["kind"]), "'when' must be a mapping"),
    (rule(do={"run_shell": "rm -rf /"}), "unknown action 'run_shell'"),
    (rule(do={"run_agent": "a", "run_agent2": "b"}), "exactly one action"),
    (rule(do={"run_agent": ""}), "run_agent needs an agent name"),
    (rule(do="consolidation"), "exactly one action"),
    (rule(cooldown_s=-1), "cooldown_s must be >= 0"),
    (rule(cooldown_s=float("inf")), "cooldown_s must be >= 0"),
    (rule(cooldown_s="1h"), "cooldown_s must be a number"),
    (rule(enabled="yes"), "'enabled' must be true or false"),
    (rule(then="x"), "unknown keys ['then']"),
    (rule(name="has space"), "name must be"),
]


@pytest.mark.parametrize(("raw", "message"), BAD)
def test_a_bad_rule_is_refused_with_its_name(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(RuleError) as caught:
        parse_rule(raw)
    text = str(caught.value)
    assert message in text
    assert text.startswith(f"reactor rule {raw['name']!r}:")


def test_duplicate_names_and_unknown_disabled_names_are_refused() -> None:
    with pytest.raises(RuleError, match="reactor rule 'r1': two rules have this name"):
        parse_rules([rule(), rule(on="episode_closed")])
    with pytest.raises(RuleError, match=r"'dream-after-episdoe': named in reactor\.disabled"):
        parse_rules(BUILTIN_RULES, ["dream-after-episdoe"])


def test_good_rules_parse_into_conditions() -> None:
    parsed = parse_rule(
        rule(
            when={
                "kind": "dead_ratio",
                "severity": ["warning", "alert"],
                "value": {"gt": 0.3, "lte": 1},
                "detail.source": {"ne": "clipboard"},
                "threshold": {"exists": True},
            }
        )
    )
    assert parsed.conditions == (
        Condition(("kind",), "eq", "dead_ratio"),
        Condition(("severity",), "in", ("warning", "alert")),
        Condition(("value",), "gt", 0.3),
        Condition(("value",), "lte", 1),
        Condition(("detail", "source"), "ne", "clipboard"),
        Condition(("threshold",), "exists", True),
    )
    assert parsed.cooldown_s == 10.0 and parsed.enabled and not parsed.builtin
    assert parse_rule({"name": "x", "on": "episode_closed", "do": {"run_agent": "a"}}).cooldown_s


def test_builtins_parse_and_can_be_disabled_by_name() -> None:
    rules = parse_rules(BUILTIN_RULES, ["dream-after-episode"])
    assert [r.name for r in rules] == [r["name"] for r in BUILTIN_RULES]
    assert all(r.builtin for r in rules)
    assert {r.name for r in rules if not r.enabled} == {"dream-after-episode"}
    by_name = {r.name: r for r in rules}
    assert by_name["dream-after-episode"].on == "episode_closed"
    assert by_name["dream-after-episode"].action.agent == "dreaming"
    assert by_name["meta-after-consolidation"].action.agent == "metacognition"
    assert by_name["abstract-after-pattern"].action.agent == "abstraction"
    # the same rule changed by the user is the user's: its agent is then checked
    changed = parse_rule({**BUILTIN_RULES[2], "cooldown_s": 5})
    assert not changed.builtin


def test_unknown_agents_are_refused_except_in_builtins() -> None:
    rules = parse_rules([*BUILTIN_RULES, rule(name="mine", do={"run_agent": "dremaing"})])
    with pytest.raises(RuleError, match="reactor rule 'mine': run_agent names unknown agent"):
        check_agents(rules, {"consolidation", "episoding"})
    check_agents(parse_rules(BUILTIN_RULES), {"consolidation"})  # built-ins: never refused


def test_yaml_reads_an_unquoted_on_as_true_and_the_rule_still_works() -> None:
    parsed = parse_rule({"name": "x", True: "episode_closed", "do": {"run_agent": "a"}})
    assert parsed.on == "episode_closed"


def test_config_refuses_a_bad_rule_naming_it() -> None:
    with pytest.raises(ValidationError) as caught:
        load_config(None, reactor={"rules": [rule(name="my-rule", on="nope")]})
    assert "reactor rule 'my-rule': unknown event type 'nope'" in str(caught.value)
    with pytest.raises(ValidationError, match=r"reactor rule 'gone': named in reactor\.disabled"):
        load_config(None, reactor={"disabled": ["gone"]})
    cfg = load_config(
        None, reactor={"rules": [{"name": "x", True: "episode_closed", "do": {"run_agent": "a"}}]}
    )
    assert cfg.reactor.rules[0]["on"] == "episode_closed"
    assert load_config(None).reactor.rules == [dict(r) for r in BUILTIN_RULES]


def test_every_event_type_has_readable_fields() -> None:
    for event_type in ALL_EVENT_TYPES:
        fields = event_fields(event_type)
        assert fields, event_type
        assert "at" not in fields and "context" not in fields
    assert event_fields(MetaObservation)["value"] == "number"
    assert event_fields(MetaObservation)["detail"] == "mapping"
    assert event_fields(EpisodeClosed)["memory_ids"] == "list"


# ---- matching ------------------------------------------------------------------------------

PAYLOAD: dict[str, Any] = {
    "kind": "dead_ratio",
    "severity": "warning",
    "value": 0.42,
    "threshold": None,
    "count": 3,
    "flag": True,
    "detail": {"source": "terminal", "n": 7, "deep": {"x": "y"}},
}

MATCHES: list[tuple[dict[str, Any], bool]] = [
    ({}, True),
    ({"kind": "dead_ratio"}, True),
    ({"kind": "store_size"}, False),
    ({"severity": ["warning", "alert"]}, True),
    ({"severity": ["alert"]}, False),
    ({"severity": {"not_in": ["ok"]}}, True),
    ({"severity": {"ne": "warning"}}, False),
    ({"value": {"gt": 0.3}}, True),
    ({"value": {"gt": 0.42}}, False),
    ({"value": {"gte": 0.42, "lt": 1}}, True),
    ({"value": {"lte": 0.4}}, False),
    ({"count": 3}, True),
    ({"count": 3.0}, True),  # numbers compare by value
    ({"flag": 1}, False),  # true is not 1
    ({"flag": True}, True),
    ({"count": True}, False),
    ({"kind": {"gt": 1}}, False),  # text is not a number: no match, no error
    ({"threshold": None}, True),
    ({"threshold": {"gt": 0}}, False),
    ({"threshold": {"exists": True}}, True),  # present, though null
    ({"missing": {"exists": False}}, True),
    ({"missing": "x"}, False),
    ({"missing": {"ne": "x"}}, False),  # a missing field never matches
    ({"detail.source": "terminal"}, True),
    ({"detail.n": {"gte": 7}}, True),
    ({"detail.deep.x": "y"}, True),
    ({"detail.nope": {"exists": True}}, False),
    ({"kind.sub": "x"}, False),  # a path through text finds nothing
    ({"kind": "dead_ratio", "value": {"gt": 0.9}}, False),  # all must hold
]


@pytest.mark.parametrize(("when", "expected"), MATCHES)
def test_conditions_match_payloads(when: dict[str, Any], expected: bool) -> None:
    conditions = [
        Condition(tuple(key.split(".")), op, tuple(v) if isinstance(v, list) else v)
        for key, spec in when.items()
        for op, v in (
            spec.items()
            if isinstance(spec, dict)
            else [("in", spec)]
            if isinstance(spec, list)
            else [("eq", spec)]
        )
    ]
    assert matches(conditions, PAYLOAD) is expected


def test_a_parsed_rule_matches_a_real_event_payload() -> None:
    parsed = parse_rule(
        rule(when={"kind": "dead_ratio", "severity": ["warning", "alert"], "detail.n": 7})
    )
    hit = MetaObservation(kind="dead_ratio", detail={"n": 7}, severity="alert", value=0.5)
    miss = MetaObservation(kind="dead_ratio", detail={"n": 7}, severity="ok", value=0.5)
    assert matches(parsed.conditions, hit.payload())
    assert not matches(parsed.conditions, miss.payload())


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)
payloads = st.dictionaries(st.sampled_from(["kind", "value", "detail", "x", ""]), json_values)
operands = json_values | st.lists(json_values, max_size=3).map(tuple)
conditions = st.builds(
    Condition,
    st.lists(
        st.sampled_from(["kind", "value", "detail", "x", "y", ""]), min_size=1, max_size=3
    ).map(tuple),
    st.sampled_from([*sorted(OPERATORS), "bogus"]),
    operands,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(conditions, max_size=4), payloads)
def test_a_condition_never_raises_on_any_payload(
    conds: list[Condition], payload: dict[str, Any]
) -> None:
    assert matches(conds, payload) in (True, False)


# ---- cooldowns -----------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(min_value=0, max_value=5000), min_size=1, max_size=3),
    st.lists(
        st.tuples(st.integers(min_value=0, max_value=2), st.floats(min_value=0, max_value=700)),
        max_size=60,
    ),
)
def test_cooldown_holds_over_any_event_sequence(
    cooldown_s: list[float], steps: list[tuple[int, float]]
) -> None:
    gate = Cooldowns()
    now = 1000.0
    fired: dict[int, list[float]] = {}
    for which, dt in steps:
        now += dt  # a fake monotonic clock: only moves forward
        index = which % len(cooldown_s)
        name, cooldown = f"rule-{index}", cooldown_s[index]
        before = fired.get(index, [])
        admitted = gate.admit(name, cooldown, now)
        if admitted:
            fired.setdefault(index, []).append(now)
            assert gate.remaining(name, cooldown, now) == pytest.approx(cooldown)
        else:  # held back only inside the cooldown of this rule's own last fire
            assert before and now - before[-1] < cooldown
    for index, times in fired.items():
        gaps = [b - a for a, b in itertools.pairwise(times)]
        assert all(gap >= cooldown_s[index] for gap in gaps)


def test_a_restored_fire_keeps_its_cooldown() -> None:
    gate = Cooldowns()
    gate.restore("r", ago_s=100, now=50.0)  # fired 100 s ago, in an earlier process
    assert gate.remaining("r", 300, 50.0) == pytest.approx(200)
    assert not gate.admit("r", 300, 249.0)
    assert gate.admit("r", 300, 250.0)
    gate.restore("s", ago_s=-5, now=0.0)  # a wall clock that went back: a fresh fire
    assert gate.remaining("s", 10, 0.0) == pytest.approx(10)
