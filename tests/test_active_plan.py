"""ActiveAssessment started from a label plan: per-group quotas, progress, and refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures.active import ActiveAssessment


def _data(sizes=(300, 200), seed=0):
    rng = np.random.default_rng(seed)
    group = np.repeat(["a", "b"], sizes)
    y_pred = rng.integers(0, 2, group.size)
    scores = np.where(y_pred == 1, 0.8, 0.2)
    y_true = np.where(rng.uniform(size=group.size) < 0.85, y_pred, 1 - y_pred)
    return group, y_pred, scores, y_true


def _table(labels: dict, rows: dict) -> pd.DataFrame:
    """A plan table of the form plan_labels returns (groups as text, then 'total')."""
    index = pd.Index([*labels, "total"], name="group")
    return pd.DataFrame(
        {
            "rows": [*rows.values(), sum(rows.values())],
            "labels": [*labels.values(), sum(labels.values())],
            "rate": np.nan,
        },
        index=index,
    )


@pytest.mark.parametrize("strategy", ["ts", "random"])
def test_asks_only_groups_whose_plan_is_not_met_and_stops_when_met(strategy):
    group, y_pred, scores, y_true = _data()
    plan = _table({"a": 7, "b": 25}, {"a": 300, "b": 200})
    aa = ActiveAssessment(y_pred, scores, sensitive_features=group, plan=plan, strategy=strategy, random_state=1)
    told = {"a": 0, "b": 0}
    while True:
        rows = aa.ask()
        if rows.size == 0:
            break
        g = group[rows[0]]
        assert told[g] < plan.loc[g, "labels"], (g, told)  # never a group whose labels are met
        aa.tell(rows, y_true[rows])
        told[g] += 1
    assert told == {"a": 7, "b": 25}
    assert aa.plan_met
    progress = aa.plan_progress()
    assert progress["labels"].tolist() == [7, 25] and progress["left"].tolist() == [0, 0]
    assert progress.attrs["met"] and "plan=32/32 labels" in repr(aa)


def test_asked_rows_count_against_the_plan_until_told():
    group, y_pred, scores, y_true = _data()
    aa = ActiveAssessment(
        y_pred, scores, sensitive_features=group, plan=_table({"a": 4, "b": 6}, {"a": 300, "b": 200}), random_state=0
    )
    rows = aa.ask(100)
    assert rows.size == 10 and (group[rows] == "a").sum() == 4
    assert aa.ask(5).size == 0 and not aa.plan_met  # all asked, none told
    progress = aa.plan_progress()
    assert progress["pending"].tolist() == [4, 6] and progress["left"].tolist() == [0, 0]
    aa.tell(rows, y_true[rows])
    assert aa.plan_met and aa.plan_progress()["pending"].tolist() == [0, 0]


def test_known_labels_count_toward_the_plan():
    group, y_pred, scores, y_true = _data()
    known = np.full(group.size, None, dtype=object)
    a_rows = np.flatnonzero(group == "a")[:5]
    known[a_rows] = y_true[a_rows]
    aa = ActiveAssessment(
        y_pred,
        scores,
        sensitive_features=group,
        y_true=known,
        plan=_table({"a": 5, "b": 3}, {"a": 300, "b": 200}),
        random_state=0,
    )
    rows = aa.ask(50)
    assert rows.size == 3 and set(group[rows]) == {"b"}


def test_a_plan_of_plan_labels_drives_the_assessment():
    group, y_pred, scores, y_true = _data()
    plan = sfm.plan_labels(
        sfm.msr("fairness.acc"), eps=0.25, scores=scores, sensitive_features=group, allocation="proportional", n_sim=10
    )
    aa = ActiveAssessment(y_pred, scores, sensitive_features=group, plan=plan, random_state=0)
    rows = aa.ask(10_000)
    per_group = pd.Series(group[rows]).value_counts().reindex(["a", "b"]).tolist()
    assert per_group == plan.loc[["a", "b"], "labels"].tolist()
    assert aa.plan_progress().attrs["plan"]["measure"] == "fairness.acc"
    with pytest.raises(ValueError, match=r"metric='tpr' estimates 'tpr'.*pass one of \['acc'\]"):
        ActiveAssessment(y_pred, scores, sensitive_features=group, metric="tpr", plan=plan)


def test_refuses_a_plan_that_does_not_fit():
    group, y_pred, scores, _ = _data()
    kw = {"sensitive_features": group}
    with pytest.raises(ValueError, match=r"plan= is for the groups \['a', 'c'\], the assessment's are \['a', 'b'\]"):
        ActiveAssessment(y_pred, scores, plan=_table({"a": 3, "c": 3}, {"a": 300, "c": 200}), **kw)
    with pytest.raises(ValueError, match="plan= is for the groups"):
        ActiveAssessment(y_pred, scores, plan=_table({"a": 3}, {"a": 300}), **kw)
    with pytest.raises(ValueError, match=r"asks 250 labels in group 'b', which has 200 rows"):
        ActiveAssessment(y_pred, scores, plan=_table({"a": 3, "b": 250}, {"a": 300, "b": 200}), **kw)
    with pytest.raises(ValueError, match="task='compare' asks only the two groups"):
        ActiveAssessment(
            y_pred, scores, task="compare", pair=("a", "b"), plan=_table({"a": 3, "b": 3}, {"a": 300, "b": 200}), **kw
        )
    with pytest.raises(TypeError, match="plan= takes the table returned by skfair_measures.plan_labels"):
        ActiveAssessment(y_pred, scores, plan={"a": 3, "b": 3}, **kw)
    plain = ActiveAssessment(y_pred, scores, **kw)
    assert not plain.plan_met
    with pytest.raises(ValueError, match="plan_progress\\(\\) follows a plan"):
        plain.plan_progress()
