"""cross_validate_fairness: folds, the parent's mean and sd, the full group set in every fold."""

import json

import joblib
import mlflow
import numpy as np
import pandas as pd
import pytest
import sklearn
from _helpers import Sampled, artifacts, metrics, params, read_back, tags
from mlflow.tracking import MlflowClient
from skfair_measures_mlflow import cross_validate_fairness
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.pipeline import make_pipeline

import skfair_measures as sfm
from skfair_measures import bayes
from skfair_measures.benchmark import fold_splits
from skfair_measures.groups import SmallGroupWarning

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*noload.*"),
    # sex x race has groups of 17 to 23 rows per fold: the small-group warning is tested once, at the end
    pytest.mark.filterwarnings("ignore::skfair_measures.groups.SmallGroupWarning"),
]


def test_folds_and_the_parent_mean_and_sd(tracking, data):
    X, y = data
    pipe = make_pipeline(sfm.DropColumns("sex"), LogisticRegression())
    Xc = X[["x1", "x2", "sex"]]
    keys = ["fairness.tpr", "classif.acc"]
    res = cross_validate_fairness(pipe, Xc, y, measures=keys, sensitive="sex", cv=3, run_name="cv", random_state=0)
    assert mlflow.active_run() is None  # the run it started is closed
    assert MlflowClient().get_run(res.run_id).info.status == "FINISHED"
    parent = metrics(res.run_id)
    for key in keys:  # the overview shows the mean at the plain key, and the sd
        assert parent[key] == pytest.approx(res.scores[key].mean())
        assert parent[f"{key}.sd"] == pytest.approx(res.scores[key].std(ddof=0))
    assert params(res.run_id)["cv/n_splits"] == "3"
    assert tags(res.run_id)["skfair.sensitive"] == "sex" and tags(res.run_id)["skfair.groups"] == '["F", "M"]'
    path = mlflow.artifacts.download_artifacts(run_id=res.run_id, artifact_path="fairness/cv_scores.csv")
    table = pd.read_csv(path, dtype={"fold": str})
    assert table["fold"].tolist() == ["0", "1", "2", "mean", "sd"]
    logged_tables = json.loads(tags(res.run_id).get("mlflow.loggedArtifacts", "[]"))
    assert [t["path"] for t in logged_tables if t["type"] == "table"] == []  # the folds are in the child runs
    assert table["fairness.tpr"].iloc[:3].tolist() == pytest.approx(res.scores["fairness.tpr"].tolist())
    children = mlflow.search_runs(filter_string=f"tags.mlflow.parentRunId = '{res.run_id}'")
    assert sorted(children["run_id"]) == sorted(res.fold_run_ids) and len(children) == 3
    for one in res.logged:
        read_back(one)
    for i, rid in enumerate(res.fold_run_ids):
        assert metrics(rid)["fairness.tpr"] == pytest.approx(res.folds[i]["fairness.tpr"].value)
        assert "fairness/groupwise.json" in artifacts(rid)
    codes = Xc.sex.map({"F": 0, "M": 1}).to_numpy()
    for i, (tr, te) in enumerate(fold_splits(3, Xc, y, sensitive_codes=codes, random_state=0)):  # as benchmark
        fitted = sklearn.clone(pipe).fit(Xc.iloc[tr], y.iloc[tr])
        v = sfm.msr("fairness.tpr")(y.iloc[te], fitted.predict(Xc.iloc[te]), sensitive_features=Xc.sex.iloc[te])
        assert res.scores.loc[i, "fairness.tpr"] == pytest.approx(v)


def test_a_fold_missing_a_group_declares_it_and_says_why(tracking, data):
    X, y = data
    # GroupKFold on race: every test fold misses the races of the other folds
    with pytest.warns(sfm.UndefinedGroupWarning, match="no positives in y_true"):
        res = cross_validate_fairness(
            LogisticRegression(),
            X[["x1", "x2"]],
            y,
            measures=["fairness.tpr"],
            sensitive_features=X["race"],
            cv=GroupKFold(3),
            groups=X["race"],
            artifacts=False,
        )
    assert res.groups.tolist() == ["a/b", "c=d", "e"]
    for fold in res.folds:
        tpr = fold["fairness.tpr"]
        assert tpr.by_group.index.tolist() == ["a/b", "c=d", "e"]  # the full group set, absent ones NaN
        assert tpr.by_group.isna().sum() == 2 and np.isnan(tpr.value) and tpr.reason
    assert np.isnan(metrics(res.run_id)["fairness.tpr"])
    assert "undefined because 3 fold(s)" in tags(res.run_id)["fairness.tpr.undefined"]


def test_parallel_folds_match_serial_ones(tracking, data):
    X, y = data
    kw = dict(
        measures=["fairness.tpr", "fairness.eod", "classif.acc"],
        sensitive_features=X["sex"],
        cv=3,
        random_state=0,
        artifacts=False,
    )
    serial = cross_validate_fairness(LogisticRegression(), X[["x1", "x2"]], y, **kw)
    with joblib.parallel_backend("threading"):  # the same code path as worker processes, without their start-up
        parallel = cross_validate_fairness(LogisticRegression(), X[["x1", "x2"]], y, n_jobs=2, **kw)
    assert parallel.scores.equals(serial.scores)
    for i, rid in enumerate(parallel.fold_run_ids):  # logged in fold order, from this process
        assert metrics(rid)["fairness.eod"] == pytest.approx(serial.scores.loc[i, "fairness.eod"])
        assert MlflowClient().get_run(rid).data.tags["skfair.fold"] == str(i)


def test_without_fold_runs_the_folds_are_steps_under_fold(tracking, data):
    X, y = data
    with mlflow.start_run() as run:
        res = cross_validate_fairness(
            LogisticRegression(),
            X[["x1", "x2"]],
            y,
            measures=["fairness.fpr"],
            sensitive_features=X["race"],
            cv=2,
            fold_runs=False,
            artifacts=False,
        )
    assert res.run_id == run.info.run_id and res.fold_run_ids == []
    hist = sorted(MlflowClient().get_metric_history(run.info.run_id, "fold/fairness.fpr"), key=lambda h: h.step)
    assert [(h.step, h.value) for h in hist] == [
        (0, pytest.approx(res.scores.loc[0, "fairness.fpr"])),
        (1, pytest.approx(res.scores.loc[1, "fairness.fpr"])),
    ]
    assert metrics(run.info.run_id)["fairness.fpr"] == pytest.approx(res.mean["fairness.fpr"])
    with pytest.raises(ValueError, match="sensitive_features is required"):
        cross_validate_fairness(LogisticRegression(), X, y, measures=["fairness.fpr"], cv=2)


def test_posteriors_per_fold_in_one_joint_call(tracking, data, monkeypatch):
    X, y = data
    seen = []

    def joint(measures, y_true, y_score, *, sensitive_features, **kwargs):
        seen.append(([m.key for m in measures], np.asarray(y_score)))
        rng = np.random.default_rng(len(seen))
        return {m.key: Sampled(m, rng.beta(2, 20, 400)) for m in measures}

    monkeypatch.setattr(bayes, "posteriors", joint)
    res = cross_validate_fairness(
        LogisticRegression(),
        X[["x1", "x2"]],
        y,
        measures=["fairness.tpr", "fairness.fpr", "classif.acc"],
        sensitive_features=X["sex"],
        cv=2,
        posterior={"method": "bb"},
    )
    assert [keys for keys, _ in seen] == [["fairness.tpr", "fairness.fpr"]] * 2  # one call per fold
    assert all(((s > 0) & (s < 1)).all() for _, s in seen)  # probabilities, not labels
    for i, rid in enumerate(res.fold_run_ids):
        assert metrics(rid)["fairness.tpr.posterior/lower"] == pytest.approx(
            res.posteriors[i]["fairness.tpr"].interval(0.95)[0]
        )
        assert "fairness/fairness.tpr/posterior_density.png" in artifacts(rid)


def test_the_file_store_accepts_the_cv_runs(file_store, data):
    X, y = data
    res = cross_validate_fairness(
        LogisticRegression(),
        X[["x1", "x2"]],
        y,
        measures=["fairness.tpr", "fairness.eod", "classif.acc"],
        sensitive_features=X[["sex", "race"]],
        cv=2,
    )
    assert len(res.logged) == 3
    for one in res.logged:
        read_back(one)


@pytest.fixture
def autolog():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLflow's post-training metric code warns on sklearn 1.9
        mlflow.sklearn.autolog(
            log_models=False,
            log_datasets=False,
            log_input_examples=False,
            log_model_signatures=False,
            log_post_training_metrics=False,
            silent=True,
        )
        try:
            yield
        finally:
            mlflow.sklearn.autolog(disable=True)


@pytest.mark.parametrize("mode", ["routing", "column"])
def test_autologged_grid_search_records_fairness_scorers(tracking, data, autolog, mode):
    import pandas as pd
    from sklearn.model_selection import GridSearchCV

    X, y = data
    keys = ["fairness.tpr", "classif.acc"]
    if mode == "routing":
        est, Xf, grid = LogisticRegression(), X[["x1", "x2"]], {"C": [0.1, 1.0]}
        scoring, fit_kw = sfm.make_scorers(keys), {"sensitive_features": X["sex"]}
    else:
        est = make_pipeline(sfm.DropColumns("sex"), LogisticRegression())
        Xf, grid = X[["x1", "x2", "sex"]], {"logisticregression__C": [0.1, 1.0]}
        scoring, fit_kw = sfm.make_scorers(keys, sensitive="sex"), {}
    search = GridSearchCV(est, grid, cv=3, scoring=scoring, refit="classif.acc")
    with sklearn.config_context(enable_metadata_routing=(mode == "routing")), mlflow.start_run() as run:
        search.fit(Xf, y, **fit_kw)
    children = mlflow.search_runs(filter_string=f"tags.mlflow.parentRunId = '{run.info.run_id}'")
    assert len(children) == 2
    param = "params.C" if mode == "routing" else "params.logisticregression__C"
    children = children.set_index(children[param].astype(float)).sort_index()
    cv = pd.DataFrame(search.cv_results_)
    cv = cv.set_index(cv[f"param_{next(iter(grid))}"].astype(float)).sort_index()
    for key in keys:
        assert children[f"metrics.mean_test_{key}"].tolist() == pytest.approx(cv[f"mean_test_{key}"].tolist())
    assert (children["metrics.mean_test_fairness.tpr"] <= 0).all()  # minimised: negated like neg_* scorers


def test_small_groups_in_the_test_folds_warn_with_the_mean_without_them(tracking):
    """A group of 12 rows has 4 per test fold: the warning names it and gives the fold mean without it."""
    rng = np.random.default_rng(3)
    n = 372
    A = pd.Series(np.repeat(["big", "large", "tiny"], [180, 180, 12]), name="g")
    X = pd.DataFrame({"x": rng.normal(size=n)})
    y = pd.Series((X.x + rng.normal(size=n) > 0).astype(int))
    keys = ["fairness.tpr", "classif.acc"]
    with pytest.warns(SmallGroupWarning, match=r"fewer than 30 rows in a test fold: 'tiny' \(4\)") as rec:
        res = cross_validate_fairness(
            LogisticRegression(),
            X,
            y,
            measures=keys,
            sensitive_features=A,
            cv=3,
            random_state=0,
            artifacts=False,
            log_params=False,
        )
    without = cross_validate_fairness(
        LogisticRegression(),
        X,
        y,
        sensitive_features=A,
        cv=3,
        random_state=0,
        artifacts=False,
        log_params=False,
        measures=[m30 := sfm.msr("fairness.tpr", min_group_size=30), "classif.acc"],
    )
    # one warning of the folds' means (each fold's own values warn too, by the denominators' rule)
    (msg,) = [
        str(w.message) for w in rec if issubclass(w.category, SmallGroupWarning) and "test fold" in str(w.message)
    ]
    assert f"fairness.tpr {res.mean['fairness.tpr']:.4f} with them, {without.mean[m30.key]:.4f} without" in msg
    assert "classif.acc" not in msg  # reads no groups
