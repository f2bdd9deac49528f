"""The embedding provider protocol: every vector in mnemonic comes through it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class EmbeddingError(RuntimeError):
    """The provider could not produce vectors (model missing, endpoint down, bad answer)."""


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension.

    ``embed`` is synchronous and CPU- or IO-bound; async callers run it in a worker
    thread so the event loop never waits on a model.
    """

    @property
    def name(self) -> str:
        """A stable model identifier, recorded in ``system_meta`` with the dimension."""
        ...

    @property
    def dim(self) -> int:
        """The vector dimension."""
        ...

    def embed(self, texts: Sequence[str], *, urgent: bool = False) -> Vectors:
        """Return an ``(len(texts), dim)`` float32 array of unit-length rows. ``urgent``
        (a question waiting for its answer) may go before work already waiting."""
        ...
