"""Which memories supersede which: the directed ``supersedes`` edges, in memory.

The association graph stores every edge in both directions (spreading activation does
not care which way a link points), so it cannot say which end of a ``supersedes`` edge is
the newer one. These edges are few (a handful per thousand memories), so a plain mapping
from the older memory to its successors costs little even at a million memories, and
ranking asks it about the ~100 candidates of a query only.

Mutations happen on the event loop; searches read from worker threads. ``successors``
reads one dict entry, an immutable tuple that mutations replace, never resize.
"""

from __future__ import annotations

from collections.abc import Iterable


class Supersessions:
    def __init__(self, pairs: Iterable[tuple[int, int]] = ()) -> None:
        self._successors: dict[int, tuple[int, ...]] = {}
        self._predecessors: dict[int, tuple[int, ...]] = {}
        for newer, older in pairs:
            self.add(newer, older)

    def add(self, newer: int, older: int) -> None:
        if newer == older:
            return
        if newer not in self._successors.get(older, ()):
            self._successors[older] = (*self._successors.get(older, ()), newer)
            self._predecessors[newer] = (*self._predecessors.get(newer, ()), older)

    def remove(self, newer: int, older: int) -> None:
        self._drop(self._successors, older, newer)
        self._drop(self._predecessors, newer, older)

    def remove_node(self, seq: int) -> None:
        for newer in self._successors.pop(seq, ()):
            self._drop(self._predecessors, newer, seq)
        for older in self._predecessors.pop(seq, ()):
            self._drop(self._successors, older, seq)

    @staticmethod
    def _drop(table: dict[int, tuple[int, ...]], key: int, value: int) -> None:
        kept = tuple(v for v in table.get(key, ()) if v != value)
        if kept:
            table[key] = kept
        else:
            table.pop(key, None)

    def successors(self, older: int) -> tuple[int, ...]:
        """The memories that supersede ``older`` (newest last), or ()."""
        return self._successors.get(older, ())

    def __len__(self) -> int:
        return sum(len(v) for v in self._successors.values())

    def pairs(self) -> list[tuple[int, int]]:
        return sorted((n, o) for o, newer in self._successors.items() for n in newer)
