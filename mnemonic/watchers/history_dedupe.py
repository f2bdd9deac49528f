"""One memory per command when the shell hook and the history file both record it.

A shell with ``mnemonic shell-hook`` installed still writes its history file, so each
command arrives twice: once from the hook (with folder and exit status) and once from
the history file (without). The hook's record wins. The rule is text and time:

- a history entry is a duplicate when the hook recorded the same command (exact text)
  within ``window_s`` of the entry's time (its own timestamp, else the time it was read).
  The window is wide (a day by default) because bash writes its history only when the
  shell exits, hours after the hook's line;
- the hook writes at the next prompt, after the command finished, while zsh with
  ``INC_APPEND_HISTORY`` writes the history line when it starts; so while the hook is in
  use (a hook line within ``window_s``), history entries wait up to ``hold_s`` for the
  hook's record before they are told.

The price, documented: the same command run in a shell without the hook within the window
is taken for the hooked one and not told again, and a command running longer than
``hold_s`` in such a zsh arrives from both. Everything is bounded (``max_keys`` distinct
commands, ``max_held`` waiting entries; past that the oldest waiting entry is told).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
_TIMES_PER_KEY = 8


def _key(command: str) -> str:
    return hashlib.blake2b(command.strip().encode(), digest_size=8).hexdigest()


@dataclass(slots=True)
class _Held(Generic[T]):
    item: T
    key: str
    when: float
    due: float


class HookDedupe(Generic[T]):
    def __init__(
        self, window_s: float, hold_s: float, *, max_keys: int = 4096, max_held: int = 1000
    ) -> None:
        self.window_s = window_s
        self.hold_s = hold_s
        self._max_keys = max_keys
        self._max_held = max_held
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()
        self._last: float | None = None
        self._held: deque[_Held[T]] = deque()

    def __len__(self) -> int:
        return len(self._held)

    def hooked(self, command: str, when: float) -> None:
        """The hook recorded ``command`` at wall time ``when``."""
        key = _key(command)
        times = self._seen.pop(key, None) or deque(maxlen=_TIMES_PER_KEY)
        times.append(when)
        self._seen[key] = times
        if len(self._seen) > self._max_keys:
            self._seen.popitem(last=False)
        self._last = when if self._last is None else max(self._last, when)

    def in_use(self, now: float) -> bool:
        return self._last is not None and now - self._last <= self.window_s

    def duplicate(self, command: str, when: float) -> bool:
        times = self._seen.get(_key(command))
        return times is not None and any(abs(t - when) <= self.window_s for t in times)

    def hold(self, item: T, command: str, when: float, now: float) -> T | None:
        """Keep ``item`` until its hook record arrives or ``hold_s`` passes (``now`` on the
        watcher's clock); returns an item pushed out by the bound, to be told at once."""
        self._held.append(_Held(item, _key(command), when, now + self.hold_s))
        if len(self._held) > self._max_held:
            return self._held.popleft().item
        return None

    def release(self, now: float) -> tuple[list[T], list[T]]:
        """(duplicates found meanwhile, entries whose wait is over), in arrival order."""
        duplicates: list[T] = []
        ready: list[T] = []
        waiting: deque[_Held[T]] = deque()
        for held in self._held:
            times = self._seen.get(held.key)
            if times is not None and any(abs(t - held.when) <= self.window_s for t in times):
                duplicates.append(held.item)
            elif held.due <= now:
                ready.append(held.item)
            else:
                waiting.append(held)
        self._held = waiting
        return duplicates, ready
