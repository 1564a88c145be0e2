"""MLflow failing: a dead server, a hanging server, and failures half-way through every entry point.

In every case the computed values come back in full, the time is bounded, and there
is exactly one FairnessLoggingWarning.
"""

import socket
import threading
import time
import warnings

import mlflow
import numpy as np
import pytest
from _helpers import metrics
from mlflow.tracking import MlflowClient
from skfair_measures_mlflow import FairnessLoggingWarning, cross_validate_fairness, log_fairness, log_monitor
from sklearn.linear_model import LogisticRegression

import skfair_measures as sfm

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")


def _fault_warnings(caught):
    return [w for w in caught if issubclass(w.category, FairnessLoggingWarning)]


@pytest.fixture(scope="module")
def measured(data):
    X, y = data
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.eod"), sfm.msr("classif.acc")]
    return ms, sfm.evaluate_measures(ms, y, (X.x1 > 0).astype(int), sensitive_features=X[["sex", "race"]])


def _fails_on_call(n, what):
    """A stand-in for an MLflow method that works ``n - 1`` times, then fails like a dying server."""
    calls = {"n": 0}

    def wrap(real):
        def method(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] >= n:
                raise ConnectionError(f"the server went away during {what}")
            return real(*args, **kwargs)

        return method

    return wrap


# --- a dead tracking server ---------------------------------------------------------------------
def test_log_fairness_with_a_dead_server_is_quick_and_loses_nothing(dead_server, measured):
    ms, res = measured
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        logged = log_fairness(res, measures=ms)
    seconds = time.perf_counter() - t0
    assert seconds < 15, seconds
    (w,) = _fault_warnings(caught)
    assert "127.0.0.1:9" in str(w.message) and "kept" in str(w.message)
    assert not logged.logged and logged.run_id is None and isinstance(logged.error, ConnectionError)
    assert logged.metrics["fairness.eod"] == pytest.approx(res["fairness.eod"].value)
    assert set(logged.results) == {m.key for m in ms}


def test_cross_validation_with_a_dead_server_fits_every_fold(dead_server, data):
    X, y = data
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = cross_validate_fairness(
            LogisticRegression(), X[["x1", "x2"]], y, measures=["fairness.tpr"], sensitive_features=X["sex"], cv=3
        )
    assert time.perf_counter() - t0 < 15
    assert len(_fault_warnings(caught)) == 1
    assert len(res.estimators) == 3 and res.scores["fairness.tpr"].notna().all()
    assert res.run_id is None and res.error is not None and mlflow.active_run() is None


@pytest.fixture
def hanging_server(tracking):
    """A tracking URI whose socket accepts connections and never answers (on 127.0.0.1); then the sqlite store."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held, stop = [], threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])  # keep it open, say nothing
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    old = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"http://127.0.0.1:{listener.getsockname()[1]}")
    yield mlflow.get_tracking_uri()
    while mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(old)
    mlflow.set_experiment(experiment_id=tracking)
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


@pytest.fixture
def read_only_store(tracking, monkeypatch):
    """A ``file:`` store on a read-only filesystem (/sys refuses new folders, even to root)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    old = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri("file:///sys/skfair-mlruns")
    yield mlflow.get_tracking_uri()
    while mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(old)
    mlflow.set_experiment(experiment_id=tracking)


def _monitor():
    from skfair_measures.monitor import FairnessMonitor

    rng = np.random.default_rng(0)
    mon = FairnessMonitor(["fairness.tpr"], eps=0.1)
    for _ in range(3):
        g, y = rng.choice(["a", "b"], 400), rng.integers(0, 2, 400)
        mon.update(rng.integers(0, 2, 400), sensitive_features=g, y_true=y)
    return mon


def _evaluator(data):
    from mlflow.models.evaluation.base import EvaluationDataset
    from skfair_measures_mlflow import FairnessEvaluator

    X, y = data
    ds = EvaluationDataset(X.assign(label=y, pred=(X.x1 > 0).astype(int)), targets="label", predictions="pred")
    config = {"sensitive_features": "sex", "measures": ["fairness.tpr"], "timeout": 1}
    result = FairnessEvaluator().evaluate(
        model_type="classifier", dataset=ds, run_id="0" * 32, evaluator_config=config, predictions="pred"
    )
    return result.metrics["fairness.tpr"]


def _bias_audit(data):
    import pandas as pd
    from skfair_measures_mlflow import log_bias_audit

    import skfair_measures as sfm

    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {"sex": rng.choice(["F", "M"], 300), "race": rng.choice(["A", "B", "C"], 300), "hired": rng.random(300) < 0.4}
    )
    audit = sfm.bias_audit(frame, sex="sex", race_ethnicity="race", selected="hired")
    assert log_bias_audit(audit, timeout=1) is None  # nothing logged, said once, the audit untouched
    return audit.tables["sex"]["impact_ratio"].min()


#: Every entry point that calls the tracking service, and the value it must give back whatever happens.
ENTRY_POINTS = {
    "log_fairness": lambda data, res: log_fairness(res, artifacts=False, timeout=1).metrics["fairness.tpr"],
    "log_monitor": lambda data, res: log_monitor(_monitor(), timeout=1)["series"][0][1],
    "cross_validate_fairness": lambda data, res: cross_validate_fairness(
        LogisticRegression(),
        data[0][["x1", "x2"]],
        data[1],
        measures=["fairness.tpr"],
        sensitive_features=data[0]["sex"],
        cv=2,
        timeout=1,
    ).mean["fairness.tpr"],  # fmt: skip
    "evaluator": lambda data, res: _evaluator(data),
    "log_bias_audit": lambda data, res: _bias_audit(data),
}


@pytest.mark.parametrize("fault", ["dead_server", "hanging_server", "read_only_store"])
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_entry_point_survives_every_fault_in_bounded_time(request, fault, entry, data, measured, monkeypatch):
    """One warning, the values back, and within the timeout (1 s, one retry) plus a few seconds."""
    for name in ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES"):  # the user's, which would win
        monkeypatch.delenv(name, raising=False)
    request.getfixturevalue(fault)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = ENTRY_POINTS[entry](data, measured[1])
    seconds = time.perf_counter() - t0
    assert seconds < 2 * 1 + 6, seconds
    assert len(_fault_warnings(caught)) == 1, [str(w.message) for w in caught]
    assert np.isfinite(value)


# --- failures half-way, in every entry point ---------------------------------------------------------
def test_log_fairness_failing_mid_run(tracking, measured, monkeypatch):
    ms, res = measured
    monkeypatch.setattr(MlflowClient, "log_table", _fails_on_call(1, "log_table")(MlflowClient.log_table))
    with mlflow.start_run() as run, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        logged = log_fairness(res, measures=ms)
    (w,) = _fault_warnings(caught)
    assert "log the table" in str(w.message)
    assert not logged.logged and logged.artifacts == []
    assert metrics(run.info.run_id) == pytest.approx(logged.metrics)  # what was sent before the failure is there
    assert logged.results["fairness.tpr"] is res["fairness.tpr"]


def test_evaluator_failing_mid_run(tracking, data, monkeypatch):
    X, y = data
    pred = (X.x1 > 0).astype(int)
    monkeypatch.setattr(MlflowClient, "log_table", _fails_on_call(1, "log_table")(MlflowClient.log_table))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = mlflow.models.evaluate(
            data=X.assign(label=y, pred=pred),
            targets="label",
            predictions="pred",
            model_type="classifier",
            evaluators=["fairness"],
            evaluator_config={"fairness": {"sensitive_features": "sex", "measures": ["fairness.tpr", "classif.acc"]}},
        )
    assert len(_fault_warnings(caught)) == 1
    expected = sfm.msr("fairness.tpr").evaluate(y, pred, sensitive_features=X["sex"])
    assert result.metrics["fairness.tpr"] == pytest.approx(expected.value)
    assert result.artifacts == {}


@pytest.mark.parametrize("method, n", [("create_run", 2), ("log_batch", 2), ("log_artifacts", 3)])
def test_cross_validation_failing_mid_run_keeps_every_fold(tracking, data, monkeypatch, method, n):
    X, y = data
    real = getattr(MlflowClient, method)
    monkeypatch.setattr(MlflowClient, method, _fails_on_call(n, method)(real))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = cross_validate_fairness(
            LogisticRegression(),
            X[["x1", "x2"]],
            y,
            measures=["fairness.tpr", "classif.acc"],
            sensitive_features=X["sex"],
            cv=3,
        )
    assert len(_fault_warnings(caught)) == 1
    assert len(res.estimators) == 3 and len(res.folds) == 3 and res.scores.notna().all().all()
    assert res.error is not None and mlflow.active_run() is None
    assert MlflowClient().get_run(res.run_id).info.status == "FAILED"
    assert len(res.fold_run_ids) < 3 or method != "create_run"
    expected = np.mean([f["fairness.tpr"].value for f in res.folds])
    assert res.mean["fairness.tpr"] == pytest.approx(expected)
