"""Reactor rules as data: parsing and validation of ``reactor.rules`` (pure, no I/O).

A rule is ``name`` + ``on`` (an event type of ``events/types.py``) + ``when`` (conditions
over the event's fields) + ``do`` (an action) + ``cooldown_s`` + ``enabled``. Rules come from
config.yaml, so everything a user can get wrong is refused here, before the daemon starts,
with a message that names the rule: an unknown event type, a field the event does not have,
an unknown operator or action, a negative cooldown, a duplicate name. Whether the agent a
rule runs exists is only known once the daemon has built its agents (``check_agents``).

Conditions are a small closed language (equality, membership, numeric comparison, presence)
interpreted by ``reactor/matcher.py``: no eval, no code, nothing a config file could use to
run anything but the registered agents.

``when`` maps a field (``kind``; a dotted path into a mapping field: ``detail.ratio``) to
either a scalar (equality), a list (membership) or operators::

    when: {kind: dead_ratio, severity: [warning, alert], value: {gt: 0.3, lte: 1}}
"""

from __future__ import annotations

import dataclasses
import math
import re
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from mnemonic.events.types import EVENT_TYPES_BY_NAME, Event

MAX_RULES = 100
MAX_CONDITIONS = 20
MAX_LIST = 100  # values in one `in` / `not_in` list
MAX_TEXT = 200  # characters of one compared string

NUMERIC_OPS = frozenset({"gt", "gte", "lt", "lte"})
VALUE_OPS = frozenset({"eq", "ne"})
LIST_OPS = frozenset({"in", "not_in"})
OPERATORS = NUMERIC_OPS | VALUE_OPS | LIST_OPS | {"exists"}
ACTIONS = ("run_agent",)
RULE_KEYS = ("name", "on", "when", "do", "cooldown_s", "enabled")
DEFAULT_COOLDOWN_S = 60.0

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")

Scalar = str | int | float | bool | None
FieldKind = Literal["number", "text", "bool", "mapping", "time", "list", "other"]

# The built-in rules: the default of ``reactor.rules``. Each cooldown bounds a loop (a
# consolidation feeds metacognition, whose dead-ratio audit may ask for a consolidation;
# an abstraction cycle discovers patterns, each of which asks for an abstraction cycle).
BUILTIN_RULES: tuple[dict[str, Any], ...] = (
    {
        "name": "consolidate-on-dead-ratio",
        "on": "meta_observation",
        "when": {"kind": "dead_ratio", "severity": ["warning", "alert"]},
        "do": {"run_agent": "consolidation"},
        "cooldown_s": 21600.0,
        "enabled": True,
    },
    {
        "name": "consolidate-on-store-size",
        "on": "meta_observation",
        "when": {"kind": "store_size", "value": {"gt": 2 * 1024**3}},
        "do": {"run_agent": "consolidation"},
        "cooldown_s": 21600.0,
        "enabled": True,
    },
    {
        "name": "dream-after-episode",
        "on": "episode_closed",
        "when": {},
        "do": {"run_agent": "dreaming"},
        "cooldown_s": 1800.0,
        "enabled": True,
    },
    {
        "name": "meta-after-consolidation",
        "on": "consolidation_completed",
        "when": {},
        "do": {"run_agent": "metacognition"},
        "cooldown_s": 3600.0,
        "enabled": True,
    },
    {
        "name": "abstract-after-pattern",
        "on": "pattern_discovered",
        "when": {},
        "do": {"run_agent": "abstraction"},
        "cooldown_s": 3600.0,
        "enabled": True,
    },
)


class RuleError(ValueError):
    """A rule that cannot run; the message names it (``reactor rule 'x': ...``)."""

    def __init__(self, rule: str, problem: str) -> None:
        super().__init__(f"reactor rule {rule!r}: {problem}")
        self.rule = rule
        self.problem = problem


@dataclass(frozen=True, slots=True)
class Condition:
    """``path`` ``op`` ``operand``; ``path`` is the field and any keys below it."""

    path: tuple[str, ...]
    op: str
    operand: Any


@dataclass(frozen=True, slots=True)
class RunAgent:
    """Start one cycle of a registered cycle agent (``runtime/agent_runs.py``)."""

    agent: str

    def describe(self) -> str:
        return f"run_agent:{self.agent}"


Action = RunAgent


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    on: str
    conditions: tuple[Condition, ...]
    action: Action
    cooldown_s: float
    enabled: bool
    definition: Mapping[str, Any]  # the normalised config entry, shown by the REST face
    builtin: bool = False


# ---- the fields of each event ------------------------------------------------------------

_UnionType = type(int | None)


def _kind(annotation: Any) -> FieldKind:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if args and origin in (typing.Union, _UnionType):
        kinds = {_kind(a) for a in args}
        return kinds.pop() if len(kinds) == 1 else "other"
    if annotation is bool:
        return "bool"
    if annotation in (int, float):
        return "number"
    if annotation is str:
        return "text"
    if annotation is datetime:
        return "time"
    if annotation is Any or origin in (Mapping, dict) or annotation in (Mapping, dict):
        return "mapping"
    if origin in (tuple, list, frozenset, set, Sequence):
        return "list"
    return "other"


def event_fields(event_type: type[Event]) -> dict[str, FieldKind]:
    """The payload fields of an event type and what kind of value each holds."""
    hints = typing.get_type_hints(event_type)
    return {
        f.name: _kind(hints[f.name])
        for f in dataclasses.fields(event_type)
        if f.name not in ("at", "context")
    }


# ---- parsing -------------------------------------------------------------------------------


def normalise_keys(raw: Any) -> Any:
    """YAML 1.1 reads an unquoted ``on:`` key as ``True``; give it its name back."""
    if isinstance(raw, Mapping) and True in raw and "on" not in raw:
        return {("on" if k is True else k): v for k, v in raw.items()}
    return raw


def parse_rule(raw: Any, index: int = 0) -> Rule:
    """One rule from its config entry; ``RuleError`` names the rule (or its position)."""
    raw = normalise_keys(raw)
    if not isinstance(raw, Mapping):
        raise RuleError(f"#{index + 1}", "a rule is a mapping with name, on, when, do")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        label = name if isinstance(name, str) and name else f"#{index + 1}"
        raise RuleError(
            label, "name must be 1-64 letters, digits, '-', '_' or '.', starting with one"
        )
    unknown = sorted(str(k) for k in raw if k not in RULE_KEYS)
    if unknown:
        raise RuleError(name, f"unknown keys {unknown}; a rule has {list(RULE_KEYS)}")
    on = raw.get("on")
    event_type = EVENT_TYPES_BY_NAME.get(on) if isinstance(on, str) else None
    if event_type is None or not isinstance(on, str):
        raise RuleError(
            name, f"unknown event type {on!r} in 'on'; known: {sorted(EVENT_TYPES_BY_NAME)}"
        )
    when = raw.get("when") or {}
    if not isinstance(when, Mapping):
        raise RuleError(name, "'when' must be a mapping of field -> condition")
    conditions = _conditions(name, when, event_fields(event_type))
    action = _action(name, raw.get("do"))
    cooldown = _cooldown(name, raw.get("cooldown_s", DEFAULT_COOLDOWN_S))
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise RuleError(name, "'enabled' must be true or false")
    definition = {
        "name": name,
        "on": on,
        "when": _plain(when),
        "do": {"run_agent": action.agent},
        "cooldown_s": cooldown,
        "enabled": enabled,
    }
    builtin = definition in BUILTIN_RULES
    return Rule(name, on, conditions, action, cooldown, enabled, definition, builtin)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _cooldown(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RuleError(name, f"cooldown_s must be a number of seconds, not {value!r}")
    if not math.isfinite(value) or value < 0:
        raise RuleError(name, f"cooldown_s must be >= 0 (got {value!r})")
    return float(value)


def _action(name: str, do: Any) -> Action:
    if not isinstance(do, Mapping) or len(do) != 1:
        raise RuleError(name, f"'do' must name exactly one action, one of {list(ACTIONS)}")
    ((kind, target),) = do.items()
    if kind != "run_agent":
        raise RuleError(name, f"unknown action {kind!r}; known: {list(ACTIONS)}")
    if not isinstance(target, str) or not _AGENT.match(target):
        raise RuleError(name, f"run_agent needs an agent name, not {target!r}")
    return RunAgent(target)


def _conditions(
    name: str, when: Mapping[Any, Any], fields: Mapping[str, FieldKind]
) -> tuple[Condition, ...]:
    if len(when) > MAX_CONDITIONS:
        raise RuleError(name, f"at most {MAX_CONDITIONS} conditions in 'when'")
    out: list[Condition] = []
    for key, spec in when.items():
        if not isinstance(key, str) or not key:
            raise RuleError(name, f"a field name in 'when' must be text, not {key!r}")
        path = tuple(key.split("."))
        kind = fields.get(path[0])
        if kind is None:
            raise RuleError(
                name, f"unknown field {path[0]!r} in 'when'; the event has {sorted(fields)}"
            )
        if len(path) > 1:
            if kind != "mapping" or not all(path):
                raise RuleError(name, f"{key!r}: only mapping fields have keys below them")
            kind = "other"  # a value inside a mapping: any kind
        out.extend(_field_conditions(name, key, path, kind, spec))
    return tuple(out)


def _field_conditions(
    name: str, key: str, path: tuple[str, ...], kind: FieldKind, spec: Any
) -> Iterable[Condition]:
    if isinstance(spec, list | tuple):
        spec = {"in": spec}
    elif not isinstance(spec, Mapping):
        spec = {"eq": spec}
    if not spec:
        raise RuleError(name, f"{key!r}: an empty condition")
    for op, operand in spec.items():
        if op not in OPERATORS:
            raise RuleError(name, f"{key!r}: unknown operator {op!r}; known: {sorted(OPERATORS)}")
        _check_operand(name, key, kind, op, operand)
        yield Condition(path, op, tuple(operand) if op in LIST_OPS else operand)


def _check_operand(name: str, key: str, kind: FieldKind, op: str, operand: Any) -> None:
    if op in NUMERIC_OPS:
        if not is_number(operand):
            raise RuleError(name, f"{key!r}: {op} compares with a number, not {operand!r}")
        if kind not in ("number", "other"):
            raise RuleError(name, f"{key!r}: {op} needs a numeric field ({key} is {kind})")
    elif op in LIST_OPS:
        if not isinstance(operand, list | tuple) or not operand or len(operand) > MAX_LIST:
            raise RuleError(name, f"{key!r}: {op} takes a list of 1-{MAX_LIST} values")
        for value in operand:
            _check_scalar(name, key, value)
    elif op == "exists":
        if not isinstance(operand, bool):
            raise RuleError(name, f"{key!r}: exists takes true or false")
    else:
        _check_scalar(name, key, operand)


def _check_scalar(name: str, key: str, value: Any) -> None:
    if value is not None and not isinstance(value, str | int | float | bool):
        raise RuleError(name, f"{key!r}: compares with text, numbers, booleans or null only")
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise RuleError(name, f"{key!r}: compared text longer than {MAX_TEXT} characters")
    if isinstance(value, float) and not math.isfinite(value):
        raise RuleError(name, f"{key!r}: compares with a finite number only")


def is_number(value: Any) -> bool:
    """An int or a finite float (booleans are not numbers here; huge ints are)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def parse_rules(raw: Sequence[Any], disabled: Iterable[str] = ()) -> list[Rule]:
    """Every rule of ``reactor.rules``, those named in ``reactor.disabled`` turned off.
    Refuses duplicate names and a ``disabled`` entry that names no rule (a typo would
    otherwise leave a rule running that the user meant to stop)."""
    if len(raw) > MAX_RULES:
        raise RuleError("*", f"at most {MAX_RULES} rules")
    rules: list[Rule] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        rule = parse_rule(item, index)
        if rule.name in seen:
            raise RuleError(rule.name, "two rules have this name; names must be unique")
        seen.add(rule.name)
        rules.append(rule)
    off = set(disabled)
    for name in sorted(off - seen):
        raise RuleError(name, "named in reactor.disabled, but there is no such rule")
    return [dataclasses.replace(r, enabled=False) if r.name in off else r for r in rules]


def check_agents(rules: Iterable[Rule], known: Iterable[str]) -> None:
    """Refuse a rule that runs an agent this daemon does not have. Built-in rules are
    spared: their agent may be one this build leaves out (they then never fire)."""
    names = set(known)
    for rule in rules:
        if rule.builtin or rule.action.agent in names:
            continue
        raise RuleError(
            rule.name,
            f"run_agent names unknown agent {rule.action.agent!r}; agents: {sorted(names)}",
        )
