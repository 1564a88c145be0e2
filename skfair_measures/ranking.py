"""Fairness of rankings: exposure and NDCG per group, for ranked lists with query ids.

Rows are (query, item) pairs: ``y_score`` ranks the items of each query (higher
first), ``y_true`` holds their graded relevance.

- **Exposure** (Singh and Joachims, "Fairness of Exposure in Rankings", KDD 2018): an
  item at position ``j`` (1-based) of its query's ranking gets the attention
  ``1 / log2(1 + j)`` (the DCG position bias). The exposure of a group of *items* is
  the mean exposure of its (query, item) rows, i.e. the expected exposure of one of
  its items; ``fairness.exposure`` compares the groups (demographic parity of exposure:
  ``absdiff`` by default, ``operation="ratio"`` for the ratio).
- **NDCG per group** (user-side fairness: Li, Chen, Fu, Ge and Zhang, "User-oriented
  Fairness in Recommendation", WWW 2021): the groups are groups of *queries* (users);
  each query's NDCG (scikit-learn's ``ndcg_score``: linear gains, ties averaged,
  optional cutoff ``k``) is averaged within its group, and ``fairness.ndcg`` compares
  the groups. A query without any relevant item has no NDCG (0/0) and is left out of
  its group's mean (scikit-learn scores it 0). A missing relevance grade or score
  (NaN) is refused with an error naming ``y_true`` or ``y_score``, as missing labels
  are everywhere in the package.

Ties in ``y_score`` share the mean discount of their positions, as in scikit-learn.
One ``np.lexsort`` orders all queries at once; no Python loop runs over queries.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from ._arrays import _check_no_missing, mean_by
from ._stats import check_inputs
from .measures import MeasureBase, MeasureResult, qualified_key
from .operations import Operation, absdiff, get_operation

__all__ = ["RankingFairness", "discounts", "exposure_by_group", "ndcg_by_group"]

Base = Literal["exposure", "ndcg"]


def _query_codes(query_id: Any, n: int) -> np.ndarray:
    if query_id is None:
        raise ValueError("query_id is required: the query (ranked list) of each row; pass one id for a single list.")
    values = np.asarray(query_id)
    if values.ndim != 1 or values.size != n:
        raise ValueError(f"query_id must hold one id per row ({n}); got shape {values.shape}.")
    codes = pd.factorize(values)[0]
    if (codes < 0).any():
        raise ValueError("query_id has missing values; give every row its query.")
    return codes.astype(np.intp)


def discounts(y_score: Any, query_id: Any, k: int | None = None) -> np.ndarray:
    """The position discount ``1 / log2(1 + position)`` of every row in its query's ranking.

    Rows with tied scores in a query share the mean discount of their positions;
    positions beyond ``k`` get 0 (before the tie averaging, as scikit-learn).

    Examples
    --------
    >>> discounts([0.9, 0.5, 0.7, 0.1], [1, 1, 1, 2]).round(3).tolist()
    [1.0, 0.5, 0.631, 1.0]
    """
    s = np.asarray(y_score, dtype=float)
    _check_no_missing(s, "y_score")  # a NaN score has no place in the ranking
    q = _query_codes(query_id, s.size)
    order = np.lexsort((-s, q))
    q_sorted, s_sorted = q[order], s[order]
    new_query = np.r_[True, q_sorted[1:] != q_sorted[:-1]]
    starts = np.flatnonzero(new_query)
    position = np.arange(s.size) - np.repeat(starts, np.diff(np.r_[starts, s.size]))
    disc = 1.0 / np.log2(position + 2.0)
    if k is not None:
        disc[position >= k] = 0.0
    run = np.cumsum(new_query | np.r_[True, s_sorted[1:] != s_sorted[:-1]]) - 1
    tied = np.bincount(run, weights=disc) / np.bincount(run)
    out = np.empty(s.size)
    out[order] = tied[run]
    return out


def exposure_by_group(y_score: Any, *, query_id: Any, sensitive_features: Any, sample_weight: Any = None) -> pd.Series:
    """Mean exposure ``1 / log2(1 + position)`` of each group's items (Singh and Joachims 2018).

    Examples
    --------
    >>> exposure_by_group([0.9, 0.5, 0.7, 0.8, 0.1], query_id=[1, 1, 1, 2, 2],
    ...                   sensitive_features=["a", "b", "b", "a", "b"]).round(3).to_dict()
    {'a': 1.0, 'b': 0.587}
    """
    exposure = discounts(y_score, query_id)
    sample = check_inputs(exposure, exposure, sensitive_features, sample_weight, y_pred_name="y_score")
    values = mean_by(sample.group_codes, exposure, sample.n_groups, sample.sample_weight)
    return pd.Series(values, index=sample.groups, name="exposure")


def _per_query_ndcg(y_true: np.ndarray, y_score: np.ndarray, q: np.ndarray, k: int | None) -> np.ndarray:
    n_queries = int(q.max()) + 1
    dcg = np.bincount(q, weights=y_true * discounts(y_score, q, k), minlength=n_queries)
    ideal = np.bincount(q, weights=y_true * discounts(y_true, q, k), minlength=n_queries)
    return np.divide(dcg, ideal, out=np.full(n_queries, np.nan), where=ideal > 0)


def ndcg_by_group(
    y_true: Any, y_score: Any, *, query_id: Any, sensitive_features: Any, k: int | None = None
) -> pd.Series:
    """Mean NDCG of each group's queries (the group is a property of the query: its user).

    Examples
    --------
    >>> ndcg_by_group([1, 0, 0, 1, 1, 0], [0.9, 0.5, 0.7, 0.1, 0.8, 0.3], query_id=[1, 1, 1, 2, 2, 2],
    ...               sensitive_features=["a", "a", "a", "b", "b", "b"]).round(3).to_dict()
    {'a': 1.0, 'b': 0.92}
    """
    rel = np.asarray(y_true, dtype=float)
    _check_no_missing(rel, "y_true")  # as for labels: refused, not a query silently left out
    if (rel < 0).any():
        raise ValueError("y_true must hold non-negative relevance grades for NDCG.")
    q = _query_codes(query_id, rel.size)
    per_query = _per_query_ndcg(rel, np.asarray(y_score, dtype=float), q, k)
    sample = check_inputs(rel, rel, sensitive_features)
    first = np.full(per_query.size, -1, dtype=np.intp)
    first[q[::-1]] = sample.group_codes[::-1]
    if (sample.group_codes != first[q]).any():
        raise ValueError(
            "sensitive_features vary within a query; NDCG per group compares groups of queries (users): give "
            "every row of a query its query's group (for groups of items, use fairness.exposure)."
        )
    ok = ~np.isnan(per_query)
    values = mean_by(first[ok], per_query[ok], sample.n_groups)
    return pd.Series(values, index=sample.groups, name="ndcg")


class RankingFairness(MeasureBase):
    """Exposure or NDCG per group of a ranking, compared across groups by an operation.

    Called as ``m(y_true, y_score, *, query_id, sensitive_features, sample_weight=None)``;
    ``skfair_measures.fairness_scorer(m)`` is its scikit-learn scorer
    (:class:`~skfair_measures.scoring.RankingScorer`, ``query_id`` routed like
    ``sensitive_features``).

    Parameters
    ----------
    base : {"exposure", "ndcg"}
        Exposure of groups of items, or NDCG of groups of queries (see the module).
    operation : str or Operation, default="absdiff"
    k : int, optional
        NDCG cutoff (``ndcg@k``).
    key : str, optional

    Examples
    --------
    >>> m = RankingFairness("exposure", operation="ratio")
    >>> round(m([0, 0, 0, 0], [0.9, 0.5, 0.7, 0.8], query_id=[1, 1, 1, 1], sensitive_features=list("abab")), 3)
    0.708
    >>> m.key
    'fairness.exposure(operation=ratio)'
    """

    def __init__(
        self,
        base: Base = "exposure",
        operation: str | Operation = absdiff,
        *,
        k: int | None = None,
        key: str | None = None,
        description: str | None = None,
    ) -> None:
        if base not in ("exposure", "ndcg"):
            raise ValueError(f"base={base!r}; pass 'exposure' or 'ndcg'.")
        if k is not None and (base != "ndcg" or not isinstance(k, int) or k < 1):
            raise ValueError(f"k={k!r} applies to base='ndcg' only, as a positive cutoff.")
        self.base, self.k, self.operation = base, k, get_operation(operation)
        op = self.operation
        self.key = key or qualified_key(f"fairness.{base}", operation=None if op is absdiff else op.name, k=k)
        what = "mean exposure of each group's items" if base == "exposure" else "mean NDCG of each group's queries"
        self.description = description or f"Ranking: {what}; {op.description}"
        self.minimize, self.ideal = op.minimize, op.ideal
        self.range = tuple(op.range_of((0.0, 1.0)))

    @property
    def base_label(self) -> str:
        return self.base if self.k is None else f"ndcg@{self.k}"

    @property
    def operation_label(self) -> str:
        return self.operation.name

    def evaluate(
        self, y_true: Any, y_score: Any, *, query_id: Any, sensitive_features: Any, sample_weight: Any = None
    ) -> MeasureResult:
        """The measure with the per-group exposure or NDCG."""
        if self.base == "ndcg" and sample_weight is not None:
            raise ValueError("sample_weight is not supported for NDCG per group; omit it.")
        rows = {"query_id": query_id, "sensitive_features": sensitive_features}
        if self.base == "exposure":
            by_group = exposure_by_group(y_score, sample_weight=sample_weight, **rows)
        else:
            by_group = ndcg_by_group(y_true, y_score, k=self.k, **rows)
        value = float(self.operation(by_group.to_numpy(), groups=by_group.index))
        undefined = list(by_group.index[by_group.isna().to_numpy()])
        return MeasureResult(self.key, value, by_group, measure=self, undefined_groups=undefined)

    def __call__(
        self, y_true: Any, y_score: Any, *, query_id: Any, sensitive_features: Any, sample_weight: Any = None
    ) -> float:
        """The measure's value (see :meth:`evaluate`)."""
        return self.evaluate(
            y_true, y_score, query_id=query_id, sensitive_features=sensitive_features, sample_weight=sample_weight
        ).value
