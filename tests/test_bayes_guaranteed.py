"""method="guaranteed": coverage at every sample size, whatever the scores' calibration; its API."""

from __future__ import annotations

import numpy as np
import pytest

import skfair_measures as sfm
from skfair_measures import bayes

POOL = 20_000


def _pool(calibrated: bool, rng: np.random.Generator):
    """A population of two groups; labels calibrated to the scores or not (overconfident, shifted)."""
    g = np.repeat([0, 1], POOL)
    s = np.where(g == 0, rng.beta(2, 3, 2 * POOL), rng.beta(3, 2, 2 * POOL))
    logit = np.log(s / (1 - s))
    p = s if calibrated else 1 / (1 + np.exp(-(0.3 * logit + np.where(g == 0, 0.8, -0.8))))
    y = (rng.uniform(size=2 * POOL) < p).astype(int)
    return y, s, g


def _coverage(n: int, calibrated: bool, runs: int, seed: int, powered: bool = False) -> dict[str, float]:
    """Share of runs covering the truth on the pool; ``powered``: the rest of the pool is the unlabeled rows."""
    rng = np.random.default_rng(seed)
    y, s, g = _pool(calibrated, rng)
    made = [sfm.msr(k, operation="diff_to_reference", reference=0) for k in ("fairness.acc", "fairness.tpr")]
    measures = {m.key: m for m in made}
    truth = {k: m(y, (s >= 0.5).astype(int), sensitive_features=g) for k, m in measures.items()}
    hits = dict.fromkeys(measures, 0)
    counted = dict.fromkeys(measures, 0)
    for _ in range(runs):
        if powered:  # n per group without replacement; every other row of the pool is unlabeled
            rows = np.concatenate([rng.choice(POOL, n, replace=False), POOL + rng.choice(POOL, n, replace=False)])
            rest = np.setdiff1d(np.arange(2 * POOL), rows)
            extra = {"unlabeled_scores": s[rest], "unlabeled_sensitive": g[rest]}
        else:
            rows = np.concatenate([rng.integers(0, POOL, n), POOL + rng.integers(0, POOL, n)])  # n per group, iid
            extra = {}
        res = bayes.posteriors(
            list(measures.values()), y[rows], s[rows], sensitive_features=g[rows], method="guaranteed", **extra
        )
        for k, post in res.items():
            if post.defined:  # an undefined rate (no positives among the labels) gives no interval
                lo, hi = post.interval(0.95)
                hits[k] += lo <= truth[k] <= hi
                counted[k] += 1
    return {k: hits[k] / counted[k] for k in measures if counted[k]}


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_coverage_at_ten_labels_per_group_quick():
    cov = _coverage(10, calibrated=False, runs=60, seed=1)
    assert len(cov) == 2 and all(c >= 0.95 for c in cov.values()), cov


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_prediction_powered_coverage_with_miscalibrated_scores_quick():
    cov = _coverage(10, calibrated=False, runs=40, seed=2, powered=True)
    assert len(cov) == 2 and all(c >= 0.95 for c in cov.values()), cov


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("powered", [False, True], ids=["labels", "powered"])
@pytest.mark.parametrize("calibrated", [True, False], ids=["calibrated", "miscalibrated"])
@pytest.mark.parametrize("n", [5, 10, 30])
def test_coverage_at_every_sample_size(n, calibrated, powered):
    """300 seeded runs per cell: coverage >= 95% within two binomial sd."""
    cov = _coverage(n, calibrated, runs=300, seed=n + 100 * calibrated + 1000 * powered, powered=powered)
    floor = 0.95 - 2 * np.sqrt(0.95 * 0.05 / 300)
    assert len(cov) == 2 and all(c >= floor for c in cov.values()), cov


def test_interval_is_a_confidence_interval_not_a_posterior():
    rng = np.random.default_rng(0)
    g, s = rng.integers(0, 2, 80), rng.uniform(size=80)
    y = (rng.uniform(size=80) < s).astype(int)
    post = bayes.posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=g, method="guaranteed")
    lo, hi = post.interval(0.95)
    assert lo <= post.value <= hi
    assert post.interval(0.5)[1] <= hi  # a lower level, a narrower interval
    assert np.isnan(post.prob_within(0.05)) and np.isnan(post.sd())
    assert post.rope(0.05).verdict is None and "confidence interval" in post.rope(0.05).reason
    assert post.method == "guaranteed" and post.attrs["sequences"] == 3


def test_options_are_refused_by_name():
    y, s, g = [1, 0, 1, 1], [0.9, 0.2, 0.7, 0.4], ["a", "a", "b", "b"]
    with pytest.raises(ValueError, match="not of method='guaranteed'"):
        bayes.posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=g, method="guaranteed", prior="jeffreys")


def test_unlabeled_scores_power_the_interval_and_the_estimate_stays_inside():
    rng = np.random.default_rng(3)
    g, s = rng.integers(0, 2, 5000), rng.beta(0.4, 0.4, 5000)
    y = (rng.uniform(size=5000) < s).astype(int)
    m = sfm.msr("fairness.acc")
    labels = bayes.posterior(m, y[:200], s[:200], sensitive_features=g[:200], method="guaranteed")
    powered = bayes.posterior(
        m,
        y[:200],
        s[:200],
        sensitive_features=g[:200],
        method="guaranteed",
        unlabeled_scores=s[200:],
        unlabeled_sensitive=g[200:],
    )
    assert powered.attrs["prediction_powered"] and not labels.attrs["prediction_powered"]
    for post in (labels, powered):
        lo, hi = post.interval(0.95)
        assert lo <= post.value <= hi
    assert np.subtract(*powered.interval(0.95)[::-1]) < np.subtract(*labels.interval(0.95)[::-1])


def test_a_rate_without_rows_in_its_denominator_is_undefined_with_the_reason():
    y, s, g = [0, 0, 1, 1], [0.9, 0.2, 0.7, 0.4], ["a", "a", "b", "b"]
    with pytest.warns(UserWarning, match="no labeled row"):
        post = bayes.posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=g, method="guaranteed")
    assert np.isnan(post.value) and "whole range" in post.reason


def test_a_rate_of_the_predictions_alone_is_exact_once_every_row_is_given():
    """fairness.cv reads y_pred only: with the unlabeled rows its group rates are known, the interval is the value."""
    rng = np.random.default_rng(3)
    g, s = rng.integers(0, 2, 400), rng.uniform(size=400)
    y = (rng.uniform(size=100) < s[:100]).astype(int)
    m = sfm.msr("fairness.cv")
    exact = m((rng.uniform(size=400) < s).astype(int), (s >= 0.5).astype(int), sensitive_features=g)
    for method in ("guaranteed", "auto"):
        post = sfm.bayes.posterior(
            m,
            y,
            s[:100],
            sensitive_features=g[:100],
            unlabeled_scores=s[100:],
            unlabeled_sensitive=g[100:],
            method=method,
        )
        lo, hi = post.interval(0.95)
        assert lo == pytest.approx(exact) and hi == pytest.approx(exact), method
    labels_only = sfm.bayes.posterior(m, y, s[:100], sensitive_features=g[:100], method="guaranteed").interval(0.95)
    assert labels_only[1] - labels_only[0] > 0.05  # without the other rows the population's rate is uncertain


def test_weighted_selection_rates_need_the_unlabeled_rows_weights_and_ignore_a_common_factor():
    rng = np.random.default_rng(4)
    g, s = rng.integers(0, 2, 200), rng.uniform(size=200)
    y = (rng.uniform(size=200) < s).astype(int)
    gu, su = rng.integers(0, 2, 2000), rng.uniform(size=2000)
    w, wu = rng.uniform(0.5, 2.0, 200), rng.uniform(0.5, 2.0, 2000)
    kw = dict(sensitive_features=g, unlabeled_scores=su, unlabeled_sensitive=gu, method="guaranteed")
    with pytest.raises(ValueError, match="unlabeled_sample_weight= is not, for the 2000 unlabeled rows"):
        bayes.posterior(sfm.msr("fairness.cv"), y, s, sample_weight=w, **kw)
    one = bayes.posterior(sfm.msr("fairness.cv"), y, s, sample_weight=w, unlabeled_sample_weight=wu, **kw)
    ten = bayes.posterior(sfm.msr("fairness.cv"), y, s, sample_weight=10 * w, unlabeled_sample_weight=10 * wu, **kw)
    assert one.value == pytest.approx(ten.value) and one.interval() == pytest.approx(ten.interval())


def test_with_every_audited_row_labeled_the_interval_is_the_exact_value():
    rng = np.random.default_rng(8)
    g, s = rng.integers(0, 2, 3000), rng.uniform(size=3000)
    y = (rng.uniform(size=3000) < s).astype(int)
    m = sfm.msr("fairness.acc")
    exact = m(y, (s >= 0.5).astype(int), sensitive_features=g)
    post = bayes.posterior(m, y, s, sensitive_features=g, method="guaranteed", target="audited rows")
    assert post.interval() == pytest.approx((exact, exact)) and post.attrs["target"] == "audited rows"
    auto = bayes.posterior(m, y, s, sensitive_features=g, target="audited rows", random_state=0)
    lo, hi = auto.interval()
    assert lo <= exact <= hi and hi - lo <= 0.01 and auto.attrs["construction"] == "betting, without replacement"
    # labels only, no target: the labeled rows are a sample of a population (the interval of old)
    pop = bayes.posterior(m, y, s, sensitive_features=g, method="guaranteed")
    assert pop.attrs["target"] == "population" and pop.interval()[1] - pop.interval()[0] > 0.05
    with pytest.raises(ValueError, match="target='audited rows' is answered by the guaranteed interval"):
        bayes.posterior(m, y, s, sensitive_features=g, method="bb", target="audited rows")


def test_sampling_without_replacement_covers_and_shrinks_as_labels_cover_the_rows():
    from skfair_measures._betting import prediction_powered_interval

    rng = np.random.default_rng(2)
    N = 400
    s = rng.uniform(size=N)
    correct = (rng.uniform(size=N) < s**2).astype(float)  # scores that are not calibrated
    truth, proxy = correct.mean(), np.where(s >= 0.5, s, 1 - s)
    widths, hits = {}, 0
    for n in (40, 200, 390):
        for _ in range(25):
            lab = rng.choice(N, n, replace=False)
            one = np.ones(n)
            lo, hi = prediction_powered_interval(correct[lab], one, proxy[lab], one, proxy.mean(), 1.0, population=N)
            hits += lo <= truth <= hi
            widths.setdefault(n, []).append(hi - lo)
    assert hits >= 0.9 * 75
    assert np.median(widths[390]) < 0.35 * np.median(widths[200]) < 0.35 * np.median(widths[40])


def test_auto_with_every_row_labeled_reports_the_exact_value_of_a_gap_near_zero():
    """auto's estimate was BB's posterior mean of |TPR gap| (0.040 for an exact 0.003 on Adult rows), and its
    interval, widened to hold it, 0.037 wide; with every audited row labeled the rates are known exactly."""
    rng = np.random.default_rng(3)
    g, y = rng.integers(0, 2, 3000), rng.integers(0, 2, 3000)
    s = np.clip(0.5 + 0.3 * (2 * y - 1) + rng.normal(0, 0.2, 3000), 0, 1)
    m = sfm.msr("fairness.tpr")
    exact = m(y, (s >= 0.5).astype(int), sensitive_features=g)
    auto = bayes.posterior(m, y, s, sensitive_features=g, target="audited rows", random_state=0)
    assert auto.value == pytest.approx(exact) and auto.interval() == pytest.approx((exact, exact))
    assert auto.attrs["estimate"].startswith("the exact rates")
