"""``min_group_size`` in the posteriors: the core's rule, with labeled rows as the group sizes.

A measure built with ``min_group_size=`` (and ``small_groups="drop"`` or ``"merge"``)
leaves out, or pools into ``"other"``, the groups with fewer rows. In a posterior the
size of a group is its number of *labeled* rows: they are what the likelihood
sees, whatever the number of unlabeled scores. The decision is
:func:`skfair_measures._stats.small_group_plan`'s, the same as for a point estimate;
the plan is then applied to the labeled and the unlabeled rows alike, so that
``"merge"`` pools the unlabeled scores of the small groups too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._small_groups import SmallGroupPlan, small_group_plan
from ..measures import MeasureBase
from ._method import FitData, Rows
from ._posterior import external_stacklevel

__all__ = ["restrict_fit_data", "small_groups_plan"]


def small_groups_plan(sizes: np.ndarray, groups: pd.Index, measures: Sequence[MeasureBase]) -> SmallGroupPlan | None:
    """The core's plan for groups of ``sizes`` labeled rows under the measures' options (warned), or None.

    The measures' ``min_group_size`` and ``small_groups`` must agree: the posteriors of one fit
    share one set of groups.
    """
    options = {(m.inputs.min_group_size, m.inputs.small_groups) for m in measures}
    if len(options) > 1:
        raise ValueError(
            f"the measures have different (min_group_size, small_groups) {sorted(options, key=str)}; the "
            "posteriors of one fit share one set of groups, so build the measures with the same values."
        )
    key = measures[0].key if len(measures) == 1 else "posteriors(" + ", ".join(m.key for m in measures) + ")"
    plan = small_group_plan(sizes, groups, *options.pop(), key)
    if plan is not None:
        plan.warn(stacklevel=external_stacklevel())
    return plan


def restrict_fit_data(data: FitData, measures: Sequence[MeasureBase]) -> FitData:
    """The fit data without the groups of fewer labeled rows than ``min_group_size``, or with them pooled.

    Parameters
    ----------
    data : FitData
        Validated labeled (and unlabeled) rows.
    measures : sequence of Measure
        The measures whose ``inputs.min_group_size`` / ``inputs.small_groups`` apply.

    Returns
    -------
    FitData
        ``data`` itself when no group is small; else the rows of the kept groups
        (``"drop"``) or every row with the small groups' codes pooled (``"merge"``),
        after a :class:`~skfair_measures.groups.SmallGroupWarning` naming them.
    """
    plan = small_groups_plan(np.bincount(data.labeled.codes, minlength=data.n_groups), data.groups, measures)
    if plan is None:
        return data
    labeled, kept = _rows(data.labeled, plan.codes(data.labeled.codes))
    unlabeled, _ = _rows(data.unlabeled, plan.codes(data.unlabeled.codes))
    return FitData(data.y_true[kept], labeled, unlabeled, plan.groups, data.threshold)


def _rows(rows: Rows, codes: np.ndarray) -> tuple[Rows, np.ndarray]:
    """The rows whose group is kept (code >= 0), with the new codes."""
    kept = codes >= 0
    weight, count = (None if x is None else x[kept] for x in (rows.weight, rows.count))
    return Rows(rows.scores[kept], rows.y_pred[kept], codes[kept], weight, count, rows.bin_width), kept
