"""Poisson bootstrap intervals from a data frame of any engine, in the same one pass.

The Poisson bootstrap (as in TensorFlow Fairness Indicators) gives every row an
independent Poisson(1) multiplicity per replicate, so replicates are sums the engine can
compute in the pass that gives the counts. Two cases:

- **Unweighted confusion counts**: the sum of ``n`` independent Poisson(1) multiplicities
  is Poisson(``n``), so the replicate count of a cell holding ``n`` rows is exactly a
  Poisson(``n``) draw. The replicates are drawn locally from the one table of counts:
  the same distribution as per-row multiplicities, with no extra engine work.
- **Weights or regression errors**: a replicate sum ``sum_i k_i w_i`` depends on each
  row's weight (and error), not only on the cell's total, so the multiplicities are drawn
  per row, in the engine: per partition on pandas and Dask (``_native``), ``n_boot``
  reweighted bincounts per partition.

Unlike :func:`skfair_measures.bootstrap` (stratified: group sizes fixed), the
Poisson bootstrap lets group sizes vary between replicates, as resampling rows does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import narwhals as nw
import numpy as np

from .._bootstrap import BootstrapResult, check_replicates
from .._stats import ConfusionStats, ErrorStats
from ..measures import Measure
from ..registry import as_measures
from . import _native
from ._aggregate import _SUM_AE, _SUM_SE, _SUM_W
from ._compute import _Engine, _statistics_of, local_stats
from ._frames import as_lazy, check_columns

__all__ = ["poisson_bootstrap"]

_PER_ROW_ENGINES = (nw.Implementation.PANDAS, nw.Implementation.DASK)
_NO_PER_ROW = (
    "the Poisson bootstrap of {what} draws a multiplicity per row, which runs on pandas and Dask frames; "
    "data is a {engine} frame. Compute it unweighted on confusion counts (no extra pass), or convert the "
    "columns to a Dask DataFrame (e.g. dask.dataframe.from_pandas, or dd.read_parquet on the same files)."
)


def poisson_bootstrap(
    data: Any, target: str, prediction: str, sensitive: str | Sequence[str], measure: Measure | str, *,
    sample_weight: str | None = None, n_boot: int = 1000, prob: float = 0.95, random_state: Any = None,
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
        Column of non-negative weights (then per-row multiplicities: pandas and Dask).
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
    cols = check_columns(as_lazy(data), target, prediction, sensitive, sample_weight)
    engine = _Engine(data, cols)
    point = m.evaluate_stats({kind: engine.stats(kind, m.inputs, m.key) for kind in kinds})
    rng = np.random.default_rng(random_state)
    if kinds == ("confusion",) and sample_weight is None:
        counts = engine.stats("confusion", m.inputs, m.key)
        replicated = dataclasses.replace(counts, counts=rng.poisson(counts.counts, (n_boot, *counts.counts.shape)))
        draws = m.from_stats(replicated)
    else:
        draws = m.from_stats(_per_row_replicates(engine, m, kinds, n_boot, int(rng.integers(2**63))))
    return BootstrapResult(point, np.asarray(draws, dtype=float).reshape(n_boot), prob)


def _per_row_replicates(engine: _Engine, m: Measure, kinds: tuple[str, ...], n_boot: int, seed: int) -> dict:
    """Replicate statistics from per-row Poisson multiplicities drawn in the engine (same seed for every pass)."""
    impl = engine.frame.implementation
    if impl not in _PER_ROW_ENGINES:
        what = "weighted data" if engine.cols.sample_weight is not None else "regression errors"
        raise NotImplementedError(_NO_PER_ROW.format(what=what, engine=impl.value))
    cols = dataclasses.replace(engine.cols, sample_weight=engine.cols.sample_weight or "(rows)")
    out = {}
    for kind in kinds:
        threshold = None if kind == "errors" else m.inputs.threshold
        run = _native.dask_table if impl is nw.Implementation.DASK else _native.pandas_table
        data = nw.to_native(engine.frame) if impl is nw.Implementation.DASK else engine.data
        table = run(data, engine.cols, kind, threshold, replicates=(n_boot, seed))
        names = (_SUM_W, _SUM_AE, _SUM_SE) if kind == "errors" else (_SUM_W,)
        sums = {name: table[[_native.replicate_name(name, b) for b in range(n_boot)]].to_numpy() for name in names}
        narrow = table[[c for c in table.columns if "#" not in c]]
        # each replicate: the small table with its replicate sums in place of the observed ones
        views = (narrow.assign(**{k: v[:, b] for k, v in sums.items()}) for b in range(n_boot))
        stacked = _stack([local_stats(view, cols, kind, m.inputs) for view in views])
        plan = engine.small_groups(kind, m.inputs, m.key)  # decided on the observed data, as the point estimate
        out[kind] = stacked if plan is None else plan.stats(stacked)
    return out


def _stack(replicates: list[ConfusionStats | ErrorStats]) -> ConfusionStats | ErrorStats:
    """Replicates stacked on a leading axis (same groups and classes: they come from one table)."""
    first = replicates[0]
    if isinstance(first, ErrorStats):
        return dataclasses.replace(first, sums=np.stack([r.sums for r in replicates]))
    return dataclasses.replace(first, counts=np.stack([r.counts for r in replicates]))
