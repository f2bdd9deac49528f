"""One-off repairs of rows an older build stored in a shape reads cannot serve.

Builds before the non-finite guard stored ``{"n": 1e999}`` as ``{"n": Infinity}``: not
JSON, and every response that included the row failed. Reads now map such constants to
null (``jsonsafe.loads_stored``), so nothing fails any more; this repair also rewrites the
stored text, so other readers of the file (backups, ``sqlite3`` JSON functions, exports)
see valid JSON. It runs once per database (recorded in ``system_meta``): this build never
writes such values, so after one pass there is nothing left to find.
"""

from __future__ import annotations

import json
import logging
import sqlite3

from mnemonic.jsonsafe import dumps_stored, loads_stored
from mnemonic.store.database import Database
from mnemonic.store.system_meta import read_meta, write_meta
from mnemonic.timeutil import to_db, utcnow

log = logging.getLogger(__name__)

_TABLES = ("raw_memories", "memories")
# Python writes exactly these for non-finite floats; a text match finds every candidate
# (and some valid strings that merely contain the words, which the parse then keeps).
_CANDIDATE = "metadata LIKE '%Infinity%' OR metadata LIKE '%NaN%'"


async def repair_non_finite_metadata(db: Database) -> int:
    """Rewrite metadata holding NaN/Infinity as valid JSON (non-finite -> null); returns
    how many rows changed."""
    return await db.run_write(_repair)


_DONE_KEY = "repair.non_finite_metadata"


def _repair(conn: sqlite3.Connection) -> int:
    if read_meta(conn, _DONE_KEY) is not None:
        return 0
    changed = 0
    for table in _TABLES:
        rows = conn.execute(f"SELECT rowid, metadata FROM {table} WHERE {_CANDIDATE}").fetchall()
        for rowid, text in rows:
            if _strict_json(text):
                continue  # valid JSON that merely mentions the words
            value = loads_stored(text, _UNREADABLE)
            if value is _UNREADABLE:
                continue  # not JSON at all: left as it is for a person to look at
            conn.execute(
                f"UPDATE {table} SET metadata = ? WHERE rowid = ?", (dumps_stored(value), rowid)
            )
            changed += 1
    write_meta(conn, {_DONE_KEY: str(changed)}, to_db(utcnow()))
    if changed:
        log.warning("repaired %d stored metadata values holding NaN or Infinity", changed)
    return changed


_UNREADABLE = object()


def _strict_json(text: str) -> bool:
    try:
        json.loads(text, parse_constant=_refuse)
    except (ValueError, RecursionError):
        return False
    return True


def _refuse(name: str) -> None:
    raise ValueError(name)
