"""Distinct integers by sorting, in place of ``np.unique``.

numpy 2.x answers ``np.unique`` on integers through a hash table and sorts afterwards; on
these machines (numpy 2.4) that is 10-25 times slower than a sort and a neighbour
comparison: 55-70 ms against 2.6 ms for 210k int64 seqs, 0.8 against 0.07 ms for 5,000.
A project-filtered vector search at 1M spent most of its time in one such call. (With
``return_index`` numpy sorts, and a stable argsort here would be no faster: left to it.)
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

_Int = TypeVar("_Int", bound=np.integer[Any])


def distinct(values: npt.NDArray[_Int]) -> npt.NDArray[_Int]:
    """The distinct values, ascending (``np.unique(values)`` for a 1-D integer array)."""
    ordered = np.sort(values.reshape(-1))
    if len(ordered) < 2:
        return ordered
    starts = np.empty(len(ordered), dtype=np.bool_)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    return ordered[starts]


def distinct_count(values: npt.NDArray[np.integer[Any]]) -> int:
    return len(distinct(values))
