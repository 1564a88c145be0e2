"""Posteriors of rows that stay in an engine: ``posterior(measure, "y", "score", ..., data=frame)``.

One engine pass (:func:`skfair_measures.engines._moments.score_table`) returns, per
(group, label or none, ``score >= threshold``) cell, the rows and five weighted sums of
the scores; a row whose label is missing is unlabeled. From that small table:

- ``"bb"`` (Beta-Binomial) reads the labeled confusion counts, exactly those of the
  rows in memory, so with the same seed its draws are the in-memory draws;
- ``"ppi"`` (PPI++) reads, per group, the first and second moments of the observed
  and imputed cells, which it computes from the rows in memory alike
  (:func:`~._ppi.row_moments`), so its estimate, tuned lambdas, covariance and draws
  equal the in-memory ones up to floating-point summation order.

The other methods read every labeled row (a calibration model, betting sequences) and
are refused with the way out named. The layers: ``bayes`` and ``engines`` are both
above the core; this module is the one arrow from ``bayes`` to ``engines``, and
``engines`` imports nothing of ``bayes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._groups import encode_groups
from .._labels import binarize_labels
from ..engines._aggregate import _N, _P, _SUM_W, _T, _group_codes, _refuse_bad_rows
from ..engines._frames import as_lazy, check_columns
from ..engines._moments import SCORE_SUMS, SUM_SCORE, score_histogram, score_table
from ..measures import MeasureBase
from ._bb import BetaBinomial
from ._bc import CLIP
from ._method import Call, EstimationMethod, FitData, Rows, ScoreMoments, cell_sums
from ._small_groups import small_groups_plan
from ._table import METHODS

__all__ = ["HISTOGRAM_BINS", "FrameRows", "frame_fit_data", "frame_rows", "refuse_no_unlabeled"]

#: Methods that run on an engine's table of counts and score moments alone.
FRAME_METHODS = ("bb", "ppi")
#: Equal-width bins on [0, 1] of the unlabeled scores' histogram of the other methods (:func:`frame_rows`).
HISTOGRAM_BINS = 1000


class _InEngine:
    """Stand-in for rows that stay in the engine: their number, and a clear error if anything reads them."""

    def __init__(self, size: int) -> None:
        self.size = int(size)

    def __getattr__(self, name: str) -> Any:
        raise TypeError(
            f"the rows stay in the engine (data=): only their counts and score moments were computed, so "
            f"{name!r} of the rows cannot be read; use method= {' or '.join(map(repr, FRAME_METHODS))}, or "
            "collect the rows and pass arrays."
        )


def _columns(call: Call) -> Any:
    """The frame's columns named by the call, checked; the unlabeled rows are those without a label."""
    given = [k for k, v in call.unlabeled.items() if v is not None]
    if given:
        raise ValueError(
            f"{', '.join(given)} cannot be combined with data=: the unlabeled rows are the frame's rows whose "
            f"{call.y_true!r} is missing; drop {given[0]}."
        )
    return check_columns(as_lazy(call.data), call.y_true, call.y_score, call.sensitive_features, call.sample_weight)


def _unlabeled_codes(table: pd.DataFrame, cols: Any, groups: pd.Index) -> np.ndarray:
    """Group codes of the rows without a label (the groups are those of the labeled rows)."""
    if table.empty:
        return np.zeros(0, dtype=np.intp)
    names = list(cols.sensitive)
    values = table[names[0]] if len(names) == 1 else table[names]
    name, rows = "sensitive (rows without a label)", int(table[_N].sum())
    return encode_groups(values, groups=groups, name=name, compare=False, samples=rows)[0]


def frame_fit_data(
    call: Call, measures: list[MeasureBase], estimator: EstimationMethod, threshold: float, pos_label: Any, groups: Any
) -> FitData:
    """The data of ``"bb"`` or ``"ppi"`` (``estimator``) from one engine pass over ``call.data``.

    ``call.y_true``, ``y_score``, ``sensitive_features`` and ``sample_weight`` name the
    frame's columns (labels missing on unlabeled rows); the ``unlabeled_*`` arguments must
    be None (the unlabeled rows are the frame's rows without a label). ``threshold``,
    ``pos_label`` and ``groups`` are the measures' (declared groups, or None). The rows stay
    in the engine: the data hold their counts and score moments (``FitData.moments``).
    """
    cols = _columns(call)
    bb = isinstance(estimator, BetaBinomial)
    if bb and estimator.prior == "scores":
        raise ValueError(
            "prior='scores' on data= is not computed in the engine yet; pass prior='uniform', "
            "'jeffreys' or (alpha, beta), or collect the rows and pass arrays."
        )
    table = score_table(call.data, cols, threshold)
    moments, index = _moments(table, cols, pos_label, groups, reads_unlabeled=not bb)  # bb reads no unlabeled row
    moments, index = _restricted(moments, index, measures)
    n_l, n_u = int(moments.labeled["n"].sum()), int(moments.unlabeled["n"].sum())
    refuse_no_unlabeled(estimator.name, call, n_u)
    rows = (_InEngine(n_l), _InEngine(n_l), _InEngine(n_u))  # y_true, labeled and unlabeled rows: not read
    return FitData(*rows, index, float(threshold), moments=moments)  # type: ignore[arg-type]


def refuse_no_unlabeled(method: str, call: Call, n_unlabeled: int) -> None:
    """Refuse a method that needs unlabeled rows on a frame without any (rows whose label is missing)."""
    if METHODS[method].unlabeled == "required" and n_unlabeled == 0:
        why = f"rows of data whose {call.y_true!r} is missing (null). Without them use method='bb'."
        raise ValueError(f"method={method!r} needs unlabeled rows: {why}")


@dataclass(frozen=True)
class FrameRows:
    """:func:`frame_rows`: the labeled rows collected from the engine, the unlabeled rows as a score histogram.

    ``labeled`` is a pandas frame of the user's columns; :meth:`unlabeled` turns the
    histogram into :class:`Rows` whose entries stand for ``count`` rows each, once the
    groups of the labeled rows are known.
    """

    labeled: pd.DataFrame
    histogram: pd.DataFrame
    cols: Any

    @property
    def n_unlabeled(self) -> int:
        return int(self.histogram[_N].sum())

    def column(self, name: Any) -> Any:
        """The labeled rows' column(s) ``name`` (a list of names: a frame of them), or None."""
        if name is None:
            return None
        return self.labeled[list(name)] if isinstance(name, list | tuple) else self.labeled[name]

    def unlabeled(self, groups: pd.Index, threshold: float) -> Rows:
        """One entry per (group, prediction, score bin): its rows, mean score and summed weight."""
        hist = self.histogram
        if hist.empty:
            return Rows.empty()
        n, codes = hist[_N].to_numpy(dtype=float), _unlabeled_codes(hist, self.cols, groups)
        weight = None if self.cols.sample_weight is None else hist[_SUM_W].to_numpy(dtype=float)
        scores = hist[SUM_SCORE].to_numpy(dtype=float) / n
        y_pred = hist[_P].to_numpy().astype(np.intp)  # the engine's score >= threshold, row by row
        return Rows(np.clip(scores, 0.0, 1.0), y_pred, codes, weight, count=n, bin_width=1.0 / HISTOGRAM_BINS)


def frame_rows(call: Call, threshold: float) -> FrameRows:
    """The labeled rows of ``call.data`` in memory and its unlabeled rows as a score histogram, from the engine.

    For ``bc``, ``bcr``, ``guaranteed`` and ``auto`` on ``data=``: they read every labeled
    row (a calibration model sampled on them, betting over them), and labeled rows are
    few. The unlabeled rows enter those methods only through sums over rows of a
    function of the score, so they stay in the engine, counted per (group, ``score >=
    threshold``, one of :data:`HISTOGRAM_BINS` equal-width score bins), with the bin's
    summed score; scores at or beyond the calibration's clipping bounds
    (:data:`~._bc.CLIP`) are kept apart within their bin. Each entry enters as its rows
    at the bin's mean score:

    - exact where a function is linear in the score (the guaranteed interval's proxies,
      the selection rate) and where an entry holds one distinct score;
    - otherwise (the calibration map ``f`` of ``bc``/``bcr``) the first-order terms
      cancel around the mean, so an entry of ``n`` rows in a bin of width ``h = 1 /
      HISTOGRAM_BINS`` is off by at most ``n h^2 / 8 max |f''|`` over the bin (the bound
      under the posterior's draws is ``attrs["binning"]``: :func:`~._bc.histogram_error`).
    """
    cols = _columns(call)
    labeled, hist = score_histogram(call.data, cols, threshold, HISTOGRAM_BINS, CLIP)
    _refuse_bad_rows(hist, cols)
    if labeled.empty:
        raise ValueError(f"target={cols.target!r} is missing on every row of data; label some rows.")
    return FrameRows(labeled, hist, cols)


def _moments(
    table: pd.DataFrame, cols: Any, pos_label: Any, groups: Any, reads_unlabeled: bool = True
) -> tuple[ScoreMoments, pd.Index]:
    """The engine's table as per-group arrays: groups from the labeled rows, as in memory."""
    _refuse_bad_rows(table.drop(columns=[_T]), cols)  # missing labels are unlabeled rows, not faults
    missing = table[_T].isna().to_numpy()
    lab, unl = table[~missing].reset_index(drop=True), table[missing].reset_index(drop=True)
    if lab.empty:
        raise ValueError(f"target={cols.target!r} is missing on every row of data; label some rows.")
    codes, index = _group_codes(lab, cols, groups, True)
    t, _, _ = binarize_labels(lab[_T].to_numpy(), lab[_T].to_numpy(), pos_label)
    t, p, n_g = np.asarray(t, dtype=np.intp), lab[_P].to_numpy().astype(np.intp), len(index)
    labeled = _per_cell(lab, (codes * 2 + t) * 2 + p, (n_g, 2, 2))
    try:
        u_codes = _unlabeled_codes(unl, cols, index)
    except ValueError:  # a group with unlabeled rows only: refused where they are read, left out where not (bb)
        if reads_unlabeled:
            raise
        unl, u_codes = unl.iloc[:0], np.zeros(0, dtype=np.intp)
    unlabeled = _per_cell(unl, u_codes * 2 + unl[_P].to_numpy().astype(np.intp), (n_g, 2))
    return ScoreMoments(labeled, unlabeled), index


def _per_cell(table: pd.DataFrame, cell: np.ndarray, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The rows and score sums of the table's entries summed per cell (:data:`~._method.MOMENTS`), in ``shape``."""
    out = cell_sums(cell, [table[col].to_numpy(float) for col in (_N, *SCORE_SUMS)], shape)
    out["n"] = np.rint(out["n"]).astype(np.int64)
    return out


def _restricted(moments: ScoreMoments, index: pd.Index, measures: list[MeasureBase]) -> tuple[ScoreMoments, pd.Index]:
    """``min_group_size`` on labeled rows, the core's rule (as ``_small_groups.restrict_fit_data`` in memory)."""
    plan = small_groups_plan(moments.labeled["n"].sum((1, 2)), index, measures)
    if plan is None:
        return moments, index
    sides = (moments.labeled, moments.unlabeled)  # the group axis first: the plan pools every axis after it
    return ScoreMoments(*({k: plan._pooled(v, v.ndim) for k, v in side.items()} for side in sides)), plan.groups
