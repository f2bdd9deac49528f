"""Timestamps and identifiers in the one format the store compares lexicographically."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def ensure_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC; aware ones are converted."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def to_db(value: datetime) -> str:
    """Fixed-width ISO-8601 in UTC, so string order is time order."""
    return ensure_utc(value).isoformat(timespec="microseconds")


def from_db(value: str) -> datetime:
    return datetime.fromisoformat(value)


def when_text(value: datetime) -> str:
    """The date written out for full-text search: 'Monday 8 May 2023 afternoon'."""
    value = ensure_utc(value)
    hour = value.hour
    part = "morning" if hour < 12 else "afternoon" if hour < 18 else "evening"
    return f"{value:%A} {value.day} {value:%B %Y} {part}"


def new_id() -> str:
    """A time-ordered 128-bit id (UUIDv7 layout), so ids sort by creation."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80 | rand
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"
