"""The application layer's read models for browsing: lists with cursors, a memory's
context, the association graph, projects and the breakdown behind ``/stats``.

Cursors are opaque to callers (URL-safe base64 of a small JSON key) so their shape can
change without breaking clients; a cursor that does not decode is a 422, not a 500.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

from mnemonic.app.aggregates import Aggregates
from mnemonic.errors import InvalidInputError, NotFoundError
from mnemonic.store.base import Filters, MemoryStore
from mnemonic.store.browse import EdgeRow, Graph, Link, ProjectRow, SQLiteBrowser
from mnemonic.store.models import Memory, Relation

MAX_GRAPH_NODES = 500
"""The browse graph's cap; the dashboard's neighbourhood passes its own (2,000)."""
MAX_GRAPH_DEPTH = 3


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Any]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class MemoryContext:
    memory: Memory
    links: list[Link]
    before_after: list[Memory]


def encode_cursor(key: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(key).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> Any:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidInputError("cursor", "not a cursor this server issued") from None


class BrowseService:
    def __init__(
        self, browser: SQLiteBrowser, memories: MemoryStore, aggregates: Aggregates
    ) -> None:
        self._browser = browser
        self._memories = memories
        self._aggregates = aggregates

    async def _memory(self, memory_id: str) -> Memory:
        memory = await self._memories.get(memory_id)
        if memory is None:
            raise NotFoundError("memory", memory_id)
        return memory

    async def list_memories(self, filters: Filters, limit: int, cursor: str | None) -> Page:
        before = None
        if cursor is not None:
            key = decode_cursor(cursor)
            if not isinstance(key, int) or isinstance(key, bool):
                raise InvalidInputError("cursor", "not a cursor this server issued")
            before = key
        rows = await self._browser.list_memories(filters, limit + 1, before)
        more = len(rows) > limit
        items = rows[:limit]
        return Page(items, encode_cursor(items[-1].seq) if more and items else None)

    async def context(self, memory_id: str, limit: int) -> MemoryContext:
        memory = await self._memory(memory_id)
        links = await self._browser.links_of(memory.seq, limit)
        around = await self._browser.neighbours_in_time(memory, 2)
        return MemoryContext(memory, links, around)

    async def graph(
        self,
        memory_id: str | None,
        filters: Filters,
        depth: int,
        max_nodes: int,
        cap: int = MAX_GRAPH_NODES,
    ) -> Graph:
        """Breadth-first around ``memory_id``, else the most recent memories passing
        ``filters``; at most ``max_nodes`` nodes and never more than ``cap``."""
        max_nodes = min(max_nodes, cap)
        if memory_id is not None:
            memory = await self._memory(memory_id)
            return await self._browser.graph_around(
                memory.seq, min(depth, MAX_GRAPH_DEPTH), max_nodes
            )
        return await self._browser.graph_of(filters, max_nodes)

    async def associations(
        self,
        memory_id: str | None,
        relation: Relation | None,
        min_strength: float,
        limit: int,
        cursor: str | None,
    ) -> Page:
        seq = (await self._memory(memory_id)).seq if memory_id is not None else None
        after = None
        if cursor is not None:
            key = decode_cursor(cursor)
            if not (
                isinstance(key, list)
                and len(key) == 3
                and isinstance(key[0], int)
                and isinstance(key[1], int)
                and isinstance(key[2], str)
            ):
                raise InvalidInputError("cursor", "not a cursor this server issued")
            after = (key[0], key[1], key[2])
        rows: list[EdgeRow] = await self._browser.list_associations(
            seq, relation, min_strength, limit + 1, after
        )
        more = len(rows) > limit
        items = rows[:limit]
        next_cursor = None
        if more and items:
            last = items[-1]
            next_cursor = encode_cursor([last.source_seq, last.target_seq, last.relation.value])
        return Page(items, next_cursor)

    async def projects(self) -> list[ProjectRow]:
        return await self._aggregates.projects()

    async def breakdown(self) -> dict[str, Any]:
        return await self._aggregates.breakdown()

    async def gauges(self) -> tuple[dict[str, int], dict[str, int]]:
        """(memories by state, raw memories by status), cheap enough for every scrape."""
        return await self._browser.gauges()

    async def amendments(self, memory_id: str) -> list[dict[str, Any]]:
        await self._memory(memory_id)
        return await self._browser.amendments(memory_id)
