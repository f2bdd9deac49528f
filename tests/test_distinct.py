"""``distinct`` is ``np.unique`` for integer arrays (mnemonic/distinct.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mnemonic.distinct import distinct, distinct_count


@given(
    hnp.arrays(
        dtype=st.sampled_from([np.int64, np.int32, np.int8]),
        shape=hnp.array_shapes(min_dims=1, max_dims=2, max_side=40),
    )
)
def test_distinct_equals_numpy_unique(values: np.ndarray) -> None:
    got = distinct(values)
    want = np.unique(values)
    assert got.dtype == values.dtype
    np.testing.assert_array_equal(got, want)
    assert distinct_count(values) == len(want)
