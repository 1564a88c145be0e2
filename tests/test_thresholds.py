"""Measures at many thresholds in one pass, against one call per threshold."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skfair_measures as sfm
from skfair_measures.thresholds import disparity_at_thresholds, plot_disparity_at_thresholds

KEYS = [
    "fairness.tpr",
    "fairness.eod",
    "fairness.cv",
    "fairness.pp",
    "fairness.dp_ratio",
    "fairness.acc_eod=.05",
    "classif.acc",
]


def _data(rng, n, n_groups):
    y = rng.integers(0, 2, n)
    score = np.clip(0.3 * y + rng.uniform(0, 0.7, n), 0, 1)
    score = np.round(score, 2)  # ties with the thresholds themselves
    a = rng.choice([f"g{i}" for i in range(n_groups)], n)
    return y, score, a


def _one_by_one(key, y, score, a, w, thresholds):
    out = []
    for t in thresholds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(sfm.msr(key, threshold=float(t))(y, score, sensitive_features=a, sample_weight=w))
    return np.array(out)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("weighted", [False, True])
def test_grid_matches_one_call_per_threshold(key, weighted):
    rng = np.random.default_rng(len(key))
    y, score, a = _data(rng, 3000, 3)
    w = rng.uniform(0.1, 2, y.size) if weighted else None
    thresholds = np.linspace(0, 1, 21)
    curve = disparity_at_thresholds(key, y, score, sensitive_features=a, thresholds=thresholds, sample_weight=w)
    np.testing.assert_allclose(
        curve.values.to_numpy(), _one_by_one(key, y, score, a, w, thresholds), rtol=1e-12, atol=1e-12, equal_nan=True
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(10, 200), n_thr=st.integers(1, 30), weighted=st.booleans())
def test_random_grids(seed, n, n_thr, weighted):
    rng = np.random.default_rng(seed)
    y, score, a = _data(rng, n, 2)
    if len(np.unique(a)) < 2:
        return
    w = rng.uniform(0.1, 2, n) if weighted else None
    thresholds = np.unique(np.round(rng.uniform(0, 1, n_thr), 2))
    curve = disparity_at_thresholds(
        "fairness.eod", y, score, sensitive_features=a, thresholds=thresholds, sample_weight=w
    )
    np.testing.assert_allclose(
        curve.values.to_numpy(),
        _one_by_one("fairness.eod", y, score, a, w, thresholds),
        rtol=1e-12,
        atol=1e-12,
        equal_nan=True,
    )


def test_per_group_rates_and_counts():
    rng = np.random.default_rng(1)
    y, score, a = _data(rng, 2000, 2)
    curve = disparity_at_thresholds(sfm.msr("fairness.eod"), y, score, sensitive_features=a)
    assert curve.values.shape == (101,) and set(curve.by_group) == {"tpr", "fpr"}
    rows = (a == "g1") & (y == 1)
    assert curve.by_group["tpr"].loc[0.5, "g1"] == pytest.approx(np.mean(score[rows] >= 0.5))
    assert curve.stats.counts.shape == (101, 2, 2, 2)
    np.testing.assert_allclose(curve.stats.counts.sum(axis=(1, 2, 3)), y.size)


def test_refusals():
    rng = np.random.default_rng(2)
    y, score, a = _data(rng, 100, 2)
    with pytest.raises(ValueError, match="fairness.mse does not read confusion counts only"):
        disparity_at_thresholds("fairness.mse", y, score, sensitive_features=a)
    with pytest.raises(ValueError, match="outside"):
        disparity_at_thresholds("fairness.tpr", y, score * 3, sensitive_features=a)
    with pytest.raises(ValueError, match="thresholds must be"):
        disparity_at_thresholds("fairness.tpr", y, score, sensitive_features=a, thresholds=[np.nan])


def test_multiclass_labels_with_pos_label():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 500)
    score = rng.uniform(size=500)
    a = rng.choice(["F", "M"], 500)
    curve = disparity_at_thresholds(
        sfm.msr("fairness.tpr", pos_label=2), y, score, sensitive_features=a, thresholds=[0.5]
    )
    want = sfm.msr("fairness.tpr", threshold=0.5, pos_label=2)(y, score, sensitive_features=a)
    assert curve.values.iloc[0] == pytest.approx(want)


def test_plot():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    rng = np.random.default_rng(4)
    y, score, a = _data(rng, 300, 3)
    ax = plot_disparity_at_thresholds(disparity_at_thresholds("fairness.eod", y, score, sensitive_features=a))
    assert len(ax.lines) == 1 + 2 * 3 and ax.get_title() == "fairness.eod by decision threshold"


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_thr=st.integers(1, 300), clustered=st.booleans())
def test_segments_equal_searchsorted(seed, n_thr, clustered):
    from skfair_measures.thresholds import _segments

    rng = np.random.default_rng(seed)
    grid = rng.uniform(0, 1e-3 if clustered else 1, n_thr)
    grid = np.unique(np.r_[grid, 0.7] if clustered else grid)
    scores = np.r_[rng.random(500), grid, np.nextafter(grid, 0), np.nextafter(grid, 1), 0.0, 1.0]
    np.testing.assert_array_equal(_segments(scores, grid), np.searchsorted(grid, scores, side="right"))


def test_a_ranking_measure_is_refused_with_its_key():
    with pytest.raises(ValueError, match="fairness.ndcg does not read confusion counts"):
        disparity_at_thresholds("fairness.ndcg", [1, 0, 1, 0], [0.2, 0.3, 0.4, 0.5], sensitive_features=list("aabb"))
