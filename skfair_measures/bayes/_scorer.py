"""A scikit-learn scorer that reduces a fairness posterior to one number.

Model selection needs a float per candidate. :class:`BayesianScorer` computes the
posterior of a measure on the validation fold and reduces it by a stated rule:

- ``"mean"``: the posterior mean of the measure, negated when the measure is
  minimised (as scikit-learn's ``neg_*`` scorers) — the Bayesian analogue of the
  point estimate;
- ``"upper"``: the one-sided upper credible bound of ``|Delta - center|`` (its
  ``prob`` quantile), negated — a cautious choice: a model only scores well if it
  is fair *with high posterior probability*;
- ``"prob_fair"``: ``P(|Delta - center| <= eps)``, the probability of being
  practically fair (seed 000 section 3), higher is better. A probability needs a
  posterior whose interval is its draws, so with ``method="auto"`` this rule uses the
  method of auto's rules, never auto's interval of few labels widened to another
  estimate (a confidence interval, which gives none).

An undefined posterior (a group rate with no samples in its denominator) scores
NaN, which scikit-learn reports for that candidate and fold.

With an unlabeled pool (``unlabeled_X``) the scorer scores it with the very
estimator being evaluated, so each candidate's estimate uses its own scores. The
method follows the table :data:`~._table.METHODS`: ``"bc"``, ``"bcr"`` and
``"ppi"`` need the pool; the default ``"auto"`` uses it when given (``"bcr"``, or
``"ppi"`` with ``sample_weight``) and is ``"bb"`` without it; ``"bb"`` reads it only
for ``prior="scores"``, and a pool no method reads is refused by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from .._groups import resolve_sensitive
from ..measures import Measure
from ..results import check_prob
from ..scoring import FairnessScorer, _response
from ._api import posterior
from ._auto import auto_method
from ._posterior import DEFAULT_EPS
from ._table import AUTO, METHODS, check_method, refuse_unread_unlabeled

__all__ = ["BayesianScorer"]

_RULES = ("mean", "upper", "prob_fair")


class BayesianScorer(FairnessScorer):
    """Score an estimator by a summary of a fairness measure's posterior.

    Parameters
    ----------
    measure : Measure or str
        A count-based fairness measure or its registry key.
    sensitive : str or list of str, optional
        Column(s) of ``X`` (and of ``unlabeled_X``) with the sensitive attribute;
        if None, ``sensitive_features`` is requested through metadata routing and
        ``unlabeled_sensitive`` must be given.
    groups : array-like, optional
        All expected groups, as in :func:`~skfair_measures.fairness_scorer`.
    method : {"auto", "bb", "bc", "bcr", "ppi"}, default="auto"
        A name in :data:`~skfair_measures.bayes.METHODS`. ``"auto"`` applies the
        table's rule to what the scorer passes: without ``unlabeled_X`` there are no
        unlabeled scores, so it is ``"bb"`` (the labeled counts); with
        ``unlabeled_X`` it is ``"bcr"`` (``"ppi"`` with ``sample_weight``, ``"bb"``
        when the calibration checks fail). ``post.method`` records the choice.
    rule : {"mean", "upper", "prob_fair"}, default="upper"
        How the posterior becomes one number; see the module docstring. The
        returned value is always "greater is better".
    prob : float, default=0.95
        Credible level of ``rule="upper"``.
    eps : float, default=DEFAULT_EPS
        Half-width of practical fairness for ``rule="prob_fair"``.
    unlabeled_X : array-like or DataFrame, optional
        Unlabeled samples; required for ``method="bc"``, ``"bcr"`` and ``"ppi"``,
        used by ``"auto"``, refused by ``"bb"`` unless ``prior="scores"``.
    unlabeled_sensitive : array-like, optional
        Groups of ``unlabeled_X`` (not needed in column mode).
    reference : object, optional
        Reference group (signed difference); rarely useful for model selection.
    random_state : int, default=0
        Seed, fixed so that every candidate is scored with the same random stream.
    **posterior_kwargs
        Passed to :func:`skfair_measures.bayes.posterior` (``prior=``,
        ``n_draws=``, ``chains=``, ``tune=``, ``calibration=``, ...).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> X = pd.DataFrame({"x": [0.0, 1, 2, 3, 4, 5, 6, 7], "sex": [0, 1] * 4})
    >>> y = [0, 0, 0, 1, 0, 1, 1, 1]
    >>> clf = LogisticRegression().fit(X, y)
    >>> scorer = BayesianScorer("fairness.acc", "sex", rule="prob_fair", eps=0.1)
    >>> 0.0 <= scorer(clf, X, y) <= 1.0
    True
    """

    def __init__(
        self,
        measure: Measure | str,
        sensitive: str | Sequence[str] | None = None,
        *,
        groups: Any = None,
        method: str = "auto",
        rule: Literal["mean", "upper", "prob_fair"] = "upper",
        prob: float = 0.95,
        eps: float = DEFAULT_EPS,
        unlabeled_X: Any = None,
        unlabeled_sensitive: Any = None,
        reference: Any = None,
        random_state: int = 0,
        **posterior_kwargs: Any,
    ) -> None:
        super().__init__(measure, sensitive, groups=groups)
        if rule not in _RULES:
            raise ValueError(f"rule={rule!r}; pass one of {list(_RULES)}.")
        spec = check_method(method)
        check_prob(prob)
        if spec.unlabeled == "required" and unlabeled_X is None:
            raise ValueError(f"method={method!r} needs unlabeled_X= (an unlabeled pool the estimator will score).")
        if unlabeled_X is not None:
            refuse_unread_unlabeled(method, posterior_kwargs, "unlabeled_X")
        if unlabeled_X is not None and sensitive is None and unlabeled_sensitive is None:
            raise ValueError(
                f"method={method!r} without sensitive= needs unlabeled_sensitive= (the groups of unlabeled_X)."
            )
        self.method, self.rule, self.prob, self.eps = method, rule, prob, eps
        self.unlabeled_X, self.unlabeled_sensitive = unlabeled_X, unlabeled_sensitive
        self.reference, self.random_state, self.posterior_kwargs = reference, random_state, posterior_kwargs

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The parameters, with the options passed on to the posterior (so that ``clone`` keeps them)."""
        return {**super().get_params(deep), **self.posterior_kwargs}

    def reduce(self, post: Any) -> float:
        """Apply the rule to a :class:`~skfair_measures.bayes.MeasurePosterior` (NaN when it is undefined)."""
        if self.rule == "mean":
            return post.mean() if self._measures[0].greater_is_better else -post.mean()
        return -post.upper_bound(self.prob) if self.rule == "upper" else post.prob_within(self.eps)

    def _scores(self, estimator: Any, X: Any, y: Any, groups: Any, sample_weight: Any) -> dict[str, float]:
        pooled, used = self.unlabeled_X is not None, self.method
        if used == AUTO:
            used, _ = auto_method({"unlabeled_scores": [] if pooled else None, "sample_weight": sample_weight})
        if sample_weight is not None and not METHODS[used].weights:
            raise TypeError(
                f"BayesianScorer(method={self.method!r}) counts labeled samples here (method {used!r}); "
                "sample_weight needs method='ppi', or 'auto' with unlabeled_X."
            )
        (measure,) = self._measures
        pos_label = measure.inputs.pos_label
        extra: dict[str, Any] = {} if sample_weight is None else {"sample_weight": sample_weight}
        if pooled:
            extra["unlabeled_scores"] = _response(estimator, self.unlabeled_X, "predict_proba", pos_label)
            columns = self._columns()
            extra["unlabeled_sensitive"] = (
                self.unlabeled_sensitive if columns is None else resolve_sensitive(X=self.unlabeled_X, columns=columns)
            )
        # prob_fair reads a probability, which only a posterior whose interval is its draws gives: under auto,
        # the method of auto's rules (not auto's interval of few labels widened to another estimate)
        extra |= {"method": used if self.rule == "prob_fair" else self.method, "reference": self.reference}
        extra |= {"sensitive_features": groups, "random_state": self.random_state}
        scores = _response(estimator, X, "predict_proba", pos_label)
        post = posterior(measure, np.asarray(y), scores, **extra, **self.posterior_kwargs)
        return {measure.key: float(self.reduce(post))}

    def __repr__(self, N_CHAR_MAX: int = 700) -> str:
        return f"BayesianScorer({self._measures[0].key}, method={self.method!r}, rule={self.rule!r})"
