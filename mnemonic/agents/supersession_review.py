"""The LLM's second opinion on borderline supersessions, off the encoder's path.

The encoder links what the heuristics are sure of at once and hands the borderline pairs
here (``offer``); each cycle asks the LLM about a bounded batch and applies
``cognition.supersession.combine``: a "yes" on a borderline pair adds the ``supersedes``
edge, a "no" on a weak heuristic positive removes it again. Without an LLM a cycle does
nothing and the pairs wait, bounded (the oldest are dropped): heuristic mode is simply
the encoder's own verdicts.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

from mnemonic.cognition.supersession import MemoryFacts, Verdict, combine, judgment_request
from mnemonic.config import SupersessionConfig
from mnemonic.encoding.linking import Supersession
from mnemonic.llm.completion.base import Completer
from mnemonic.store.base import PendingMemory

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Candidate:
    newer_id: str
    older_id: str
    newer: MemoryFacts
    older: MemoryFacts
    verdict: Verdict


def candidates(item: PendingMemory, found: list[tuple[Supersession, str]]) -> list[Candidate]:
    """The encoder's borderline pairs for one new memory, as review candidates."""
    mine = MemoryFacts(item.content, item.timestamp, None, item.type.value, item.concepts)
    out = []
    for s, other_id in found:
        n = s.neighbour
        theirs = MemoryFacts(n.content, n.timestamp, None, n.type, n.concepts)
        if s.incoming:
            out.append(Candidate(other_id, item.id, theirs, mine, s.verdict))
        else:
            out.append(Candidate(item.id, other_id, mine, theirs, s.verdict))
    return out


class SupersessionWriter(Protocol):
    async def add(self, newer_id: str, older_id: str, strength: float = 1.0) -> bool: ...

    async def remove(self, newer_id: str, older_id: str) -> bool: ...


class SupersessionReview:
    name = "supersession"

    def __init__(
        self, writer: SupersessionWriter, completer: Completer, cfg: SupersessionConfig
    ) -> None:
        self._writer = writer
        self._completer = completer
        self._cfg = cfg
        self._pending: deque[Candidate] = deque(maxlen=cfg.review_max_pending)
        self.offered = 0
        self.confirmed = 0
        self.vetoed = 0
        self.unchanged = 0
        self.dropped = 0

    def offer(self, candidates: list[Candidate]) -> None:
        """Queue pairs for the LLM (called on the event loop by the encoder's hand-off)."""
        for candidate in candidates[: self._cfg.review_per_memory]:
            if len(self._pending) == self._pending.maxlen:
                self.dropped += 1
            self._pending.append(candidate)
            self.offered += 1

    async def run_cycle(self, trigger: str) -> dict[str, Any]:
        if not self._completer.available:
            return {"mode": "heuristic", "pending": len(self._pending), "judged": 0}
        judged = changed = 0
        for _ in range(min(self._cfg.review_batch, len(self._pending))):
            c = self._pending.popleft()
            answer = await self._completer.complete_json(judgment_request(c.newer, c.older))
            if answer is None and not self._completer.available:
                self._pending.appendleft(c)  # the LLM went away: keep it for later
                break
            judged += 1
            final = combine(c.verdict, answer)
            try:
                if final.supersedes and not c.verdict.supersedes:
                    await self._writer.add(c.newer_id, c.older_id, final.confidence)
                    self.confirmed += 1
                    changed += 1
                elif c.verdict.supersedes and not final.supersedes:
                    await self._writer.remove(c.newer_id, c.older_id)
                    self.vetoed += 1
                    changed += 1
                else:
                    self.unchanged += 1
            except LookupError:  # one of the two was purged meanwhile
                continue
        return {"mode": "llm", "judged": judged, "changed": changed, "pending": len(self._pending)}

    def health(self) -> dict[str, Any]:
        return {
            "mode": self._completer.mode,
            "pending": len(self._pending),
            "offered": self.offered,
            "confirmed": self.confirmed,
            "vetoed": self.vetoed,
            "unchanged": self.unchanged,
            "dropped": self.dropped,
        }
