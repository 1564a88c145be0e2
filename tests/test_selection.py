"""Model and threshold selection under fairness constraints (skfair_measures.selection)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OrdinalEncoder
from sklearn.tree import DecisionTreeClassifier

import skfair_measures as sfm
from skfair_measures.selection import InfeasibleConstraintWarning, NoFeasibleCandidateError

DEPTHS = [2, 4, 6, 8, 12]


@pytest.fixture(scope="module")
def adult():
    X, y, _ = sfm.datasets.load_adult(return_X_y_A=True)
    idx = np.random.default_rng(0).choice(len(X), 10000, replace=False)
    return X.iloc[idx].reset_index(drop=True), y.iloc[idx].reset_index(drop=True)


def _tree():
    enc = make_column_transformer(
        (
            OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
            make_column_selector(dtype_include="category"),
        ),
        remainder="passthrough",
    )
    return make_pipeline(sfm.DropColumns(["sex", "race"]), enc, DecisionTreeClassifier(random_state=0))


def _search(X, y, refit, scoring, search=GridSearchCV, **kw):
    with sklearn.config_context(enable_metadata_routing=True):
        return search(
            _tree(),
            {"decisiontreeclassifier__max_depth": DEPTHS},
            scoring=scoring,
            refit=refit,
            cv=StratifiedKFold(5, shuffle=True, random_state=0),
            **kw,
        ).fit(X, y, sensitive_features=X["sex"])


def test_adult_tree_depth_meets_the_bound_on_aggregate(adult):
    """The issue's case: the constraint scorer picks a depth whose mean EOD breaks 0.05; the rule does not."""
    X, y = adult
    scoring = sfm.make_scorers(["classif.acc", "fairness.eod", "fairness.acc_eod=.05"], counts=True)
    old = _search(X, y, "fairness.acc_eod=.05", scoring)
    old_eod = -old.cv_results_["mean_test_fairness.eod"][old.best_index_]
    rule = sfm.constrained_refit("classif.acc", subject_to={"fairness.eod": 0.05})
    new = _search(X, y, rule, scoring)
    table = rule.table(new.cv_results_)
    row = table.loc[new.best_index_]
    assert row["fairness.eod aggregate"] == "pooled" and row["feasible"]
    assert row["fairness.eod"] <= 0.05
    # the pooled value is the measure on all out-of-fold rows: recompute it from the fold counts
    assert np.isclose(
        row["fairness.eod"],
        sfm.msr("fairness.eod")
        .evaluate_stats(sfm.scoring.pooled_counts(new.cv_results_, "fairness.eod")[new.best_index_])
        .value,
    )
    # the best feasible accuracy: no candidate meeting the bound is more accurate
    feasible = table[table["fairness.eod"] <= 0.05]
    assert row["classif.acc"] == feasible["classif.acc"].max()
    # the fold mean of the constraint measure passed over a more accurate candidate that meets the bound
    assert old.best_index_ != new.best_index_ and old_eod <= 0.05
    assert table.loc[old.best_index_, "classif.acc"] < row["classif.acc"]
    # an impossible bound: the documented error, with every candidate in its table
    impossible = sfm.constrained_refit("classif.acc", subject_to={"fairness.eod": 1e-6})
    with pytest.raises(NoFeasibleCandidateError, match="if_none='fairest'") as info:
        impossible(new.cv_results_)
    assert len(info.value.table) == len(DEPTHS)
    fallback = sfm.constrained_refit("classif.acc", subject_to={"fairness.eod": 1e-6}, if_none="fairest")
    with pytest.warns(InfeasibleConstraintWarning, match="no candidate meets every bound"):
        pick = fallback(new.cv_results_)
    assert pick == int(table["fairness.eod"].idxmin())


def test_mean_aggregate_and_bound_check_are_stated_and_stricter(adult):
    X, y = adult
    scoring = sfm.make_scorers(["classif.acc", "fairness.eod"], counts=True)
    search = _search(X, y, False, scoring)
    mean = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.05}, aggregate="mean").table(search.cv_results_)
    assert (mean["fairness.eod aggregate"] == "mean").all()
    np.testing.assert_allclose(mean["fairness.eod"], -search.cv_results_["mean_test_fairness.eod"])
    sure = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.05}, check="bound", prob=0.8)
    sure = sure.table(search.cv_results_)
    assert (sure["fairness.eod checked"] >= sure["fairness.eod"]).all()  # an upper bound of a gap
    assert sure["feasible"].sum() <= mean.shape[0]
    # without counts, "pooled" names the fix and "auto" states that it averaged
    plain = _search(X, y, False, sfm.make_scorers(["classif.acc", "fairness.eod"]))
    with pytest.raises(ValueError, match="counts=True"):
        sfm.constrained_refit("classif.acc", {"fairness.eod": 0.05}, aggregate="pooled").table(plain.cv_results_)
    auto = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.05}).table(plain.cv_results_)
    assert (auto["fairness.eod aggregate"] == "mean").all()


def test_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="signed"):
        sfm.constrained_refit("classif.acc", {sfm.msr("fairness.tpr", operation="diff"): 0.1})
    with pytest.raises(ValueError, match="aggregate="):
        sfm.constrained_refit("classif.acc", {"fairness.eod": 0.1}, aggregate="median")
    with pytest.raises(ValueError, match="subject_to"):
        sfm.constrained_refit("classif.acc", {})
    rule = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.1})
    with pytest.raises(KeyError, match=r"make_scorers"):
        rule({"params": [{}], "split0_test_classif.acc": np.array([0.9]), "mean_test_classif.acc": np.array([0.9])})


def _cv_results(acc, eod, ratio):
    """A cv_results_-like dict: folds in columns, minimised measures negated as scorers do."""
    out = {"params": [{"i": i} for i in range(acc.shape[0])]}
    for k in range(acc.shape[1]):
        out[f"split{k}_test_classif.acc"] = acc[:, k]
        out[f"split{k}_test_fairness.eod"] = -eod[:, k]
        out[f"split{k}_test_fairness.tpr_ratio"] = ratio[:, k]
    return out


values = st.floats(0, 1, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(1, 12), st.integers(1, 5), st.floats(0.01, 0.5), st.floats(0.5, 0.99))
def test_chosen_is_feasible_and_none_feasible_is_better(data, n, k, eod_bound, ratio_bound):
    acc, eod, ratio = (
        np.array(data.draw(st.lists(st.lists(values, min_size=k, max_size=k), min_size=n, max_size=n)))
        for _ in range(3)
    )
    cv = _cv_results(acc, eod, ratio)
    ratio_m = sfm.msr("fairness.tpr", operation="ratio", key="fairness.tpr_ratio")
    bounds = {"fairness.eod": eod_bound, ratio_m: ratio_bound}
    rule = sfm.constrained_refit("classif.acc", bounds)
    feasible = (eod.mean(1) <= eod_bound) & (ratio.mean(1) >= ratio_bound)
    if not feasible.any():
        with pytest.raises(NoFeasibleCandidateError):
            rule(cv)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InfeasibleConstraintWarning)
            assert 0 <= sfm.constrained_refit("classif.acc", bounds, if_none="fairest")(cv) < n
        return
    best = rule(cv)
    assert feasible[best]
    assert not (acc.mean(1)[feasible] > acc.mean(1)[best]).any()
    front = rule.front(cv)
    assert front["chosen"].sum() == 1 and front.index[front["chosen"]][0] == best


def test_sample_weight_and_randomized_search(adult):
    X, y = adult
    w = np.where(X["sex"] == "Female", 2.0, 1.0)
    rule = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.09}, check="bound", prob=0.6)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = sfm.make_scorers(["classif.acc", "fairness.eod"], counts=True).set_score_request(sample_weight=True)
        tree = _tree()
        tree.steps[-1][1].set_fit_request(sample_weight=True)
        search = RandomizedSearchCV(
            tree,
            {"decisiontreeclassifier__max_depth": DEPTHS},
            n_iter=3,
            random_state=0,
            scoring=scorer,
            refit=rule,
            cv=StratifiedKFold(3, shuffle=True, random_state=0),
        ).fit(X, y, sensitive_features=X["sex"], sample_weight=w)
    row = rule.table(search.cv_results_).loc[search.best_index_]
    assert row["feasible"] and row["fairness.eod checked"] <= 0.09
    stats = sfm.scoring.pooled_counts(search.cv_results_, "fairness.eod")[search.best_index_]
    assert np.isclose(stats.counts.sum(), w.sum()) and np.isclose(stats.rows.sum(), len(y))


def test_threshold_rule_matches_a_brute_force_scan():
    rng = np.random.default_rng(1)
    a = rng.choice(["F", "M"], 3000)
    y = rng.integers(0, 2, 3000)
    score = np.clip(0.35 * y + 0.08 * (a == "M") + rng.uniform(0, 0.6, 3000), 0, 1)
    grid = np.linspace(0.05, 0.95, 19)
    pick = sfm.constrained_threshold(
        "classif.acc", {"fairness.eod": 0.06}, y, score, sensitive_features=a, thresholds=grid
    )
    acc = [sfm.msr("classif.acc")(y, (score >= t).astype(int)) for t in grid]
    eod = [sfm.msr("fairness.eod")(y, (score >= t).astype(int), sensitive_features=a) for t in grid]
    ok = np.array(eod) <= 0.06
    assert pick.threshold == grid[ok][np.argmax(np.array(acc)[ok])]
    assert pick.front["chosen"].sum() == 1
    with pytest.raises(NoFeasibleCandidateError, match="threshold"):
        sfm.constrained_threshold(
            "classif.acc", {"fairness.eod": 1e-9}, y, score, sensitive_features=a, thresholds=grid
        )


@pytest.mark.slow
def test_the_issues_case_on_all_of_adult():
    """All of Adult, one-hot features, 5 folds: the constraint scorer picks a depth whose EOD breaks 0.05."""
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    X, y, _ = sfm.datasets.load_adult(return_X_y_A=True)
    enc = make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore", min_frequency=20), make_column_selector(dtype_include="category")),
        (StandardScaler(), make_column_selector(dtype_include="number")),
    )
    tree = make_pipeline(sfm.DropColumns(["sex", "race"]), enc, DecisionTreeClassifier(random_state=0))
    scoring = sfm.make_scorers(["classif.acc", "fairness.eod", "fairness.acc_eod=.05"], counts=True)
    with sklearn.config_context(enable_metadata_routing=True):
        old = GridSearchCV(
            tree, {"decisiontreeclassifier__max_depth": DEPTHS}, scoring=scoring, refit="fairness.acc_eod=.05", cv=5
        ).fit(X, y, sensitive_features=X["sex"])
    assert -old.cv_results_["mean_test_fairness.eod"][old.best_index_] > 0.05  # the silent violation
    rule = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.05})
    with pytest.raises(NoFeasibleCandidateError, match="no candidate meets every bound"):
        rule(old.cv_results_)
    looser = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.075})
    table = looser.table(old.cv_results_)
    best = looser(old.cv_results_)
    assert table.loc[best, "fairness.eod"] <= 0.075
    assert table.loc[best, "classif.acc"] == table.loc[table["fairness.eod"] <= 0.075, "classif.acc"].max()


# -- failures inside a search with a dict-returning scorer ---------------------------------
class _FailsToPredict(DecisionTreeClassifier):
    """A tree whose predict raises when max_depth is 1 (a scoring failure, not a fit failure)."""

    def predict(self, X, check_input=True):
        if self.max_depth == 1:
            raise RuntimeError("cannot predict with depth 1")
        return super().predict(X, check_input=check_input)


def _small(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.normal(size=n), "sex": rng.choice(["F", "M"], n)})
    return X, (X["x"] + rng.normal(size=n) > 0).astype(int)


@pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite")  # scikit-learn on the NaN fold
def test_a_fold_whose_scoring_fails_is_nan_with_a_warning_or_raises():
    X, y = _small()
    model = make_pipeline(sfm.DropColumns("sex"), _FailsToPredict(random_state=0))
    grid = {"_failstopredict__max_depth": [1, 3]}
    rule = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.5})
    scoring = sfm.make_scorers(["classif.acc", "fairness.eod"], sensitive="sex", counts=True)
    with pytest.warns(UserWarning, match="scoring failed on this fold .RuntimeError: cannot predict"):
        search = GridSearchCV(model, grid, cv=3, scoring=scoring, refit=rule).fit(X, y)
    cv = search.cv_results_
    assert np.isnan(cv["mean_test_classif.acc"][0]) and np.isfinite(cv["mean_test_classif.acc"][1])
    table = rule.table(cv)
    assert np.isnan(table.loc[0, "fairness.eod"]) and not table.loc[0, "feasible"]  # pooled over no fold: undefined
    assert search.best_index_ == 1
    raising = sfm.make_scorers(["classif.acc", "fairness.eod"], sensitive="sex", counts=True, error_score="raise")
    with pytest.raises(RuntimeError, match="cannot predict"):
        GridSearchCV(model, grid, cv=3, scoring=raising, refit=False, error_score="raise").fit(X, y)
    with pytest.raises(ValueError, match="error_score="):
        sfm.make_scorers(["classif.acc"], error_score="nan")


def test_a_fold_missing_a_group_names_the_fix_or_is_counted_with_declared_groups():
    from sklearn.model_selection import KFold

    X, y = _small()
    X.loc[250:, "sex"] = "X"  # only the last of three unshuffled folds holds group X
    model = make_pipeline(sfm.DropColumns("sex"), DecisionTreeClassifier(max_depth=2, random_state=0))
    rule = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.9})
    scoring = sfm.make_scorers(["classif.acc", "fairness.eod"], sensitive="sex", counts=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a later fold lacks a group of the first one: scikit-learn asks for the group's keys
        with pytest.raises(KeyError, match="no sample of group 'X'.*groups="):
            GridSearchCV(model, {}, cv=KFold(3), scoring=scoring, refit=rule).fit(X[::-1], y[::-1])
        # the first fold lacks it: scikit-learn drops the group's counts of the other folds; the totals tell
        with pytest.raises(ValueError, match="cannot be pooled. Stratify"):
            GridSearchCV(model, {}, cv=KFold(3), scoring=scoring, refit=rule).fit(X, y)
        declared = sfm.make_scorers(
            ["classif.acc", "fairness.eod"], sensitive="sex", counts=True, groups=["F", "M", "X"]
        )
        search = GridSearchCV(model, {}, cv=KFold(3), scoring=declared, refit=rule).fit(X, y)
    stats = sfm.scoring.pooled_counts(search.cv_results_, "fairness.eod")[0]
    assert stats.groups.tolist() == ["F", "M", "X"] and stats.rows.tolist()[2] == 50 and stats.counts.sum() == 300


def test_halving_searches_cannot_take_the_scorer_and_the_rule_keeps_to_the_last_round():
    """scikit-learn 1.9's halving searches rank by one mean_test_score, so make_scorers' dict stops them.

    The rule itself, given cv_results_ with an ``iter`` column, chooses among the last round only.
    """
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingGridSearchCV

    X, y = _small(600)
    model = make_pipeline(sfm.DropColumns("sex"), DecisionTreeClassifier(random_state=0))
    scoring = sfm.make_scorers(["classif.acc", "fairness.eod"], sensitive="sex", counts=True)
    with pytest.raises(KeyError, match="mean_test_score"):
        HalvingGridSearchCV(
            model, {"decisiontreeclassifier__max_depth": [1, 2, 4, 8]}, cv=3, factor=2, scoring=scoring, refit=False
        ).fit(X, y)
    acc = np.array([[0.95, 0.95], [0.80, 0.82], [0.85, 0.86], [0.84, 0.83]])
    eod = np.full_like(acc, 0.01)
    cv = _cv_results(acc, eod, np.ones_like(acc)) | {"iter": np.array([0, 0, 1, 1])}
    rule = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.05}, aggregate="mean")
    assert rule(cv) == 2  # candidate 0 is more accurate, but it did not reach the last round
    assert rule.table(cv).loc[0, "reason"] == "not in the last round"
