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
from .._small_groups import small_group_plan
from .._stats import GroupedSample, check_inputs
from ..measures import MeasureBase
from ..multiclass import dirichlet_draws
from ._method import without_prior_only
from ._posterior import MeasurePosterior, external_stacklevel, warn_undefined
from ._small_groups import small_group_options

__all__ = ["DirichletMultinomial", "dirichlet_posteriors", "holds_multiclass_labels", "multiclass_error"]

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


def dirichlet_posteriors(
    targets: Sequence[MeasureBase],
    y_true: Any,
    y_pred: Any,
    *,
    sensitive_features: Any,
    options: DirichletMultinomial,
    reference: Any,
    chains: int,
    n_draws: int | None,
    rng: np.random.Generator,
    method_requested: str,
) -> dict[str, MeasurePosterior]:
    """Posteriors of ``targets`` from the Dirichlet posterior of every group's K x K confusion cells.

    Parameters
    ----------
    targets : sequence of Measure
        The measures (already signed against ``reference``); their declared groups and
        ``min_group_size`` apply (group size: labeled rows).
    y_true, y_pred : array-like of shape (n_samples,)
        True and predicted class labels.
    sensitive_features : array-like or DataFrame
    options : DirichletMultinomial
        The checked options (:func:`~._table.method_options` with ``multiclass=True``).
    reference : object or None
        Must be one of the groups.
    chains : int
    n_draws : int, optional
        Draws per chain (default 1000).
    rng : numpy Generator
    method_requested : str
        ``"bb"`` or ``"auto"``, kept in ``attrs``.

    Returns
    -------
    dict of str to MeasurePosterior
        Keyed by measure key; ``label_counts`` holds the K x K counts per group,
        ``attrs["classes"]`` the classes. A group rate whose denominator holds no
        labeled row is NaN (prior only), and so is every measure built from it.

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
    groups = _declared_groups(targets)
    sample = check_inputs(y_true, y_pred, sensitive_features, groups=groups, y_pred_name="y_score")
    _refuse_scores(sample)
    sample = _restricted(sample, targets)
    stats = sample.multiclass()
    _check_reference(reference, stats.groups)
    seed = int(rng.integers(2**31 - 1))
    draws = 1000 if n_draws is None else int(n_draws)
    tensor = dirichlet_draws(stats, chains * draws, prior=PRIOR_CONCENTRATION[options.prior], random_state=rng)
    attrs = {
        "seed": seed,
        "n_labeled": int(sample.y_true.size),
        "n_unlabeled": 0,
        "reference": "" if reference is None else str(reference),
        "prior": options.prior,
        "prior_cells": "dirichlet",
        "sampler": "monte carlo",
        "classes": [str(c) for c in stats.classes],
        "method_requested": method_requested,
    }
    return {t.key: _posterior(t, tensor, stats, chains, draws, attrs) for t in targets}


def _declared_groups(measures: Sequence[MeasureBase]) -> pd.Index | None:
    declared = {repr(m.inputs.groups): m.inputs.groups for m in measures if m.inputs.groups is not None}
    if len(declared) > 1:
        raise ValueError(f"the measures declare different groups {sorted(declared)}; declare the same groups.")
    return next(iter(declared.values()), None)


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


def _restricted(sample: GroupedSample, measures: Sequence[MeasureBase]) -> GroupedSample:
    """The sample after the measures' ``min_group_size`` (group size: labeled rows)."""
    min_size, small = small_group_options(measures)
    key = measures[0].key if len(measures) == 1 else "posteriors"
    plan = small_group_plan(sample.group_sizes(), sample.groups, min_size, small, key)
    if plan is None:
        return sample
    plan.warn(stacklevel=external_stacklevel())
    codes = plan.codes(sample.group_codes)
    kept = codes >= 0
    return GroupedSample(sample.y_true[kept], sample.y_pred[kept], codes[kept], plan.groups)


def _check_reference(reference: Any, groups: pd.Index) -> None:
    if reference is not None and reference not in groups:
        raise ValueError(f"reference={reference!r} is not one of the groups {list(groups)}; pass one of them.")


def _posterior(
    target: MeasureBase, tensor: MulticlassStats, stats: MulticlassStats, chains: int, draws: int, attrs: dict
) -> MeasurePosterior:
    """One measure's posterior: its base metrics per group and the measure, draw by draw."""
    n_groups = len(stats.groups)
    values, overall = {}, {}
    reasons: list[str] = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for b in target.bases:  # a rate no labeled row informs is undefined, not its prior (_method)
            drawn, drawn_overall = b.from_stats(tensor)
            seen, seen_overall = b.from_stats(stats)
            values[b.name], why = without_prior_only(b, drawn, seen, stats.groups)
            overall[b.name], _ = without_prior_only(b, drawn_overall, seen_overall, stats.groups)
            reasons += why
        measure_draws = np.asarray(target.from_group_values(values, groups=stats.groups, overall=overall), float)
    reason = None
    if np.isnan(measure_draws).any():
        count = f"{int(np.isnan(measure_draws).sum())} of {measure_draws.size} draws are undefined"
        reason = f"{count}: {'; '.join(reasons)}" if reasons else count
        warn_undefined(target.key, reason)
    return MeasurePosterior(
        measure=target,
        draws=measure_draws.reshape(chains, draws),
        group_draws={k: np.asarray(v, float).reshape(chains, draws, n_groups) for k, v in values.items()},
        groups=stats.groups,
        method="bb",
        counts=stats.counts,
        attrs=dict(attrs),
        undefined_reason=reason,
    )
