"""The ``fairness`` evaluator of ``mlflow.models.evaluate``, and its posteriors (one joint fit)."""

import warnings

import mlflow
import numpy as np
import pytest
from _helpers import Sampled, artifacts, assert_no_key_is_a_directory, metrics, tags
from skfair_measures_mlflow.evaluator import FairnessEvaluator, validate_config
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import skfair_measures as sfm
from skfair_measures import bayes
from skfair_measures.record import compute_posteriors

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")


def _evaluate(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLflow's schema hints and dataset notes
        return mlflow.models.evaluate(*args, **kwargs)


def test_config_validation_names_unknown_keys():
    with pytest.raises(ValueError, match="'measure' \\(did you mean 'measures'\\?\\)"):
        validate_config({"sensitive_features": "sex", "measure": ["fairness.tpr"]})
    with pytest.raises(ValueError, match="sensitive_features"):
        validate_config({"measures": ["fairness.tpr"]})
    with pytest.raises(ValueError, match="posterior must be a dict"):
        validate_config({"sensitive_features": "sex", "posterior": "bb"})
    with pytest.raises(ValueError, match="group_metrics must be True or False"):
        validate_config({"sensitive_features": "sex", "group_metrics": "yes"})
    assert validate_config({"sensitive_features": "sex", "col_mapping": {}})["prefix"] == ""
    assert FairnessEvaluator.can_evaluate(model_type="classifier", evaluator_config={"sensitive_features": "s"})
    assert not FairnessEvaluator.can_evaluate(model_type="classifier", evaluator_config={})
    assert not FairnessEvaluator.can_evaluate(model_type="text", evaluator_config={"sensitive_features": "s"})


def test_logged_model_end_to_end_with_metrics_linked_to_the_model(tracking, data):
    X, y = data
    features = ["x1", "x2"]
    clf = LogisticRegression().fit(X[features], y)
    keys = ["fairness.tpr", "fairness.eod", "classif.acc"]
    with mlflow.start_run() as run, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        info = mlflow.sklearn.log_model(clf, name="model", pip_requirements=["scikit-learn"])
        result = _evaluate(
            info.model_uri,
            X[[*features, "sex"]].assign(label=y),
            targets="label",
            model_type="classifier",
            evaluators=["fairness"],
            evaluator_config={"fairness": {"sensitive_features": ["sex"], "measures": keys, "drop_sensitive": True}},
        )
    expected = sfm.evaluate_measures(
        [sfm.msr(k) for k in keys], y, clf.predict(X[features]), sensitive_features=X["sex"]
    )
    for key in keys:
        assert result.metrics[key] == pytest.approx(expected[key].value)
    assert result.metrics["fairness.tpr.overall_tpr"] == pytest.approx(expected["fairness.tpr"].overall)
    assert metrics(run.info.run_id) == pytest.approx(result.metrics)  # logged == returned
    assert tags(run.info.run_id)["skfair.sensitive"] == "sex"
    assert {"fairness_results", "fairness_groupwise"} <= set(result.artifacts)
    content = result.artifacts["fairness_results"].content
    assert next(r for r in content["results"] if r["name"] == "fairness.eod")["value"] == pytest.approx(
        expected["fairness.eod"].value
    )
    model = mlflow.get_logged_model(info.model_id)  # MLflow 3: the metrics also show on the model
    assert {m.key for m in model.metrics} >= set(keys)


def test_static_predictions_with_prefix(tracking, data):
    X, y = data
    pred = (X.x1 > 0).astype(int)
    result = _evaluate(
        data=X.assign(label=y, pred=pred),
        targets="label",
        predictions="pred",
        model_type="classifier",
        evaluators="fairness",
        evaluator_config={"sensitive_features": ["sex", "race"], "measures": ["fairness.fpr"], "prefix": "val_"},
    )
    expected = sfm.msr("fairness.fpr").evaluate(y, pred, sensitive_features=X[["sex", "race"]])
    assert result.metrics["val_fairness.fpr"] == pytest.approx(expected.value)
    assert result.metrics["val_fairness.fpr.overall_fpr"] == pytest.approx(expected.overall)
    assert metrics(result.run_id) == pytest.approx(result.metrics)
    assert_no_key_is_a_directory(result.metrics)


def test_posteriors_come_from_one_joint_call(tracking, data, monkeypatch):
    X, y = data
    calls = []

    def joint(measures, y_true, y_score, *, sensitive_features, **kwargs):
        calls.append(([m.key for m in measures], np.asarray(y_score), kwargs))
        return {m.key: Sampled(m, np.random.default_rng(0).beta(2, 30, 800)) for m in measures}

    monkeypatch.setattr(bayes, "posteriors", joint)
    monkeypatch.setattr(bayes, "posterior", lambda *a, **k: pytest.fail("no per-measure fit when the joint one works"))
    proba = 1 / (1 + np.exp(-X.x1.to_numpy()))
    result = _evaluate(
        data=X.assign(label=y, pred=(proba > 0.5).astype(int), proba=proba),
        targets="label",
        predictions="pred",
        model_type="classifier",
        evaluators=["fairness"],
        evaluator_config={
            "fairness": {
                "sensitive_features": "sex",
                "measures": ["fairness.tpr", "fairness.fpr", "classif.acc"],
                "scores": "proba",
                "posterior": {"method": "bb", "random_state": 0, "eps": 0.05},
            }
        },
    )
    assert len(calls) == 1 and calls[0][0] == ["fairness.tpr", "fairness.fpr"]  # fairness measures, one fit
    np.testing.assert_allclose(calls[0][1], proba)
    assert calls[0][2] == {"method": "bb", "random_state": 0}
    assert "fairness.tpr.posterior/prob_within" in result.metrics
    assert "fairness.tpr.posterior/prob_greater" not in result.metrics  # trivially 1 for an absolute difference
    assert "fairness/fairness.fpr/posterior_density.png" in artifacts(result.run_id)


def test_joint_failure_falls_back_per_measure_and_names_the_failing_one(monkeypatch):
    m_ok, m_bad = sfm.msr("fairness.tpr"), sfm.msr("fairness.fpr")

    def joint(measures, *a, **k):
        raise ValueError("joint fit refused")

    def single(measure, *a, **k):
        if measure.key == "fairness.fpr":
            raise NotImplementedError("fpr is not supported here")
        return Sampled(measure, [0.1, 0.2, 0.3])

    monkeypatch.setattr(bayes, "posteriors", joint)
    monkeypatch.setattr(bayes, "posterior", single)
    with pytest.warns(RuntimeWarning, match=r"No posterior for fairness.fpr \(NotImplementedError: fpr is not"):
        out = compute_posteriors([m_ok, m_bad], [1, 0], [0.2, 0.7], sensitive_features=["a", "b"], options={})
    assert list(out) == ["fairness.tpr"]
    with pytest.raises(NotImplementedError, match="fpr"):  # asked for by name: a real error
        compute_posteriors(
            [m_ok, m_bad], [1, 0], [0.2, 0.7], sensitive_features=["a", "b"], options={"measures": ["fairness.fpr"]}
        )


def test_real_posteriors_through_the_evaluator(tracking, data):
    X, y = data
    score = 1 / (1 + np.exp(-2 * X.x1.to_numpy()))
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.fpr")]
    posts = bayes.posteriors(ms, y, score, sensitive_features=X["sex"], method="bb", random_state=0)
    result = _evaluate(
        data=X.assign(label=y, pred=(score > 0.5).astype(int), proba=score),
        targets="label",
        predictions="pred",
        model_type="classifier",
        evaluators=["fairness"],
        evaluator_config={
            "fairness": {
                "sensitive_features": "sex",
                "measures": ["fairness.tpr", "fairness.fpr"],
                "scores": "proba",
                "posterior": {"method": "bb", "random_state": 0},
                "artifacts": False,
            }
        },
    )
    for key, post in posts.items():
        assert result.metrics[f"{key}.posterior/upper"] == pytest.approx(post.interval(0.95)[1])


def test_the_docs_trusted_types_log_the_docs_pipeline(tracking, data):
    """docs/mlflow.md's skops_trusted_types are enough for its pipeline (DropColumns, make_column_selector)."""
    import ast
    import re
    from pathlib import Path

    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    page = (Path(__file__).parents[3] / "docs" / "mlflow.md").read_text()
    trusted = ast.literal_eval(re.search(r"skops_trusted_types=(\[[^\]]*\])", page).group(1))
    X, y = data
    X = X.assign(race=X.race.astype("category"))
    pipe = make_pipeline(
        sfm.DropColumns(["sex"]),
        make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_include="category")),
            (StandardScaler(), make_column_selector(dtype_include="number")),
        ),
        LogisticRegression(max_iter=1000),
    ).fit(X, y)
    with mlflow.start_run(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLflow's own notes on signatures and environments
        info = mlflow.sklearn.log_model(
            pipe, name="model", skops_trusted_types=trusted, pip_requirements=["scikit-learn"]
        )
    loaded = mlflow.sklearn.load_model(info.model_uri)
    assert (loaded.predict(X) == pipe.predict(X)).all()
