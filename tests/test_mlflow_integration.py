"""The MLflow plugin against real local tracking stores (sqlite, and MLflow's file store).

Values are read back from the store and compared with the measures computed
directly, so a key that was sanitised wrongly, dropped or overwritten shows up.
The file store writes a metric ``a/b`` as the file ``b`` in the directory ``a``, so
it also catches a key that is a directory of another key.
"""

import json
import logging
import re
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


def _assert_no_key_is_a_directory(keys):
    """MLflow's file store needs this: ``a`` and ``a/b`` cannot both be files."""
    keys = set(keys)
    dirs = {k.rsplit("/", i)[0] for k in keys for i in range(1, k.count("/") + 1)}
    assert not keys & dirs, sorted(keys & dirs)


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
        key = f"fairness.tpr.by_group/tpr/{seg}"
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
        key = f"test/fairness.tpr.by_group/tpr/{sanitize_segment(f'sex={sex},race={race}')}"
        assert got[key] == pytest.approx(v)
    assert got["test/fairness.tpr.by_group/tpr/sex_F_race_a_b"] == pytest.approx(tpr[("F", "a/b")])
    counts = res["fairness.tpr"].counts
    assert got["test/fairness.tpr.count/sex_M_race_c_d"] == counts[("M", "c=d")]
    eod = res["fairness.eod"].by_group  # composite: one column per component
    assert got["test/fairness.eod.by_group/fairness.fpr/sex_M_race_e"] == pytest.approx(
        eod.loc[("M", "e"), "fairness.fpr"]
    )
    # the key map leads back to the original group label
    meaning = logged.key_map["test/fairness.tpr.by_group/tpr/sex_F_race_a_b"]
    assert meaning["group"] == ["F", "a/b"] and meaning["result"] == "fairness.tpr"

    params = _params(run.info.run_id)
    assert params["test/fairness.cv.config/operation"] == "diff_to_reference"
    assert json.loads(params["test/fairness.cv.config/reference"]) == ["F", "e"]
    assert params["test/fairness.cv.config/minimize"] == "signed"
    assert params["test/fairness.acc_eod_.05.config/epsilon"] == "0.05"
    assert params["test/fairness.acc_eod_.05.config/key"] == "fairness.acc_eod=.05"
    assert params["test/fairness.eod.config/components"] == "fairness.tpr, fairness.fpr"
    _assert_no_key_is_a_directory(got)
    _assert_no_key_is_a_directory(params)

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
    per_group = {k: v for k, v in got.items() if k.startswith("fairness.tpr.by_group/tpr/")}
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
    assert logged.metrics["fairness.tpr"] == 0.5 and logged.metrics["fairness.tpr.by_group/tpr/F"] == 0.5


def test_conflicting_params_are_skipped_with_a_warning(tracking):
    y, p, A = [1, 1, 0, 0], [1, 0, 0, 1], list("FMFM")
    m1 = sfm.FairnessMeasure("tpr", key="fairness.tpr")
    m2 = sfm.FairnessMeasure("tpr", "ratio", key="fairness.tpr")
    with mlflow.start_run() as run:
        log_fairness(m1.evaluate(y, p, sensitive_features=A), measures=m1, artifacts=False)
        with pytest.warns(FairnessLoggingWarning, match="params cannot change"):
            logged = log_fairness(m2.evaluate(y, p, sensitive_features=A), measures=m2, artifacts=False, step=1)
    assert logged.logged
    assert _params(run.info.run_id)["fairness.tpr.config/operation"] == "absdiff"
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
    pre = "fairness.tpr.posterior"
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
    assert "fairness.tpr.posterior/prob_within" not in payload.metrics
    assert payload.metrics["fairness.tpr.posterior/mean"] == pytest.approx(Partial().mean())


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
    assert got["fairness.tpr.posterior/mean"] == pytest.approx(post.mean())
    assert got["fairness.tpr.posterior/interval_lower"] == pytest.approx(lo)
    assert got["fairness.tpr.posterior/prob_greater"] == pytest.approx(post.prob_greater(0.0))
    assert got["fairness.tpr.posterior/prob_within"] == pytest.approx(post.prob_within(0.02))
    assert _params(run.info.run_id)["fairness.tpr.posterior/method"] == "bb"
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
    assert result.metrics["fairness.tpr.posterior/mean"] == pytest.approx(post.mean())


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
    assert got["unaware.quantification.interval_lower"] == pytest.approx(0.05)
    assert got["unaware.quantification.interval_upper"] == pytest.approx(0.2)
    assert got["unaware.quantification.by_group/sex_M"] == pytest.approx(0.42)
    assert got["unaware.quantification.diagnostics/n_deploy/positive"] == 30
    assert got["unaware.hoc"] == pytest.approx(-0.08)
    assert got["unaware.hoc.diagnostics/T/0/1"] == pytest.approx(0.1)
    assert got["unaware.hoc.diagnostics/p/1"] == pytest.approx(0.6)
    params = _params(run.info.run_id)
    assert params["unaware.quantification.config/quantifier"] == "PACC"
    assert params["unaware.hoc.config/method"] == "HOC"
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
    assert got["proxy_dp.diagnostics/T/0/1"] == pytest.approx(T[0, 1])
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
    assert result.metrics["fairness.tpr.by_group/tpr/sex_F"] == pytest.approx(
        expected["fairness.tpr"].by_group["F"]
    )
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
    assert result.metrics["val_fairness.fpr.by_group/fpr/sex_M_race_c_d"] == pytest.approx(
        expected.by_group[("M", "c=d")]
    )
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
    assert result.metrics["fairness.tpr.posterior/prob_within"] == pytest.approx(post.prob_within(0.05))
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
        assert parent[f"{key}.cv_mean"] == pytest.approx(res.mean[key])
        assert parent[f"{key}.cv_std"] == pytest.approx(res.scores[key].std(ddof=0))
        hist = MlflowClient().get_metric_history(res.run_id, f"{key}.cv_fold")
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


def test_cross_validate_in_parallel_matches_serial(tracking, data):
    X, y = data
    kw = dict(measures=["fairness.tpr", "fairness.eod", "classif.acc"], sensitive_features=X["sex"], cv=3,
              artifacts=False)
    serial = cross_validate_fairness(LogisticRegression(), X[["x1", "x2"]], y, **kw)
    parallel = cross_validate_fairness(LogisticRegression(), X[["x1", "x2"]], y, n_jobs=2, **kw)
    pd.testing.assert_frame_equal(parallel.scores, serial.scores)
    assert len(parallel.fold_run_ids) == 3 and len(parallel.estimators) == 3
    for i, rid in enumerate(parallel.fold_run_ids):  # logged in fold order, from this process
        assert _metrics(rid)["fairness.eod"] == pytest.approx(serial.scores.loc[i, "fairness.eod"])
        assert MlflowClient().get_run(rid).data.tags["skfair.fold"] == str(i)


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
        assert got["fairness.tpr.posterior/mean"] == pytest.approx(res.posteriors[i]["fairness.tpr"].mean())
        assert "fairness/fairness.tpr/posterior_density.png" in _artifacts(rid)


# --- MLflow's file store: a metric is a file, so no key may be a directory of another ---------------
@pytest.fixture
def file_store(tracking, tmp_path, monkeypatch):
    """A file store (``file:`` tracking URI) for one test; then back to the sqlite store."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 refuses file stores otherwise
    old = mlflow.get_tracking_uri()
    uri = (tmp_path / "mlruns").as_uri()
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("skfair-file-store")
    yield uri
    while mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(old)
    mlflow.set_experiment(experiment_id=tracking)


def _read_back(logged):
    """Every metric (at its step), series value and param of a LoggedFairness, from the store."""
    assert logged.logged and logged.error is None, logged.error
    client = MlflowClient()
    want = {(k, logged.step): v for k, v in logged.metrics.items()}
    want.update({(k, st): v for k, v, st in logged.series})
    for (key, step), v in want.items():
        history = {h.step: h.value for h in client.get_metric_history(logged.run_id, key)}
        assert history.get(step) == pytest.approx(v, nan_ok=True), (key, step)
    params = _params(logged.run_id)
    assert {k: params.get(k) for k in logged.params} == logged.params
    _assert_no_key_is_a_directory(_metrics(logged.run_id))
    _assert_no_key_is_a_directory(params)


def test_full_set_round_trips_through_the_file_store(file_store, data):
    pytest.importorskip("arviz")
    bayes = pytest.importorskip("skfair_measures.bayes")
    unaware = pytest.importorskip("skfair_measures.unaware")
    if not hasattr(bayes, "posterior") or not hasattr(unaware, "proxy_disparity"):
        pytest.skip("needs skfair_measures.bayes.posterior and skfair_measures.unaware.proxy_disparity")
    X, y = data
    score = 1 / (1 + np.exp(-2 * X.x1.to_numpy()))
    pred = (score > 0.5).astype(int)
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.eod"), sfm.msr("classif.acc")]
    res = sfm.evaluate_measures(ms, y, pred, sensitive_features=X[["sex", "race"]])
    post = sfm.msr("fairness.tpr").posterior(y, score, sensitive_features=X["sex"], method="bb", random_state=0)
    rng = np.random.default_rng(1)
    a = (X["sex"] == "M").to_numpy().astype(int)
    proxies = np.stack([np.where(rng.random(len(a)) < 0.2, 1 - a, a) for _ in range(3)], axis=1)
    proxy = unaware.proxy_disparity(pred, proxies, metric="dp", mode="global")

    with mlflow.start_run() as run:
        logged = log_fairness(
            [*res.items(), ("fairness.tpr", post), ("proxy_dp", proxy)],
            measures=ms,
            posterior_options={"eps": 0.02},
        )
    assert logged.run_id == run.info.run_id
    _read_back(logged)
    got = _metrics(run.info.run_id)
    assert got == pytest.approx(logged.metrics, nan_ok=True)  # nothing more, nothing less
    tpr = res["fairness.tpr"]
    assert got["fairness.tpr"] == pytest.approx(tpr.value)
    assert got["fairness.tpr.overall"] == pytest.approx(tpr.overall)
    assert got["fairness.tpr.by_group/tpr/sex_F_race_a_b"] == pytest.approx(tpr.by_group[("F", "a/b")])
    assert got["fairness.tpr.count/sex_M_race_c_d"] == tpr.counts[("M", "c=d")]
    eod = res["fairness.eod"]
    assert got["fairness.eod"] == pytest.approx(eod.value)
    assert got["fairness.eod.by_group/fairness.fpr/sex_M_race_e"] == pytest.approx(
        eod.by_group.loc[("M", "e"), "fairness.fpr"]
    )
    assert got["classif.acc"] == pytest.approx(res["classif.acc"].value)
    lo, hi = post.interval(0.95)
    assert got["fairness.tpr.posterior/mean"] == pytest.approx(post.mean())
    assert got["fairness.tpr.posterior/interval_lower"] == pytest.approx(lo)
    assert got["fairness.tpr.posterior/interval_upper"] == pytest.approx(hi)
    assert got["fairness.tpr.posterior/prob_within"] == pytest.approx(post.prob_within(0.02))
    assert got["proxy_dp"] == pytest.approx(proxy.value)
    assert got["proxy_dp.diagnostics/T/0/1"] == pytest.approx(np.asarray(proxy.diagnostics["T"])[0, 1])
    params = _params(run.info.run_id)
    assert params["fairness.tpr.config/key"] == "fairness.tpr"
    assert params["fairness.eod.config/components"] == "fairness.tpr, fairness.fpr"
    assert params["fairness.tpr.posterior/method"] == "bb"
    assert params["proxy_dp.config/metric"] == "dp"
    files = _artifacts(run.info.run_id)
    assert {"fairness/results.json", "fairness/fairness.tpr/posterior.nc", "fairness/proxy_dp/diagnostics.json"} <= set(
        files
    )

    # cross-validation: child runs per fold (with posteriors), then folds as steps of one run
    keys = ["fairness.tpr", "fairness.eod", "classif.acc"]
    cv = cross_validate_fairness(
        LogisticRegression(), X[["x1", "x2"]], y, measures=keys, sensitive_features=X["sex"], cv=3,
        posterior={"method": "bb", "random_state": 0, "measures": ["fairness.tpr"]}, run_name="cv",
    )
    assert len(cv.logged) == 4 and len(cv.fold_run_ids) == 3
    for one in cv.logged:
        _read_back(one)
    parent = _metrics(cv.run_id)
    for key in keys:
        assert parent[f"{key}.cv_mean"] == pytest.approx(cv.mean[key])
        assert parent[f"{key}.cv_std"] == pytest.approx(cv.std[key])
    for i, rid in enumerate(cv.fold_run_ids):
        fold = _metrics(rid)
        assert fold["fairness.tpr"] == pytest.approx(cv.scores.loc[i, "fairness.tpr"])
        assert fold["fairness.tpr.posterior/mean"] == pytest.approx(cv.posteriors[i]["fairness.tpr"].mean())
    assert _params(cv.run_id)["fairness.eod.config/operation"] == "mean(absdiff)"

    with mlflow.start_run() as run:
        flat = cross_validate_fairness(
            LogisticRegression(), X[["x1", "x2"]], y, measures=keys, sensitive_features=X["sex"], cv=2,
            fold_runs=False, artifacts=False,
        )
    for one in flat.logged:
        _read_back(one)
    history = MlflowClient().get_metric_history(run.info.run_id, "fairness.eod")
    per_fold = [h.value for h in sorted(history, key=lambda h: h.step)]
    assert per_fold == pytest.approx(flat.scores["fairness.eod"].tolist())
    assert _metrics(run.info.run_id)["fairness.eod.cv_mean"] == pytest.approx(flat.mean["fairness.eod"])


def test_result_named_like_a_field_of_another_still_logs(file_store):
    # "fairness.eod.overall" is the directory of the composite's overall values:
    # the key space renames one of the two instead of letting the file store fail.
    y, p, A = [1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 1, 1], list("FFFMMM")
    eod = sfm.msr("fairness.eod").evaluate(y, p, sensitive_features=A)
    tpr = sfm.msr("fairness.tpr").evaluate(y, p, sensitive_features=A)
    with mlflow.start_run():
        logged = log_fairness([("fairness.eod", eod), ("fairness.eod.overall", tpr)], artifacts=False)
    _read_back(logged)
    assert logged.metrics["fairness.eod"] == pytest.approx(eod.value)
    assert logged.metrics["fairness.eod.overall/fairness.fpr"] == pytest.approx(eod.overall["fairness.fpr"])
    (renamed,) = [k for k, m in logged.key_map.items() if m == {"result": "fairness.eod.overall", "quantity": "value"}]
    assert renamed.startswith("fairness.eod.overall_") and logged.metrics[renamed] == pytest.approx(tpr.value)


def test_evaluator_and_cli_log_to_the_file_store(file_store, data, tmp_path, capsys):
    X, y = data
    pred = (X.x1 > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = mlflow.models.evaluate(
            data=X.assign(label=y, pred=pred), targets="label", predictions="pred", model_type="classifier",
            evaluators=["fairness"],
            evaluator_config={
                "fairness": {"sensitive_features": ["sex", "race"], "measures": ["fairness.tpr", "fairness.eod"]}
            },
        )
    expected = sfm.msr("fairness.eod").evaluate(y, pred, sensitive_features=X[["sex", "race"]])
    assert result.metrics["fairness.eod"] == pytest.approx(expected.value)
    assert _metrics(result.run_id) == pytest.approx(result.metrics)
    _assert_no_key_is_a_directory(result.metrics)

    from skfair_measures.cli import main

    score = 1 / (1 + np.exp(-2 * X.x1.to_numpy()))
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"label": y, "score": score.round(4), "sex": X["sex"]})
    for j in range(3):
        frame[f"proxy{j}"] = np.where(rng.random(len(frame)) < 0.2, np.where(frame.sex == "F", "M", "F"), frame.sex)
    csv = tmp_path / "preds.csv"
    frame.to_csv(csv, index=False)
    rc = main([
        "audit", str(csv), "--sensitive", "sex", "--measures", "fairness.tpr", "fairness.eod", "classif.acc",
        "--posterior", "bb", "--proxies", "proxy0", "proxy1", "proxy2", "--no-progress",
        "--mlflow-uri", file_store, "--mlflow-experiment", "cli",
    ])
    assert rc == 0
    run_id = re.search(r"logged to MLflow run (\w+)", capsys.readouterr().out).group(1)
    got, params = _metrics(run_id), _params(run_id)
    assert {"fairness.tpr", "fairness.tpr.overall", "fairness.eod", "fairness.tpr.posterior/mean"} <= set(got)
    assert params["audit/source"] == str(csv) and params["fairness.tpr.config/key"] == "fairness.tpr"
    _assert_no_key_is_a_directory(got)
    _assert_no_key_is_a_directory(params)


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


def test_netcdf_artifact_survives_boolean_sampler_stats(tmp_path):
    """MCMC posteriors carry boolean `diverging` and boolean attrs; netCDF has no bool."""
    import arviz as az
    import numpy as np
    from skfair_measures_mlflow._collect import _netcdf_safe

    idata = az.from_dict(
        posterior={"theta": np.random.default_rng(0).normal(size=(2, 10))},
        sample_stats={"diverging": np.zeros((2, 10), dtype=bool)},
    )
    idata.posterior.attrs["hierarchical"] = True
    path = tmp_path / "post.nc"
    _netcdf_safe(idata).to_netcdf(str(path))
    back = az.from_netcdf(str(path))
    assert int(back.sample_stats["diverging"].sum()) == 0
    assert back.posterior.attrs["hierarchical"] == 1
