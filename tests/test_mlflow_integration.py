"""The MLflow plugin against a real local tracking store (sqlite + file artifacts).

Values are read back from the store and compared with the measures computed
directly, so a key that was sanitised wrongly, dropped or overwritten shows up.
"""

import json
import logging
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

mlflow = pytest.importorskip("mlflow")
sfm_mlflow = pytest.importorskip("skfair_measures_mlflow")

import sklearn  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402
from mlflow.utils.validation import _validate_metric_name  # noqa: E402
from skfair_measures_mlflow import (  # noqa: E402
    FairnessLoggingWarning,
    cross_validate_fairness,
    log_fairness,
    sanitize_key,
    sanitize_segment,
)
from skfair_measures_mlflow._keys import unique_segments  # noqa: E402
from skfair_measures_mlflow._tracking import _batches  # noqa: E402
from skfair_measures_mlflow.evaluator import FairnessEvaluator, validate_config  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402

import skfair_measures as sfm  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")  # MLflow's sqlalchemy store


# --- fixtures -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tracking(tmp_path_factory):
    """A sqlite tracking store and an artifact folder, both in a temporary folder."""
    root = tmp_path_factory.mktemp("mlflow")
    for name in ("mlflow", "alembic", "mlflow.store.db.utils"):
        logging.getLogger(name).setLevel(logging.ERROR)
    old = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{root}/mlflow.db")
    exp = mlflow.create_experiment("skfair", artifact_location=(root / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=exp)
    yield exp
    while mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(old)
    from mlflow.tracking import fluent

    if hasattr(fluent, "_active_experiment_id"):  # forget our experiment, it lives in our store
        fluent._active_experiment_id = None


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n = 240
    X = pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.normal(size=n),
            "sex": rng.choice(["F", "M"], n),
            "race": rng.choice(["a/b", "c=d", "e"], n),
        }
    )
    y = pd.Series((X.x1 + 0.6 * (X.sex == "M") + rng.normal(size=n) > 0).astype(int), name="label")
    return X, y


def _metrics(run_id):
    return MlflowClient().get_run(run_id).data.metrics


def _params(run_id):
    return MlflowClient().get_run(run_id).data.params


def _artifacts(run_id, path=None):
    out, todo = [], [path]
    client = MlflowClient()
    while todo:
        for f in client.list_artifacts(run_id, todo.pop()):
            (todo if f.is_dir else out).append(f.path)
    return sorted(out)


# --- keys ------------------------------------------------------------------------------------
NASTY = ["sex=F", "a/b", "..", ".", "", "  ", "F?", "F!", "Müller", "x:y", "x" * 300, ("F", "a/b")]


def test_sanitised_keys_are_valid_mlflow_names():
    segs = unique_segments(NASTY)
    assert len(set(segs.values())) == len(NASTY)  # no collisions
    for seg in segs.values():
        key = f"fairness.tpr/tpr/{seg}"
        _validate_metric_name(sanitize_key(key))  # raises if invalid
        assert "/" not in seg
    for raw in ["fairness.acc_eod=.05", "/a//b/", "a/../b", "x" * 400, "a:b"]:
        key = sanitize_key(raw)
        _validate_metric_name(key)
        assert len(key) <= 250 and ":" not in key


def test_collisions_get_stable_distinct_suffixes():
    a = unique_segments(["F?", "F!", "M"])
    b = unique_segments(["M", "F!", "F?"])
    assert a == b  # independent of order
    assert a["M"] == "M" and a["F?"] != a["F!"] and a["F?"].startswith("F__")
    assert sanitize_segment("sex=F") == "sex_F"
    # a label that happens to look like a disambiguated one still stays distinct
    c = unique_segments(["F?", "F!", a["F?"]])
    assert len(set(c.values())) == 3


def test_batches_respect_mlflow_limits():
    batches = _batches(list(range(2500)), list(range(150)))
    assert sum(len(m) for m, _ in batches) == 2500 and sum(len(p) for _, p in batches) == 150
    assert all(len(m) <= 1000 and len(p) <= 100 and len(m) + len(p) <= 1000 for m, p in batches)
    assert _batches([], []) == [([], [])]


# --- log_fairness ------------------------------------------------------------------------------
def test_log_fairness_round_trip_intersectional(tracking, data):
    X, y = data
    pred = (X.x1 > 0).astype(int)
    ms = [
        sfm.msr("fairness.tpr"),
        sfm.msr("fairness.eod"),
        sfm.msr("classif.acc"),
        sfm.msr("fairness.acc_eod=.05"),
        sfm.msr("fairness.cv", operation="diff_to_reference", reference=("F", "e")),
    ]
    res = sfm.evaluate_measures(ms, y, pred, sensitive_features=X[["sex", "race"]])
    with mlflow.start_run() as run:
        logged = log_fairness(res, measures=ms, prefix="test/")
    assert logged.logged and logged.error is None and logged.run_id == run.info.run_id
    got = _metrics(run.info.run_id)
    assert got == pytest.approx(logged.metrics)  # everything computed was logged
    assert got["test/fairness.tpr"] == pytest.approx(res["fairness.tpr"].value)
    assert got["test/fairness.acc_eod_.05"] == pytest.approx(res["fairness.acc_eod=.05"].value)
    tpr = res["fairness.tpr"].by_group
    for (sex, race), v in tpr.items():
        key = f"test/fairness.tpr/tpr/{sanitize_segment(f'sex={sex},race={race}')}"
        assert got[key] == pytest.approx(v)
    assert got["test/fairness.tpr/tpr/sex_F_race_a_b"] == pytest.approx(tpr[("F", "a/b")])
    counts = res["fairness.tpr"].counts
    assert got["test/fairness.tpr/count/sex_M_race_c_d"] == counts[("M", "c=d")]
    eod = res["fairness.eod"].by_group  # composite: one column per component
    assert got["test/fairness.eod/fairness.fpr/sex_M_race_e"] == pytest.approx(eod.loc[("M", "e"), "fairness.fpr"])
    # the key map leads back to the original group label
    meaning = logged.key_map["test/fairness.tpr/tpr/sex_F_race_a_b"]
    assert meaning["group"] == ["F", "a/b"] and meaning["result"] == "fairness.tpr"

    params = _params(run.info.run_id)
    assert params["test/fairness.cv/operation"] == "diff_to_reference"
    assert json.loads(params["test/fairness.cv/reference"]) == ["F", "e"]
    assert params["test/fairness.cv/minimize"] == "signed"
    assert params["test/fairness.acc_eod_.05/epsilon"] == "0.05"
    assert params["test/fairness.acc_eod_.05/key"] == "fairness.acc_eod=.05"
    assert params["test/fairness.eod/components"] == "fairness.tpr, fairness.fpr"

    assert _artifacts(run.info.run_id) == ["fairness/test/results.json"]
    path = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="fairness/test/results.json")
    with open(path) as fh:
        content = json.load(fh)
    assert content["results"]["fairness.tpr"]["result"]["value"] == pytest.approx(res["fairness.tpr"].value)


def test_colliding_group_labels_are_all_logged(tracking):
    y = [1, 1, 1, 1, 0, 0]
    p = [1, 0, 1, 1, 0, 1]
    A = ["F?", "F?", "F!", "F!", "F?", "F!"]
    res = sfm.msr("fairness.tpr").evaluate(y, p, sensitive_features=A)
    with mlflow.start_run() as run:
        logged = log_fairness(res, artifacts=False, log_params=False)
    got = _metrics(run.info.run_id)
    per_group = {k: v for k, v in got.items() if k.startswith("fairness.tpr/tpr/")}
    assert len(per_group) == 2
    assert sorted(per_group.values()) == pytest.approx(sorted(res.by_group.tolist()))
    labels = {logged.key_map[k]["group"] for k in per_group}
    assert labels == {"F?", "F!"}


def test_steps_and_repeated_logging(tracking):
    m = sfm.msr("fairness.tpr")
    with mlflow.start_run() as run:
        for step, p in enumerate([[1, 0, 1, 1], [1, 1, 1, 1]]):
            log_fairness(m.evaluate([1, 1, 1, 1], p, sensitive_features=list("FFMM")), step=step, measures=m)
    hist = MlflowClient().get_metric_history(run.info.run_id, "fairness.tpr")
    assert [(h.step, h.value) for h in hist] == [(0, 0.5), (1, 0.0)]
    assert "fairness/step_1/results.json" in _artifacts(run.info.run_id)


def test_failed_logging_warns_and_keeps_the_result(tracking):
    res = sfm.msr("fairness.tpr").evaluate([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("FFMM"))
    with pytest.warns(FairnessLoggingWarning, match="could not"):
        logged = log_fairness(res, run_id="0" * 32)
    assert not logged.logged and logged.error is not None
    assert logged.metrics["fairness.tpr"] == 0.5 and logged.metrics["fairness.tpr/tpr/F"] == 0.5


def test_conflicting_params_are_skipped_with_a_warning(tracking):
    y, p, A = [1, 1, 0, 0], [1, 0, 0, 1], list("FMFM")
    m1 = sfm.FairnessMeasure("tpr", key="fairness.tpr")
    m2 = sfm.FairnessMeasure("tpr", "ratio", key="fairness.tpr")
    with mlflow.start_run() as run:
        log_fairness(m1.evaluate(y, p, sensitive_features=A), measures=m1, artifacts=False)
        with pytest.warns(FairnessLoggingWarning, match="params cannot change"):
            logged = log_fairness(m2.evaluate(y, p, sensitive_features=A), measures=m2, artifacts=False, step=1)
    assert logged.logged
    assert _params(run.info.run_id)["fairness.tpr/operation"] == "absdiff"
    assert _metrics(run.info.run_id)["fairness.tpr"] == pytest.approx(logged.metrics["fairness.tpr"])


# --- posteriors and unawareness estimates (duck-typed: the logger reads only this API) ------------
class _Posterior:
    """The posterior API as documented for Measure.posterior; draws made up."""

    key = "fairness.tpr"
    method = "bb"

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.groups = rng.beta([40, 30], [10, 20], size=(2, 500, 2))  # chain, draw, group
        self.delta = self.groups[..., 0] - self.groups[..., 1]

    def mean(self):
        return float(self.delta.mean())

    def interval(self, prob=0.95):
        lo, hi = np.quantile(self.delta, [(1 - prob) / 2, (1 + prob) / 2])
        return float(lo), float(hi)

    def prob_greater(self, value=0.0):
        return float((self.delta > value).mean())

    def prob_within(self, eps):
        return float((np.abs(self.delta) <= eps).mean())

    def summary(self):
        return pd.DataFrame({"mean": [self.mean()], "sd": [float(self.delta.std())]}, index=[self.key])

    def to_inference_data(self):
        import arviz as az

        return az.from_dict(
            posterior={"tpr": self.groups, self.key: self.delta},
            coords={"group": ["F", "M"]},
            dims={"tpr": ["group"]},
        )


def test_posterior_is_logged_with_draws_and_plot(tracking):
    pytest.importorskip("arviz")
    post = _Posterior()
    with mlflow.start_run() as run:
        logged = log_fairness(post, posterior_options={"eps": 0.05})
    got = _metrics(run.info.run_id)
    pre = "fairness.tpr/posterior"
    assert got[f"{pre}/mean"] == pytest.approx(post.mean())
    lo, hi = post.interval(0.95)
    assert got[f"{pre}/interval_lower"] == pytest.approx(lo) and got[f"{pre}/interval_upper"] == pytest.approx(hi)
    assert got[f"{pre}/prob_greater"] == pytest.approx(post.prob_greater(0.0))
    assert got[f"{pre}/prob_within"] == pytest.approx(post.prob_within(0.05))
    params = _params(run.info.run_id)
    assert params[f"{pre}/eps"] == "0.05" and params[f"{pre}/method"] == "bb"
    files = _artifacts(run.info.run_id)
    for name in ("posterior.nc", "posterior_density.png", "posterior_summary.csv"):
        assert f"fairness/fairness.tpr/{name}" in files
    assert logged.logged
    import arviz as az

    nc = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="fairness/fairness.tpr/posterior.nc")
    idata = az.from_netcdf(nc)
    np.testing.assert_allclose(idata.posterior["fairness.tpr"].values, post.delta)


def test_a_failing_posterior_summary_costs_only_itself():
    from skfair_measures_mlflow._collect import collect

    class Partial(_Posterior):
        def prob_within(self, eps):
            raise TypeError("prob_within() takes no eps")

    with pytest.warns(RuntimeWarning, match="prob_within"):
        payload = collect(Partial(), artifacts=False)
    assert "fairness.tpr/posterior/prob_within" not in payload.metrics
    assert payload.metrics["fairness.tpr/posterior/mean"] == pytest.approx(Partial().mean())


def test_real_posteriors_log_and_evaluate(tracking, data):
    bayes = pytest.importorskip("skfair_measures.bayes")
    if not hasattr(bayes, "posterior"):
        pytest.skip("skfair_measures.bayes has no posterior() yet")
    X, y = data
    score = 1 / (1 + np.exp(-2 * X.x1.to_numpy()))
    m = sfm.msr("fairness.tpr")
    post = m.posterior(y, score, sensitive_features=X["sex"], method="bb", random_state=0)
    with mlflow.start_run() as run:
        logged = log_fairness({"fairness.tpr": post}, posterior_options={"eps": 0.02})
    assert logged.logged
    got = _metrics(run.info.run_id)
    lo, hi = post.interval(0.95)
    assert got["fairness.tpr/posterior/mean"] == pytest.approx(post.mean())
    assert got["fairness.tpr/posterior/interval_lower"] == pytest.approx(lo)
    assert got["fairness.tpr/posterior/prob_greater"] == pytest.approx(post.prob_greater(0.0))
    assert got["fairness.tpr/posterior/prob_within"] == pytest.approx(post.prob_within(0.02))
    assert _params(run.info.run_id)["fairness.tpr/posterior/method"] == "bb"
    files = _artifacts(run.info.run_id)
    assert {"fairness/fairness.tpr/posterior.nc", "fairness/fairness.tpr/posterior_density.png"} <= set(files)

    # the evaluator computes the same posterior from the scores column (same seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = mlflow.models.evaluate(
            data=X.assign(label=y, pred=(score > 0.5).astype(int), proba=score),
            targets="label", predictions="pred", model_type="classifier", evaluators=["fairness"],
            evaluator_config={"fairness": {
                "sensitive_features": "sex", "measures": ["fairness.tpr"], "scores": "proba",
                "posterior": {"method": "bb", "random_state": 0}, "artifacts": False,
            }},
        )
    assert result.metrics["fairness.tpr/posterior/mean"] == pytest.approx(post.mean())


def test_unawareness_estimate_with_hoc_diagnostics(tracking):
    from skfair_measures.unaware import QuantificationResult

    quant = QuantificationResult(
        value=0.12,
        by_group=pd.Series([0.3, 0.42], index=pd.Index(["F", "M"], name="sex")),
        diagnostics={"quantifier": "PACC", "n_deploy": {"negative": 50, "positive": 30}},
        interval=(0.05, 0.2),
    )

    class HOCResult:  # what a proxy/HOC estimate exposes
        value = -0.08
        by_group = pd.Series([0.5, 0.58], index=["a", "b"])
        interval = None
        diagnostics = {"T": np.array([[0.9, 0.1], [0.2, 0.8]]), "p": np.array([0.4, 0.6]), "method": "HOC"}

    with mlflow.start_run() as run:
        logged = log_fairness([quant, HOCResult()])
    got = _metrics(run.info.run_id)
    assert got["unaware.quantification"] == pytest.approx(0.12)
    assert got["unaware.quantification/interval_lower"] == pytest.approx(0.05)
    assert got["unaware.quantification/interval_upper"] == pytest.approx(0.2)
    assert got["unaware.quantification/by_group/sex_M"] == pytest.approx(0.42)
    assert got["unaware.quantification/diagnostics/n_deploy/positive"] == 30
    assert got["unaware.hoc"] == pytest.approx(-0.08)
    assert got["unaware.hoc/diagnostics/T/0/1"] == pytest.approx(0.1)
    assert got["unaware.hoc/diagnostics/p/1"] == pytest.approx(0.6)
    params = _params(run.info.run_id)
    assert params["unaware.quantification/quantifier"] == "PACC" and params["unaware.hoc/method"] == "HOC"
    files = _artifacts(run.info.run_id)
    assert "fairness/unaware.hoc/diagnostics.json" in files
    path = mlflow.artifacts.download_artifacts(
        run_id=run.info.run_id, artifact_path="fairness/unaware.hoc/diagnostics.json"
    )
    with open(path) as fh:
        assert json.load(fh)["diagnostics"]["T"] == [[0.9, 0.1], [0.2, 0.8]]
    assert logged.logged


def test_real_proxy_disparity_if_available(tracking):
    unaware = pytest.importorskip("skfair_measures.unaware")
    if not hasattr(unaware, "proxy_disparity"):
        pytest.skip("skfair_measures.unaware has no proxy_disparity yet")
    rng = np.random.default_rng(0)
    n = 4000
    a = (rng.random(n) < 0.4).astype(int)
    y_pred = (rng.random(n) < np.where(a == 1, 0.6, 0.3)).astype(int)
    proxies = np.stack([np.where(rng.random(n) < 0.2, 1 - a, a) for _ in range(3)], axis=1)
    res = unaware.proxy_disparity(y_pred, proxies, metric="dp", mode="global")
    with mlflow.start_run() as run:
        logged = log_fairness({"proxy_dp": res})
    got = _metrics(run.info.run_id)
    assert logged.logged and got["proxy_dp"] == pytest.approx(res.value)
    T = np.asarray(res.diagnostics["T"])
    assert got["proxy_dp/diagnostics/T/0/1"] == pytest.approx(T[0, 1])
    assert not any("/groups/" in k for k in got)  # labels stay in the JSON artifact


# --- the evaluator plugin --------------------------------------------------------------------------
def test_plugin_is_registered_in_a_fresh_process():
    code = (
        "import sys, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import mlflow\n"
        "    names = mlflow.models.list_evaluators()\n"
        # MLflow only *warns* when a plugin fails to load
        "failed = [str(w.message) for w in caught if 'register model evaluator' in str(w.message)]\n"
        "assert not failed, failed\n"
        "assert 'fairness' in names, names\n"
        "assert 'skfair_measures' not in sys.modules, 'the entry point must load lazily'\n"
        "from mlflow.models.evaluation.evaluator_registry import _model_evaluation_registry as r\n"
        "ev = r.get_evaluator('fairness')\n"
        "assert type(ev).__name__ == 'FairnessEvaluator'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_config_validation_names_unknown_keys():
    with pytest.raises(ValueError, match="'measure' \\(did you mean 'measures'\\?\\)"):
        validate_config({"sensitive_features": "sex", "measure": ["fairness.tpr"]})
    with pytest.raises(ValueError, match="sensitive_features"):
        validate_config({"measures": ["fairness.tpr"]})
    with pytest.raises(ValueError, match="posterior must be a dict"):
        validate_config({"sensitive_features": "sex", "posterior": "bb"})
    assert validate_config({"sensitive_features": "sex", "col_mapping": {}})["prefix"] == ""
    assert FairnessEvaluator.can_evaluate(model_type="classifier", evaluator_config={"sensitive_features": "s"})
    assert not FairnessEvaluator.can_evaluate(model_type="classifier", evaluator_config={})
    assert not FairnessEvaluator.can_evaluate(model_type="text", evaluator_config={"sensitive_features": "s"})


def test_evaluate_logged_sklearn_model_end_to_end(tracking, data):
    X, y = data
    features = ["x1", "x2"]
    clf = LogisticRegression().fit(X[features], y)
    measures = ["fairness.tpr", "fairness.eod", "classif.acc"]
    with mlflow.start_run() as run, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLflow's schema hints
        info = mlflow.sklearn.log_model(clf, name="model", pip_requirements=["scikit-learn"])
        result = mlflow.models.evaluate(
            info.model_uri,
            X[[*features, "sex"]].assign(label=y),
            targets="label",
            model_type="classifier",
            evaluators=["fairness"],
            evaluator_config={
                "fairness": {"sensitive_features": ["sex"], "measures": measures, "drop_sensitive": True}
            },
        )
    expected = sfm.evaluate_measures(
        [sfm.msr(k) for k in measures], y, clf.predict(X[features]), sensitive_features=X["sex"]
    )
    for key in measures:
        assert result.metrics[key] == pytest.approx(expected[key].value)
    assert result.metrics["fairness.tpr/tpr/sex_F"] == pytest.approx(expected["fairness.tpr"].by_group["F"])
    assert _metrics(run.info.run_id) == pytest.approx(result.metrics)  # logged == returned
    assert "fairness_results" in result.artifacts
    assert result.artifacts["fairness_results"].content["results"]["fairness.eod"]["result"]["value"] == (
        pytest.approx(expected["fairness.eod"].value)
    )


def test_evaluate_static_predictions_with_prefix(tracking, data):
    X, y = data
    pred = (X.x1 > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = mlflow.models.evaluate(
            data=X.assign(label=y, pred=pred),
            targets="label",
            predictions="pred",
            model_type="classifier",
            evaluators="fairness",
            evaluator_config={"sensitive_features": ["sex", "race"], "measures": ["fairness.fpr"], "prefix": "val_"},
        )
    expected = sfm.msr("fairness.fpr").evaluate(y, pred, sensitive_features=X[["sex", "race"]])
    assert result.metrics["val_fairness.fpr"] == pytest.approx(expected.value)
    assert result.metrics["val_fairness.fpr/fpr/sex_M_race_c_d"] == pytest.approx(expected.by_group[("M", "c=d")])
    assert _metrics(result.run_id) == pytest.approx(result.metrics)


def test_evaluate_with_posterior_passes_options_and_scores(tracking, data, monkeypatch):
    pytest.importorskip("arviz")
    X, y = data
    calls = []

    def fake_posterior(self, y_true, y_score, *, sensitive_features, **kwargs):
        calls.append((self.key, np.asarray(y_score), kwargs))
        return _Posterior()

    monkeypatch.setattr(sfm.Measure, "posterior", fake_posterior)
    proba = 1 / (1 + np.exp(-X.x1.to_numpy()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = mlflow.models.evaluate(
            data=X.assign(label=y, pred=(proba > 0.5).astype(int), proba=proba),
            targets="label",
            predictions="pred",
            model_type="classifier",
            evaluators=["fairness"],
            evaluator_config={
                "fairness": {
                    "sensitive_features": "sex",
                    "measures": ["fairness.tpr", "classif.acc"],
                    "scores": "proba",
                    "posterior": {"method": "bb", "random_state": 0, "eps": 0.05},
                }
            },
        )
    assert [c[0] for c in calls] == ["fairness.tpr"]  # fairness measures only
    np.testing.assert_allclose(calls[0][1], proba)
    assert calls[0][2] == {"method": "bb", "random_state": 0}
    post = _Posterior()
    assert result.metrics["fairness.tpr/posterior/prob_within"] == pytest.approx(post.prob_within(0.05))
    assert "fairness_fairness.tpr_posterior_density" in result.artifacts
    assert "fairness/fairness.tpr/posterior.nc" in _artifacts(result.run_id)


# --- cross-validation and autologging ---------------------------------------------------------------
def test_cross_validate_fairness_logs_folds_and_summary(tracking, data):
    X, y = data
    pipe = make_pipeline(sfm.DropColumns("sex"), LogisticRegression())
    Xc = X[["x1", "x2", "sex"]]
    res = cross_validate_fairness(
        pipe, Xc, y, measures=["fairness.tpr", "classif.acc"], sensitive="sex", cv=3, run_name="cv", artifacts=False
    )
    assert mlflow.active_run() is None  # the run it started is closed
    parent = _metrics(res.run_id)
    for key in ("fairness.tpr", "classif.acc"):
        assert parent[f"{key}/cv_mean"] == pytest.approx(res.mean[key])
        assert parent[f"{key}/cv_std"] == pytest.approx(res.scores[key].std(ddof=0))
        hist = MlflowClient().get_metric_history(res.run_id, f"{key}/cv_fold")
        assert [h.value for h in sorted(hist, key=lambda h: h.step)] == pytest.approx(res.scores[key].tolist())
    assert _params(res.run_id)["cv/n_splits"] == "3"
    children = mlflow.search_runs(filter_string=f"tags.mlflow.parentRunId = '{res.run_id}'")
    assert sorted(children["run_id"]) == sorted(res.fold_run_ids) and len(children) == 3
    for i, rid in enumerate(res.fold_run_ids):
        assert _metrics(rid)["fairness.tpr"] == pytest.approx(res.folds[i]["fairness.tpr"].value)
    # the same folds by hand
    from sklearn.model_selection import StratifiedKFold

    for i, (tr, te) in enumerate(StratifiedKFold(3).split(Xc, y)):
        fitted = sklearn.clone(pipe).fit(Xc.iloc[tr], y.iloc[tr])
        v = sfm.msr("fairness.tpr")(y.iloc[te], fitted.predict(Xc.iloc[te]), sensitive_features=Xc.sex.iloc[te])
        assert res.scores.loc[i, "fairness.tpr"] == pytest.approx(v)


def test_cross_validate_without_fold_runs_uses_steps(tracking, data):
    X, y = data
    with mlflow.start_run() as run:
        res = cross_validate_fairness(
            LogisticRegression(), X[["x1", "x2"]], y, measures=["fairness.fpr"],
            sensitive_features=X["race"], cv=2, fold_runs=False, artifacts=False,
        )
    assert res.run_id == run.info.run_id and res.fold_run_ids == []
    hist = MlflowClient().get_metric_history(run.info.run_id, "fairness.fpr")
    hist = sorted(hist, key=lambda h: h.step)
    assert [h.step for h in hist] == [0, 1]
    assert [h.value for h in hist] == pytest.approx(res.scores["fairness.fpr"].tolist())
    with pytest.raises(ValueError, match="exactly one"):
        cross_validate_fairness(LogisticRegression(), X, y, measures=["fairness.fpr"], cv=2)


def test_cross_validate_with_posteriors_per_fold(tracking, data, monkeypatch):
    pytest.importorskip("arviz")
    X, y = data
    seen = []

    def fake_posterior(self, y_true, y_score, *, sensitive_features, **kwargs):
        seen.append(np.asarray(y_score))
        return _Posterior(seed=len(seen))

    monkeypatch.setattr(sfm.Measure, "posterior", fake_posterior)
    res = cross_validate_fairness(
        LogisticRegression(), X[["x1", "x2"]], y, measures=["fairness.tpr"],
        sensitive_features=X["sex"], cv=2, posterior={"method": "bb"},
    )
    assert len(seen) == 2 and all(((s > 0) & (s < 1)).all() for s in seen)  # probabilities
    for i, rid in enumerate(res.fold_run_ids):
        got = _metrics(rid)
        assert got["fairness.tpr/posterior/mean"] == pytest.approx(res.posteriors[i]["fairness.tpr"].mean())
        assert "fairness/fairness.tpr/posterior_density.png" in _artifacts(rid)


@pytest.fixture
def autolog():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MLflow's post-training metric code warns on sklearn 1.9
        mlflow.sklearn.autolog(
            log_models=False, log_datasets=False, log_input_examples=False,
            log_model_signatures=False, log_post_training_metrics=False, silent=True,
        )
        try:
            yield
        finally:
            mlflow.sklearn.autolog(disable=True)


@pytest.mark.parametrize("mode", ["routing", "column"])
def test_autologged_grid_search_records_fairness_scorers(tracking, data, autolog, mode):
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


def test_plugin_docstring_examples():
    import doctest

    from skfair_measures_mlflow import _collect, _compute, _keys, _tracking, evaluator

    for module in (_keys, _collect, _compute, _tracking, evaluator):
        res = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0, module.__name__
