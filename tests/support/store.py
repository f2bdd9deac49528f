"""Helpers for tests that drive the store and agents directly: a frozen clock and one
database opened, used and closed around an async function."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

from mnemonic.config import StorageConfig
from mnemonic.store.database import Database
from mnemonic.timeutil import utcnow

T = TypeVar("T")


class Clock:
    """A clock that says ``now`` until a test moves it."""

    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


def with_database(path: Path, fn: Callable[[Database], Awaitable[T]]) -> T:
    """Open the production database at ``path`` (migrating it), run ``fn`` on it, close."""

    async def main() -> T:
        db = Database(path, StorageConfig())
        await db.open()
        try:
            return await fn(db)
        finally:
            await db.close()

    return asyncio.run(main())
