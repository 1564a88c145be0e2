"""Frequentist bootstrap intervals for any measure, resampling counts rather than rows.

Groups are resampled separately (a stratified bootstrap: each replicate keeps the
observed group sizes, so every replicate compares the same groups). For unweighted
classification data the confusion counts of group ``g`` are sufficient: a replicate
is one multinomial draw of ``n_g`` samples over the group's four cells, so all
replicates come from one vectorised call, whatever the number of rows. Weighted
data and regression measures are just as exact: rows adding the same values to the
same cell are interchangeable ("atoms"), so a replicate is one multinomial draw over
a group's distinct (cell, weight) atoms. Confusion counts are routed by the one
compiled pass that also gives the point value (:meth:`GroupedSample.cell_moments`: rows,
``w``, ``w**2`` and whether a cell's weights all match, per cell):

- every cell's weights equal (class weights, weights by group and class): a cell's sum
  is its drawn rows times its weight, so the per-cell draw of :func:`_compound_sums`
  is exact and costs what the unweighted bootstrap does;
- weights of few values mixed within cells (frequency weights): exact atoms, counted
  per (cell, weight) in one pass when the probe of the rows shows at most
  ``_FEW_LEVELS`` values;
- continuous weights (every row an atom): the per-cell compound draw (exact cell
  occupancies, each cell's summed weight drawn from its sums of ``w`` and ``w**2``;
  exact for cells of a few rows, approximate beyond the first two moments for larger
  ones).

Regression sums with continuous weights resample the rows (one weighted
``np.bincount`` per replicate). Wrapped
scikit-learn metrics, which need the rows, recompute the measure on each replicate.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._counts import ConfusionStats, ErrorStats
from ._protocol import Measure, PerGroup, prepared
from ._small_sample import RateCounts, rate_counts, score_interval, small_rates
from ._stats import _COMPILED_ROWS, GroupedSample, _as_integer, _compilable, _compiled_kernel
from ._verdicts import VerdictFamily, verdicts
from .registry import as_measures
from .results import DEFAULT_EPS, MeasureResult, check_prob, plain, replicate_se
from .uncertainty import ReplicatesResult, mapped_interval

__all__ = ["BootstrapResult", "bootstrap", "bootstraps"]

#: Why a bootstrap replicate of a measure is undefined, named in the interval's warning.
_CAUSE = "a group's base metric undefined in the replicate, e.g. a rate with zero denominator"


class BootstrapResult(ReplicatesResult):
    """Bootstrap distribution of a measure: an :class:`~skfair_measures.uncertainty.Estimate`.

    The interval of a measure that sits at an edge of its range (an absolute difference, a
    min/max ratio) is the max-t band of its signed parts (each pair's difference, or each
    group's value) over the replicates, mapped through the measure's operations
    (:func:`~skfair_measures.uncertainty.mapped_interval`): it holds the value and reaches 0 for
    identical groups. A signed measure's is the percentile interval of its replicates.

    Attributes
    ----------
    key : str
        Measure key.
    value : float
        The measure on the observed data (also ``estimate``).
    draws : ndarray of shape (n_boot,)
        The measure on each replicate (NaN where a replicate left a rate undefined).
    prob : float
        Default interval probability.
    point : MeasureResult
        The point result on the observed data (per-group values, counts).
    group_draws : dict of str to ndarray of shape (n_boot, n_groups), or None
        Every base metric in every group, on each replicate (what :meth:`verdict` reads).
    groups : pandas.Index or None
        The groups, in the order of the last axis of ``group_draws``.
    group_values : dict of str to ndarray of shape (n_groups,), or None
        Every base metric in every group on the observed data.
    """

    kind = "bootstrap"
    #: Resampling the rows answers for the population they were drawn from.
    target = "population"

    def __init__(
        self,
        point: MeasureResult,
        draws: np.ndarray,
        prob: float = 0.95,
        *,
        group_draws: PerGroup | None = None,
        groups: pd.Index | None = None,
        group_values: PerGroup | None = None,
        joint: object | None = None,
        group_rows: np.ndarray | None = None,
        rate_counts: RateCounts | None = None,
    ) -> None:
        self.point, self.key, self.measure, self.value = point, point.key, point.measure, float(point.value)
        self._draws, self.prob, self._reason = np.asarray(draws, dtype=float), prob, point.reason
        self.groups, n = groups, None if groups is None else len(groups)

        def floats(per_group: PerGroup | None, shape: Any) -> dict[str, np.ndarray] | None:
            return None if per_group is None else {k: np.asarray(v, float).reshape(shape) for k, v in per_group.items()}

        self.group_draws, self.group_values = floats(group_draws, (-1, n)), floats(group_values, n)
        self._joint = object() if joint is None else joint  # results sharing it share their replicates
        # rows (not weights) per group: the verdicts say when groups are too small for their level
        self._group_rows = None if group_rows is None else np.asarray(group_rows, dtype=float).reshape(n)
        # a rate's denominator below SMALL_DENOMINATOR rows in some group: score intervals, not percentiles
        self.rate_counts = rate_counts
        self._score = small_rates(rate_counts) and self.defined and groups is not None

    @property
    def construction(self) -> str:  # type: ignore[override]
        """How :meth:`interval` is made: a score construction, a mapped band, or the percentile bootstrap.

        The score construction for a small rate denominator, the max-t band mapped through the
        operation for a measure at an edge of its range, else ``"percentile bootstrap"``.
        """
        if self._score:
            return self._score_interval(self.prob)[2]
        if self.defined and self._mapped(self.prob) is not None:
            return "bootstrap max-t band, mapped through the operation"
        return "percentile bootstrap"

    def interval(self, prob: float | None = None) -> tuple[float, float]:
        """The percentile interval; with a small rate denominator (see ``construction``) the score interval.

        A group with fewer than ``SMALL_DENOMINATOR`` (400) rows in the denominator of a rate
        the measure reads makes the percentile interval too narrow (62.6% coverage at 20 rows,
        rate 0.05, against a 2,000-row group); then the interval is Newcombe's (a difference of
        two groups), MOVER-Wilson (a ratio) or the Wilson box through the operation
        (:mod:`skfair_measures._small_sample`).
        """
        if not self._score:
            return super().interval(prob)
        return self._score_interval(self.prob if prob is None else prob)[:2]

    def _score_interval(self, prob: float) -> tuple[float, float, str]:
        check_prob(prob)
        lo, hi, how = score_interval(self.measure, self.rate_counts, self.groups, prob)
        return min(lo, self.value), max(hi, self.value), how

    def interval_reason(self, prob: float | None = None) -> str | None:
        return None if self._score else super().interval_reason(prob)

    @property
    def estimate(self) -> float:
        """The measure on the observed data (same as ``value``)."""
        return self.value

    @property
    def by_group(self) -> pd.Series | pd.DataFrame | None:
        return self.point.by_group

    @property
    def counts(self) -> pd.Series | None:
        return self.point.counts

    def _replicate_cause(self) -> str | None:
        return _CAUSE

    def _mapped(self, prob: float) -> tuple[float, float] | None:
        if not self.group_draws or self.group_values is None:
            return None
        return mapped_interval(self.measure, self.group_draws, self.group_values, self.groups, prob)

    @property
    def n(self) -> int | None:  # type: ignore[override]
        """Rows the value used."""
        return None if self._group_rows is None else int(self._group_rows.sum())

    @property
    def se(self) -> float:
        """Bootstrap standard error of the defined replicates (NaN when fewer than two, or the value is undefined)."""
        return replicate_se(self._draws, estimate=self.value)

    def pair_verdicts(self, eps: float = DEFAULT_EPS, prob: float | None = None) -> pd.DataFrame:
        """Per base rate and group pair: ``within`` / ``exceeds`` / ``inconclusive``, jointly at level ``prob``.

        The max-type band over the replicates of every group pair's difference (see
        :func:`skfair_measures.verdicts`, whose rule, columns and ``attrs`` these are); for
        several measures on one set of replicates use :func:`skfair_measures.bootstraps`.
        :meth:`verdict` is the measure's own.

        Parameters
        ----------
        eps : float, default=DEFAULT_EPS
            The tolerance on ``|rate_a - rate_b|``.
        prob : float, optional
            The family-wise level; defaults to the result's ``prob``.

        Examples
        --------
        >>> import skfair_measures as sfm
        >>> g = np.repeat(["a", "b", "c"], 2000)
        >>> y = np.tile([0, 1], 3000)
        >>> wrong = np.random.default_rng(0).uniform(size=g.size) < np.where(g == "c", 0.3, 0.1)
        >>> res = sfm.bootstrap("fairness.acc", y, np.where(wrong, 1 - y, y), sensitive_features=g, random_state=0)
        >>> res.pair_verdicts(0.05)[["group_a", "group_b", "verdict"]].values.tolist()
        [['a', 'b', 'within'], ['a', 'c', 'exceeds'], ['b', 'c', 'exceeds']]
        >>> res.verdict(0.05)
        'exceeds'
        """
        return verdicts([self], eps, self.prob if prob is None else prob)

    def verdict_family(self) -> VerdictFamily:
        """The replicates of every base rate in every group, as :func:`skfair_measures.verdicts` reads them."""
        if self.group_draws is None or self.group_values is None or not self.group_draws:
            raise ValueError(
                f"{self.key}: this bootstrap result holds no per-group replicates of base rates (the measure has "
                "no base metric per group, or the result was built without them); verdicts need "
                "sfm.bootstrap(...) or sfm.bootstraps(...) of a groupwise measure."
            )
        args = (self.key, self.groups, self.group_draws, "bootstrap", self.group_values, self._joint)
        return VerdictFamily(*args, rows=self._group_rows, counts=self.rate_counts)

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"se": plain(self.se), "n_boot": int(self._draws.size)}


def _multinomial_counts(stats: ConfusionStats, n_boot: int, rng: np.random.Generator) -> ConfusionStats:
    # any K x K cells per group (binary or multiclass); replace() keeps the statistics' class
    counts = stats.counts.reshape(len(stats.groups), -1)
    n = counts.sum(axis=1)
    p = np.divide(counts, n[:, None], out=np.zeros_like(counts), where=n[:, None] > 0)
    draws = rng.multinomial(n.astype(np.int64), p, size=(n_boot, len(n)))
    return dataclasses.replace(stats, counts=draws.reshape((n_boot, *stats.counts.shape)).astype(float))


def _stratified_rows(sample: GroupedSample, n_boot: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """The rows of each stratified (by group) bootstrap replicate, sorted.

    The rows are sorted by group once; each replicate then draws uniformly within
    each group's block of the sorted rows.
    """
    order = np.argsort(sample.group_codes, kind="stable")
    sizes = np.bincount(sample.group_codes, minlength=sample.n_groups)
    sorted_codes = sample.group_codes[order]
    start, size = (np.cumsum(sizes) - sizes)[sorted_codes], sizes[sorted_codes]
    for _ in range(n_boot):
        yield np.sort(order[start + np.floor(rng.random(order.size) * size).astype(np.intp)])


def _statistics_kind(measure: Measure) -> str | None:
    """The one sufficient statistic all of a measure's bases read, else None."""
    kinds = {b.statistic for b in measure.bases}
    return kinds.pop() if len(kinds) == 1 else None


def _row_stats(data: GroupedSample, pos: Any, kind: str, n_boot: int, rng: Any) -> ConfusionStats | ErrorStats:
    """Exact stratified replicates of weighted counts (or regression sums), as statistics with a replicate axis."""
    cells = _RowCells(data, pos, kind)
    if cells.kind == "confusion" and not cells.moments()[:, 3].any():
        # every cell's weights are equal (unweighted, class weights, weights by group and class):
        # the per-cell draw is exact and as fast as the unweighted bootstrap, so no atoms are sought
        sums = _compound_sums(cells, n_boot, rng)
    elif (atoms := _Atoms(cells)).cheaper_than_rows(cells.n_rows):
        sums = atoms.replicate_sums(n_boot, rng)
    elif cells.kind == "confusion":
        sums = _compound_sums(cells, n_boot, rng)
    else:
        sums = _resampled_sums(cells, n_boot, rng)
    return cells.stats(sums)


class _RowCells:
    """What each row adds to the statistics: a flat cell index and its values.

    Confusion counts: the cell is (group, true class, predicted class) and the value
    the row's weight. Regression sums: the cell is the group and the values are
    ``w``, ``w |e|`` and ``w e**2``. A replicate's statistics are the sums of the
    values of the rows it draws, cell by cell.
    """

    def __init__(self, data: GroupedSample, pos: Any, kind: str) -> None:
        w = np.ones(data.group_codes.size) if data.sample_weight is None else data.sample_weight
        self.groups, self.n_groups, self.group_codes = data.groups, data.n_groups, data.group_codes
        if kind == "confusion" and data.reads_classes(pos):
            t, p = data.class_codes()
            self.template: ConfusionStats | None = data.multiclass()
            k = len(data.classes())
        elif kind == "confusion":
            t, p = data.labels01(pos)
            self.template, k = None, 2
        else:
            err = np.asarray(data.y_pred, dtype=float) - np.asarray(data.y_true, dtype=float)
            self.kind, self.cells_per_group = "errors", 1
            self.flat = data.group_codes.astype(np.intp, copy=False)
            self.values = np.stack([w, w * np.abs(err), w * err * err], axis=-1)
            return
        self.kind, self.k, self.cells_per_group = "confusion", k, k * k
        self._codes, self.values, self._data, self._pos = (t, p), w[:, None], data, pos

    @functools.cached_property
    def flat(self) -> np.ndarray:
        """The flat cell index of every row (built when a path needs the rows, not for per-cell draws)."""
        t, p = self._codes
        return (self.group_codes.astype(np.intp) * self.k + t) * self.k + p

    @property
    def n_rows(self) -> int:
        return self.group_codes.size

    def moments(self) -> np.ndarray:
        """Rows, summed ``w``, summed ``w**2``, rows unlike the first weight, per cell: shared with the point count."""
        return self._data.cell_moments(self._pos)

    def level_atoms(self, levels: np.ndarray) -> np.ndarray | None:
        """Rows per (cell, weight) ``(cells, levels)`` if every weight is one of the sorted ``levels``, else None."""
        t, p = self._codes
        g, w = self.group_codes, self.values[:, 0]
        n_cells = self.n_groups * self.cells_per_group
        kernel = _compiled_kernel() if g.size >= _COMPILED_ROWS and _compilable(g, t, p) else None
        if kernel is not None:
            out = np.zeros((n_cells, levels.size), dtype=np.int64)
            ok = kernel.level_cells(_as_integer(g), _as_integer(t), _as_integer(p), self.k, w, levels, out)
            return out if ok else None
        at = np.minimum(np.searchsorted(levels, w), levels.size - 1)
        if not np.array_equal(levels[at], w):
            return None
        return np.bincount(self.flat * levels.size + at, minlength=n_cells * levels.size).reshape(n_cells, -1)

    def stats(self, sums: np.ndarray) -> ConfusionStats | ErrorStats:
        """Statistics with a leading replicate axis from sums of shape (n_boot, cells, values)."""
        n_boot = sums.shape[0]
        if self.kind == "errors":
            return ErrorStats(sums.reshape(n_boot, self.n_groups, 3), self.groups)
        counts = sums.reshape(n_boot, self.n_groups, self.k, self.k)
        if self.template is None:
            return ConfusionStats(counts, self.groups)
        return dataclasses.replace(self.template, counts=counts)


class _Atoms:
    """Rows that add the same values to the same cell are interchangeable: "atoms".

    A stratified replicate draws ``n_g`` rows of group ``g``; how many land on each
    atom is multinomial with the atoms' row shares, so a replicate costs one draw
    per atom instead of one per row. This is exact, and fast whenever weights take
    few distinct values (frequency weights); with continuous weights every row is
    its own atom and other draws are made (see the module docstring).
    """

    #: Largest block of multinomial draws (replicates x groups x atoms) held at once.
    block = 4_000_000

    def __init__(self, cells: _RowCells) -> None:
        self.n_groups, self.cells_per_group = cells.n_groups, cells.cells_per_group
        self.width = cells.n_rows  # too many atoms: resample rows
        found = _distinct_atoms(cells)
        if found is None:
            return
        flat, values, mult = found
        order = np.argsort(flat, kind="stable")  # atoms of one group together
        flat, values, mult = flat[order], values[order], mult[order]
        group = flat // cells.cells_per_group
        self.n, self.p, col = _atom_layout(group, mult, cells.n_groups)
        self.width = self.p.shape[1]
        self.values = np.zeros((cells.n_groups, self.width, values.shape[1]))
        self.values[group, col] = values
        self.cell = np.zeros((cells.n_groups, self.width), dtype=np.intp)
        self.cell[group, col] = flat % cells.cells_per_group

    def cheaper_than_rows(self, n_rows: int) -> bool:
        """Whether drawing per atom costs less than drawing per row."""
        return self.n_groups * self.width * 4 <= n_rows

    def replicate_sums(self, n_boot: int, rng: np.random.Generator) -> np.ndarray:
        one_hot = np.zeros((self.n_groups, self.width, self.cells_per_group))
        g, a = np.indices(self.cell.shape)
        one_hot[g, a, self.cell] = 1.0
        per_cell = one_hot[..., None] * self.values[:, :, None, :]  # (groups, atoms, cells, values)
        out = np.empty((n_boot, self.n_groups, self.cells_per_group, self.values.shape[-1]))
        step = max(1, self.block // max(1, self.n_groups * self.width))
        for lo in range(0, n_boot, step):
            hi = min(n_boot, lo + step)
            draws = rng.multinomial(self.n, self.p, size=(hi - lo, self.n_groups)).astype(float)
            out[lo:hi] = np.einsum("bga,gacv->bgcv", draws, per_cell)
        return out.reshape(n_boot, self.n_groups * self.cells_per_group, -1)


def _atom_layout(group: np.ndarray, mult: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One multinomial per group over its atoms: the group's rows ``n``, the shares ``p`` and each atom's column.

    The atoms of a group sit side by side in their order, padded on the left: the last entry
    of a multinomial row takes the remaining probability, so it must be a real atom.
    """
    per = np.bincount(group, minlength=n_groups)
    order = np.argsort(group, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size) - (np.cumsum(per) - per)[group[order]]
    width = int(per.max()) if per.size else 0
    col = width - per[group] + rank
    n = np.bincount(group, weights=mult, minlength=n_groups).astype(np.int64)
    p = np.zeros((n_groups, width))
    p[group, col] = mult / n[group]
    return n, p, col


#: Rows looked at, and distinct values among them, that mark a value column as continuous.
_PROBE_ROWS, _PROBE_DISTINCT = 16_384, 4_096
#: Most distinct weights (in the probe) tried as levels of the (cell, weight) count: a linear scan per row.
_FEW_LEVELS = 32


def _distinct_atoms(cells: _RowCells) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The distinct (cell, values) atoms: their cell, values and rows; None if there are too many to pay.

    Weights of few values (class or frequency weights, seen in a probe of the rows) are
    counted per (cell, weight) in one pass (:meth:`_RowCells.level_atoms`) when every
    row's weight is among the probe's; other columns are factorised unless the probe
    already shows them continuous.
    """
    probe = [np.unique(col) for col in _probe(cells.values).T]
    if cells.kind == "confusion" and probe[0].size <= _FEW_LEVELS:
        table = cells.level_atoms(probe[0])
        if table is not None:
            cell, level = np.nonzero(table)
            return cell, probe[0][level][:, None], table[cell, level]
    if any(u.size > _PROBE_DISTINCT for u in probe):
        return None  # continuous: factorising a million values only to find a million atoms costs tens of ms
    atom_of_row = _atom_codes(cells.flat, cells.values, limit=cells.n_rows // 4)
    if atom_of_row is None:
        return None
    n_atoms = int(atom_of_row.max()) + 1
    first = np.empty(n_atoms, dtype=np.intp)
    first[atom_of_row[::-1]] = np.arange(atom_of_row.size)[::-1]  # a row of each atom
    return cells.flat[first], cells.values[first], np.bincount(atom_of_row, minlength=n_atoms)


def _probe(values: np.ndarray) -> np.ndarray:
    """Evenly spaced rows of ``values``: microseconds to look at, enough to tell few values from many."""
    return values[:: max(1, values.shape[0] // _PROBE_ROWS)]


def _atom_codes(flat: np.ndarray, values: np.ndarray, limit: int) -> np.ndarray | None:
    """Codes of the distinct (cell, values) rows, or None as soon as there are more than ``limit``."""
    codes = flat
    for j in range(values.shape[1]):
        col_codes, uniques = pd.factorize(values[:, j])
        if len(uniques) > limit:
            return None
        codes, atoms = pd.factorize(codes.astype(np.int64) * len(uniques) + col_codes)
        if len(atoms) > limit:
            return None
    return codes.astype(np.intp, copy=False)


def _resampled_sums(cells: _RowCells, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Replicates drawn row by row within groups; the drawn rows' values summed per cell."""
    order = np.argsort(cells.group_codes, kind="stable")
    sizes = np.bincount(cells.group_codes, minlength=cells.n_groups)
    blocks = [(int(start), int(size)) for start, size in zip(np.cumsum(sizes) - sizes, sizes, strict=True) if size]
    n_cells = cells.n_groups * cells.cells_per_group
    # the smallest integer type and one contiguous column per value: the random gathers
    # below are bound by memory traffic, and a uint8 cell index moves 8x fewer bytes
    flat = cells.flat[order].astype(np.min_scalar_type(max(n_cells - 1, 0)))
    columns = np.ascontiguousarray(cells.values[order].T)
    out = np.empty((n_boot, n_cells, columns.shape[0]))
    for b in range(n_boot):
        picks = np.concatenate([start + rng.integers(0, size, size) for start, size in blocks])
        f = flat[picks]
        for j, column in enumerate(columns):
            out[b, :, j] = np.bincount(f, weights=column[picks], minlength=n_cells)
    return out


#: Cells with at most this many rows are resampled row by row in :func:`_compound_sums` (exact).
_EXACT_CELL_ROWS = 32


def _compound_sums(cells: _RowCells, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Replicate weight sums per confusion cell, drawn per cell rather than per row.

    A stratified replicate draws ``n_g`` rows of group ``g`` with replacement. How many
    land in each cell, ``N``, is multinomial over the group's cells, and is drawn
    exactly. Given ``N``, a cell's replicate weight is the sum of ``N`` independent
    draws from the cell's weights: mean ``N * mean(w)`` and variance ``N * var(w)``.
    For a cell of at most ``_EXACT_CELL_ROWS`` rows those draws are made row by row
    (exact); for a larger cell the sum is drawn from the gamma distribution with that
    mean and variance (non-negative, like the sum; a point mass when the cell's weights
    are all equal). So the replicate cell sums have exactly the mean and covariance of
    the row bootstrap's (hence the same standard error to first order for every
    measure, which is a smooth function of them), and only their shape beyond the
    second moment is approximated, by a distribution whose skewness vanishes as
    ``1/sqrt(N)`` as the sum's own does. Cost: one multinomial and one gamma draw per
    replicate and cell, whatever the number of rows (rows resampled: ``n`` per replicate).
    """
    n_cells, w = cells.n_groups * cells.cells_per_group, cells.values[:, 0]
    size, total, total_sq, unlike = cells.moments().T
    mean, square = (np.divide(x, size, out=np.zeros(n_cells), where=size > 0) for x in (total, total_sq))
    var = np.maximum(square - mean**2, 0.0)
    var[unlike == 0] = 0.0  # all the cell's weights equal: a point mass, exactly
    per_group = size.reshape(cells.n_groups, cells.cells_per_group)
    n = per_group.sum(axis=1)
    p = np.divide(per_group, n[:, None], out=np.zeros_like(per_group), where=n[:, None] > 0)
    occupancy = rng.multinomial(n.astype(np.int64), p, size=(n_boot, cells.n_groups)).reshape(n_boot, n_cells)
    spread = var > 0
    shape = np.where(spread, occupancy * np.divide(mean**2, var, out=np.zeros(n_cells), where=spread), 0.0)
    scale = np.divide(var, mean, out=np.ones(n_cells), where=spread & (mean > 0))
    sums = np.where(spread, rng.gamma(shape, scale), occupancy * mean)
    small = np.flatnonzero((size > 0) & (size <= _EXACT_CELL_ROWS) & spread)
    if small.size:
        sums[:, small] = _exact_cell_sums(cells.flat, w, small, occupancy[:, small], rng)
    return sums[..., None]


def _exact_cell_sums(
    flat: np.ndarray, w: np.ndarray, small: np.ndarray, occupancy: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Sums of ``occupancy[b, j]`` rows drawn with replacement from cell ``small[j]``, for every replicate ``b``."""
    position = np.full(int(flat.max()) + 1, -1)
    position[small] = np.arange(small.size)
    rows = np.flatnonzero(position[flat] >= 0)
    local = position[flat[rows]]
    order = np.argsort(local, kind="stable")
    rows, local = rows[order], local[order]
    size = np.bincount(local, minlength=small.size)
    start = np.cumsum(size) - size
    slot = np.repeat(np.arange(occupancy.size), occupancy.ravel())  # one entry per drawn row
    cell = slot % small.size
    picks = start[cell] + np.floor(rng.random(slot.size) * size[cell]).astype(np.intp)
    return np.bincount(slot, weights=w[rows[picks]], minlength=occupancy.size).reshape(occupancy.shape)


def _recomputed(measures: list[Measure], samples: list[GroupedSample], n_boot: int, rng: Any) -> list[Replicates]:
    """Replicates of each measure on the same resampled rows, recomputed from the rows (any measure).

    The samples hold the same rows in the same groups (:func:`_same_rows`); each replicate
    draws the rows once, and every measure is evaluated on them.
    """
    draws = np.empty((len(measures), n_boot))
    per_group = [{b.name: np.empty((n_boot, samples[0].n_groups)) for b in m.bases} for m in measures]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b, rows in enumerate(_stratified_rows(samples[0], n_boot, rng)):
            for j, (m, sample) in enumerate(zip(measures, samples, strict=True)):
                replicate = sample.subset(rows, keep_classes=True)
                draws[j, b] = m.evaluate_sample(replicate).value
                for name, values in _group_values(m, replicate).items():
                    per_group[j][name][b] = values
    return [Replicates(draws[j], per_group[j]) for j in range(len(measures))]


@dataclasses.dataclass(frozen=True)
class Replicates:
    """A measure's replicates and those of its base metrics in every group (also the engines' bootstrap's)."""

    draws: np.ndarray
    group_draws: PerGroup

    @classmethod
    def of_stats(cls, measure: Measure, stats: Any) -> Replicates:
        """Through the measure's operations, keeping the per-group values they start from."""
        values, overall, groups = measure.group_values_from_stats(stats)
        return cls(np.asarray(measure.from_group_values(values, groups=groups, overall=overall), dtype=float), values)


def _group_values(measure: Measure, sample: GroupedSample) -> dict[str, np.ndarray]:
    """Every base metric of the measure in every group of the sample (the point estimate's own values)."""
    data, pos = prepared(sample, measure.inputs)
    return {b.name: np.asarray(b.group_values(data, pos)[0], dtype=float) for b in measure.bases}


def _result(rep: Replicates, prob: float, sample: GroupedSample, measure: Measure, joint: object) -> BootstrapResult:
    """The bootstrap result of ``measure`` on ``sample`` from its replicates ``rep``."""
    codes, (data, pos) = sample.group_codes, prepared(sample, measure.inputs)
    counts = rate_counts(measure, data, pos) if _statistics_kind(measure) == "confusion" else None
    rows = np.bincount(codes[codes >= 0], minlength=sample.n_groups)
    values, point = _group_values(measure, sample), measure.evaluate_sample(sample)
    groupwise = {"groups": sample.groups, "group_draws": rep.group_draws, "group_values": values, "joint": joint}
    return BootstrapResult(point, rep.draws.ravel(), prob, group_rows=rows, rate_counts=counts, **groupwise)


def check_replicates(n_boot: Any, prob: Any) -> None:
    """Refuse fewer than 2 replicates or an interval probability outside (0, 1), naming the argument."""
    if not isinstance(n_boot, int | np.integer) or n_boot < 2:
        raise ValueError(f"n_boot={n_boot!r}; pass at least 2 replicates (typically 1000).")
    check_prob(prob)


def bootstrap(
    measure: Measure | str,
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any = None,
    sample_weight: Any = None,
    n_boot: int = 1000,
    prob: float = 0.95,
    random_state: Any = None,
) -> BootstrapResult:
    """Bootstrap distribution and percentile interval of a measure.

    Parameters
    ----------
    measure : Measure or str
        Any measure (or its registry key): count-based, regression, composite, constraint or wrapped.
    y_true, y_pred, sensitive_features, sample_weight
        As for calling the measure.
    n_boot : int, default=1000
        Number of replicates.
    prob : float, default=0.95
        Interval probability.
    random_state : int or numpy Generator, optional

    Returns
    -------
    BootstrapResult

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 2000); yhat = rng.integers(0, 2, 2000); a = rng.integers(0, 2, 2000)
    >>> res = sfm.bootstrap(sfm.msr("fairness.tpr"), y, yhat, sensitive_features=a, n_boot=500, random_state=0)
    >>> lo, hi = res.interval()
    >>> bool(lo <= res.value <= hi)
    True
    """
    keywords = {"sensitive_features": sensitive_features, "sample_weight": sample_weight, "random_state": random_state}
    (result,) = bootstraps([measure], y_true, y_pred, n_boot=n_boot, prob=prob, **keywords).values()
    return result


def bootstraps(
    measures: Sequence[Measure | str],
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any = None,
    sample_weight: Any = None,
    n_boot: int = 1000,
    prob: float = 0.95,
    random_state: Any = None,
) -> dict[str, BootstrapResult]:
    """Bootstrap several measures on the same replicates: joint, so their verdicts are simultaneous.

    Each replicate resamples the rows once (stratified by group, as :func:`bootstrap`),
    and every measure is computed on it, so :func:`skfair_measures.verdicts` can read
    the results together: one max-type band over every base rate of every measure and
    every pair of groups. Unweighted classification measures draw the replicate from the
    distinct combinations of their confusion cells (one multinomial per group, whatever
    the number of rows, as :func:`bootstrap` does for one measure); other measures
    (weights, regression, wrapped scikit-learn metrics) are recomputed on the resampled
    rows, which costs a pass over the rows per replicate and measure.

    Parameters
    ----------
    measures : list of Measure or str
        The measures (or registry keys); they must read the same groups.
    y_true, y_pred, sensitive_features, sample_weight, n_boot, prob, random_state
        As for :func:`bootstrap`.

    Returns
    -------
    dict of str to BootstrapResult
        By measure key, in the order given.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 30000); yhat = rng.integers(0, 2, 30000); a = rng.integers(0, 3, 30000)
    >>> res = sfm.bootstraps(["fairness.tpr", "fairness.fpr"], y, yhat, sensitive_features=a, random_state=0)
    >>> table = sfm.verdicts(res, eps=0.05)  # one band over 2 rates x 3 pairs of groups
    >>> len(table), sorted(set(table["verdict"]))
    (6, ['within'])
    """
    check_replicates(n_boot, prob)
    ms = as_measures(list(measures))  # refuses two measures of one key
    if not ms:
        raise ValueError("measures=[]; pass one or more measures (or registry keys).")
    rng = np.random.default_rng(random_state)
    inputs = {"sensitive_features": sensitive_features, "sample_weight": sample_weight}
    samples = [m.validate(y_true, y_pred, **inputs) for m in ms]
    _same_rows(ms, samples)
    if len(ms) == 1:
        reps = [_replicates(ms[0], samples[0], n_boot, rng)]
    elif sample_weight is None and all(_statistics_kind(m) == "confusion" for m in ms):
        reps = _joint_counts(ms, samples, n_boot, rng)
    else:
        reps = _recomputed(ms, samples, n_boot, rng)
    joint = object()
    return {m.key: _result(r, prob, s, m, joint) for m, r, s in zip(ms, reps, samples, strict=True)}


def _replicates(measure: Measure, sample: GroupedSample, n_boot: int, rng: np.random.Generator) -> Replicates:
    """One measure's replicates, from its sufficient statistics where it has one kind (exact), else recomputed."""
    data, pos = prepared(sample, measure.inputs)
    kind = _statistics_kind(measure)
    if kind == "confusion" and sample.sample_weight is None:
        return Replicates.of_stats(measure, _multinomial_counts(data.confusion(pos), n_boot, rng))
    if kind is not None:
        return Replicates.of_stats(measure, _row_stats(data, pos, kind, n_boot, rng))
    (rep,) = _recomputed([measure], [sample], n_boot, rng)  # wrapped scikit-learn metrics, or mixed statistics
    return rep


def _same_rows(measures: list[Measure], samples: list[GroupedSample]) -> None:
    """Refuse measures that read different rows or groups (their replicates could not be the same rows)."""
    first = samples[0]
    for m, s in zip(measures[1:], samples[1:], strict=True):
        if not (s.groups.equals(first.groups) and np.array_equal(s.group_codes, first.group_codes)):
            raise ValueError(
                f"measures: {m.key} reads other groups or rows than {measures[0].key} (a different groups=, "
                "min_group_size= or small_groups= setting); bootstrap measures jointly only with the same "
                "groups, or each alone with sfm.bootstrap()."
            )


def _joint_counts(measures: list[Measure], samples: list[GroupedSample], n_boot: int, rng: Any) -> list[Replicates]:
    """Replicate confusion counts of every measure, from one multinomial per group over their joint cells.

    A row's cells under every measure's labelling (thresholds and positive classes may
    differ) form its atom; a replicate draws ``n_g`` atoms of group ``g`` with the
    atoms' shares, and each measure's counts are the sums of its cells over the atoms:
    the stratified bootstrap of every measure at once, exact, at the cost of one draw per
    (group, atom).
    """
    cells, which, index = [], [], {}
    for m, s in zip(measures, samples, strict=True):
        data, pos = prepared(s, m.inputs)
        key = (id(data), repr(pos))  # measures of one labelling (threshold, positive class) share their cells
        if key not in index:
            index[key] = len(cells)
            cells.append(_RowCells(data, pos, "confusion"))
        which.append(index[key])
    sizes = [c.n_groups * c.cells_per_group for c in cells]
    if float(np.prod(np.asarray(sizes, dtype=float))) >= 2.0**62:
        return _recomputed(measures, samples, n_boot, rng)  # too many labellings to code an atom in 64 bits
    code = np.zeros(cells[0].n_rows, dtype=np.int64)
    for c, size in zip(cells, sizes, strict=True):
        code = code * size + c.flat
    atoms, first, mult = np.unique(code, return_index=True, return_counts=True)
    group = samples[0].group_codes[first].astype(np.intp)
    n, p, col = _atom_layout(group, mult, samples[0].n_groups)
    counts = rng.multinomial(n, p, size=(n_boot, p.shape[0]))[:, group, col].astype(float)  # (n_boot, atoms)
    out = []
    for c, size in zip(cells, sizes, strict=True):
        onehot = np.zeros((atoms.size, size))
        onehot[np.arange(atoms.size), c.flat[first]] = 1.0
        out.append(c.stats((counts @ onehot)[..., None]))
    return [Replicates.of_stats(m, out[j]) for m, j in zip(measures, which, strict=True)]
