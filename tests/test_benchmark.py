import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier

import skfair_measures as sfm
from skfair_measures.benchmark import BenchmarkResult, MissingGroupWarning, benchmark
from skfair_measures.groups import SmallGroupWarning
from skfair_measures.results import Result

# the toy data has a group of about 30 rows (7 to 10 per test fold): its small-group warning is tested once, at the end
pytestmark = pytest.mark.filterwarnings("ignore::skfair_measures.groups.SmallGroupWarning")

MEASURES = ["fairness.tpr", "fairness.eod", "classif.acc"]


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    n = 300
    X = rng.normal(size=(n, 3))
    A = rng.choice(["a", "b", "c"], size=n, p=[0.45, 0.45, 0.10])
    y = (X[:, 0] + (A == "a") + rng.normal(size=n) > 0.5).astype(int)
    return X, y, A


def _learners():
    return {
        "logreg": LogisticRegression(),
        "tree": DecisionTreeClassifier(max_depth=3, random_state=0),
    }


def _no_times(scores):
    return scores.drop(columns=["fit_time", "score_time"])


def test_seed_004_adult_two_learners_three_folds():
    """The mlr3fairness vignette's benchmark: two learners, 3-fold CV, four measures on Adult."""
    X, y, _ = sfm.datasets.load_adult(return_X_y_A=True)
    X, y = X.iloc[:1000], y.iloc[:1000]

    def prep():
        cats = make_column_selector(dtype_include="category")
        return make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cats), remainder="passthrough")

    learners = {
        "ranger": make_pipeline(prep(), RandomForestClassifier(n_estimators=50, random_state=0)),
        "rpart": make_pipeline(prep(), DecisionTreeClassifier(max_depth=5, random_state=0)),
    }
    measures = ["fairness.tpr", "fairness.npv", "fairness.acc", "classif.acc"]
    bmr = benchmark(learners, X, y, sensitive="sex", cv=3, measures=measures, random_state=1)

    tab = bmr.aggregate(measures)
    assert tab.shape == (2, 6)
    assert tab.columns.tolist() == ["learner", "iters", *measures]
    assert tab["learner"].tolist() == ["ranger", "rpart"]
    assert (tab["iters"] == 3).all()
    assert tab["classif.acc"].between(0.75, 0.95).all()
    for key in measures[:3]:
        assert tab[key].between(0.0, 0.5).all(), key
    # the tidy table: learner x fold x measure, with times
    assert len(bmr.scores) == 2 * 3 * 4
    assert {"learner", "fold", "measure", "value", "fit_time", "score_time"} <= set(bmr.scores)
    assert (bmr.scores["fit_time"] > 0).all()
    # every row is predicted exactly once per learner, and sex is in every test fold
    for name in bmr.learners:
        oof = bmr.oof_predictions(name)
        assert oof["row"].tolist() == list(range(1000))
        assert oof.groupby("fold")["sex"].nunique().eq(2).all()
    assert bmr.missing_groups.empty


class _RecordColumns(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        self.columns_ = list(X.columns)
        if "sex" in X.columns:
            raise AssertionError("the model saw the sensitive column")
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.where(X["x"].to_numpy() > 0, self.classes_[-1], self.classes_[0])


def test_column_mode_drops_sensitive_and_matches_array_mode(toy):
    X, y, A = toy
    df = pd.DataFrame({"x": X[:, 0], "z": X[:, 1], "sex": A})
    col = benchmark([_RecordColumns()], df, y, sensitive="sex", measures=MEASURES, random_state=0)
    arr = benchmark([_RecordColumns()], df.drop(columns="sex"), y, A, measures=MEASURES, random_state=0)
    pd.testing.assert_frame_equal(_no_times(col.scores), _no_times(arr.scores))
    assert col.learners == ["_RecordColumns"]
    # without dropping, the model sees the column (here: it refuses it)
    with pytest.raises(RuntimeError, match="_RecordColumns.*fold 0.*saw the sensitive column"):
        benchmark([_RecordColumns()], df, y, sensitive="sex", measures=MEASURES, drop_sensitive=False)


def test_list_of_estimators_named_by_class():
    rng = np.random.default_rng(1)
    X, A, y = rng.normal(size=(60, 2)), rng.choice(["a", "b"], 60), rng.integers(0, 2, 60)
    ests = [LogisticRegression(), LogisticRegression(C=0.1), make_pipeline(DummyClassifier())]
    bmr = benchmark(ests, X, y, A, measures=["classif.acc"], cv=2, random_state=0)
    assert bmr.learners == ["LogisticRegression", "LogisticRegression_2", "DummyClassifier"]
    assert isinstance(bmr, BenchmarkResult)
    assert "3 learner(s)" in repr(bmr)


def test_folds_stratified_by_label_and_group(toy):
    X, y, A = toy
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingGroupWarning)
        bmr = benchmark(_learners(), X, y, A, measures=MEASURES, cv=5, random_state=0)
    oof = bmr.oof_predictions("tree")
    counts = pd.crosstab(oof["fold"], [oof["sensitive_feature_0"], oof["y_true"]])
    assert (counts > 0).all().all()
    assert np.isfinite(bmr.aggregate()["fairness.tpr"]).all()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
def test_missing_group_is_reported(toy):
    X, y, A = toy
    A = A.astype(object)
    A[:] = "a"
    A[100:200] = "b"
    A[:2] = "rare"  # 2 samples cannot cover 3 test folds
    with pytest.warns(MissingGroupWarning, match=r"fold \d has no sample of group\(s\) \['rare'\]"):
        bmr = benchmark(_learners(), X, y, A, measures=MEASURES, cv=3, random_state=0)
    assert bmr.missing_groups["group"].eq("rare").all()
    assert len(bmr.missing_groups) == 1
    fold = int(bmr.missing_groups["fold"].iloc[0])
    s = bmr.scores
    bad = s[(s["fold"] == fold) & (s["measure"] == "fairness.tpr")]
    assert bad["value"].isna().all()
    agg = bmr.aggregate()
    assert agg["fairness.tpr"].isna().all()  # an undefined fold is not averaged away
    assert agg["classif.acc"].notna().all()


def test_worker_warnings_name_learner_and_fold(toy):
    X, y, A = toy
    A = A.copy()
    A[:] = "a"
    A[:30] = "b"
    y = y.copy()
    y[:30] = 0  # group b has no positives: tpr undefined there
    with pytest.warns(sfm.UndefinedGroupWarning, match=r"^\[logreg, fold \d\] tpr is undefined"):
        benchmark(_learners(), X, y, A, measures=["fairness.tpr"], cv=3, random_state=0)


def test_aggregate_sd_pooled_and_errors(toy):
    X, y, A = toy
    bmr = benchmark(_learners(), X, y, A, measures=MEASURES, cv=3, random_state=0)
    agg = bmr.aggregate(["classif.acc"], sd=True)
    assert agg.columns.tolist() == ["learner", "iters", "classif.acc", "classif.acc_sd"]
    per_fold = bmr.scores.query("learner == 'tree' and measure == 'classif.acc'")["value"]
    assert agg.loc[1, "classif.acc"] == pytest.approx(per_fold.mean())
    assert agg.loc[1, "classif.acc_sd"] == pytest.approx(per_fold.std(ddof=1))
    pooled = bmr.pooled()
    oof = bmr.oof_predictions("logreg")
    assert pooled.loc[0, "classif.acc"] == pytest.approx((oof.y_true == oof.y_pred).mean())
    assert pooled.loc[0, "fairness.tpr"] == pytest.approx(
        sfm.msr("fairness.tpr")(oof.y_true, oof.y_pred, sensitive_features=oof.sensitive_feature_0)
    )
    with pytest.raises(KeyError, match="were not benchmarked"):
        bmr.aggregate(["fairness.fpr"])
    with pytest.raises(KeyError, match="no learner 'svm'"):
        bmr.oof_predictions("svm")
    with pytest.raises(ValueError, match="pass one of them"):
        benchmark(_learners(), pd.DataFrame(X), y, A, sensitive=0, measures=MEASURES)
    with pytest.raises(ValueError, match=r"compare groups.*sensitive"):
        benchmark(_learners(), X, y, measures=MEASURES)
    with pytest.raises(KeyError, match=r"\['sex'\] are not among X's columns"):
        benchmark(_learners(), pd.DataFrame(X), y, sensitive="sex", measures=MEASURES)


def test_custom_splitter_and_progress(toy, capsys):
    X, y, A = toy
    bmr = benchmark(_learners(), X, y, A, measures=MEASURES, cv=KFold(4), progress=True)
    assert bmr.n_folds == 4
    assert "benchmark" in capsys.readouterr().err  # tqdm's bar on stderr


def test_dask_backend_gives_the_serial_numbers(toy):
    distributed = pytest.importorskip("dask.distributed")
    X, y, A = toy
    serial = benchmark(_learners(), X, y, A, measures=MEASURES, cv=3, random_state=0)
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster),
        joblib.parallel_backend("dask"),
    ):
        dist = benchmark(_learners(), X, y, A, measures=MEASURES, cv=3, random_state=0)
    pd.testing.assert_frame_equal(_no_times(serial.scores), _no_times(dist.scores))
    pd.testing.assert_frame_equal(serial.predictions, dist.predictions)


class _FakePosterior(Result):
    key = "fairness.tpr"
    value = float("nan")
    kind = "posterior"

    def __init__(self, draws):
        self._draws = np.asarray(draws)

    @property
    def draws(self):
        return self._draws


def test_prob_fairer_compares_posterior_draws(toy, monkeypatch):
    X, y, A = toy
    bmr = benchmark(_learners(), X, y, A, measures=MEASURES, cv=3, random_state=0)
    calls = []

    def fake_posterior(measure, y_true, y_score, *, sensitive_features, method, random_state):
        calls.append((method, len(y_true), len(sensitive_features)))
        rng = np.random.default_rng(random_state)
        # the benchmark passes the scored predictions as 0/1 scores;
        # logreg's measure sits around 0.1, the tree's around 0.3
        logreg = bmr.oof_predictions("logreg")["y_pred"].to_numpy(dtype=float)
        center = 0.1 if np.array_equal(y_score, logreg) else 0.3
        return _FakePosterior(rng.normal(center, 0.05, size=4000))

    monkeypatch.setattr(pytest.importorskip("skfair_measures.bayes"), "posterior", fake_posterior)
    p = bmr.prob_fairer("fairness.tpr", "logreg", "tree", method="bb", random_state=0)
    assert p > 0.99
    assert bmr.prob_fairer("fairness.tpr", "tree", "logreg") < 0.01
    assert bmr.prob_fairer("fairness.tpr", "logreg", "tree", random_state=0) == p
    assert calls[0] == ("bb", 300, 300)


def test_prob_fairer_with_beta_binomial_posteriors(toy):
    bayes = pytest.importorskip("skfair_measures.bayes")
    X, y, A = toy
    learners = {**_learners(), "dummy": DummyClassifier(strategy="most_frequent")}
    bmr = benchmark(learners, np.c_[X, A == "a"], y, A, measures=MEASURES, cv=3, random_state=0)
    post = bmr.posterior("fairness.tpr", "logreg", random_state=0)
    assert isinstance(post, bayes.MeasurePosterior)
    assert post.method == "bb" and post.n_draws == 4000
    # Beta-Binomial on the very predictions the benchmark scored (labeled counts match)
    oof = bmr.oof_predictions("logreg")
    assert post.counts.sum() == len(oof)
    assert post.counts.to_dict() == oof["sensitive_feature_0"].value_counts().to_dict()
    p_ab = bmr.prob_fairer("fairness.tpr", "logreg", "tree", random_state=3)
    p_ba = bmr.prob_fairer("fairness.tpr", "tree", "logreg", random_state=3)
    assert 0.0 < p_ab < 1.0
    assert p_ab + p_ba == pytest.approx(1.0)  # ties (none here) would count one half each
    # a constant predictor has TPR 1 in every group: its posterior disparity is tiny
    assert bmr.prob_fairer("fairness.tpr", "dummy", "logreg") > 0.9
    with pytest.raises(ValueError, match="unlabeled data"):
        bmr.posterior("fairness.tpr", "logreg", method="bc")


def test_prob_fairer_reads_the_measures_ideal_value(toy, monkeypatch):
    """A ratio is fairer near 1 and a signed difference near 0: the measure says so, not its name."""
    X, y, A = toy
    ratio = sfm.msr("fairness.tpr", operation="ratio")
    signed = sfm.msr("fairness.tpr", operation="diff")
    bmr = benchmark(_learners(), X, y, A, measures=[ratio, signed, "classif.acc"], cv=3, random_state=0)
    centres = {}

    def fake_posterior(measure, y_true, y_score, *, sensitive_features, method, random_state):
        rng = np.random.default_rng(random_state)
        logreg = bmr.oof_predictions("logreg")["y_pred"].to_numpy(dtype=float)
        return _FakePosterior(rng.normal(centres["logreg" if np.array_equal(y_score, logreg) else "tree"], 0.02, 4000))

    monkeypatch.setattr(pytest.importorskip("skfair_measures.bayes"), "posterior", fake_posterior)
    centres.update(logreg=0.97, tree=0.80)  # ratios: logreg is nearer the ideal 1
    assert bmr.prob_fairer(ratio.key, "logreg", "tree") > 0.99
    centres.update(logreg=-0.30, tree=0.10)  # signed differences: the tree is nearer 0, whatever the sign
    assert bmr.prob_fairer(signed.key, "logreg", "tree") < 0.01


# -- choosing a learner under a bound, and its Pareto front ----------------------------
@pytest.fixture(scope="module")
def adult_small():
    X, y, _ = sfm.datasets.load_adult(return_X_y_A=True)
    idx = np.random.default_rng(0).choice(len(X), 4000, replace=False)
    return X.iloc[idx].reset_index(drop=True), y.iloc[idx].reset_index(drop=True)


def _pipe(final):
    from sklearn.pipeline import Pipeline

    enc = make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore", min_frequency=20), make_column_selector(dtype_include="category")),
        remainder="passthrough",
    )
    return Pipeline([("drop", sfm.DropColumns(["sex", "race"])), ("enc", enc), ("clf", final)])


_FINALS = {
    "dummy": DummyClassifier(),
    "tree2": DecisionTreeClassifier(max_depth=2, random_state=0),
    "tree4": DecisionTreeClassifier(max_depth=4, random_state=0),
    "tree8": DecisionTreeClassifier(max_depth=8, random_state=0),
}


def test_pareto_of_a_benchmark_is_the_search_front_on_the_same_folds(adult_small):
    """The learners of a benchmark and the candidates of a search on the same folds give the same front."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    X, y = adult_small
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    keys = ["classif.acc", "fairness.eod"]
    bmr = benchmark(
        {k: _pipe(f) for k, f in _FINALS.items()}, X, y, measures=keys, sensitive="sex", cv=cv, drop_sensitive=False
    )
    rule = sfm.constrained_refit("classif.acc", {"fairness.eod": 0.05})
    search = GridSearchCV(
        _pipe(DummyClassifier()),
        {"clf": list(_FINALS.values())},
        cv=cv,
        refit=rule,
        scoring=sfm.make_scorers(keys, sensitive="sex", counts=True),
    ).fit(X, y)
    choice = bmr.choose("classif.acc", {"fairness.eod": 0.05})
    front = bmr.pareto("classif.acc", {"fairness.eod": 0.05})
    expected = rule.front(search.cv_results_)
    assert choice.index == search.best_index_ and choice.learner == list(_FINALS)[search.best_index_]
    pd.testing.assert_frame_equal(front.drop(columns="learner"), expected.drop(columns="params"))
    assert front["learner"].tolist() == [list(_FINALS)[i] for i in expected.index]
    assert front.attrs == expected.attrs and front["chosen"].sum() == 1
    # pooled: the measures on each learner's out-of-fold predictions; the chosen one is the best that meets the bound
    pooled = bmr.pooled(keys).set_index("learner")
    np.testing.assert_allclose(choice.table["fairness.eod"], pooled.loc[bmr.learners, "fairness.eod"])
    ok = choice.table["fairness.eod"] <= 0.05
    assert choice.table.loc[choice.index, "classif.acc"] == choice.table.loc[ok, "classif.acc"].max()
    assert choice.learner != "dummy"  # the always-fair baseline is not the most accurate fair learner
    # mean: the fold means of aggregate()
    mean = bmr.choose("classif.acc", {"fairness.eod": 0.05}, aggregate="mean").table
    agg = bmr.aggregate(keys).set_index("learner")
    np.testing.assert_allclose(mean["fairness.eod"], agg.loc[bmr.learners, "fairness.eod"])
    assert (mean["fairness.eod aggregate"] == "mean").all()
    # the plot of selection draws it
    import matplotlib

    matplotlib.use("Agg")
    from skfair_measures import plots

    ax = plots.pareto_front(choice.table, choice.front, labels=choice.table["learner"])
    assert ax.get_xlabel() == "fairness.eod (lower is better), bound 0.05"
    plots.plt.close(ax.figure)  # no figure left open for the tests after this one
    with pytest.raises(KeyError, match="were not benchmarked"):
        bmr.pareto("classif.acc", {"fairness.tpr": 0.05})
    with pytest.raises(sfm.NoFeasibleCandidateError, match="no learner meets every bound: the fairest is learner 't"):
        bmr.choose("classif.acc", {"fairness.eod": 0.05, "classif.acc": 0.99})


def test_choose_and_pooled_use_the_benchmarks_weights(toy):
    X, y, A = toy
    w = np.where(A == "c", 3.0, 1.0)
    bmr = benchmark(_learners(), X, y, A, measures=MEASURES, cv=3, random_state=0, sample_weight=w)
    choice = bmr.choose("classif.acc", {"fairness.eod": 1.0})
    for name in bmr.learners:
        p = bmr.oof_predictions(name)
        weighted = sfm.msr("fairness.eod")(
            p["y_true"], p["y_pred"], sensitive_features=p["sensitive_feature_0"], sample_weight=w[p["row"]]
        )
        assert np.isclose(choice.table.set_index("learner").loc[name, "fairness.eod"], weighted)
        assert np.isclose(bmr.pooled().set_index("learner").loc[name, "fairness.eod"], weighted)


def test_small_groups_in_the_test_folds_warn_with_the_fold_means_without_them():
    """COMPAS race: 'Asian' (31 rows) and 'Native American' (11) have 3 to 11 rows per test fold."""
    X, y, _ = sfm.datasets.load_compas(return_X_y_A=True)
    X = X[["race", "age", "priors_count"]]
    models = {"logreg": make_pipeline(sfm.DropColumns(["race"]), LogisticRegression())}
    with pytest.warns(SmallGroupWarning, match=r"'Asian' \(10\), 'Native American' \(3\)") as rec:
        bench = benchmark(
            models,
            X,
            y,
            sensitive="race",
            measures=["fairness.tpr", "classif.acc"],
            cv=3,
            random_state=1,
            drop_sensitive=False,
        )
    m30 = sfm.msr("fairness.tpr", min_group_size=30)
    without = benchmark(models, X, y, sensitive="race", cv=3, random_state=1, drop_sensitive=False, measures=[m30])
    (msg,) = [str(w.message) for w in rec if issubclass(w.category, SmallGroupWarning)]
    with_mean = bench.aggregate()["fairness.tpr"].iloc[0]
    without_mean = without.aggregate()[m30.key].iloc[0]
    assert f"fairness.tpr {with_mean:.4f} with them, {without_mean:.4f} without (logreg)" in msg
    assert with_mean > without_mean + 0.1  # the small groups move the mean a lot
    assert "classif.acc" not in msg and "min_group_size=30" in msg
