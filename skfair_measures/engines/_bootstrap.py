"""Poisson bootstrap intervals from a data frame of any engine, in the same one pass.

The Poisson bootstrap (as in TensorFlow Fairness Indicators) gives every row an
independent Poisson(1) multiplicity per replicate, so replicates are sums the engine can
compute in the pass that gives the counts. Two cases:

- **Unweighted confusion counts**: the sum of ``n`` independent Poisson(1) multiplicities
  is Poisson(``n``), so the replicate count of a cell holding ``n`` rows is exactly a
  Poisson(``n``) draw. The replicates are drawn locally from the one table of counts:
  the same distribution as per-row multiplicities, with no extra engine work.
- **Weights or regression errors on pandas and Dask**: a replicate sum ``sum_i k_i w_i``
  depends on each row's weight (and error), not only on the cell's total, so the
  multiplicities are drawn per row, in the engine: per partition (``_native``),
  ``n_boot`` reweighted bincounts per partition. Exact.
- **Weighted confusion counts on polars, DuckDB, Spark and the other engines**: the
  replicate weight of a cell is a compound Poisson sum: ``N ~ Poisson(n)`` draws (exact)
  from the cell's ``n`` weights. Given ``N``, the sum is drawn from the gamma with its
  mean and variance, ``N`` times the cell's mean and variance of ``w``, which the engine
  gives in the same grouped pass as sums of ``w`` and ``w**2``. The replicate cell sums
  then have exactly the mean (``sum w``) and variance (``sum w**2``) of per-row
  multiplicities, and cells are independent in both, so the standard error is the
  per-row one to first order; only the shape of a cell's sum beyond its second moment
  is approximated (its skewness vanishes as ``1/sqrt(N)``). Regression errors on those
  engines are refused (three correlated sums per row: a Dask frame draws them per row).

Unlike :func:`skfair_measures.bootstrap` (stratified: group sizes fixed), the
Poisson bootstrap lets group sizes vary between replicates, as resampling rows does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import narwhals as nw
import numpy as np
import pandas as pd

from .._bootstrap import BootstrapResult, Replicates, check_replicates
from .._counts import ConfusionStats, ErrorStats
from ..measures import Measure
from ..registry import as_measures
from . import _native
from ._aggregate import _N, _P, _SUM_AE, _SUM_SE, _SUM_W, _SUM_W2, _T, confusion_table, local_stats
from ._compute import _Engine, _statistics_of
from ._frames import as_lazy, check_columns

__all__ = ["poisson_bootstrap"]

_PER_ROW_ENGINES = (nw.Implementation.PANDAS, nw.Implementation.DASK)
_NO_PER_ROW = (
    "the Poisson bootstrap of {what} draws a multiplicity per row, which runs on pandas and Dask frames; "
    "data is a {engine} frame. Classification measures (confusion counts, weighted or not) bootstrap on every "
    "engine; for regression measures convert the columns to a Dask DataFrame (e.g. "
    "dask.dataframe.from_pandas, or dd.read_parquet on the same files)."
)


def poisson_bootstrap(
    data: Any,
    target: str,
    prediction: str,
    sensitive: str | Sequence[str],
    measure: Measure | str,
    *,
    sample_weight: str | None = None,
    n_boot: int = 1000,
    prob: float = 0.95,
    random_state: Any = None,
) -> BootstrapResult:
    """Poisson bootstrap distribution and percentile interval of a measure, computed where the data lives.

    Parameters
    ----------
    data : DataFrame of any supported engine
    target, prediction : str
        Columns with the true labels and the predictions (scores with ``threshold=``).
    sensitive : str or list of str
        Sensitive column(s).
    measure : Measure or str
        A measure computable from sufficient statistics.
    sample_weight : str, optional
        Column of non-negative weights: per-row multiplicities on pandas and Dask, compound
        Poisson draws per cell from the sums of ``w`` and ``w**2`` on the other engines.
    n_boot, prob, random_state
        As for :func:`skfair_measures.bootstrap`.

    Returns
    -------
    BootstrapResult

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(0)
    >>> df = pl.DataFrame({"y": rng.integers(0, 2, 4000), "yhat": rng.integers(0, 2, 4000),
    ...                    "g": rng.choice(["a", "b"], 4000)})
    >>> res = poisson_bootstrap(df.lazy(), "y", "yhat", "g", "fairness.tpr", n_boot=500, random_state=0)
    >>> lo, hi = res.interval()
    >>> bool(lo <= res.value <= hi)
    True
    """
    check_replicates(n_boot, prob)
    (m,) = as_measures([measure])
    kinds = _statistics_of(m)
    engine = _Engine(data, check_columns(as_lazy(data), target, prediction, sensitive, sample_weight))
    observed = {kind: engine.stats(kind, m.inputs, m.key) for kind in kinds}
    point, rng = m.evaluate_stats(observed), np.random.default_rng(random_state)
    if kinds == ("confusion",) and sample_weight is None:
        counts = observed["confusion"]
        replicated = dataclasses.replace(counts, counts=rng.poisson(counts.counts, (n_boot, *counts.counts.shape)))
        rep = Replicates.of_stats(m, replicated)
    else:
        rep = Replicates.of_stats(m, _per_row_replicates(engine, m, kinds, n_boot, int(rng.integers(2**63))))
    values, _, groups = m.group_values_from_stats(observed)
    # unweighted, the counts are the rows per group (the verdicts' small-group caution reads them); weighted, the
    # engine's sums are weights, not rows, and the caution is not given
    rows = None if sample_weight is not None else np.asarray(point.counts.reindex(groups), dtype=float)
    by_group = {"group_draws": rep.group_draws, "groups": groups, "group_values": values, "group_rows": rows}
    return BootstrapResult(point, rep.draws.reshape(n_boot), prob, **by_group)


def _per_row_replicates(engine: _Engine, m: Measure, kinds: tuple[str, ...], n_boot: int, seed: int) -> dict:
    """Replicate statistics: per-row multiplicities (pandas, Dask) or per-cell compound draws (other engines)."""
    impl = engine.frame.implementation
    if impl not in _PER_ROW_ENGINES and kinds != ("confusion",):
        what = "regression errors" if "errors" in kinds else "weighted data"
        raise NotImplementedError(_NO_PER_ROW.format(what=what, engine=impl.value))
    cols = dataclasses.replace(engine.cols, sample_weight=engine.cols.sample_weight or "(rows)")
    out = {}
    for kind in kinds:
        threshold = None if kind == "errors" else m.inputs.threshold
        found = _row_multiplicities(engine, kind, threshold, n_boot, seed)  # None: not pandas or Dask
        narrow, sums = _compound_poisson(engine, threshold, n_boot, seed) if found is None else found
        if kind == "confusion" and len(narrow) < n_boot:
            stacked = _linear_replicates(narrow, cols, m.inputs, sums[_SUM_W])
        else:
            # each replicate: the small table with its replicate sums in place of the observed ones
            views = (narrow.assign(**{k: v[:, b] for k, v in sums.items()}) for b in range(n_boot))
            stacked = _stack([local_stats(view, cols, kind, m.inputs) for view in views])
        plan = engine.small_groups(kind, m.inputs, m.key)  # decided on the observed data, as the point estimate
        out[kind] = stacked if plan is None else plan.stats(stacked)
    return out


def _linear_replicates(table: pd.DataFrame, cols: Any, inputs: Any, weights: np.ndarray) -> ConfusionStats:
    """Replicate confusion counts for replicate weights ``(table rows, n_boot)``, through one map per table row.

    The counts are a linear function of the table's weight column (each table row adds its
    weight to one cell, by the core's label and group rules), so the counts of table row
    ``r`` alone, found once per row, map every replicate's weights at once: as many local
    passes as the table has rows instead of one per replicate.
    """
    basis = np.eye(len(table))
    per_row = np.stack([local_stats(table.assign(**{_SUM_W: row}), cols, "confusion", inputs).counts for row in basis])
    counts = np.tensordot(weights.T, per_row, axes=1)  # (n_boot, groups, K, K)
    return dataclasses.replace(local_stats(table, cols, "confusion", inputs), counts=counts)


def _row_multiplicities(engine: _Engine, kind: str, threshold: float | None, n_boot: int, seed: int) -> tuple | None:
    """The engine's table and its replicate sums, from a Poisson(1) multiplicity per row (None unless pandas, Dask)."""
    table = _native.native_table(engine.frame, engine.cols, kind, threshold, replicates=(n_boot, seed))
    if table is None:
        return None
    names = (_SUM_W, _SUM_AE, _SUM_SE) if kind == "errors" else (_SUM_W,)
    sums = {name: table[[_native.replicate_name(name, b) for b in range(n_boot)]].to_numpy() for name in names}
    return table[[c for c in table.columns if "#" not in c]], sums


def _compound_poisson(engine: _Engine, threshold: float | None, n_boot: int, seed: int) -> tuple:
    """The engine's confusion table (with sums of squared weights) and compound Poisson replicate weights.

    Per cell of ``n`` rows: ``N ~ Poisson(n)``, then the sum of ``N`` draws of the cell's
    weights from the gamma with mean ``N * mean(w)`` and variance ``N * var(w)`` (a point
    mass ``N * w`` when the cell's weights are all equal). See the module docstring.
    """
    keys = [*engine.cols.sensitive, _T, _P]  # the engine's row order varies: draws go to cells in a fixed order
    table = confusion_table(engine.frame, engine.cols, threshold, squares=True).sort_values(keys, ignore_index=True)
    n = table[_N].to_numpy(dtype=float)
    mean = np.divide(table[_SUM_W].to_numpy(dtype=float), n, out=np.zeros_like(n), where=n > 0)
    square = np.divide(table[_SUM_W2].to_numpy(dtype=float), n, out=np.zeros_like(n), where=n > 0)
    var = np.maximum(square - mean**2, 0.0)
    var[var <= 1e-12 * mean**2] = 0.0  # equal weights up to rounding
    spread, rng = var > 0, np.random.default_rng(seed)
    occupancy = rng.poisson(n, (n_boot, n.size)).astype(float)
    shape = occupancy * np.divide(mean**2, var, out=np.zeros_like(n), where=spread)
    scale = np.divide(var, mean, out=np.ones_like(n), where=spread & (mean > 0))
    draws = np.where(spread, rng.gamma(shape, scale), occupancy * mean)
    return table.drop(columns=[_SUM_W2]), {_SUM_W: draws.T}


def _stack(replicates: list[ConfusionStats | ErrorStats]) -> ConfusionStats | ErrorStats:
    """Replicates stacked on a leading axis (same groups and classes: they come from one table)."""
    field = "sums" if isinstance(replicates[0], ErrorStats) else "counts"
    return dataclasses.replace(replicates[0], **{field: np.stack([getattr(r, field) for r in replicates])})
