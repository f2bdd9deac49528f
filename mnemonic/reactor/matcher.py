"""Whether an event's payload meets a rule's conditions (pure; never raises).

The payload is ``Event.payload()``: JSON-ready values (tuples became lists, datetimes ISO
text). A condition on a field the payload lacks, or whose value has the wrong kind (a
comparison of text with a number), does not hold: the reactor then simply does not fire,
it never fails on an event it did not expect.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mnemonic.reactor.rules import Condition, is_number

_MISSING = object()


def matches(conditions: Iterable[Condition], payload: Mapping[str, Any]) -> bool:
    """All conditions hold (an empty ``when`` always matches)."""
    return all(holds(c, payload) for c in conditions)


def lookup(payload: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at ``path`` (keys into nested mappings), or ``_MISSING``."""
    value: Any = payload
    for key in path:
        if not isinstance(value, Mapping):
            return _MISSING
        try:
            value = value.get(key, _MISSING)
        except Exception:  # noqa: BLE001 - a foreign mapping may raise; it then does not match
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def holds(condition: Condition, payload: Mapping[str, Any]) -> bool:
    value = lookup(payload, condition.path)
    op, operand = condition.op, condition.operand
    if op == "exists":
        return (value is not _MISSING) == bool(operand)
    if value is _MISSING:
        return False
    if op == "eq":
        return same(value, operand)
    if op == "ne":
        return not same(value, operand)
    if op in ("in", "not_in"):
        if not isinstance(operand, tuple | list):  # parse_rule never builds one
            return False
        found = any(same(value, o) for o in operand)
        return found if op == "in" else not found
    if not (is_number(value) and is_number(operand)):
        return False
    if op == "gt":
        return bool(value > operand)
    if op == "gte":
        return bool(value >= operand)
    if op == "lt":
        return bool(value < operand)
    if op == "lte":
        return bool(value <= operand)
    return False


def same(value: Any, operand: Any) -> bool:
    """Equality of a payload value with a scalar from the rule. ``True`` is not ``1``
    (YAML and JSON keep them apart, Python would not); numbers compare by value."""
    if isinstance(value, bool) or isinstance(operand, bool):
        return type(value) is type(operand) and value == operand
    if is_number(value) and is_number(operand):
        return bool(value == operand)
    if operand is None:
        return value is None
    if isinstance(operand, str):
        return isinstance(value, str) and value == operand
    return False
