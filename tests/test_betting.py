"""The betting confidence sequence: coverage at every sample size, batches, saved state, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfair_measures._betting import BettingCS


def test_covers_the_mean_at_every_look_of_a_sequence():
    """Time-uniform: the true mean stays inside at every one of 60 looks in >= 95% of streams."""
    rng = np.random.default_rng(0)
    runs, missed = 200, 0
    for _ in range(runs):
        p = rng.uniform(0.02, 0.98)
        cs = BettingCS(grid_size=200)
        inside = True
        for _ in range(60):
            cs.update(rng.binomial(1, p, 1))
            lo, hi = cs.interval(0.05)
            inside &= lo <= p <= hi
        missed += not inside
    assert missed / runs <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40), st.integers(1, 5))
def test_batches_give_the_same_state_as_one_sequence(x, cut):
    whole, parts = BettingCS(grid_size=50), BettingCS(grid_size=50)
    whole.update(x)
    parts.update(x[:cut])
    parts.update(x[cut:])
    assert np.allclose(whole.log_max, parts.log_max) and whole.interval(0.1) == parts.interval(0.1)
    restored = BettingCS.from_dict(parts.to_dict())
    assert restored.interval(0.05) == parts.interval(0.05)


def test_more_data_or_a_larger_alpha_narrow_the_interval():
    rng = np.random.default_rng(1)
    cs = BettingCS()
    cs.update(rng.binomial(1, 0.4, 50))
    w50 = np.subtract(*cs.interval(0.05)[::-1])
    assert np.subtract(*cs.interval(0.2)[::-1]) <= w50
    cs.update(rng.binomial(1, 0.4, 450))
    assert np.subtract(*cs.interval(0.05)[::-1]) < w50


def test_weighted_observations_bounded_by_upper():
    """Importance-weighted 0/1 outcomes: x = w y with w <= upper; the sequence is for E[w y]."""
    rng = np.random.default_rng(2)
    y = rng.binomial(1, 0.5, 400)
    w = rng.choice([0.5, 1.5], 400)  # density ratio with mean 1
    cs = BettingCS(upper=1.5)
    cs.update(w * y)
    lo, hi = cs.interval(0.05)
    assert lo <= 0.5 <= hi


@pytest.mark.parametrize("bad", [[1.2], [-0.1], [np.nan]])
def test_observations_outside_the_bound_are_refused(bad):
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\] \(upper=\)"):
        BettingCS().update(bad)


def test_bad_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="upper="):
        BettingCS(upper=0)
    with pytest.raises(ValueError, match="alpha="):
        BettingCS().interval(1.5)
