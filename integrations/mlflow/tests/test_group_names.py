"""Any group name and many groups: the chart never goes through mathtext, and a failing chart costs no metric."""

import json
import time
import warnings

import numpy as np
import pytest
from skfair_measures_mlflow import _collect
from skfair_measures_mlflow._collect import collect

import skfair_measures as sfm

ODD = ["cost $10^$", "a\\b", "100%", "{x}", "日本語 ü", " ", "x" * 500, "$"]


def _result(groups, seed=0):
    rng = np.random.default_rng(seed)
    return sfm.msr("fairness.tpr").evaluate(
        rng.integers(0, 2, groups.size), rng.integers(0, 2, groups.size), sensitive_features=groups
    )


def test_odd_group_names_give_the_chart_and_every_metric():
    groups = np.array(ODD, dtype=object)[np.random.default_rng(1).integers(0, len(ODD), 400)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the chart is not lost
        payload = collect([("fairness.tpr", _result(groups))])
    assert any(a.path.endswith("groupwise.png") for a in payload.artifacts)
    assert "fairness.tpr" in payload.metrics
    assert sorted(json.loads(payload.tags["skfair.groups"])) == sorted(ODD)


def test_many_groups_bound_the_chart_and_the_groups_tag():
    groups = np.char.add("group_", np.random.default_rng(0).integers(0, 5_000, 10_000).astype(str)).astype(object)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sfm.UndefinedGroupWarning)  # groups of 1 to 5 rows
        res = _result(groups)
    with pytest.warns(UserWarning, match="50 largest of 4,3.. groups"):
        payload = collect([("fairness.tpr", res)], artifacts=False)
    assert len(payload.tags["skfair.groups"]) <= _collect.MAX_TAG_LENGTH  # MLflow refuses a longer tag
    assert "of 4" in payload.tags["skfair.groups_listed"]
    start = time.perf_counter()
    png = _collect.groupwise_chart(_collect.groupwise_table([("fairness.tpr", res)]))
    assert png[:4] == b"\x89PNG" and time.perf_counter() - start < 10  # 40 groups drawn, not 5,000


def test_a_chart_that_fails_costs_a_warning_not_the_metrics(monkeypatch):
    def broken(table):
        raise RuntimeError("no fonts")

    monkeypatch.setattr(_collect, "groupwise_chart", broken)
    with pytest.warns(RuntimeWarning, match="groupwise chart could not be drawn.*no fonts"):
        payload = collect([("fairness.tpr", _result(np.repeat(["a", "b"], 50)))])
    assert "fairness.tpr" in payload.metrics
    assert not any(a.path.endswith("groupwise.png") for a in payload.artifacts)
