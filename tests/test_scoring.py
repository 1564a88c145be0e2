"""Measures as scikit-learn scorers: routing mode, column mode, multi-metric, refit."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV, StratifiedKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import skfair_measures as sfm
from skfair_measures.scoring import ProxyScorer, RankingScorer


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 900
    X = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.normal(size=n), "sex": rng.choice(["F", "M"], n)})
    y = (X.x1 + 0.8 * (X.sex == "M") + rng.normal(size=n) > 0.3).astype(int)
    return X, y


def _manual_cv(est, X, y, measure, cv):
    out = []
    for train, test in cv.split(X, y):
        Xtr = X.iloc[train].drop(columns="sex")
        Xte = X.iloc[test].drop(columns="sex")
        fitted = est.fit(Xtr, y.iloc[train])
        yp = fitted.predict_proba(Xte)[:, 1] if measure.response_method == "predict_proba" else fitted.predict(Xte)
        out.append(measure(y.iloc[test], yp, sensitive_features=X.sex.iloc[test]))
    return np.array(out)


def test_cross_validate_with_routing_matches_manual_folds(data):
    X, y = data
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    m = sfm.msr("fairness.eod")
    with config_context(enable_metadata_routing=True):
        res = cross_validate(
            LogisticRegression(),
            X.drop(columns="sex"),
            y,
            cv=cv,
            scoring={"eod": sfm.fairness_scorer(m), "acc": "accuracy"},
            params={"sensitive_features": X.sex},
        )
    np.testing.assert_allclose(-res["test_eod"], _manual_cv(LogisticRegression(), X, y, m, cv))


def test_grid_search_routing_and_refit_on_constraint(data):
    X, y = data
    scoring = {
        "fairness.tpr": sfm.fairness_scorer("fairness.tpr"),
        "acc_eod": sfm.fairness_scorer(sfm.msr("fairness.acc_eod=.05", epsilon=0.2)),
    }
    with config_context(enable_metadata_routing=True):
        gs = GridSearchCV(
            DecisionTreeClassifier(random_state=0), {"max_depth": [1, 2, 4, 8]}, scoring=scoring, refit="acc_eod", cv=3
        )
        gs.fit(X.drop(columns="sex"), y, sensitive_features=X.sex)
    assert gs.best_params_["max_depth"] == [1, 2, 4, 8][int(np.argmax(gs.cv_results_["mean_test_acc_eod"]))]
    assert (gs.cv_results_["mean_test_fairness.tpr"] <= 0).all()  # minimised: negated like neg_* scorers


def test_column_mode_in_pipeline_with_dropcolumns(data):
    X, y = data
    pipe = make_pipeline(sfm.DropColumns("sex"), StandardScaler(), LogisticRegression())
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    m = sfm.msr("fairness.tpr")
    res = cross_validate(pipe, X, y, cv=cv, scoring=sfm.fairness_scorer(m, sensitive="sex"))
    manual = _manual_cv(make_pipeline(StandardScaler(), LogisticRegression()), X, y, m, cv)
    np.testing.assert_allclose(-res["test_score"], manual)
    # routing need not be enabled in column mode; RandomizedSearchCV works alike
    rs = RandomizedSearchCV(
        pipe,
        {"logisticregression__C": [0.01, 0.1, 1, 10]},
        n_iter=3,
        random_state=0,
        scoring=sfm.fairness_scorer(sfm.msr("fairness.acc_eod=.05", epsilon=0.3), sensitive="sex"),
        cv=3,
    )
    rs.fit(X, y)
    assert np.isfinite(rs.best_score_)


def test_multi_measure_scorer_returns_dict_and_refits(data):
    X, y = data
    keys = ["fairness.tpr", "fairness.eod", "classif.acc", "fairness.acc_eod=.05"]
    scorer = sfm.make_scorers(keys, sensitive="sex")
    pipe = make_pipeline(sfm.DropColumns("sex"), LogisticRegression())
    gs = GridSearchCV(pipe, {"logisticregression__C": [0.01, 1.0]}, scoring=scorer, refit="classif.acc", cv=3)
    gs.fit(X, y)
    for k in keys:
        assert f"mean_test_{k}" in gs.cv_results_
    single = cross_validate(pipe, X, y, cv=3, scoring={k: sfm.fairness_scorer(k, sensitive="sex") for k in keys})
    multi = cross_validate(pipe, X, y, cv=3, scoring=scorer)
    for k in keys:
        np.testing.assert_allclose(single[f"test_{k}"], multi[f"test_{k}"])


def test_probability_measures_use_predict_proba(data):
    from sklearn.metrics import roc_auc_score

    X, y = data
    m = sfm.FairnessMeasure(roc_auc_score)
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    pipe = make_pipeline(sfm.DropColumns("sex"), LogisticRegression())
    res = cross_validate(pipe, X, y, cv=cv, scoring=sfm.fairness_scorer(m, sensitive="sex"))
    np.testing.assert_allclose(-res["test_score"], _manual_cv(LogisticRegression(), X, y, m, cv))


def test_scorer_errors_are_clear(data):
    X, y = data
    clf = LogisticRegression().fit(X.drop(columns="sex"), y)
    with pytest.raises(ValueError, match="enable metadata routing"):
        sfm.fairness_scorer("fairness.tpr")(clf, X.drop(columns="sex"), y)
    with pytest.raises(KeyError, match="'race'"):
        sfm.fairness_scorer("fairness.tpr", sensitive="race")(clf, X, y)
    with pytest.raises(TypeError, match="pandas DataFrame"):
        sfm.fairness_scorer("fairness.tpr", sensitive="sex")(clf, X.drop(columns="sex").to_numpy(), y)


def test_fold_missing_group_with_declared_groups(data):
    X, y = data
    clf = LogisticRegression().fit(X.drop(columns="sex"), y)
    only_f = X[X.sex == "F"].copy()
    only_f.loc[only_f.index[:5], "sex"] = "M"
    scorer = sfm.fairness_scorer("fairness.tpr", groups=["F", "M", "X"])
    with pytest.warns(sfm.UndefinedGroupWarning, match="'X'"):
        value = scorer(clf, only_f.drop(columns="sex"), y[only_f.index], sensitive_features=only_f.sex)
    assert np.isnan(value)
    pipe = make_pipeline(sfm.DropColumns("sex"), LogisticRegression()).fit(X, y)
    # a fold holding one group: NaN for that fold (with a warning), not an exception that ends the search
    with pytest.warns(sfm.UndefinedGroupWarning, match="single group"):
        value = sfm.fairness_scorer("fairness.tpr", sensitive="sex")(pipe, X[X.sex == "F"], y[X.sex == "F"])
    assert np.isnan(value)


def test_set_score_request_is_sklearns_and_sample_weight_is_routed(data):
    X, y = data
    A, Xf = X.sex, X.drop(columns="sex")
    w = np.random.default_rng(1).integers(1, 4, len(y)).astype(float)
    scorer = sfm.fairness_scorer("fairness.tpr")
    assert scorer.get_metadata_routing().score.requests == {"sensitive_features": True, "sample_weight": None}
    with pytest.raises(RuntimeError, match="only available when metadata routing is enabled"):
        scorer.set_score_request(sample_weight=True)
    with config_context(enable_metadata_routing=True):
        with pytest.raises(TypeError, match="Unexpected args: {'weights'}"):
            scorer.set_score_request(weights=True)
        # passed but neither requested nor refused: scikit-learn asks for a decision, as for its own scorers
        clf = LogisticRegression().set_fit_request(sample_weight=False)
        with pytest.raises(ValueError, match=r"FairnessScorer.set_score_request"):
            cross_validate(clf, Xf, y, cv=3, scoring=scorer, params={"sensitive_features": A, "sample_weight": w})
        scorer.set_score_request(sample_weight=True)
        res = cross_validate(
            clf, Xf, y, cv=StratifiedKFold(3), scoring=scorer, params={"sensitive_features": A, "sample_weight": w}
        )
    want = []
    for train, test in StratifiedKFold(3).split(Xf, y):
        yp = LogisticRegression().fit(Xf.iloc[train], y.iloc[train]).predict(Xf.iloc[test])
        want.append(-sfm.msr("fairness.tpr")(y.iloc[test], yp, sensitive_features=A.iloc[test], sample_weight=w[test]))
    np.testing.assert_allclose(res["test_score"], want)


def test_column_mode_refuses_routed_sensitive_features_too(data):
    X, y = data
    clf = make_pipeline(sfm.DropColumns("sex"), LogisticRegression()).fit(X, y)
    with pytest.raises(ValueError, match="sensitive='sex'.*also routed sensitive_features"):
        sfm.fairness_scorer("fairness.tpr", "sex")(clf, X, y, sensitive_features=X.sex)


def test_make_scorers_in_routed_search_and_pickle(data):
    X, y = data
    scorer = sfm.make_scorers(["fairness.eod", "classif.acc"])
    with config_context(enable_metadata_routing=True):
        res = cross_validate(
            LogisticRegression(), X.drop(columns="sex"), y, cv=3, scoring=scorer, params={"sensitive_features": X.sex}
        )
    assert (res["test_fairness.eod"] <= 0).all() and (res["test_classif.acc"] > 0.5).all()
    again = pickle.loads(pickle.dumps(scorer))
    clf = LogisticRegression().fit(X.drop(columns="sex"), y)
    assert again(clf, X.drop(columns="sex"), y, sensitive_features=X.sex) == scorer(
        clf, X.drop(columns="sex"), y, sensitive_features=X.sex
    )
    single = pickle.loads(pickle.dumps(sfm.fairness_scorer("fairness.eod", "sex")))
    assert single(make_pipeline(sfm.DropColumns("sex"), LogisticRegression()).fit(X, y), X, y) == pytest.approx(
        scorer(clf, X.drop(columns="sex"), y, sensitive_features=X.sex)["fairness.eod"]
    )
    assert clone(scorer).get_params() == scorer.get_params()
    with pytest.raises(ValueError, match="fairness.ndcg needs its own scorer"):
        sfm.make_scorers(["fairness.tpr", "fairness.ndcg"])


def _ranking_data(n_queries=60, seed=0):
    rng = np.random.default_rng(seed)
    q = np.repeat(np.arange(n_queries), 5)
    x = rng.normal(size=q.size)
    user = rng.choice(["a", "b"], n_queries)[q]
    rel = np.clip(np.round(x + rng.normal(size=q.size) + (user == "a")), 0, 3)
    return pd.DataFrame({"x": x, "x2": rng.normal(size=q.size)}), rel, q, user


def test_ranking_scorer_routes_query_id_and_groups_per_fold():
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GroupKFold

    X, rel, q, user = _ranking_data()
    scorer = sfm.fairness_scorer("fairness.ndcg")
    assert isinstance(scorer, RankingScorer)
    cv = GroupKFold(3)
    with config_context(enable_metadata_routing=True):
        res = cross_validate(
            Ridge(), X, rel, cv=cv, scoring=scorer, params={"sensitive_features": user, "query_id": q, "groups": q}
        )
    want = []
    for train, test in cv.split(X, rel, q):
        score = Ridge().fit(X.iloc[train], rel[train]).predict(X.iloc[test])
        want.append(-sfm.msr("fairness.ndcg")(rel[test], score, query_id=q[test], sensitive_features=user[test]))
    np.testing.assert_allclose(res["test_score"], want)
    # column mode: query id and group read from X; and a pickle round trip
    Xc = X.assign(q=q, user=user)
    ranker = make_pipeline(sfm.DropColumns(["q", "user"]), Ridge()).fit(Xc, rel)
    col = pickle.loads(pickle.dumps(sfm.fairness_scorer("fairness.ndcg", "user", query_id="q")))
    assert col(ranker, Xc, rel) == pytest.approx(
        -sfm.msr("fairness.ndcg")(rel, ranker.predict(Xc), query_id=q, sensitive_features=user)
    )
    with pytest.raises(ValueError, match="received no query_id"):
        sfm.fairness_scorer("fairness.ndcg", "user")(ranker, Xc, rel)
    with pytest.raises(ValueError, match="query_id='q'.*also routed query_id.*set_score_request"):
        col(ranker, Xc, rel, query_id=q)
    with pytest.raises(ValueError, match="groups= does not apply to fairness.ndcg"):
        sfm.fairness_scorer("fairness.ndcg", groups=["a", "b"])


def test_unaware_scorers_in_routed_search_and_pickle():
    from skfair_measures.unaware import QuantificationMeasure

    rng = np.random.default_rng(0)
    n = 900
    a = rng.integers(0, 2, n)
    proxies = np.where(rng.random((n, 3)) < 0.85, a[:, None], 1 - a[:, None])
    X = pd.DataFrame({"x": rng.normal(size=n) + a})
    y = (X.x + rng.normal(size=n) > 0.5).astype(int)
    proxy = sfm.fairness_scorer("unaware.proxy_dp")
    assert isinstance(proxy, ProxyScorer) and "sample_weight" not in proxy.get_metadata_routing().score.requests
    with config_context(enable_metadata_routing=True):
        gs = GridSearchCV(LogisticRegression(), {"C": [1.0]}, scoring=proxy, cv=2)
        gs.fit(X, y, sensitive_features=proxies)
    assert np.isfinite(gs.cv_results_["mean_test_score"]).all() and (gs.cv_results_["mean_test_score"] <= 0).all()
    clf = LogisticRegression().fit(X, y)
    cols = X.assign(p1=proxies[:, 0], p2=proxies[:, 1], p3=proxies[:, 2])
    by_column = pickle.loads(pickle.dumps(sfm.fairness_scorer("unaware.proxy_dp", ["p1", "p2", "p3"])))
    fitted = make_pipeline(sfm.DropColumns(["p1", "p2", "p3"]), LogisticRegression()).fit(cols, y)
    assert by_column(fitted, cols, y) == pytest.approx(proxy(clf, X, y, sensitive_features=proxies))
    m = QuantificationMeasure(X[["x"]].iloc[:300], a[:300], "CC", per_class=False, classifier=LogisticRegression())
    quant = sfm.fairness_scorer(m)
    assert "sensitive_features" not in quant.get_metadata_routing().score.requests
    with config_context(enable_metadata_routing=True):
        res = cross_validate(LogisticRegression(), X.iloc[300:], y.iloc[300:], cv=2, scoring=quant)
    assert np.isfinite(res["test_score"]).all()
    assert pickle.loads(pickle.dumps(quant))(clf, X) == pytest.approx(-m(clf, X))
    with pytest.raises(ValueError, match="omit sensitive= and groups="):
        sfm.fairness_scorer(m, "sex")


def test_counts_are_not_returned_for_labels_of_three_classes():
    """A K x K table has no 2 x 2 confusion counts: the scorer returns the measures only, so nothing pools them."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=90), "sex": rng.choice(["F", "M"], 90)})
    y = rng.integers(0, 3, 90)
    est = make_pipeline(sfm.DropColumns("sex"), LogisticRegression()).fit(X, y)
    scores = sfm.make_scorers(["classif.acc", "fairness.acc"], sensitive="sex", counts=True)(est, X, y)
    assert sorted(scores) == ["classif.acc", "fairness.acc"]
