"""BettingStack fed by counts (one bet per batch): running sums, a nested interval, a saved state; refusals; stacks.

Coverage by counts and of combined workers is tested in test_betting.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfair_measures._betting import BettingStack, intervals_together, update_counts_together


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=10))
def test_counts_keep_the_running_sums_and_a_nested_interval(batches):
    cs = BettingStack(grid_size=100)
    width = 1.0
    for k, extra in batches:
        cs.update_counts(k, k + extra)
        lo, hi = (float(v[0]) for v in cs.intervals(0.05))
        assert 0.0 <= lo <= hi <= 1.0 and hi - lo <= width + 1e-12  # the running maximum only narrows it
        width = hi - lo
    assert cs.n[0] == sum(k + e for k, e in batches) and cs.total[0] == sum(k for k, _ in batches)
    again = BettingStack.from_dict(cs.to_dict())
    assert np.array_equal(again.intervals(0.05), cs.intervals(0.05))


def test_bad_counts_and_settings_are_refused():
    with pytest.raises(ValueError, match="whole counts"):
        BettingStack().update_counts(3, 2)
    with pytest.raises(ValueError, match="whole counts"):
        BettingStack().update_counts(0.5, 2)
    with pytest.raises(ValueError, match="upper=1"):
        BettingStack(upper=2.0).update_counts(1, 2)
    with pytest.raises(ValueError, match="same settings"):
        BettingStack(grid_size=100).combined(BettingStack(grid_size=200))


def test_stacks_updated_together_are_the_sequences_updated_one_by_one():
    rng = np.random.default_rng(11)
    alpha_bets = [[0.05, 0.01, 0.2], [0.001]]
    stacks = [BettingStack(len(a), grid_size=60, alpha_bet=a) for a in alpha_bets]
    single = [[BettingStack(grid_size=60, alpha_bet=x) for x in a] for a in alpha_bets]
    for _ in range(12):
        trials = [rng.integers(0, 3, s.rows) * rng.integers(1, 500, s.rows) for s in stacks]  # some batches empty
        successes = [rng.binomial(n, 0.3) for n in trials]
        update_counts_together(stacks, successes, trials)
        for seqs, k, n in zip(single, successes, trials, strict=True):
            for cs, ki, ni in zip(seqs, k, n, strict=True):
                cs.update_counts(int(ki), int(ni))
    levels = [[0.05, 0.1, 0.01], [0.2]]
    for stack, seqs, read, a in zip(stacks, single, intervals_together(stacks, levels), levels, strict=True):
        for r, cs in enumerate(seqs):
            assert stack.n[r] == cs.n[0] and np.array_equal(stack.log_max[r], cs.log_max[0])
            assert np.array_equal(stack.log_seg_max[r], cs.log_seg_max[0])
            assert (read[0][r], read[1][r]) == tuple(float(v[0]) for v in cs.intervals(a[r]))
    with pytest.raises(ValueError, match="whole counts"):
        update_counts_together(stacks, [[1, 1, 1], [2]], [[2, 2, 2], [1]])
