"""Small groups covered: score intervals of rate differences and ratios replace the bootstrap's percentiles."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

import skfair_measures as sfm
from skfair_measures._small_sample import mover_ratio, newcombe, wilson


def exact_coverage(interval, n1, p1, n2, p2, truth, alpha=0.05):
    """P(interval covers truth) summed over every count of the small group and the likely counts of the large one."""
    k2 = np.arange(*stats.binom.ppf([1e-5, 1 - 1e-5], n2, p2).astype(int) + [0, 1])
    w2 = stats.binom.pmf(k2, n2, p2)
    out = 0.0
    for k1 in range(n1 + 1):
        w1 = stats.binom.pmf(k1, n1, p1)
        if w1 < 1e-6:
            continue
        for k, w in zip(k2, w2, strict=True):
            lo, hi = interval(k1, n1, k, n2, alpha)
            out += w1 * w * (lo <= truth <= hi)
    return out


@pytest.mark.parametrize("n1", [20, 50])
@pytest.mark.parametrize("p2", [0.02, 0.3])
def test_exact_coverage_of_a_small_groups_difference_and_ratio_is_at_least_93_percent(n1, p2):
    assert exact_coverage(newcombe, n1, 0.05, 2000, p2, 0.05 - p2) >= 0.93
    assert exact_coverage(mover_ratio, n1, 0.05, 2000, p2, 0.05 / p2) >= 0.93


def test_the_uncorrected_wilson_interval_would_miss_and_the_corrected_one_does_not():
    lo, _ = wilson(3, 20, 0.05)
    assert 0.03 < lo <= 0.05  # uncorrected: 0.052, excluding the rate 0.05 that gives 3 of 20 most often
    assert wilson(0, 0, 0.05) == (0.0, 1.0)


@pytest.mark.parametrize("n", [1, 5, 20, 57])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
def test_wilson_on_whole_counts_is_scipys_continuity_corrected_wilson(n, alpha):
    """Kept vectorised for many groups and Kish's fractional counts; on whole counts it is scipy's ``wilsoncc``."""
    lo, hi = wilson(np.arange(n + 1), n, alpha)
    ref = [tuple(stats.binomtest(k, n).proportion_ci(1 - alpha, method="wilsoncc")) for k in range(n + 1)]
    np.testing.assert_allclose(np.c_[lo, hi], np.array(ref, dtype=float), rtol=0, atol=1e-12)


@pytest.mark.parametrize("key", ["fairness.cv", "fairness.dp_ratio"])
def test_seeded_bootstrap_of_a_20_row_group_against_2000_rows_covers(key):
    """What sfm.bootstrap reports (the percentile interval covered 62.6% here): 150 seeded draws."""
    rng = np.random.default_rng(0)
    g = np.repeat(["small", "large"], [20, 2000])
    p = np.where(g == "small", 0.05, 0.3)
    truth = 0.25 if key == "fairness.cv" else 0.05 / 0.3
    hits = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(150):
            pred = (rng.uniform(size=g.size) < p).astype(int)
            res = sfm.bootstrap(key, np.zeros(g.size, int), pred, sensitive_features=g, n_boot=2, random_state=seed)
            lo, hi = res.interval()
            hits += lo <= truth <= hi
    assert "continuity-corrected" in res.construction and hits / 150 >= 0.93


def test_large_groups_keep_the_percentile_bootstrap_and_composites_read_the_wilson_box():
    rng = np.random.default_rng(1)
    g = rng.integers(0, 2, 4000)
    y, pred = rng.integers(0, 2, 4000), rng.integers(0, 2, 4000)
    # large groups keep the bootstrap (here its band mapped through |.|, the value being near 0), no score interval
    construction = sfm.bootstrap("fairness.acc", y, pred, sensitive_features=g, random_state=0).construction
    assert "bootstrap" in construction and "score" not in construction
    g3 = rng.integers(0, 3, 300)
    res = sfm.bootstrap("fairness.eod", y[:300], pred[:300], sensitive_features=g3, random_state=0)
    lo, hi = res.interval()
    assert res.construction.startswith("Wilson score box") and lo <= res.value <= hi and hi - lo > 0.1
    assert res.interval(0.5)[1] - res.interval(0.5)[0] < hi - lo
