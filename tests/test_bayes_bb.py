"""Beta-Binomial posteriors and the posterior object (no MCMC: fast)."""

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import skfair_measures as sfm
from skfair_measures.base import BASE_METRICS, ratio_roles
from skfair_measures.bayes import MeasurePosterior, RopeResult, posterior
from skfair_measures.bayes._bb import cell_concentration

RATES = ["acc", "tpr", "fpr", "tnr", "fnr", "ppv", "npv", "fdr", "fomr", "selection_rate", "error_rate"]


def _data(n=300, seed=0, groups=("F", "M")):
    rng = np.random.default_rng(seed)
    a = rng.choice(list(groups), n)
    s = rng.uniform(size=n)
    y = (rng.uniform(size=n) < s).astype(int)
    return y, s, a


def _counts(y, s, a, group, thr=0.5):
    m = a == group
    p = (s[m] >= thr).astype(int)
    t = y[m]
    return {(i, j): int(((t == i) & (p == j)).sum()) for i in (0, 1) for j in (0, 1)}


@pytest.mark.parametrize("name", RATES)
def test_ratio_roles_match_the_rate(name):
    base = BASE_METRICS[name]
    roles = ratio_roles(base)
    assert roles.simple
    c = np.array([[3.0, 5.0], [7.0, 11.0]])
    assert np.isclose(base.from_counts(c), (c * roles.num).sum() / (c * roles.den).sum())


def test_counts_are_not_rates():
    with pytest.raises(TypeError, match="count, not a rate"):
        ratio_roles(BASE_METRICS["tp"])
    y, s, a = _data()
    with pytest.raises(TypeError, match="'tp'"):
        posterior(sfm.msr("fairness.tp"), y, s, sensitive_features=a)
    with pytest.raises(TypeError, match="confusion counts"):
        posterior(sfm.msr("fairness.mse"), y, s, sensitive_features=a)


# numerator and denominator cells of each rate, as (y_true, y_pred) pairs
CELLS = {
    "acc": ([(0, 0), (1, 1)], [(0, 0), (0, 1), (1, 0), (1, 1)]),
    "tpr": ([(1, 1)], [(1, 0), (1, 1)]),
    "fpr": ([(0, 1)], [(0, 0), (0, 1)]),
    "ppv": ([(1, 1)], [(0, 1), (1, 1)]),
    "npv": ([(0, 0)], [(0, 0), (1, 0)]),
    "selection_rate": ([(0, 1), (1, 1)], [(0, 0), (0, 1), (1, 0), (1, 1)]),
}


@pytest.mark.parametrize("name", list(CELLS))
@pytest.mark.parametrize("prior,ab", [("uniform", (1.0, 1.0)), ("jeffreys", (0.5, 0.5)), ((2.0, 3.0), (2.0, 3.0))])
def test_marginal_is_the_papers_beta(name, prior, ab):
    """Each group rate is Beta(alpha + k, beta + n - k), the paper's conjugate posterior."""
    y, s, a = _data(n=120, seed=3)
    post = posterior(
        sfm.msr(f"fairness.{name}" if name != "selection_rate" else "fairness.cv"),
        y,
        s,
        sensitive_features=a,
        prior=prior,
        n_draws=5000,
        random_state=1,
    )
    num, den = CELLS[name]
    for j, g in enumerate(post.groups):
        c = _counts(y, s, a, g)
        k = sum(c[x] for x in num)
        n = sum(c[x] for x in den)
        ref = stats.beta(ab[0] + k, ab[1] + n - k)
        d = post.group_draws[name][..., j].ravel()
        assert stats.kstest(d, ref.cdf).pvalue > 1e-3
        assert abs(d.mean() - ref.mean()) < 4 * ref.std() / np.sqrt(d.size)


def test_signed_difference_other_minus_reference():
    y, s, a = _data()
    post = posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=a, reference="M", random_state=0)
    assert post.measure.signed and post.measure.ideal == 0.0
    assert post.key == sfm.msr("fairness.acc").against("M").key != "fairness.acc"
    d = post.group_draws["acc"]
    f, m = list(post.groups).index("F"), list(post.groups).index("M")
    assert np.allclose(post.chain_draws, d[..., f] - d[..., m])
    flipped = posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=a, reference="F", random_state=0)
    assert np.isclose(flipped.mean(), -post.mean())
    unsigned = posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=a, random_state=0)
    assert np.allclose(unsigned.draws, np.abs(post.draws))


def test_summaries_are_floats_and_consistent():
    y, s, a = _data(n=200)
    post = posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=a, reference="M", method="bb", random_state=0)
    x = post.draws.ravel()
    for v in (post.mean(), post.median(), post.sd(), post.prob_greater(0.0), post.prob_within(0.02)):
        assert type(v) is float
    assert np.isclose(post.mean(), x.mean())
    assert np.isclose(post.prob_greater(0.1), np.mean(x > 0.1))
    assert np.isclose(post.prob_within(0.05), np.mean(np.abs(x) <= 0.05))
    assert post.prob_within(0.05) == post.rope(0.05).within  # one definition of "practically fair"
    assert np.isclose(post.prob_greater(0.0) + post.prob_less(0.0), 1.0)
    lo, hi = post.interval(0.9)
    assert np.isclose(np.mean((x >= lo) & (x <= hi)), 0.9, atol=0.01)
    hlo, hhi = post.interval(0.9, kind="hdi")
    assert hhi - hlo <= hi - lo + 1e-9
    assert np.isclose(post.upper_bound(0.95), np.quantile(np.abs(x), 0.95))
    with pytest.raises(ValueError, match="prob"):
        post.interval(1.5)
    with pytest.raises(ValueError, match="kind"):
        post.interval(0.9, kind="x")


def test_rope_verdict():
    y, s, a = _data(n=2000)
    post = posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=a, reference="M", random_state=0)
    r = post.rope(0.05)
    assert isinstance(r, RopeResult)
    assert np.isclose(r.below + r.within + r.above, 1.0)
    assert r.verdict == "equivalent" and r.probability > 0.9
    assert "practically fair" in str(r)
    # a clearly unfair model: group F always wrong
    s2 = np.where(a == "F", 1 - y, y).astype(float)
    bad = posterior(sfm.msr("fairness.acc"), y, s2, sensitive_features=a, reference="M", random_state=0)
    assert bad.rope(0.05).verdict == "below"
    assert bad.prob_greater(0.0) == 0.0


def test_ratio_measures_center_on_one():
    y, s, a = _data(n=1000)
    post = posterior(sfm.msr("fairness.dp_ratio"), y, s, sensitive_features=a, reference="M", random_state=0)
    assert post.measure.ideal == 1.0 and post.center == 1.0
    assert post.rope(0.2).verdict == "equivalent"


def test_reproducible_with_seed():
    y, s, a = _data()
    p1 = posterior(sfm.msr("fairness.fpr"), y, s, sensitive_features=a, random_state=42)
    p2 = posterior(sfm.msr("fairness.fpr"), y, s, sensitive_features=a, random_state=42)
    p3 = posterior(sfm.msr("fairness.fpr"), y, s, sensitive_features=a, random_state=43)
    assert np.array_equal(p1.draws, p2.draws)
    assert not np.array_equal(p1.draws, p3.draws)
    assert p1.chain_draws.shape == (4, 1000) and p1.draws.shape == (4000,)
    small = posterior(sfm.msr("fairness.fpr"), y, s, sensitive_features=a, chains=2, n_draws=10)
    assert small.chain_draws.shape == (2, 10)


def test_coverage_of_95_intervals_near_95():
    """Known truth: Bernoulli labels with known group rates; BB intervals cover ~95%."""
    rng = np.random.default_rng(7)
    n_rep, n = 400, 80
    true_acc = {"F": 0.7, "M": 0.85}
    delta = true_acc["F"] - true_acc["M"]
    hits = []
    for _ in range(n_rep):
        a = rng.choice(["F", "M"], n, p=[0.4, 0.6])
        s = rng.uniform(0.5, 1.0, n)  # always predicts 1
        correct = rng.uniform(size=n) < np.vectorize(true_acc.get)(a)
        y = correct.astype(int)
        post = posterior(
            sfm.msr("fairness.acc"),
            y,
            s,
            sensitive_features=a,
            reference="M",
            method="bb",
            n_draws=500,
            random_state=rng,
        )
        lo, hi = post.interval(0.95)
        hits.append(lo <= delta <= hi)
    assert 0.92 <= np.mean(hits) <= 0.985


def test_more_than_two_groups_and_intersections():
    y, s, a = _data(n=600, groups=("a", "b", "c"))
    post = posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=a, reference="a", random_state=0)
    assert post.group_draws["tpr"].shape == (4, 1000, 3)
    d = post.group_draws["tpr"]
    others = d[..., 1:] - d[..., :1]
    idx = np.abs(others).argmax(-1)
    assert np.allclose(post.chain_draws, np.take_along_axis(others, idx[..., None], -1)[..., 0])
    rng = np.random.default_rng(0)
    sf = pd.DataFrame({"sex": rng.choice(["F", "M"], 600), "age": rng.choice(["old", "young"], 600)})
    inter = posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=sf, random_state=0)
    assert isinstance(inter.groups, pd.MultiIndex) and len(inter.groups) == 4
    assert "acc[F, old]" in inter.table().index


def test_composites_use_the_same_operations():
    y, s, a = _data(n=400)
    post = posterior(sfm.msr("fairness.eod"), y, s, sensitive_features=a, random_state=0)
    assert post.attrs["prior_cells"] == "per-rate"
    tpr, fpr = post.group_draws["tpr"], post.group_draws["fpr"]
    expect = (np.abs(tpr[..., 0] - tpr[..., 1]) + np.abs(fpr[..., 0] - fpr[..., 1])) / 2
    assert np.allclose(post.chain_draws, expect)
    with pytest.warns(UserWarning, match="does not change fairness.eod"):
        posterior(sfm.msr("fairness.eod"), y, s, sensitive_features=a, reference="M")
    # accuracy and TPR share cells: a Dirichlet prior on the cells keeps them consistent
    con = posterior(sfm.msr("fairness.acc_eod=.05"), y, s, sensitive_features=a, random_state=0)
    assert con.attrs["prior_cells"] == "dirichlet"
    alpha, kind = cell_concentration([BASE_METRICS["acc"], BASE_METRICS["tpr"]], 2)
    assert kind == "dirichlet" and np.allclose(alpha, 1.0)


def test_point_estimate_is_near_posterior_mean_with_much_data():
    y, s, a = _data(n=20000, seed=5)
    m = sfm.msr("fairness.ppv", operation="diff_to_reference", reference="M", threshold=0.5)
    post = posterior(sfm.msr("fairness.ppv"), y, s, sensitive_features=a, reference="M", random_state=0)
    assert abs(post.mean() - m(y, s, sensitive_features=a)) < 0.005


def test_threshold_and_pos_label():
    y, s, a = _data(n=300)
    labels = np.where(y == 1, "yes", "no")
    p1 = posterior(
        sfm.msr("fairness.cv"), labels, s, sensitive_features=a, pos_label="yes", threshold=0.7, random_state=0
    )
    p2 = posterior(sfm.msr("fairness.cv", threshold=0.7), y, s, sensitive_features=a, random_state=0)
    assert np.allclose(p1.draws, p2.draws)
    assert p1.attrs["threshold"] == 0.7


def test_scores_prior_is_the_models_self_assessment():
    """The prior is Beta(N0 r, N0 (1 - r)); one correct label in F makes it Beta(N0 r + 1, N0 (1 - r))."""
    rng = np.random.default_rng(0)
    s_u = rng.uniform(size=5000)
    a_u = rng.choice(["F", "M"], 5000)
    y, s, a = np.array([1, 0, 1]), np.array([0.9, 0.2, 0.8]), np.array(["M", "M", "F"])
    post = posterior(
        sfm.msr("fairness.acc", groups=["F", "M"]),
        y,
        s,
        sensitive_features=a,
        method="bb",
        unlabeled_scores=s_u,
        unlabeled_sensitive=a_u,
        prior="scores",
        prior_strength=10.0,
        n_draws=4000,
        random_state=0,
    )
    f = s_u[a_u == "F"]
    r = np.mean(np.where(f >= 0.5, f, 1 - f))
    d = post.group_draws["acc"][..., 0].ravel()
    a_, b_ = 10.0 * r + 1, 10.0 * (1 - r)
    assert abs(d.mean() - a_ / (a_ + b_)) < 0.01
    assert abs(d.var() - a_ * b_ / ((a_ + b_) ** 2 * (a_ + b_ + 1))) < 0.003


def test_input_errors_name_the_argument():
    y, s, a = _data(n=50)
    m = sfm.msr("fairness.acc")
    with pytest.raises(ValueError, match="reference='X'"):
        posterior(m, y, s, sensitive_features=a, reference="X")
    with pytest.raises(ValueError, match="method='bc' needs unlabeled data"):
        posterior(m, y, s, sensitive_features=a, method="bc")
    with pytest.raises(ValueError, match="method="):
        posterior(m, y, s, sensitive_features=a, method="mcmc")
    with pytest.raises(ValueError, match="unlabeled_sensitive"):
        posterior(m, y, s, sensitive_features=a, unlabeled_scores=[0.2])
    with pytest.raises(ValueError, match=r"unlabeled_sensitive holds value\(s\) \['Z'\]"):
        posterior(m, y, s, sensitive_features=a, unlabeled_scores=[0.2], unlabeled_sensitive=["Z"])
    with pytest.raises(ValueError, match="y_score has values outside"):
        posterior(m, y, s * 3, sensitive_features=a)
    with pytest.raises(ValueError, match="unlabeled_scores has values outside"):
        posterior(m, y, s, sensitive_features=a, unlabeled_scores=[2.0], unlabeled_sensitive=["F"])
    with pytest.raises(ValueError, match="prior="):
        posterior(m, y, s, sensitive_features=a, prior="flat")


def test_summary_and_inference_data():
    y, s, a = _data(n=200)
    post = posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=a, reference="M", random_state=0)
    tab = post.table()
    assert list(tab.index) == [post.key, "tpr[F]", "tpr[M]"]
    assert {"mean", "sd", "eti_lower", "eti_upper", "hdi_lower", "hdi_upper", "r_hat", "ess_bulk"} <= set(tab)
    assert np.isclose(tab.loc[post.key, "mean"], post.mean())
    assert abs(tab.loc["tpr[F]", "r_hat"] - 1) < 0.01  # independent draws
    bg = post.group_summary()
    assert list(bg.index) == ["F", "M"] and np.allclose(bg["mean"], post.group_draws["tpr"].mean((0, 1)))
    assert np.allclose(post.by_group, bg["mean"]) and post.by_group.name == "tpr"
    idata = post.to_inference_data()
    assert idata.posterior["tpr"].dims == ("chain", "draw", "group")
    assert list(idata.posterior["tpr"].coords["group"].values) == ["F", "M"]
    assert float(idata.posterior[post.key].mean()) == pytest.approx(post.mean())
    assert idata.constant_data["counts"].shape == (2, 2, 2)
    assert idata.attrs["method"] == "bb"
    assert "fairness.tpr" in repr(post) and isinstance(post, MeasurePosterior)


def test_a_rate_no_label_informs_is_undefined_not_its_prior():
    """Issue 18: TPR with no positive label anywhere was the prior read as a finding (mean 0.33, verdict 'above')."""
    y, s, a = _data(n=100)
    with pytest.warns(sfm.UndefinedGroupWarning, match="prior alone"):
        post = posterior(
            sfm.msr("fairness.tpr"), np.zeros_like(y), s, sensitive_features=a, method="bb", random_state=0
        )
    assert np.isnan(post.value) and post.rope().verdict is None and np.isnan(post.interval()[0])
    assert "tpr in group(s) ['F', 'M'] has no labeled row in its denominator (no positives" in post.reason
    # a declared group without rows: its rate is NaN (not the uniform prior), and so is the measure
    with pytest.warns(sfm.UndefinedGroupWarning):
        post = posterior(sfm.msr("fairness.tpr", groups=["F", "M", "X"]), y, s, sensitive_features=a, random_state=0)
    assert np.isnan(post.group_draws["tpr"][..., 2]).all() and "group(s) ['X']" in post.reason
    assert not np.isnan(post.group_draws["tpr"][..., :2]).any()


def test_import_stays_light():
    code = (
        "import sys, skfair_measures, skfair_measures.bayes; "
        "print(any(m in sys.modules for m in ('pymc', 'arviz', 'pytensor', 'matplotlib')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_warning_in_normal_use():
    y, s, a = _data(n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=a, reference="M", random_state=0)


def test_no_module_outside_bayes_imports_its_private_modules():
    """A rate's numerator and denominator cells are a fact of the base metric (base.ratio_roles), not of bayes."""
    import ast
    from pathlib import Path

    root = Path(sfm.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if "bayes" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and ".bayes._" in f".{node.module}":
                offenders.append(f"{path.relative_to(root)}: from {'.' * node.level}{node.module}")
    assert not offenders, offenders
