"""BayesianScorer: a posterior reduced to one float for model selection."""

import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

import skfair_measures as sfm
from skfair_measures import DropColumns, bayes
from skfair_measures.bayes import BayesianScorer, SamplingWarning


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n)
    x1 = rng.normal(size=n) + (sex == "M") * 0.5
    x2 = rng.normal(size=n)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(x1 + 0.5 * x2)))).astype(int)
    return pd.DataFrame({"x1": x1, "x2": x2, "sex": sex}), y


@pytest.mark.parametrize("rule", ["mean", "upper", "prob_fair"])
def test_rules_reduce_the_posterior(rule):
    X, y = _data()
    clf = make_pipeline(DropColumns("sex"), LogisticRegression()).fit(X, y)
    scorer = BayesianScorer("fairness.tpr", rule=rule, sensitive="sex", eps=0.05, prob=0.9)
    value = scorer(clf, X, y)
    post = bayes.posterior(
        sfm.msr("fairness.tpr"),
        y,
        clf.predict_proba(X)[:, 1],
        sensitive_features=X["sex"],
        random_state=0,
        method="bb" if rule == "prob_fair" else "auto",  # a probability needs the posterior's own interval
    )
    expect = {"mean": -post.mean(), "upper": -post.upper_bound(0.9), "prob_fair": post.prob_within(0.05)}[rule]
    assert value == pytest.approx(expect)
    assert scorer.greater_is_better


def test_grid_search_column_mode():
    X, y = _data()
    pipe = make_pipeline(DropColumns("sex"), LogisticRegression())
    scorer = BayesianScorer("fairness.acc", rule="upper", sensitive="sex", n_draws=200)
    gs = GridSearchCV(pipe, {"logisticregression__C": [0.01, 1.0]}, scoring=scorer, cv=3).fit(X, y)
    scores = gs.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all() and (scores <= 0).all()


def test_grid_search_metadata_routing():
    X, y = _data()
    A = X.pop("sex")
    scorer = BayesianScorer("fairness.eod", rule="prob_fair", eps=0.05, n_draws=200)
    with sklearn.config_context(enable_metadata_routing=True):
        gs = GridSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, scoring=scorer, cv=3)
        gs.fit(X, y, sensitive_features=A)
    scores = gs.cv_results_["mean_test_score"]
    assert ((scores >= 0) & (scores <= 1)).all()


def test_bc_scorer_scores_the_unlabeled_pool_with_the_estimator():
    X, y = _data(300)
    Xu, _ = _data(2000, seed=1)
    clf = make_pipeline(DropColumns("sex"), LogisticRegression()).fit(X, y)
    scorer = BayesianScorer(
        "fairness.acc", method="bc", rule="mean", sensitive="sex", unlabeled_X=Xu, chains=2, tune=200, n_draws=50
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        value = scorer(clf, X.iloc[:60], y[:60])
    assert -1 <= value <= 0


def test_scorer_errors():
    with pytest.raises(ValueError, match="rule="):
        BayesianScorer("fairness.acc", rule="median")
    with pytest.raises(ValueError, match="unlabeled_X"):
        BayesianScorer("fairness.acc", method="bc")
    with pytest.raises(ValueError, match="unlabeled_sensitive"):
        BayesianScorer("fairness.acc", method="bc", unlabeled_X=np.zeros((3, 2)))
    X, y = _data(50)
    clf = LogisticRegression().fit(X[["x1", "x2"]], y)
    with pytest.raises(TypeError, match="sample_weight"):
        BayesianScorer("fairness.acc")(clf, X[["x1", "x2"]], y, sample_weight=np.ones(50), sensitive_features=X["sex"])
    assert "fairness.acc" in repr(BayesianScorer("fairness.acc"))


def test_auto_reads_the_pool_when_given_and_is_bb_without_it(monkeypatch):
    """The default method is auto, applied to what the scorer passes (the method table's rule)."""
    from skfair_measures.bayes import _scorer

    X, y = _data(200)
    Xu, _ = _data(500, seed=1)
    clf = make_pipeline(DropColumns("sex"), LogisticRegression()).fit(X, y)
    seen = []

    def recording(*args, **kwargs):
        post = bayes.posterior(*args, **kwargs)
        seen.append((kwargs, post))
        return post

    monkeypatch.setattr(_scorer, "posterior", recording)
    BayesianScorer("fairness.acc", "sex", n_draws=50)(clf, X, y)
    kwargs, post = seen.pop()
    assert kwargs["method"] == "auto" and "unlabeled_scores" not in kwargs and post.method == "bb"

    class Stop(Exception):
        pass

    def stop(*args, **kwargs):
        seen.append((kwargs, None))
        raise Stop

    monkeypatch.setattr(_scorer, "posterior", stop)
    with pytest.raises(Stop):
        BayesianScorer("fairness.acc", "sex", unlabeled_X=Xu)(clf, X, y)
    kwargs, _ = seen.pop()
    assert kwargs["method"] == "auto"  # auto's rule then picks bcr (ppi with weights): the pool is read
    np.testing.assert_allclose(kwargs["unlabeled_scores"], clf.predict_proba(Xu)[:, 1])
    assert (kwargs["unlabeled_sensitive"] == Xu["sex"].to_numpy()).all()


def test_a_pool_no_method_reads_and_a_bad_prob_are_refused_by_name():
    Xu, _ = _data(50, seed=1)
    with pytest.raises(ValueError, match="method='bb' does not read unlabeled_X"):
        BayesianScorer("fairness.acc", "sex", method="bb", unlabeled_X=Xu)
    BayesianScorer("fairness.acc", "sex", method="bb", prior="scores", unlabeled_X=Xu)  # read by the prior
    with pytest.raises(ValueError, match=r"prob=1.5; pass a probability in \(0, 1\)"):
        BayesianScorer("fairness.acc", "sex", prob=1.5)
