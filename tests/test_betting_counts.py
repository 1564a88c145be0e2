"""BettingCS fed by counts (one bet per batch): running sums, a nested interval, a saved state; refusals.

Coverage by counts and of combined workers is tested in test_betting.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfair_measures._betting import BettingCS


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=10))
def test_counts_keep_the_running_sums_and_a_nested_interval(batches):
    cs = BettingCS(grid_size=100)
    width = 1.0
    for k, extra in batches:
        cs.update_counts(k, k + extra)
        lo, hi = cs.interval(0.05)
        assert 0.0 <= lo <= hi <= 1.0 and hi - lo <= width + 1e-12  # the running maximum only narrows it
        width = hi - lo
    assert cs.n == sum(k + e for k, e in batches) and cs.total == sum(k for k, _ in batches)
    again = BettingCS.from_dict(cs.to_dict())
    assert again.interval(0.05) == cs.interval(0.05)


def test_bad_counts_and_settings_are_refused():
    with pytest.raises(ValueError, match="whole counts"):
        BettingCS().update_counts(3, 2)
    with pytest.raises(ValueError, match="whole counts"):
        BettingCS().update_counts(0.5, 2)
    with pytest.raises(ValueError, match="upper=1"):
        BettingCS(upper=2.0).update_counts(1, 2)
    with pytest.raises(ValueError, match="same settings"):
        BettingCS(grid_size=100).combined(BettingCS(grid_size=200))
