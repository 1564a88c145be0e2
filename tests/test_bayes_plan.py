"""plan_labels: the planned sample reaches the stated power, checked by an independent simulation.

The check does not reuse the planner's simulation: it draws fresh audits (other seeds)
with the planned labels per group and reads the interval the plan is for through the public
``posterior()`` (``method="auto"``: the labels' Jeffreys posterior; or ``"guaranteed"``);
the share of right decisions must reach the target power within two binomial standard
deviations.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import skfair_measures as sfm


def _decided(lo: float, hi: float, eps: float, within: bool) -> bool:
    return (-eps <= lo and hi <= eps) if within else (lo > eps or hi < -eps)


def _check_power(plan, measure, accuracy: dict, runs: int, seed: int) -> tuple[float, float]:
    """Share of fresh audits with the planned labels whose interval decides rightly, and its sd."""
    groups = [g for g in plan.index if g != "total"]
    n = {g: int(plan.loc[g, "labels"]) for g in groups}
    eps, prob, within = plan.attrs["eps"], plan.attrs["prob"], plan.attrs["decision"] == "within"
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(runs):
        g = np.repeat(groups, [n[k] for k in groups])
        pred = rng.integers(0, 2, g.size)
        right = rng.uniform(size=g.size) < np.array([accuracy[k] for k in g])
        y = np.where(right, pred, 1 - pred)
        score = np.where(pred == 1, 0.9, 0.1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = sfm.bayes.posterior(measure, y, score, sensitive_features=g, method=plan.attrs["method"])
        hits += _decided(*post.interval(prob), eps, within)
    target = plan.attrs["target_power"]
    return hits / runs, float(np.sqrt(target * (1 - target) / runs))


@pytest.mark.parametrize("method", ["auto", "guaranteed"])
def test_plan_reaches_power_within_two_sd(method):
    m = sfm.msr("fairness.acc")
    acc = {"a": 0.85, "b": 0.80}
    kw = dict(group_sizes={"a": 5000, "b": 2000}, rates=acc, n_sim=60, random_state=1, method=method)
    plan = sfm.plan_labels(m, eps=0.3, **kw)
    assert plan.attrs["decision"] == "within" and plan.attrs["method"] == method
    assert plan.loc["total", "labels"] == plan.loc[["a", "b"], "labels"].sum()
    got, sd = _check_power(plan, m, acc, runs=120, seed=7)
    assert got >= plan.attrs["target_power"] - 2 * sd, (got, plan)
    assert plan.attrs["power"] >= plan.attrs["target_power"] and plan.attrs["shortfall"] is None
    # and the plan is not lavish: a third of the labels decides much less often
    fewer = plan.copy()
    fewer["labels"] = (fewer["labels"] // 3).clip(lower=2)
    fewer.attrs = plan.attrs
    low, _ = _check_power(fewer, m, acc, runs=60, seed=8)
    assert low < plan.attrs["target_power"] - 0.2


def test_a_plan_below_the_power_asked_says_so_loudly():
    """Groups too small for the power asked, where the normal approximation's plan is capped by their rows."""
    m = sfm.msr("fairness.tpr")
    kw = dict(group_sizes={"a": 5000, "b": 450}, rates={"a": 0.9, "b": 0.7}, denominator_share=0.5, n_sim=20)
    with pytest.warns(UserWarning, match=r"the plan reaches power 0\.\d+ .*below the 0.95 asked"):
        plan = sfm.plan_labels(m, eps=0.1, power=0.95, **kw)
    assert plan.attrs["power"] < 0.95 and "below the 0.95 asked" in plan.attrs["shortfall"]
    with pytest.raises(TypeError, match=r"prob= .*not alpha=: pass prob=0.9"):
        sfm.plan_labels(m, eps=0.1, alpha=0.1, **kw)


def test_plan_more_labels_for_a_tighter_eps():
    m = sfm.msr("fairness.acc")
    kw = dict(group_sizes={"a": 5000, "b": 5000}, rates={"a": 0.8, "b": 0.8}, n_sim=30)
    assert (
        sfm.plan_labels(m, eps=0.2, **kw).loc["total", "labels"]
        > sfm.plan_labels(m, eps=0.35, **kw).loc["total", "labels"]
    )


def test_plan_refuses_what_cannot_be_decided_and_bad_arguments():
    m = sfm.msr("fairness.acc")
    with pytest.raises(
        ValueError,
        match=r"with every row labeled its interval is still about \+-0\.\d+ wide, so the "
        r"guessed \|Δ\| = 0\.100 would have to lie above",
    ):
        sfm.plan_labels(m, eps=0.1, group_sizes={"a": 50, "b": 50}, rates={"a": 0.8, "b": 0.7}, n_sim=10)
    with pytest.raises(ValueError, match="rates has no guess"):
        sfm.plan_labels(m, eps=0.1, group_sizes={"a": 50, "b": 50}, rates={"a": 0.8})
    with pytest.raises(ValueError, match="either scores"):
        sfm.plan_labels(m, eps=0.1, group_sizes={"a": 50}, rates={"a": 0.8}, scores=[0.5])
    with pytest.raises(ValueError, match="ideal"):
        sfm.plan_labels(sfm.msr("fairness.acc", operation="ratio"), eps=0.1, group_sizes={"a": 50}, rates={"a": 0.8})
    with pytest.raises(ValueError, match="allocation"):
        sfm.plan_labels(m, eps=0.1, group_sizes={"a": 50}, rates={"a": 0.8}, allocation="best")


def test_plan_with_scores_is_prediction_powered():
    rng = np.random.default_rng(3)
    g = rng.integers(0, 2, 600)
    s = np.clip(rng.beta(0.5, 0.5, 600), 0, 1)  # sharp scores: informative proxies
    kw = dict(eps=0.35, scores=s, sensitive_features=g, n_sim=20)
    plan = sfm.plan_labels(sfm.msr("fairness.acc"), method="guaranteed", **kw)
    assert "prediction-powered" in plan.attrs["interval"]
    assert plan.loc["total", "rows"] == 600
    assert plan.attrs["power"] >= 0.8
    auto = sfm.plan_labels(sfm.msr("fairness.acc"), **kw)  # auto below 200 labels reads the labels alone
    assert auto.attrs["method"] == "auto" and "Jeffreys" in auto.attrs["interval"] and auto.attrs["power"] >= 0.8


@pytest.mark.slow
def test_plan_reaches_power_slow():
    """A tighter tolerance and a gap near it (exceeds), 400 fresh audits."""
    m = sfm.msr("fairness.acc")
    acc = {"a": 0.9, "b": 0.55}
    plan = sfm.plan_labels(m, eps=0.15, group_sizes={"a": 8000, "b": 3000}, rates=acc, n_sim=200, random_state=2)
    assert plan.attrs["decision"] == "exceeds"
    got, sd = _check_power(plan, m, acc, runs=400, seed=11)
    assert got >= plan.attrs["target_power"] - 2 * sd, (got, plan)


def test_a_tpr_gap_of_020_at_eps_005_is_planned_for_the_interval_auto_will_report():
    """About 1,660 labels for the guaranteed interval, 420 by a normal approximation; auto's Jeffreys interval: 480."""
    kw = dict(group_sizes={"a": 5000, "b": 5000}, rates={"a": 0.9, "b": 0.7}, denominator_share=0.5, n_sim=40)
    plan = sfm.plan_labels(sfm.msr("fairness.tpr"), eps=0.05, **kw)
    assert plan.attrs["method"] == "auto" and plan.attrs["normal_labels"] == 420
    assert 420 <= plan.loc["total", "labels"] <= 600, plan  # 548: the Jeffreys interval is close to the normal one
    assert plan.attrs["power"] >= 0.8 and "fresh audits" in plan.attrs["how"]


def test_the_guess_checks_the_scores_calibration_on_the_labels_it_has(capsys):
    rng = np.random.default_rng(0)
    g = np.repeat(["a", "b"], 1500)
    truth = np.where(g == "a", 0.9, 0.75)  # P(y = 1), base rate ~0.83
    y = (rng.uniform(size=g.size) < truth).astype(float)
    scores = np.clip(truth - 0.3 + rng.normal(0, 0.02, g.size), 0, 1)  # mean ~0.53: not calibrated
    known = np.where(rng.uniform(size=g.size) < 0.1, y, np.nan)  # 10% labeled so far
    kw = dict(eps=0.05, scores=scores, sensitive_features=g, threshold=0.5, n_sim=20, progress=True)
    plan = sfm.plan_labels(sfm.msr("fairness.cv"), y_true=known, **kw)
    assert "recalibrated" in plan.attrs["calibration"]
    err = capsys.readouterr().err
    assert err.startswith("plan_labels: 20 simulated audits") and re.search(
        r"labels: (enough|too few) \(\d+ audits\) \[\d+\.\d s\]", err
    )
