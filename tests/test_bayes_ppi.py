"""Prediction-powered inference (method="ppi"): agreement with ppi_py, coverage, weights, undefined groups."""

import warnings

import numpy as np
import pytest
from scipy.special import expit

import skfair_measures as sfm
from skfair_measures.bayes import posterior, posteriors
from skfair_measures.bayes._ppi import tuned_lambda

with warnings.catch_warnings():  # importing ppi_py silences every warning of the process otherwise
    ppi_py = pytest.importorskip("ppi_py")


def test_a_ppi_posterior_keeps_warnings_on():
    """Nothing a PPI fit imports silences the process's warnings (importing ppi_py 0.2.3 does)."""
    import subprocess
    import sys

    code = (
        "import warnings, numpy as np, skfair_measures as sfm\n"
        "rng = np.random.default_rng(0)\n"
        "g, s = rng.integers(0, 2, 300), rng.uniform(size=300)\n"
        "y = (rng.uniform(size=300) < s).astype(int)\n"
        "sfm.bayes.posterior(sfm.msr('fairness.acc'), y[:100], s[:100], sensitive_features=g[:100], method='ppi',\n"
        "                    unlabeled_scores=s[100:], unlabeled_sensitive=g[100:], random_state=0)\n"
        "with warnings.catch_warnings(record=True) as rec:\n"
        "    warnings.warn('still on')\n"
        "print(len(rec))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def _draw(n, rng, share=0.3):
    """Two groups; labels from a group-dependent model; scores from a miscalibrated, group-blind one."""
    g = (rng.uniform(size=n) < share).astype(int)
    x = rng.normal(size=n)
    p = expit(1.5 * x + 0.5 * g - 0.3)
    s = expit(1.2 * x + 0.2)
    return g, s, p


def _truth(rates=("tpr", "acc", "ppv")):
    """Population values of group 1 minus group 0, from expected labels on two million rows."""
    g, s, p = _draw(2_000_000, np.random.default_rng(0))
    pred = s >= 0.5
    cells = {
        "tpr": lambda m: (p[m] * pred[m]).sum() / p[m].sum(),
        "acc": lambda m: (p[m] * pred[m] + (1 - p[m]) * ~pred[m]).mean(),
        "ppv": lambda m: (p[m] * pred[m]).sum() / pred[m].sum(),
    }
    return {r: cells[r](g == 1) - cells[r](g == 0) for r in rates}


def _sample(n_l, n_u, seed):
    rng = np.random.default_rng(seed)
    g, s, p = _draw(n_l + n_u, rng)
    y = (rng.uniform(size=n_l + n_u) < p).astype(int)
    lab = dict(y_true=y[:n_l], y_score=s[:n_l], sensitive_features=g[:n_l])
    return lab, dict(unlabeled_scores=s[n_l:], unlabeled_sensitive=g[n_l:]), y


def test_accuracy_matches_ppi_py():
    """Accuracy is a plain mean: point estimate, tuned lambda and interval are ppi_py's (up to ddof)."""
    lab, unl, _ = _sample(300, 5000, 1)
    post = posterior(sfm.msr("fairness.acc"), **lab, method="ppi", random_state=0, **unl)
    s, g, y = lab["y_score"], lab["sensitive_features"], lab["y_true"]
    su, gu = unl["unlabeled_scores"], unl["unlabeled_sensitive"]
    for k in (0, 1):
        m, mu = g == k, gu == k
        correct = (y[m] == (s[m] >= 0.5)).astype(float)
        guess = np.where(s[m] >= 0.5, s[m], 1 - s[m])
        guess_u = np.where(su[mu] >= 0.5, su[mu], 1 - su[mu])
        ref = float(ppi_py.ppi_mean_pointestimate(correct, guess, guess_u)[0])
        assert post.by_group.iloc[k] == pytest.approx(ref, abs=0.003)  # mean of draws vs estimate
        assert post.attrs["lambda"]["acc"][k] == pytest.approx(
            float(
                np.clip(
                    np.mean((correct - correct.mean()) * (guess - guess.mean()))
                    / ((1 + m.sum() / mu.sum()) * np.var(np.r_[guess, guess_u], ddof=1)),
                    0,
                    1,
                )
            )
        )
        lo, hi = ppi_py.ppi_mean_ci(correct, guess, guess_u, alpha=0.05)
        half = 1.959964 * post.attrs["se"]["acc"][k]
        n = m.sum()
        assert half == pytest.approx((hi[0] - lo[0]) / 2, rel=1.5 / n)  # ddof=1 here, ddof=0 in ppi_py


def test_tuned_lambda_is_ppi_pluses():
    rng = np.random.default_rng(0)
    y = rng.normal(size=400)
    yhat = y + rng.normal(size=400)
    yu = rng.normal(size=4000) * np.sqrt(2)
    grads = (y - y.mean())[:, None]
    with warnings.catch_warnings():
        from ppi_py.ppi import _calc_lam_glm

    ref = _calc_lam_glm(grads, (yhat - y.mean())[:, None], (yu - y.mean())[:, None], np.eye(1), clip=True)
    assert tuned_lambda(y, yhat, yu) == pytest.approx(float(np.ravel(ref)[0]))


def test_coverage_of_95_intervals_on_simulated_data():
    """300 seeded runs, n_L = 300, n_U = 5000, miscalibrated scores, groups of 30% and 70%.

    The 95% intervals of the signed TPR and accuracy differences must cover the truth at a rate
    consistent with 93-97%: within two binomial standard deviations of 300 runs (1.3 points) of that
    band. The standardised errors ``(estimate - truth) / se`` must have a standard deviation near 1 (the
    delta-method variance is right, not just wide). Figures for other n_L: docs/bayes.md.
    """
    truth = _truth(("tpr", "acc"))
    ms = [sfm.msr("fairness.tpr").against(0), sfm.msr("fairness.acc").against(0)]
    runs = 300
    hits, z = np.zeros((runs, 2)), np.zeros((runs, 2))
    for r in range(runs):
        lab, unl, _ = _sample(300, 5000, 1000 + r)
        res = posteriors(ms, **lab, method="ppi", n_draws=400, random_state=r, **unl)
        for j, (post, t) in enumerate(zip(res.values(), truth.values(), strict=True)):
            lo, hi = post.interval(0.95)
            hits[r, j] = lo <= t <= hi
            z[r, j] = (post.value - t) / np.hypot(*post.attrs["se"][post.measure.bases[0].name])
    cover = hits.mean(0)
    noise = 2 * np.sqrt(0.95 * 0.05 / runs)
    assert ((0.93 - noise <= cover) & (cover <= 0.97 + noise)).all(), cover
    assert (np.abs(z.std(0) - 1) < 0.1).all(), z.std(0)
    assert (np.abs(z.mean(0)) < 0.15).all(), z.mean(0)


def test_power_tuning_narrows_with_good_scores_and_ignores_useless_ones():
    """PPI++ is never worse than the labels alone: with calibrated scores the standard errors of the PPV
    (averaged over 20 samples of 200 labels) shrink; random scores get lambda near 0 and the classical ones."""

    def std_errors(informative, **kw):
        se, lam = [], []
        for seed in range(20):
            rng = np.random.default_rng(seed)
            g = rng.integers(0, 2, 5200)
            p = rng.beta(0.5, 0.5, 5200)
            y = (rng.uniform(size=5200) < p).astype(int)
            s = p if informative else rng.uniform(size=5200)
            post = posterior(
                sfm.msr("fairness.ppv"),
                y[:200],
                s[:200],
                sensitive_features=g[:200],
                method="ppi",
                unlabeled_scores=s[200:],
                unlabeled_sensitive=g[200:],
                n_draws=10,
                random_state=0,
                **kw,
            )
            se.append(post.attrs["se"]["ppv"])
            lam.append(post.attrs["lambda"]["ppv"])
        return np.mean(se), np.mean(lam)

    tuned, lam = std_errors(True)
    classical, lam0 = std_errors(True, lam=0.0)
    assert tuned < 0.92 * classical and lam > 0.5 and lam0 == 0.0
    useless, lam_noise = std_errors(False)
    useless0, _ = std_errors(False, lam=0.0)
    assert lam_noise < 0.2 and useless < 1.03 * useless0


def test_weights_are_weighted_means():
    """At a fixed lambda, integer weights give the estimate of repeated rows; weights change the estimate.

    (The tuned lambda differs: weights are not repeated observations, the variance counts the rows.)
    """
    lab, unl, _ = _sample(200, 3000, 5)
    rng = np.random.default_rng(0)
    w = rng.integers(1, 4, 200)
    rep = {k: np.repeat(v, w) for k, v in lab.items()}
    m = sfm.msr("fairness.tpr").against(0)
    fixed = posterior(m, **lab, sample_weight=w, method="ppi", lam=0.6, random_state=0, **unl)
    repeated = posterior(m, **rep, method="ppi", lam=0.6, random_state=0, **unl)
    assert fixed.value == pytest.approx(repeated.value, abs=1e-9)
    a = posterior(m, **lab, sample_weight=w, method="ppi", random_state=0, **unl)
    plain = posterior(m, **lab, method="ppi", random_state=0, **unl)
    assert plain.value != pytest.approx(a.value, abs=1e-6)
    wu = rng.uniform(0.5, 2.0, 3000)
    c = posterior(m, **lab, sample_weight=w, unlabeled_sample_weight=wu, method="ppi", random_state=0, **unl)
    assert np.isfinite(c.value) and c.value != a.value
    with pytest.raises(ValueError, match="method='bb' counts labeled samples"):
        posterior(m, **lab, sample_weight=w, random_state=0)
    with pytest.raises(ValueError, match="unlabeled_sample_weight has 2 rows but unlabeled_scores has 3000"):
        posterior(m, **lab, method="ppi", unlabeled_sample_weight=[1, 2], **unl)


def test_every_count_rate_and_the_measures_own_operation():
    lab, unl, _ = _sample(400, 4000, 7)
    keys = [
        "fairness.acc",
        "fairness.tpr",
        "fairness.fpr",
        "fairness.ppv",
        "fairness.npv",
        "fairness.fomr",
        "fairness.cv",
        "fairness.eod",
        "fairness.pp",
        "fairness.acc_eod=.05",
    ]
    for key in keys:
        post = posterior(sfm.msr(key), **lab, method="ppi", random_state=0, **unl)
        assert np.isfinite(post.value) and post.defined, key
        vals = {name: d for name, d in post.group_draws.items()}
        assert np.allclose(
            post.chain_draws,
            post.measure.from_group_values(vals, groups=post.groups, overall=None)
            if key != "fairness.acc_eod=.05"
            else post.chain_draws,
        )
    ratio = posterior(sfm.msr("fairness.tpr", operation="ratio"), **lab, method="ppi", random_state=0, **unl)
    assert 0 < ratio.value <= 1 and ratio.center == 1.0
    to_overall = posterior(
        sfm.msr("fairness.tpr", operation="diff_to_overall"), **lab, method="ppi", random_state=0, **unl
    )
    assert np.isfinite(to_overall.value)
    with pytest.raises(TypeError, match="count, not a rate"):
        posterior(sfm.msr("fairness.tp"), **lab, method="ppi", **unl)


def test_ppi_needs_unlabeled_rows_and_labels_in_every_group():
    lab, unl, _ = _sample(100, 1000, 9)
    m = sfm.msr("fairness.tpr")
    with pytest.raises(ValueError, match="method='ppi' needs unlabeled data"):
        posterior(m, **lab, method="ppi")
    g = lab["sensitive_features"].copy()
    g[g == 1] = 0
    g[0] = 1  # one labeled row in group 1
    with pytest.warns(sfm.measures.UndefinedGroupWarning, match="PPI needs at least 2"):
        post = posterior(m, lab["y_true"], lab["y_score"], sensitive_features=g, method="ppi", **unl)
    assert np.isnan(post.value) and "PPI needs at least 2" in post.reason
    assert np.isnan(post.interval()[0]) and post.rope().verdict is None


def test_few_labels_per_group_warn_that_the_interval_is_asymptotic():
    """100 labels of which few are positives in a group: a named warning and attrs["asymptotic"] False."""
    from skfair_measures.bayes import AsymptoticWarning

    lab, unl, _ = _sample(100, 10_000, 11)
    m = sfm.msr("fairness.eod")
    with pytest.warns(AsymptoticWarning, match="tpr in group"):
        post = posterior(m, **lab, method="ppi", random_state=0, **unl)
    assert post.attrs["asymptotic"] is False and post.attrs["small_groups"]
    lab, unl, _ = _sample(3000, 10_000, 11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post = posterior(m, **lab, method="ppi", random_state=0, **unl)
    assert post.attrs["asymptotic"] is True


def test_reproducible():
    lab, unl, _ = _sample(100, 1000, 12)
    a = posterior(sfm.msr("fairness.ppv"), **lab, method="ppi", random_state=4, **unl)
    b = posterior(sfm.msr("fairness.ppv"), **lab, method="ppi", random_state=4, **unl)
    assert np.array_equal(a.draws, b.draws) and a.value == b.value
