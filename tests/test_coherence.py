"""One estimate, one interval, one story: every door's value, interval, probability and verdict agree.

For every door that gives an interval, on hostile but valid inputs (tiny and lopsided groups,
groups with identical counts, constant predictions): the value lies in its interval (or the
result says why not), ``P(within eps)`` agrees with the interval, the verdict is the one the
interval reads, and the summary row has the one schema. Broken on purpose (a door's interval
made the percentile interval of an absolute difference again), these tests fail: see
``test_identical_groups_reach_zero``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skfair_measures as sfm
from skfair_measures.uncertainty import SUMMARY_COLUMNS, Estimate

EPS = (0.0, 0.02, 0.05, 0.2)
PROB = (0.5, 0.9, 0.95)
FAST = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def _agree(est: Estimate, eps: float, prob: float, *, draws_at_or_above_center: bool = False) -> None:
    """The coherence rules of one estimate at one (eps, prob)."""
    row = est.summary(prob, eps)
    assert tuple(row.columns) == SUMMARY_COLUMNS and len(row) == 1
    r = row.iloc[0]
    lo, hi, value, c = r["lower"], r["upper"], r["value"], est.center
    if math.isnan(value) or math.isnan(lo) or math.isnan(hi):
        assert r["note"], f"{est.key}: a missing number with no reason"
        assert r["verdict"] == "inconclusive"
        return
    tol = 1e-9 * max(1.0, abs(value))
    assert lo - tol <= value <= hi + tol, f"{est.key}: value {value} outside [{lo}, {hi}] ({r['construction']})"
    within, outside = c - eps <= lo and hi <= c + eps, lo > c + eps or hi < c - eps
    assert r["verdict"] == ("within" if within else "exceeds" if outside else "inconclusive")
    p = r["prob_within"]
    if math.isnan(p):
        assert est.no_prob_reason, f"{est.key}: NaN probability with no reason"
        return
    n = max(1, len(est.draws)) if est.draws is not None else 1
    slack = 2.0 / n + 1e-9  # quantiles of finitely many draws
    tail = (1 - prob) / 2
    if within:
        assert p >= prob - slack, (est.key, p, lo, hi)
    if outside:
        assert p <= tail + slack, (est.key, p, lo, hi)
    if draws_at_or_above_center and lo < c + eps:
        assert p >= tail - slack, (est.key, p, lo, hi)


def _all_agree(est: Estimate, **kw) -> None:
    for eps in EPS:
        for prob in PROB:
            _agree(est, eps, prob, **kw)


# -- hostile but valid samples -------------------------------------------------------------
@st.composite
def samples(draw, max_groups: int = 3):
    """Two or three groups of 4-60 rows: lopsided, constant or copied predictions and labels."""
    k = draw(st.integers(2, max_groups))
    sizes = [draw(st.integers(4, 60)) for _ in range(k)]
    kind = draw(st.sampled_from(["random", "copies", "constant_pred", "perfect"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    ys, ps, gs = [], [], []
    base_y = rng.integers(0, 2, sizes[0])
    base_p = rng.integers(0, 2, sizes[0])
    for j, size in enumerate(sizes):
        if kind == "copies":  # every group holds the same rows: identical confusion counts
            y, p = base_y, base_p
            size = sizes[0]
        else:
            y = rng.integers(0, 2, size)
            p = rng.integers(0, 2, size) if kind == "random" else np.ones(size, int) if kind == "constant_pred" else y
        y = y.copy()
        y[:2] = [0, 1]  # every group has both labels: its rates are defined
        ys.append(y)
        ps.append(p)
        gs.append(np.full(size, f"g{j}"))
    return np.concatenate(ys), np.concatenate(ps), np.concatenate(gs)


MEASURES = ("fairness.tpr", "fairness.eod", "fairness.cv", "fairness.dp_ratio", "fairness.acc", "fairness.eod_max")


# -- the bootstrap doors ----------------------------------------------------------------------
@FAST
@given(samples(), st.sampled_from(MEASURES))
def test_bootstrap_is_coherent(sample, key):
    y, p, g = sample
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sfm.bootstrap(key, y, p, sensitive_features=g, n_boot=200, random_state=0)
        _all_agree(res)


@pytest.mark.parametrize(
    "key", ["fairness.tpr", "fairness.eod", "fairness.cv", "fairness.eod_max", "fairness.dp_ratio"]
)
def test_identical_groups_reach_zero(key):
    """Two groups with identical confusion counts: value at the ideal, and the interval reaches it.

    This is the check that fails when a door is broken: with ``BootstrapResult._mapped``
    returning None (the percentile interval of the absolute difference, as before), the
    interval of fairness.tpr is [0.0009, 0.068] around the value 0 and this test fails.
    """
    rng = np.random.default_rng(3)  # groups of 2,000 rows: every rate's denominator above the score constructions'
    y, p = rng.integers(0, 2, 2000), rng.integers(0, 2, 2000)
    y2, p2, g = np.tile(y, 2), np.tile(p, 2), np.repeat(["a", "b"], 2000)
    res = sfm.bootstrap(key, y2, p2, sensitive_features=g, n_boot=500, random_state=0)
    ideal = sfm.msr(key).ideal
    lo, hi = res.interval()
    assert res.value == pytest.approx(ideal) and lo <= ideal <= hi
    assert (lo == ideal) if ideal == 0 else (hi == ideal)
    assert res.verdict(0.2) == "within" and math.isnan(res.prob_within(0.05))
    assert res.construction.startswith("bootstrap max-t band") if ideal == 0 else True
    _all_agree(res)


def test_bootstraps_and_the_engines_poisson_bootstrap_are_coherent():
    from skfair_measures.engines import poisson_bootstrap

    rng = np.random.default_rng(4)
    y, p, g = rng.integers(0, 2, 600), rng.integers(0, 2, 600), rng.choice(["a", "b", "c"], 600)
    for res in sfm.bootstraps(list(MEASURES[:4]), y, p, sensitive_features=g, n_boot=200, random_state=0).values():
        _all_agree(res)
    frame = pd.DataFrame({"y": y, "p": p, "g": g})
    for key in MEASURES[:4]:
        _all_agree(poisson_bootstrap(frame, "y", "p", "g", key, n_boot=200, random_state=0))


# -- the posterior doors ----------------------------------------------------------------------
@FAST
@given(samples(max_groups=2), st.sampled_from(("fairness.tpr", "fairness.acc", "fairness.cv")))
def test_posteriors_are_coherent(sample, key):
    from skfair_measures import bayes

    y, p, g = sample
    scores = np.clip(0.3 + 0.4 * p, 0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("bb", "guaranteed", "auto"):
            post = bayes.posterior(
                sfm.msr(key), y, scores, sensitive_features=g, method=method, random_state=0, n_draws=400
            )
            _all_agree(post, draws_at_or_above_center=post.measure.minimize and post.measure.ideal == 0)
            if post.interval_box is not None:  # a confidence interval: no probability, never a share of draws
                assert math.isnan(post.prob_within(0.05)) and post.no_prob_reason
                assert post.rope(0.05).verdict is None


# -- the selection tables, the monitor ----------------------------------------------------
def test_constrained_threshold_rows_hold_their_values():
    rng = np.random.default_rng(1)
    a = rng.choice(["F", "M"], 800)
    y = rng.integers(0, 2, 800)
    score = np.clip(0.35 * y + 0.02 * (a == "M") + rng.uniform(0, 0.6, 800), 0, 1)
    pick = sfm.constrained_threshold(
        "classif.acc",
        {"fairness.eod_max": 0.2, "fairness.cv": 0.2},
        y,
        score,
        sensitive_features=a,
        thresholds=np.linspace(0.0, 1.0, 11),
        if_none="fairest",
    )
    table = pick.front
    for key in ("fairness.eod_max", "fairness.cv", "classif.acc"):
        v, lo, hi = table[key], table[f"{key} lo"], table[f"{key} hi"]
        ok = v.notna() & lo.notna()
        assert ((lo[ok] <= v[ok] + 1e-12) & (v[ok] <= hi[ok] + 1e-12)).all(), table[[key, f"{key} lo", f"{key} hi"]]


def test_the_monitor_shows_values_inside_their_sequences_after_a_drift():
    from skfair_measures.monitor import FairnessMonitor

    rng = np.random.default_rng(0)
    mon = FairnessMonitor("fairness.tpr", eps=0.05)
    for day in range(12):
        n = 800
        g, y = rng.choice(["A", "B"], n), rng.integers(0, 2, n)
        tpr = np.where(g == "A", 0.87, 0.87 if day < 6 else 0.6)
        pred = np.where(y == 1, rng.uniform(size=n) < tpr, rng.uniform(size=n) < 0.1).astype(int)
        mon.update(pred, y_true=y, sensitive_features=g)
        for table in (mon.status(), mon.group_status()):
            ok = table["value"].notna()
            assert ((table["lower"][ok] <= table["value"][ok]) & (table["value"][ok] <= table["upper"][ok])).all()


def test_the_tradeoff_plot_and_choose_rank_by_the_same_aggregate():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from sklearn.linear_model import LogisticRegression
    from sklearn.tree import DecisionTreeClassifier

    from skfair_measures import plots
    from skfair_measures.benchmark import benchmark

    rng = np.random.default_rng(0)
    X, A = rng.normal(size=(400, 3)), rng.choice(["a", "b"], 400)
    y = (X[:, 0] + 0.4 * (A == "a") + rng.normal(size=400) > 0).astype(int)
    learners = {"logreg": LogisticRegression(), "tree": DecisionTreeClassifier(max_depth=3, random_state=0)}
    bmr = benchmark(learners, X, y, A, measures=["fairness.eod", "classif.acc"], cv=3, random_state=0)
    choice = bmr.choose("classif.acc", {"fairness.eod": 1.0})
    ax = plots.fairness_accuracy_tradeoff(bmr, "fairness.eod", "classif.acc", show_folds=False)
    shown = np.array([c.get_offsets()[0] for c in ax.collections])
    assert shown[:, 0] == pytest.approx(choice.table["fairness.eod"].to_numpy())
    assert shown[:, 1] == pytest.approx(choice.table["classif.acc"].to_numpy())


def test_the_monitor_and_the_active_assessment_give_estimates():
    from skfair_measures.active import ActiveAssessment
    from skfair_measures.monitor import FairnessMonitor

    rng = np.random.default_rng(2)
    mon = FairnessMonitor(["fairness.tpr", "fairness.cv"], eps=0.05)
    for _ in range(3):
        g, y = rng.choice(["A", "B"], 300), rng.integers(0, 2, 300)
        mon.update(rng.integers(0, 2, 300), y_true=y, sensitive_features=g)
    assert tuple(mon.summary().columns) == SUMMARY_COLUMNS
    for est in mon.estimates().values():
        _agree(est, 0.05, est.prob)
    g, y_pred = np.repeat(["a", "b"], 100), rng.integers(0, 2, 200)
    aa = ActiveAssessment(y_pred, np.where(y_pred == 1, 0.7, 0.3), sensitive_features=g, random_state=0)
    rows = aa.ask(60)
    aa.tell(rows, rng.integers(0, 2, rows.size))
    _all_agree(aa.estimate("a", "b"))


def test_selection_tables_read_as_summary_rows():
    from skfair_measures.selection import summary_table

    rng = np.random.default_rng(7)
    a, y = rng.choice(["F", "M"], 600), rng.integers(0, 2, 600)
    score = np.clip(0.4 * y + rng.uniform(0, 0.6, 600), 0, 1)
    pick = sfm.constrained_threshold(
        "classif.acc", {"fairness.dp_ratio": 0.5}, y, score, sensitive_features=a, thresholds=[0.2, 0.5, 0.8]
    )
    rows = summary_table(pick.table, eps=0.1)
    assert tuple(rows.columns) == SUMMARY_COLUMNS and len(rows) == 2 * len(pick.table)
    ok = rows["value"].notna()
    assert ((rows["lower"][ok] <= rows["value"][ok]) & (rows["value"][ok] <= rows["upper"][ok])).all()


def test_an_absolute_quantified_disparity_maps_the_signed_interval():
    from skfair_measures.unaware._quantification import QuantificationResult

    signed = np.random.default_rng(0).normal(0.0, 0.03, 500)
    res = QuantificationResult(0.0, pd.Series([0.5, 0.5], index=["a", "b"]), draws=signed).absolute()
    lo, hi = res.interval()
    assert lo == 0.0 and hi == pytest.approx(max(-np.quantile(signed, 0.025), np.quantile(signed, 0.975)))
    _all_agree(res)
