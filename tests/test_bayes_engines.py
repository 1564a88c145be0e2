"""Posteriors of rows in an engine (``posterior(..., data=frame)``) equal the posteriors of the same rows in memory.

The rows whose label is missing are the unlabeled ones. Beta-Binomial reads only the
labeled confusion counts, so its draws are the in-memory draws exactly (same seed). PPI
reads per-group score moments from the same pass; its estimate, lambdas, standard errors
and draws agree to 1e-8 relative: the in-memory PPI takes its gradient by central
differences with a relative step of 1e-6, which turns summation-order rounding (1e-16)
into about 1e-10, so bit-equality is not a property either path has.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import skfair_measures as sfm
from skfair_measures import bayes

pytest.importorskip("polars")
pytest.importorskip("duckdb")
pytest.importorskip("dask.dataframe")
from test_engines import as_engine  # noqa: E402

ENGINES = ["pandas", "polars", "duckdb", "dask"]


def make_frame(n: int = 3000, seed: int = 0, labeled: float = 0.15) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    has_label = rng.random(n) < labeled
    return pd.DataFrame(
        {
            "y": np.where(has_label, y, np.nan),
            "score": score,
            "sex": rng.choice(["F", "M"], n),
            "race": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
            "w": rng.choice([0.5, 1.0, 2.0, 4.0], n),
        }
    )


FRAME = make_frame()
LAB = FRAME["y"].notna().to_numpy()


def in_memory(measure, method, sensitive, weighted=False, **kw):
    f, lab, unl = FRAME, FRAME[LAB], FRAME[~LAB]
    args = dict(sensitive_features=lab[sensitive], method=method, random_state=3, **kw)
    if method == "ppi":
        args.update(unlabeled_scores=unl["score"], unlabeled_sensitive=unl[sensitive])
        if weighted:
            args.update(sample_weight=lab["w"], unlabeled_sample_weight=unl["w"])
    del f
    return bayes.posteriors(
        [measure] if not isinstance(measure, list) else measure, lab["y"].astype(int), lab["score"], **args
    )


def in_engine(engine, measure, method, sensitive, weighted=False, **kw):
    return bayes.posteriors(
        [measure] if not isinstance(measure, list) else measure,
        "y",
        "score",
        sensitive_features=sensitive,
        method=method,
        random_state=3,
        sample_weight="w" if weighted else None,
        data=as_engine(engine, FRAME),
        **kw,
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_bb_from_engine_counts_equals_in_memory_exactly(engine):
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.eod"), sfm.msr("fairness.ppv", threshold=0.6)]
    for m in ms:
        for sensitive in ("sex", ["sex", "race"]):
            want = in_memory(m, "bb", sensitive, prior="jeffreys")[m.key]
            got = in_engine(engine, m, "bb", sensitive, prior="jeffreys")[m.key]
            np.testing.assert_array_equal(got.draws, want.draws)
            np.testing.assert_array_equal(got.counts, want.counts)
            assert got.groups.equals(want.groups)
            assert got.attrs["n_labeled"] == want.attrs["n_labeled"] == LAB.sum()
            assert got.attrs["n_unlabeled"] == (~LAB).sum()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("weighted", [False, True])
def test_ppi_from_engine_moments_equals_in_memory(engine, weighted):
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.eod"), sfm.msr("fairness.acc")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bayes.AsymptoticWarning)
        want = in_memory(ms, "ppi", ["sex", "race"], weighted)
        got = in_engine(engine, ms, "ppi", ["sex", "race"], weighted)
    for key in want:
        w, g = want[key], got[key]
        assert g.groups.equals(w.groups)
        np.testing.assert_allclose(g.value, w.value, rtol=1e-8)
        np.testing.assert_allclose(g.draws, w.draws, rtol=1e-8, atol=1e-10)
        for name in w.attrs["lambda"]:
            np.testing.assert_allclose(g.attrs["lambda"][name], w.attrs["lambda"][name], rtol=1e-8)
            np.testing.assert_allclose(g.attrs["se"][name], w.attrs["se"][name], rtol=1e-8)
        assert g.attrs["small_groups"] == w.attrs["small_groups"]
    # a wrong moment would move the estimate far more than this: the tolerance can fail
    assert abs(got["fairness.acc"].value - in_memory(ms[2], "ppi", "sex")["fairness.acc"].value) > 1e-6


@pytest.mark.filterwarnings("ignore::skfair_measures.bayes.AsymptoticWarning")
def test_min_group_size_and_fixed_lambda_follow_in_memory():
    m = sfm.msr("fairness.tpr", min_group_size=70, small_groups="merge")
    with pytest.warns(sfm.groups.SmallGroupWarning):
        want = in_memory(m, "ppi", ["sex", "race"], lam=0.5)[m.key]
    with pytest.warns(sfm.groups.SmallGroupWarning):
        got = in_engine("polars", m, "ppi", ["sex", "race"], lam=0.5)[m.key]
    assert got.groups.equals(want.groups)
    np.testing.assert_allclose(got.draws, want.draws, rtol=1e-8, atol=1e-10)
    with pytest.warns(sfm.groups.SmallGroupWarning):
        bb = in_engine("pandas", m, "bb", ["sex", "race"])[m.key]
    with pytest.warns(sfm.groups.SmallGroupWarning):
        np.testing.assert_array_equal(bb.draws, in_memory(m, "bb", ["sex", "race"])[m.key].draws)


def test_frame_refusals_name_the_argument_and_the_fix():
    m = sfm.msr("fairness.tpr")
    data = as_engine("polars", FRAME)
    for method in ("ppi", "guaranteed"):
        with pytest.raises(ValueError, match=r"unlabeled_scores cannot be combined with data="):
            bayes.posterior(m, "y", "score", sensitive_features="sex", data=data, method=method, unlabeled_scores=[0.5])
    with pytest.raises(ValueError, match=r"method='bc' needs unlabeled rows: rows of data whose 'y' is missing"):
        bayes.posterior(m, "y", "score", sensitive_features="sex", data=FRAME[LAB], method="bc")
    with pytest.raises(ValueError, match=r"method='bb' counts labeled samples and takes no sample_weight"):
        bayes.posterior(m, "y", "score", sensitive_features="sex", data=data, method="bb", sample_weight="w")
    with pytest.raises(ValueError, match=r"method='ppi' needs unlabeled rows"):
        bayes.posterior(m, "y", "score", sensitive_features="sex", data=FRAME[LAB], method="ppi")
    with pytest.raises(KeyError, match=r"prediction='p' is not a column"):
        bayes.posterior(m, "y", "p", sensitive_features="sex", data=data, method="bb")
    bad = FRAME.assign(score=FRAME["score"].where(FRAME.index != 5, 1.5))
    with pytest.raises(ValueError, match=r"prediction='score' has 1 row\(s\) that are missing or outside \[0, 1\]"):
        bayes.posterior(m, "y", "score", sensitive_features="sex", data=bad, method="bb")
    unseen = FRAME.assign(sex=np.where(LAB, FRAME["sex"], "U"))
    with pytest.raises(ValueError, match=r"rows without a label"):
        bayes.posterior(m, "y", "score", sensitive_features="sex", data=unseen, method="ppi")


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("labels", ["float", "nullable", "strings"])
def test_compiled_score_pass_equals_the_numpy_pass(monkeypatch, weighted, labels):
    """Large partitions take one compiled pass (numba); it gives the NumPy path's table to the last bit."""
    pytest.importorskip("numba")
    from skfair_measures.engines import _moments, _native
    from skfair_measures.engines._frames import Columns

    n = 300_000  # above the compiled pass's row count
    rng = np.random.default_rng(5)
    y = np.where(rng.random(n) < 0.1, rng.integers(0, 2, n).astype(float), np.nan)
    pdf = pd.DataFrame(
        {"y": y, "score": rng.random(n), "g": rng.integers(0, 4, n).astype(np.int16), "w": rng.random(n) * 3}
    )
    pdf.loc[::997, "score"] = 1.5  # bad scores and weights are counted, not summed
    pdf.loc[3::1013, "w"] = np.nan
    if labels == "nullable":
        pdf["y"] = pdf["y"].astype("Int8")
    elif labels == "strings":
        pdf["y"] = np.where(np.isnan(y), None, np.where(y == 1, "yes", "no"))
    cols = Columns("y", "score", ("g",), "w" if weighted else None)
    compiled = _moments._partition(pdf, cols, 0.5)
    monkeypatch.setattr(_moments, "_COMPILED_ROWS", 10**12)
    monkeypatch.setattr(_native, "_COMPILED_ROWS", 10**12)
    plain = _moments._partition(pdf, cols, 0.5)
    keys = ["g", "__sfm_y_true", "__sfm_y_pred"]

    def order(t):
        return t.assign(__sfm_y_true=t["__sfm_y_true"].astype(str)).sort_values(keys).reset_index(drop=True)

    pd.testing.assert_frame_equal(order(compiled), order(plain), check_exact=True)
    assert compiled["__sfm_y_true"].isna().sum() == 2 * 4  # the unlabeled rows: one null label per cell
    assert compiled["__sfm_bad_score"].sum() == len(range(0, n, 997))


# -- methods that read the labeled rows: labeled rows collected, unlabeled rows a score histogram ----------
def with_unlabeled(measures, method, sensitive, weighted=False, frame=FRAME, **kw):
    """The in-memory posterior with every unlabeled row given (the frame's rows without a label)."""
    lab_mask = frame["y"].notna().to_numpy()
    lab, unl = frame[lab_mask], frame[~lab_mask]
    args = dict(
        sensitive_features=lab[sensitive],
        method=method,
        random_state=3,
        unlabeled_scores=unl["score"],
        unlabeled_sensitive=unl[sensitive],
        **kw,
    )
    if weighted:
        args.update(sample_weight=lab["w"], unlabeled_sample_weight=unl["w"])
    return bayes.posteriors(measures, lab["y"].astype(int), lab["score"], **args)


def test_histogram_of_the_unlabeled_rows_is_the_same_on_every_engine():
    from skfair_measures.engines._frames import Columns
    from skfair_measures.engines._moments import BIN, SPLIT, score_histogram

    frame = FRAME.copy()
    frame.loc[:40, "score"] = [0.0, 0.01, 0.0100001, 0.99, 0.989999, 1.0] * 6 + [0.5] * 5
    cols = Columns("y", "score", ("sex",), "w")
    keys = ["sex", "__sfm_y_pred", BIN, SPLIT]
    want_lab, want = score_histogram(frame, cols, 0.5, 1000, (0.01, 0.99))
    assert len(want_lab) == LAB.sum() and want["n_rows"].sum() == (~frame["y"].notna()).sum()
    # a score at a clipping bound is kept apart from the rest of its bin
    at = want[want[BIN] == 10]
    assert set(at[SPLIT]) == {True, False} and (at["sum_score"] / at["n_rows"])[at[SPLIT]].max() <= 0.01
    for engine in ("polars", "duckdb", "dask"):
        lab, got = score_histogram(as_engine(engine, frame), cols, 0.5, 1000, (0.01, 0.99))
        pd.testing.assert_frame_equal(
            got.sort_values(keys).reset_index(drop=True)[want.columns],
            want.sort_values(keys).reset_index(drop=True),
            check_dtype=False,
            rtol=1e-12,
        )
        assert len(lab) == LAB.sum()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("weighted", [False, True])
def test_guaranteed_from_an_engine_equals_in_memory(engine, weighted):
    """Labeled rows collected; the unlabeled rows enter through sums linear in the score: exact up to rounding."""
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.eod"), sfm.msr("fairness.cv")]
    want = with_unlabeled(ms, "guaranteed", ["sex", "race"], weighted)
    got = in_engine(engine, ms, "guaranteed", ["sex", "race"], weighted)
    for key in want:
        w, g = want[key], got[key]
        assert g.groups.equals(w.groups)
        np.testing.assert_allclose(g.value, w.value, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g.interval(0.9), w.interval(0.9), rtol=1e-9, atol=1e-9)
        assert g.attrs["prediction_powered"] == w.attrs["prediction_powered"] == (not weighted)
        assert g.attrs["n_unlabeled"] == w.attrs["n_unlabeled"] == (~LAB).sum()
    # the selection rate is known exactly from every row's prediction: a wrong count would move it
    assert got["fairness.cv"].interval(0.9)[0] == pytest.approx(got["fairness.cv"].interval(0.9)[1])


BC_OPTIONS = dict(chains=2, n_draws=300, tune=300)


@pytest.fixture(scope="module")
def bc_in_memory():
    pytest.importorskip("nutpie")
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.acc")]
    return ms, {method: with_unlabeled(ms, method, "sex", **BC_OPTIONS) for method in ("bc", "bcr")}


@pytest.mark.parametrize("engine", ENGINES)
def test_bc_from_an_engine_histogram_within_its_sampling_error(engine, bc_in_memory):
    """The model is sampled on the same labeled rows; the binned unlabeled scores move the draws by far less than
    their posterior sd, and by less than the binning bound the posterior reports."""
    ms, want = bc_in_memory
    got = in_engine(engine, ms, "bc", "sex", **BC_OPTIONS)
    for key in want["bc"]:
        w, g = want["bc"][key], got[key]
        sd = float(np.std(w.draws))
        assert abs(g.value - w.value) < 0.1 * sd
        assert np.abs(np.subtract(g.interval(0.9), w.interval(0.9))).max() < 0.2 * sd
    binning = got[ms[0].key].attrs["binning"]
    assert binning["bins"] == 1000 and 0 < binning["max_share_error"] < 1e-3
    if engine in ("pandas", "polars"):  # the labeled rows in the same order: the same MCMC draws
        diff = np.abs(got[ms[1].key].draws - want["bc"][ms[1].key].draws).max()
        assert diff <= binning["max_share_error"]


def test_bcr_and_auto_from_an_engine_follow_in_memory(bc_in_memory):
    ms, want = bc_in_memory
    got = in_engine("polars", ms, "bcr", "sex", **BC_OPTIONS)
    for key in want["bcr"]:
        assert abs(got[key].value - want["bcr"][key].value) < 0.1 * float(np.std(want["bcr"][key].draws))
        assert "binning" in got[key].attrs
    # auto: the same rules read off the frame; BC's estimate in the labels' Jeffreys interval below 200 labels
    auto = in_engine("polars", ms, "auto", "sex", **BC_OPTIONS)[ms[0].key]
    mem = with_unlabeled(ms, "auto", "sex", **BC_OPTIONS)[ms[0].key]
    assert auto.method == mem.method == "bb" and auto.attrs["estimate"] == mem.attrs["estimate"]
    assert auto.attrs["interval"] == mem.attrs["interval"]
    np.testing.assert_allclose(auto.interval(0.95), mem.interval(0.95), atol=0.1 * float(np.std(mem.draws)))


@pytest.mark.filterwarnings("ignore::skfair_measures.bayes.AsymptoticWarning")
def test_auto_on_a_frame_with_weights_or_no_unlabeled_rows():
    m = sfm.msr("fairness.tpr")
    # weights: ppi's estimate from the engine's moments, the guaranteed box from the labeled rows
    got = in_engine("duckdb", m, "auto", "sex", weighted=True)[m.key]
    want = with_unlabeled([m], "auto", "sex", weighted=True)[m.key]
    assert got.method == want.method == "ppi"
    np.testing.assert_allclose(got.value, want.value, rtol=1e-8)
    np.testing.assert_allclose(got.interval(0.95), want.interval(0.95), rtol=1e-8)
    # every row labeled: bb on the labels, as in memory without unlabeled scores
    labeled = FRAME[LAB]
    got = bayes.posterior(m, "y", "score", sensitive_features="sex", data=as_engine("polars", labeled), random_state=3)
    want = bayes.posterior(
        m, labeled["y"].astype(int), labeled["score"], sensitive_features=labeled["sex"], random_state=3
    )
    assert got.method == want.method == "bb"
    np.testing.assert_array_equal(got.draws, want.draws)


@pytest.mark.parametrize("engine", ENGINES)
def test_verdicts_of_engine_posteriors_equal_the_in_memory_ones(engine):
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.acc")]
    want = bayes.verdicts(in_memory(ms, "bb", "race"), eps=0.05)
    got = bayes.verdicts(in_engine(engine, ms, "bb", "race"), eps=0.05)
    pd.testing.assert_frame_equal(got, want)
    k = FRAME["race"].nunique()
    assert got.attrs == want.attrs and len(got) == 2 * k * (k - 1) // 2 and got.attrs["family_size"] > 0
