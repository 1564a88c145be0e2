"""Measures as scikit-learn scorers: routing mode, column mode, multi-metric, refit."""

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV, StratifiedKFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

import skfair_measures as sfm


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
            scoring={"eod": m.as_scorer(), "acc": "accuracy"},
            params={"sensitive_features": X.sex},
        )
    np.testing.assert_allclose(-res["test_eod"], _manual_cv(LogisticRegression(), X, y, m, cv))


def test_grid_search_routing_and_refit_on_constraint(data):
    X, y = data
    scoring = {
        "fairness.tpr": sfm.msr("fairness.tpr").as_scorer(),
        "acc_eod": sfm.msr("fairness.acc_eod=.05", epsilon=0.2).as_scorer(),
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
    res = cross_validate(pipe, X, y, cv=cv, scoring=m.as_scorer(sensitive="sex"))
    manual = _manual_cv(make_pipeline(StandardScaler(), LogisticRegression()), X, y, m, cv)
    np.testing.assert_allclose(-res["test_score"], manual)
    # routing need not be enabled in column mode; RandomizedSearchCV works alike
    rs = RandomizedSearchCV(
        pipe,
        {"logisticregression__C": [0.01, 0.1, 1, 10]},
        n_iter=3,
        random_state=0,
        scoring=sfm.msr("fairness.acc_eod=.05", epsilon=0.3).as_scorer(sensitive="sex"),
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
    single = cross_validate(pipe, X, y, cv=3, scoring={k: sfm.msr(k).as_scorer(sensitive="sex") for k in keys})
    multi = cross_validate(pipe, X, y, cv=3, scoring=scorer)
    for k in keys:
        np.testing.assert_allclose(single[f"test_{k}"], multi[f"test_{k}"])


def test_probability_measures_use_predict_proba(data):
    from sklearn.metrics import roc_auc_score

    X, y = data
    m = sfm.FairnessMeasure(roc_auc_score)
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    pipe = make_pipeline(sfm.DropColumns("sex"), LogisticRegression())
    res = cross_validate(pipe, X, y, cv=cv, scoring=m.as_scorer(sensitive="sex"))
    np.testing.assert_allclose(-res["test_score"], _manual_cv(LogisticRegression(), X, y, m, cv))


def test_scorer_errors_are_clear(data):
    X, y = data
    clf = LogisticRegression().fit(X.drop(columns="sex"), y)
    with pytest.raises(ValueError, match="enable metadata routing"):
        sfm.msr("fairness.tpr").as_scorer()(clf, X.drop(columns="sex"), y)
    with pytest.raises(KeyError, match="'race'"):
        sfm.msr("fairness.tpr").as_scorer(sensitive="race")(clf, X, y)
    with pytest.raises(TypeError, match="pandas DataFrame"):
        sfm.msr("fairness.tpr").as_scorer(sensitive="sex")(clf, X.drop(columns="sex").to_numpy(), y)


def test_fold_missing_group_with_declared_groups(data):
    X, y = data
    clf = LogisticRegression().fit(X.drop(columns="sex"), y)
    only_f = X[X.sex == "F"].copy()
    only_f.loc[only_f.index[:5], "sex"] = "M"
    scorer = sfm.msr("fairness.tpr").as_scorer(groups=["F", "M", "X"])
    with pytest.warns(sfm.UndefinedGroupWarning, match="'X'"):
        value = scorer(clf, only_f.drop(columns="sex"), y[only_f.index], sensitive_features=only_f.sex)
    assert np.isnan(value)
    pipe = make_pipeline(sfm.DropColumns("sex"), LogisticRegression()).fit(X, y)
    # a fold holding one group: NaN for that fold (with a warning), not an exception that ends the search
    with pytest.warns(sfm.UndefinedGroupWarning, match="single group"):
        value = sfm.msr("fairness.tpr").as_scorer(sensitive="sex")(pipe, X[X.sex == "F"], y[X.sex == "F"])
    assert np.isnan(value)
