"""``method="bb"`` on K > 2 classes: the Dirichlet-multinomial posterior of the confusion tensor.

With more than two classes in ``y_true`` (and no ``pos_label=`` to pick one class
against the rest), :func:`~skfair_measures.bayes.posterior` reads ``y_score`` as
predicted *labels*. Per group, the K x K confusion cells are multinomial; with a
symmetric Dirichlet prior (``prior="uniform"``: concentration 1 per cell,
``"jeffreys"``: 1/2) their posterior is ``Dirichlet(counts + prior)``
(:func:`skfair_measures.multiclass.dirichlet_draws`, the K-class form of the
Beta-Binomial model). Every draw of the tensor goes through ``measure.from_stats``,
the very code of the point estimate, so any count measure on K classes (accuracy,
balanced accuracy, macro or weighted rates) gets its posterior.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._arrays import _to_1d
from .._counts import MulticlassStats
from .._labels import _distinct
from .._stats import GroupedSample, check_inputs
from ..measures import MeasureBase
from ..multiclass import dirichlet_draws
from ._method import Bases, GroupDraws, Rng, without_prior_only
from ._small_groups import small_groups_plan

__all__ = [
    "DirichletMultinomial",
    "holds_multiclass_labels",
    "multiclass_counts",
    "multiclass_draws",
    "multiclass_error",
]

#: Dirichlet concentration per cell of the named priors.
PRIOR_CONCENTRATION = {"uniform": 1.0, "jeffreys": 0.5}

_ONLY_BB = (
    "y_true holds {k} classes {labels}; method={method!r} models the scores of a binary classifier. "
    "For K classes use method='bb' with predicted labels as y_score (the Dirichlet-multinomial posterior "
    "of the K x K confusion counts), or pass pos_label= for one class against the rest."
)
_NOT_LABELS = (
    "y_true holds {k} classes {labels}, so y_score is read as predicted labels (method='bb' on K classes), "
    "but it holds non-label values such as {bad:.4g}; pass estimator.predict(X), or pass pos_label= and "
    "that class's probabilities for one class against the rest."
)


def holds_multiclass_labels(y_true: Any, pos_label: Any, threshold: Any, measures: Sequence[MeasureBase]) -> bool:
    """Whether ``y_true`` holds more than two classes and nothing asks for one class against the rest."""
    asks_binary = [pos_label, threshold] + [v for m in measures for v in (m.inputs.pos_label, m.inputs.threshold)]
    if any(v is not None for v in asks_binary):
        return False
    try:
        labels = _to_1d(y_true, "y_true")
    except (TypeError, ValueError):
        return False  # the binary path reports the bad input
    return len(_distinct(labels)) > 2


@dataclass(frozen=True)
class DirichletMultinomial:
    """The options of ``method="bb"`` on K classes (the K-class row of :data:`~._table.METHODS`).

    Parameters
    ----------
    prior : {"uniform", "jeffreys"}, default="uniform"
        Symmetric Dirichlet prior of every group's K x K cells: concentration 1 or 1/2.
    """

    prior: str = "uniform"

    name: ClassVar[str] = "bb"

    def __post_init__(self) -> None:
        if not isinstance(self.prior, str) or self.prior not in PRIOR_CONCENTRATION:
            raise ValueError(
                f"prior={self.prior!r} does not apply to K classes; pass prior='uniform' (Dirichlet(1) per cell) "
                "or 'jeffreys' (Dirichlet(1/2))."
            )


def multiclass_counts(
    measures: Sequence[MeasureBase], y_true: Any, y_pred: Any, sensitive_features: Any, groups: pd.Index | None
) -> MulticlassStats:
    """Every group's K x K confusion counts, after the measures' ``min_group_size`` (group size: labeled rows).

    ``y_pred`` holds predicted labels; ``groups`` are the measures' declared groups (or None).

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> from skfair_measures import bayes
    >>> y = [0, 1, 2] * 40
    >>> post = bayes.posterior(sfm.msr("fairness.acc"), y, [0, 1, 1] * 40, sensitive_features=[0, 1] * 60,
    ...                        method="bb", random_state=0)
    >>> post.label_counts.shape, post.attrs["classes"]
    ((2, 3, 3), ['0', '1', '2'])
    """
    sample = check_inputs(y_true, y_pred, sensitive_features, groups=groups, y_pred_name="y_score")
    _refuse_scores(sample)
    plan = small_groups_plan(sample.group_sizes(), sample.groups, measures)
    if plan is not None:
        codes = plan.codes(sample.group_codes)
        kept = codes >= 0
        sample = GroupedSample(sample.y_true[kept], sample.y_pred[kept], codes[kept], plan.groups)
    return sample.multiclass()


def multiclass_draws(
    bases: Bases, stats: MulticlassStats, options: DirichletMultinomial, chains: int, draws: int, rng: Rng
) -> GroupDraws:
    """Draws of every base metric per group from the Dirichlet posterior of the K x K cells.

    A group rate whose denominator holds no labeled row is NaN (prior only), and so is
    every measure built from it; ``attrs["classes"]`` holds the classes.
    """
    tensor = dirichlet_draws(stats, chains * draws, prior=PRIOR_CONCENTRATION[options.prior], random_state=rng)
    values, overall, reasons = {}, {}, []
    with np.errstate(invalid="ignore", divide="ignore"):
        for b in bases:  # a rate no labeled row informs is undefined, not its prior (_method)
            (drawn, drawn_overall), (seen, seen_overall) = b.from_stats(tensor), b.from_stats(stats)
            group_values, why = without_prior_only(b, drawn, seen, stats.groups)
            values[b.name] = np.asarray(group_values, float).reshape(chains, draws, len(stats.groups))
            pooled, _ = without_prior_only(b, drawn_overall, seen_overall, stats.groups)
            overall[b.name] = np.asarray(pooled, float).reshape(chains, draws)
            reasons += why
    attrs = {"prior": options.prior, "prior_cells": "dirichlet", "sampler": "monte carlo"}
    return GroupDraws(values, overall, attrs=attrs | {"classes": [str(c) for c in stats.classes]}, reasons=reasons)


def multiclass_error(y_true: Any, method: str) -> ValueError:
    """The error for a method without a K-class form, naming the classes and the fix."""
    labels = sorted(_distinct(_to_1d(y_true, "y_true")).tolist(), key=str)
    return ValueError(_ONLY_BB.format(k=len(labels), labels=labels, method=method))


def _refuse_scores(sample: GroupedSample) -> None:
    """Refuse probabilities where K-class labels are expected, naming the fix."""
    y_pred = sample.y_pred
    if isinstance(y_pred, np.ndarray) and y_pred.dtype.kind == "f":
        frac = y_pred[~np.isnan(y_pred) & (y_pred != np.round(y_pred))]
        if frac.size:
            labels = sorted(sample._distinct_labels()[0].tolist(), key=str)  # the classes of y_true
            raise ValueError(_NOT_LABELS.format(k=len(labels), labels=labels, bad=float(frac[0])))
