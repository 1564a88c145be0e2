"""BettingCS fed by counts (one bet per batch) and combined across workers: coverage at every look, refusals."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfair_measures._betting import BettingCS


def _misses(rng, p, batches, size, alpha, combine=False):
    """Streams whose sequence ever excludes p, read after every batch."""
    missed = 0
    for _ in range(200):
        a, b = BettingCS(grid_size=200), BettingCS(grid_size=200)
        ever = False
        for _ in range(batches):
            n = int(rng.integers(0, size))
            a.update_counts(rng.binomial(n, p), n)
            b.update_counts(rng.binomial(n, p), n)
            cs = a.combined(b) if combine else a
            lo, hi = cs.interval(alpha)
            ever |= not lo <= p <= hi
        missed += ever
    return missed / 200


@pytest.mark.parametrize("p", [0.02, 0.3, 0.5])
@pytest.mark.parametrize("combine", [False, True])
def test_counts_cover_the_mean_at_every_look(p, combine):
    rate = _misses(np.random.default_rng(int(p * 100) + combine), p, 30, 60, 0.1, combine)
    assert rate <= 0.1 + 2 * np.sqrt(0.1 * 0.9 / 200)


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
