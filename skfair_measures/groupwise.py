"""Many metrics per group in one table: ``groupwise_metrics`` (mlr3fairness' name).

The layout is fairlearn's ``MetricFrame``: ``by_group`` is a DataFrame of groups x
metrics, indexed by the control features (if any) and then the sensitive features;
``overall`` holds each metric on all samples (per control level when there are
control features); ``difference``, ``ratio``, ``group_min`` and ``group_max`` reduce
the groups. Unlike ``MetricFrame``, the count metrics all come from one weighted
bincount (and the regression errors from one more), and the overall values per
control level are sums of those counts, not another pass over the rows; reductions
are computed when asked, not in the constructor.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from ._groups import _sensitive_columns
from ._protocol import small_groups_note, warn_small_groups
from ._small_groups import SmallGroupPlan
from ._stats import GroupedSample, check_inputs
from ._undefined import UndefinedGroupWarning, undefined_groups
from .base import BaseMetric, CountMetric, get_base
from .measures import FairnessMeasure
from .operations import Operation, _group_max, _group_min, absdiff, diff_to_overall, ratio, ratio_to_overall

__all__ = ["GroupwiseMetrics", "groupwise_metrics"]

MetricSpec = str | BaseMetric | Callable[..., float]
Method = Literal["between_groups", "to_overall"]


def _resolve_metrics(metrics: MetricSpec | Sequence[MetricSpec] | Mapping[str, MetricSpec], average: Any) -> dict:
    """Column name -> base metric, refusing two columns with the same name."""
    if isinstance(metrics, Mapping):
        items = [(str(k), get_base(v)) for k, v in metrics.items()]
    else:
        seq = [metrics] if isinstance(metrics, str | BaseMetric) or callable(metrics) else list(metrics)
        items = [(b.name, b) for b in map(get_base, seq)]
    out: dict[str, BaseMetric] = {}
    for name, base in items:
        if average is not None and isinstance(base, CountMetric) and base.averageable:
            base = base.averaged(average)
            name = name if isinstance(metrics, Mapping) else base.name
        if name in out:
            raise ValueError(f"two metrics are named {name!r}; pass a dict {{name: metric}} to name them apart.")
        out[name] = base
    if not out:
        raise ValueError("metrics is empty; pass at least one metric (e.g. ['acc', 'tpr']).")
    return out


def _feature_columns(sensitive_features: Any, control_features: Any) -> tuple[dict[str, Any], int]:
    """Control columns first, then sensitive columns (fairlearn's index order), by name; and how many control."""
    columns = {} if control_features is None else dict(_sensitive_columns(control_features, "control_features"))
    n_control = len(columns)
    for name, values in _sensitive_columns(sensitive_features):
        if name in columns:
            raise ValueError(f"{name!r} is both a control and a sensitive feature; rename one of them.")
        columns[name] = values
    return columns, n_control


@dataclasses.dataclass(eq=False)
class GroupwiseMetrics:
    """Metrics per group, overall, and their reductions (fairlearn's ``MetricFrame`` layout).

    Attributes
    ----------
    by_group : pandas.DataFrame
        Groups x metrics; the index holds the control features, then the sensitive
        features (the observed combinations).
    overall : pandas.Series or pandas.DataFrame
        Each metric on all samples: a Series over metrics, or a DataFrame indexed by
        the control levels when there are control features.
    counts : pandas.Series
        (Weighted) number of samples per group.
    control_levels : list of str
        Names of the control features (empty when there are none).
    """

    by_group: pd.DataFrame
    overall: pd.Series | pd.DataFrame
    counts: pd.Series
    control_levels: list[str]
    control_codes: np.ndarray | None = dataclasses.field(default=None, repr=False)
    #: Metric -> when its value is undefined (the base metric's words), for the warning of a NaN reduction.
    undefined_when: dict[str, str] = dataclasses.field(default_factory=dict, repr=False)
    #: Groups whose rows all weigh 0 (undefined because of their weights), named apart in the warning.
    weightless: pd.Index | None = dataclasses.field(default=None, repr=False)

    def _reduce(self, op: Operation) -> pd.Series | pd.DataFrame:
        def per_metric(frame: pd.DataFrame, overall: pd.Series) -> pd.Series:
            _warn_undefined_groups(frame, op, self.undefined_when, self.weightless)
            return pd.Series(
                {c: op(frame[c].to_numpy(), groups=frame.index, overall=overall[c]) for c in frame.columns}, dtype=float
            )

        if self.control_codes is None:
            return per_metric(self.by_group, self.overall)
        rows = [
            per_metric(self.by_group.iloc[self.control_codes == i], self.overall.iloc[i])
            for i in range(len(self.overall))
        ]
        return pd.DataFrame(rows, index=self.overall.index)

    def group_min(self) -> pd.Series | pd.DataFrame:
        """Smallest group value of each metric (per control level); NaN if a group is undefined."""
        return self._reduce(_GROUP_MIN)

    def group_max(self) -> pd.Series | pd.DataFrame:
        """Largest group value of each metric (per control level); NaN if a group is undefined."""
        return self._reduce(_GROUP_MAX)

    def difference(self, method: Method = "between_groups") -> pd.Series | pd.DataFrame:
        """Largest difference between groups (``"between_groups"``) or to the overall value (``"to_overall"``)."""
        return self._reduce(_pick(method, absdiff, diff_to_overall))

    def ratio(self, method: Method = "between_groups") -> pd.Series | pd.DataFrame:
        """Smallest ratio between groups, or of a group to the overall value (symmetric, <= 1)."""
        return self._reduce(_pick(method, ratio, ratio_to_overall))


def _warn_undefined_groups(
    frame: pd.DataFrame, op: Operation, undefined_when: dict[str, str], weightless: pd.Index | None = None
) -> None:
    """Say which groups make a reduction NaN (a 0/0 group), in the words a measure uses."""
    zero = None if weightless is None else frame.index.isin(weightless)
    for column in frame.columns[frame.isna().any().to_numpy()]:
        which = undefined_groups(frame.index, frame[column].isna().to_numpy(), undefined_when.get(column, ""), zero)
        fix = "Merge small groups, or leave those groups out of the data."
        warnings.warn(
            f"{column} is undefined {which}; its {op.name} is NaN. {fix}", UndefinedGroupWarning, stacklevel=4
        )


def _pick(method: str, between: Operation, to_overall: Operation) -> Operation:
    if method not in ("between_groups", "to_overall"):
        raise ValueError(f"method={method!r}; pass 'between_groups' or 'to_overall'.")
    return between if method == "between_groups" else to_overall


_GROUP_MIN = Operation("group_min", _group_min, None, "smallest group value")
_GROUP_MAX = Operation("group_max", _group_max, None, "largest group value")


def groupwise_metrics(
    metrics: MetricSpec | Sequence[MetricSpec] | Mapping[str, MetricSpec],
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any,
    control_features: Any = None,
    sample_weight: Any = None,
    pos_label: Any = None,
    average: Literal["macro", "weighted"] | None = None,
    labels: Sequence[Any] | None = None,
) -> GroupwiseMetrics:
    """Several base metrics in every group, in one table (fairlearn's ``MetricFrame`` layout).

    Parameters
    ----------
    metrics : str, BaseMetric, callable, list of them, or dict {column: metric}
        Base metric names (``"acc"``, ``"tpr"``, ``"mse"``, ...), base metrics, or
        scikit-learn metric functions (computed on each group's rows).
    y_true, y_pred : array-like of shape (n_samples,)
    sensitive_features : array-like, Series or DataFrame
        Group of each sample; several columns give intersectional groups.
    control_features : array-like, Series or DataFrame, optional
        Features within whose levels groups are compared (fairlearn's
        ``control_features``): ``by_group`` is indexed by them first, and the
        overall values and reductions are per control level.
    sample_weight : array-like of shape (n_samples,), optional
    pos_label : object, optional
        The positive class of the count rates (one class against the rest on
        multiclass labels).
    average : {"macro", "weighted"}, optional
        Average the count rates over classes (multiclass labels).
    labels : array-like, optional
        The classes (scikit-learn's ``labels=``), e.g. every class of a multiclass
        model on a fold whose y_true misses one. By default, the classes are those
        seen in y_true and y_pred together.

    Returns
    -------
    GroupwiseMetrics

    Examples
    --------
    >>> gm = groupwise_metrics(["acc", "tpr"], [1, 1, 0, 1, 0, 1], [1, 0, 0, 1, 1, 1],
    ...                        sensitive_features=["a", "a", "a", "b", "b", "b"])
    >>> gm.by_group
                              acc  tpr
    sensitive_feature_0
    a                    0.666667  0.5
    b                    0.666667  1.0
    >>> gm.difference().to_dict()
    {'acc': 0.0, 'tpr': 0.5}
    """
    bases = _resolve_metrics(metrics, average)
    columns, n_control = _feature_columns(sensitive_features, control_features)
    sample = check_inputs(y_true, y_pred, columns, sample_weight, labels=labels)
    values, overall = {}, {}
    control = _control_sample(sample, n_control)
    for name, base in bases.items():
        values[name], pooled = base.group_values(sample, pos_label)
        overall[name] = pooled if control is None else _control_values(sample, control, base, pos_label)
    by_group = pd.DataFrame(values, index=sample.groups)
    if control is not None:
        overall_frame: pd.Series | pd.DataFrame = pd.DataFrame(overall, index=control[1].groups)
    else:  # the groups below SMALL_GROUP_ROWS that decide a metric's largest difference, named once
        overall_frame, notes = pd.Series(overall, dtype=float), []
        for name, base in bases.items():
            m = FairnessMeasure(base, key=f"{name} (largest difference between groups)", pos_label=pos_label)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = m.evaluate_sample(sample)
            notes.append(small_groups_note(m, sample, res))
        warn_small_groups(notes, stacklevel=2)
    names = list(sample.groups.names)[:n_control]
    codes = None if control is None else control[0]
    why = {name: base.undefined_when for name, base in bases.items() if base.undefined_when}
    weightless = sample.groups[sample.weightless()]
    return GroupwiseMetrics(by_group, overall_frame, sample.counts_per_group(), names, codes, why, weightless)


def _control_sample(sample: GroupedSample, n_control: int) -> tuple[np.ndarray, GroupedSample] | None:
    """The control level of each group, and the sample grouped by control level only."""
    if n_control == 0:
        return None
    index = sample.groups
    parts = index.droplevel(list(range(n_control, index.nlevels)))
    inverse, levels = pd.factorize(parts, sort=True)
    control_index, codes = levels.set_names(parts.names), np.asarray(inverse, dtype=np.intp)
    grouped = GroupedSample(
        sample.y_true, sample.y_pred, codes[sample.group_codes], control_index, sample.sample_weight, sample.labels
    )
    return codes, grouped


def _control_values(
    sample: GroupedSample, control: tuple[np.ndarray, GroupedSample], base: BaseMetric, pos_label: Any
) -> np.ndarray:
    """A metric per control level: from the groups' pooled counts, or (wrapped metrics) from the rows."""
    codes, grouped = control
    if base.statistic is None:
        return base.group_values(grouped, pos_label)[0]
    stats = sample.confusion(pos_label) if base.statistic == "confusion" else sample.errors()
    return base.from_stats(SmallGroupPlan(codes, grouped.groups, "").stats(stats))[0]  # the groups' counts, pooled
