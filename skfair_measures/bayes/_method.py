"""What an estimation method is: validated data in, draws of every group's rates out.

:func:`skfair_measures.bayes.posterior` checks the inputs once into a
:class:`FitData` (integer codes, 0/1 labels and predictions, scores, weights) and
hands it to the method chosen in the table :data:`~._table.METHODS`.
A method returns :class:`GroupDraws`: draws of every base metric in every group,
shape ``(chain, draw, group)``, and of the pooled (overall) value, shape ``(chain,
draw)``. The measure's draws then come from its own operations, so a new method is
one class in one file and touches nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from .._undefined import name_groups
from ..base import BaseMetric
from ..results import group_labels  # decided in the core, re-exported for bayes' modules

__all__ = [
    "MOMENTS",
    "Bases",
    "Call",
    "EstimationMethod",
    "FitData",
    "GroupDraws",
    "Rng",
    "Rows",
    "ScoreMoments",
    "cell_sums",
    "group_labels",
    "group_name",
    "is_number",
    "refuse_option",
    "without_prior_only",
]


#: The base metrics a method draws, and its random generator (the arguments of :meth:`EstimationMethod.group_draws`).
Bases = tuple[BaseMetric, ...]
Rng = np.random.Generator
#: The sums per cell of :class:`ScoreMoments`: rows, ``w``, ``w s``, ``w**2``, ``w**2 s``, ``w**2 s**2`` (``s``: score).
MOMENTS = ("n", "w", "ws", "w2", "w2s", "w2s2")


def group_name(groups: pd.Index, j: int) -> Any:
    """The label of group ``j`` as a Python value (a tuple for intersectional groups)."""
    label = groups[j]
    return label.item() if isinstance(label, np.generic) else label


@dataclass(frozen=True, eq=False)
class Rows:
    """Validated rows: scores, 0/1 predictions (``score >= threshold``), group codes, weights.

    ``count``, when given, is how many rows each entry stands for: an engine's score
    histogram (``posterior(..., data=frame)``), one entry per (group, prediction, score
    bin of width ``bin_width``) holding the bin's mean score and, in ``weight``, the bin's summed weight. A
    method reads such entries through :attr:`multiplicity`; ``size`` is the number of
    rows they stand for.
    """

    scores: np.ndarray
    y_pred: np.ndarray
    codes: np.ndarray
    weight: np.ndarray | None = None
    count: np.ndarray | None = None
    bin_width: float | None = None

    @classmethod
    def empty(cls) -> Rows:
        """No rows (a fit without unlabeled data)."""
        z = np.zeros(0)
        return cls(z, z.astype(np.intp), z.astype(np.intp), None)

    @property
    def size(self) -> int:
        """The number of rows (the entries' counts summed, for a histogram)."""
        return int(self.codes.size if self.count is None else self.count.sum())

    @property
    def multiplicity(self) -> np.ndarray:
        """Rows per entry: ``count``, or 1 for every entry of plain rows."""
        return np.ones(self.codes.size) if self.count is None else np.asarray(self.count, dtype=float)


@dataclass(frozen=True)
class Call:
    """The arguments of :func:`~skfair_measures.bayes.posterior` and ``posteriors`` as given (documented there).

    All but the measures and the chosen method's options: one record, read by every step
    of the fit instead of the same parameters passed from layer to layer.
    """

    y_true: Any
    y_score: Any
    sensitive_features: Any
    method: str = "auto"
    unlabeled_scores: Any = None
    unlabeled_sensitive: Any = None
    sample_weight: Any = None
    unlabeled_sample_weight: Any = None
    reference: Any = None
    threshold: float | None = None
    pos_label: Any = None
    n_draws: int | None = None
    chains: int = 4
    random_state: Any = None
    data: Any = None
    target: str | None = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The keyword arguments (after ``y_true``, ``y_score`` and ``sensitive_features``)."""
        return tuple(f.name for f in fields(cls))[3:]

    @property
    def unlabeled(self) -> dict[str, Any]:
        """The arguments that give unlabeled rows, by name."""
        return {k: v for k, v in vars(self).items() if k.startswith("unlabeled_")}


@dataclass(frozen=True)
class ScoreMoments:
    """Per group and cell, the sums of :data:`MOMENTS`: what PPI reads, from the rows or from one engine pass.

    ``labeled`` holds arrays of shape ``(group, 2, 2)`` (cells ``[y_true, y_pred]``),
    ``unlabeled`` of shape ``(group, 2)`` (``y_pred``).
    """

    labeled: dict[str, np.ndarray]
    unlabeled: dict[str, np.ndarray]


@dataclass(frozen=True, eq=False)
class FitData:
    """Everything a method may read, validated once by the entry points.

    Attributes
    ----------
    y_true : ndarray of shape (n_labeled,)
        0/1 labels (1 = the positive label).
    labeled, unlabeled : Rows
        ``unlabeled`` has no rows when no unlabeled data were given.
    groups : pandas.Index
        Group labels; ``codes`` index into it.
    threshold : float
        The decision threshold the predictions were made with.
    target : {"population", "audited rows"}, default="population"
        What a guaranteed interval is about (:func:`~._guaranteed.audit_target`).
    moments : ScoreMoments, optional
        Given when the rows stay in an engine (``posterior(..., data=frame)``, :mod:`._frames`):
        their counts and score moments; the rows then cannot be read.
    """

    y_true: np.ndarray
    labeled: Rows
    unlabeled: Rows
    groups: pd.Index
    threshold: float
    target: str = "population"
    moments: ScoreMoments | None = None

    @property
    def n_groups(self) -> int:
        return len(self.groups)

    @property
    def counts(self) -> np.ndarray:
        """Labeled confusion counts ``[group, y_true, y_pred]`` (unweighted), shape ``(group, 2, 2)``."""
        if self.moments is not None:
            return self.moments.labeled["n"].astype(float)
        cell = (self.labeled.codes * 2 + self.y_true) * 2 + self.labeled.y_pred
        return np.bincount(cell, minlength=4 * self.n_groups).reshape(self.n_groups, 2, 2).astype(float)

    @property
    def has_unlabeled(self) -> bool:
        return self.unlabeled.size > 0


@dataclass
class GroupDraws:
    """Draws of the base metrics that a method returns.

    Attributes
    ----------
    values : dict of str to ndarray of shape (chain, draw, group)
    overall : dict of str to ndarray of shape (chain, draw)
        The base metric on all groups pooled (for ``*_to_overall`` operations and
        performance measures).
    attrs : dict
        Settings and facts of the fit, stored in the posterior's ``attrs``.
    trace : object, optional
        The MCMC trace (ArviZ ``InferenceData``) of a sampled model.
    extra : dict of str to ndarray
        More draws worth keeping (e.g. calibration parameters), shape ``(chain, draw, ...)``.
    point, point_overall : dict, optional
        A point estimate of each base metric (per group / pooled) when the method
        has one that is not the mean of its draws (PPI's ratio estimator).
    reasons : list of str
        Why some group rates are undefined (their draws are NaN).
    confidence : object, optional
        A joint confidence set of the group rates with ``measure_interval(measure,
        groups, prob)`` (``method="guaranteed"``); then the interval is that, not
        quantiles of the draws.
    interval_box : object, optional
        Such a confidence set put on another method's draws by ``method="auto"``: the
        interval is read from it (holding the estimate), the probabilities still from the
        draws.
    calibration_point : tuple of (dict, dict), optional
        The calibration model's own estimate from the same fit, without the rectifier
        (``method="bcr"``): BC's posterior mean of every base metric per group, shape
        ``(group,)``, and pooled. ``method="auto"`` reports it as its estimate when
        :func:`~._auto.auto_estimate` says so.
    """

    values: dict[str, np.ndarray]
    overall: dict[str, np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    trace: Any = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    point: dict[str, np.ndarray] | None = None
    point_overall: dict[str, float] | None = None
    reasons: list[str] = field(default_factory=list)
    confidence: Any = None
    interval_box: Any = None
    calibration_point: tuple[dict[str, np.ndarray], dict[str, float]] | None = None


def without_prior_only(
    base: BaseMetric, draws: np.ndarray, observed: np.ndarray, groups: pd.Index
) -> tuple[np.ndarray, list[str]]:
    """The draws of ``base`` with NaN where no labeled row enters its denominator, and why.

    Where the labeled counts leave a rate 0/0 (``observed`` is NaN), a conjugate
    posterior is its prior alone; read as a finding it would give a verdict about
    data that do not exist. Those draws are NaN, as the point estimate is.

    Parameters
    ----------
    base : BaseMetric
    draws : ndarray of shape (..., group) or (...)
        Draws of the rate per group, or pooled.
    observed : ndarray of shape (group,) or ()
        The rate on the labeled counts (NaN where 0/0).
    groups : pandas.Index
        Group labels (for the reasons); unused for a pooled rate.

    Returns
    -------
    draws : ndarray
    reasons : list of str
    """
    empty = np.isnan(np.asarray(observed, dtype=float))
    if not empty.any():
        return draws, []
    why = base.undefined_when or "no samples in its denominator"
    named = name_groups(group_name(groups, j) for j in np.flatnonzero(empty))
    where = f"group(s) {named}" if empty.ndim else "all groups"
    reason = f"{base.name} in {where} has no labeled row in its denominator ({why})"
    return np.where(empty, np.nan, draws), [f"{reason}; its posterior would be the prior alone"]


def cell_sums(cell: np.ndarray, values: Any, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Per cell (each row's flat index ``cell`` in ``shape``), the sums of :data:`MOMENTS` (``values``, by row)."""
    sums = (np.bincount(cell, weights=v, minlength=int(np.prod(shape))).reshape(shape) for v in values)
    return dict(zip(MOMENTS, sums, strict=True))


def refuse_option(name: str, value: Any, valid: str) -> None:
    """Refuse option ``name`` of a method's options record, naming its valid values."""
    raise ValueError(f"{name}={value!r}; {valid}.")


def is_number(value: Any) -> bool:
    """A real number (not a bool), finite."""
    real = isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)
    return real and bool(np.isfinite(value))


class EstimationMethod:
    """Base class of the estimation methods: a frozen dataclass of options plus :meth:`group_draws`.

    The dataclass fields are the method's options (``posterior(method=..., **options)``);
    ``__post_init__`` validates them, so a method object is a checked options record.
    What a method can do (weights, unlabeled rows, K classes, default draws) is a
    row of the table :data:`skfair_measures.bayes.METHODS`, not a class attribute.
    """

    name: ClassVar[str] = ""

    def group_draws(self, data: FitData, bases: Bases, *, chains: int, draws: int, rng: Rng, seed: int) -> GroupDraws:
        """Draws of every base metric in every group (see :class:`GroupDraws`)."""
        raise NotImplementedError  # pragma: no cover - abstract
