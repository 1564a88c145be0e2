"""Verdicts in a run: counts as searchable metrics, the level as a tag, the table read back equal to the direct call."""

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from skfair_measures_mlflow import log_fairness

import skfair_measures as sfm

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")  # MLflow's sqlite store, not ours

KEYS = ("fairness.tpr", "fairness.acc")


def _data(n=3000):
    rng = np.random.default_rng(0)
    g = pd.Series(rng.choice(["a", "b", "c"], n), name="g")
    y = rng.integers(0, 2, n)
    pred = np.where(rng.uniform(size=n) < np.where(g == "c", 0.3, 0.1), 1 - y, y)
    return y, pred, g


@pytest.fixture(scope="module")
def verdict_run(tracking):
    y, pred, g = _data()
    boots = sfm.bootstraps(KEYS, y, pred, sensitive_features=g, n_boot=400, random_state=0)
    with mlflow.start_run() as run:
        logged = log_fairness(list(boots.items()), posterior_options={"eps": 0.04, "prob": 0.9})
    return MlflowClient().get_run(run.info.run_id), boots, logged


def test_the_logged_table_is_the_direct_call(verdict_run):
    run, boots, _ = verdict_run
    want = sfm.verdicts(boots, eps=0.04, prob=0.9)
    got = mlflow.load_table("fairness/verdicts.json", run_ids=[run.info.run_id])
    assert got["verdict"].tolist() == want["verdict"].tolist()
    assert got["lower"].to_numpy() == pytest.approx(want["lower"].to_numpy())
    assert set(got["family_wise_level"]) == {0.9} and set(got["eps"]) == {0.04} and set(got["source"]) == {"bootstrap"}


def test_counts_are_searchable_metrics_and_the_level_is_a_tag(verdict_run, tracking):
    run, boots, _ = verdict_run
    want = sfm.verdicts(boots, eps=0.04, prob=0.9)["verdict"].value_counts()
    metrics = run.data.metrics
    for verdict in ("exceeds", "within", "inconclusive", "undefined"):
        assert metrics[f"fairness.verdicts/{verdict}"] == want.get(verdict, 0)
    assert want["exceeds"] > 0  # the data has a group with lower accuracy
    found = mlflow.search_runs(experiment_ids=[tracking], filter_string='metrics."fairness.verdicts/exceeds" > 0')
    assert run.info.run_id in set(found["run_id"])
    tag = run.data.tags["fairness.verdicts"]
    assert "eps = 0.04" in tag and "family-wise level 0.9" in tag and "max-type band" in tag


def test_calls_append_to_one_table_told_apart_by_prefix_and_step(tracking):
    import json

    y, pred, g = _data(900)
    with mlflow.start_run() as run:
        for step in range(2):
            boots = sfm.bootstraps(KEYS, y, pred, sensitive_features=g, n_boot=100, random_state=step)
            assert log_fairness(list(boots.items()), prefix="val/", step=step, log_params=False).logged
    got = MlflowClient().get_run(run.info.run_id)
    logged = json.loads(got.data.tags["mlflow.loggedArtifacts"])  # one entry per table, whatever the calls
    assert sorted(a["path"] for a in logged) == [f"fairness/{t}.json" for t in ("groupwise", "summary", "verdicts")]
    table = mlflow.load_table("fairness/verdicts.json", run_ids=[run.info.run_id])
    assert sorted(set(zip(table["prefix"], table["step"], strict=True))) == [("val/", 0), ("val/", 1)]
    assert len(table) == 2 * 2 * 3
    assert "val/fairness.verdicts/exceeds" in got.data.metrics and "val/fairness.verdicts" in got.data.tags
