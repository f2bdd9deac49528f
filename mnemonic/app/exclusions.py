"""Runtime exclusions: paths perception ignores, managed over REST or added by the filter
when a path keeps producing rejected events.

The filter checks an in-memory set (:class:`~mnemonic.perception.RuntimeExclusions`) for
every event; this service keeps that set and the ``runtime_exclusions`` table in step, so
a change is effective before the request returns and survives a restart.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from mnemonic.errors import InvalidInputError
from mnemonic.perception.exclusions import RuntimeExclusions, normalise_path
from mnemonic.store.exclusions import Exclusion, SQLiteExclusions

log = logging.getLogger(__name__)

MAX_PATH_CHARS = 4096
MAX_REASON_CHARS = 200

Redactor = Callable[[str], str]


def _keep(text: str) -> str:
    return text


def existing_path(path: str) -> str:
    """The checks every path argument gets (removal too, so an exclusion of ``/`` stored
    by an older build can still be removed): absolute, bounded, a known user."""
    text = path.strip()
    if not text:
        raise InvalidInputError("path", "must not be empty")
    if "\x00" in text:
        raise InvalidInputError("path", "must not contain NUL")
    if len(text) > MAX_PATH_CHARS:
        raise InvalidInputError("path", f"must be at most {MAX_PATH_CHARS} characters")
    if not (text.startswith("/") or text.startswith("~")):
        raise InvalidInputError("path", "must be absolute (or start with ~)")
    if text.startswith("~") and os.path.expanduser(text).startswith("~"):
        user = text[1:].split("/", 1)[0]
        raise InvalidInputError("path", f"~{user}: no such user on this machine")
    return normalise_path(text)


def clean_path(path: str, redact: Redactor = _keep) -> str:
    """An absolute, normalised path (``~`` expanded); 422 for what cannot be one.

    Refused as well: ``/`` (it would silently switch perception off; the watchers have
    their own switches), ``~name`` for a user this machine does not know (``expanduser``
    leaves it as it is, and it would then resolve against the daemon's working folder),
    and a path with a secret in it (it would be stored and listed as it is: a redacted
    path would never match what it was meant to exclude).
    """
    cleaned = existing_path(path)
    if cleaned == "/":
        raise InvalidInputError(
            "path", "excluding / would stop all perception; disable the watchers instead"
        )
    if redact(cleaned) != cleaned:
        raise InvalidInputError("path", "looks like it contains a secret; not stored")
    return cleaned


class ExclusionService:
    def __init__(
        self, store: SQLiteExclusions, runtime: RuntimeExclusions, redact: Redactor = _keep
    ) -> None:
        self._store = store
        self.runtime = runtime
        self._redact = redact
        self._tasks: set[asyncio.Task[None]] = set()

    async def load(self) -> int:
        """Fill the filter's set from the table; returns how many were loaded."""
        rows = await self._store.all()
        for row in rows:
            self.runtime.add(row.path, row.reason)
        return len(rows)

    async def list(self) -> list[Exclusion]:
        return await self._store.all()

    async def add(self, path: str, reason: str = "manual") -> tuple[Exclusion, bool]:
        """Exclude ``path`` now and for good; adding an existing one is not an error."""
        cleaned = clean_path(path, self._redact)
        # redacted before it is cut, so a cut can never leave half a secret unrecognised
        why = self._redact(reason.strip())[:MAX_REASON_CHARS].strip() or "manual"
        row, created = await self._store.add(cleaned, why, "user")
        self.runtime.add(cleaned, row.reason)
        return row, created

    async def remove(self, path: str) -> bool:
        cleaned = existing_path(path)
        removed = await self._store.remove(cleaned)
        in_memory = self.runtime.remove(cleaned)
        return removed or in_memory

    def persist_auto(self, path: str, reason: str) -> None:
        """The filter's ``on_auto_exclude`` hook (synchronous, on the event loop): the set
        already holds the path; write it to the table in the background."""
        task = asyncio.get_running_loop().create_task(
            self._persist(path, reason), name="mnemonic:exclusions:persist"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _persist(self, path: str, reason: str) -> None:
        try:
            await self._store.add(path, reason, "auto")
        except Exception as exc:  # noqa: BLE001 - still effective in memory; say why once
            log.warning("could not persist the automatic exclusion of a path: %s", exc)

    async def drain(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
