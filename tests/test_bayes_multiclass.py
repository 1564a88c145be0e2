"""Posteriors beyond binary: K-class labels (Dirichlet-multinomial) and min_group_size (fast, no MCMC)."""

import warnings

import numpy as np
import pytest

import skfair_measures as sfm
from skfair_measures.bayes import posterior, posteriors
from skfair_measures.groups import SmallGroupWarning


def _labels(n, k=4, n_groups=3, seed=0, shift=0.0):
    """K-class labels; predictions right with probability 0.7 (0.7 + shift in the last group)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, n_groups, n)
    y = rng.integers(0, k, n)
    right = rng.random(n) < 0.7 + shift * (g == n_groups - 1)
    p = np.where(right, y, (y + rng.integers(1, k, n)) % k)
    return y, p, g


# -- K classes: Dirichlet posterior of the confusion tensor -----------------------------------------


def test_k_classes_posterior_centres_on_the_plug_in_with_many_rows():
    y, p, g = _labels(60_000, k=5)
    for m in [
        sfm.msr("fairness.acc"),
        sfm.msr("fairness", base="balanced_accuracy"),
        sfm.msr("fairness.tpr", average="macro"),
    ]:
        post = posterior(m, y, p, sensitive_features=g, method="bb", random_state=1)
        plug_in = m(y, p, sensitive_features=g)
        assert post.method == "bb" and post.label_counts.shape == (3, 5, 5)
        assert post.mean() == pytest.approx(plug_in, abs=0.005), m.key
        by_group = m.evaluate(y, p, sensitive_features=g).by_group
        np.testing.assert_allclose(post.by_group, by_group, atol=0.005)
        lo, hi = post.interval(0.95)
        assert lo < hi and hi - lo < 0.05


def test_accuracy_difference_interval_covers_in_repeated_samples():
    # true accuracies: 0.7 and 0.78 (group 1), so the signed difference 1 - 0 is 0.08
    k, n, runs = 4, 400, 200
    truth = 0.08
    covered = 0
    for seed in range(runs):
        y, p, g = _labels(n, k=k, n_groups=2, seed=seed, shift=0.08)
        post = posterior(
            sfm.msr("fairness.acc"),
            y,
            p,
            sensitive_features=g,
            reference=0,
            n_draws=500,
            method="bb",
            random_state=seed,
        )
        lo, hi = post.interval(0.95)
        covered += lo <= truth <= hi
    assert 0.90 <= covered / runs <= 0.99, covered / runs


def test_signed_keys_and_several_measures_share_one_draw():
    y, p, g = _labels(2_000)
    res = posteriors(
        [sfm.msr("fairness.acc"), sfm.msr("fairness", base="error_rate")],
        y,
        p,
        sensitive_features=g,
        reference=2,
        method="bb",
        random_state=0,
    )
    acc, err = res.values()
    assert acc.method == "bb" and acc.attrs["method_requested"] == "bb"
    assert acc.key.startswith("fairness.acc(operation=diff_to_reference")
    np.testing.assert_allclose(acc.draws, -err.draws)  # accuracy and error rate: the same draws, sign flipped
    again = posterior(sfm.msr("fairness.acc"), y, p, sensitive_features=g, reference=2, method="bb", random_state=0)
    np.testing.assert_array_equal(again.draws, acc.draws)


def test_k_classes_refusals_name_the_fix():
    y, p, g = _labels(300)
    with pytest.raises(ValueError, match="predicted labels"):
        posterior(sfm.msr("fairness.acc"), y, np.linspace(0, 1, y.size), sensitive_features=g, method="bb")
    with pytest.raises(ValueError, match="method='bc' models the scores"):
        posterior(
            sfm.msr("fairness.acc"),
            y,
            p,
            sensitive_features=g,
            method="bc",
            unlabeled_scores=[0.5],
            unlabeled_sensitive=[0],
        )
    with pytest.raises(ValueError, match="prior=.* does not apply to K classes"):
        posterior(sfm.msr("fairness.acc"), y, p, sensitive_features=g, method="bb", prior=(2, 2))
    with pytest.raises(ValueError, match="tpr is a one-vs-rest rate"):
        posterior(sfm.msr("fairness.tpr"), y, p, sensitive_features=g, method="bb")


def test_binary_labels_keep_the_beta_binomial_path():
    rng = np.random.default_rng(0)
    y, s, g = rng.integers(0, 2, 500), rng.random(500), rng.integers(0, 2, 500)
    post = posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=g, method="bb", random_state=0)
    assert post.label_counts.shape == (2, 2, 2) and "classes" not in post.attrs
    # one class against the rest of K classes: still the binary path (scores of that class)
    yk, _, gk = _labels(500)
    post = posterior(
        sfm.msr("fairness.tpr", pos_label=2), yk, rng.random(500), sensitive_features=gk, method="bb", random_state=0
    )
    assert post.label_counts.shape == (3, 2, 2)


# -- min_group_size: group size = labeled rows -------------------------------------------------------


def _binary_with_tiny_group(seed=0):
    rng = np.random.default_rng(seed)
    g = np.array(["a"] * 200 + ["b"] * 200 + ["c"] * 8)
    y = rng.integers(0, 2, g.size)
    s = np.clip(0.4 * y + 0.6 * rng.random(g.size), 0, 1)
    return y, s, g


def test_posterior_drops_a_tiny_group_with_the_core_warning():
    y, s, g = _binary_with_tiny_group()
    m = sfm.msr("fairness.tpr", min_group_size=20)
    with pytest.warns(SmallGroupWarning, match=r"left out.*'c' \(8\)"):
        post = posterior(m, y, s, sensitive_features=g, method="bb", random_state=0)
    assert list(post.groups) == ["a", "b"] and post.counts.tolist() == [200, 200]
    keep = g != "c"
    plain = posterior(
        sfm.msr("fairness.tpr"), y[keep], s[keep], sensitive_features=g[keep], method="bb", random_state=0
    )
    np.testing.assert_array_equal(post.draws, plain.draws)


def test_posterior_merges_a_tiny_group_labeled_and_unlabeled():
    y, s, g = _binary_with_tiny_group()
    m = sfm.msr("fairness.acc", min_group_size=20, small_groups="merge")
    u_scores, u_groups = np.r_[s, s], np.r_[g, g]
    with pytest.warns(SmallGroupWarning, match=r"merged into 'other'"):
        post = posterior(
            m,
            y,
            s,
            sensitive_features=g,
            method="ppi",
            unlabeled_scores=u_scores,
            unlabeled_sensitive=u_groups,
            random_state=0,
        )
    assert list(post.groups) == ["a", "b", "other"] and post.counts.tolist() == [200, 200, 8]
    merged = np.where(g == "c", "other", g)
    plain = posterior(
        sfm.msr("fairness.acc"),
        y,
        s,
        sensitive_features=merged,
        method="ppi",
        unlabeled_scores=u_scores,
        unlabeled_sensitive=np.where(u_groups == "c", "other", u_groups),
        random_state=0,
    )
    np.testing.assert_allclose(post.draws, plain.draws)


def test_min_group_size_in_the_k_class_posterior_and_disagreeing_measures():
    y, p, g = _labels(3_000)
    g = np.where(np.arange(g.size) < 10, 7, g)  # group 7: 10 rows
    with pytest.warns(SmallGroupWarning, match=r"7 \(10\)"):
        post = posterior(sfm.msr("fairness.acc", min_group_size=50), y, p, sensitive_features=g, random_state=0)
    assert list(post.groups) == [0, 1, 2]
    with pytest.raises(ValueError, match="different \\(min_group_size, small_groups\\)"):
        posteriors(
            [sfm.msr("fairness.tpr", min_group_size=5), sfm.msr("fairness.fpr")],
            (y > 1).astype(int),
            np.linspace(0, 1, y.size),
            sensitive_features=g,
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no small group: no warning
        posterior(sfm.msr("fairness.acc", min_group_size=5), y[10:], p[10:], sensitive_features=g[10:])
