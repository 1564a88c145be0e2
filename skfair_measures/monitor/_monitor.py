"""``FairnessMonitor``: disparities of a deployed model over batches, with anytime-valid alarms.

State: for every distinct need of the measures (labels or predictions alone, threshold,
positive class) the cumulative confusion counts per group, the counts of the last
batches (the window), and the betting sequences of the group rates (the cumulative box
and one box restarted at every batch, see :mod:`._sequences`); the rows still waiting
for their labels (joined by id); the alarms; a trace of what :meth:`status` showed at
every step. All of it saves to one JSON file (written to a temporary file, then
renamed over the old one, so a crash never leaves a half-written state) and merges
across workers that monitor disjoint rows of the same batches.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import json
import os
import uuid
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._counts import ConfusionStats
from .._files import read_text, write_atomically
from .._protocol import MeasureBase
from ..base import RatioRoles, ratio_roles
from ..registry import as_measures, msr
from ..results import check_prob, plain
from ..uncertainty import Estimate, summarize
from ._batches import ID, PRED, TRUE, Batch, as_batch, collect_columns, count, label_of
from ._drift import DriftTest, drift_plan
from ._sequences import Box, box_alpha, cells

__all__ = ["FORMAT", "FairnessMonitor"]

#: Names the state files of this class (and their version: 3 saves the level as ``prob``; 2 saved it as
#: ``alpha = 1 - prob``, each box's sequences as one stack; 1, one sequence per rate and group. All are read).
FORMAT, VERSION = "skfair-measures monitor state", 3
_READS = (1, 2, 3)

#: What a state file holds (a file without one of them is refused, naming them).
_KEYS = tuple("format version settings step times groups group_names needs pending alarms trace".split())
_SETTINGS = ("measures", "eps", "window", "restarts", "grid_size")  # and the level: prob (or alpha, versions 1-2)

_UNSUPPORTED = (
    "{key} cannot be monitored: {why}. The monitor follows measures whose bases are rates of binary "
    "confusion counts (tpr, fpr, selection_rate, ppv, acc, ...) compared by a named operation."
)


def _label_free(roles: RatioRoles) -> bool:
    """Whether a rate reads the predictions alone (its cells do not depend on the true label)."""
    return bool((roles.num[0] == roles.num[1]).all() and (roles.den[0] == roles.den[1]).all())


def _roles(m: MeasureBase) -> dict[str, RatioRoles]:
    """The ratio roles of every base of ``m``; refused (naming why) unless the monitor can follow the measure."""
    try:
        out = {}
        for base in m.bases:
            if base.statistic != "confusion":
                raise TypeError(f"its base {base.name!r} is not a confusion-count rate")
            out[base.name] = roles = ratio_roles(base)
            if not roles.simple:
                raise TypeError(f"its base {base.name!r} is not one ratio of counts")
        if not out:
            raise TypeError("it has no base rate (it reads the rows)")
        low = {name: np.array([0.2, 0.3]) for name in out}  # the interval of the measure from a box of group rates
        high = {k: v + 0.1 for k, v in low.items()}
        m.bounds_from_group_values(low, high, groups=pd.Index(["a", "b"]), overall=dict.fromkeys(out, (0.2, 0.4)))
    except TypeError as exc:
        raise TypeError(_UNSUPPORTED.format(key=m.key, why=str(exc).rstrip("."))) from None
    return out


@dataclass(eq=False)
class _Need:
    """The state of one distinct need: counts, window and sequences."""

    labeled: bool
    threshold: float | None
    pos_label: Any
    roles: dict[str, RatioRoles]
    total: np.ndarray = field(default_factory=lambda: np.zeros((0, 2, 2)))
    history: list[tuple[int, np.ndarray]] = field(default_factory=list)  # (step, counts) of the window
    boxes: list[Box] = field(default_factory=list)  # boxes[0]: the cumulative one

    def rate_name(self, name: str) -> str:
        """``name`` of a rate of this need as ``group_status()`` shows it: ``tpr``, or ``tpr (threshold=0.3)``."""
        own = [f"{k}={v!r}" for k, v in (("threshold", self.threshold), ("pos_label", self.pos_label)) if v is not None]
        return f"{name} ({', '.join(own)})" if own else name

    def window(self, n_groups: int) -> np.ndarray:
        """The counts of the window's steps, for ``n_groups`` groups."""
        return sum((_pad(c, n_groups) for _, c in self.history), np.zeros((n_groups, 2, 2)))

    def to_dict(self) -> dict[str, Any]:
        history = [[s, c.tolist()] for s, c in self.history]
        return {"total": self.total.tolist(), "history": history, "boxes": [b.to_dict() for b in self.boxes]}

    @property
    def id(self) -> str:
        kind = "labels" if self.labeled else "predictions"
        return f"{kind}|threshold={self.threshold!r}|pos_label={self.pos_label!r}"


def _no_alarm() -> dict[str, Any]:
    """An alarm's record: raised at ``step`` (``e_value`` then) on the rows since ``since``; ``regime``, ``moves``."""
    return {"step": None, "since": None, "e_value": None, "regime": None, "moves": []}


def _disjoint(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] > b[1] or a[1] < b[0]


def _beyond(bounds: tuple[float, float], eps: float, worse_up: bool) -> bool:
    """Whether an interval lies wholly on the wrong side of the tolerance."""
    return bounds[0] > eps if worse_up else bounds[1] < eps


def _pad(counts: np.ndarray, n_groups: int) -> np.ndarray:
    return counts if counts.shape[0] == n_groups else np.concatenate([counts, np.zeros((n_groups - len(counts), 2, 2))])


_FLOATS = ("value", "lower", "upper", "overall_value", "window_value", "e_value", "alarm_e_value")


#: How values other than JSON's own (group labels, ids, predictions of rows waiting for labels) are saved:
#: ``{tag: text}``, read back by the tag's constructor. A tuple is an intersectional group.
_TAGGED: dict[str, tuple[type | tuple[type, ...], Callable[[Any], Any], Callable[[Any], Any]]] = {
    "datetime": (datetime.datetime, lambda v: pd.Timestamp(v).isoformat(), pd.Timestamp),  # pd.Timestamp too
    "date": (datetime.date, lambda v: v.isoformat(), datetime.date.fromisoformat),
    "timedelta": (datetime.timedelta, lambda v: pd.Timedelta(v).value, lambda v: pd.Timedelta(int(v))),
    "uuid": (uuid.UUID, str, uuid.UUID),
    "decimal": (decimal.Decimal, str, decimal.Decimal),
    "float": (float, repr, float),  # NaN and infinities (JSON has none)
}


def _json_label(label: Any, what: str = "a group label") -> Any:
    """A value the state keeps, as JSON; refused (TypeError naming ``what``) when it cannot be read back."""
    label = label_of(label)
    if isinstance(label, tuple):
        return {"tuple": [_json_label(v, what) for v in label]}
    if label is None or isinstance(label, str | int | bool) or (isinstance(label, float) and np.isfinite(label)):
        return label
    for tag, (kind, dump, _) in _TAGGED.items():
        if isinstance(label, kind):
            return {tag: dump(label)}
    raise TypeError(
        f"{what} {label!r} ({type(label).__name__}) cannot be kept in the monitor's state; pass strings, numbers, "
        "dates, datetimes, timedeltas or UUIDs. The batch was refused; the state is unchanged."
    )


def _from_json_label(label: Any) -> Any:
    if not isinstance(label, dict):
        return label
    ((tag, value),) = label.items()
    return tuple(_from_json_label(v) for v in value) if tag == "tuple" else _TAGGED[tag][2](value)


def _saveable(frame: pd.DataFrame | None, names: Mapping[str, str]) -> None:
    """Refuse, before anything is committed, a value of ``frame`` that :meth:`FairnessMonitor.save` could not write."""
    for column in [] if frame is None else frame.columns:
        values = frame[column]
        with contextlib.suppress(TypeError):  # unhashable values (lists, dicts): each one is refused below
            values = values.drop_duplicates()
        for v in values.tolist():
            _json_label(v, names.get(column, f"sensitive_features value ({column})"))


class FairnessMonitor:
    """Monitor the disparities of a deployed model, batch by batch, with alarms valid under continuous looking.

    Every call to :meth:`update` is one step (a batch: a day, an hour, a file of the
    log). For every measure the monitor keeps the cumulative value, the value over the
    last ``window`` steps, and an anytime-valid confidence sequence; it tests "the
    disparity is within ``eps``" sequentially, and a change detector (sequences
    restarted at every step) says when a disparity moved past ``eps`` and from which
    step. The probability that a measure ever raises an alarm while every batch's
    disparity stays within ``eps`` is at most ``1 - prob``, however often :meth:`status` is
    read and however the rates drift (rows of a batch independent; :mod:`._drift`). The
    sequences (``lower``, ``upper``) target constant rates between changes; measures
    whose ``alarm_test`` is ``"constant rates"`` take their alarm from them (see
    docs/monitor.md).

    Parameters
    ----------
    measures : str, Measure or sequence of them
        Registry keys or measures whose bases are rates of binary confusion counts.
    eps : float or mapping of key to float
        The tolerance. For a measure where lower is better (a difference) the alarm says
        the disparity exceeds ``eps``; where greater is better (a ratio) that it fell
        below ``eps``.
    prob : float, default=0.95
        The probability, over the whole stream, that a measure whose disparity stays
        within ``eps`` never alarms: the false-alarm probability is ``alpha = 1 - prob``
        (the attribute ``alpha``). The sequences are shown at level ``1 - alpha / 2``.
    window : int or str or pandas.Timedelta, default=10
        The windowed value: the last ``window`` steps, or the steps within a time span
        (``"7D"``; each step then needs ``time=``).
    restarts : int, default=8
        The change detector keeps the sequences restarted at the last ``restarts`` steps
        and at every ``restarts``-th step before them (at most ``2 * restarts``).
    grid_size : int, default=250
        Grid steps of every betting sequence over [0, 1] (its resolution).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mon = FairnessMonitor(["fairness.cv"], eps=0.1)
    >>> for day in range(5):
    ...     g = rng.choice(["a", "b"], 1000)
    ...     _ = mon.update(rng.binomial(1, 0.3, 1000), sensitive_features=g)
    >>> st = mon.status()
    >>> row = st.loc["fairness.cv"]
    >>> bool(row["alarm"]), bool(row["lower"] <= 0.02 < row["upper"])
    (False, True)
    """

    def __init__(
        self,
        measures: Any,
        *,
        eps: float | Mapping[str, float],
        prob: float = 0.95,
        window: int | str | pd.Timedelta = 10,
        restarts: int = 8,
        grid_size: int = 250,
        **removed: Any,
    ) -> None:
        if removed:  # alpha= was the level's old name
            fix = ": the level is prob=; pass prob=1 - alpha (prob=0.95 for alpha=0.05)" if "alpha" in removed else ""
            raise TypeError(f"FairnessMonitor got unexpected keyword argument(s) {sorted(removed)}{fix}.")
        self.measures = as_measures(measures)
        keys = [m.key for m in self.measures]
        if len(set(keys)) != len(keys):
            raise ValueError(f"measures has repeated keys {keys}; give each measure a distinct key.")
        self.eps = self._check_eps(eps, keys)
        self.prob = check_prob(prob)  # the false-alarm probability is at most 1 - prob
        #: The false-alarm probability, ``1 - prob``.
        self.alpha = 1.0 - self.prob
        self.window = self._check_window(window)
        for name, value, least in (("restarts", restarts, 1), ("grid_size", grid_size, 10)):
            if not (isinstance(value, int) and value >= least):
                raise ValueError(f"{name}={value!r}; pass an integer >= {least}.")
        self.restarts, self.grid_size = restarts, grid_size
        self._needs: dict[str, _Need] = {}
        self._of: dict[str, str] = {}
        self._tests: dict[str, DriftTest | None] = {}
        for m in self.measures:
            roles = _roles(m)
            labeled = not all(_label_free(r) for r in roles.values())
            need = _Need(labeled, m.inputs.threshold, m.inputs.pos_label, {})
            need = self._needs.setdefault(need.id, need)
            need.roles.update(roles)
            self._of[m.key] = need.id
            # the alarm: a test valid when the rates drift (._drift), where the measure's null splits into linear
            # constraints on the rates; otherwise the constant-rate sequences decide it (status()["alarm_test"])
            plan = drift_plan(m, self.eps[m.key], roles)
            self._tests[m.key] = None if isinstance(plan, str) else DriftTest(plan)
        self.step, self.times, self._groups, self._position = 0, [], [], {}
        self._group_names: list[str] | None = None
        self._pending: pd.DataFrame | None = None
        self._alarms: dict[str, dict[str, Any]] = {k: _no_alarm() for k in keys}
        self._trace: list[dict[str, Any]] = []
        self._last = self._rows()  # what status() shows: before any batch, every value NaN with its reason
        #: Free notes saved with the state (JSON values), e.g. the batches a job has done.
        self.meta: dict[str, Any] = {}

    # -- arguments -------------------------------------------------------------------------------------------

    @staticmethod
    def _check_eps(eps: Any, keys: list[str]) -> dict[str, float]:
        values = dict(eps) if isinstance(eps, Mapping) else dict.fromkeys(keys, eps)
        if missing := [k for k in keys if k not in values]:
            raise ValueError(f"eps has no tolerance for {missing}; pass a float or a mapping of every key.")
        for k in keys:
            if not (isinstance(values[k], float | int) and np.isfinite(values[k])):
                raise ValueError(f"eps for {k!r} is {values[k]!r}; pass a finite number.")
        return {k: float(values[k]) for k in keys}

    @staticmethod
    def _check_window(window: Any) -> int | pd.Timedelta:
        if isinstance(window, int) and not isinstance(window, bool):
            if window < 1:
                raise ValueError(f"window={window!r}; pass a number of steps >= 1 or a time span such as '7D'.")
            return window
        try:
            span = pd.Timedelta(window)
        except (TypeError, ValueError):
            raise ValueError(f"window={window!r}; pass a number of steps >= 1 or a time span such as '7D'.") from None
        if span <= pd.Timedelta(0):
            raise ValueError(f"window={window!r}; a time span must be positive.")
        return span

    # -- feeding ---------------------------------------------------------------------------------------------

    def update(
        self,
        y_pred: Any = None,
        *,
        sensitive_features: Any = None,
        y_true: Any = None,
        ids: Any = None,
        data: Any = None,
        time: Any = None,
        stats: ConfusionStats | None = None,
    ) -> FairnessMonitor:
        """Add one batch (one step): its predictions, groups and, if known, labels.

        Parameters
        ----------
        y_pred : array-like of shape (n,), or a column name of ``data``
            Predicted labels (scores for measures built with ``threshold=``).
        sensitive_features : array-like or DataFrame, or column name(s) of ``data``
            Group of each row; several columns give intersectional groups. A group
            never seen before joins here; its sequences start at this step.
        y_true : array-like or column name, optional
            Labels, when known with the predictions. Without them only the measures
            that read no label (selection rates) are updated; pass ``ids`` to join the
            labels later with :meth:`add_labels`.
        ids : array-like or column name, optional
            Row identifiers, unique among the rows still waiting for labels.
        data : DataFrame of any supported engine, optional
            pandas, polars, pyarrow, DuckDB, Dask or PySpark: the arguments then name
            its columns, and the counts are computed in the engine.
        time : datetime-like, optional
            When the batch was logged (the time axis of the plot, MLflow timestamps,
            and a time ``window``). Times must not go backwards, and all carry a time
            zone or none: a batch older than the last one, or mixing zones, is refused.
        stats : ConfusionStats, optional
            The batch's labeled confusion counts instead of rows (e.g. from
            ``engines.grouped_stats``), when every measure shares one threshold and
            positive class; ``sensitive_features`` is then None.

        Returns
        -------
        FairnessMonitor
            ``self``. An empty batch is a step without rows: the counts do not change.
            If any argument is refused, the state is left as it was.
        """
        stamp, pending = self._stamp(time), None
        if stats is not None:
            counted, names = self._from_stats(stats, y_pred, sensitive_features, y_true, ids, data)
        else:
            batch = as_batch(y_pred, sensitive_features, y_true, ids, data)
            (counted, names), pending = self._count(batch), self._to_pend(batch)
        _saveable(pending, {ID: "ids value", PRED: "y_pred value"})
        for stat in counted.values():
            for g in [] if stat is None else stat.groups:
                _json_label(g)
        # nothing below raises on the user's input: the step is committed whole
        self._group_names = names
        self.step += 1
        self.times.append(stamp)
        if pending is not None:
            self._pending = pending if self._pending is None else pd.concat([self._pending, pending], ignore_index=True)
        self._advance(self._aligned(counted), new_step=True)
        return self

    def _stamp(self, time: Any) -> str | None:
        """The batch's time as ISO text; refused unless zoned as the earlier ones and not before the last one.

        A late batch would otherwise be pooled into the time window of later ones.
        """
        if time is None:
            if isinstance(self.window, pd.Timedelta):
                raise ValueError(f"window={self.window} is a time span; pass time= with every batch.")
            return None
        try:
            ts = pd.Timestamp(time)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"time={time!r} is not a date or time ({exc}).") from None
        if ts is pd.NaT:
            raise ValueError(f"time={time!r} is missing; pass when the batch was logged.")
        last = next((t for t in reversed(self.times) if t is not None), None)
        if last is not None:
            before = pd.Timestamp(last)
            if (ts.tz is None) != (before.tz is None):
                zone = ("with a time zone", "without one") if ts.tz is not None else ("without a time zone", "with one")
                raise ValueError(
                    f"time={ts.isoformat()} is {zone[0]} and the earlier batches' times are {zone[1]} "
                    f"(last: {last}); pass every time with a zone, or none."
                )
            if ts < before:
                raise ValueError(
                    f"time={ts.isoformat()} is before the last batch's time {last}: batches must come in time order "
                    "(a late batch would be pooled into the window of later ones). The batch was refused; the "
                    "state is unchanged. Pass it with the time it arrived, or keep its rows for a monitor of its own."
                )
        return ts.isoformat()

    def add_labels(self, y_true: Any, *, ids: Any) -> int:
        """Join labels that arrived later to the rows waiting for them (by id), counted at the current step.

        Parameters
        ----------
        y_true : array-like of shape (n,)
            The labels.
        ids : array-like of shape (n,)
            The ids given with the predictions to :meth:`update`.

        Returns
        -------
        int
            Rows labeled. Labels whose id is not waiting (never seen, or labeled already)
            are not counted, with a warning saying how many.
        """
        y_true, ids = np.asarray(y_true), np.asarray(ids)
        if y_true.shape != ids.shape or y_true.ndim != 1:
            raise ValueError(f"y_true has shape {y_true.shape} and ids {ids.shape}; pass one label per id.")
        labels = pd.DataFrame({ID: ids, TRUE: y_true})
        if dup := labels.loc[labels[ID].duplicated(), ID].tolist()[:5]:
            raise ValueError(f"ids repeats {dup}; each row gets one label.")
        waiting = self._pending if self._pending is not None else pd.DataFrame({ID: pd.Series([], dtype=object)})
        joined = waiting.merge(labels, on=ID, how="inner") if len(waiting) else waiting.iloc[:0]
        if unknown := len(labels) - len(joined):
            examples = labels.loc[~labels[ID].isin(joined[ID]), ID].tolist()[:5]
            msg = (
                f"{unknown} label(s) have ids that no row waits for (never given to update(ids=...), or labeled "
                f"already), e.g. {examples}; they were not counted."
            )
            warnings.warn(msg, UserWarning, stacklevel=2)
        if joined.empty:  # (rows wait only after a step: a join has a step to count at)
            return 0
        counted, _ = self._count(Batch(joined, PRED, TRUE, tuple(self._group_names or ())), labeled_only=True)
        self._pending = waiting[~waiting[ID].isin(joined[ID])].reset_index(drop=True)
        self._advance(self._aligned(counted), new_step=False)
        return len(joined)

    def _count(self, batch: Batch, labeled_only: bool = False) -> tuple[dict[str, ConfusionStats | None], list[str]]:
        """Each need's counts of the batch (one engine pass per threshold and positive class), and the group names.

        Without labels, the needs that read none; with ``labeled_only``, those that do.
        """
        labeled, passes, counted = batch.target is not None, {}, {}
        for nid, need in self._needs.items():
            if (labeled or not need.labeled) and (need.labeled or not labeled_only):
                key = (need.threshold, repr(need.pos_label))
                if key not in passes:
                    passes[key] = count(batch, need.threshold, need.pos_label, labeled=labeled)
                counted[nid] = passes[key]
        return counted, self._check_names([s for s in counted.values() if s is not None], batch.sensitive)

    def _to_pend(self, batch: Batch) -> pd.DataFrame | None:
        """The rows to keep until their labels arrive (only when some measure needs labels and none came)."""
        if batch.target is not None or not any(n.labeled for n in self._needs.values()):
            return None
        if batch.ids is None:
            needing = [k for k, nid in self._of.items() if self._needs[nid].labeled]
            msg = f"this batch has no labels and no ids: the measures that need labels ({needing}) skip it. "
            warnings.warn(msg + "Pass ids= to join labels later with add_labels().", UserWarning, stacklevel=3)
            return None
        rows = collect_columns(batch, [batch.ids, *batch.sensitive, batch.prediction])
        rows = rows.rename(columns={batch.ids: ID, batch.prediction: PRED})
        if rows[ID].isna().any():  # such a row could never be joined to its label
            raise ValueError(f"ids has {int(rows[ID].isna().sum())} missing value(s); give every row an id.")
        waiting = rows[ID] if self._pending is None else pd.concat([self._pending[ID], rows[ID]])
        if dup := waiting[waiting.duplicated()].tolist()[:5]:
            raise ValueError(f"ids {dup} appear twice among the rows waiting for labels; ids must be unique.")
        return rows

    def _from_stats(self, stats: Any, *rows: Any) -> tuple[dict[str, ConfusionStats | None], list[str]]:
        if any(r is not None for r in rows):
            raise TypeError("stats= replaces the rows; pass either stats= or y_pred, sensitive_features (and data=).")
        if not isinstance(stats, ConfusionStats) or stats.counts.shape[-2:] != (2, 2) or stats.counts.ndim != 3:
            raise TypeError(f"stats must be binary ConfusionStats, shape (n_groups, 2, 2); got {type(stats).__name__}.")
        if len(self._needs) > 1:
            raise ValueError(
                f"these measures need {len(self._needs)} different counts ({sorted(self._needs)}); stats= serves one. "
                "Pass the rows instead."
            )
        return dict.fromkeys(self._needs, stats if stats.counts.sum() else None), self._check_names([stats], ())

    def _check_names(self, stats: list[ConfusionStats], sensitive: tuple[str, ...]) -> list[str]:
        names = list(sensitive) if not stats else [str(n) for n in stats[0].groups.names]
        if self._group_names is not None and names != self._group_names:
            raise ValueError(
                f"sensitive_features are {names} in this batch and {self._group_names} in the earlier ones; "
                "pass the same sensitive columns with every batch."
            )
        return names

    def _aligned(self, counted: Mapping[str, ConfusionStats | None]) -> dict[str, np.ndarray]:
        """Each need's batch counts in the monitor's group order (new groups appended)."""
        out = {}
        for nid, stats in counted.items():
            if stats is not None:
                at = self._join([label_of(g) for g in stats.groups])
                out[nid] = np.zeros((len(self._groups), 2, 2))
                out[nid][at] = stats.counts
        return out

    def _join(self, labels: list[Any]) -> list[int]:
        """The positions of ``labels`` in the monitor's group order (new groups appended)."""
        for label in labels:
            if label not in self._position:
                self._position[label] = len(self._groups)
                self._groups.append(label)
        return [self._position[g] for g in labels]

    def _advance(self, counted: Mapping[str, np.ndarray], *, new_step: bool) -> None:
        n_groups = len(self._groups)
        for nid, need in self._needs.items():
            need.total = _pad(need.total, n_groups)
            batch = _pad(counted[nid], n_groups) if nid in counted else None
            if new_step:
                need.history.append((self.step, np.zeros((n_groups, 2, 2))))
                self._trim(need)
                if need.boxes:  # a restart at every step once the need has counts
                    need.boxes.append(Box(self.step, box_alpha(self.alpha, self.step), n_groups, self.grid_size))
            if batch is None:
                continue
            need.history[-1] = (need.history[-1][0], _pad(need.history[-1][1], n_groups) + batch)
            need.total = need.total + batch
            if not need.boxes:  # the cumulative box: from the need's first counts
                need.boxes.append(Box(self.step, box_alpha(self.alpha, 1), n_groups, self.grid_size))
            rates = {name: cells(batch, roles) for name, roles in need.roles.items()}  # once for every box and test
            Box.update_all(need.boxes, batch, rates)
            for key, test in self._tests.items():
                if test is not None and self._of[key] == nid:
                    test.update(batch, rates, self.step)
            self._prune(need)
        self._evaluate()

    def _prune(self, need: _Need) -> None:
        """Keep the cumulative box, the recent restarts, some older ones, and the boxes an alarm or a move dates.

        Recent: the last ``restarts``; older: every ``restarts``-th step, at most as many.
        """
        pinned = {a[k] for a in self._alarms.values() for k in ("since", "regime")}
        recent = need.boxes[1:][-self.restarts :]
        older = [b for b in need.boxes[1 : -self.restarts] if b.start % self.restarts == 0][-self.restarts :]
        kept = {id(b) for b in older + recent}
        need.boxes = need.boxes[:1] + [b for b in need.boxes[1:] if id(b) in kept or b.start in pinned]

    def _trim(self, need: _Need) -> None:
        if isinstance(self.window, int):
            del need.history[: max(len(need.history) - self.window, 0)]
        else:  # a time span: update() refuses a batch without a time, so every step has one
            since = pd.Timestamp(self.times[-1]) - self.window
            need.history[:] = [(s, c) for s, c in need.history if pd.Timestamp(self.times[s - 1]) > since]

    # -- reading ---------------------------------------------------------------------------------------------

    def _index(self) -> pd.Index:
        names = self._group_names or ["group"]
        if len(names) > 1:
            return pd.MultiIndex.from_tuples(self._groups, names=names)
        return pd.Index(self._groups, name=names[0], dtype=object)

    def _value(self, m: MeasureBase, counts: np.ndarray, index: pd.Index) -> tuple[float, str | None]:
        if m.inputs.needs_sensitive and (counts.sum(axis=(-2, -1)) > 0).sum() < 2:
            return np.nan, "fewer than two groups have rows so far"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = m.evaluate_stats(ConfusionStats(counts, index))
        return float(res.value), (res.reason if np.isnan(res.value) else None)

    def _evaluate(self) -> None:
        self._last = self._rows()
        self._trace.extend(self._last)

    def _rows(self) -> list[dict[str, Any]]:
        """Every measure's status row now (alarms raised and regimes moved as the sequences say)."""
        index = self._index()
        for m in self.measures:  # every sequence of a need read at once (cached in the boxes until the next batch)
            Box.read_all(self._needs[self._of[m.key]].boxes, len(m.bases))
        rows = []
        for m in self.measures:
            need = self._needs[self._of[m.key]]
            eps, worse_up, n = self.eps[m.key], not m.greater_is_better, len(index)
            overall, reason = self._value(m, need.total, index) if n else (np.nan, "no rows counted yet")
            window = need.window(n) if need.history else need.total
            window_value, _ = self._value(m, window, index) if n else (np.nan, None)
            alarm, test = self._alarms[m.key], self._tests[m.key]
            log_e = test.log_value() if test is not None else np.nan
            e_value = float(np.exp(min(log_e, 700.0)))  # capped, not inf (NaN without a drift test)
            if test is not None and alarm["step"] is None and log_e >= np.log(1.0 / self.alpha):
                alarm["step"], alarm["since"], alarm["e_value"] = self.step, test.since(self.step), e_value
            value, lower, upper = overall, np.nan, np.nan
            if (n >= 2 or not m.inputs.needs_sensitive) and need.boxes:  # groups to compare, and sequences
                bounds = {box.start: box.bounds(m, index) for box in need.boxes}
                regime = alarm["regime"] if alarm["regime"] in bounds else need.boxes[0].start
                # moved: a sequence restarted after the current regime's start excludes every value the regime's
                # sequence allows (under constant rates both hold, so at most alpha of streams ever see this)
                moved = [s for s, b in bounds.items() if s > regime and _disjoint(b, bounds[regime])]
                if moved:
                    regime = min(moved)
                    alarm["moves"].append([self.step, regime])
                alarm["regime"] = regime
                if alarm["step"] is None and test is None:
                    fired = [s for s, b in bounds.items() if _beyond(b, eps, worse_up)]
                    if fired:
                        alarm["step"], alarm["since"] = self.step, min(fired)
                shown = next(b for b in need.boxes if b.start == regime)
                value, reason = self._value(m, _pad(shown.counts, n), index)
                # a value outside its sequence widens it
                lower, upper = float(np.fmin(bounds[regime][0], value)), float(np.fmax(bounds[regime][1], value))
            row = {"key": m.key, "value": value, "lower": lower, "upper": upper, "eps": eps}
            row |= {"alarm": alarm["step"] is not None, "alarm_step": alarm["step"]}
            row |= {"alarm_e_value": alarm.get("e_value") or np.nan, "changed_since": alarm["since"]}
            row |= {"since": alarm["regime"], "alarm_test": "drift" if test is not None else "constant rates"}
            row |= {"e_value": e_value, "overall_value": overall, "window_value": window_value}
            row |= {"n_rows": int(need.total.sum()), "step": self.step, "time": self.times[-1] if self.times else None}
            rows.append(row | {"reason": reason})
        return rows

    def status(self) -> pd.DataFrame:
        """The current state of every measure, one row per key.

        Columns:

        - ``value``, ``lower``, ``upper``: the measure and its anytime-valid sequence (level
          ``1 - alpha / 2``; the other half of ``alpha`` goes to the restarted sequences) on
          the rows since step ``since``;
        - ``since``: where the rows of ``value`` start: the first step with counts or,
          once the disparity *moved* (a sequence restarted later excludes every value the
          current one allows), the step it moved at. It describes the value shown;
        - ``eps``; ``alarm``: the disparity is beyond ``eps``. An alarm *latches*: raised
          at step ``alarm_step``, when the evidence ``e_value`` reached ``1 / alpha``
          (``alarm_e_value``), it stays raised; the guarantee (at most ``alpha`` of fair
          streams *ever* alarm) covers that first crossing, so a later fall of
          ``e_value`` (new batches weigh in) does not withdraw it;
        - ``changed_since``: where the alarm's evidence began (the start of the test's
          largest term), which dates the change the alarm found; it describes the alarm;
        - ``alarm_test``: ``"drift"`` (the test of :mod:`._drift`, valid when rates drift)
          or ``"constant rates"`` (the sequences decide); ``e_value``: that test's
          evidence now;
        - ``overall_value`` (all rows), ``window_value`` (the last ``window`` steps),
          ``n_rows`` (rows counted for the measure), ``step``, ``time``, ``reason`` (why a
          value is NaN).

        Examples
        --------
        >>> mon = FairnessMonitor("fairness.cv", eps=0.2)
        >>> mon.update([1, 0, 1, 1], sensitive_features=["a", "a", "b", "b"]).status()["value"].tolist()
        [0.5]
        """
        columns = {c: [r[c] for r in self._last] for c in self._last[0] if c != "key"}  # read after every batch:
        return pd.DataFrame(columns, index=pd.Index([r["key"] for r in self._last], name="key"))  # no per-row dicts

    def estimates(self) -> dict[str, Estimate]:
        """Each measure's current value and sequence as an :class:`~skfair_measures.uncertainty.Estimate`.

        The rows of :meth:`status`: the value on the rows of the sequence shown, its interval at
        level ``1 - alpha / 2`` (anytime-valid, a confidence sequence: no probabilities).
        """
        how = {"construction": "betting confidence sequence (anytime-valid)", "target": "population"}
        out = {}
        for r, m in zip(self._last, self.measures, strict=True):  # the rows of status(), in the measures' order
            row = {"n": r["n_rows"], "interval": (r["lower"], r["upper"]), "reason": r["reason"], "measure": m}
            out[m.key] = Estimate(m.key, r["value"], prob=1 - self.alpha / 2, **row, **how)
        return out

    def summary(self) -> pd.DataFrame:
        """The one summary row of every measure (:data:`~skfair_measures.uncertainty.SUMMARY_COLUMNS`), at its eps.

        Examples
        --------
        >>> mon = FairnessMonitor("fairness.cv", eps=0.2)
        >>> mon.update([1, 0, 1, 1] * 50, sensitive_features=["a", "a", "b", "b"] * 50).summary()[["value", "verdict"]]
           value       verdict
        0    0.5  inconclusive
        """
        return summarize([e.summary(eps=self.eps[k]) for k, e in self.estimates().items()])

    def group_status(self) -> pd.DataFrame:
        """Every group rate the measures read: cumulative and windowed value, and its sequence.

        One row per (rate, group), indexed by ``rate`` (the base's name, e.g. ``tpr``;
        a measure built with a threshold or positive class of its own reads its rate as
        ``tpr (threshold=0.3)``) and the group, on the rows of the sequence :meth:`status`
        shows (those since step ``since``: the first step with counts, or the step the
        disparity moved at), so a value and its interval use the same rows. Columns:

        - ``value``: the rate over those rows;
        - ``window_value``: the rate over the last ``window`` steps;
        - ``lower``, ``upper``: that sequence of the rate, read at the level a one-rate
          measure uses (the groups of a rate hold jointly at ``1 - alpha / 2``), widened to
          hold the value;
        - ``n``: the rows in the rate's denominator (positives for ``tpr``);
        - ``since``: the step the sequence starts at.

        Examples
        --------
        >>> mon = FairnessMonitor("fairness.cv", eps=0.2)
        >>> mon.update([1, 0, 1, 1], sensitive_features=["a", "a", "b", "b"]).group_status()["value"].tolist()
        [0.5, 1.0]
        """
        index, frames = self._index(), []
        n = len(index)
        for key, need in self._needs.items():
            window, box = need.window(n), self._regime_box(key)
            for name, roles in need.roles.items():
                k, trials = cells(_pad(need.total if box is None else box.counts, n), roles)
                wk, wn = cells(window, roles)
                with np.errstate(invalid="ignore", divide="ignore"):
                    value, window_value = k / trials, wk / wn
                lower = upper = np.full(n, np.nan)
                if box is not None:  # the value's own rows: a value outside its sequence widens it (as status)
                    lower, upper, _ = box.group_bounds(name, n, 1)
                    lower, upper = np.fmin(lower, value), np.fmax(upper, value)
                columns = {"value": value, "window_value": window_value, "lower": lower, "upper": upper}
                columns |= {"n": trials.astype(int), "since": None if box is None else box.start}
                frames.append(pd.DataFrame({"rate": need.rate_name(name), "group": list(index), **columns}))
        if not frames or n == 0:
            return pd.DataFrame(columns=["value", "window_value", "lower", "upper", "n", "since"])
        return pd.concat(frames, ignore_index=True).set_index(["rate", "group"])

    def _regime_box(self, need_key: str) -> Box | None:
        """The sequence :meth:`status` reads for the measures of a need: the latest regime among them."""
        need = self._needs[need_key]
        regimes = [self._alarms[k]["regime"] for k, nid in self._of.items() if nid == need_key]
        latest = max((r for r in regimes if r is not None), default=None)
        return next((b for b in need.boxes if b.start == latest), need.boxes[0] if need.boxes else None)

    def history(self) -> pd.DataFrame:
        """Every status row since the first step (after each batch and each :meth:`add_labels`), in order."""
        return pd.DataFrame(self._trace)

    @property
    def groups(self) -> pd.Index:
        """The groups seen so far, in the order they joined."""
        return self._index()

    @property
    def n_pending(self) -> int:
        """Rows waiting for their labels."""
        return 0 if self._pending is None else len(self._pending)

    # -- saving, loading, merging ----------------------------------------------------------------------------

    @property
    def settings(self) -> dict[str, Any]:
        """The monitor's settings (measure keys, eps, prob, window, restarts, grid_size), as saved."""
        window = self.window if isinstance(self.window, int) else str(self.window)
        out = {"measures": [m.key for m in self.measures], "eps": self.eps, "prob": self.prob, "window": window}
        return out | {"restarts": self.restarts, "grid_size": self.grid_size}

    def to_dict(self) -> dict[str, Any]:
        """The whole state as plain Python values (what :meth:`save` writes)."""
        pending = None
        if self._pending is not None:
            pending = {c: [_json_label(v) for v in self._pending[c].tolist()] for c in self._pending.columns}
        needs = {nid: need.to_dict() for nid, need in self._needs.items()}
        out = {"format": FORMAT, "version": VERSION, "settings": self.settings, "step": self.step, "times": self.times}
        out |= {"groups": [_json_label(g) for g in self._groups], "group_names": self._group_names, "needs": needs}
        out |= {"tests": {k: t.to_dict() for k, t in self._tests.items() if t is not None}, "pending": pending}
        trace = [{k: plain(v) for k, v in r.items()} for r in self._trace]  # NaN as null
        return out | {"alarms": self._alarms, "meta": self.meta, "trace": trace}

    def save(self, path: str | os.PathLike) -> None:
        """Write the state to ``path`` atomically (a temporary file in the same folder, then renamed over it).

        A crash while saving leaves the previous file whole.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> mon = FairnessMonitor("fairness.cv", eps=0.2).update([1, 0, 1, 1], sensitive_features=list("aabb"))
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "monitor.json"
        >>> mon.save(path)
        >>> FairnessMonitor.load(path).status()["value"].tolist()
        [0.5]
        """
        write_atomically(path, json.dumps(self.to_dict(), allow_nan=True))

    @classmethod
    def load(cls, path: str | os.PathLike, measures: Any = None) -> FairnessMonitor:
        """A monitor from a file written by :meth:`save`, ready to continue.

        Parameters
        ----------
        path : path-like
        measures : str, Measure or sequence, optional
            The measures (needed when they are not registry keys with default options);
            refused if their keys differ from the saved ones.
        """
        try:
            state = json.loads(read_text(path))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(
                f"{os.fspath(path)!r} is not a monitor state: not whole JSON text ({exc}); it may be truncated or "
                "another file. The monitor saves atomically, so save() did not write it: restore the last good copy."
            ) from None
        return cls.from_dict(state, measures=measures, source=repr(os.fspath(path)))

    @classmethod
    def from_dict(cls, state: Mapping[str, Any], measures: Any = None, source: str = "the state") -> FairnessMonitor:
        """A monitor from :meth:`to_dict`'s values."""
        if not isinstance(state, Mapping) or state.get("format") != FORMAT:
            raise ValueError(f"{source} is not a monitor state (no format {FORMAT!r}).")
        if state.get("version") not in _READS:
            raise ValueError(
                f"{source} has state version {state.get('version')!r}; this version of skfair-measures reads "
                f"{', '.join(map(str, _READS[:-1]))} and {_READS[-1]}. Load it with the version that saved it."
            )
        saved = state["settings"] if isinstance(state.get("settings"), Mapping) else {}
        missing = [k for k in _KEYS if k not in state] + [f"settings.{k}" for k in _SETTINGS if k not in saved]
        missing += [] if "prob" in saved or "alpha" in saved else ["settings.prob"]
        if missing:
            raise ValueError(f"{source} is not a whole monitor state: it lacks {missing}; restore the last good copy.")
        keys, given = saved["measures"], None if measures is None else [m.key for m in as_measures(measures)]
        if given is not None and given != keys:
            raise ValueError(
                f"{source} monitors the measures {keys}; the measures given are {given}. "
                "Load it with the same measures, or start a new monitor for a new set."
            )
        try:
            return cls._restore(state, measures, source)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            if str(exc).startswith(source):
                raise
            raise ValueError(
                f"{source} is not a valid monitor state (edited by hand?): {type(exc).__name__}: {exc}; restore the "
                "last good copy."
            ) from None

    @classmethod
    def _restore(cls, state: Mapping[str, Any], measures: Any, source: str) -> FairnessMonitor:
        settings = state["settings"]
        keys = settings["measures"]
        if measures is None:
            try:
                measures = [msr(k) for k in keys]
            except (KeyError, ValueError) as exc:
                raise ValueError(f"{source} monitors {keys}, not all registry keys; pass measures= ({exc}).") from None
        prob = settings["prob"] if "prob" in settings else 1 - settings["alpha"]
        mon = cls(measures, prob=prob, **{k: settings[k] for k in ("eps", "window", "restarts", "grid_size")})
        if set(state["needs"]) != set(mon._needs):
            raise ValueError(
                f"{source} was saved for measures with other thresholds or positive classes "
                f"({sorted(state['needs'])}); these need {sorted(mon._needs)}."
            )
        mon.step, mon.times = int(state["step"]), list(state["times"])
        mon._groups, mon._group_names = [_from_json_label(g) for g in state["groups"]], state["group_names"]
        mon._position = {g: i for i, g in enumerate(mon._groups)}
        for nid, saved in state["needs"].items():
            need = mon._needs[nid]
            need.total = np.asarray(saved["total"], dtype=float).reshape(-1, 2, 2)
            need.history = [(int(s), np.asarray(c, dtype=float).reshape(-1, 2, 2)) for s, c in saved["history"]]
            need.boxes = [Box.from_dict(b) for b in saved["boxes"]]
        if (pending := state["pending"]) is not None:  # infer_objects: datetimes saved one by one are a column again
            columns = {c: [_from_json_label(v) for v in values] for c, values in pending.items()}
            mon._pending = pd.DataFrame(columns).infer_objects()
        for k, saved_test in state.get("tests", {}).items():  # a state saved before the drift test: it starts now
            if (test := mon._tests.get(k)) is not None:
                mon._tests[k] = DriftTest.from_dict(test.plan, saved_test)
        mon._alarms = {k: dict(v) for k, v in state["alarms"].items()}
        mon.meta = dict(state.get("meta", {}))
        mon._trace = [{k: (np.nan if v is None and k in _FLOATS else v) for k, v in r.items()} for r in state["trace"]]
        if mon._trace:
            mon._last = mon._trace[-len(mon.measures) :]
        return mon

    def merge(self, other: FairnessMonitor) -> FairnessMonitor:
        """The monitor of two workers that watched disjoint rows of the same steps.

        Counts add (cumulative, window, per group); the betting sequences of each start
        multiply their wealths (:meth:`BettingStack.combined`, valid on independent rows);
        rows waiting for labels are pooled. The alarms are read again on the merged
        sequences (an alarm one worker raised alone stays in that worker's record).
        The history of the merged monitor starts with the merged status.

        Parameters
        ----------
        other : FairnessMonitor
            Same measures, settings and number of steps.

        Returns
        -------
        FairnessMonitor
            A new monitor; neither input changes.
        """
        if self.settings != other.settings:
            raise ValueError(f"the monitors differ in settings: {self.settings} vs {other.settings}.")
        if self.step != other.step:
            raise ValueError(
                f"the monitors are at steps {self.step} and {other.step}; merge workers after the same batches."
            )
        if self._group_names and other._group_names and self._group_names != other._group_names:
            raise ValueError(f"the monitors group by {self._group_names} and {other._group_names}.")
        out = FairnessMonitor.from_dict(self.to_dict(), measures=self.measures)
        out._group_names = out._group_names or other._group_names
        positions = np.array(out._join(other._groups), dtype=int)
        n = len(out._groups)  # after the join

        def moved(counts: np.ndarray) -> np.ndarray:
            res = np.zeros((n, 2, 2))
            res[positions[: counts.shape[0]]] = counts
            return res

        for nid, need in out._needs.items():
            theirs = other._needs[nid]
            need.total = _pad(need.total, n) + moved(theirs.total)
            steps = {s: _pad(c, n) for s, c in need.history}
            for s, c in theirs.history:
                steps[s] = steps.get(s, np.zeros((n, 2, 2))) + moved(c)
            need.history = sorted(steps.items())
            # boxes match by start step, the cumulative ones with each other (each side's from its first counts)
            mine = {(0 if i == 0 else b.start): b for i, b in enumerate(need.boxes)}
            for i, b in enumerate(theirs.boxes):
                key = 0 if i == 0 else b.start
                base = mine.get(key, Box(b.start, b.alpha, len(out._groups), b.grid_size))
                mine[key] = base.combined(b, positions)
            need.boxes = [mine[k] for k in sorted(mine)]
        if other._pending is not None:
            pooled = pd.concat([p for p in (out._pending, other._pending) if p is not None], ignore_index=True)
            if pooled[ID].duplicated().any():
                raise ValueError("both workers hold rows waiting for labels under the same ids; ids must be unique.")
            out._pending = pooled
        for k, test in out._tests.items():
            if test is not None and other._tests[k] is not None:
                out._tests[k] = test.merged(other._tests[k])
        out._alarms, out._trace = {k: _no_alarm() for k in out._alarms}, []
        out._evaluate()
        return out

    def plot(self, key: str | None = None, ax: Any = None) -> Any:
        """Each disparity over the steps with its confidence sequence, the tolerance and the alarm.

        Needs matplotlib. See :func:`skfair_measures.monitor.plot_monitor`.
        """
        from ._plot import plot_monitor

        return plot_monitor(self, key=key, ax=ax)

    def __repr__(self) -> str:
        return f"FairnessMonitor({[m.key for m in self.measures]}, step={self.step}, groups={len(self._groups)})"
