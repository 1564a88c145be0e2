"""min_group_size on measures and scorers; merging rare levels before an intersectional audit."""

import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline

import skfair_measures as sfm
from skfair_measures._groups import SingleGroupError
from skfair_measures.groups import SmallGroupWarning, merge_rare_levels


def _data(seed=0):
    rng = np.random.default_rng(seed)
    a = np.r_[np.repeat(["a", "b"], 200), ["c"] * 7, ["d"] * 3]
    y = rng.integers(0, 2, a.size)
    p = np.where(rng.random(a.size) < 0.7, y, 1 - y)
    w = rng.uniform(0.5, 2, a.size)
    return y, p, a, w


def test_drop_equals_the_measure_on_the_large_groups_only():
    y, p, a, w = _data()
    big = np.isin(a, ["a", "b"])
    m = sfm.msr("fairness.eod", min_group_size=10)
    assert m.key == "fairness.eod(min_group_size=10)"
    with pytest.warns(SmallGroupWarning, match=r"fairness\.eod\(min_group_size=10\): .*left out.*'c' \(7\), 'd' \(3\)"):
        got = m.evaluate(y, p, sensitive_features=a, sample_weight=w)
    want = sfm.msr("fairness.eod")(y[big], p[big], sensitive_features=a[big], sample_weight=w[big])
    assert got.value == pytest.approx(want)
    assert list(got.by_group.index) == ["a", "b"]


def test_merge_pools_the_small_groups_into_other():
    y, p, a, w = _data()
    merged = np.where(np.isin(a, ["c", "d"]), "other", a)
    m = sfm.msr("fairness.tpr", min_group_size=10, small_groups="merge")
    with pytest.warns(SmallGroupWarning, match=r"merged into 'other' \(10 rows\)"):
        got = m.evaluate(y, p, sensitive_features=a, sample_weight=w)
    want = sfm.msr("fairness.tpr").evaluate(y, p, sensitive_features=merged, sample_weight=w)
    assert got.value == pytest.approx(want.value)
    pd.testing.assert_series_equal(got.by_group, want.by_group)


def test_intersectional_groups_merge_into_an_other_tuple():
    y, p, a, _ = _data()
    sex = np.where(np.arange(a.size) % 2, "F", "M")
    frame = pd.DataFrame({"race": a, "sex": sex})
    with pytest.warns(SmallGroupWarning):
        res = sfm.msr("fairness.acc", min_group_size=10, small_groups="merge").evaluate(y, p, sensitive_features=frame)
    assert res.by_group.index[-1] == ("other", "other") and res.by_group.index.names == ["race", "sex"]


def test_no_small_group_no_warning_and_refusals():
    y, p, a, _ = _data()
    big = np.isin(a, ["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sfm.msr("fairness.tpr", min_group_size=10)(y[big], p[big], sensitive_features=a[big])
    with pytest.raises(SingleGroupError, match="fewer than two groups have at least min_group_size=300"):
        sfm.msr("fairness.tpr", min_group_size=300)(y, p, sensitive_features=a)
    with pytest.raises(ValueError, match="min_group_size=0"):
        sfm.msr("fairness.tpr", min_group_size=0)
    with pytest.raises(ValueError, match="small_groups='pool'"):
        sfm.msr("fairness.tpr", min_group_size=3, small_groups="pool")
    with pytest.raises(ValueError, match="already named 'other'"):
        sfm.msr("fairness.tpr", min_group_size=10, small_groups="merge")(
            y, p, sensitive_features=np.where(a == "a", "other", a)
        )


def test_measures_with_different_minimum_sizes_do_not_share_a_sample():
    y, p, a, _ = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = sfm.evaluate_measures(
            [sfm.msr("fairness.acc"), sfm.msr("fairness.acc", min_group_size=5)], y, p, sensitive_features=a
        )
    assert list(out["fairness.acc"].by_group.index) == ["a", "b", "c", "d"]
    assert list(out["fairness.acc(min_group_size=5)"].by_group.index) == ["a", "b", "c"]


def test_bootstrap_and_scorers_honour_the_minimum():
    y, p, a, _ = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = sfm.msr("fairness.tpr", min_group_size=10)
        boot = sfm.bootstrap(m, y, p, sensitive_features=a, n_boot=50, random_state=0)
        assert list(boot.by_group.index) == ["a", "b"] and np.isfinite(boot.draws).all()
        X = pd.DataFrame({"x": np.arange(a.size) % 7, "race": a})
        scorer = sfm.fairness_scorer(m, sensitive="race")
        with sklearn.config_context(enable_metadata_routing=False):
            model = make_pipeline(sfm.DropColumns("race"), LogisticRegression())
            search = GridSearchCV(model, {}, scoring=scorer, cv=KFold(3, shuffle=True, random_state=0))
            search.fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_merge_rare_levels():
    s = pd.Series(["a"] * 5 + ["b"] * 2 + ["c"], name="race", index=np.arange(10, 18))
    out = merge_rare_levels(s, 3)
    assert out.tolist() == ["a"] * 5 + ["other"] * 3 and out.name == "race" and out.index.equals(s.index)
    frame = merge_rare_levels(pd.DataFrame({"race": s, "sex": ["F"] * 7 + ["M"]}), 2)
    assert frame["sex"].tolist() == ["F"] * 7 + ["other"] and frame["race"].tolist()[-1] == "other"
    assert merge_rare_levels(np.array(["x", "x", "y"]), 2).tolist() == ["x", "x", "other"]
    with pytest.raises(ValueError, match="already has a level 'other'"):
        merge_rare_levels(pd.Series(["other"] * 3 + ["z"]), 2)
    with pytest.raises(ValueError, match="min_count"):
        merge_rare_levels(s, 0)


def test_compas_race_tpr_names_asian_and_native_american_with_the_value_without_them():
    from skfair_measures.datasets import load_compas

    d = load_compas()
    y, pred, race = d.target, (d.data["decile_score"] >= 5).astype(int), d.sensitive["race"]
    for w in (None, np.ones(len(y))):  # weights of ones: the same caution (sizes count rows)
        with pytest.warns(SmallGroupWarning) as seen:
            value = sfm.msr("fairness.tpr")(y, pred, sensitive_features=race, sample_weight=w)
        (message,) = [str(r.message) for r in seen if "decided by" in str(r.message)]
        assert f"{value:.4f}" == "0.6613" and "'Asian' (8), 'Native American' (5)" in message
        assert "without them it is 0.3765" in message and "min_group_size=32" in message
    # min_group_size=32 (what the warning proposes) leaves them out: the value without them, and no such warning
    with pytest.warns(SmallGroupWarning, match="left out") as seen:
        assert sfm.msr("fairness.tpr", min_group_size=32)(y, pred, sensitive_features=race) == pytest.approx(
            0.3765, abs=1e-4
        )
    assert not any("decided by" in str(r.message) for r in seen)


def test_every_door_warns_once_and_the_result_keeps_the_note():
    y = np.r_[np.ones(100, int), np.ones(5, int)]
    g = np.r_[np.repeat(["a", "b"], 50), ["c"] * 5]
    p = np.r_[np.tile([1, 0], 50), np.ones(5, int)]
    with pytest.warns(SmallGroupWarning) as seen:
        res = sfm.evaluate_measures(["fairness.tpr", "fairness.acc"], y, p, sensitive_features=g)
    assert len(seen) == 1 and "fairness.tpr" in str(seen[0].message) and "fairness.acc" in str(seen[0].message)
    assert "'c' (5)" in res["fairness.tpr"].small_groups_note
    with pytest.warns(SmallGroupWarning, match="'c' \\(5\\)"):
        sfm.msr("fairness.tpr").groupwise(y, p, sensitive_features=g)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every group small, or the small group moves nothing: no warning
        sfm.msr("fairness.tpr")(y[:8], p[:8], sensitive_features=np.r_[["a"] * 4, ["b"] * 4])
        sfm.msr("fairness.tpr")(y, np.ones_like(y), sensitive_features=g)


def test_an_engine_frame_names_the_small_groups_as_memory_does():
    import polars as pl

    y = np.r_[np.ones(100, int), np.ones(5, int)]
    g = np.r_[np.repeat(["a", "b"], 50), ["c"] * 5]
    p = np.r_[np.tile([1, 0], 50), np.ones(5, int)]
    frame = pl.DataFrame({"y": y, "p": p, "g": g})
    with pytest.warns(SmallGroupWarning) as seen:
        res = sfm.evaluate_measures(["fairness.tpr"], "y", "p", sensitive_features="g", data=frame.lazy())
    (message,) = [str(r.message) for r in seen if "decided by" in str(r.message)]
    assert "'c' (5); without them it is 0.0000" in message and res["fairness.tpr"].small_groups_note == message


def test_the_groupwise_table_names_the_small_groups_that_decide_a_difference():
    from skfair_measures.datasets import load_compas

    d = load_compas()
    y, pred, race = d.target, (d.data["decile_score"] >= 5).astype(int), d.sensitive["race"]
    with pytest.warns(SmallGroupWarning) as seen:
        gm = sfm.groupwise_metrics(["tpr", "acc"], y, pred, sensitive_features=race)
    (message,) = [str(r.message) for r in seen if "decided by" in str(r.message)]
    assert f"tpr (largest difference between groups): {gm.difference()['tpr']:.4f} is decided" in message
    assert "'Asian' (8), 'Native American' (5)" in message and "without them it is 0.3765" in message
