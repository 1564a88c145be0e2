"""A logged run read back through MlflowClient: names that say what a number is and which rows it came from."""

import json
import warnings

import mlflow
import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from skfair_measures_mlflow import log_fairness

import skfair_measures as sfm
from skfair_measures import bayes

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")  # MLflow's sqlite store, not ours


@pytest.fixture(scope="module")
def audit_run(tracking):
    """Point values of four measures, a bootstrap, and a posterior from 300 labelled rows of 2,000, one run."""
    rng = np.random.default_rng(0)
    n = 2000
    sex = pd.Series(rng.choice(["Female", "Male"], n), name="sex")
    y = rng.integers(0, 2, n)
    score = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    pred = (score > 0.5).astype(int)
    ms = [sfm.msr(k) for k in ("fairness.tpr", "fairness.fpr", "fairness.cv", "classif.acc")]
    point = sfm.evaluate_measures(ms, y, pred, sensitive_features=sex)
    boot = sfm.bootstrap(sfm.msr("fairness.tpr"), y, pred, sensitive_features=sex, n_boot=200, random_state=0)
    post = bayes.posterior(
        sfm.msr("fairness.tpr"), y[:300], score[:300], sensitive_features=sex[:300], method="bb", random_state=0
    )
    with mlflow.start_run() as run:
        log_fairness(point, measures=ms)
        log_fairness([("fairness.tpr", boot), ("fairness.tpr", post)])
    return MlflowClient().get_run(run.info.run_id), point, boot, post


def test_names_say_what_each_number_is(audit_run):
    run, point, boot, post = audit_run
    got = run.data.metrics
    tpr = point["fairness.tpr"]
    assert got["fairness.tpr"] == pytest.approx(tpr.value)  # the disparity, at the measure's key
    assert got["fairness.tpr.overall_tpr"] == pytest.approx(tpr.overall)  # the rate over all rows, named so
    assert "fairness.tpr.overall" not in got
    assert got["fairness.cv.overall_selection_rate"] == pytest.approx(point["fairness.cv"].overall)
    assert not any(k.startswith("classif.acc.") for k in got)  # its value is its overall rate
    assert got["fairness.tpr.posterior/prob_within"] == pytest.approx(post.prob_within(0.05))
    assert "fairness.tpr.bootstrap/prob_within" not in got  # a percentile bootstrap gives no probability
    assert not any(k.endswith(("/mean", "/sd", "share_within")) for k in got)  # fewer metrics, each with a meaning


def test_the_run_reads_right_in_mlflow_3(audit_run):
    """The experiment opens on runs (not the GenAI overview), the report is in the run, the headline is a tag."""
    run, *_ = audit_run
    exp = MlflowClient().get_experiment(run.info.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    files = {f.path for f in MlflowClient().list_artifacts(run.info.run_id, "fairness")}
    assert {"fairness/report.html", "fairness/intervals.png", "fairness/groupwise.png"} <= files
    assert run.data.tags["fairness.headline"].startswith("fairness.tpr ")
    assert not any(".n_" in k or "groups." in k for k in run.data.metrics)  # sizes are in the table


def test_an_experiment_kind_already_set_is_kept(tracking):
    exp = mlflow.create_experiment("skfair-genai", tags={"mlflow.experimentKind": "genai_development"})
    res = sfm.msr("fairness.tpr").evaluate([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("FFMM"))
    with mlflow.start_run(experiment_id=exp):
        assert log_fairness(res, artifacts=False).logged
    assert MlflowClient().get_experiment(exp).tags["mlflow.experimentKind"] == "genai_development"


def test_the_report_can_be_left_out(tracking):
    res = sfm.msr("fairness.tpr").evaluate([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("FFMM"))
    with mlflow.start_run():
        logged = log_fairness(res, report=False)
    assert logged.logged and not any(a.endswith(".html") for a in logged.artifacts)


def test_one_table_with_a_kind_column(audit_run):
    run, point, boot, post = audit_run
    logged = json.loads(run.data.tags["mlflow.loggedArtifacts"])
    # two calls, one groupwise table; the verdicts of the sampled results in their one table
    assert sorted(a["path"] for a in logged) == [f"fairness/{t}.json" for t in ("groupwise", "summary", "verdicts")]
    table = mlflow.load_table("fairness/groupwise.json", run_ids=[run.info.run_id])
    assert list(table.columns[:5]) == ["prefix", "step", "result", "kind", "quantity"]
    rows = table[(table.result == "fairness.tpr") & (table.quantity == "tpr")]
    assert sorted(rows["kind"]) == ["bootstrap", "point", "posterior"]  # three rows told apart
    by_kind = rows.set_index("kind")[["sex=Female", "sex=Male"]]
    assert by_kind.loc["posterior"].to_numpy() == pytest.approx(post.by_group.to_numpy())
    sizes = table[table.result == "groups"].set_index("quantity")
    assert sizes.loc["n_labeled", ["sex=Female", "sex=Male"]].sum() == 300
    assert set(sizes.index) == {"n_rows", "n_labeled"}


def test_params_only_where_a_person_looks(audit_run):
    run, *_ = audit_run
    assert run.data.params == {"fairness.interval_prob": "0.95", "fairness.eps": "0.05"}


def test_many_measures_and_steps_keep_the_logged_artifacts_tag_small(tracking):
    """MLflow keeps the tables of a run in one tag of about 5,000 characters: one entry whatever we log."""
    rng = np.random.default_rng(1)
    y, p = rng.integers(0, 2, 400), rng.integers(0, 2, 400)
    A = pd.Series(rng.choice(list("ABCDE"), 400), name="site")
    keys = [k for k in sfm.registry.keys() if k.startswith("fairness.") and "=" not in k][:20]
    ms = [sfm.msr(k) for k in keys]
    with mlflow.start_run() as run:
        for step in range(2):
            for prefix in ("val/", "test/"):
                with warnings.catch_warnings():  # undefined groups of some measures: not what this test is about
                    warnings.simplefilter("ignore")
                    res = sfm.evaluate_measures(ms, y, p, sensitive_features=A)
                    logged = log_fairness(res, prefix=prefix, step=step, log_params=False)
                assert logged.logged
    tag = MlflowClient().get_run(run.info.run_id).data.tags["mlflow.loggedArtifacts"]
    assert json.loads(tag) == [{"path": f"fairness/{t}.json", "type": "table"} for t in ("summary", "groupwise")]
    table = mlflow.load_table("fairness/groupwise.json", run_ids=[run.info.run_id])
    assert sorted(set(zip(table["prefix"], table["step"], strict=True))) == sorted(
        (pre, s) for pre in ("val/", "test/") for s in range(2)
    )


def test_a_posterior_that_read_unlabeled_rows_says_which_rows_it_describes(tracking):
    m, rng = sfm.msr("fairness.cv"), np.random.default_rng(0)
    point = m.evaluate([1, 0, 1, 0], [1, 0, 0, 0], sensitive_features=list("FFMM"))
    A, score = rng.choice(list("FM"), 2000), rng.uniform(size=2000)  # 500 labeled rows, 1500 unlabeled
    y = (rng.uniform(size=500) < score[:500]).astype(int)
    unlabeled = {"unlabeled_scores": score[500:], "unlabeled_sensitive": A[500:]}
    post = sfm.bayes.posterior(m, y, score[:500], sensitive_features=A[:500], method="ppi", **unlabeled, random_state=0)
    with mlflow.start_run() as run:
        log_fairness([point, post], artifacts=False)
    data = MlflowClient().get_run(run.info.run_id).data
    assert "describes all 2,000 rows" in data.tags["fairness.cv.posterior.note"]
