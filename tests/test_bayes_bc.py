"""Bayesian calibration (MCMC). Real fits run in ``make test``; comparisons with PyMC's samplers are slow."""

import warnings

import numpy as np
import pytest

import skfair_measures as sfm
from skfair_measures.bayes import SamplingWarning, posterior, posteriors
from skfair_measures.bayes._bc import CLIP, build_model, calibrated_cells

pytest.importorskip("pymc")
pytest.importorskip("nutpie")


def _sim(n, seed, miscal=True, groups=("F", "M"), p_groups=(0.4, 0.6)):
    """Scores miscalibrated in a known, group-specific way: P(y=1|s) = s**2 for F, sqrt(s) for M."""
    rng = np.random.default_rng(seed)
    a = rng.choice(list(groups), n, p=list(p_groups))
    s = rng.beta(2, 2, n)
    if miscal:
        p = np.where(a == groups[0], s**2, np.sqrt(s))
    else:
        p = s
    y = (rng.uniform(size=n) < p).astype(int)
    return y, s, a


def _truth(key, y, s, a, reference="M"):
    m = sfm.msr(key, operation="diff_to_reference", reference=reference)
    return m(y, (s >= 0.5).astype(int), sensitive_features=a)


SMALL = dict(chains=2, tune=300, n_draws=100)


def test_small_real_fit():
    """The one MCMC fit of the fast suite: shapes, diagnostics, reproducibility, accuracy."""
    y, s, a = _sim(60, 0)
    yu, su, au = _sim(3000, 1)
    kw = dict(
        sensitive_features=a,
        method="bc",
        unlabeled_scores=su,
        unlabeled_sensitive=au,
        reference="M",
        random_state=3,
        **SMALL,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)  # short chains: R-hat may exceed 1.01
        res = posteriors([sfm.msr("fairness.acc"), sfm.msr("fairness.tpr")], y, s, **kw)
        again = posterior(sfm.msr("fairness.acc"), y, s, **kw)
    post = res[sfm.msr("fairness.acc").against("M").key]
    assert post.chain_draws.shape == (2, 100)
    assert post.group_draws["acc"].shape == (2, 100, 2)
    assert post.extra_draws["a"].shape == (2, 100, 2)
    assert post.diagnostics()["divergences"] == 0
    assert post.diagnostics()["max_r_hat"] < 1.05
    # the truth on labeled + unlabeled data is inside the interval, and BC beats the raw scores
    truth = _truth("fairness.acc", np.r_[y, yu], np.r_[s, su], np.r_[a, au])
    lo, hi = post.interval(0.95)
    assert lo - 0.02 <= truth <= hi + 0.02
    # same seed: same draws (the compiled model is reused)
    assert np.array_equal(again.draws, post.draws)
    assert again.attrs["compile_seconds"] == 0.0
    # a looser prior: the same compiled model, new prior_sd data, a different (wider) posterior
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        loose = posterior(sfm.msr("fairness.acc"), y, s, prior_scale=5.0, **kw)
    assert loose.attrs["compile_seconds"] == 0.0 and loose.attrs["prior_scale"] == 5.0
    assert loose.sd() > post.sd()
    # the TPR posterior came from the same fit
    assert res[sfm.msr("fairness.tpr").against("M").key].trace is post.trace
    idata = post.to_inference_data()
    assert {"a", "b", "c", "acc", post.key, "mu_a", "sigma_c", "z_b"} <= set(idata.posterior.data_vars)
    assert idata.posterior["z_b"].dims == ("chain", "draw", "group")
    assert "diverging" in idata.sample_stats
    assert idata.attrs["sampler"] == "nutpie"
    p = idata.posterior
    np.testing.assert_allclose(p["a"], np.exp(p["mu_a"] + p["sigma_a"] * p["z_a"]))
    np.testing.assert_allclose(p["c"], p["mu_c"] + p["sigma_c"] * p["z_c"])
    assert float(p["sigma_a"].min()) > 0


def test_bad_diagnostics_warn_naming_the_parameter():
    y, s, a = _sim(60, 0)
    with pytest.warns(SamplingWarning, match=r"R-hat of [abc]\[[FM]\]|bulk ESS of [abc]\[[FM]\]"):
        post = posterior(
            sfm.msr("fairness.acc"),
            y,
            s,
            sensitive_features=a,
            method="bc",
            unlabeled_scores=s,
            unlabeled_sensitive=a,
            chains=2,
            tune=3,
            n_draws=8,
            random_state=0,
        )
    assert post.diagnostics()["min_ess_bulk"] < 100


def test_divergent_fit_is_sampled_again_with_smaller_steps(monkeypatch):
    nutpie = pytest.importorskip("nutpie")
    real, calls = nutpie.sample, []

    def sample(*args, **kwargs):
        calls.append(kwargs["target_accept"])
        trace = real(*args, **kwargs)
        if len(calls) == 1:  # pretend the first attempt diverged once
            trace.sample_stats["diverging"][0, 0] = True
        return trace

    monkeypatch.setattr(nutpie, "sample", sample)
    y, s, a = _sim(60, 0)
    kw = dict(
        sensitive_features=a,
        method="bc",
        unlabeled_scores=s,
        unlabeled_sensitive=a,
        chains=2,
        tune=100,
        n_draws=50,
        random_state=0,
        warn=False,
    )
    post = posterior(sfm.msr("fairness.acc"), y, s, **kw)
    assert calls == [0.95, 0.99]
    d = post.diagnostics()
    assert d["divergences_first_try"] == 1 and d["divergences"] == 0 and d["target_accept"] == 0.99
    calls.clear()
    post = posterior(sfm.msr("fairness.acc"), y, s, retry_divergent=False, **kw)
    assert calls == [0.95] and post.diagnostics()["divergences"] == 1


def test_calibrated_cells_match_a_direct_loop():
    rng = np.random.default_rng(0)
    params = {
        "a": np.exp(rng.normal(0, 0.3, (2, 5, 3))),
        "b": np.exp(rng.normal(0, 0.3, (2, 5, 3))),
        "c": rng.normal(0, 1, (2, 5, 3)),
    }
    s = rng.uniform(size=400)
    s[:50] = 0.7  # repeated scores share one column
    g = rng.integers(0, 3, 400)
    p = (s >= 0.5).astype(int)
    cells = calibrated_cells(params, s, p, g, 3, chunk=300)
    sc = np.clip(s, *CLIP)
    for c in range(2):
        for d in range(5):
            for k in range(3):
                m = g == k
                a_, b_, c_ = (params[n][c, d, k] for n in "abc")
                logit = c_ + a_ * np.log(sc[m]) - b_ * np.log1p(-sc[m])
                f = 1 / (1 + np.exp(-logit))
                for pp in (0, 1):
                    sel = p[m] == pp
                    assert np.isclose(cells[c, d, k, 1, pp], f[sel].sum(), rtol=1e-5)
                    assert np.isclose(cells[c, d, k, 0, pp], (1 - f[sel]).sum(), rtol=1e-5)


def test_identity_calibration_reproduces_the_self_assessment():
    """With a = b = 1, c = 0 the calibrated probability is the (clipped) score."""
    s = np.array([0.005, 0.3, 0.6, 0.995])
    p = (s >= 0.5).astype(int)
    one = np.ones((1, 1, 1))
    cells = calibrated_cells({"a": one, "b": one, "c": 0 * one}, s, p, np.zeros(4, int), 1)
    sc = np.clip(s, *CLIP)
    assert np.allclose(cells[0, 0, 0], [[1 - sc[0] + 1 - sc[1], 1 - sc[2] + 1 - sc[3]], [sc[0] + sc[1], sc[2] + sc[3]]])


def test_model_structure_and_variants():
    y, s, a = _sim(30, 0)
    ls, l1 = np.log(np.clip(s, *CLIP)), np.log1p(-np.clip(s, *CLIP))
    g = (a == "M").astype(int)
    m = build_model(ls, l1, y, g, 2)
    assert {"mu_a", "sigma_a", "z_a", "mu_b", "z_b", "mu_c", "sigma_c", "z_c"} <= {v.name for v in m.free_RVs}
    assert m.named_vars_to_dims["z_a"] == ("group",)
    assert {v.name for v in build_model(ls, l1, y, g, 2, calibration="llo").free_RVs} == {
        "mu_a",
        "sigma_a",
        "z_a",
        "mu_c",
        "sigma_c",
        "z_c",
    }
    assert {v.name for v in build_model(ls, l1, y, g, 2, calibration="temperature").free_RVs} == {
        "mu_a",
        "sigma_a",
        "z_a",
    }
    assert {v.name for v in build_model(ls, l1, y, g, 2, hierarchical=False).free_RVs} == {"log_a", "log_b", "c"}
    with pytest.raises(ValueError, match="calibration="):
        build_model(ls, l1, y, g, 2, calibration="isotonic")
    assert np.allclose(
        build_model(ls, l1, y, g, 2, prior_scale=2.0)["prior_sd"].get_value(), [0.8, 0.8, 4.0, 0.3, 0.3, 1.5]
    )
    with pytest.raises(ValueError, match="prior_scale"):
        build_model(ls, l1, y, g, 2, prior_scale=0.0)


def test_bad_sampler_is_named():
    y, s, a = _sim(30, 0)
    with pytest.raises(ValueError, match="sampler='stan'"):
        posterior(
            sfm.msr("fairness.acc"),
            y,
            s,
            sensitive_features=a,
            method="bc",
            unlabeled_scores=s,
            unlabeled_sensitive=a,
            sampler="stan",
        )


# ------------------------------------------------------------------ BC against BB, variants


def _bc_vs_bb(n_rep, **mcmc):
    yu, su, au = _sim(5000, 100)
    err_bb, err_bc, cover = [], [], []
    for rep in range(n_rep):
        y, s, a = _sim(20, rep)
        truth = _truth("fairness.acc", np.r_[y, yu], np.r_[s, su], np.r_[a, au])
        kw = dict(sensitive_features=a, reference="M", random_state=rep)
        bb = posterior(sfm.msr("fairness.acc"), y, s, **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SamplingWarning)
            bc = posterior(
                sfm.msr("fairness.acc"), y, s, method="bc", unlabeled_scores=su, unlabeled_sensitive=au, **mcmc, **kw
            )
        err_bb.append(abs(bb.mean() - truth))
        err_bc.append(abs(bc.mean() - truth))
        lo, hi = bc.interval()
        cover.append(lo <= truth <= hi)
    return np.mean(err_bb), np.mean(err_bc), np.mean(cover)


def test_bc_error_below_bb_when_miscalibrated():
    """Known miscalibration (P(y=1|s) = s^2 vs sqrt(s)), 20 labels, the paper's chains: BC is far closer
    to the truth, and its intervals mostly cover it."""
    err_bb, err_bc, cover = _bc_vs_bb(12)
    assert err_bc < 0.5 * err_bb
    assert cover >= 0.75


@pytest.mark.parametrize("calibration,hierarchical", [("llo", True), ("temperature", True), ("beta", False)])
def test_variants_fit_and_recover(calibration, hierarchical):
    y, s, a = _sim(200, 5, miscal=False)
    yu, su, au = _sim(4000, 6, miscal=False)
    post = posterior(
        sfm.msr("fairness.tpr"),
        y,
        s,
        sensitive_features=a,
        method="bc",
        unlabeled_scores=su,
        unlabeled_sensitive=au,
        reference="M",
        calibration=calibration,
        hierarchical=hierarchical,
        random_state=0,
    )
    truth = _truth("fairness.tpr", np.r_[y, yu], np.r_[s, su], np.r_[a, au])
    assert abs(post.mean() - truth) < 0.05
    assert post.diagnostics()["divergences"] == 0
    if calibration != "beta":
        assert np.array_equal(post.extra_draws["a"], post.extra_draws["b"])
    if calibration == "temperature":
        assert not post.extra_draws["c"].any()


def test_more_than_two_groups_share_one_hierarchy():
    y, s, a = _sim(90, 2, miscal=False, groups=("a", "b", "c"), p_groups=(0.3, 0.3, 0.4))
    yu, su, au = _sim(3000, 3, miscal=False, groups=("a", "b", "c"), p_groups=(0.3, 0.3, 0.4))
    post = posterior(
        sfm.msr("fairness.cv"),
        y,
        s,
        sensitive_features=a,
        method="bc",
        unlabeled_scores=su,
        unlabeled_sensitive=au,
        reference="a",
        random_state=0,
    )
    assert post.group_draws["selection_rate"].shape == (4, 200, 3)
    assert post.extra_draws["a"].shape == (4, 200, 3)
    assert post.diagnostics()["divergences"] == 0


@pytest.mark.parametrize("calibration", ["beta", "llo", "temperature"])
@pytest.mark.parametrize("hierarchical", [True, False])
def test_cached_density_equals_the_pymc_model(calibration, hierarchical):
    """The hand-written density that sampler='nutpie' runs is PyMC's model: same log density up to a
    constant, same gradient, at random points, with 3 groups and a non-default prior scale."""
    from skfair_measures.bayes import _bc_density as dens
    from skfair_measures.bayes._bc import _features, prior_sd_vector

    rng = np.random.default_rng(0)
    n_groups, n = 3, 50
    log_s, log1m_s = _features(rng.uniform(0.0, 1.0, n))
    y, g = rng.integers(0, 2, n), rng.integers(0, n_groups, n)
    model = build_model(
        log_s, log1m_s, y, g, n_groups, calibration=calibration, hierarchical=hierarchical, prior_scale=1.7
    )
    logp, dlogp = model.compile_logp(), model.compile_dlogp()
    buf = dens.pack(log_s, log1m_s, y, g, n_groups, calibration, hierarchical, prior_sd_vector(1.7))
    n_dim = dens.n_params(calibration, hierarchical, n_groups)
    # where each PyMC value variable sits in our parameter vector
    per = n_groups + 2 if hierarchical else n_groups
    index = {}
    for k, name in enumerate(dens.LEVELS[calibration]):
        lo = k * per
        if hierarchical:
            index |= {f"mu_{name}": lo, f"sigma_{name}_log__": lo + 1, f"z_{name}": slice(lo + 2, lo + per)}
        else:
            index[name if name == "c" else f"log_{name}"] = slice(lo, lo + per)
    assert set(index) == {v.name for v in model.value_vars}
    offsets = []
    for _ in range(6):
        x = rng.normal(0.0, 0.8, n_dim)
        ours, grad = dens.logp_grad(x, buf)
        point = {name: x[i] for name, i in index.items()}
        offsets.append(logp(point) - ours)
        theirs = dlogp(point)  # concatenated in the order of model.value_vars
        np.testing.assert_allclose(
            np.concatenate([np.atleast_1d(grad[index[v.name]]) for v in model.value_vars]), theirs, rtol=1e-9, atol=1e-9
        )
    assert np.ptp(offsets) < 1e-9  # a constant (the normalising terms PyMC keeps)
    stored = dens.unpack(x, buf)
    assert [k for k, _ in dens.expanded_layout(calibration, hierarchical, n_groups)] == list(stored)
    if hierarchical:
        np.testing.assert_allclose(stored["a"], np.exp(stored["mu_a"] + stored["sigma_a"] * stored["z_a"]))


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["pymc", "nutpie-pymc"])
def test_samplers_agree(sampler):
    """PyMC's own NUTS and nutpie on the PyMC graph agree with nutpie on the cached density."""
    y, s, a = _sim(80, 7)
    yu, su, au = _sim(2000, 8)
    kw = dict(
        sensitive_features=a, method="bc", unlabeled_scores=su, unlabeled_sensitive=au, reference="M", random_state=1
    )
    p1 = posterior(sfm.msr("fairness.acc"), y, s, **kw)
    p2 = posterior(sfm.msr("fairness.acc"), y, s, sampler=sampler, cores=1, **kw)
    assert abs(p1.mean() - p2.mean()) < 0.01
    assert abs(p1.sd() - p2.sd()) < 0.01
    # calibration parameters: the two means differ by Monte Carlo error only (4 standard errors of the
    # difference; a fixed 0.1 failed on c, 0.101 apart, whose posterior sd is about 1)
    for name in ("a", "b", "c"):
        x1, x2 = p1.extra_draws[name], p2.extra_draws[name]
        se = np.hypot(_mcse(x1), _mcse(x2))
        assert (se < 0.2 * x1.std(axis=(0, 1))).all(), (name, se)  # both chains mix: the check has power
        np.testing.assert_array_less(np.abs(x1.mean(axis=(0, 1)) - x2.mean(axis=(0, 1))), 4 * se)


def _mcse(x):
    """Monte Carlo standard error of the mean of draws ``(chain, draw, group)``, per group."""
    import arviz as az

    return az.mcse(az.convert_to_dataset(x))["x"].values


@pytest.mark.slow
def test_falls_back_to_the_pymc_graph_if_nutpie_changes(monkeypatch):
    from skfair_measures.bayes import _bc

    def changed(*args, **kwargs):
        raise TypeError("__init__() got an unexpected keyword argument 'compiled_logp_func'")

    monkeypatch.setattr(_bc, "_density_model", changed)
    y, s, a = _sim(60, 0)
    with pytest.warns(RuntimeWarning, match="sampler='nutpie-pymc'"):
        post = posterior(
            sfm.msr("fairness.acc"),
            y,
            s,
            sensitive_features=a,
            method="bc",
            unlabeled_scores=s,
            unlabeled_sensitive=a,
            warn=False,
            random_state=0,
            **SMALL,
        )
    assert post.attrs["sampler"] == "nutpie-pymc"
    assert post.chain_draws.shape == (2, 100)
