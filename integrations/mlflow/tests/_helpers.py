"""Reading a run back from the tracking store, and a sampled result built by hand."""

import json

import mlflow
import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from skfair_measures.uncertainty import Estimate


def metrics(run_id):
    return MlflowClient().get_run(run_id).data.metrics


def params(run_id):
    return MlflowClient().get_run(run_id).data.params


def tags(run_id):
    return MlflowClient().get_run(run_id).data.tags


def artifacts(run_id, path=None):
    out, todo = [], [path]
    client = MlflowClient()
    while todo:
        for f in client.list_artifacts(run_id, todo.pop()):
            (todo if f.is_dir else out).append(f.path)
    return sorted(out)


def read_json(run_id, path):
    with open(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=path)) as fh:
        return json.load(fh)


def assert_no_key_is_a_directory(keys):
    """MLflow's file store needs this: ``a`` and ``a/b`` cannot both be files."""
    keys = set(keys)
    dirs = {k.rsplit("/", i)[0] for k in keys for i in range(1, k.count("/") + 1)}
    assert not keys & dirs, sorted(keys & dirs)


def read_back(logged):
    """Every metric (at its step), series value and param of a LoggedFairness, from the store."""
    assert logged.logged and logged.error is None, logged.error
    client = MlflowClient()
    want = {(k, logged.step): v for k, v in logged.metrics.items()}
    want.update({(k, st): v for k, v, st in logged.series})
    for (key, step), v in want.items():
        history = {h.step: h.value for h in client.get_metric_history(logged.run_id, key)}
        assert history.get(step) == pytest.approx(v, nan_ok=True), (key, step)
    got = params(logged.run_id)
    assert {k: got.get(k) for k in logged.params} == logged.params
    assert {k: tags(logged.run_id).get(k) for k in logged.tags} == logged.tags
    assert_no_key_is_a_directory(metrics(logged.run_id))
    assert_no_key_is_a_directory(got)


class Sampled(Estimate):
    """A posterior (or bootstrap) estimate with given draws: its probabilities are the draws' shares (a posterior's)."""

    def __init__(self, measure, draws, kind="posterior"):
        draws = np.asarray(draws, dtype=float)
        how = {"construction": "posterior" if kind == "posterior" else "percentile bootstrap", "target": "population"}
        super().__init__(measure.key, float(np.mean(draws)), draws=draws, posterior=kind == "posterior", **how)
        self.measure, self.kind = measure, kind
