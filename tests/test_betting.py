"""The betting confidence sequence: coverage at every sample size, batches, saved state, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfair_measures._betting import BettingStack, fixed_sample_interval, prediction_powered_interval


def _update(st, x):
    """Bet on each observation of ``x`` in turn, in a one-row stack (row mode)."""
    for xi in np.asarray(x, dtype=float).ravel():
        st.update_values([xi])


def _interval(st, alpha):
    """The one row's interval, as floats."""
    lo, hi = st.intervals(alpha)
    return float(lo[0]), float(hi[0])


def test_covers_the_mean_at_every_look_of_a_sequence():
    """Time-uniform: the true mean stays inside at every one of 60 looks in >= 95% of streams."""
    rng = np.random.default_rng(0)
    runs, missed = 200, 0
    for _ in range(runs):
        p = rng.uniform(0.02, 0.98)
        cs = BettingStack(grid_size=200)
        inside = True
        for _ in range(60):
            cs.update_values(rng.binomial(1, p, 1))
            lo, hi = _interval(cs, 0.05)
            inside &= lo <= p <= hi
        missed += not inside
    assert missed / runs <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40), st.integers(1, 5))
def test_batches_give_the_same_state_as_one_sequence(x, cut):
    whole, parts = BettingStack(grid_size=50), BettingStack(grid_size=50)
    _update(whole, x)
    _update(parts, x[:cut])
    _update(parts, x[cut:])
    assert np.allclose(whole.log_max, parts.log_max) and _interval(whole, 0.1) == _interval(parts, 0.1)
    restored = BettingStack.from_dict(parts.to_dict())
    assert _interval(restored, 0.05) == _interval(parts, 0.05)


def test_more_data_or_a_larger_alpha_narrow_the_interval():
    rng = np.random.default_rng(1)
    cs = BettingStack()
    _update(cs, rng.binomial(1, 0.4, 50))
    w50 = np.subtract(*_interval(cs, 0.05)[::-1])
    assert np.subtract(*_interval(cs, 0.2)[::-1]) <= w50
    _update(cs, rng.binomial(1, 0.4, 450))
    assert np.subtract(*_interval(cs, 0.05)[::-1]) < w50


def test_weighted_observations_bounded_by_upper():
    """Importance-weighted 0/1 outcomes: x = w y with w <= upper; the sequence is for E[w y]."""
    rng = np.random.default_rng(2)
    y = rng.binomial(1, 0.5, 400)
    w = rng.choice([0.5, 1.5], 400)  # density ratio with mean 1
    cs = BettingStack(upper=1.5)
    _update(cs, w * y)
    lo, hi = _interval(cs, 0.05)
    assert lo <= 0.5 <= hi


@pytest.mark.parametrize("bad", [[1.2], [-0.1], [np.nan]])
def test_observations_outside_the_bound_are_refused(bad):
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\] \(upper=\)"):
        BettingStack().update_values(bad)


def test_bad_settings_are_refused_by_name():
    with pytest.raises(ValueError, match="upper="):
        BettingStack(upper=0)
    with pytest.raises(ValueError, match="alpha_bet="):
        BettingStack(alpha_bet=1.5)
    with pytest.raises(ValueError, match="alpha="):
        BettingStack().intervals(1.5)


def test_one_row_batches_are_row_mode_exactly():
    rng = np.random.default_rng(3)
    x = rng.binomial(1, 0.35, 80)
    rows, batches = BettingStack(grid_size=100), BettingStack(grid_size=100)
    _update(rows, x)
    for xi in x:
        batches.update_counts(int(xi), 1)
    for name in ("log_plus", "log_minus", "log_max"):
        assert np.allclose(getattr(rows, name), getattr(batches, name)), name
    assert np.isclose(rows.sq_dev, batches.sq_dev) and _interval(rows, 0.05) == _interval(batches, 0.05)


def _streams_missed(update, runs: int, seed: int, upper: float = 1.0) -> float:
    """Share of streams whose sequence missed the true mean at some batch end (batch sizes fixed in advance)."""
    rng = np.random.default_rng(seed)
    sizes = [1, 3, 10, 30, 100, 300, 1000]
    missed = 0
    for _ in range(runs):
        p = rng.uniform(0.05, 0.95)
        cs = BettingStack(upper=upper, grid_size=400)
        inside = True
        for size in sizes:
            update(cs, rng, p, size)
            lo, hi = _interval(cs, 0.05)
            inside &= lo <= p <= hi
        missed += not inside
    return missed / runs


def test_batches_by_counts_cover_at_every_batch_end():
    def counts(cs, rng, p, size):
        cs.update_counts(int(rng.binomial(size, p)), size)

    runs = 300
    assert _streams_missed(counts, runs, seed=4) <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs)


def test_batches_by_moments_cover_at_every_batch_end():
    """Weighted 0/1 rows ``x = w y``, weights 0.5 or 1.5 with equal chance: ``E[w y] = p``."""

    def moments(cs, rng, p, size):
        x = rng.choice([0.5, 1.5], size) * rng.binomial(1, p, size)
        cs.update_moments(size, x.sum(), (x**2).sum())

    runs = 300
    assert _streams_missed(moments, runs, seed=5, upper=1.5) <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs)


def test_moments_of_one_batch_are_a_lower_bound_of_row_betting():
    """The moments form never has more wealth than betting the same batch row by row with the same bet."""
    rng = np.random.default_rng(6)
    x = rng.uniform(0, 1, 50)
    by_moments, by_counts_like = BettingStack(grid_size=100), BettingStack(grid_size=100)
    by_moments.update_moments(x.size, x.sum(), (x**2).sum())
    lam = by_counts_like._bet(slice(None), np.array([float(x.size)]))[0]
    m = by_counts_like.grid
    with np.errstate(divide="ignore"):
        lp = np.minimum(lam, np.where(m > 0, 0.5 / m, np.inf))
    exact = np.log1p(lp * (x[:, None] - m)).sum(0)
    assert (by_moments.log_plus[0] <= exact + 1e-12).all() and (exact - by_moments.log_plus[0]).max() > 0


def test_combined_workers_cover_and_a_coordinator_keeps_its_maximum():
    rng = np.random.default_rng(7)
    runs, missed = 200, 0
    for _ in range(runs):
        p = rng.uniform(0.05, 0.95)
        a, b, merged = BettingStack(grid_size=400), BettingStack(grid_size=400), None
        inside = True
        for size in (5, 20, 100, 500):
            a.update_counts(int(rng.binomial(size, p)), size)
            b.update_counts(int(rng.binomial(2 * size, p)), 2 * size)
            new = a.combined(b)
            if merged is not None:
                np.maximum(new.log_max, merged.log_max, out=new.log_max)
            merged = new
            lo, hi = _interval(merged, 0.05)
            inside &= lo <= p <= hi
        missed += not inside
    assert missed / runs <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs)
    assert merged.n[0] == a.n[0] + b.n[0]


@pytest.mark.parametrize("args", [(10, 11, 11), (10, 5, 6), (10, 5, 2), (2.5, 1, 1), (10, -1, 0)])
def test_sums_that_no_bounded_batch_has_are_refused(args):
    with pytest.raises(ValueError, match=r"not the sums of observations in \[0, 1\] \(upper=\)"):
        BettingStack().update_moments(*args)


def test_one_look_interval_covers_at_small_n():
    rng = np.random.default_rng(8)
    runs, missed = 400, 0
    for _ in range(runs):
        p, n = rng.uniform(0.02, 0.98), int(rng.choice([5, 10, 30]))
        lo, hi = fixed_sample_interval(rng.binomial(1, p, n), 0.05, grid_size=200)
        missed += not lo <= p <= hi
    assert missed / runs <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs)


@pytest.mark.parametrize("proxy", ["calibrated", "inverted"])
def test_prediction_powered_interval_covers_whatever_the_proxies(proxy):
    """TPR (a ratio whose denominator needs the label) with proxies from good or adversarial scores."""
    rng = np.random.default_rng(9 + (proxy == "inverted"))
    big = 5000
    s = rng.beta(2, 2, big)
    y = (rng.uniform(size=big) < s).astype(float)
    yp = (s >= 0.5).astype(float)
    q = s if proxy == "calibrated" else 1.0 - s  # P(y = 1 | s) the model claims
    num, den, a, b = yp * y, y, yp * q, q
    truth = num.sum() / den.sum()
    runs, missed = 200, 0
    for _ in range(runs):
        lab = rng.choice(big, int(rng.choice([5, 10, 30])), replace=False)
        lo, hi = prediction_powered_interval(
            num[lab], den[lab], a[lab], b[lab], a.mean(), b.mean(), 0.05, grid_size=200
        )
        missed += not lo <= truth <= hi
    assert missed / runs <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs)


def test_prediction_powered_interval_narrows_with_informative_proxies():
    """Perfect proxies (the proxy is the label): tighter than the labels alone once bets are not truncated.

    With few labels the bets sit at their truncation (the range of a row is not known to
    be small) and the width is about ``2 log(2 / alpha) / (3/4 n)`` whatever the proxies.
    """
    rng = np.random.default_rng(11)
    y = rng.binomial(1, 0.4, 5000).astype(float)
    lab = rng.choice(5000, 200, replace=False)
    lo, hi = prediction_powered_interval(y[lab], np.ones(200), y[lab], np.ones(200), y.mean(), 1.0)
    lo2, hi2 = fixed_sample_interval(y[lab])
    assert lo <= y.mean() <= hi and hi - lo < 0.6 * (hi2 - lo2), (hi - lo, hi2 - lo2)


def test_prediction_powered_inputs_are_checked():
    with pytest.raises(ValueError, match="num <= den"):
        prediction_powered_interval([1], [0], [0.5], [0.5], 0.5, 0.5)
    with pytest.raises(ValueError, match="num_mean="):
        prediction_powered_interval([1], [1], [0.5], [0.5], 0.7, 0.5)


def test_a_mean_between_grid_points_is_kept_when_every_grid_point_is_rejected():
    """Grid 0, 1/4, ..., 1 and 4,000 rows of mean 3/8: every grid point is rejected, 3/8 is not.

    The interval is the one segment that holds 3/8, exactly (no fallback guess).
    """
    x = np.tile([1, 1, 1, 0, 0, 0, 0, 0], 500)
    coarse, fine = BettingStack(grid_size=4), BettingStack(grid_size=800)
    _update(coarse, x)
    _update(fine, x)
    threshold = np.log(1 / 0.05)
    assert (coarse.log_max >= threshold).all()  # the case: no grid point kept
    assert fine.log_max[0, 300] < threshold  # 3/8 = grid point 300 of the fine grid, kept there
    assert _interval(coarse, 0.05) == (0.25, 0.5)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 9),
    st.floats(0.02, 0.98),
    st.floats(0.0, 1.0),
    st.integers(0, 40),
    st.integers(20, 1500),
    st.booleans(),
    st.integers(0, 2**31 - 1),
)
def test_the_interval_holds_every_mean_a_finer_grid_keeps(size, p, early, n_early, n, counts, seed):
    """Exact with respect to the grid: a coarse grid's interval holds every candidate a 50-times finer grid keeps.

    The bets do not depend on the grid, so the finer grid's wealth at a shared point is
    the coarse one's; a drift before the stream makes the running maximum matter.
    """
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.binomial(1, early, n_early), rng.binomial(1, p, n)])
    coarse, fine = BettingStack(grid_size=size), BettingStack(grid_size=50 * size)
    for cs in (coarse, fine):
        if counts:
            for part in np.array_split(x, 7):
                cs.update_counts(int(part.sum()), part.size)
        else:
            _update(cs, x)
    kept = fine.grid[fine.log_max[0] < np.log(20)]
    lo, hi = _interval(coarse, 0.05)
    assert kept.size == 0 or (lo <= kept[0] and kept[-1] <= hi)
    assert np.allclose(coarse.log_max, fine.log_max[:, ::50])


def test_a_state_saved_without_segments_restarts_them_from_the_current_wealth():
    cs = BettingStack(grid_size=100)
    _update(cs, np.random.default_rng(12).binomial(1, 0.3, 300))
    old = cs.to_dict()
    del old["log_seg_max"]
    again = BettingStack.from_dict(old)
    lo, hi = _interval(again, 0.05)
    assert np.shape(again.log_seg_max) == (1, 100) and lo <= 0.3 <= hi
    assert lo <= _interval(cs, 0.05)[0] and _interval(cs, 0.05)[1] <= hi  # it forgets past maxima: never narrower
