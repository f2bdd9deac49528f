"""Salience decay and the active -> fading -> archived lifecycle (pure, vectorised).

Decay is by elapsed time over **all** live memories (active, fading and archived; a merged
memory is hidden behind its gist and keeps its values). Salience above a floor halves
every half-life of the memory's type, stretched by positive feedback::

    s' = floor + (s - floor) * 0.5 ** (elapsed / (half_life * utility ** k))

A cycle is idempotent: a memory decays over ``[start, now]`` where ``start`` is the latest
of its creation, its last access plus a grace period, and the time up to which the
previous cycle already decayed it (``Watermarks``). So a second cycle at the same ``now``
changes nothing, and a crash or budget stop half-way leaves no memory decayed twice.

States are a fixed point of (state, salience, idleness), never a step per cycle, so
running once or twice gives the same state:

* salience < ``archive_below`` and idle for ``archive_idle_days`` and no positive
  feedback -> archived (archived stays archived here; recall or a user revives it);
* else salience < ``fading_below`` -> fading;
* a fading memory becomes active again only at ``revive_above`` (hysteresis), so a memory
  hovering at the threshold does not flap.

Salience never rises here, is never pushed below the floor, and stays in [0, 1]. Nothing
is deleted; ``merged`` is never set here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

DAY = 86400.0

# state codes used by the vectorised arrays (the store maps names to these)
ACTIVE, FADING, ARCHIVED, MERGED = 0, 1, 2, 3
STATE_NAMES = ("active", "fading", "archived", "merged")
STATE_CODES = {name: code for code, name in enumerate(STATE_NAMES)}
TYPE_NAMES = ("general", "learning", "insight", "error", "decision", "handoff")
TYPE_CODES = {name: code for code, name in enumerate(TYPE_NAMES)}
NEVER_DECAYS = frozenset({"handoff"})


@dataclass(frozen=True, slots=True)
class DecayParams:
    """The knobs of decay (``consolidation`` config section)."""

    half_life_days: Mapping[str, float]  # type -> days; 0 = never decays
    salience_floor: float = 0.05
    grace_days: float = 3.0
    utility_exponent: float = 2.0
    fading_below: float = 0.3
    revive_above: float = 0.4
    archive_below: float = 0.12
    archive_idle_days: float = 30.0

    def half_lives(self) -> F64:
        """Half-life in seconds per type code (0 = never; always 0 for a handoff, which
        is kept verbatim whatever the configuration says)."""
        return np.array(
            [
                0.0 if t in NEVER_DECAYS else max(0.0, float(self.half_life_days.get(t, 0.0))) * DAY
                for t in TYPE_NAMES
            ]
        )


@dataclass(frozen=True, slots=True)
class Rows:
    """One chunk of memories as columns (times in epoch seconds; NaN = never accessed)."""

    seq: I64
    type: I64  # TYPE_CODES
    state: I64  # STATE_CODES
    salience: F64
    utility: F64
    created: F64
    accessed: F64

    def __len__(self) -> int:
        return int(self.seq.shape[0])


@dataclass(frozen=True, slots=True)
class Decayed:
    """New salience and state of each row of a chunk, and which rows changed."""

    salience: F64
    state: I64
    changed: npt.NDArray[np.bool_]


def decay(rows: Rows, since: F64, now: float, p: DecayParams) -> Decayed:
    """New salience and state of ``rows`` at ``now``; ``since[i]`` is the time up to which
    row ``i`` was already decayed by an earlier cycle (``-inf``: never)."""
    sal = rows.salience.astype(np.float64, copy=True)
    last_touch = np.fmax(rows.created, np.nan_to_num(rows.accessed, nan=-np.inf))
    start = np.maximum(np.maximum(rows.created, last_touch + p.grace_days * DAY), since)
    elapsed = np.maximum(0.0, now - start)
    half = p.half_lives()[rows.type]
    util = np.clip(rows.utility, 0.25, 4.0)
    half_eff = half * util**p.utility_exponent
    live = rows.state != MERGED
    decays = live & (half_eff > 0) & (elapsed > 0) & (sal > p.salience_floor)
    if decays.any():
        factor = np.power(0.5, elapsed[decays] / half_eff[decays])
        lowered = p.salience_floor + (sal[decays] - p.salience_floor) * factor
        sal[decays] = np.clip(np.minimum(sal[decays], lowered), p.salience_floor, 1.0)
    idle = now - last_touch
    state = target_state(rows.state, sal, idle, rows.utility, half > 0, p)
    changed = (sal != rows.salience) | (state != rows.state)
    return Decayed(sal, state, changed)


def target_state(
    state: I64,
    salience: F64,
    idle_s: F64,
    utility: F64,
    decaying_type: npt.NDArray[np.bool_],
    p: DecayParams,
) -> I64:
    """The fixed-point state of each row (see the module docstring)."""
    out = state.copy()
    movable = decaying_type & ((state == ACTIVE) | (state == FADING))
    archive = (
        movable
        & (salience < p.archive_below)
        & (idle_s >= p.archive_idle_days * DAY)
        & (utility <= 1.0)
    )
    fade = movable & ~archive & (salience < p.fading_below)
    hold = movable & ~archive & ~fade & (state == FADING) & (salience < p.revive_above)
    revive = movable & ~archive & ~fade & ~hold
    out[archive] = ARCHIVED
    out[fade | hold] = FADING
    out[revive] = ACTIVE
    return out


class Watermarks:
    """Up to when each memory has been decayed, as seq ranges (a pass walks seqs upward).

    ``bounds[i]`` is the highest seq of range ``i`` (the last range is open-ended) and
    ``times[i]`` the time its memories were decayed to (``-inf``: never). A pass that
    stops half-way leaves two ranges; the next resumes at ``cursor``, so the list stays
    short (merged as ranges reach the same time)."""

    def __init__(
        self, bounds: Sequence[int] = (), times: Sequence[float] = (-np.inf,), cursor: int = 0
    ) -> None:
        if len(times) != len(bounds) + 1:
            raise ValueError("one time per range")
        self.bounds = list(bounds)
        self.times = list(times)
        self.cursor = cursor  # seqs <= cursor are done in the current pass

    def since(self, seqs: I64) -> F64:
        idx = np.searchsorted(np.asarray(self.bounds, dtype=np.int64), seqs, side="left")
        return np.asarray(self.times, dtype=np.float64)[idx]

    def mark(self, lo: int, hi: int, at: float) -> None:
        """Seqs in ``(lo, hi]`` are decayed to ``at``."""
        if hi <= lo:
            return
        pieces: list[tuple[int, float]] = []  # (upper seq, time), uppers increasing
        prev = 0  # seqs start at 1
        for upper, time in zip([*self.bounds, _BIG], self.times, strict=True):
            if prev < lo:
                pieces.append((min(upper, lo), time))
            if prev < hi and upper > lo:
                pieces.append((min(upper, hi), at))
            if upper > hi:
                pieces.append((upper, time))
            prev = upper
        merged: list[tuple[int, float]] = []
        for upper, time in pieces:
            if merged and merged[-1][1] == time:
                merged[-1] = (upper, time)
            elif not merged or upper > merged[-1][0]:
                merged.append((upper, time))
        self.bounds = [u for u, _ in merged[:-1]]
        self.times = [t for _, t in merged]

    def finish_pass(self) -> None:
        self.cursor = 0

    def to_json(self) -> str:
        times = [None if t == -np.inf else t for t in self.times]
        return json.dumps({"bounds": self.bounds, "times": times, "cursor": self.cursor})

    @classmethod
    def from_json(cls, text: str | None) -> Watermarks:
        if not text:
            return cls()
        data = json.loads(text)
        times = [-np.inf if t is None else float(t) for t in data["times"]]
        return cls([int(b) for b in data["bounds"]], times, int(data.get("cursor", 0)))


_BIG = 2**62
