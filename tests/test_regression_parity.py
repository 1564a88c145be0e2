"""Regression parity against scipy (KS, Wasserstein) and per-group sklearn / pandas."""

import itertools
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import ks_2samp, wasserstein_distance
from sklearn.metrics import mean_absolute_error, mean_squared_error

import skfair_measures as sfm
from skfair_measures.regression import DistributionParity, bounded_group_loss, pairwise_distribution_distances


def _data(rng, n, n_groups, ties=False):
    y = rng.normal(size=n)
    p = y + rng.normal(size=n)
    if ties:
        p = np.round(p * 2) / 2  # many tied predictions, across groups
    a = rng.integers(0, n_groups, n)
    p = p + 0.3 * a
    return y, p, a


def _scipy_largest(p, a, w, distance):
    best = 0.0
    for g, h in itertools.combinations(np.unique(a), 2):
        x, y = p[a == g], p[a == h]
        if distance == "ks":
            rx, ry = (x, y) if w is None else (np.repeat(x, w[a == g]), np.repeat(y, w[a == h]))
            d = ks_2samp(rx, ry).statistic
        else:
            d = wasserstein_distance(x, y, None if w is None else w[a == g], None if w is None else w[a == h])
        best = max(best, d)
    return best


@pytest.mark.parametrize("distance", ["ks", "wasserstein"])
@pytest.mark.parametrize("n_groups", [2, 5])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_distribution_parity_matches_scipy(distance, n_groups, ties, weighted):
    rng = np.random.default_rng(n_groups + 10 * ties + 100 * weighted)
    y, p, a = _data(rng, 3000, n_groups, ties)
    w = rng.integers(1, 4, p.size) if weighted else None
    got = sfm.msr(f"fairness.dp_{distance}")(y, p, sensitive_features=a, sample_weight=w)
    assert got == pytest.approx(_scipy_largest(p, a, w, distance), rel=1e-9, abs=1e-12)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(6, 200), n_groups=st.integers(2, 4), weighted=st.booleans())
def test_pairwise_tables_match_scipy_on_random_data(seed, n, n_groups, weighted):
    rng = np.random.default_rng(seed)
    p = np.round(rng.normal(size=n), 1)
    a = rng.integers(0, n_groups, n)
    if len(np.unique(a)) < n_groups:
        return
    w = rng.integers(1, 5, n) if weighted else None
    ks, w1 = pairwise_distribution_distances(p, a, n_groups, w)
    for g, h in itertools.combinations(range(n_groups), 2):
        assert ks[g, h] == pytest.approx(
            _scipy_largest(
                p[(a == g) | (a == h)], a[(a == g) | (a == h)], None if w is None else w[(a == g) | (a == h)], "ks"
            )
        )
        ww = (None, None) if w is None else (w[a == g], w[a == h])
        assert w1[g, h] == pytest.approx(wasserstein_distance(p[a == g], p[a == h], *ww), abs=1e-12)


def test_small_blocks_give_the_same_tables(monkeypatch):
    from skfair_measures import regression

    rng = np.random.default_rng(4)
    _, p, a = _data(rng, 20000, 3)
    whole = pairwise_distribution_distances(p, a, 3)
    monkeypatch.setattr(regression, "_CHUNK_CELLS", 3)  # blocks of one distinct value
    blocked = pairwise_distribution_distances(p, a, 3)
    np.testing.assert_allclose(blocked[0], whole[0], rtol=1e-12)
    np.testing.assert_allclose(blocked[1], whole[1], rtol=1e-9)


@pytest.mark.parametrize("block", [1, 7, 1 << 21])
def test_many_small_groups_with_ties_and_zero_weights_match_scipy(block, monkeypatch):
    """Many groups, shared and zero-weight values, blocks of a few values: every pair against scipy."""
    from skfair_measures import regression

    monkeypatch.setattr(regression, "_CHUNK_CELLS", block * 40)
    rng = np.random.default_rng(9)
    n, n_groups = 600, 40
    p = np.round(rng.normal(size=n), 1)  # ties within and across groups
    a = rng.integers(0, n_groups, n)
    w = rng.integers(0, 4, n)  # a quarter of the rows weigh 0 (integers: scipy's KS repeats rows)
    ks, w1 = pairwise_distribution_distances(p, a, n_groups, w)
    only_ks = pairwise_distribution_distances(p, a, n_groups, w, distances=("ks",))[0]
    np.testing.assert_array_equal(only_ks, ks)
    for g in range(n_groups):
        for h in range(g + 1, n_groups):
            pair = (a == g) | (a == h)
            assert ks[g, h] == pytest.approx(_scipy_largest(p[pair], a[pair], w[pair], "ks"), abs=1e-12)
            assert w1[g, h] == pytest.approx(
                wasserstein_distance(p[a == g], p[a == h], w[a == g], w[a == h]), abs=1e-12
            )


def test_mean_prediction_parity_and_bounded_group_loss_per_group():
    rng = np.random.default_rng(2)
    y, p, a = _data(rng, 4000, 3)
    w = rng.uniform(0.2, 2, y.size)
    df = pd.DataFrame({"y": y, "p": p, "a": a, "w": w})
    means = df.groupby("a").apply(lambda d: np.average(d.p, weights=d.w), include_groups=False)
    got = sfm.msr("fairness.dp_mean").evaluate(y, p, sensitive_features=a, sample_weight=w)
    np.testing.assert_allclose(got.by_group.to_numpy(), means.to_numpy())
    assert got.value == pytest.approx(means.max() - means.min())
    mse = [mean_squared_error(y[a == g], p[a == g], sample_weight=w[a == g]) for g in range(3)]
    mae = [mean_absolute_error(y[a == g], p[a == g]) for g in range(3)]
    assert sfm.msr("fairness.bgl")(y, p, sensitive_features=a, sample_weight=w) == pytest.approx(max(mse))
    assert sfm.msr("fairness.bgl", base="mae")(y, p, sensitive_features=a) == pytest.approx(max(mae))
    with pytest.raises(ValueError, match="needs a loss"):
        bounded_group_loss("acc")


def test_distribution_parity_is_a_measure():
    rng = np.random.default_rng(3)
    y, p, a = _data(rng, 500, 3)
    m = sfm.msr("fairness.dp_ks")
    res = m.evaluate(y, p, sensitive_features=a)
    assert res.by_group.shape == (3, 3) and res.value == pytest.approx(np.nanmax(res.by_group.to_numpy()))
    assert pickle.loads(pickle.dumps(m))(y, p, sensitive_features=a) == res.value
    boot = sfm.bootstrap(m, y, p, sensitive_features=a, n_boot=30, random_state=0)
    assert boot.draws.shape == (30,) and np.isfinite(boot.draws).all()
    out = sfm.evaluate_measures(
        ["fairness.dp_ks", "fairness.dp_wasserstein", "fairness.mse"], y, p, sensitive_features=a
    )
    assert set(out) == {"fairness.dp_ks", "fairness.dp_wasserstein", "fairness.mse"}
    with pytest.raises(TypeError, match="reads the rows"):
        m.evaluate_stats(sfm.ErrorStats.from_codes(a, y, p, pd.Index([0, 1, 2])))


def test_a_declared_group_without_samples_is_undefined_or_dropped():
    y, p, a = np.zeros(6), np.arange(6.0), np.array(list("aaabbb"))
    with pytest.warns(sfm.UndefinedGroupWarning, match=r"\['c'\] have no samples"):
        assert np.isnan(DistributionParity("ks", groups=["a", "b", "c"])(y, p, sensitive_features=a))
    with pytest.warns(sfm.UndefinedGroupWarning, match="left out"):
        assert DistributionParity("ks", groups=["a", "b", "c"], undefined="drop")(y, p, sensitive_features=a) == 1.0
    with pytest.raises(ValueError, match="numeric predictions"):
        DistributionParity("ks")(y, np.array(list("xyzxyz")), sensitive_features=a)
