"""fill_ regressions found by reading the copy code (issue 9)."""

from __future__ import annotations

import numpy as np
import pytest
import slimtensor as st


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"])
@pytest.mark.parametrize("value", [0, 0.0, False])
def test_non_contiguous_float8_zero_fill(name, value):
    # got: RuntimeError "no conversion to float8": the zero scalar was made in int64/float64 before fill_
    # switched it to the destination's dtype (a dead store), and the strided path copies that scalar
    base = st.full((4, 6), 1, dtype=st.uint8).view(getattr(st, name))
    view = base[:, ::2]
    assert not view.is_contiguous()
    view.fill_(value)
    raw = base.view(st.uint8).numpy()
    assert (raw[:, ::2] == 0).all() and (raw[:, 1::2] == 1).all()


def test_float8_fill_with_a_non_zero_value_is_still_refused():
    t = st.zeros(4, dtype=st.float8_e4m3fn)[::2]
    with pytest.raises(RuntimeError, match="can only be filled with 0"):
        t.fill_(1.0)
    np.testing.assert_array_equal(t.view(st.uint8).numpy(), [0, 0])
