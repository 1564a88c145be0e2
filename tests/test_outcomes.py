"""Outcome disparities: Newcombe's and Tango's score intervals, prediction-powered group rates, paired pairs."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from skfair_measures.outcomes import outcome_disparity, paired_disparity
from skfair_measures.uncertainty import SUMMARY_COLUMNS
from skfair_measures.uncertainty._proportions import _tango_z, mcnemar_exact, tango


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 80).flatmap(lambda n: st.tuples(st.integers(0, n), st.integers(0, n), st.just(n))))
def test_tango_holds_its_estimate_and_excludes_zero_exactly_when_mcnemar_rejects(cells):
    b, c, n = cells
    if b + c > n:
        b, c = b * n // (b + c), c * n // (b + c)
    lo, hi = tango(b, c, n, 0.95)
    assert -1 <= lo <= (b - c) / n <= hi <= 1
    for bound in (lo, hi):  # the bounds are the score's roots, or the end of the range
        assert abs(bound) == 1 or abs(abs(_tango_z(bound, b, c, n)) - stats.norm.ppf(0.975)) < 1e-6
    z0 = abs(b - c) / np.sqrt(b + c) if b + c else 0.0  # McNemar's score statistic
    if abs(z0 - stats.norm.ppf(0.975)) > 1e-6:
        assert (lo <= 0 <= hi) == (z0 < stats.norm.ppf(0.975))
    assert 0 <= mcnemar_exact(b, c) <= 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from("ab")), min_size=4, max_size=60))
def test_labels_only_difference_is_the_rate_difference_and_coherent(rows):
    y, g = zip(*rows, strict=True)
    if len(set(g)) < 2:
        return
    d = outcome_disparity(list(y), list(g))
    frame = pd.DataFrame({"y": y, "g": g}).astype({"y": float})
    rates = frame.groupby("g")["y"].mean()
    assert d.value == pytest.approx(rates["b"] - rates["a"])
    lo, hi = d.interval()
    lo90, hi90 = d.interval(0.9)
    assert lo <= lo90 <= d.value <= hi90 <= hi
    assert d.verdict(0.05) == (
        "within" if -0.05 <= lo and hi <= 0.05 else "exceeds" if lo > 0.05 or hi < -0.05 else "inconclusive"
    )
    assert tuple(d.summary().columns) == SUMMARY_COLUMNS and d.target == "population"
    assert d.by_group["items"].tolist() == frame.groupby("g").size().tolist()


def test_scores_get_welch_and_the_ratio_katz():
    rng = np.random.default_rng(0)
    y, g = rng.random(40), np.repeat(["a", "b"], 20)
    d = outcome_disparity(y, g)
    ci = stats.ttest_ind(y[20:], y[:20], equal_var=False).confidence_interval(0.95)
    assert d.construction == "Welch t" and d.interval() == pytest.approx((ci.low, ci.high))
    r = outcome_disparity(y > 0.5, g, measure="ratio", reference="b")
    assert r.construction.startswith("MOVER-Wilson") and r.groups == ("b", "a") and r.key == "outcome.ratio"
    assert r.interval()[0] <= r.value <= r.interval()[1]


def test_undefined_and_refused_inputs_say_why():
    d = outcome_disparity([1, 0, np.nan, np.nan], list("aabb"))
    assert np.isnan(d.value) and "['b']" in d.reason and d.verdict(0.05) == "inconclusive"
    assert "Newcombe" in d.summary()["construction"].iloc[0]
    zero = outcome_disparity([0, 0, 1, 0], list("aabb"), measure="ratio")
    assert np.isnan(zero.value) and "rate of group 'a' is 0" in zero.reason
    with pytest.raises(ValueError, match="group has 3"):
        outcome_disparity([1, 0, 1], list("abc"))
    with pytest.raises(ValueError, match="outside"):
        outcome_disparity([1, 2], list("ab"))
    with pytest.raises(ValueError, match="judge is missing on 1"):
        outcome_disparity([1, 0, 1, 0], list("aabb"), judge=[1, 0, np.nan, 0])
    with pytest.raises(ValueError, match="reference='c'"):
        outcome_disparity([1, 0], list("ab"), reference="c")


def _traffic(rng, n=2000, labels=150, rates=(0.30, 0.40), errors=((0.10, 0.12), (0.08, 0.16))):
    """Traces of two groups, a human outcome, a judge that errs differently per group, a random labelled subset."""
    b = rng.random(n) < 0.5
    y = rng.random(n) < np.where(b, rates[1], rates[0])
    wrong = rng.random(n) < np.where(
        y, np.where(b, errors[1][1], errors[0][1]), np.where(b, errors[1][0], errors[0][0])
    )
    labelled = np.zeros(n, bool)
    labelled[rng.choice(n, labels, replace=False)] = True
    return np.where(labelled, y, np.nan), np.where(b, "b", "a"), np.where(wrong, ~y, y).astype(float)


def test_judge_plus_human_labels_covers_and_is_narrower_reduced():
    """The benchmark's simulation, 150 runs: PPI covers the human-level difference, narrower than Newcombe's."""
    newcomb = pytest.importorskip("statsmodels.stats.proportion").confint_proportions_2indep
    rng, truth, hit, widths = np.random.default_rng(7), 0.10, 0, []
    for _ in range(150):
        y, g, judge = _traffic(rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lo, hi = outcome_disparity(y, g, judge=judge).interval()
        hit += lo <= truth <= hi
        lab = ~np.isnan(y)
        yb, ya = y[lab & (g == "b")], y[lab & (g == "a")]
        n_lo, n_hi = newcomb(yb.sum(), yb.size, ya.sum(), ya.size, method="newcomb")  # uncorrected, method 10
        widths.append(((hi - lo), (n_hi - n_lo)))
    w = np.median(np.array(widths), axis=0)
    assert hit / 150 >= 0.90 and w[0] / w[1] <= 0.85


def test_a_useless_judge_gives_the_labels_only_interval_width():
    rng = np.random.default_rng(1)
    y, g, _ = _traffic(rng, labels=400)
    d = outcome_disparity(y, g, judge=np.full(y.size, 0.5))
    assert d.by_group["lambda"].tolist() == [0.0, 0.0]
    labelled = ~np.isnan(y)
    assert d.value == pytest.approx(outcome_disparity(y[labelled], g[labelled]).value)


def test_paired_pairs_cover_reduced():
    rng, hit = np.random.default_rng(3), 0
    cells = np.array([0.25, 0.05, 0.15, 0.55])  # (1, 1), (first only), (second only), (0, 0)
    for _ in range(200):
        k = rng.choice(4, size=60, p=cells)
        d = paired_disparity(np.isin(k, (0, 1)), np.isin(k, (0, 2)))
        lo, hi = d.interval()
        hit += lo <= cells[2] - cells[1] <= hi
    assert hit / 200 >= 0.92


def test_paired_scores_are_the_paired_t():
    rng = np.random.default_rng(2)
    x = rng.random(30)
    y = np.clip(x + rng.normal(0.05, 0.1, 30), 0, 1)
    d = paired_disparity(x, y, names=("he", "she"))
    res = stats.ttest_rel(y, x)
    assert d.construction == "paired t" and d.p_value == pytest.approx(res.pvalue)
    assert d.interval(0.9) == pytest.approx(tuple(res.confidence_interval(0.9)))
    assert "she vs he; paired t-test p =" in d.summary()["note"].iloc[0]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(4, 40), st.integers(2, 200))
def test_prediction_powered_rates_match_ppi_py(seed, n_labelled, n_unlabelled):
    """Each group's rate is ppi_py's PPI++ point estimate at the lambda shown in the table."""
    with warnings.catch_warnings():
        from ppi_py import ppi_mean_pointestimate
    rng = np.random.default_rng(seed)
    n = n_labelled + n_unlabelled
    g = np.array(["a", "b"] * n)[: 2 * n]
    y = (rng.random(2 * n) < 0.4).astype(float)
    judge = np.clip(y * 0.6 + rng.random(2 * n) * 0.4, 0, 1)
    labelled = np.zeros(2 * n, bool)
    labelled[: 2 * n_labelled] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d = outcome_disparity(np.where(labelled, y, np.nan), g, judge=judge)
    for group in "ab":
        lab, unl = labelled & (g == group), ~labelled & (g == group)
        lam = d.by_group.loc[group, "lambda"]
        expected = ppi_mean_pointestimate(y[lab], judge[lab], judge[unl], lam=lam) if lam > 0 else y[lab].mean()
        assert d.by_group.loc[group, "rate"] == pytest.approx(float(np.ravel(expected)[0]))
    lo, hi = d.interval()
    assert lo <= d.value <= hi
