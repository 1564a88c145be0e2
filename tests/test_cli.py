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


def test_semicolon_csv_is_sniffed_and_sep_is_suggested_when_one_column_is_read(frame, tmp_path, capsys):
    path = tmp_path / "semi.csv"
    frame.to_csv(path, index=False, sep=";")
    argv = ["audit", str(path), "--sensitive", "sex", "--measures", "fairness.tpr"]
    assert main(argv) == 0  # the delimiter is guessed from the first lines
    sniffed = capsys.readouterr().out
    assert main([*argv, "--sep", ";"]) == 0
    assert capsys.readouterr().out == sniffed
    assert main([*argv, "--sep", ","]) == 2  # a wrong delimiter: one column, and the error says what to do
    err = capsys.readouterr().err
    assert "its columns are ['label;score;sex;" in err
    assert "read as one column: pass its delimiter with --sep (e.g. --sep ';')" in err
    assert main([*argv, "--sep", ";;"]) == 2
    assert "pass one character" in capsys.readouterr().err


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
        [
            "audit",
            str(path),
            "--sensitive",
            "sex",
            "--pos-label",
            "yes",
            "--threshold",
            "0.5",
            "--measures",
            "classif.acc",
        ]
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


@pytest.mark.parametrize("proxy_boot", [0, 50])
def test_proxy_table_has_the_intervals_schema(frame, proxy_boot):
    proxies = ["proxy0", "proxy1", "proxy2"]
    kw = {"label": "label", "prediction": "prediction", "figures": False, "random_state": 0}
    report = audit(frame, sensitive="sex", proxies=proxies, proxy_boot=proxy_boot, boot=20, **kw)
    assert list(report.proxy.columns) == list(report.intervals.columns)  # one summary schema in every table
    assert list(report.proxy["measure"]) == ["unaware.dp.global", "unaware.dp.base"]
    assert report.proxy["construction"].str.startswith("HOC-calibrated").iloc[0]
    assert report.proxy["construction"].str.endswith("percentile bootstrap").all() == bool(proxy_boot)
    assert report.proxy["lower"].isna().all() != bool(proxy_boot)
    assert report.summary["with the sensitive column"].startswith("fairness.cv = ")
    assert "with the sensitive column" not in audit(frame, proxies=proxies, **kw).summary  # nothing to compare with


def test_beta_binomial_posterior_in_table_and_report(csv, tmp_path, capsys):
    pytest.importorskip("skfair_measures.bayes")
    out_html = tmp_path / "bb.html"
    argv = [
        "audit",
        str(csv),
        "--sensitive",
        "sex",
        "--measures",
        "fairness.tpr",
        "fairness.eod",
        "classif.acc",
        "--posterior",
        "bb",
        "--eps",
        "0.1",
        "--html",
        str(out_html),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Intervals (95%) and verdicts against eps = 0.1" in printed and "prob_within" in printed
    assert "bb (95% intervals: Beta-Binomial posterior; eps = 0.1)" in printed  # the construction, in words
    headline = printed.splitlines()[2]  # the verdict in words, first
    assert headline.startswith("fairness.") and " between " in headline and "interval" in headline
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
        frame,
        sensitive="sex",
        measures=["fairness.tpr", "fairness.fpr"],
        posterior="bc",
        figures=False,
        posterior_options={"chains": 2, "tune": 300, "n_draws": 100},
    )
    post = rep.posteriors["fairness.tpr"]
    assert post.method == "bc" and post.attrs["n_unlabeled"] == 100
    assert rep.posteriors["fairness.fpr"].trace is post.trace  # one MCMC fit serves both measures
    row = rep.intervals.iloc[0]
    assert row["lower"] <= row["value"] <= row["upper"] and row["n"] == 400  # the unlabeled rows' scores too


def test_auto_posterior_says_which_method_it_used(frame):
    """auto with scores and unlabeled rows: BC's estimate in the labels' Jeffreys interval below 200 labels (the draws
    are bb's); bb (with a note) when every row has a label."""
    pytest.importorskip("nutpie")
    rep = audit(
        frame,
        sensitive="sex",
        measures=["fairness.tpr"],
        posterior="auto",
        figures=False,
        posterior_options={"chains": 2, "tune": 300, "n_draws": 100},
    )
    post = rep.posteriors["fairness.tpr"]
    assert (
        post.method == "bb" and post.attrs["estimate"].startswith("bc's") and post.construction.startswith("Jeffreys")
    )
    assert rep.summary["posterior"].startswith("auto: bb")
    labeled = frame.dropna(subset=["label"])
    rep = audit(labeled, sensitive="sex", measures=["fairness.tpr"], posterior="auto", figures=False)
    assert rep.posteriors["fairness.tpr"].method == "bb"
    assert any("posterior='auto' uses the Beta-Binomial model" in n for n in rep.notes)


def test_a_value_and_its_posterior_say_which_rows_they_came_from(frame):
    """fairness.cv needs no labels: its value and its bcr posterior both read all 400 rows' predictions."""
    pytest.importorskip("nutpie")
    rep = audit(
        frame,
        sensitive="sex",
        measures=["fairness.cv", "fairness.tpr"],
        posterior="auto",
        figures=False,
        posterior_options={"chains": 2, "tune": 300, "n_draws": 100},
    )
    row = rep.table.set_index("measure").loc["fairness.cv"]
    post = rep.intervals.set_index("measure").loc["fairness.cv"]
    assert row["n"] == 400 and post["n"] == 400  # each row says how many rows it used: the same ones
    assert rep.table.set_index("measure").loc["fairness.tpr", "n"] == 300  # a rate that needs labels: the labeled
    assert row["value"] == pytest.approx(post["value"])
    assert post["lower"] <= row["value"] <= post["upper"]
    assert rep.by_group["n (all rows)"].sum() == 400 and rep.by_group["n"].sum() == 300
    assert post["lower"] == pytest.approx(post["upper"])  # every prediction is known: no uncertainty left
    assert "describes all 400 rows" in post["note"]
    text = rep.to_text()
    assert "Intervals (95%)" in text and "describes all 400 rows" in text
    assert max(len(line) for line in text.split("\n\n")[2].splitlines()) < 120  # the measure table
    page = render_html(rep)
    assert "<th>prob_within</th>" in page and "&lt;NA&gt;" not in page


def test_a_measure_without_posterior_is_noted_and_the_others_still_get_one(frame):
    rep = audit(
        frame, sensitive="sex", measures=["fairness.tpr", "fairness.mse", "fairness.fpr"], posterior="bb", figures=False
    )
    assert set(rep.posteriors) == {"fairness.tpr", "fairness.fpr"}
    assert any(n.startswith("no posterior for fairness.mse") for n in rep.notes)


def test_measures_command(capsys):
    assert main(["measures"]) == 0
    assert "fairness.eod" in capsys.readouterr().out


def test_mlflow_missing_gives_a_clear_error(csv, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "skfair_measures_mlflow", None)  # import fails
    rc = main(["audit", str(csv), "--sensitive", "sex", "--quiet", "--mlflow-uri", "file:///nowhere"])
    assert rc == 3  # a missing optional dependency
    assert "skfair-measures-mlflow" in capsys.readouterr().err


def _audit_to_mlflow(csv, tmp_path, uri, capsys, *more):
    argv = [
        "audit",
        str(csv),
        "--sensitive",
        "sex",
        "--measures",
        "fairness.tpr",
        "classif.acc",
        "--mlflow-uri",
        uri,
        "--mlflow-experiment",
        "audit-test",
        "--html",
        str(tmp_path / "r.html"),
        *more,
    ]
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
    ((results, kw),) = calls
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


# -- the command line speaks in flags --------------------------------------------------------
def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def _zip_frame():
    """Zip codes "01", "1" and "02": three groups that an integer reading merges into two."""
    rng = np.random.default_rng(5)
    n = 600
    zips = rng.choice(["01", "1", "02"], n)
    label = rng.integers(0, 2, n)
    hit = rng.random(n) < np.select([zips == "01", zips == "1"], [0.9, 0.6], 0.75)
    return pd.DataFrame({"label": label, "prediction": np.where(hit, label, 1 - label), "zip": zips})


def test_zip_codes_stay_three_groups(tmp_path, capsys):
    df = _zip_frame()
    path = tmp_path / "zip.csv"
    df.to_csv(path, index=False)
    assert ",01\n" in path.read_text()  # the file holds the text the user typed
    assert main(["audit", str(path), "--sensitive", "zip", "--measures", "fairness.tpr"]) == 0
    printed = capsys.readouterr().out
    import skfair_measures as sfm

    right = sfm.msr("fairness.tpr")(df["label"], df["prediction"], sensitive_features=df["zip"])
    merged = sfm.msr("fairness.tpr")(df["label"], df["prediction"], sensitive_features=df["zip"].astype(int))
    assert abs(right - merged) > 0.01  # merging "01" and "1" would give another number
    assert f"fairness.tpr {right:.4f}" in printed
    per_group = printed.split("Per group:")[1]
    assert re.search(r"^01\s", per_group, re.M) and re.search(r"^1\s", per_group, re.M)
    assert re.search(r"^02\s", per_group, re.M)


def test_groups_named_na_and_none_are_groups(tmp_path, capsys):
    rng = np.random.default_rng(6)
    n = 300
    df = pd.DataFrame(
        {"label": rng.integers(0, 2, n), "prediction": rng.integers(0, 2, n), "grp": rng.choice(["NA", "None", "x"], n)}
    )
    path = tmp_path / "na.csv"
    df.to_csv(path, index=False)
    assert main(["audit", str(path), "--sensitive", "grp", "--measures", "fairness.tpr"]) == 0
    per_group = capsys.readouterr().out.split("Per group:")[1]
    for g in ("NA", "None", "x"):
        assert re.search(rf"^{g}\s+\d+", per_group, re.M), g
    # an empty cell is still a missing group: a clear error naming the column
    df.loc[3, "grp"] = ""
    df.to_csv(path, index=False)
    assert main(["audit", str(path), "--sensitive", "grp"]) == 2
    assert "'grp' has 1 missing value" in capsys.readouterr().err


def test_empty_and_header_only_files(tmp_path, capsys):
    empty = _write(tmp_path, "empty.csv", "")
    assert main(["audit", str(empty), "--sensitive", "sex"]) == 2
    assert f"{empty} is empty: expected a header row" in capsys.readouterr().err
    header = _write(tmp_path, "header.csv", "label,prediction,sex\n")
    assert main(["audit", str(header), "--sensitive", "sex"]) == 2
    assert "has a header (label, prediction, sex) but no rows" in capsys.readouterr().err


def test_missing_default_label_column_is_an_error(tmp_path, capsys):
    path = _write(tmp_path, "nolabel.csv", "y,prediction,sex\n1,1,F\n0,1,M\n1,0,F\n0,0,M\n")
    assert main(["audit", str(path), "--sensitive", "sex"]) == 2
    err = capsys.readouterr().err
    assert "no label column 'label' (--label)" in err and "['y', 'prediction', 'sex']" in err
    assert "--no-labels" in err and "label=" not in err
    assert main(["audit", str(path), "--sensitive", "sex", "--label", "y"]) == 0  # naming it works
    capsys.readouterr()
    # no label in any row: nothing to measure, say so (exit 0 with an empty report was the old answer)
    empty = _write(tmp_path, "unlabeled.csv", "label,prediction,sex\n,1,F\n,0,M\n")
    assert main(["audit", str(empty), "--sensitive", "sex"]) == 2
    err = capsys.readouterr().err
    assert "no row has a true label (the column 'label' is empty in every row)" in err
    assert "--proxies" in err and "--proxy-metric dp" in err
    assert main(["audit", str(empty), "--sensitive", "sex", "--no-labels"]) == 2
    assert "no row has a true label:" in capsys.readouterr().err


def test_error_messages_name_flags_not_python_arguments(csv, frame, tmp_path, capsys):
    df = frame.dropna(subset=["label"]).drop(columns="prediction")
    df["label"] = np.where(df["label"] == 1, "yes", "no")
    text = tmp_path / "text_labels.csv"
    df.to_csv(text, index=False)
    cases = [
        (["audit", str(text), "--sensitive", "sex"], ["--pos-label"], ["pos_label"]),
        (
            ["audit", str(csv), "--sensitive", "sex", "--measures", "fairness.tpx"],
            ["`skfair measures`", "fairness.tp"],
            ["msrs()"],
        ),
        (["audit", str(csv), "--sensitive", "sex", "--score", "proba"], ["(--score)"], ["score="]),
        (
            ["audit", str(csv), "--proxies", "proxy0", "proxy1", "proxy2", "--measures", "fairness.tpr"],
            ["--sensitive"],
            ["sensitive="],
        ),
        (
            ["audit", str(text), "--sensitive", "sex", "--pos-label", "yes", "--posterior", "bc"],
            ["--posterior bc", "--posterior bb"],
            ["posterior="],
        ),
        (
            ["audit", str(csv), "--sensitive", "sex", "--mlflow-uri", "http://127.0.0.1:9", "--mlflow-timeout", "0"],
            ["--mlflow-timeout 0"],
            [],
        ),
        (["audit", str(csv), "--sensitive", "sex", "--prob", "1.5"], ["--prob 1.5; pass a probability"], ["prob="]),
    ]
    for argv, wanted, unwanted in cases:
        rc = main(argv)
        err = capsys.readouterr().err
        assert rc in (1, 2), (argv, err)
        assert err.startswith("skfair audit: error: ") and err.count("\n") == 1, err
        for w in wanted:
            assert w in err, (w, err)
        for u in unwanted:
            assert u not in err, (u, err)


def test_undefined_flag_and_undefined_values_with_their_reason(tmp_path, capsys):
    # group "c" has no positive label: its TPR is 0/0
    df = pd.DataFrame({"label": [1, 0, 1, 0, 0, 0], "prediction": [1, 0, 0, 0, 1, 0], "g": list("aabbcc")})
    path = tmp_path / "undefined.csv"
    df.to_csv(path, index=False)
    assert main(["audit", str(path), "--sensitive", "g", "--measures", "fairness.tpr", "fairness.fpr"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"fairness\.tpr\s+undefined \[1\]", out), out  # the reason goes below the table
    assert re.search(r"^\[1\] fairness\.tpr: .*\['c'\]", out, re.M), out
    table = out.split("\n\n")[1]
    assert max(len(line) for line in table.splitlines() if not line.startswith("[")) < 120
    assert "--undefined drop" in out and "undefined='drop'" not in out  # the note speaks in flags
    assert re.search(r"^c\s+2\s+undefined", out.split("Per group:")[1], re.M)
    assert main(["audit", str(path), "--sensitive", "g", "--measures", "fairness.tpr", "--undefined", "drop"]) == 0
    assert re.search(r"fairness\.tpr\s+1\.0000", capsys.readouterr().out)  # a: 1, b: 0 (c dropped)
    assert main(["audit", str(path), "--sensitive", "g", "--measures", "fairness.tpr", "--undefined", "raise"]) == 2
    err = capsys.readouterr().err
    assert "undefined for group(s) ['c']" in err and "--undefined drop" in err


def test_audit_report_with_an_undefined_measure(tmp_path):
    df = pd.DataFrame({"label": [1, 0, 1, 0, 0, 0], "prediction": [1, 0, 0, 0, 1, 0], "g": list("aabbcc")})
    with pytest.warns(UserWarning, match="undefined"):
        import skfair_measures as sfm

        sfm.msr("fairness.tpr")(df["label"], df["prediction"], sensitive_features=df["g"])
    rep = audit(df, sensitive="g", measures=["fairness.tpr", "classif.acc"], figures=False)
    row = rep.table.set_index("measure").loc["fairness.tpr"]
    assert np.isnan(row["value"]) and "['c']" in row["reason"]
    assert pd.isna(rep.table.set_index("measure").loc["classif.acc", "reason"])
    page = render_html(rep)
    assert re.search(r"<td[^>]*>undefined \(.*\[&#x27;c&#x27;\].*\)</td>", page)
    assert ">NaN<" not in page
    assert '<td class="num">2</td>' in page  # group sizes stay integers
    assert re.search(r'<th class="txt">c</th><td class="num">2</td><td class="txt">undefined</td>', page)
    assert any("undefined for group(s) ['c']" in n for n in rep.notes)


def test_every_flag_has_help():
    from skfair_measures.cli import _parser

    parser = _parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in ("audit", "measures"):
        for action in sub.choices[name]._actions:
            assert action.help, (name, action.option_strings or action.dest)


def test_measures_command_lists_the_registry(capsys):
    from skfair_measures.registry import msrs

    assert main(["measures"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["key", "base", "operation", "direction"]
    keys = [line.split()[0] for line in out[1:]]
    assert "fairness.eod" in keys and "classif.acc" in keys
    assert "fairness" not in keys  # the generic entry needs Python arguments
    assert set(keys) == set(msrs()["key"]) - {"fairness"}


def test_dead_mlflow_server_prints_one_line_and_keeps_the_report(csv, tmp_path, capsys, monkeypatch):
    pytest.importorskip("mlflow")
    pytest.importorskip("skfair_measures_mlflow")
    import time

    for var in ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES"):
        monkeypatch.delenv(var, raising=False)
    html_path = tmp_path / "kept.html"
    t0 = time.perf_counter()
    rc = main(
        [
            "audit",
            str(csv),
            "--sensitive",
            "sex",
            "--measures",
            "fairness.tpr",
            "--html",
            str(html_path),
            "--mlflow-uri",
            "http://127.0.0.1:9",
            "--mlflow-experiment",
            "dead",
            "--mlflow-timeout",
            "2",
        ]
    )
    elapsed = time.perf_counter() - t0
    captured = capsys.readouterr()
    assert rc == 4  # an outside service failed
    assert elapsed < 30
    assert "fairness.tpr" in captured.out and html_path.exists()  # nothing computed is lost
    err = captured.err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("skfair audit: error: could not log to MLflow at http://127.0.0.1:9")
    assert f"the report is kept in {html_path}" in err


def test_help_answers_without_loading_the_library():
    """`skfair --help` lists the commands without importing scikit-learn or pandas (0.04 s, not 2 s)."""
    import subprocess

    code = (
        "import sys\nfrom skfair_measures.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n"
        "    pass\nprint('LOADED', sorted(m for m in ('sklearn', 'pandas', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "audit" in out and "label-next" in out
    assert "LOADED []" in out


def _verdict_lines(printed):
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Verdicts ("))
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


def test_bootstrap_verdicts_are_printed_compactly_and_equal_the_direct_call(csv, frame, tmp_path, capsys):
    import skfair_measures as sfm

    out_html = tmp_path / "v.html"
    keys = ["fairness.tpr", "fairness.eod", "fairness.acc"]
    argv = [
        "audit",
        str(csv),
        "--sensitive",
        "sex",
        "--measures",
        *keys,
        "--boot",
        "300",
        "--eps",
        "0.1",
        "--prob",
        "0.9",
        "--html",
        str(out_html),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    lines = _verdict_lines(printed)
    assert max(map(len, lines)) < 120
    assert "eps = 0.1" in lines[0] and "family-wise level 0.9 over 3 distinct differences" in lines[1]
    lab = frame[frame["label"].notna()]
    boots = sfm.bootstraps(
        keys, lab["label"].astype(int), lab["prediction"], sensitive_features=lab["sex"], n_boot=300, random_state=0
    )
    want = sfm.verdicts(boots, eps=0.1, prob=0.9)
    shown = [line.split() for line in lines[2:-1] if line.startswith("  fairness.")]
    assert len(shown) == len(want) == 4
    for row in want.itertuples():  # every pair printed with its estimate, interval and verdict
        assert [
            row.measure,
            row.base,
            "F",
            "-",
            "M",
            f"{row.estimate:+.3f}",
            f"[{row.lower:+.3f},",
            f"{row.upper:+.3f}]",
            row.verdict,
        ] in shown
    # the intervals, from their summaries: each measure's construction (score intervals for these small groups)
    assert all(b.construction[:30] in printed for b in boots.values())  # cut to the table's column width
    page = out_html.read_text(encoding="utf-8")
    assert "<h2>Verdicts (bootstrap)</h2>" in page and "eps = 0.1" in page
    assert "with probability 0.9 (family-wise level)" in page and page.count('<td class="txt">fairness.') >= 4


def test_posterior_verdicts_are_printed_and_a_bad_boot_names_the_flag(csv, capsys):
    pytest.importorskip("skfair_measures.bayes")
    argv = ["audit", str(csv), "--sensitive", "sex", "--measures", "fairness.tpr", "--posterior", "bb"]
    assert main(argv) == 0
    lines = _verdict_lines(capsys.readouterr().out)
    assert lines[0].startswith("Verdicts (posterior)") and "max-type band over the draws" in " ".join(lines)
    assert main(["audit", str(csv), "--sensitive", "sex", "--boot", "1"]) == 2
    assert "--boot 1" in capsys.readouterr().err


def test_mlflow_logging_carries_the_verdicts(csv, tmp_path, capsys):
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("skfair_measures_mlflow")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri)
    client.create_experiment("audit-test", artifact_location=(tmp_path / "artifacts").as_uri())
    run_id = _audit_to_mlflow(csv, tmp_path, uri, capsys, "--boot", "200")
    run = client.get_run(run_id)
    counts = {k.rsplit("/", 1)[1]: v for k, v in run.data.metrics.items() if k.startswith("fairness.verdicts/")}
    assert set(counts) == {"exceeds", "inconclusive", "within", "undefined"} and sum(counts.values()) == 1
    assert "family-wise level 0.95" in run.data.tags["fairness.verdicts"]
