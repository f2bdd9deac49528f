"""Links a person or an agent draws by hand (``POST /api/v1/associations``, the MCP
``remember`` tool's ``links``): the same association rows the encoder and the dreamer
write, so recall's spreading activation follows them at once (the index follows every
write to ``associations``). ``supersedes`` has its own route (it is directed and changes
ranking); ``temporal`` stays the encoder's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mnemonic.errors import InvalidInputError, NotFoundError
from mnemonic.events.types import AssociationCreated, Event
from mnemonic.store.files import LinkMade
from mnemonic.store.models import Relation

MANUAL_RELATIONS = frozenset(
    {
        Relation.RELATED,
        Relation.CAUSED_BY,
        Relation.PART_OF,
        Relation.SIMILAR,
        Relation.REINFORCES,
        Relation.CONTRADICTS,
    }
)


class LinkStore(Protocol):
    async def link(
        self, from_id: str, to_id: str, relation: Relation, strength: float
    ) -> LinkMade | None: ...


@dataclass(frozen=True, slots=True)
class Linked:
    source_id: str
    target_id: str
    relation: str
    strength: float
    created: bool


class LinkService:
    def __init__(self, store: LinkStore, publish: Callable[[Event], None]) -> None:
        self._store = store
        self._publish = publish

    async def link(
        self, source_id: str, target_id: str, relation: Relation, strength: float
    ) -> Linked:
        """Link two memories (an existing link of that relation keeps the larger
        strength); 404 naming the id that is unknown, 422 for a memory with itself."""
        if relation not in MANUAL_RELATIONS:
            raise InvalidInputError("relation", f"{relation.value} is not set by hand")
        if source_id == target_id:
            raise InvalidInputError("target_id", "a memory cannot be linked to itself")
        made = await self._store.link(source_id, target_id, relation, strength)
        if made is None:
            raise NotFoundError("memory", f"{source_id} or {target_id}")
        linked = Linked(source_id, target_id, relation.value, strength, made.created)
        if not made.created:  # the pair had it: nothing new to announce
            return linked
        self._publish(
            AssociationCreated(
                source_id=source_id,
                target_id=target_id,
                relation=relation.value,
                strength=strength,
            )
        )
        return linked
