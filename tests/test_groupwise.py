"""groupwise_metrics against fairlearn's MetricFrame (with and without control features)."""

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import MetricFrame, false_positive_rate, selection_rate
from sklearn.metrics import accuracy_score, f1_score, mean_squared_error, recall_score

import skfair_measures as sfm
from skfair_measures.groupwise import groupwise_metrics

FAIRLEARN = {
    "acc": accuracy_score,
    "tpr": recall_score,
    "fpr": false_positive_rate,
    "selection_rate": selection_rate,
    "mse": mean_squared_error,
    "f1": f1_score,
}
OURS = {"acc": "acc", "tpr": "tpr", "fpr": "fpr", "selection_rate": "selection_rate", "mse": "mse", "f1": f1_score}


def _data(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.where(rng.random(n) < 0.75, y, 1 - y)
    sex = pd.Series(rng.choice(["F", "M"], n), name="sex")
    race = pd.Series(rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]), name="race")
    site = pd.Series(rng.choice(["x", "y"], n), name="site")
    w = rng.uniform(0.2, 3, n)
    return y, p, sex, race, site, w


def _frames(weighted, control):
    y, p, sex, race, site, w = _data()
    params = {k: {"sample_weight": w} for k in FAIRLEARN} if weighted else None
    sf = pd.concat([sex, race], axis=1)
    mf = MetricFrame(
        metrics=FAIRLEARN,
        y_true=y,
        y_pred=p,
        sensitive_features=sf,
        control_features=site if control else None,
        sample_params=params,
    )
    gm = groupwise_metrics(
        OURS,
        y,
        p,
        sensitive_features=sf,
        control_features=site if control else None,
        sample_weight=w if weighted else None,
    )
    return mf, gm


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("control", [False, True])
def test_layout_and_values_match_metricframe(weighted, control):
    mf, gm = _frames(weighted, control)
    pd.testing.assert_frame_equal(gm.by_group, mf.by_group.astype(float), check_names=True, rtol=1e-10)
    if control:
        pd.testing.assert_frame_equal(gm.overall, mf.overall.astype(float), rtol=1e-10)
    else:
        pd.testing.assert_series_equal(gm.overall, mf.overall.astype(float), rtol=1e-10, check_names=False)
    for method in ("between_groups", "to_overall"):
        _same(gm.difference(method), mf.difference(method=method))
        _same(gm.ratio(method), mf.ratio(method=method))
    _same(gm.group_min(), mf.group_min())
    _same(gm.group_max(), mf.group_max())


def _same(ours, theirs):
    if isinstance(ours, pd.DataFrame):
        pd.testing.assert_frame_equal(ours, theirs.astype(float), rtol=1e-10)
    else:
        pd.testing.assert_series_equal(ours, theirs.astype(float), rtol=1e-10, check_names=False)


def test_count_metrics_come_from_one_bincount(monkeypatch):
    from skfair_measures import _stats

    calls = []
    original = _stats.ConfusionStats.from_codes.__func__

    def counting(cls, *args, **kwargs):
        calls.append(1)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(_stats.ConfusionStats, "from_codes", classmethod(counting))
    y, p, sex, race, site, _ = _data()
    groupwise_metrics(
        ["acc", "tpr", "fpr", "ppv", "npv", "selection_rate", "tp", "fn"],
        y,
        p,
        sensitive_features=sex,
        control_features=site,
    )
    assert len(calls) == 1


def test_multiclass_table_and_errors():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 4, 1000)
    p = np.where(rng.random(1000) < 0.6, y, rng.integers(0, 4, 1000))
    a = rng.choice(["F", "M"], 1000)
    gm = groupwise_metrics(["acc", "tpr", "ppv"], y, p, sensitive_features=a, average="macro")
    assert list(gm.by_group.columns) == ["acc", "tpr_macro", "ppv_macro"]
    for g in ["F", "M"]:
        rows = a == g
        assert gm.by_group.loc[g, "tpr_macro"] == pytest.approx(recall_score(y[rows], p[rows], average="macro"))
    with pytest.raises(ValueError, match="one-vs-rest rate"):
        groupwise_metrics(["tpr"], y, p, sensitive_features=a)
    with pytest.raises(ValueError, match="two metrics are named 'acc'"):
        groupwise_metrics(["acc", "accuracy"], y, p, sensitive_features=a)
    with pytest.raises(ValueError, match="method="):
        gm.difference("pairwise")


def test_exported_from_the_package():
    assert sfm.groupwise_metrics is groupwise_metrics
