"""Measures computed in real engines equal the in-memory ones exactly (counts), and bad input is refused.

Every engine here is started by the test itself: polars (eager and lazy), pyarrow, DuckDB,
Dask with threads and a ``distributed.LocalCluster`` of 2 worker processes. PySpark runs
in ``tests/test_engines_spark.py`` (one JVM per module). Weights are multiples of 1/2 and
regression values multiples of 1/4, so every weighted sum is exact in floating point
whatever order an engine adds in: the comparisons are exact, not approximate.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures import engines
from skfair_measures._groups import SingleGroupError
from skfair_measures._stats import check_inputs
from skfair_measures.engines import _compute
from skfair_measures.groups import SmallGroupWarning

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")
dd = pytest.importorskip("dask.dataframe")

N = 3000
MEASURES = ["fairness.tpr", "fairness.fpr", "fairness.eod", "fairness.acc", "fairness.ppv", "classif.acc"]


def make_data(n: int = N, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.round(np.clip(0.35 * y + 0.65 * rng.random(n), 0, 1), 3)
    return pd.DataFrame(
        {
            "y": y,
            "yhat": (rng.random(n) < 0.3 + 0.4 * y).astype(np.int64),
            "label": np.where(y == 1, "good", "bad"),
            "score": score,
            "sex": rng.choice(["F", "M"], n),
            "race": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1]),
            "w": rng.choice([0.5, 1.0, 2.0, 4.0], n),
            "value": rng.integers(0, 40, n) / 4,
            "fitted": rng.integers(0, 40, n) / 4,
        }
    )


DATA = make_data()


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster's port and memory-limit notices
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def as_engine(name: str, pdf: pd.DataFrame):
    if name == "pandas":
        return pdf
    if name == "polars":
        return pl.from_pandas(pdf)
    if name == "polars-lazy":
        return pl.from_pandas(pdf).lazy()
    if name == "pyarrow":
        return pa.Table.from_pandas(pdf, preserve_index=False)
    if name == "duckdb":
        return duckdb.from_arrow(pa.Table.from_pandas(pdf, preserve_index=False))
    if name == "dask":
        return dd.from_pandas(pdf, npartitions=4)
    raise AssertionError(name)


ENGINES = ["pandas", "polars", "polars-lazy", "pyarrow", "duckdb", "dask"]


@pytest.fixture(params=ENGINES)
def engine(request):
    return request.param


def assert_same_stats(got, want):
    assert got.groups.equals(want.groups), (got.groups, want.groups)
    arr_got = got.counts if hasattr(got, "counts") else got.sums
    arr_want = want.counts if hasattr(want, "counts") else want.sums
    np.testing.assert_array_equal(arr_got, arr_want)


# -- counts equal the in-memory ones -------------------------------------------------------


def test_counts_weighted_two_sensitive_columns(engine):
    data = as_engine(engine, DATA)
    got = engines.grouped_stats(data, "y", "yhat", ["sex", "race"], sample_weight="w")
    want = check_inputs(DATA.y, DATA.yhat, DATA[["sex", "race"]], DATA.w).confusion()
    assert_same_stats(got, want)
    assert got.counts.shape == (6, 2, 2)


def test_counts_unweighted_threshold_string_labels(engine):
    data = as_engine(engine, DATA)
    got = engines.grouped_stats(data, "label", "score", "race", threshold=0.5, pos_label="good")
    t = (DATA.label == "good").to_numpy().astype(int)
    want = check_inputs(t, (DATA.score >= 0.5).astype(int), DATA.race).confusion()
    assert_same_stats(got, want)


def test_regression_sums(engine):
    data = as_engine(engine, DATA)
    got = engines.grouped_stats(data, "value", "fitted", ["sex", "race"], sample_weight="w", statistic="errors")
    want = check_inputs(DATA.value, DATA.fitted, DATA[["sex", "race"]], DATA.w).errors()
    assert_same_stats(got, want)


def test_measures_equal_in_memory(engine):
    data = as_engine(engine, DATA)
    want = sfm.compute_metrics(DATA, "y", "yhat", ["sex", "race"], MEASURES, sample_weight="w")
    got = engines.compute_metrics(data, "y", "yhat", ["sex", "race"], MEASURES, sample_weight="w")
    pd.testing.assert_series_equal(got, want, check_exact=True)


def test_threshold_pos_label_and_regression_measures(engine):
    data = as_engine(engine, DATA)
    ms = [
        sfm.msr("fairness.tpr", threshold=0.4, pos_label="good"),
        sfm.msr("fairness.fpr", threshold=0.4, pos_label="good"),
    ]
    want = sfm.compute_metrics(DATA, "label", "score", "sex", ms)
    got = engines.compute_metrics(data, "label", "score", "sex", ms)
    pd.testing.assert_series_equal(got, want, check_exact=True)
    reg = ["fairness.mse", "fairness.mae", "regr.mse"]
    want = sfm.compute_metrics(DATA, "value", "fitted", "race", reg, sample_weight="w")
    got = engines.compute_metrics(data, "value", "fitted", "race", reg, sample_weight="w")
    pd.testing.assert_series_equal(got, want, check_exact=True)


def test_multiclass_labels(engine):
    pdf = DATA.assign(grade=(DATA["value"] // 4).astype(np.int64), guess=(DATA["fitted"] // 4).astype(np.int64))
    data = as_engine(engine, pdf)
    got = engines.grouped_stats(data, "grade", "guess", "race", sample_weight="w")
    want = check_inputs(pdf.grade, pdf.guess, pdf.race, pdf.w).confusion()
    assert got.counts.shape == (3, 3, 3) and got.classes.equals(want.classes)
    assert_same_stats(got, want)
    ms = ["fairness.acc", "classif.acc", sfm.msr("fairness.tpr", pos_label=2)]
    want = sfm.compute_metrics(pdf, "grade", "guess", "race", ms, sample_weight="w")
    got = engines.compute_metrics(data, "grade", "guess", "race", ms, sample_weight="w")
    pd.testing.assert_series_equal(got, want, check_exact=True)


def _small_group_results(evaluate, *args, **kwargs):
    """Measure values, groups and the SmallGroupWarning messages of one evaluation."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = evaluate(*args, **kwargs)
    messages = sorted({str(w.message) for w in caught if issubclass(w.category, SmallGroupWarning)})
    return {k: (r.value, r.by_group.index.tolist(), r.by_group.to_numpy().tolist()) for k, r in res.items()}, messages


def test_min_group_size_leaves_out_or_merges_as_the_core(engine):
    # sex x race: the two race 'c' cells hold about 150 rows each, below 200
    ms = [
        sfm.msr("fairness.eod", min_group_size=200),
        sfm.msr("fairness.acc", min_group_size=200, small_groups="merge"),
        sfm.msr("fairness.mse", min_group_size=200, small_groups="merge"),
    ]
    data = as_engine(engine, DATA)
    want = _small_group_results(
        sfm.evaluate_measures, ms, DATA.y, DATA.yhat, sensitive_features=DATA[["sex", "race"]], sample_weight=DATA.w
    )
    got = _small_group_results(
        sfm.evaluate_measures, ms, "y", "yhat", sensitive_features=["sex", "race"], sample_weight="w", data=data
    )
    assert got == want  # values, groups, and one warning per setting, as in memory
    assert len(want[1]) == 2 and all("('F', 'c')" in m and "('M', 'c')" in m for m in want[1])
    assert want[0]["fairness.acc(min_group_size=200, small_groups=merge)"][1][-1] == ("other", "other")


@pytest.mark.parametrize("name", ["pandas", "dask"])
def test_many_groups_renumber_the_cells(name):
    rng = np.random.default_rng(1)
    pdf = DATA.assign(a=rng.integers(0, 10**9, N), b=rng.choice([f"id{i}" for i in range(2000)], N))
    got = engines.grouped_stats(as_engine(name, pdf), "y", "yhat", ["a", "b"], sample_weight="w")
    assert_same_stats(got, check_inputs(pdf.y, pdf.yhat, pdf[["a", "b"]], pdf.w).confusion())


def test_top_level_compute_metrics_dispatches_to_the_engine():
    want = sfm.compute_metrics(DATA, "y", "yhat", ["sex", "race"], MEASURES, sample_weight="w")
    got = sfm.compute_metrics(pl.from_pandas(DATA).lazy(), "y", "yhat", ["sex", "race"], MEASURES, sample_weight="w")
    pd.testing.assert_series_equal(got, want, check_exact=True)


def test_results_keep_groups_and_counts(engine):
    data = as_engine(engine, DATA)
    res = sfm.evaluate_measures(["fairness.tpr"], "y", "yhat", sensitive_features="race", sample_weight="w", data=data)
    res = res["fairness.tpr"]
    want = sfm.msr("fairness.tpr").evaluate(DATA.y, DATA.yhat, sensitive_features=DATA.race, sample_weight=DATA.w)
    pd.testing.assert_series_equal(res.by_group, want.by_group, check_exact=True)
    pd.testing.assert_series_equal(res.counts, want.counts, check_exact=True)


def test_distributed_local_cluster(dask_cluster):
    from distributed import get_task_stream

    data = dd.from_pandas(DATA, npartitions=6)
    with get_task_stream(dask_cluster) as tasks:
        got = engines.grouped_stats(data, "y", "yhat", ["sex", "race"], sample_weight="w")
    want = check_inputs(DATA.y, DATA.yhat, DATA[["sex", "race"]], DATA.w).confusion()
    assert_same_stats(got, want)
    assert len({t["worker"] for t in tasks.data}) >= 1 and len(tasks.data) >= 6  # the partitions ran on the workers
    got = engines.compute_metrics(data, "value", "fitted", "sex", ["fairness.mse"], sample_weight="w")
    want = sfm.compute_metrics(DATA, "value", "fitted", "sex", ["fairness.mse"], sample_weight="w")
    pd.testing.assert_series_equal(got, want, check_exact=True)


# -- one pass per need ----------------------------------------------------------------------


def test_one_engine_pass_per_distinct_need(monkeypatch):
    calls = []
    real = _compute._engine_table

    def spy(frame, cols, kind, threshold):
        calls.append((kind, threshold))
        return real(frame, cols, kind, threshold)

    monkeypatch.setattr(_compute, "_engine_table", spy)
    ms = [
        "fairness.tpr",
        "fairness.fpr",
        "classif.acc",
        sfm.msr("fairness.tpr", threshold=0.3, key="tpr@0.3"),
        sfm.msr("fairness.fpr", threshold=0.3, key="fpr@0.3"),
        "fairness.mse",
    ]
    engines.compute_metrics(pl.from_pandas(DATA).lazy(), "y", "score", "sex", ms[3:])
    assert calls == [("confusion", 0.3), ("errors", None)]
    calls.clear()
    engines.compute_metrics(pl.from_pandas(DATA).lazy(), "y", "yhat", "sex", ms[:3])
    assert calls == [("confusion", None)]


def test_declared_groups_keep_an_absent_group():
    m = sfm.msr("fairness.tpr").with_inputs(groups=["a", "b", "c", "d"])
    with pytest.warns(sfm.measures.UndefinedGroupWarning, match=r"\['d'\]"):
        res = engines.evaluate_measures([m], "y", "yhat", sensitive_features="race", data=pl.from_pandas(DATA))
    res = res["fairness.tpr"]
    assert res.by_group.index.tolist() == ["a", "b", "c", "d"]
    assert np.isnan(res.by_group["d"])


# -- clear errors, nothing silently wrong ---------------------------------------------------


def test_measure_that_needs_rows_is_refused_by_name():
    from sklearn.metrics import roc_auc_score

    from skfair_measures.base import SklearnMetric
    from skfair_measures.measures import FairnessMeasure

    auc = FairnessMeasure(SklearnMetric(roc_auc_score), key="fairness.auc")
    with pytest.raises(TypeError, match=r"fairness\.auc.*roc_auc.*needs the rows.*pandas"):
        engines.compute_metrics(pl.from_pandas(DATA), "y", "score", "sex", ["fairness.tpr", auc])


DISTRIBUTIONS = ["fairness.dp_ks", "fairness.dp_wasserstein"]


def test_distribution_measures_equal_in_memory_from_a_group_value_table(engine):
    # the scores hold at most 1,001 distinct values (3 decimals): the (group, value) table gives the distances
    # exactly; weights are multiples of 1/2, so the summed weights are exact in any order (was: refused, "no
    # engine path yet")
    data = as_engine(engine, DATA)
    for weight in (None, "w"):
        want = sfm.compute_metrics(DATA, "y", "score", ["sex", "race"], DISTRIBUTIONS, sample_weight=weight)
        got = engines.compute_metrics(data, "y", "score", ["sex", "race"], DISTRIBUTIONS, sample_weight=weight)
        pd.testing.assert_series_equal(got, want, check_exact=True)
        assert got.gt(0).all()  # the comparison can fail: the groups' distributions differ
    both = engines.evaluate_measures(
        ["fairness.dp_ks", "fairness.tpr"], "y", "yhat", sensitive_features="sex", data=data
    )
    assert both["fairness.tpr"].value == sfm.msr("fairness.tpr")(DATA.y, DATA.yhat, sensitive_features=DATA.sex)
    assert both["fairness.dp_ks"].value == sfm.msr("fairness.dp_ks")(DATA.y, DATA.yhat, sensitive_features=DATA.sex)


@pytest.mark.parametrize("key", DISTRIBUTIONS)
def test_distribution_measures_bin_many_values_within_their_stated_bound(engine, key, monkeypatch):
    from skfair_measures.engines import _aggregate

    monkeypatch.setattr(_aggregate, "MAX_VALUES", 100)  # DATA's scores hold about 1,000 distinct values
    exact = sfm.msr(key)(DATA.y, DATA.score, sensitive_features=DATA.race, sample_weight=DATA.w)
    m = sfm.msr(key, bins=40)
    res = engines.evaluate_measures(
        [m], "y", "score", sensitive_features="race", sample_weight="w", data=as_engine(engine, DATA)
    )[key]
    if engine == "pandas":  # the rows are in memory: exact, nothing to state
        assert res.value == exact and res.attrs == {}
        return
    bound = res.attrs["error_bound"]
    assert res.attrs["binned"] and res.attrs["bins"] == 40 and "within" in res.attrs["approximation"]
    assert abs(res.value - exact) <= bound + 1e-12
    if key == "fairness.dp_ks":  # the binned CDFs are exact at the bin edges: never above the exact distance
        assert res.value <= exact + 1e-12 and bound < 0.1
    else:
        assert bound == pytest.approx((DATA.score.max() - DATA.score.min()) / 40)
    assert res.value != exact  # binning moved the value: the bound is exercised, not trivially 0
    assert res.to_dict()["attrs"]["error_bound"] == bound


def test_bins_must_be_a_count_of_at_least_two():
    with pytest.raises(ValueError, match=r"bins=1; pass a number of bins of at least 2"):
        sfm.msr("fairness.dp_ks", bins=1)


def test_distribution_measure_refuses_a_continuous_column_naming_how_to_bin_it(monkeypatch):
    from skfair_measures.engines import _aggregate

    monkeypatch.setattr(_aggregate, "MAX_VALUES", 500)  # DATA's scores hold about 1,000 distinct values
    with pytest.raises(ValueError, match=r"fairness\.dp_ks.*prediction='score'.*values.*bins=1000.*round\(3\)"):
        engines.compute_metrics(pl.from_pandas(DATA), "y", "score", "sex", ["fairness.dp_ks"])
    with pytest.raises(TypeError, match=r"fairness\.dp_ks.*\(group, value\) table.*only its value"):
        _compute._statistics_of(sfm.msr("fairness.dp_ks"))  # e.g. the Poisson bootstrap of dp_ks


def test_bad_column_names_the_argument(engine):
    data = as_engine(engine, DATA)
    with pytest.raises(KeyError, match=r"sensitive='gender' is not a column"):
        engines.compute_metrics(data, "y", "yhat", "gender", ["fairness.tpr"])
    with pytest.raises(KeyError, match=r"sample_weight='weights' is not a column"):
        engines.compute_metrics(data, "y", "yhat", "sex", ["fairness.tpr"], sample_weight="weights")
    if engine == "pandas":  # a pandas frame also takes the predictions themselves (evaluated in memory)
        got = engines.compute_metrics(data, "y", DATA.yhat.to_numpy(), "sex", ["fairness.tpr"])
        pd.testing.assert_series_equal(got, engines.compute_metrics(data, "y", "yhat", "sex", ["fairness.tpr"]))
        return
    with pytest.raises(TypeError, match=r"prediction must name a column"):
        engines.compute_metrics(data, "y", DATA.yhat.to_numpy(), "sex", ["fairness.tpr"])


def test_bad_values_are_refused_naming_the_column(engine):
    bad = DATA.copy()
    bad["sex"] = bad["sex"].astype(object)
    bad.loc[7, "sex"] = None
    bad.loc[3, "w"] = -1.0
    bad.loc[5, "score"] = 1.5
    data = as_engine(engine, bad)
    with pytest.raises(ValueError, match=r"sensitive='sex' has 1 row\(s\) that are missing"):
        engines.compute_metrics(data, "y", "yhat", "sex", ["fairness.tpr"])
    with pytest.raises(ValueError, match=r"sample_weight='w' has 1 row\(s\) that are missing, negative"):
        engines.compute_metrics(data, "y", "yhat", "race", ["fairness.tpr"], sample_weight="w")
    with pytest.raises(ValueError, match=r"prediction='score' has 1 row\(s\) that are missing or outside \[0, 1\]"):
        engines.compute_metrics(data, "y", "score", "race", [sfm.msr("fairness.tpr", threshold=0.5)])
    with pytest.raises(TypeError, match=r"target='label' has dtype .*; a regression measure subtracts it"):
        engines.compute_metrics(data, "label", "fitted", "race", ["fairness.mse"])


def test_labels_that_are_not_binary_are_refused(engine):
    data = as_engine(engine, DATA)
    with pytest.raises(ValueError, match=r"pos_label"):
        engines.compute_metrics(data, "label", "label", "race", ["fairness.tpr"])
    with pytest.raises(ValueError, match=r"3 distinct labels"):
        engines.compute_metrics(data, "race", "race", "sex", ["fairness.tpr"])
    with pytest.raises(ValueError, match=r"non-label values such as"):
        engines.compute_metrics(data, "value", "fitted", "race", ["fairness.tpr"])


def failing_engine(name: str):
    """A frame whose ``y`` column fails only when the engine runs (a lazy cast error, a raising partition)."""
    pdf = DATA.assign(y=DATA["y"].astype(str).where(DATA.index != 11, "oops"))
    if name == "polars-lazy":
        return pl.from_pandas(pdf).lazy().with_columns(pl.col("y").cast(pl.Int64, strict=True))
    if name == "duckdb":
        rel = duckdb.from_arrow(pa.Table.from_pandas(pdf, preserve_index=False))
        return rel.project("CAST(y AS INTEGER) AS y, yhat, sex, w")
    if name == "dask":

        def boom(part: pd.DataFrame) -> pd.DataFrame:
            return part.assign(y=part["y"].astype(np.int64))

        return dd.from_pandas(pdf, npartitions=3).map_partitions(boom, meta=DATA)
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["polars-lazy", "duckdb", "dask"])
def test_failing_engine_names_the_columns(name):
    with pytest.raises(RuntimeError, match=r"engine failed while aggregating target='y', prediction='yhat'"):
        engines.compute_metrics(failing_engine(name), "y", "yhat", "sex", ["fairness.tpr"])


def test_not_a_frame_is_refused():
    with pytest.raises(TypeError, match=r"data is a list"):
        engines.compute_metrics([[1, 0]], "y", "yhat", "sex", ["fairness.tpr"])


# --- a group whose sample weights are all 0 ------------------------------------------------
_WEIGHTLESS = pd.DataFrame(
    {"y": [1, 1, 0, 0, 1, 0], "p": [1, 0, 0, 1, 1, 1], "g": list("aabbcc"), "w": [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]}
)


@pytest.mark.parametrize(
    "key,reason",
    [
        (
            "fairness.tpr",
            "tpr is undefined for group(s) ['b'] (no positives in y_true) and for group(s) ['c'] "
            "(all sample weights of the group are 0)",
        ),
        ("fairness.mse", "mse is undefined for group(s) ['c'] (all sample weights of the group are 0)"),
    ],
)
def test_all_zero_weight_group_is_undefined_because_of_its_weights(engine, key, reason):
    d = _WEIGHTLESS
    with pytest.warns(sfm.UndefinedGroupWarning, match=r"\['c'\] \(all sample weights of the group are 0\)"):
        in_memory = sfm.msr(key).evaluate(d.y, d.p, sensitive_features=d.g, sample_weight=d.w)
    with pytest.warns(sfm.UndefinedGroupWarning, match=r"\['c'\] \(all sample weights of the group are 0\)"):
        res = engines.evaluate_measures(
            [key], "y", "p", sensitive_features="g", sample_weight="w", data=as_engine(engine, d)
        )[key]
    assert in_memory.reason == res.reason == reason


def test_all_zero_weight_group_survives_adding_statistics():
    """The rows travel with the counts: chunks merged with + still tell a weightless group from an absent one."""
    d = _WEIGHTLESS
    halves = [check_inputs(d.y[s], d.p[s], d.g[s], d.w[s]).confusion() for s in (slice(0, 3), slice(3, 6))]
    unweighted = check_inputs(d.y[:4], d.p[:4], d.g[:4]).confusion()
    for stats in (halves[0] + halves[1], halves[1] + unweighted):
        assert stats.groups[stats.weightless()].tolist() == ["c"]
        assert "['c'] (all sample weights" in sfm.msr("fairness.fpr").evaluate_stats(stats).reason
    assert not (unweighted + unweighted).weightless().any()


def test_groupwise_reduction_names_the_weightless_group():
    d = _WEIGHTLESS
    gm = sfm.groupwise_metrics(["tpr"], d.y, d.p, sensitive_features=d.g, sample_weight=d.w)
    with pytest.warns(sfm.UndefinedGroupWarning, match=r"\['c'\] \(all sample weights of the group are 0\)"):
        gm.difference()


def test_single_group_error_counts_samples_not_table_rows(engine):
    """The engine's summary table has a row per cell; the message counts the samples (the count column)."""
    d = pd.DataFrame({"y": [1, 0, 1, 1, 0, 0, 1], "p": [1, 1, 0, 1, 0, 0, 1], "g": ["a"] * 7})
    with pytest.raises(SingleGroupError, match="in these 7 samples"):
        engines.evaluate_measures(["fairness.tpr"], "y", "p", sensitive_features="g", data=as_engine(engine, d))
