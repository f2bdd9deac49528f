"""The frequency limit: the same content more than N times within a window is dropped.

"The same" is decided on a digest of the normalised text (case folded, runs of digits
made one ``0``, whitespace collapsed), so ``Downloading 45%`` and ``Downloading 46%``, or
the same log line with another timestamp, count as one thing. The watcher, kind and path
are part of the key: the same line saved in two files is two things. Only the first 4,096
characters are normalised; the rest is hashed as it is, so two long files that differ
late are still different.

Memory is bounded: at most ``max_keys`` digests (least recently seen dropped first), each
with at most N timestamps.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict, deque

_DIGITS = re.compile(r"\d+")
_SPACE = re.compile(r"\s+")
_NORMALISED_CHARS = 4096


def normalise(text: str) -> str:
    head = _SPACE.sub(" ", _DIGITS.sub("0", text[:_NORMALISED_CHARS].casefold())).strip()
    return head + text[_NORMALISED_CHARS:]


def content_key(watcher: str, kind: str, path: str | None, text: str) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    for part in (watcher, kind, path or "", normalise(text)):
        digest.update(part.encode("utf-8", errors="replace") + b"\0")
    return digest.digest()


class FrequencyLimiter:
    """Allows a key at most ``max_count`` times per ``window_s`` seconds.

    Every occurrence counts, allowed or not, so a line repeated without pause stays
    dropped until it has been quiet for a window.
    """

    def __init__(self, max_count: int, window_s: float, max_keys: int = 10_000) -> None:
        self._max = max_count
        self._window = window_s
        self._max_keys = max_keys
        self._seen: OrderedDict[bytes, deque[float]] = OrderedDict()

    def allow(self, key: bytes, now: float) -> bool:
        if self._max <= 0:
            return True
        times = self._seen.get(key)
        if times is None:
            times = self._seen[key] = deque(maxlen=self._max)
            while len(self._seen) > self._max_keys:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(key)
        allowed = len(times) < self._max or now - times[0] > self._window
        times.append(now)
        return allowed

    def __len__(self) -> int:
        return len(self._seen)
