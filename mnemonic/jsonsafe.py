"""JSON values that can always be stored and served again.

Python's ``json`` writes ``Infinity`` and ``NaN`` (not JSON, RFC 8259) and recurses once per
nesting level. A single stored ``1e999`` made every later read that included its row fail
(``JSONResponse`` refuses non-finite numbers), and a metadata object 900 levels deep broke
the recursive redaction. So the API refuses both at the edge (see ``api/routes.parse``),
and this module makes the store's side total: what it writes is finite, and what it reads
back never poisons a response, whatever an older build or another program left in the file.

Every function here walks values iteratively: depth costs memory, never the C stack.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_METADATA_DEPTH = 32
"""Deepest nesting a metadata object may have (the object itself is level 1)."""


def depth(value: Any, limit: int = MAX_METADATA_DEPTH) -> int:
    """Nesting depth of a JSON-like value (a scalar is 0, ``{}`` is 1); counting stops
    just past ``limit``, so the answer is ``limit + 1`` for anything deeper."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list | tuple):
            level += 1
            deepest = max(deepest, level)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, level) for child in children)
    return deepest


def non_finite_paths(value: Any, limit: int = 10) -> list[str]:
    """Where ``value`` holds NaN or an infinity (``a.0.b`` paths), at most ``limit``."""
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack and len(found) < limit:
        item, path = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            found.append(path or "(value)")
        elif isinstance(item, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k)) for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((v, f"{path}.{i}" if path else str(i)) for i, v in enumerate(item))
    return found


def finite(value: Any) -> Any:
    """A copy of ``value`` with every NaN or infinity replaced by ``None`` (JSON null).

    Built bottom-up with an explicit stack, so any depth the caller could hold in memory
    is fine. Containers come back as dicts and lists.
    """
    if not isinstance(value, dict | list | tuple):
        return _finite_scalar(value)
    root: list[Any] = [None]
    # (source container, destination container or slot setter)
    stack: list[tuple[Any, Any]] = [(value, (root, 0))]
    while stack:
        item, (parent, key) = stack.pop()
        if isinstance(item, dict):
            out: dict[Any, Any] = {}
            parent[key] = out
            for k, v in item.items():
                if isinstance(v, dict | list | tuple):
                    out[k] = None
                    stack.append((v, (out, k)))
                else:
                    out[k] = _finite_scalar(v)
        elif isinstance(item, list | tuple):
            seq: list[Any] = [None] * len(item)
            parent[key] = seq
            for i, v in enumerate(item):
                if isinstance(v, dict | list | tuple):
                    stack.append((v, (seq, i)))
                else:
                    seq[i] = _finite_scalar(v)
    return root[0]


def _finite_scalar(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def dumps_stored(value: Any) -> str:
    """JSON text for a stored column: finite numbers only, so it always reads back."""
    return json.dumps(finite(value), allow_nan=False)


def _constant_as_null(name: str) -> None:
    return None


def _float_or_null(text: str) -> float | None:
    number = float(text)  # "1e999" parses as inf
    return number if math.isfinite(number) else None


def loads_stored(text: str | bytes | None, default: Any = None) -> Any:
    """A stored JSON column back as a value that can always be served.

    ``NaN``/``Infinity`` written by an older build become ``None``; text that is not JSON
    at all (or nested beyond what the parser can hold) gives ``default`` instead of an
    exception that would fail a whole list.
    """
    if text is None:
        return default
    try:
        return json.loads(text, parse_constant=_constant_as_null, parse_float=_float_or_null)
    except (ValueError, RecursionError):
        return default
