"""Supersessions set by hand ("this memory replaces that one"), for the REST face, the CLI
and later the dashboard: the one place that validates, writes and announces them."""

from __future__ import annotations

from collections.abc import Callable

from mnemonic.errors import InvalidInputError, NotFoundError
from mnemonic.events.types import AssociationCreated, Event
from mnemonic.store.supersessions import Chain, SQLiteSupersessions, UnknownMemory


class SupersessionService:
    def __init__(self, store: SQLiteSupersessions, publish: Callable[[Event], None]) -> None:
        self._store = store
        self._publish = publish

    async def add(self, newer_id: str, older_id: str) -> bool:
        """``newer_id`` supersedes ``older_id`` (recall ranks the older one below it);
        whether the edge is new. Both memories stay stored."""
        _distinct(newer_id, older_id)
        try:
            created = await self._store.add(newer_id, older_id)
        except UnknownMemory as exc:
            raise _unknown(exc, older_id) from None
        if created:
            self._publish(
                AssociationCreated(
                    source_id=newer_id, target_id=older_id, relation="supersedes", strength=1.0
                )
            )
        return created

    async def remove(self, newer_id: str, older_id: str) -> bool:
        _distinct(newer_id, older_id)
        try:
            return await self._store.remove(newer_id, older_id)
        except UnknownMemory as exc:
            raise _unknown(exc, older_id) from None

    async def chain(self, memory_id: str) -> Chain:
        try:
            return await self._store.chain(memory_id)
        except UnknownMemory as exc:
            raise NotFoundError("memory", exc.memory_id) from None


def _unknown(exc: UnknownMemory, older_id: str) -> Exception:
    """The memory in the path names nothing: 404. The older one (from the body) names
    nothing: the request is invalid (422), the resource it addressed exists."""
    if exc.memory_id == older_id:
        return InvalidInputError("older_id", f"no memory {older_id!r}")
    return NotFoundError("memory", exc.memory_id)


def _distinct(newer_id: str, older_id: str) -> None:
    if newer_id == older_id:
        raise InvalidInputError("older_id", "a memory cannot supersede itself")
