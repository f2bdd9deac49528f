"""Lists of values in SQL: one JSON parameter (``x IN (SELECT value FROM json_each(?))``)
or one ``?`` per value (``marks``).

One JSON text instead of one ``?`` per value: the statement stays the same whatever the
list's length (so SQLite's statement cache keeps it), and no list can pass SQLite's limit
on bound parameters.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

IN_JSON = "(SELECT value FROM json_each(?))"
"""Follows ``IN``; bind ``json_list(values)``."""


def json_list(values: Iterable[int | str]) -> str:
    return json.dumps(list(values))


def marks(items: Sequence[object]) -> str:
    """``?,?,?``: one placeholder per item, for ``IN (...)`` or a ``VALUES`` row (short
    lists whose length varies little; a long one goes through ``IN_JSON``)."""
    return ",".join("?" * len(items))
