"""Exposure and NDCG per group against per-query loops and scikit-learn's ndcg_score."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score

import skfair_measures as sfm
from skfair_measures.ranking import RankingFairness, discounts, exposure_by_group, ndcg_by_group


def _lists(rng, n_queries, ties=False):
    sizes = rng.integers(2, 12, n_queries)
    q = np.repeat(np.arange(n_queries) * 7 + 3, sizes)  # ids need not be 0..n-1
    score = rng.random(q.size)
    if ties:
        score = np.round(score, 1)
    rel = rng.integers(0, 4, q.size).astype(float)
    return q, score, rel


def _reference_exposure(score, q, groups, k=None):
    exp = np.empty(score.size)
    for query in np.unique(q):
        rows = np.flatnonzero(q == query)
        s = score[rows]
        order = np.argsort(-s, kind="stable")
        disc = 1 / np.log2(np.arange(rows.size) + 2)
        if k is not None:
            disc[k:] = 0
        for value in np.unique(s):  # ties share the mean discount of their positions
            tied = s[order] == value
            disc[tied] = disc[tied].mean()
        exp[rows[order]] = disc
    return pd.Series(exp).groupby(groups).mean()


@pytest.mark.parametrize("ties", [False, True])
def test_exposure_matches_a_per_query_loop(ties):
    rng = np.random.default_rng(int(ties))
    q, score, _ = _lists(rng, 50, ties)
    groups = rng.choice(["a", "b", "c"], q.size)
    got = exposure_by_group(score, query_id=q, sensitive_features=groups)
    want = _reference_exposure(score, q, groups)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-12)
    m = sfm.msr("fairness.exposure")
    assert m(None, score, query_id=q, sensitive_features=groups) == pytest.approx(want.max() - want.min())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_queries=st.integers(2, 30),
    ties=st.booleans(),
    k=st.one_of(st.none(), st.integers(1, 6)),
)
def test_ndcg_per_group_matches_sklearn_per_query(seed, n_queries, ties, k):
    rng = np.random.default_rng(seed)
    q, score, rel = _lists(rng, n_queries, ties)
    user_group = rng.choice(["F", "M"], n_queries)
    groups = user_group[np.searchsorted(np.unique(q), q)]
    if len(np.unique(groups)) < 2:
        return
    per_query, group_of = [], []
    for i, query in enumerate(np.unique(q)):
        rows = q == query
        if rel[rows].sum() == 0:
            continue  # no relevant item: no NDCG (left out of the group mean)
        per_query.append(ndcg_score([rel[rows]], [score[rows]], k=k))
        group_of.append(user_group[i])
    want = pd.Series(per_query).groupby(np.array(group_of)).mean()
    got = ndcg_by_group(rel, score, query_id=q, sensitive_features=groups, k=k)
    np.testing.assert_allclose(got.reindex(want.index).to_numpy(), want.to_numpy(), rtol=1e-10)


def test_measures_keys_and_refusals():
    rng = np.random.default_rng(3)
    q, score, rel = _lists(rng, 20)
    m = sfm.msr("fairness.ndcg", k=5, operation="ratio")
    assert m.key == "fairness.ndcg(operation=ratio, k=5)" and m.minimize is False and m.ideal == 1.0
    items = rng.choice(["a", "b"], q.size)
    with pytest.raises(ValueError, match="vary within a query"):
        m(rel, score, query_id=q, sensitive_features=items)
    with pytest.raises(ValueError, match="k=3 applies to base='ndcg' only"):
        RankingFairness("exposure", k=3)
    with pytest.raises(ValueError, match="query_id must hold one id per row"):
        discounts(score, q[:-1])
    res = sfm.msr("fairness.exposure").evaluate(rel, score, query_id=q, sensitive_features=items)
    assert list(res.by_group.index) == ["a", "b"] and res.to_dict()["groups"] == ["a", "b"]


def test_weighted_exposure():
    rng = np.random.default_rng(4)
    q, score, _ = _lists(rng, 30)
    groups = rng.choice(["a", "b"], q.size)
    w = rng.integers(1, 4, q.size)
    exp = discounts(score, q)
    want = pd.Series(exp * w).groupby(groups).sum() / pd.Series(w.astype(float)).groupby(groups).sum()
    got = exposure_by_group(score, query_id=q, sensitive_features=groups, sample_weight=w)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-12)


@pytest.mark.parametrize("key", ["fairness.ndcg", "fairness.exposure"])
def test_missing_relevance_or_score_is_refused_by_name(key):
    # a NaN relevance used to drop its whole query from the NDCG mean without a word
    rel = np.array([1.0, np.nan, 0.0, 1.0, 0.0, 1.0])
    score = np.array([0.9, 0.5, 0.7, 0.1, 0.8, 0.3])
    kw = dict(query_id=[1, 1, 1, 2, 2, 2], sensitive_features=list("aaabbb"))
    if key == "fairness.ndcg":
        with pytest.raises(ValueError, match=r"y_true has 1 missing value\(s\).*position 1"):
            sfm.msr(key)(rel, score, **kw)
    score[4] = np.nan
    with pytest.raises(ValueError, match=r"y_score has 1 missing value\(s\).*position 4"):
        sfm.msr(key)(np.nan_to_num(rel), score, **kw)
