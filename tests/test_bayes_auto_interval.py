"""method="auto" below the rule's row count: the labels' Jeffreys posterior (with weights the guaranteed interval),
the estimate inside it, coverage."""

from __future__ import annotations

import numpy as np
import pytest

import skfair_measures as sfm
from skfair_measures import bayes
from skfair_measures.bayes._auto import INTERVAL_MIN_LABELS

POOL = 5_000


def _pool(rng: np.random.Generator):
    """Two groups; labels badly calibrated to the scores (overconfident, shifted in opposite directions)."""
    g = np.repeat([0, 1], POOL)
    s = np.where(g == 0, rng.beta(2, 3, 2 * POOL), rng.beta(3, 2, 2 * POOL))
    logit = np.log(s / (1 - s))
    p = 1 / (1 + np.exp(-(0.3 * logit + np.where(g == 0, 0.8, -0.8))))
    return (rng.uniform(size=2 * POOL) < p).astype(int), s, g


def _auto_coverage(n: int, runs: int, seed: int, form: str) -> tuple[dict[str, float], dict[str, int]]:
    """Share of defined runs whose auto interval (95%) covers the pool's value; ``form``: labels, weights or scores.

    ``weights``: labeled rows drawn independently with probability proportional to ``pi``
    (higher for higher scores), ``sample_weight = 1 / pi``, the rest of the pool unlabeled.
    """
    rng = np.random.default_rng(seed)
    y, s, g = _pool(rng)
    measures = [sfm.msr(k, operation="diff_to_reference", reference=0) for k in ("fairness.acc", "fairness.tpr")]
    truth = {m.key: m(y, (s >= 0.5).astype(int), sensitive_features=g) for m in measures}
    pi = 0.5 + s  # inclusion weight of each row of the pool
    hits, counted = dict.fromkeys(truth, 0), dict.fromkeys(truth, 0)
    for _ in range(runs):
        extra = {}
        if form == "weights":
            rows = rng.choice(2 * POOL, n, p=pi / pi.sum())  # independent draws with known probabilities
            extra["sample_weight"] = 1.0 / pi[rows]
        else:
            rows = rng.choice(2 * POOL, n, replace=False)
        if form != "labels":
            rest = np.setdiff1d(np.arange(2 * POOL), rows)
            extra.update(unlabeled_scores=s[rest], unlabeled_sensitive=g[rest])
        res = bayes.posteriors(measures, y[rows], s[rows], sensitive_features=g[rows], random_state=0, **extra)
        for k, post in res.items():
            if not post.defined:  # no labeled positive in a group: no value, no interval
                continue
            lo, hi = post.interval(0.95)
            assert lo <= post.value <= hi, (lo, post.value, hi)
            want = {"scores": "the labels' Jeffreys", "labels": "bb's own (prior='jeffreys')", "weights": "guaranteed"}
            assert post.attrs["interval"].startswith(want[form])
            # with scores and no weights, the calibration model's estimate; labels only: the Jeffreys posterior's mean
            assert post.attrs["estimate"].startswith("bc's" if form == "scores" else post.method)
            hits[k] += lo <= truth[k] <= hi
            counted[k] += 1
    return {k: hits[k] / counted[k] for k in truth if counted[k]}, counted


def _at_least_nominal(cov: dict[str, float], counted: dict[str, int]) -> bool:
    return all(c >= 0.95 - 2 * np.sqrt(0.05 * 0.95 / counted[k]) for k, c in cov.items())


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("form", ["labels", "weights"])
@pytest.mark.parametrize("n", [10, 20, 40])
def test_auto_covers_at_few_labels(n, form):
    """Labels only (the Jeffreys posterior) and sample weights (the guaranteed interval; ppi's own under-covers)."""
    cov, counted = _auto_coverage(n, runs=60, seed=n + (form == "weights"), form=form)
    assert cov and _at_least_nominal(cov, counted), (cov, counted)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("n", [10, 20, 40])
def test_auto_covers_at_few_labels_with_miscalibrated_scores_slow(n):
    """BC's estimate (MCMC per run), the labels' Jeffreys posterior interval widened to hold it."""
    cov, counted = _auto_coverage(n, runs=40, seed=100 + n, form="scores")
    assert cov and _at_least_nominal(cov, counted), (cov, counted)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_auto_reports_its_methods_interval_with_enough_labels_and_says_why():
    rng = np.random.default_rng(5)
    n = 4 * INTERVAL_MIN_LABELS + 200
    g, y = rng.integers(0, 2, n), rng.integers(0, 2, n)
    s = np.clip(0.5 * y + rng.uniform(0, 0.5, n), 0, 1)
    post = bayes.posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=g, random_state=0)
    assert post.method == "bb" and post.attrs["interval"] == "bb's own" and post.interval_box is None
    assert str(INTERVAL_MIN_LABELS) in post.attrs["interval_reason"]
    few = bayes.posterior(sfm.msr("fairness.tpr"), y[:40], s[:40], sensitive_features=g[:40], random_state=0)
    assert few.attrs["interval"] == "bb's own (prior='jeffreys')" and "fewer than" in few.attrs["interval_reason"]
    assert few.method == "bb" and few.attrs["prior"] == "jeffreys" and few.attrs["estimate"] == "bb's posterior mean"
    # one construction: the Jeffreys posterior's interval and its probabilities
    lo, hi = few.interval(0.95)
    assert lo <= few.value <= hi and 0 < few.prob_within(0.2) < 1 and few.no_prob_reason is None
    assert few.summary().loc[0, "construction"] == "Beta-Binomial posterior (Jeffreys prior)"


def test_guaranteed_takes_weights_and_says_the_scores_are_not_used():
    rng = np.random.default_rng(6)
    g, s = rng.integers(0, 2, 80), rng.uniform(size=80)
    y = (rng.uniform(size=80) < s).astype(int)
    post = bayes.posterior(
        sfm.msr("fairness.acc"),
        y,
        s,
        sensitive_features=g,
        method="guaranteed",
        sample_weight=rng.uniform(0.5, 2.0, 80),
        unlabeled_scores=s,
        unlabeled_sensitive=g,
    )
    lo, hi = post.interval(0.95)
    assert lo <= post.value <= hi and not post.attrs["prediction_powered"]
    assert "scores are not used" in post.attrs["sampler"]
