"""Verdicts of the bootstrap: family-wise error with 10 groups x 5 measures, and one rule for every result."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures import bayes
from skfair_measures._verdicts import COLUMNS, classify, max_type_band

KEYS = ("fairness.acc", "fairness.tpr", "fairness.fpr", "fairness.ppv", "fairness.fnr")
BASES = {"acc", "tpr", "fpr", "ppv", "fnr"}


def _truth(y, pred, g, k):
    out = {}
    for j in range(k):
        yy, pp = y[g == j], pred[g == j]
        out[j] = {
            "acc": np.mean(yy == pp),
            "tpr": pp[yy == 1].mean(),
            "fpr": pp[yy == 0].mean(),
            "ppv": yy[pp == 1].mean(),
            "fnr": 1 - pp[yy == 1].mean(),
        }
    return out


def family_error(fit, runs: int, n: int, seed: int, joint: bool = True) -> float:
    """Share of runs where some pair's interval misses the true difference (some verdict may be wrong).

    10 groups x the 5 measures of ``KEYS``, ``n`` iid rows per group a run;
    ``fit(y, pred, scores, groups, random_state)`` gives the results of one joint fit
    (bootstrap here, posteriors in test_bayes_verdicts.py).
    """
    rng = np.random.default_rng(seed)
    k, pool = 10, 4000
    g = np.repeat(np.arange(k), pool)
    s = rng.beta(2, 2, g.size)
    y = (rng.uniform(size=g.size) < s).astype(int)
    pred = (s >= 0.5).astype(int)
    truth = _truth(y, pred, g, k)
    bad = 0
    for _ in range(runs):
        rows = np.concatenate([j * pool + rng.integers(0, pool, n) for j in range(k)])  # iid per group
        res = fit(y[rows], pred[rows], s[rows], g[rows], int(rng.integers(2**31)))
        table = sfm.verdicts(res, eps=0.05)
        assert set(table["base"]) == BASES and len(table) == 5 * 45 and table.attrs["family_wise_level"] == 0.95
        if not joint:  # the separate 95% percentile intervals of each difference (what the joint band replaces)
            lo, hi = [], []
            for r in table.itertuples():
                d = res[r.measure].group_draws[r.base].reshape(-1, k)
                x = d[:, int(r.group_a)] - d[:, int(r.group_b)]
                lo.append(np.quantile(x, 0.025))
                hi.append(np.quantile(x, 0.975))
            table["lower"], table["upper"] = lo, hi
        true_diff = np.array(
            [truth[int(r.group_a)][r.base] - truth[int(r.group_b)][r.base] for r in table.itertuples()]
        )
        bad += not ((table["lower"] <= true_diff) & (true_diff <= table["upper"])).all()
    return bad / runs


def _bootstraps(y, pred, scores, groups, random_state):
    return sfm.bootstraps(KEYS, y, pred, sensitive_features=groups, n_boot=1000, random_state=random_state)


def _family_error(runs: int, n: int, seed: int, joint: bool = True) -> float:
    return family_error(_bootstraps, runs, n, seed, joint)


def test_family_wise_error_of_the_bootstrap_band_with_10_groups_and_5_measures():
    runs = 60
    err = _family_error(runs, n=400, seed=11)
    assert err <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs), err
    # the 225 separate 95% intervals miss somewhere in most runs: the test can fail
    assert _family_error(20, n=400, seed=12, joint=False) > 0.5


@pytest.mark.slow
def test_family_wise_error_of_the_bootstrap_band_many_runs():
    """400 runs at 400 rows per group (measured: 4.5%). Asymptotic: 7.8% at 150 rows, 11% at 60 (docstring)."""
    runs = 400
    err = _family_error(runs, n=400, seed=1)
    assert err <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs), err


def test_bootstrap_verdicts_of_small_rate_denominators_read_newcombe_intervals_weighted_or_not():
    from skfair_measures._small_sample import SMALL_DENOMINATOR

    y, p, g = _data(n=600)  # about 200 rows per group: below SMALL_DENOMINATOR
    table = sfm.bootstrap("fairness.acc", y, p, sensitive_features=g, random_state=0).pair_verdicts(0.05)
    assert "Newcombe" in table.attrs["construction"] and "caution" not in table.attrs
    assert (table["upper"] > table["lower"]).all()
    # weights of ones, or any common factor: the same table as unweighted (Kish's effective size)
    for w in (np.ones(len(y)), np.full(len(y), 1.0 / len(y)), np.full(len(y), 10.0)):
        weighted = sfm.bootstrap("fairness.acc", y, p, sensitive_features=g, sample_weight=w, random_state=0)
        pd.testing.assert_frame_equal(weighted.pair_verdicts(0.05), table)
    y, p, g = _data(n=3 * SMALL_DENOMINATOR + 300)
    assert np.bincount(g).min() >= SMALL_DENOMINATOR
    table = sfm.bootstrap("fairness.acc", y, p, sensitive_features=g, random_state=0).pair_verdicts(0.05)
    assert table.attrs["construction"].startswith("max-type band") and "caution" not in table.attrs


def test_a_small_denominator_in_large_groups_gets_no_zero_width_interval():
    """1,000-row groups with about 10 positives each: the TPR's denominator is small, not the group."""
    rng = np.random.default_rng(3)
    g = np.repeat([0, 1], 1000)
    y = (rng.uniform(size=g.size) < 0.01).astype(int)
    pred = np.where(y == 1, 1, (rng.uniform(size=g.size) < 0.1).astype(int))  # TPR 1 in both groups
    table = sfm.bootstrap("fairness.tpr", y, pred, sensitive_features=g, random_state=0).pair_verdicts(0.05)
    assert (table["upper"] - table["lower"] > 0.2).all() and set(table["verdict"]) == {"inconclusive"}


def test_bootstrap_verdicts_of_small_groups_without_rates_say_their_level_is_not_reached():
    rng = np.random.default_rng(0)
    g = rng.integers(0, 3, 600)
    y = rng.normal(size=600)
    with pytest.warns(sfm.groups.SmallGroupWarning, match=r"smallest group has \d+ rows.*method='guaranteed'"):
        table = sfm.bootstrap("fairness.mse", y, y + rng.normal(size=600), sensitive_features=g).pair_verdicts(0.05)
    assert "fewer than" in table.attrs["caution"] and "CAUTION" in table.attrs["construction"]


def test_family_wise_error_of_bootstrap_verdicts_with_small_groups():
    """10 groups x 5 rates at 60 rows per group (the band alone: 11% for a nominal 5%; measured now: 0 of 40)."""
    runs = 30
    assert _family_error(runs, n=60, seed=5) <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / runs)


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, n)
    y = rng.integers(0, 2, n)
    wrong = rng.uniform(size=n) < np.array([0.1, 0.1, 0.3])[g]
    return y, np.where(wrong, 1 - y, y), g


def test_a_bootstrap_verdict_has_the_posterior_verdicts_columns_and_attrs():
    y, p, g = _data()
    res = sfm.bootstrap("fairness.acc", y, p, sensitive_features=g, random_state=0)
    table = res.pair_verdicts(0.05)
    post = bayes.posterior(
        sfm.msr("fairness.acc"), y, np.where(p == 1, 0.8, 0.2), sensitive_features=g, method="bb", random_state=0
    )
    ptable = post.pair_verdicts(0.05)
    assert list(table.columns) == list(ptable.columns) == COLUMNS
    assert set(table.attrs) == set(ptable.attrs)
    assert table.attrs["source"] == "bootstrap" and ptable.attrs["source"] == "posterior"
    assert table["verdict"].tolist() == ["within", "exceeds", "exceeds"]
    # the estimate is the observed difference of the point result's groups
    acc = res.point.by_group
    assert table["estimate"].tolist() == pytest.approx([acc[0] - acc[1], acc[0] - acc[2], acc[1] - acc[2]])
    pd.testing.assert_frame_equal(table, sfm.verdicts([res], 0.05))


def test_one_measure_bootstrapped_alone_or_jointly_draws_the_same_replicates():
    y, p, g = _data()
    alone = sfm.bootstrap("fairness.tpr", y, p, sensitive_features=g, random_state=3, n_boot=300)
    joint = sfm.bootstraps(["fairness.tpr"], y, p, sensitive_features=g, random_state=3, n_boot=300)
    np.testing.assert_array_equal(alone.draws, joint["fairness.tpr"].draws)
    np.testing.assert_array_equal(alone.group_draws["tpr"], joint["fairness.tpr"].group_draws["tpr"])


def test_joint_replicates_are_the_same_rows_for_every_measure():
    """acc, tpr and fpr of one replicate come from the same counts: acc*n = tpr*P + (1 - fpr)*(n - P), P whole."""
    y, p, g = _data()
    res = sfm.bootstraps(
        ["fairness.acc", "fairness.tpr", "fairness.fpr"], y, p, sensitive_features=g, random_state=0, n_boot=200
    )
    acc, tpr, fpr = (
        res[k].group_draws[b] for k, b in (("fairness.acc", "acc"), ("fairness.tpr", "tpr"), ("fairness.fpr", "fpr"))
    )
    n = np.bincount(g)  # stratified: every replicate keeps the group sizes
    positives = n * (acc - 1 + fpr) / (tpr + fpr - 1)  # the replicate's positives, if the counts are shared
    np.testing.assert_allclose(positives, np.round(positives), atol=1e-6)
    assert np.ptp(positives, axis=0).min() > 0  # the positives vary between replicates: the identity is not trivial
    # separate bootstraps (other rows) break it
    other = sfm.bootstrap("fairness.acc", y, p, sensitive_features=g, random_state=1, n_boot=200).group_draws["acc"]
    mixed = n * (other - 1 + fpr) / (tpr + fpr - 1)
    assert not np.allclose(mixed, np.round(mixed), atol=1e-6)
    # the family of three measures needs a wider band than one measure's
    joint_c = float(sfm.verdicts(res, 0.05).attrs["construction"].split("+- ")[1].split(" ")[0])
    alone_c = float(res["fairness.acc"].pair_verdicts(0.05).attrs["construction"].split("+- ")[1].split(" ")[0])
    assert joint_c > alone_c


def test_weighted_and_regression_measures_are_recomputed_on_shared_rows():
    y, p, g = _data(600)
    w = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    res = sfm.bootstraps(
        ["fairness.acc", "fairness.tpr"], y, p, sensitive_features=g, sample_weight=w, random_state=0, n_boot=50
    )
    table = sfm.verdicts(res, 0.05)
    assert len(table) == 6 and table.attrs["source"] == "bootstrap"
    single = sfm.bootstrap("fairness.acc", y, p, sensitive_features=g, sample_weight=w, random_state=0, n_boot=50)
    assert single.pair_verdicts(0.05)["estimate"].tolist() == pytest.approx(table["estimate"][:3].tolist())


def test_the_engines_poisson_bootstrap_gives_verdicts():
    pl = pytest.importorskip("polars")
    from skfair_measures.engines import poisson_bootstrap

    y, p, g = _data()
    df = pl.DataFrame({"y": y, "p": p, "g": g})
    res = poisson_bootstrap(df.lazy(), "y", "p", "g", "fairness.acc", n_boot=500, random_state=0)
    table = res.pair_verdicts(0.05)
    direct = sfm.bootstrap("fairness.acc", y, p, sensitive_features=g, random_state=0).pair_verdicts(0.05)
    assert table["verdict"].tolist() == direct["verdict"].tolist() == ["within", "exceeds", "exceeds"]
    assert table["estimate"].tolist() == pytest.approx(direct["estimate"].tolist())


def test_an_undefined_rate_leaves_the_family():
    # group 2 has no positive labels: its tpr is undefined
    y = np.array([1, 0] * 50 + [1, 0] * 50 + [0] * 100)
    p = np.array([1, 0] * 50 + [1, 1] * 50 + [0, 1] * 50)
    g = np.repeat([0, 1, 2], 100)
    with pytest.warns(UserWarning):
        res = sfm.bootstrap("fairness.tpr", y, p, sensitive_features=g, random_state=0, n_boot=200)
    table = res.pair_verdicts(0.05)
    # 50 positives a group, both TPRs 1: Newcombe's interval (+-0.09) is wider than eps
    assert table["verdict"].tolist() == ["inconclusive", "undefined", "undefined"]
    assert table.attrs["family_size"] == 1


def test_results_of_different_fits_or_without_draws_are_refused_by_name():
    y, p, g = _data(600)
    a = sfm.bootstrap("fairness.acc", y, p, sensitive_features=g, random_state=0, n_boot=50)
    b = sfm.bootstrap("fairness.tpr", y, p, sensitive_features=g, random_state=0, n_boot=50)
    with pytest.raises(ValueError, match="different fits"):
        sfm.verdicts([a, b], 0.05)
    with pytest.raises(ValueError, match="results is empty"):
        sfm.verdicts([], 0.05)
    with pytest.raises(ValueError, match="eps="):
        a.pair_verdicts(-0.1)
    with pytest.raises(TypeError, match="no joint draws"):
        sfm.verdicts([a.point], 0.05)
    with pytest.raises(ValueError, match="share the key"):
        sfm.bootstraps(["fairness.acc", "fairness.acc"], y, p, sensitive_features=g)
    with pytest.raises(ValueError, match=r"measures=\[\]"):
        sfm.bootstraps([], y, p, sensitive_features=g)
    bare = sfm.BootstrapResult(a.point, a.draws)
    with pytest.raises(ValueError, match="no per-group replicates"):
        bare.pair_verdicts(0.05)
    with pytest.raises(ValueError, match="min_group_size"):
        sfm.bootstraps(["fairness.acc", sfm.msr("fairness.tpr", min_group_size=250)], y, p, sensitive_features=g)


def test_the_band_and_the_classification_rule():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20000, 30))
    lo, hi, c = max_type_band(x, np.zeros(30), 0.9)
    assert np.mean(((x >= lo) & (x <= hi)).all(axis=1)) == pytest.approx(0.9, abs=0.002)
    x[0, 0] = np.nan  # an undefined draw counts as the largest deviation: the band can only widen
    assert max_type_band(x, np.zeros(30), 0.9)[2] >= c
    assert classify([-0.05, 0.05, 0.051, -0.2], [0.05, 0.2, 0.3, -0.051], 0.05).tolist() == [
        "within",
        "inconclusive",
        "exceeds",
        "exceeds",
    ]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_bootstrap_posterior_and_guaranteed_verdicts_agree_where_the_data_decide():
    """Same rows, three constructions: clear gaps exceed in all; none says within where another says exceeds."""
    rng = np.random.default_rng(5)
    g = np.repeat([0, 1, 2, 3], 5000)
    y = rng.integers(0, 2, g.size)
    wrong = rng.uniform(size=g.size) < np.array([0.1, 0.1, 0.3, 0.12])[g]
    p = np.where(wrong, 1 - y, y)
    s = np.where(p == 1, 0.8, 0.2)
    keys = ["fairness.acc", "fairness.tpr"]
    boot = sfm.verdicts(sfm.bootstraps(keys, y, p, sensitive_features=g, random_state=0), eps=0.1)
    tables = {"bootstrap": boot}
    for method in ("bb", "guaranteed"):
        res = bayes.posteriors([sfm.msr(k) for k in keys], y, s, sensitive_features=g, method=method, random_state=0)
        tables[method] = sfm.verdicts(res, eps=0.1)
    gap = (boot["group_a"] == "2") | (boot["group_b"] == "2")
    for name, table in tables.items():
        assert table[["measure", "base", "group_a", "group_b"]].equals(boot[["measure", "base", "group_a", "group_b"]])
        assert (table.loc[gap, "verdict"] == "exceeds").all(), name  # gaps of 0.18-0.2 > eps = 0.1
    assert (boot.loc[~gap, "verdict"] == "within").all() and (tables["bb"].loc[~gap, "verdict"] == "within").all()
    verdicts = pd.DataFrame({k: t["verdict"] for k, t in tables.items()})
    clash = verdicts.apply(lambda r: {"within", "exceeds"} <= set(r), axis=1)
    assert not clash.any()


def test_posteriors_of_separate_fits_with_other_draw_counts_form_separate_tables():
    y, p, g = _data(600)
    s = np.where(p == 1, 0.8, 0.2)
    one = bayes.posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=g, method="bb", n_draws=100)
    two = bayes.posterior(sfm.msr("fairness.tpr"), y, s, sensitive_features=g, method="bb", n_draws=200)
    with pytest.raises(ValueError, match="different fits"):
        sfm.verdicts([one, two], 0.05)
    point = sfm.msr("fairness.acc").evaluate(y, p, sensitive_features=g)  # no draws: left out
    tables = sfm.verdict_tables([one, point, two], 0.05)
    assert [t["measure"].iloc[0] for t in tables] == ["fairness.acc", "fairness.tpr"]


def test_a_rate_two_measures_read_has_a_row_under_each_and_counts_once():
    y, p, g = _data()
    res = sfm.bootstraps(["fairness.eod", "fairness.tpr"], y, p, sensitive_features=g, random_state=0)
    table = sfm.verdicts(res, eps=0.05)
    assert len(table) == 9  # eod: tpr and fpr x 3 pairs; tpr: 3 pairs
    assert table.attrs["family_size"] == 6  # the TPR differences are the same ones under both measures
    tpr = table[table["base"] == "tpr"].set_index(["measure", "group_a", "group_b"])
    np.testing.assert_array_equal(
        tpr.loc["fairness.eod", ["lower", "upper"]].to_numpy(), tpr.loc["fairness.tpr", ["lower", "upper"]].to_numpy()
    )
