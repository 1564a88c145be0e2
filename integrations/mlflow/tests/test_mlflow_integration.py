"""log_fairness against real local tracking stores: keys, and the layout a person reads.

Values are read back from the store and compared with the measures computed
directly, so a key that was sanitised wrongly, dropped or overwritten shows up.
"""

import json
import subprocess
import sys
import warnings

import mlflow
import numpy as np
import pandas as pd
import pytest
from _helpers import Sampled, artifacts, assert_no_key_is_a_directory, metrics, params, read_back, read_json, tags
from mlflow.tracking import MlflowClient
from mlflow.utils.validation import _validate_metric_name
from skfair_measures_mlflow import FairnessLoggingWarning, log_fairness
from skfair_measures_mlflow._tracking import _batches

import skfair_measures as sfm
from skfair_measures import bayes
from skfair_measures.record import sanitize_key, unique_segments

pytestmark = pytest.mark.filterwarnings("ignore:.*noload.*")  # MLflow's sqlalchemy store


# --- keys ------------------------------------------------------------------------------------
NASTY = ["sex=F", "a/b", "..", ".", "", "  ", "F?", "F!", "Müller", "x:y", "x" * 300, ("F", "a/b")]


def test_sanitised_keys_are_valid_mlflow_names():
    segs = unique_segments(NASTY)
    assert len(set(segs.values())) == len(NASTY)  # no collisions
    for seg in segs.values():
        _validate_metric_name(sanitize_key(f"fairness.tpr.by_group/tpr/{seg}"))  # raises if invalid
        assert "/" not in seg
    for raw in ["fairness.acc_eod=.05", "/a//b/", "a/../b", "x" * 400, "a:b"]:
        key = sanitize_key(raw)
        _validate_metric_name(key)
        assert len(key) <= 250 and ":" not in key


def test_collisions_get_stable_distinct_suffixes():
    a = unique_segments(["F?", "F!", "M"])
    assert a == unique_segments(["M", "F!", "F?"])  # independent of order
    assert a["M"] == "M" and a["F?"] != a["F!"] and a["F?"].startswith("F__")
    assert len(set(unique_segments(["F?", "F!", a["F?"]]).values())) == 3


def test_batches_respect_mlflow_limits():
    batches = _batches(list(range(2500)), list(range(150)), list(range(30)))
    assert sum(len(m) for m, _, _ in batches) == 2500 and sum(len(p) for _, p, _ in batches) == 150
    assert sum(len(t) for _, _, t in batches) == 30
    assert all(len(m) <= 1000 and len(p) <= 100 and len(m) + len(p) + len(t) <= 1000 for m, p, t in batches)
    assert _batches([], []) == [([], [], [])]


# --- the layout a person reads -----------------------------------------------------------------
@pytest.fixture(scope="module")
def audit(data):
    """Four measures on sex x race (6 groups), logged once."""
    X, y = data
    pred = (X.x1 > 0).astype(int)
    ms = [
        sfm.msr("fairness.tpr"),
        sfm.msr("fairness.eod"),
        sfm.msr("classif.acc"),
        sfm.msr("fairness.acc_eod=.05"),
    ]
    return ms, sfm.evaluate_measures(ms, y, pred, sensitive_features=X[["sex", "race"]])


def test_run_layout_reads_back(tracking, audit):
    ms, res = audit
    with mlflow.start_run() as run:
        logged = log_fairness(res, measures=ms, prefix="test/")
    rid = run.info.run_id
    assert logged.logged and logged.error is None and logged.run_id == rid
    read_back(logged)
    got = metrics(rid)
    assert got == pytest.approx(logged.metrics)  # everything computed was logged, nothing more

    # headline values first, at plain keys
    assert list(logged.metrics)[:4] == [
        "test/fairness.tpr",
        "test/fairness.eod",
        "test/classif.acc",
        "test/fairness.acc_eod_.05",
    ]
    for m in ms:
        assert got[f"test/{sanitize_key(m.key)}"] == pytest.approx(res[m.key].value)
    # no group sizes or per-group values as metrics by default: they are in the table
    assert not any("n_rows" in k or "n_labeled" in k or "group_" in k for k in got)
    # the rates over all rows say so and name their base metric; classif.acc's value is its overall rate
    assert got["test/fairness.tpr.overall_tpr"] == pytest.approx(res["fairness.tpr"].overall)
    assert got["test/fairness.eod.overall_fpr"] == pytest.approx(res["fairness.eod"].overall["fairness.fpr"])
    assert not any(k.startswith("test/classif.acc.") for k in got)
    assert len(got) == 4 + 5  # 4 values, 5 overall rates (composites: one per component)
    # tags name the sensitive attributes and the group set (labels kept, tuples as lists)
    t = tags(rid)
    counts = res["fairness.tpr"].counts
    assert t["skfair.sensitive"] == "sex, race"
    assert json.loads(t["skfair.groups"]) == [list(g) for g in counts.index]
    # params only for options a person chose (none here); the configuration is in results.json
    p = params(rid)
    assert p == {}
    assert_no_key_is_a_directory(got)
    assert_no_key_is_a_directory(p)


def test_table_chart_and_results_json(tracking, audit):
    ms, res = audit
    with mlflow.start_run() as run:
        logged = log_fairness(res, measures=ms)
    rid = run.info.run_id
    files = artifacts(rid)
    logs = {"results.json", "groupwise.json", "groupwise.png", "summary.json", "report.html"}
    assert set(logged.artifacts) == {f"fairness/{f}" for f in logs} and set(logged.artifacts) <= set(files)

    # the table: groups as columns with readable labels, one row per quantity, counts last
    table = mlflow.load_table("fairness/groupwise.json", run_ids=[rid])
    tpr = res["fairness.tpr"].by_group
    columns = [f"sex={s},race={r}" for s, r in tpr.index]
    assert list(table.columns) == ["prefix", "step", "result", "kind", "quantity", *columns]
    assert set(table["kind"]) == {"point"}
    assert not any("(" in c for c in table.columns)  # no stringified tuples
    row = table[(table.result == "fairness.tpr") & (table.quantity == "tpr")].iloc[0]
    assert row[columns].to_numpy(dtype=float) == pytest.approx(tpr.to_numpy())
    eod_fpr = table[(table.result == "fairness.eod") & (table.quantity == "fairness.fpr")].iloc[0]
    assert eod_fpr[columns].to_numpy(dtype=float) == pytest.approx(res["fairness.eod"].by_group["fairness.fpr"])
    assert table.iloc[-1][columns].tolist() == res["fairness.tpr"].counts.tolist()
    assert table.iloc[-1][["result", "quantity"]].tolist() == ["groups", "n_rows"]

    # the chart is a real PNG of the groupwise values
    png = mlflow.artifacts.download_artifacts(run_id=rid, artifact_path="fairness/groupwise.png")
    with open(png, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"

    # results.json keeps every group as a list, never "('F', 'a/b')"
    content = read_json(rid, "fairness/results.json")
    entry = next(r for r in content["results"] if r["name"] == "fairness.tpr")
    assert entry["groups"] == [list(g) for g in tpr.index]
    assert entry["value"] == pytest.approx(res["fairness.tpr"].value)
    assert "('F'" not in json.dumps(content)
    assert entry["config"]["ideal"] == 0.0 and entry["config"]["signed"] is False  # the full configuration


def test_group_metrics_on_request_with_the_way_back_to_labels(tracking):
    y, p, A = [1, 1, 1, 1, 0, 0], [1, 0, 1, 1, 0, 1], ["F?", "F?", "F!", "F!", "F?", "F!"]
    res = sfm.msr("fairness.tpr").evaluate(y, p, sensitive_features=A)
    with mlflow.start_run() as run:
        logged = log_fairness(res, artifacts=False, log_params=False, group_metrics=True)
    per_group = {k: v for k, v in metrics(run.info.run_id).items() if k.startswith("fairness.tpr.group_tpr/")}
    assert len(per_group) == 2  # the colliding labels F? and F! both kept
    assert {logged.key_map[k]["group"]: v for k, v in per_group.items()} == pytest.approx(res.by_group.to_dict())


def test_undefined_value_shows_as_undefined_with_its_reason(tracking):
    y, p, A = [1, 1, 0, 0], [1, 0, 0, 1], ["F", "F", "M", "M"]  # M has no positives: its TPR is undefined
    with pytest.warns(sfm.UndefinedGroupWarning):
        res = sfm.msr("fairness.tpr").evaluate(y, p, sensitive_features=A)
    with mlflow.start_run() as run:
        logged = log_fairness(res)
    rid = run.info.run_id
    assert np.isnan(metrics(rid)["fairness.tpr"])  # NaN, never a number
    assert tags(rid)["fairness.tpr.undefined"] == res.reason and "M" in res.reason
    table = mlflow.load_table("fairness/groupwise.json", run_ids=[rid])
    assert pd.isna(table.loc[table.quantity == "tpr", "M"].iloc[0])
    assert "fairness/groupwise.png" in logged.artifacts


def test_steps_do_not_overwrite_each_other(tracking):
    m = sfm.msr("fairness.tpr")
    with mlflow.start_run() as run:
        for step, p in enumerate([[1, 0, 1, 1], [1, 1, 1, 1]]):
            log_fairness(m.evaluate([1, 1, 1, 1], p, sensitive_features=list("FFMM")), step=step)
    hist = MlflowClient().get_metric_history(run.info.run_id, "fairness.tpr")
    assert sorted((h.step, h.value) for h in hist) == [(0, 0.5), (1, 0.0)]
    assert {"fairness/step_0/groupwise.png", "fairness/step_1/results.json"} <= set(artifacts(run.info.run_id))
    table = mlflow.load_table("fairness/groupwise.json", run_ids=[run.info.run_id])  # one table, both steps
    assert table.loc[table.quantity == "tpr", ["step", "M"]].to_numpy().tolist() == [[0, 1.0], [1, 1.0]]


def test_conflicting_params_are_skipped_with_a_warning(tracking):
    y, p, A = [1, 1, 0, 0], [1, 0, 0, 1], list("FMFM")
    m1, m2 = (sfm.msr("fairness.tpr", min_group_size=n, key="fairness.tpr") for n in (1, 2))
    with mlflow.start_run() as run:
        log_fairness(m1.evaluate(y, p, sensitive_features=A), artifacts=False)
        with pytest.warns(FairnessLoggingWarning, match="params cannot change"):
            logged = log_fairness(m2.evaluate(y, p, sensitive_features=A), artifacts=False, step=1)
    assert logged.logged
    assert params(run.info.run_id)["fairness.tpr.config/min_group_size"] == "1"  # the first configuration stays


def test_metrics_linked_to_the_logged_model_and_dataset(tracking, data, audit):
    from sklearn.linear_model import LogisticRegression

    X, y = data
    ms, res = audit
    clf = LogisticRegression().fit(X[["x1", "x2"]], y)
    dataset = mlflow.data.from_pandas(X.assign(label=y), name="test-split", targets="label")
    with mlflow.start_run() as run, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        info = mlflow.sklearn.log_model(clf, name="model", pip_requirements=["scikit-learn"])
        logged = log_fairness(res, measures=ms, model_id=info.model_id, dataset=dataset, artifacts=False)
    assert logged.logged
    linked = {m.key: m for m in mlflow.get_logged_model(info.model_id).metrics}
    assert linked["fairness.eod"].value == pytest.approx(res["fairness.eod"].value)
    assert linked["fairness.eod"].dataset_name == "test-split" and linked["fairness.eod"].dataset_digest
    assert linked["fairness.eod"].run_id == run.info.run_id


# --- sampled results: posteriors and bootstrap ---------------------------------------------------
def test_posterior_metrics_carry_information(tracking):
    """An absolute difference is never below 0: P(> 0) would be 1. Only signed measures get it."""
    rng = np.random.default_rng(0)
    unsigned = Sampled(sfm.msr("fairness.tpr"), np.abs(rng.normal(0.05, 0.02, 4000)))
    signed_m = sfm.msr("fairness.tpr", operation="diff_to_reference", reference="F")
    signed = Sampled(signed_m, rng.normal(0.01, 0.02, 4000))
    assert signed_m.signed and not unsigned.measure.signed
    with mlflow.start_run() as run:
        logged = log_fairness([unsigned, signed], posterior_options={"eps": 0.03})
    got = metrics(run.info.run_id)
    u, s = "fairness.tpr.posterior", f"{sanitize_key(signed_m.key)}.posterior"
    assert f"{u}/prob_greater" not in got
    assert got[f"{u}/prob_within"] == pytest.approx(np.mean(np.abs(unsigned.draws) <= 0.03))
    assert got[f"{s}/prob_greater"] == pytest.approx(np.mean(signed.draws > 0))
    assert 0.05 < got[f"{s}/prob_greater"] < 0.95  # informative
    assert got[f"{u}/lower"] == pytest.approx(unsigned.interval()[0])
    assert got["fairness.tpr"] == pytest.approx(unsigned.value)  # the headline: its value, named plainly
    assert params(run.info.run_id)["fairness.eps"] == "0.03"
    files = artifacts(run.info.run_id)
    assert {"fairness/fairness.tpr/posterior_density.png", "fairness/fairness.tpr/posterior_draws.csv"} <= set(files)
    assert logged.logged


def test_point_value_and_its_posterior_share_a_name(tracking):
    m = sfm.msr("fairness.tpr")
    point = m.evaluate([1, 1, 1, 1], [1, 0, 1, 1], sensitive_features=list("FFMM"))
    post = Sampled(m, np.random.default_rng(1).beta(2, 8, 500))
    with mlflow.start_run() as run:
        log_fairness([point, post], artifacts=False)
    got = metrics(run.info.run_id)
    assert got["fairness.tpr"] == 0.5  # the point value owns the plain key
    assert got["fairness.tpr.posterior/lower"] == pytest.approx(post.interval()[0])


def test_undefined_draws_give_undefined_summaries(tracking):
    post = Sampled(sfm.msr("fairness.tpr"), [0.1, np.nan, 0.2])
    with mlflow.start_run() as run:
        log_fairness(post, artifacts=False)
    got = metrics(run.info.run_id)
    assert np.isnan(got["fairness.tpr.posterior/lower"]) and "fairness.tpr.posterior/prob_within" not in got


def test_real_bootstrap_and_posterior_log(tracking, data):
    X, y = data
    score = 1 / (1 + np.exp(-2 * X.x1.to_numpy()))
    m = sfm.msr("fairness.tpr")
    boot = sfm.bootstrap(m, y, (score > 0.5).astype(int), sensitive_features=X["sex"], n_boot=200, random_state=0)
    post = bayes.posterior(m, y, score, sensitive_features=X["sex"], method="bb", random_state=0)
    with mlflow.start_run() as run:
        logged = log_fairness([boot, post], posterior_options={"eps": 0.02})
    read_back(logged)
    got = metrics(run.info.run_id)
    for res in (boot, post):
        lo, hi = res.interval(0.95)
        pre = f"fairness.tpr.{res.kind}"
        assert got[f"{pre}/lower"] == pytest.approx(lo) and got[f"{pre}/upper"] == pytest.approx(hi)
        assert f"{pre}/prob_greater" not in got  # an absolute difference is never below 0
    # a posterior's probability is its own; a percentile bootstrap gives none, and its note says why
    assert got["fairness.tpr.posterior/prob_within"] == pytest.approx(post.prob_within(0.02))
    assert "fairness.tpr.bootstrap/prob_within" not in got
    assert "no probability" in logged.tags["fairness.tpr.bootstrap.note"]
    assert not any(".n_" in k for k in got)
    assert set(artifacts(run.info.run_id)) >= {
        "fairness/fairness.tpr/posterior_density.png",
        "fairness/fairness.tpr/bootstrap_draws.csv",
    }


def test_estimate_without_the_sensitive_attribute(tracking):
    from skfair_measures import unaware

    rng = np.random.default_rng(0)
    n = 2000
    a = (rng.random(n) < 0.4).astype(int)
    y_pred = (rng.random(n) < np.where(a == 1, 0.6, 0.3)).astype(int)
    proxies = np.stack([np.where(rng.random(n) < 0.2, 1 - a, a) for _ in range(3)], axis=1)
    est = unaware.proxy_disparity(y_pred, proxies, metric="dp", mode="global", n_boot=30, random_state=0)
    with mlflow.start_run() as run:
        logged = log_fairness({"proxy_dp": est})
    rid = run.info.run_id
    got = metrics(rid)
    lo, hi = est.interval(0.95)
    assert got["proxy_dp"] == pytest.approx(est.value)
    assert got["proxy_dp.estimate/lower"] == pytest.approx(lo) and got["proxy_dp.estimate/upper"] == pytest.approx(hi)
    table = mlflow.load_table("fairness/groupwise.json", run_ids=[rid])
    assert (table.result == "proxy_dp").sum() == est.by_group.shape[1]  # one row per column of its rates
    entry = read_json(rid, "fairness/results.json")["results"][0]
    assert entry["kind"] == "estimate" and "diagnostics" in entry  # everything of the estimate is kept
    assert logged.logged


def test_full_set_round_trips_through_the_file_store(file_store, data):
    X, y = data
    pred = (X.x1 > 0).astype(int)
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.eod"), sfm.msr("classif.acc")]
    res = sfm.evaluate_measures(ms, y, pred, sensitive_features=X[["sex", "race"]])
    post = Sampled(ms[0], np.random.default_rng(0).beta(2, 20, 1000))
    with mlflow.start_run():
        logged = log_fairness([*res.items(), ("fairness.tpr", post)], measures=ms, group_metrics=True)
    read_back(logged)
    assert logged.metrics["fairness.eod.overall_fpr"] == pytest.approx(res["fairness.eod"].overall.iloc[1])


def test_result_named_like_a_field_of_another_still_logs(file_store):
    # "fairness.tpr.posterior" is the directory of the posterior's summaries:
    # the key space renames one of the two instead of letting the file store fail.
    y, p, A = [1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 1, 1], list("FFFMMM")
    post = Sampled(sfm.msr("fairness.tpr"), np.random.default_rng(0).beta(2, 8, 200))
    tpr = sfm.msr("fairness.tpr").evaluate(y, p, sensitive_features=A)
    with mlflow.start_run():
        logged = log_fairness([("fairness.tpr", post), ("fairness.tpr.posterior", tpr)], artifacts=False)
    read_back(logged)
    assert logged.metrics["fairness.tpr.posterior"] == pytest.approx(tpr.value)  # headlines claim keys first
    (part,) = [k for k, m in logged.key_map.items() if m.get("quantity") == "lower"]
    assert part.startswith("fairness.tpr.posterior_") and part.endswith("/lower")  # renamed directory
    assert logged.metrics[part] == pytest.approx(post.interval()[0])


def test_not_a_result_is_refused_by_name(tracking):
    with pytest.raises(TypeError, match="cannot log a dict"):
        log_fairness([{"value": 0.1}])
    m = sfm.msr("fairness.tpr")
    r = m.evaluate([1, 1], [1, 0], sensitive_features=["a", "b"])
    with pytest.raises(ValueError, match="both named 'fairness.tpr'"):
        log_fairness([r, r])


# --- packaging ------------------------------------------------------------------------------------
def test_plugin_is_registered_in_a_fresh_process():
    code = (
        "import sys, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import mlflow\n"
        "    names = mlflow.models.list_evaluators()\n"
        # MLflow only *warns* when a plugin fails to load
        "failed = [str(w.message) for w in caught if 'register model evaluator' in str(w.message)]\n"
        "assert not failed, failed\n"
        "assert 'fairness' in names, names\n"
        "assert 'skfair_measures' not in sys.modules, 'the entry point must load lazily'\n"
        "from mlflow.models.evaluation.evaluator_registry import _model_evaluation_registry as r\n"
        "assert type(r.get_evaluator('fairness')).__name__ == 'FairnessEvaluator'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_plugin_docstring_examples():
    import doctest

    from skfair_measures_mlflow import _cv, _session, _tracking, evaluator

    for module in (_session, _tracking, _cv, evaluator):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FairnessLoggingWarning)
            res = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0, module.__name__
