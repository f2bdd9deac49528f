"""Which links consolidation prunes (pure).

A link is pruned when it is weak (strength below a floor), was never traversed by a recall
that got feedback (``activation_count`` 0) and is old enough that it had its chance.
Structural links are never pruned: ``supersedes`` (what is current) and ``part_of``
(membership) carry meaning whatever their strength.

Strengthening is *not* done here: ``feedback`` already moves the strength of every link a
rated recall traversed, at once and bounded to [0.05, 1] (``adjust_strength``), and counts
the use in ``activation_count``. A second increment at consolidation time would count the
same helpful recall twice; consolidation only relies on that count to spare used links.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mnemonic.cognition.decay import DAY

PROTECTED_RELATIONS = frozenset({"supersedes", "part_of"})


@dataclass(frozen=True, slots=True)
class PruneParams:
    below: float = 0.1
    age_days: float = 30.0


def prune_mask(
    strength: npt.NDArray[np.float64],
    activation_count: npt.NDArray[np.int64],
    created: npt.NDArray[np.float64],
    protected: npt.NDArray[np.bool_],
    now: float,
    p: PruneParams,
) -> npt.NDArray[np.bool_]:
    """True for each link to prune (weak, never used, old, not structural)."""
    return (
        (strength < p.below)
        & (activation_count <= 0)
        & (now - created >= p.age_days * DAY)
        & ~protected
    )
