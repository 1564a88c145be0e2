"""Fixtures of the MLflow plugin's tests: local tracking stores in temporary folders, and data."""

import logging

import numpy as np
import pandas as pd
import pytest

mlflow = pytest.importorskip("mlflow")
pytest.importorskip("skfair_measures_mlflow")


@pytest.fixture(scope="session")
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


@pytest.fixture
def dead_server(tracking):
    """A tracking URI nobody listens on (port 9, discard); then back to the sqlite store."""
    old = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri("http://127.0.0.1:9")
    yield "http://127.0.0.1:9"
    while mlflow.active_run() is not None:
        mlflow.end_run()
    mlflow.set_tracking_uri(old)
    mlflow.set_experiment(experiment_id=tracking)


@pytest.fixture(scope="session")
def data():
    """240 rows: two features, sex (F/M) and race with labels that are not valid MLflow keys."""
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
