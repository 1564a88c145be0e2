"""A bias audit logged to MLflow: the run holds its tables, verdict counts and page; a dead server is exit 4."""

import json

import mlflow
import numpy as np
import pandas as pd
from skfair_measures_mlflow import log_bias_audit

from skfair_measures import cli
from skfair_measures.audits import bias_audit


def _frame():
    rng = np.random.default_rng(1)
    n = 600
    race = rng.choice(["A", "B", "C"], n, p=[0.6, 0.3, 0.1])
    return pd.DataFrame(
        {"sex": rng.choice(["F", "M"], n), "race": race, "hired": (rng.random(n) < np.where(race == "B", 0.15, 0.4))}
    ).astype({"hired": int})


def test_the_run_holds_the_audit(tracking, tmp_path):
    audit = bias_audit(_frame(), sex="sex", race_ethnicity="race", selected="hired", source="demo")
    with mlflow.start_run() as run:
        assert log_bias_audit(audit) == run.info.run_id
    data = mlflow.get_run(run.info.run_id).data
    for table, counts in audit.verdict_counts().items():
        for key, value in counts.items():
            assert data.metrics[f"bias_audit/{table}/{key}"] == value
    assert data.metrics["bias_audit/rows"] == 600 and data.params["bias_audit/data_source"] == "demo"
    folder = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="bias_audit", dst_path=tmp_path)
    back = pd.read_csv(f"{folder}/race_ethnicity.csv")
    np.testing.assert_allclose(back["impact_ratio_upper"], audit.tables["race_ethnicity"]["impact_ratio_upper"])
    assert json.load(open(f"{folder}/summary.json"))["rows"] == 600
    assert "Bias audit summary" in open(f"{folder}/bias_audit.html").read()


def test_cli_logs_and_a_dead_server_is_exit_4_with_the_files_kept(file_store, tmp_path, monkeypatch):
    _frame().to_csv(tmp_path / "d.csv", index=False)
    argv = ["bias-audit", str(tmp_path / "d.csv"), "--sex", "sex", "--race-ethnicity", "race", "--selected", "hired"]
    assert cli.main([*argv, "--out", str(tmp_path / "o"), "--mlflow-uri", mlflow.get_tracking_uri()]) == 0
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "1")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    assert cli.main([*argv, "--out", str(tmp_path / "p"), "--mlflow-uri", "http://127.0.0.1:9"]) == 4
    assert (tmp_path / "p" / "bias_audit.html").exists()


def test_a_missing_plugin_is_exit_3(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "skfair_measures_mlflow", None)
    _frame().to_csv(tmp_path / "d.csv", index=False)
    argv = ["bias-audit", str(tmp_path / "d.csv"), "--sex", "sex", "--race-ethnicity", "race", "--selected", "hired"]
    assert cli.main([*argv, "--out", str(tmp_path / "o"), "--mlflow-uri", "http://127.0.0.1:9"]) == 3
    assert not (tmp_path / "o").exists()
