"""A fairness monitor logged to one MLflow run, read back: a step per batch, timestamps, alarm and e-value series."""

import numpy as np
import pandas as pd
import pytest

from skfair_measures.monitor import FairnessMonitor

mlflow = pytest.importorskip("mlflow")


def _batch(rng, gap, n=1000):
    g = rng.choice(["a", "b"], n)
    y = rng.binomial(1, 0.5, n)
    yhat = np.where(y == 1, rng.binomial(1, np.where(g == "a", 0.6, 0.6 - gap)), rng.binomial(1, 0.3, n))
    return yhat, g, y


def test_every_step_is_logged_once_with_its_time_and_the_alarm_is_a_tag(tracking):
    from skfair_measures_mlflow import log_monitor

    rng = np.random.default_rng(0)
    mon = FairnessMonitor(["fairness.tpr", "fairness.cv"], eps=0.1)
    days = pd.date_range("2026-01-01", periods=12, freq="D")
    with mlflow.start_run() as run:
        for t, day in enumerate(days):
            yhat, g, y = _batch(rng, 0.05 if t < 4 else 0.35)
            mon.update(yhat, sensitive_features=g, y_true=y, time=day)
            out = log_monitor(mon)  # after every batch: only the new step
            assert out["steps"] == [t + 1]
    client = mlflow.MlflowClient()
    hist = client.get_metric_history(run.info.run_id, "fairness.tpr/value")
    assert [m.step for m in hist] == list(range(1, 13))
    assert [m.timestamp for m in hist] == [int(d.tz_localize("UTC").timestamp() * 1000) for d in days]
    status = mon.status()
    assert [m.value for m in hist][-1] == pytest.approx(status.loc["fairness.tpr", "value"])
    alarm = [m.value for m in client.get_metric_history(run.info.run_id, "fairness.tpr/alarm")]
    e_value = [m.value for m in client.get_metric_history(run.info.run_id, "fairness.tpr/e_value")]
    assert alarm[0] == 0 and alarm[-1] == 1 and set(alarm) == {0, 1} and len(e_value) == 12
    assert e_value[-1] == pytest.approx(status.loc["fairness.tpr", "e_value"])
    for field in ("lower", "upper"):  # the interval beside the value, in the same chart section
        assert len(client.get_metric_history(run.info.run_id, f"fairness.tpr/{field}")) == 12
    tags = client.get_run(run.info.run_id).data.tags
    assert status.loc["fairness.tpr", "alarm"]
    assert tags["alarm.fairness.tpr"].startswith(f"step {int(status.loc['fairness.tpr', 'alarm_step'])} (since step")
    assert tags["monitor.logged_step"] == "12"
    assert client.get_run(run.info.run_id).data.params["monitor.prob"] == "0.95"
