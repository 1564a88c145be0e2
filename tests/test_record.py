"""The sink-neutral record of a run: keys, summaries, verdicts, charts and the headline, without any sink."""

import json
import math
import time
import warnings

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures import bayes, plots
from skfair_measures.record import MAX_TAG_LENGTH, VERDICT_TABLE, record
from skfair_measures.report import SUMMARY_COLUMNS, summary_table
from skfair_measures.uncertainty import Estimate

ODD = ["cost $10^$", "a\\b", "100%", "{x}", "日本語 ü", " ", "x" * 500, "$"]


def _result(groups, seed=0):
    rng = np.random.default_rng(seed)
    return sfm.msr("fairness.tpr").evaluate(
        rng.integers(0, 2, groups.size), rng.integers(0, 2, groups.size), sensitive_features=groups
    )


def _refused():
    """An estimate whose bootstrap left too many replicates undefined (as a proxy estimate does)."""
    draws = np.r_[np.full(6, np.nan), np.linspace(0.05, 0.2, 94)]
    return Estimate(
        "fairness.pp", 0.12, construction="percentile bootstrap", draws=draws, measure=sfm.msr("fairness.pp")
    )


def test_a_refused_interval_is_nan_with_its_reason():
    rec = record({"proxy": _refused()}, artifacts=False)
    assert math.isnan(rec.metrics["proxy.estimate/lower"]) and math.isnan(rec.metrics["proxy.estimate/upper"])
    assert "6 of 100" in rec.tags["proxy.estimate.note"]


def test_odd_group_names_give_the_chart_and_every_metric():
    groups = np.array(ODD, dtype=object)[np.random.default_rng(1).integers(0, len(ODD), 400)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the chart is not lost
        rec = record([("fairness.tpr", _result(groups))])
    assert "fairness/groupwise.png" in rec.files and "fairness.tpr" in rec.metrics
    assert sorted(json.loads(rec.tags["skfair.groups"])) == sorted(ODD)


def test_many_groups_bound_the_metrics_the_chart_and_the_groups_tag():
    groups = np.char.add("group_", np.random.default_rng(0).integers(0, 5_000, 10_000).astype(str)).astype(object)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sfm.UndefinedGroupWarning)  # groups of 1 to 5 rows
        res = _result(groups)
    with pytest.warns(UserWarning, match="50 largest of 4,3.. groups"):
        rec = record([("fairness.tpr", res)], artifacts=False, group_metrics=True)
    assert len(rec.tags["skfair.groups"]) <= MAX_TAG_LENGTH  # MLflow refuses a longer tag
    assert "of 4" in rec.tags["skfair.groups_listed"]
    assert sum(k.startswith("groups.n_rows/") for k in rec.metrics) == 50
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = record([("fairness.tpr", res)], html=False)
    assert rec.files["fairness/groupwise.png"][:4] == b"\x89PNG" and time.perf_counter() - start < 20


def test_a_chart_that_fails_costs_a_warning_not_the_metrics(monkeypatch):
    def broken(results):
        raise RuntimeError("no fonts")

    monkeypatch.setattr(plots, "groupwise_bars", broken)
    with pytest.warns(RuntimeWarning, match="groupwise.png could not be drawn.*no fonts"):
        rec = record([("fairness.tpr", _result(np.repeat(["a", "b"], 50)))])
    assert "fairness.tpr" in rec.metrics and "fairness/groupwise.png" not in rec.files


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    g = pd.Series(rng.choice(["Female", "Male"], n), name="sex")
    y = rng.integers(0, 2, n)
    pred = np.where(rng.uniform(size=n) < np.where(g == "Male", 0.4, 0.1), 1 - y, y)
    return y, pred, g


def test_point_results_alone_give_no_verdicts():
    y, pred, g = _data(600)
    rec = record(sfm.evaluate_measures([sfm.msr("fairness.tpr")], y, pred, sensitive_features=g))
    assert not [k for k in rec.metrics if "verdicts" in k] and VERDICT_TABLE not in rec.tables
    assert "no interval, so no verdict" in rec.tags["fairness.headline"]


def test_posteriors_and_bootstraps_of_one_call_are_two_verdict_tables():
    y, pred, g = _data(600)
    boot = sfm.bootstrap("fairness.tpr", y, pred, sensitive_features=g, n_boot=200, random_state=0)
    post = bayes.posterior(
        sfm.msr("fairness.tpr"), y, np.where(pred == 1, 0.8, 0.2), sensitive_features=g, method="bb", random_state=0
    )
    rec = record([("fairness.tpr", boot), ("fairness.tpr", post)])
    table = rec.tables[VERDICT_TABLE]
    assert sorted(set(zip(table["fit"], table["source"], strict=True))) == [(0, "bootstrap"), (1, "posterior")]
    assert sum(rec.metrics[f"fairness.verdicts/{v}"] for v in ("within", "exceeds", "inconclusive", "undefined")) == 2
    assert {"fairness/intervals.png", "fairness/report.html", "fairness/fairness.tpr/bootstrap_density.png"} <= set(
        rec.files
    )


def test_the_summary_and_the_headline_read_one_construction():
    """A bootstrap gives an interval and no probability (n.a. with the reason, never 0); the headline reads it."""
    y, pred, g = _data()
    boot = sfm.bootstrap("fairness.tpr", y, pred, sensitive_features=g, n_boot=300, random_state=0)
    summary = summary_table([("fairness.tpr", boot)], eps=0.05)
    assert tuple(summary.columns[3:]) == SUMMARY_COLUMNS
    row = summary.iloc[0]
    assert math.isnan(row["prob_within"]) and "no probability" in row["note"]
    lo, hi = boot.interval(0.95)
    assert (row["lower"], row["upper"]) == (lo, hi) and lo > 0.05 and row["verdict"] == "exceeds"
    rec = record([("fairness.tpr", boot)], eps=0.05)
    assert rec.tags["fairness.headline"].startswith(
        f"fairness.tpr exceeds 0.05 between Female and Male (sex): interval {lo:.2f} to {hi:.2f}"
    )
    assert "fairness.tpr.bootstrap/prob_within" not in rec.metrics
    html = rec.files["fairness/report.html"]
    assert "fairness.tpr exceeds 0.05" in html and ">n.a.<" in html and ">0.0000<" not in html


def test_an_estimate_made_at_one_level_is_recorded_at_that_level():
    from skfair_measures.uncertainty import Estimate

    est = Estimate("fairness.tpr", 0.1, construction="Wilson score", interval=(0.06, 0.15), prob=0.9, n=500)
    rec = record({"tpr": est}, prob=0.95, html=False)
    row = rec.tables["fairness/summary.json"].iloc[0]
    assert row["prob"] == 0.9 and row["verdict"] == "exceeds" and math.isnan(row["prob_within"])
    assert (rec.metrics["tpr.estimate/lower"], rec.metrics["tpr.estimate/upper"]) == (0.06, 0.15)
    assert "no probabilities" in rec.tags["tpr.estimate.note"]
