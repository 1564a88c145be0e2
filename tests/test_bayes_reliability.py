"""Bayesian reliability diagrams, ECE posteriors and the posterior plots."""

import matplotlib
import numpy as np
import pytest

import skfair_measures as sfm
from skfair_measures import bayes
from skfair_measures.bayes import plot_posterior, plot_reliability, reliability_posterior

matplotlib.use("Agg")


def _scores(n, seed, miscal_b=True):
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b"], n)
    s = rng.uniform(size=n)
    p = np.where((g == "b") & miscal_b, s**2, s)
    return (rng.uniform(size=n) < p).astype(int), s, g


def test_ece_posterior_finds_the_miscalibrated_group():
    y, s, g = _scores(3000, 0)
    rel = reliability_posterior(y, s, sensitive_features=g, random_state=0)
    tab = rel.ece_summary()
    assert tab.loc["a", "upper"] < 0.06
    assert tab.loc["b", "lower"] > 0.1  # E|s - s^2| = 1/6
    assert abs(tab.loc["b", "mean"] - 1 / 6) < 0.03
    diff = rel.ece_difference("a")
    assert (diff > 0).mean() > 0.99


def test_bin_posterior_is_beta_binomial_centred_on_the_diagonal():
    y, s, g = _scores(500, 1)
    rel = reliability_posterior(y, s, sensitive_features=g, n_draws=20000, random_state=0)
    j, b = 0, 3
    m = rel.mean_score[j, b]
    a0, b0 = 2 * m, 2 * (1 - m)
    expect = (a0 + rel.k[j, b]) / (a0 + b0 + rel.n[j, b])
    assert rel.theta[:, j, b].mean() == pytest.approx(expect, abs=0.005)
    t = rel.table()
    assert len(t) == 2 * 10 and {"mean", "lower", "upper", "weight", "n"} <= set(t)
    assert np.allclose(rel.weight.sum(1), 1.0)


def test_unlabeled_scores_only_change_weights_and_means():
    y, s, g = _scores(100, 2)
    _, su, gu = _scores(5000, 3)
    rel = reliability_posterior(y, s, sensitive_features=g, unlabeled_scores=su, unlabeled_sensitive=gu, random_state=0)
    assert rel.n.sum() == 100
    assert np.allclose(rel.weight, 0.1, atol=0.03)  # uniform scores


def test_confidence_kind_and_single_group():
    y, s, _ = _scores(1000, 4, miscal_b=False)
    rel = reliability_posterior(y, s, kind="confidence", n_bins=5, random_state=0)
    assert list(rel.groups) == ["all"]
    assert rel.edges[0] == 0.5
    assert rel.ece_summary().loc["all", "mean"] < 0.06
    with pytest.raises(ValueError, match="kind="):
        reliability_posterior(y, s, kind="top")


def test_empty_bins_keep_their_prior():
    y = np.array([1, 0, 1, 0])
    s = np.array([0.91, 0.92, 0.05, 0.06])
    rel = reliability_posterior(y, s, prior="uniform", random_state=0)
    assert rel.n[0, 5] == 0
    assert rel.theta[:, 0, 5].mean() == pytest.approx(0.5, abs=0.02)


def test_plots_return_axes():
    y, s, g = _scores(500, 5)
    rel = reliability_posterior(y, s, sensitive_features=g, random_state=0)
    ax = plot_reliability(rel)
    assert len(ax.get_legend().get_texts()) == 2
    assert rel.plot() is not None
    post = bayes.posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=g, reference="a", random_state=0)
    ax2 = plot_posterior(post, eps=0.05)
    assert "P(|.-0|<=0.05)" in ax2.get_title()
