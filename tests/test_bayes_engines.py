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
    return pd.DataFrame({
        "y": np.where(has_label, y, np.nan),
        "score": score,
        "sex": rng.choice(["F", "M"], n),
        "race": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
        "w": rng.choice([0.5, 1.0, 2.0, 4.0], n),
    })


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
    return bayes.posteriors([measure] if not isinstance(measure, list) else measure,
                            lab["y"].astype(int), lab["score"], **args)


def in_engine(engine, measure, method, sensitive, weighted=False, **kw):
    return bayes.posteriors([measure] if not isinstance(measure, list) else measure, "y", "score",
                            sensitive_features=sensitive, method=method, random_state=3,
                            sample_weight="w" if weighted else None, data=as_engine(engine, FRAME), **kw)


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
    with pytest.raises(ValueError, match=r"method='auto' on data= needs the labeled rows.*'bb' or 'ppi'"):
        bayes.posterior(m, "y", "score", sensitive_features="sex", data=data)
    with pytest.raises(ValueError, match=r"method='bc' on data="):
        bayes.posterior(m, "y", "score", sensitive_features="sex", data=data, method="bc")
    with pytest.raises(ValueError, match=r"unlabeled_scores cannot be combined with data="):
        bayes.posterior(m, "y", "score", sensitive_features="sex", data=data, method="ppi",
                        unlabeled_scores=[0.5])
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


@pytest.mark.parametrize("engine", ENGINES)
def test_verdicts_of_engine_posteriors_equal_the_in_memory_ones(engine):
    ms = [sfm.msr("fairness.tpr"), sfm.msr("fairness.acc")]
    want = bayes.verdicts(in_memory(ms, "bb", "race"), eps=0.05)
    got = bayes.verdicts(in_engine(engine, ms, "bb", "race"), eps=0.05)
    pd.testing.assert_frame_equal(got, want)
    k = FRAME["race"].nunique()
    assert got.attrs == want.attrs and len(got) == 2 * k * (k - 1) // 2 and got.attrs["family_size"] > 0
