"""The unawareness estimators as registry measures and scorers."""

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline

import skfair_measures as sfm
from skfair_measures import unaware


def _proxy_data(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    x = rng.normal(size=n) + 0.8 * a
    y = (x + rng.normal(size=n) > 0.5).astype(int)
    noise = np.array([0.15, 0.2, 0.25])
    proxies = np.where(rng.random((n, 3)) < 1 - noise, a[:, None], 1 - a[:, None])
    X = pd.DataFrame({"x": x, "p1": proxies[:, 0], "p2": proxies[:, 1], "p3": proxies[:, 2]})
    return X, y, a


def test_proxy_measures_in_registry_match_the_estimator():
    X, y, a = _proxy_data()
    y_pred = (X.x > 0.4).astype(int).to_numpy()
    proxies = X[["p1", "p2", "p3"]].to_numpy()
    for metric in ("dp", "eod", "eop"):
        m = sfm.msr(f"unaware.proxy_{metric}")
        direct = unaware.proxy_disparity(y_pred, proxies, metric=metric, y_true=None if metric == "dp" else y)
        assert m(y, y_pred, proxies=proxies) == pytest.approx(direct.value)
    true_dp = sfm.msr("fairness.cv")(y, y_pred, sensitive_features=a)
    assert sfm.msr("unaware.proxy_dp")(y, y_pred, proxies=proxies) == pytest.approx(true_dp, abs=0.03)
    base = sfm.msr("unaware.proxy_dp", mode="base")(y, y_pred, proxies=proxies)
    assert base == pytest.approx(0.7 * true_dp, abs=0.03)  # shrunk by 1 - e1 - e2 (Corollary 3.3)
    res = sfm.msr("unaware.proxy_dp").bootstrap(y, y_pred, proxies=proxies, n_boot=50)
    lo, hi = res.interval()
    assert lo <= res.value <= hi


def test_proxy_scorer_in_cross_validate():
    X, y, _ = _proxy_data()
    pipe = make_pipeline(sfm.DropColumns(["p1", "p2", "p3"]), LogisticRegression())
    scorer = sfm.fairness_scorer("unaware.proxy_dp", ["p1", "p2", "p3"])
    res = cross_validate(pipe, X, y, cv=3, scoring={"dp": scorer, "acc": "accuracy"})
    assert (res["test_dp"] < 0).all() and np.isfinite(res["test_dp"]).all()
    with pytest.raises(KeyError, match="p9"):
        sfm.fairness_scorer("unaware.proxy_dp", ["p1", "p2", "p9"])(pipe.fit(X, y), X, y)


def test_quantification_measure_scores_models_without_the_attribute():
    X, y, a = _proxy_data(n=4000, seed=1)
    feats = X[["x"]]
    aux = slice(0, 1500)
    m = sfm.msr("unaware.quantified_dp", X_aux=feats.iloc[aux], s_aux=a[aux], quantifier="SLD", random_state=0)
    model = LogisticRegression().fit(feats, y)
    deploy = feats.iloc[1500:]
    truth = sfm.msr("fairness.cv")(y[1500:], model.predict(deploy), sensitive_features=a[1500:])
    assert m(model, deploy) == pytest.approx(truth, abs=0.06)
    search = GridSearchCV(
        LogisticRegression(),
        {"C": [0.01, 1.0]},
        scoring={"dp": sfm.fairness_scorer(m), "acc": "accuracy"},
        refit="acc",
        cv=2,
    )
    search.fit(deploy, y[1500:])
    assert (search.cv_results_["mean_test_dp"] <= 0).all()
    with pytest.raises(ValueError, match="needs an auxiliary set"):
        sfm.msr("unaware.quantified_dp")(model, deploy)


def test_unaware_keys_listed():
    keys = set(sfm.msrs().key)
    assert {"unaware.proxy_dp", "unaware.proxy_eod", "unaware.proxy_eop", "unaware.quantified_dp"} <= keys
