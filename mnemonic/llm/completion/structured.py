"""Structured output from models that do not always follow instructions.

Small local models (3-8B) wrap JSON in prose or code fences, think aloud in
``<think>`` blocks, add trailing commas, or answer a different shape than asked. This
module is the strict half of the parse -> validate -> repair loop: pure functions that
find the JSON object in a reply, check it against the request's JSON Schema, and word the
re-ask that tells the model exactly what was wrong. Nothing here guesses a value the model
did not give: an answer is valid as written (after unwrapping) or it is repaired by the
model, never by us.

The schema checker covers the subset of JSON Schema that judgment prompts use (type,
properties, required, additionalProperties, items, enum, const, bounds on numbers,
strings and arrays, anyOf); an unknown keyword is ignored, as the standard says.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_ERRORS = 5  # errors quoted back to the model: enough to fix, short enough to read

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


class NotJson(ValueError):
    """No JSON object could be read from the reply."""


def extract_json(text: str) -> Any:
    """The JSON value in a model's reply: the whole reply, else a fenced block, else the
    first balanced ``{...}``; ``<think>`` blocks are dropped first, and a trailing comma
    before ``}`` or ``]`` (a habit of small models) is forgiven. Raises NotJson."""
    cleaned = _THINK.sub("", text).strip()
    if not cleaned:
        raise NotJson("the answer was empty")
    candidates = [cleaned, *(m.group(1).strip() for m in _FENCE.finditer(cleaned))]
    candidates.extend(_balanced_objects(cleaned))
    for candidate in candidates:
        for variant in (candidate, _TRAILING_COMMA.sub(r"\1", candidate)):
            try:
                return json.loads(variant)
            except ValueError:
                continue
    raise NotJson("the answer contained no JSON object")


def _balanced_objects(text: str, limit: int = 8) -> list[str]:
    """Substrings that open with ``{`` and close at the matching ``}``, strings respected."""
    found: list[str] = []
    start = text.find("{")
    while start != -1 and len(found) < limit:
        end = _matching_brace(text, start)
        if end is None:
            break
        found.append(text[start : end + 1])
        start = text.find("{", end + 1)
    return found


def _matching_brace(text: str, start: int) -> int | None:
    depth = 0
    in_string = False
    escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


# ---- validation -----------------------------------------------------------------------------

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, _TYPES.get(name, ()))


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Every way ``value`` breaks ``schema``, as short readable lines (empty: valid)."""
    errors: list[str] = []
    _check(value, schema, path, errors)
    return errors[:MAX_ERRORS]


def _check(value: Any, schema: Any, path: str, errors: list[str]) -> None:
    if not isinstance(schema, dict) or len(errors) >= MAX_ERRORS:
        return
    if "anyOf" in schema:
        if not any(not validate(value, option, path) for option in schema["anyOf"]):
            errors.append(f"{path}: matches none of the allowed shapes")
        return
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, str(n)) for n in names):
            errors.append(f"{path}: expected {' or '.join(map(str, names))}, got {_kind(value)}")
            return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        errors.append(f"{path}: must be one of {allowed}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: must be {json.dumps(schema['const'])}")
    if isinstance(value, dict):
        _check_object(value, schema, path, errors)
    elif isinstance(value, list):
        _check_array(value, schema, path, errors)
    elif isinstance(value, str):
        _bounds(len(value), schema, "minLength", "maxLength", f"{path}: length", errors)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _bounds(value, schema, "minimum", "maximum", path, errors)


def _check_object(
    value: dict[str, Any], schema: dict[str, Any], path: str, errors: list[str]
) -> None:
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in value:
            errors.append(f"{path}: missing required field {json.dumps(name)}")
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        child = f"{path}.{key}"
        if key in properties:
            _check(item, properties[key], child, errors)
        elif extra is False:
            errors.append(f"{path}: unexpected field {json.dumps(key)}")
        elif isinstance(extra, dict):
            _check(item, extra, child, errors)


def _check_array(value: list[Any], schema: dict[str, Any], path: str, errors: list[str]) -> None:
    _bounds(len(value), schema, "minItems", "maxItems", f"{path}: item count", errors)
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            _check(item, items, f"{path}[{index}]", errors)


def _bounds(
    number: float, schema: dict[str, Any], low: str, high: str, label: str, errors: list[str]
) -> None:
    if low in schema and number < schema[low]:
        errors.append(f"{label} must be at least {schema[low]}")
    if high in schema and number > schema[high]:
        errors.append(f"{label} must be at most {schema[high]}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return "number"


def parse_answer(text: str, schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str, str]:
    """``(object, "", "")`` when the reply holds a schema-valid object, else ``(None, why,
    error class)``: ``why`` is worded for the model's re-ask, the class (``invalid_json`` or
    ``schema_invalid``) is what the ``llm_usage`` row records."""
    try:
        value = extract_json(text)
    except NotJson as exc:
        return None, str(exc), "invalid_json"
    if not isinstance(value, dict):
        return None, f"the answer must be a JSON object, got {_kind(value)}", "invalid_json"
    errors = validate(value, schema)
    if errors:
        return None, "; ".join(errors), "schema_invalid"
    return value, "", ""


# ---- prompts --------------------------------------------------------------------------------


def schema_instruction(schema: dict[str, Any]) -> str:
    """Appended to the system prompt: the shape, stated so a small model can follow it."""
    return (
        "\n\nAnswer with one JSON object only, no prose and no code fences. "
        "It must match this JSON Schema:\n" + json.dumps(schema, separators=(",", ":"))
    )


def repair_instruction(problem: str) -> str:
    """The re-ask after an unusable answer: what was wrong, and what to send instead."""
    return (
        f"Your answer could not be used: {problem}. Reply again with only the corrected "
        "JSON object that matches the schema, nothing else."
    )
