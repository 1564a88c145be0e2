"""Issue 18's hostile cases, one test each: the right number, NaN with its reason, or an error naming the fix.

Each test is one case of the issue's list (the "Why" list, the "Unclear" ones included),
in the issue's order, with the right answer taken from an independent source where
there is one (fairlearn's ``MetricFrame``, the same rows spelled plainly). The cases
found beyond the list follow, and the bounds on what a message or a run holds when
there are very many groups.
"""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures import engines
from skfair_measures._small_groups import SmallGroupWarning
from skfair_measures._undefined import NAMED_GROUPS, name_groups
from skfair_measures.groupwise import groupwise_metrics

rng = np.random.default_rng(18)
N = 600
SEX = rng.choice(["F", "M", "X"], N, p=[0.45, 0.45, 0.1])
Y = rng.integers(0, 2, N)
P = (rng.random(N) < np.where(SEX == "F", 0.4, 0.7)).astype(int)


# -- the list ----------------------------------------------------------------------------
def test_categorical_with_an_unused_level_equals_fairlearn_in_every_door():
    fl = pytest.importorskip("fairlearn.metrics")
    pl = pytest.importorskip("polars")
    df = pd.DataFrame({"y": Y, "p": P, "sex": pd.Categorical(SEX)})
    df = df[df.sex != "X"].reset_index(drop=True)  # 'X' stays a level of the Categorical
    frame = fl.MetricFrame(metrics=fl.true_positive_rate, y_true=df.y, y_pred=df.p, sensitive_features=df.sex)
    want = frame.difference()
    assert 0 < want < 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no undefined group, no warning blaming y_true
        assert sfm.msr("fairness.tpr")(df.y, df.p, sensitive_features=df.sex) == pytest.approx(want)
        assert groupwise_metrics(["tpr"], df.y, df.p, sensitive_features=df.sex).difference()["tpr"] == (
            pytest.approx(want)
        )
        for table in (df, pl.from_pandas(df)):
            assert engines.compute_metrics(table, "y", "p", "sex", ["fairness.tpr"])["fairness.tpr"] == (
                pytest.approx(want)
            )


def test_merge_with_a_declared_group_absent_leaves_it_out():
    small = np.where(np.arange(N) < 12, "s", np.where(SEX == "F", "F", "M"))  # 's': 12 rows, merged into 'other'
    plain = sfm.msr("fairness.tpr", min_group_size=20, small_groups="merge")
    declared = sfm.msr("fairness.tpr", groups=["F", "M", "s", "absent"], min_group_size=20, small_groups="merge")
    with pytest.warns(SmallGroupWarning):
        want = plain(Y, P, sensitive_features=small)
    with pytest.warns(SmallGroupWarning, match=r"left out, with their rows: 'absent' \(0\)"):
        res = declared.evaluate(Y, P, sensitive_features=small)
    assert not math.isnan(want) and res.value == pytest.approx(want)
    assert res.by_group.index.tolist() == ["F", "M", "other"]  # no empty 'other' of the absent group
    frame = pd.DataFrame({"y": Y, "p": P, "g": small})
    with pytest.warns(SmallGroupWarning):
        assert engines.compute_metrics(frame, "y", "p", "g", [declared]).iloc[0] == pytest.approx(want)
    with pytest.warns(SmallGroupWarning):
        boot = sfm.bootstrap(declared, Y, P, sensitive_features=small, n_boot=10, random_state=0)
    assert boot.value == pytest.approx(want) and np.isfinite(boot.draws).all()


def test_multiclass_fold_missing_a_class_is_scored_with_declared_labels():
    from sklearn.metrics import recall_score

    y_true = np.array([0, 1, 0, 1, 0, 1, 1, 0])  # a fold of a 3-class problem without class 2
    y_pred = np.array([0, 1, 2, 1, 0, 0, 1, 2])
    a = np.array(list("FFFFMMMM"))
    m = sfm.msr("fairness.tpr", labels=[0, 1, 2], average="macro")
    # declared classes that miss one the model predicts are refused naming labels=
    with pytest.raises(ValueError, match=r"outside the declared classes labels=\[0, 1\]; add them to labels="):
        sfm.msr("fairness.tpr", labels=[0, 1], average="macro")(y_true, y_pred, sensitive_features=a)
    # the macro mean over the classes y_true holds (class 2 has no positives in the fold)
    recall = [recall_score(y_true[a == g], y_pred[a == g], labels=[0, 1], average="macro") for g in "FM"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sfm.UndefinedGroupWarning)  # class 2 has no positives: left out of the mean
        got = m(y_true, y_pred, sensitive_features=a)
    assert got == pytest.approx(abs(recall[0] - recall[1]))


def test_nan_relevance_in_ndcg_is_refused_naming_y_true():
    y = np.array([3.0, np.nan, 1.0, 0.0])
    score = np.array([0.9, 0.8, 0.2, 0.1])
    with pytest.raises(ValueError, match=r"y_true.*NaN|NaN.*y_true"):
        sfm.msr("fairness.ndcg")(y, score, sensitive_features=list("FMFM"), query_id=[0, 0, 1, 1])


def test_prior_only_posterior_says_so_and_gives_no_verdict():
    from skfair_measures import bayes

    y = np.zeros(40, dtype=int)  # no positive label anywhere: TPR is undefined in every group
    a = np.repeat(["F", "M"], 20)
    with pytest.warns(sfm.UndefinedGroupWarning):
        post = bayes.posterior(sfm.msr("fairness.tpr"), y, y, sensitive_features=a, method="bb", random_state=0)
    assert math.isnan(post.value) and post.reason and "tpr" in post.reason
    assert post.rope().verdict is None


def test_identical_proxy_columns_are_unreliable():
    from skfair_measures import unaware

    a = rng.integers(0, 2, 400)
    y_pred = (rng.random(400) < np.where(a == 1, 0.6, 0.3)).astype(int)
    guess = np.where(rng.random(400) < 0.75, a, 1 - a)
    proxies = pd.DataFrame({"zip": guess, "name": guess, "zip2": guess})
    with pytest.warns(unaware.ProxyReliabilityWarning, match="'zip' and 'name'"):
        res = unaware.proxy_disparity(y_pred, proxies, metric="dp", n_check=0, random_state=0)
    assert not res.reliable


def test_quantification_with_uninformative_features_is_flagged():
    from sklearn.linear_model import LogisticRegression

    from skfair_measures import unaware

    r = np.random.default_rng(3)
    s = r.integers(0, 2, 1500)
    X = r.normal(size=(1500, 2))  # carries nothing about s
    model = LogisticRegression().fit(X[:500], (X[:500, 0] > 0).astype(int))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = unaware.quantified_disparity(model, X[500:1000], s[500:1000], X[1000:], quantifier="PACC", random_state=0)
    assert not res.reliable and res.reasons


def _audit_csv(tmp_path, groups, sep=","):
    r = np.random.default_rng(0)
    n = len(groups)
    df = pd.DataFrame({"label": r.integers(0, 2, n), "prediction": r.integers(0, 2, n), "g": groups})
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False, sep=sep)
    return path


def test_audit_html_on_100000_groups_finishes(tmp_path):
    from skfair_measures.cli import main

    groups = np.arange(200_000) % 100_000
    html = tmp_path / "r.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (
            main(
                [
                    "audit",
                    str(_audit_csv(tmp_path, groups)),
                    "--sensitive",
                    "g",
                    "--measures",
                    "fairness.cv",
                    "--html",
                    str(html),
                ]
            )
            == 0
        )
    assert html.stat().st_size < 5_000_000


def test_a_mathtext_group_name_keeps_the_report_and_the_mlflow_metrics(tmp_path, mlflow_store):
    import mlflow
    from skfair_measures_mlflow import log_fairness

    from skfair_measures.report import audit, render_html

    odd = np.where(SEX == "F", "cost $10^$", "M")
    df = pd.DataFrame({"y": Y, "p": P, "g": odd})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no figure lost
        rep = audit(df, label="y", prediction="p", sensitive="g", measures=["fairness.tpr"])
        assert "cost" in render_html(rep)
    res = sfm.msr("fairness.tpr").evaluate(Y, P, sensitive_features=odd)
    with mlflow.start_run(experiment_id=mlflow_store) as run:
        log_fairness(res)
    metrics = mlflow.MlflowClient().get_run(run.info.run_id).data.metrics
    assert metrics["fairness.tpr"] == pytest.approx(res.value)


def test_semicolon_csv_is_read(tmp_path, capsys):
    from skfair_measures.cli import main

    path = _audit_csv(tmp_path, np.where(SEX == "F", "F", "M"), sep=";")
    assert main(["audit", str(path), "--sensitive", "g", "--measures", "fairness.cv"]) == 0
    capsys.readouterr()
    assert main(["audit", str(path), "--sensitive", "g", "--sep", ","]) == 2
    assert "--sep" in capsys.readouterr().err


def test_ratio_to_reference_with_a_zero_reference_rate_names_the_group_and_the_fix():
    y_pred = np.array([0, 0, 1, 1, 0, 1])
    a = np.array(list("rrsstt"))
    m = sfm.msr("fairness.cv", operation=sfm.operations.ratio_to_reference("r"))
    with pytest.warns(sfm.UndefinedGroupWarning, match="reference group 'r'"):
        res = m.evaluate(y_pred, y_pred, sensitive_features=a)
    assert math.isnan(res.value) and "choose a reference group" in res.reason


def test_engines_compute_dp_ks_exactly_or_refuse_a_continuous_column_by_name(monkeypatch):
    # was refused on every engine ("no engine path"); now exact from a (group, value) table
    pl = pytest.importorskip("polars")
    from skfair_measures.engines import _aggregate

    scores = rng.random(N)
    frame = pl.DataFrame({"y": Y, "s": scores, "g": SEX})
    got = engines.compute_metrics(frame, "y", "s", "g", ["fairness.dp_ks"])["fairness.dp_ks"]
    assert got == sfm.msr("fairness.dp_ks")(Y, scores, sensitive_features=SEX)
    monkeypatch.setattr(_aggregate, "MAX_VALUES", N // 2)
    with pytest.raises(ValueError, match=r"fairness\.dp_ks.*prediction='s'.*distinct values.*round"):
        engines.compute_metrics(frame, "y", "s", "g", ["fairness.dp_ks"])


def test_ppi_with_a_zero_weight_group_is_undefined_naming_the_weights():
    from skfair_measures import bayes

    r = np.random.default_rng(0)
    g, s = r.integers(0, 2, 300), r.uniform(size=300)
    y = (r.uniform(size=300) < s).astype(int)
    w = np.where(g == 1, 0.0, 1.0)
    with pytest.warns(sfm.UndefinedGroupWarning):
        post = bayes.posterior(
            sfm.msr("fairness.acc"),
            y[:100],
            s[:100],
            sensitive_features=g[:100],
            method="ppi",
            unlabeled_scores=s[100:],
            unlabeled_sensitive=g[100:],
            sample_weight=w[:100],
            random_state=0,
        )
    assert math.isnan(post.value) and "sample_weight sums to 0" in post.reason


def test_active_assessment_with_string_predictions_names_pos_label():
    from skfair_measures.active import ActiveAssessment

    y_pred = np.where(rng.random(50) < 0.5, "yes", "no")
    with pytest.raises(ValueError, match="pos_label"):
        ActiveAssessment(y_pred, rng.random(50), sensitive_features=SEX[:50], metric="tpr")


# -- bounds with very many groups ---------------------------------------------------------------
def test_name_groups_names_ten_and_counts_the_rest():
    assert name_groups([np.int64(1), "1", ("a", True)]) == "[1, '1', ('a', True)]"
    text = name_groups(range(100_000))
    assert text.endswith(f"and {100_000 - NAMED_GROUPS:,} more") and len(text) < 80
    assert len(name_groups(["x" * 10_000])) < 70  # a huge name is cut in the message


def test_undefined_and_small_group_messages_stay_short_with_100000_groups():
    r = np.random.default_rng(1)
    g = r.integers(0, 100_000, 200_000)
    y, p = r.integers(0, 2, g.size), r.integers(0, 2, g.size)
    with pytest.warns(sfm.UndefinedGroupWarning) as seen:
        res = sfm.msr("fairness.tpr").evaluate(y, p, sensitive_features=g)
    assert math.isnan(res.value) and len(res.reason) < 400 and "more" in res.reason
    assert max(len(str(w.message)) for w in seen) < 400
    with pytest.warns(SmallGroupWarning) as seen:
        sfm.msr("fairness.cv", min_group_size=3, small_groups="merge").evaluate(y, p, sensitive_features=g)
    assert max(len(str(w.message)) for w in seen) < 800


@pytest.fixture
def mlflow_store(tmp_path, monkeypatch):
    """A file store of MLflow for one test; the tracking URI is put back afterwards."""
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("skfair_measures_mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    old = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri((tmp_path / "mlruns").as_uri())
    try:
        yield mlflow.create_experiment("hostile")
    finally:
        while mlflow.active_run() is not None:
            mlflow.end_run()
        mlflow.set_tracking_uri(old)


def test_mlflow_logs_the_largest_groups_as_metrics_and_every_group_in_the_table(mlflow_store):
    import mlflow
    from skfair_measures_mlflow import log_fairness

    from skfair_measures.record import MAX_METRIC_GROUPS

    r = np.random.default_rng(2)
    g = np.concatenate([np.repeat(["big0", "big1", "big2"], 40), r.integers(0, 3000, 6000).astype(str)])
    y, p = r.integers(0, 2, g.size), r.integers(0, 2, g.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sfm.UndefinedGroupWarning)
        res = sfm.msr("fairness.cv").evaluate(y, p, sensitive_features=g)
    n_groups = len(res.counts)
    with mlflow.start_run(experiment_id=mlflow_store) as run:
        with pytest.warns(
            UserWarning,
            match=rf"{MAX_METRIC_GROUPS} largest of {n_groups:,} groups.*"
            rf"{n_groups - MAX_METRIC_GROUPS:,} groups are left out",
        ):
            log_fairness(res, group_metrics=True)
    client = mlflow.MlflowClient()
    data = client.get_run(run.info.run_id).data
    counts = {k: v for k, v in data.metrics.items() if k.startswith("groups.n_rows/")}
    values = [k for k in data.metrics if ".group_" in k]
    assert len(counts) == MAX_METRIC_GROUPS and len(values) == MAX_METRIC_GROUPS
    assert {"groups.n_rows/big0", "groups.n_rows/big1", "groups.n_rows/big2"} <= set(counts)  # the largest
    assert min(counts.values()) >= res.counts.sort_values().iloc[-MAX_METRIC_GROUPS]
    assert data.metrics["fairness.cv"] == pytest.approx(res.value)
    assert "left out" in data.tags["skfair.groups_as_metrics"]
    table = json.loads(open(client.download_artifacts(run.info.run_id, "fairness/groupwise.json")).read())
    assert len(table["columns"]) == 5 + n_groups  # prefix, step, result, kind, quantity and every group


# -- found beyond the list -----------------------------------------------------------------------
def test_groupwise_reduction_over_an_undefined_group_warns_as_the_measure_does():
    y, p = [1, 1, 0, 1, 1, 0, 1, 0], [1, 0, 0, 1, 1, 1, 0, 0]
    a = ["a"] * 7 + ["b"]  # 'b': one row, no positive: its tpr is 0/0
    with pytest.warns(sfm.UndefinedGroupWarning, match=r"tpr is undefined for group\(s\) \['b'\] \(no positives"):
        assert math.isnan(groupwise_metrics(["tpr"], y, p, sensitive_features=a).difference()["tpr"])
    with pytest.warns(sfm.UndefinedGroupWarning, match=r"tpr is undefined for group\(s\) \['b'\] \(no positives"):
        assert math.isnan(sfm.msr("fairness.tpr")(y, p, sensitive_features=a))
