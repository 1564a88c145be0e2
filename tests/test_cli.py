import re
import sys

import numpy as np
import pandas as pd
import pytest

from skfair_measures.cli import main
from skfair_measures.report import DEFAULT_MEASURES, audit, render_html


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 400
    sex = rng.choice(["F", "M"], n)
    y = rng.binomial(1, np.where(sex == "M", 0.45, 0.3))
    score = np.clip(0.25 + 0.45 * y + 0.1 * (sex == "M") + rng.normal(0, 0.18, n), 0.01, 0.99)
    df = pd.DataFrame({"label": y.astype(float), "score": score.round(4), "sex": sex})
    df["prediction"] = (df["score"] >= 0.5).astype(int)
    df.loc[rng.choice(n, 100, replace=False), "label"] = np.nan  # the unlabeled part
    for j in range(3):  # weak proxies of sex: each guess is wrong 20% of the time
        flip = rng.random(n) < 0.2
        df[f"proxy{j}"] = np.where(flip, np.where(sex == "F", "M", "F"), sex)
    return df


@pytest.fixture
def csv(frame, tmp_path):
    path = tmp_path / "preds.csv"
    frame.to_csv(path, index=False)
    return path


def test_audit_prints_table_and_writes_self_contained_html(csv, tmp_path, capsys):
    out_html = tmp_path / "report.html"
    rc = main(["audit", str(csv), "--sensitive", "sex", "--html", str(out_html)])
    assert rc == 0
    printed = capsys.readouterr().out
    for key in DEFAULT_MEASURES:
        assert re.search(rf"^\s*{re.escape(key)}\s+\d\.\d{{4}}", printed, re.M), key
    assert "labeled rows: 300" in printed and "unlabeled rows: 100" in printed
    page = out_html.read_text(encoding="utf-8")
    for key in DEFAULT_MEASURES:
        assert key in page
    assert page.count('<img src="data:image/png;base64,') == 3  # groups, density, calibration
    # self-contained: nothing is fetched
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<script" not in page


def test_selected_measures_and_values_match_the_library(csv, frame, capsys):
    rc = main(["audit", str(csv), "--sensitive", "sex", "--measures", "fairness.tpr", "fairness.eod"])
    assert rc == 0
    printed = capsys.readouterr().out
    lab = frame[frame["label"].notna()]
    import skfair_measures as sfm

    tpr = sfm.msr("fairness.tpr")(lab["label"].astype(int), lab["prediction"], sensitive_features=lab["sex"])
    assert f"{tpr:.4f}" in printed
    assert "fairness.cv" not in printed


def test_missing_column_is_named(csv, capsys):
    rc = main(["audit", str(csv), "--sensitive", "gender"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "column 'gender' (--sensitive) is not in the data" in err
    assert "'sex'" in err  # the available columns are listed
    rc = main(["audit", str(csv), "--sensitive", "sex", "--score", "proba"])
    assert rc == 2
    assert "column 'proba' (--score)" in capsys.readouterr().err


def test_bad_input_errors(csv, frame, tmp_path, capsys):
    assert main(["audit", str(tmp_path / "nope.csv"), "--sensitive", "sex"]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "preds.json"
    bad.write_text("{}")
    assert main(["audit", str(bad), "--sensitive", "sex"]) == 2
    assert "cannot tell the format" in capsys.readouterr().err
    assert main(["audit", str(csv)]) == 2
    assert "--sensitive" in capsys.readouterr().err
    no_pred = tmp_path / "nopred.csv"
    frame[["label", "sex"]].to_csv(no_pred, index=False)
    assert main(["audit", str(no_pred), "--sensitive", "sex"]) == 2
    assert "neither a prediction nor a score column" in capsys.readouterr().err
    assert main(["audit", str(csv), "--sensitive", "sex", "--measures", "fairness.tpx"]) == 2
    assert "fairness.tpx" in capsys.readouterr().err


def test_parquet_scores_only_and_pos_label(frame, tmp_path, capsys):
    df = frame.drop(columns="prediction").dropna(subset=["label"])
    df["label"] = np.where(df["label"] == 1, "yes", "no")
    path = tmp_path / "preds.parquet"
    df.to_parquet(path)
    rc = main(
        ["audit", str(path), "--sensitive", "sex", "--pos-label", "yes", "--threshold", "0.5",
         "--measures", "classif.acc"]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    acc = ((df["score"] >= 0.5) == (df["label"] == "yes")).mean()
    assert f"{acc:.4f}" in printed
    assert "prediction: score >= 0.5" in printed


def test_proxies_estimate(csv, capsys):
    rc = main(["audit", str(csv), "--sensitive", "sex", "--proxies", "proxy0", "proxy1", "proxy2"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "unaware.dp.global" in printed and "unaware.dp.base" in printed
    # without the sensitive column: only the proxy estimate and performance measures
    rc = main(["audit", str(csv), "--proxies", "proxy0", "proxy1", "proxy2"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "unaware.dp.global" in printed and "fairness.tpr" not in printed


def test_beta_binomial_posterior_in_table_and_report(csv, tmp_path, capsys):
    pytest.importorskip("skfair_measures.bayes")
    out_html = tmp_path / "bb.html"
    argv = ["audit", str(csv), "--sensitive", "sex", "--measures", "fairness.tpr", "fairness.eod", "classif.acc",
            "--posterior", "bb", "--eps", "0.1", "--html", str(out_html)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "post_mean" in printed and "p_within_eps" in printed
    assert "bb (95% credible intervals, eps = 0.1)" in printed
    page = out_html.read_text(encoding="utf-8")
    assert "Posterior of fairness.tpr" in page and "Posterior of fairness.eod" in page
    assert page.count('<img src="data:image/png;base64,') == 3 + 2


def test_posterior_arguments_are_checked(frame, csv, capsys):
    labeled = frame.dropna(subset=["label"])
    with pytest.raises(ValueError, match="every row here has a label"):
        audit(labeled, sensitive="sex", posterior="bc", figures=False)
    with pytest.raises(SystemExit) as exc:  # argparse rejects an unknown method
        main(["audit", str(csv), "--sensitive", "sex", "--posterior", "xx"])
    assert exc.value.code == 2
    assert "invalid choice: 'xx'" in capsys.readouterr().err


def test_bayesian_calibration_posterior_uses_the_unlabeled_rows(frame):
    pytest.importorskip("nutpie")
    rep = audit(
        frame, sensitive="sex", measures=["fairness.tpr", "fairness.fpr"], posterior="bc", figures=False,
        posterior_options={"chains": 2, "tune": 300, "n_draws": 100},
    )
    post = rep.posteriors["fairness.tpr"]
    assert post.method == "bc" and post.attrs["n_unlabeled"] == 100
    assert rep.posteriors["fairness.fpr"].trace is post.trace  # one MCMC fit serves both measures
    assert rep.table.loc[0, "ci_low"] <= rep.table.loc[0, "post_mean"] <= rep.table.loc[0, "ci_high"]


def test_a_measure_without_posterior_is_noted_and_the_others_still_get_one(frame):
    rep = audit(frame, sensitive="sex", measures=["fairness.tpr", "fairness.mse", "fairness.fpr"], posterior="bb",
                figures=False)
    assert set(rep.posteriors) == {"fairness.tpr", "fairness.fpr"}
    assert any(n.startswith("no posterior for fairness.mse") for n in rep.notes)


def test_measures_command(capsys):
    assert main(["measures"]) == 0
    assert "fairness.eod" in capsys.readouterr().out


def test_mlflow_missing_gives_a_clear_error(csv, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "skfair_measures_mlflow", None)  # import fails
    rc = main(["audit", str(csv), "--sensitive", "sex", "--quiet", "--mlflow-uri", "file:///nowhere"])
    assert rc == 1
    assert "skfair-measures-mlflow" in capsys.readouterr().err


def _audit_to_mlflow(csv, tmp_path, uri, capsys):
    argv = ["audit", str(csv), "--sensitive", "sex", "--measures", "fairness.tpr", "classif.acc",
            "--mlflow-uri", uri, "--mlflow-experiment", "audit-test",
            "--html", str(tmp_path / "r.html")]
    rc = main(argv)
    assert rc == 0, capsys.readouterr().err
    return re.search(r"logged to MLflow run (\w+)", capsys.readouterr().out).group(1)


def test_mlflow_logging_calls_the_plugin(csv, tmp_path, capsys, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    plugin = pytest.importorskip("skfair_measures_mlflow")
    calls = []
    monkeypatch.setattr(plugin, "log_fairness", lambda results, **kw: calls.append((results, kw)))
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a sqlite store takes 10 s to set up
    uri = (tmp_path / "mlruns").as_uri()
    run_id = _audit_to_mlflow(csv, tmp_path, uri, capsys)
    (results, kw), = calls
    assert [name for name, _ in results] == ["fairness.tpr", "classif.acc"]
    assert [m.key for m in kw["measures"]] == ["fairness.tpr", "classif.acc"]
    client = mlflow.MlflowClient(tracking_uri=uri)
    assert "r.html" in [a.path for a in client.list_artifacts(run_id)]
    assert client.get_run(run_id).data.params["audit/source"] == str(csv)


def test_mlflow_logging_end_to_end(csv, tmp_path, capsys):
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("skfair_measures_mlflow")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri)
    client.create_experiment("audit-test", artifact_location=(tmp_path / "artifacts").as_uri())
    run_id = _audit_to_mlflow(csv, tmp_path, uri, capsys)
    metrics = client.get_run(run_id).data.metrics
    assert {"fairness.tpr", "classif.acc"} <= set(metrics)
    assert "r.html" in [a.path for a in client.list_artifacts(run_id)]


def test_audit_api_and_render(frame):
    rep = audit(frame, sensitive="sex", measures=["fairness.eod"], figures=False)
    assert rep.summary["labeled rows"] == 300
    assert rep.by_group.columns.tolist() == ["n", "tpr", "fpr"]
    assert rep.by_group["n"].sum() == 300
    page = render_html(rep)
    assert "fairness.eod" in page and "<img" not in page


def test_console_script_entry_point(capsys):
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["skfair"] == "skfair_measures.cli:main"
    with pytest.raises(SystemExit) as exc:
        main(["audit", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--sensitive" in out and "--posterior" in out
