"""Watched files: one current memory per file, and a small memory of what changed.

A watched file is one evolving thing. Remembering each saved version as a new memory
filled recall with copies of the same file (six one-line edits of ``export.py`` gave seven
memories holding the whole file, and they crowded out the note that explained it). So:

* the first version of a path is remembered as any observation is, and
  ``file_memories`` maps the path to that memory;
* a changed version amends that memory in place (``MemoryService.amend``: re-encoded,
  re-embedded, the old text kept in ``memory_amendments``), and a meaningful change adds a
  small "what changed" memory (lines added and removed, the functions or headings touched,
  the changed lines that carry meaning) linked ``part_of`` the file's memory;
* the same content again changes nothing; a whitespace-only edit amends the file's memory
  but adds no change memory;
* a move re-points the mapping; a deletion is noted on the file's memory and in a change
  memory, and the file's content is kept (a recreated file amends the same memory).

The diff itself is pure logic in :mod:`mnemonic.encoding.file_changes`; it runs in a
worker thread with the redaction.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from mnemonic.app.service import MemoryService, Remembered, RememberInput
from mnemonic.encoding.file_changes import (
    ChangeSummary,
    change_text,
    display_name,
    summarize_change,
)
from mnemonic.encoding.text import content_hash
from mnemonic.events.types import AssociationCreated, Context, Event
from mnemonic.redact import redact_json
from mnemonic.store.base import FileMemoryStore, MemoryStore
from mnemonic.store.files import FileRecord
from mnemonic.store.models import Memory, MemoryState, MemoryType, RawStatus, Relation

log = logging.getLogger(__name__)

_LINK_STRENGTH = 0.8
_NEW_KINDS = frozenset({"file_created", "file_indexed"})
_LIVE = (MemoryState.ACTIVE, MemoryState.FADING)
FILE_KINDS = frozenset(
    {"file_created", "file_indexed", "file_modified", "file_moved", "file_deleted"}
)


# ---- the application service -------------------------------------------------------------
class FileOutcome(StrEnum):
    REMEMBERED = "remembered"  # a first version (or one the store could not map)
    UNCHANGED = "unchanged"
    AMENDED = "amended"
    MOVED = "moved"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True)
class FileVersion:
    """One perceived event of a watched file, as the memory service would remember it."""

    path: str
    kind: str
    item: RememberInput
    has_text: bool  # False for metadata-only events (binary, unreadable, secret files)
    root: str | None = None
    old_path: str | None = None

    @classmethod
    def of(cls, item: RememberInput) -> FileVersion | None:
        """The file event in a perceived write (metadata from the perception agent), or
        None when it is not one: those are remembered as before."""
        meta = item.metadata
        path, kind = meta.get("path"), meta.get("kind")
        if meta.get("watcher") != "filesystem" or not isinstance(path, str) or not path:
            return None
        if kind not in FILE_KINDS:
            return None
        event = meta.get("event")
        if not isinstance(event, dict):
            event = {}
        root, old_path = event.get("root"), event.get("old_path")
        return cls(
            path=path,
            kind=str(kind),
            item=item,
            has_text=not meta.get("metadata_only", False),
            root=root if isinstance(root, str) else None,
            old_path=old_path if isinstance(old_path, str) and kind == "file_moved" else None,
        )


@dataclass(frozen=True, slots=True)
class FileResult:
    outcome: FileOutcome
    memory_id: str | None
    change_id: str | None = None


class FileMemories:
    """Keeps one current memory per watched file (see the module docstring)."""

    def __init__(
        self,
        service: MemoryService,
        files: FileMemoryStore,
        memories: MemoryStore,
        publish: Callable[[Event], None],
        redact: Callable[[str], str],
        clock: Callable[[], datetime],
        exists: Callable[[str], bool] = os.path.exists,
    ) -> None:
        self._service = service
        self._exists = exists
        self._files = files
        self._memories = memories
        self._publish = publish
        self._redact = redact
        self._clock = clock
        self.counts: Counter[str] = Counter()

    def stats(self) -> dict[str, int]:
        return dict(self.counts)

    async def observe(self, version: FileVersion) -> FileResult:
        # Paths are redacted like every other stored string (the service does it for the
        # memory's metadata), so the mapping's key matches what the memory says.
        version = replace(
            version,
            path=self._redact(version.path),
            old_path=self._redact(version.old_path) if version.old_path else None,
            root=self._redact(version.root) if version.root else None,
        )
        result = await self._observe(version)
        self.counts[result.outcome.value] += 1
        if result.change_id is not None:
            self.counts["change_memories"] += 1
        return result

    async def _observe(self, v: FileVersion) -> FileResult:
        record = await self._files.file(v.path)
        if v.kind == "file_deleted":
            current = await self._live(record)
            if record is None or current is None:
                return await self._first(v)
            return await self._deleted(v, record, current)
        moved_from: FileRecord | None = None
        current = await self._live(record)
        if current is None and v.old_path is not None:
            moved_from = await self._files.file(v.old_path)
            current = await self._live(moved_from)
        if current is None and v.old_path is None and v.has_text and v.kind in _NEW_KINDS:
            moved = await self._moved_here(v)
            if moved is not None:
                return moved
        if current is None:
            return await self._first(v, release=v.old_path)
        base = record if moved_from is None else moved_from
        assert base is not None  # current came from one of them
        return await self._changed(v, replace(base, path=v.path), current)

    async def _live(self, record: FileRecord | None) -> Memory | None:
        """The record's memory if it can still be amended: live (not archived by the user,
        not merged into another memory by the encoder); otherwise the next version starts
        a new memory and the path is mapped to that."""
        if record is None:
            return None
        memory = await self._memories.get(record.memory_id)
        if memory is None or memory.state not in _LIVE:
            return None
        return memory

    async def _first(self, v: FileVersion, release: str | None = None) -> FileResult:
        done = await self._service.remember(v.item)
        if v.kind != "file_deleted" and await self._owned(done, v.path):
            meta = {"versions": 1}
            await self._files.save_file(FileRecord(v.path, str(done.memory_id), 1), meta, release)
        return FileResult(FileOutcome.REMEMBERED, done.memory_id)

    async def _moved_here(self, v: FileVersion) -> FileResult | None:
        """A "new" file whose exact content is the memory of a watched file that is gone
        from disk was moved, not created: ``mkdir jobs && mv export.py jobs/`` renames into
        a folder inotify does not watch yet, so the watcher sees a creation and a deletion
        instead of a move. The memory follows the file."""
        text = await asyncio.to_thread(self._redact, v.item.content.strip())
        for record in await self._files.files_with_content(content_hash(text)):
            if record.path == v.path or self._exists(record.path):
                continue
            current = await self._live(record)
            if current is not None:
                return await self._changed(
                    replace(v, old_path=record.path), replace(record, path=v.path), current
                )
        return None

    async def _owned(self, done: Remembered, path: str) -> bool:
        """Whether the memory a first version landed on is this file's own: a new memory, or
        an exact duplicate that is an earlier copy of this same path (not another file with
        the same content, or a note that quotes it)."""
        if done.memory_id is None:
            return False
        if done.status is RawStatus.ACCEPTED:
            return True
        memory = await self._memories.get(done.memory_id)
        return memory is not None and memory.metadata.get("path") == path

    async def _changed(self, v: FileVersion, record: FileRecord, current: Memory) -> FileResult:
        moved = v.old_path is not None and record.path != current.metadata.get("path")
        text = await asyncio.to_thread(self._redact, v.item.content.strip())
        if text == current.content and not moved and record.deleted_at is None:
            return FileResult(FileOutcome.UNCHANGED, current.id)
        summary: ChangeSummary | None = None
        if text != current.content:
            if v.has_text and not current.metadata.get("metadata_only"):
                summary = await asyncio.to_thread(
                    summarize_change, current.content, text, path=v.path
                )
            await self._service.amend(current.id, text, f"{v.kind}: the file changed on disk")
        versions = record.versions + (text != current.content)
        meta = self._file_metadata(v, versions)
        await self._files.save_file(
            replace(record, versions=versions, deleted_at=None), meta, release=v.old_path
        )
        name = display_name(v.path, v.root)
        old_name = display_name(v.old_path, v.root) if moved and v.old_path else None
        note: str | None = None
        if summary is not None:
            note = change_text(name, summary, old_name)
        elif old_name is not None:
            note = f"{old_name} renamed to {name}"
        change_id = await self._note(v, current, note, summary) if note else None
        outcome = FileOutcome.MOVED if moved else FileOutcome.AMENDED
        return FileResult(outcome, current.id, change_id)

    def _file_metadata(self, v: FileVersion, versions: int) -> dict[str, Any]:
        """What the file's memory says about its latest version (the raw rows keep what
        each observation said)."""
        meta: dict[str, Any] = redact_json(dict(v.item.metadata), self._redact)
        meta["versions"] = versions
        meta["metadata_only"] = meta.get("metadata_only")  # None removes a stale flag
        meta["deleted_at"] = None
        return meta

    async def _deleted(self, v: FileVersion, record: FileRecord, current: Memory) -> FileResult:
        if record.deleted_at is not None:
            return FileResult(FileOutcome.UNCHANGED, current.id)
        now = self._clock()
        meta = {"deleted_at": now.isoformat(), "kind": "file_deleted"}
        await self._files.save_file(replace(record, deleted_at=now), meta)
        lines = len(current.content.splitlines())
        size = f" (it had {lines} lines)" if not current.metadata.get("metadata_only") else ""
        note = f"{display_name(v.path, v.root)} deleted{size}"
        change_id = await self._note(v, current, note, None)
        return FileResult(FileOutcome.DELETED, current.id, change_id)

    async def _note(
        self, v: FileVersion, current: Memory, text: str, summary: ChangeSummary | None
    ) -> str | None:
        """Remember a change note and link it ``part_of`` the file's memory."""
        meta: dict[str, Any] = {
            "watcher": "filesystem",
            "kind": "file_changed",  # what marks a change note (the file's memory has the event's)
            "change": v.kind,
            "path": v.path,
            "file_memory_id": current.id,
        }
        if summary is not None:
            meta.update(added=summary.added, removed=summary.removed)
            meta["sections"] = list(summary.sections)
        if v.old_path is not None:
            meta["old_path"] = v.old_path
        item = replace(v.item, content=text, type=MemoryType.GENERAL, metadata=meta)
        done = await self._service.remember(item)
        if done.memory_id is None:
            return None
        made = await self._files.link(done.memory_id, current.id, Relation.PART_OF, _LINK_STRENGTH)
        if made is not None and made.created:
            cause = v.item.cause.child() if v.item.cause is not None else Context()
            self._publish(
                AssociationCreated(
                    source_id=done.memory_id,
                    target_id=current.id,
                    relation=Relation.PART_OF.value,
                    strength=_LINK_STRENGTH,
                    project=current.project or None,
                    context=cause,
                )
            )
        return done.memory_id
