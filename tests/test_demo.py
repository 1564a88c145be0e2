"""make demo end to end: the MLflow store it leaves holds what the issue promises."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_demo_logs_measures_folds_posteriors_and_plots(tmp_path):
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("skfair_measures_mlflow")
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py"), "--mlflow-uri", uri, "--out", str(tmp_path / "reports")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    for section in ("1. Audit", "2. GridSearchCV", "3. Benchmark", "4. How sure", "5. HTML audit report"):
        assert section in out.stdout
    assert (tmp_path / "reports" / "adult_audit.html").stat().st_size > 50_000
    assert "the bound 0.05" in out.stdout and (tmp_path / "reports" / "pareto_front.png").stat().st_size > 10_000

    mlflow.set_tracking_uri(uri)
    client = mlflow.MlflowClient()
    runs = mlflow.search_runs(experiment_names=["skfair-demo-adult", "skfair-demo-compas"], output_format="list")
    by_name = {r.info.run_name: r for r in runs}
    audit = by_name["adult-logreg-audit"]
    assert 0 < audit.data.metrics["fairness.tpr"] < 1
    # group sizes and per-group values in the run's tables and a chart, not as metrics (group_metrics=True adds them)
    assert not any(k.startswith("groups.") for k in audit.data.metrics)
    assert not any(k.startswith("fairness.tpr.group_") for k in audit.data.metrics)
    audit_files = [a.path for a in client.list_artifacts(audit.info.run_id, "fairness")]
    assert any(f.endswith("groupwise.json") for f in audit_files)
    # per-fold values: child runs of the CV parent, and mean and sd on the parent
    parent = by_name["adult-logreg-cv"]
    assert "fairness.tpr" in parent.data.metrics and "fairness.tpr.sd" in parent.data.metrics
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 3 and all("fairness.tpr" in r.data.metrics for r in children)
    # posteriors: the value, the interval and P(within eps) as metrics, draws and a density plot as artifacts
    post = by_name["adult-logreg-posterior-200-labels"]
    m = post.data.metrics
    assert {f"fairness.acc.posterior/{k}" for k in ("lower", "upper", "prob_within")} <= set(m)
    assert m["fairness.acc.posterior/lower"] <= m["fairness.acc"] <= m["fairness.acc.posterior/upper"]
    files = [a.path for a in client.list_artifacts(post.info.run_id, "fairness/fairness.acc")]
    assert any(f.endswith("posterior_draws.csv") for f in files) and any(f.endswith(".png") for f in files)
    report = by_name["adult-logreg-report"]
    assert [a.path for a in client.list_artifacts(report.info.run_id)] == ["adult_audit.html"]
    # every run in its dataset's experiment (compare() sets the COMPAS one; the later Adult runs name theirs)
    experiments = {e.experiment_id: e.name for e in client.search_experiments()}
    for r in runs:
        dataset = r.info.run_name.split("-")[0]
        assert experiments[r.info.experiment_id] == f"skfair-demo-{dataset}", r.info.run_name
    assert {"adult-logreg-posterior-200-labels", "adult-logreg-report"} <= set(by_name)
