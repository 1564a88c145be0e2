"""The Poisson bootstrap computed in the engine: reproducible, and the two ways of drawing agree."""

from __future__ import annotations

import numpy as np
import pytest

import skfair_measures as sfm
from skfair_measures import engines

pl = pytest.importorskip("polars")
dd = pytest.importorskip("dask.dataframe")
from test_engines import DATA  # noqa: E402


def test_unweighted_counts_replicates_are_reproducible_and_cover_the_estimate():
    lazy = pl.from_pandas(DATA).lazy()
    a = engines.poisson_bootstrap(lazy, "y", "yhat", "race", "fairness.tpr", n_boot=300, random_state=1)
    b = engines.poisson_bootstrap(lazy, "y", "yhat", "race", "fairness.tpr", n_boot=300, random_state=1)
    np.testing.assert_array_equal(a.draws, b.draws)
    assert a.value == sfm.compute_metrics(DATA, "y", "yhat", "race", ["fairness.tpr"]).iloc[0]
    lo, hi = a.interval()
    assert lo < a.value < hi and np.isfinite(a.draws).all()


def test_poisson_of_cell_counts_matches_per_row_multiplicities():
    """Poisson(n) per cell (local) and n Poisson(1) per row (engine) are the same distribution: same spread."""
    local = engines.poisson_bootstrap(DATA, "y", "yhat", "sex", "fairness.fpr", n_boot=1000, random_state=0)
    ones = DATA.assign(one=1.0)  # a weight column forces the per-row draws
    rows = engines.poisson_bootstrap(
        ones, "y", "yhat", "sex", "fairness.fpr", sample_weight="one", n_boot=1000, random_state=0
    )
    assert local.value == rows.value
    assert rows.se == pytest.approx(local.se, rel=0.1)
    assert np.mean(rows.draws) == pytest.approx(np.mean(local.draws), abs=0.2 * local.se)


def test_weighted_dask_and_regression_agree_with_the_in_memory_bootstrap():
    ddf = dd.from_pandas(DATA, npartitions=3)
    got = engines.poisson_bootstrap(
        ddf, "y", "yhat", "race", "fairness.tpr", sample_weight="w", n_boot=500, random_state=0
    )
    again = engines.poisson_bootstrap(
        ddf, "y", "yhat", "race", "fairness.tpr", sample_weight="w", n_boot=500, random_state=0
    )
    np.testing.assert_array_equal(got.draws, again.draws)
    want = sfm.bootstrap(
        sfm.msr("fairness.tpr"),
        DATA.y,
        DATA.yhat,
        sensitive_features=DATA.race,
        sample_weight=DATA.w,
        n_boot=500,
        random_state=0,
    )
    assert got.value == want.value
    assert got.se == pytest.approx(want.se, rel=0.25)  # Poisson vs stratified resampling: close, not equal
    reg = engines.poisson_bootstrap(ddf, "value", "fitted", "sex", "fairness.mse", n_boot=500, random_state=0)
    ref = sfm.bootstrap(
        sfm.msr("fairness.mse"), DATA.value, DATA.fitted, sensitive_features=DATA.sex, n_boot=500, random_state=0
    )
    assert reg.value == ref.value and reg.se == pytest.approx(ref.se, rel=0.25)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
@pytest.mark.parametrize("key", ["fairness.tpr", "fairness.eod"])
def test_weighted_compound_poisson_se_within_10_percent_of_per_row_multiplicities(engine, key):
    """Compound Poisson draws per cell (polars, DuckDB) against a Poisson(1) multiplicity per row (pandas)."""
    rng = np.random.default_rng(4)
    skewed = DATA.assign(lw=rng.lognormal(0.0, 1.0, len(DATA)))  # continuous, skewed weights
    frame = pl.from_pandas(skewed).lazy() if engine == "polars" else _register(skewed)
    got = engines.poisson_bootstrap(frame, "y", "yhat", "race", key, sample_weight="lw", n_boot=3000, random_state=0)
    rows = engines.poisson_bootstrap(skewed, "y", "yhat", "race", key, sample_weight="lw", n_boot=3000, random_state=1)
    assert got.value == pytest.approx(rows.value, rel=1e-12)
    assert 0.9 < got.se / rows.se < 1.1
    assert abs(np.mean(got.draws) - np.mean(rows.draws)) < 0.2 * rows.se
    again = engines.poisson_bootstrap(frame, "y", "yhat", "race", key, sample_weight="lw", n_boot=3000, random_state=0)
    # the same draws; polars sums a cell's weights in a thread-dependent order (last bits differ)
    np.testing.assert_allclose(got.draws, again.draws, rtol=1e-9)


def _register(frame):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("data", frame)
    return con.sql("select * from data")


def test_per_row_draws_elsewhere_are_refused_with_the_way_out():
    with pytest.raises(NotImplementedError, match=r"regression errors.*pandas and Dask.*polars"):
        engines.poisson_bootstrap(pl.from_pandas(DATA), "value", "fitted", "sex", "fairness.mse", sample_weight="w")
    with pytest.raises(ValueError, match=r"n_boot=1"):
        engines.poisson_bootstrap(DATA, "y", "yhat", "sex", "fairness.tpr", n_boot=1)


@pytest.mark.parametrize("weighted", [False, True])
def test_min_group_size_is_decided_on_the_observed_rows_for_every_replicate(weighted):
    from skfair_measures.groups import SmallGroupWarning

    m = sfm.msr("fairness.tpr", min_group_size=200, small_groups="merge")  # race x sex: the 'c' cells are small
    frame = DATA.assign(one=1.0)
    weight = "one" if weighted else None  # a weight column forces the per-row draws
    with pytest.warns(SmallGroupWarning, match="merged into"):
        res = engines.poisson_bootstrap(
            frame, "y", "yhat", ["race", "sex"], m, sample_weight=weight, n_boot=200, random_state=0
        )
    with pytest.warns(SmallGroupWarning):
        want = m.evaluate(DATA.y, DATA.yhat, sensitive_features=DATA[["race", "sex"]])
    assert res.value == want.value
    assert np.isfinite(res.draws).all() and res.draws.shape == (200,)
    assert abs(np.median(res.draws) - res.value) < 2 * res.se
    # the same multiplicities without the minimum give other draws: every replicate was restricted
    plain = engines.poisson_bootstrap(
        frame, "y", "yhat", ["race", "sex"], "fairness.tpr", sample_weight=weight, n_boot=200, random_state=0
    )
    assert not np.allclose(plain.draws, res.draws)
