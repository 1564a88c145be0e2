"""Choosing a model, or a decision threshold, under fairness constraints.

:func:`constrained_refit` is a ``refit=`` callable for :class:`~sklearn.model_selection.GridSearchCV`
and :class:`~sklearn.model_selection.RandomizedSearchCV` scored with
:func:`~skfair_measures.make_scorers`: among the candidates whose *aggregated*
constraint measures meet their bounds, it picks the best mean objective. The
constraint measure ``fairness.acc_eod=.05`` cannot do this: it decides per fold, and
scikit-learn then averages numbers that are accuracies in some folds and negated gaps in
others. :func:`constrained_threshold` applies the same rule to decision thresholds, and
:func:`pareto_front` lists the candidates no other beats on the objective and every
constraint at once.

How a candidate's measure is aggregated over the test folds (``aggregate=``):

- ``"pooled"``: the measure on the out-of-fold counts summed over the folds (counts
  add; every row is scored once, by the model that did not see it). Needs
  ``make_scorers(..., counts=True)``. Its interval comes from a Dirichlet posterior of
  each group's confusion cells (Jeffreys prior, 0.5 per cell; weighted counts are
  rescaled to the group's rows, which ignores the spread of the weights).
- ``"mean"``: the mean of the fold values, as ``mean_test_<key>``; a fold where the
  measure is NaN makes the mean NaN. Its interval is Student's t over the folds
  (folds share training rows, so it is optimistic).
- ``"auto"`` (default): ``"pooled"`` for measures whose counts are in ``cv_results_``,
  ``"mean"`` for the others. The table says which was used.

With ``check="bound"`` a bound is met when the worse end of the ``prob`` interval of the
measure meets it (the upper bound of a gap, the lower bound of a ratio), not only its
estimate. When no candidate qualifies, ``if_none="raise"`` (default) raises
:class:`NoFeasibleCandidateError`, whose ``table`` holds every candidate; ``"fairest"``
picks the candidate with the smallest violation, with an :class:`InfeasibleConstraintWarning`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as st

from ._counts import ConfusionStats
from .measures import MeasureBase
from .multiclass import dirichlet_draws
from .registry import as_measures
from .results import check_prob
from .scoring import pooled_counts
from .thresholds import _check_thresholds, disparity_at_thresholds
from .uncertainty import Estimate, mapped_interval, summarize

__all__ = [
    "ConstrainedRefit",
    "InfeasibleConstraintWarning",
    "NoFeasibleCandidateError",
    "ThresholdChoice",
    "badness",
    "constrained_refit",
    "constrained_threshold",
    "pareto_front",
    "summary_table",
]

#: Concentration per confusion cell of the Dirichlet posterior behind pooled intervals (Jeffreys).
PRIOR = 0.5
_AGGREGATES = ("auto", "pooled", "mean")
_IF_NONE = ("raise", "fairest")
_CHECKS = ("value", "bound")


class NoFeasibleCandidateError(ValueError):
    """No candidate meets every bound; ``table`` holds every candidate's aggregated values."""

    def __init__(self, message: str, table: pd.DataFrame) -> None:
        super().__init__(message)
        self.table = table


class InfeasibleConstraintWarning(UserWarning):
    """No candidate met every bound, and the fairest one was chosen (``if_none="fairest"``)."""


def badness(measure: MeasureBase, values: Any) -> np.ndarray:
    """Smaller is fairer: the distance to the ideal value, else the value in the measure's direction.

    Examples
    --------
    >>> from skfair_measures import msr
    >>> badness(msr("fairness.eod"), [0.1, 0.02]).tolist()
    [0.1, 0.02]
    """
    values = np.asarray(values, dtype=float)
    if measure.ideal is not None:
        return np.abs(values - measure.ideal)
    if measure.minimize is None:
        raise ValueError(f"{measure.key} is signed and has no ideal value: no value is fairer than another.")
    return values if measure.minimize else -values


def _check_choice(value: Any, options: tuple[str, ...], name: str) -> str:
    if value not in options:
        raise ValueError(f"{name}={value!r}; pass one of {list(options)}.")
    return value


def _bounded(subject_to: Mapping[Any, float]) -> list[tuple[MeasureBase, float]]:
    """The constraint measures with their bounds; a measure without a direction is refused."""
    if not isinstance(subject_to, Mapping) or not subject_to:
        raise ValueError('subject_to must be a non-empty dict {measure: bound}, e.g. {"fairness.eod": 0.05}.')
    out = []
    for m, bound in zip(as_measures(list(subject_to)), subject_to.values(), strict=True):
        if m.minimize is None:
            raise ValueError(
                f"subject_to: {m.key} is signed (it has no better direction), so a bound on it has no side; "
                f"bound its absolute difference instead (e.g. fairness.{m.key.split('.')[-1].split('_')[0]})."
            )
        if not isinstance(bound, int | float | np.number) or not np.isfinite(bound):
            raise ValueError(f"subject_to[{m.key!r}]={bound!r}; pass a finite number.")
        out.append((m, float(bound)))
    return out


@dataclass
class _Evidence:
    """One measure over the candidates: point values, and what its interval is drawn from."""

    measure: MeasureBase
    aggregate: str  # "pooled", "mean" or "sample"
    values: np.ndarray  # (n_candidates,)
    stats: list[ConfusionStats] | None = None  # one sample of counts per candidate
    folds: np.ndarray | None = None  # (n_candidates, n_folds)

    def _posterior(self, c: int, n_draws: int, rng: np.random.Generator) -> tuple[ConfusionStats, ConfusionStats]:
        """Candidate ``c``'s counts (weighted ones scaled to the group's rows) and Dirichlet posterior draws of them."""
        s = self.stats[c]
        counts = np.asarray(s.counts, dtype=float)
        if s.rows is not None:
            n = counts.sum(axis=(-2, -1))
            counts = counts * np.divide(s.rows, n, out=np.zeros_like(n), where=n > 0)[:, None, None]
        observed = ConfusionStats(counts, s.groups)
        return observed, dirichlet_draws(observed, n_draws, prior=PRIOR, random_state=rng)

    def draws(self, c: int, n_draws: int, rng: np.random.Generator) -> np.ndarray:
        """Posterior draws of the measure for candidate ``c`` (the evidence has counts)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(self.measure.from_stats(self._posterior(c, n_draws, rng)[1]))

    def interval(self, c: int, prob: float, n_draws: int, rng: np.random.Generator) -> tuple[float, float]:
        """The central interval of probability ``prob`` of the measure for candidate ``c`` (NaN where undefined).

        With counts, from posterior draws of every group's rates: a measure at an edge of its
        range (an absolute difference, a ratio) takes the joint band of its signed parts mapped
        through its operation (:func:`~skfair_measures.uncertainty.mapped_interval`), so its
        pooled value lies inside; a signed one the quantiles of its draws. Without counts,
        Student's t over the folds.
        """
        q = np.array([(1 - prob) / 2, (1 + prob) / 2])
        if not np.isfinite(self.values[c]):
            return (np.nan, np.nan)
        if self.stats is not None:
            m = self.measure
            with np.errstate(invalid="ignore", divide="ignore"):
                counts, posterior = self._posterior(c, n_draws, rng)
                values, overall, groups = m.group_values_from_stats(posterior)
                observed = m.group_values_from_stats(counts)[0]
                d = np.asarray(m.from_group_values(values, groups=groups, overall=overall), dtype=float)
            draws = {k: np.asarray(v, dtype=float).reshape(n_draws, -1) for k, v in values.items()}
            mapped = mapped_interval(m, draws, observed, groups, prob)
            d = d[np.isfinite(d)]
            return mapped if mapped is not None else tuple(np.quantile(d, q)) if d.size else (np.nan, np.nan)
        f = np.empty(0) if self.folds is None else self.folds[c]
        if f.size < 2 or not np.isfinite(f).all():
            return (np.nan, np.nan)
        return tuple(self.values[c] + st.t.ppf(q, f.size - 1) * f.std(ddof=1) / np.sqrt(f.size))


def badness_direction(m: MeasureBase) -> float:
    """+1 if smaller values of ``m`` are better, -1 if larger ones are."""
    return 1.0 if m.minimize else -1.0


def _table(rule: ConstrainedRefit, objective: _Evidence, constraints: list[tuple[_Evidence, float]]) -> pd.DataFrame:
    """Every candidate's aggregated values, intervals, checked values and feasibility."""
    rng = np.random.default_rng(rule.random_state)
    om, n = objective.measure, objective.values.size
    cols: dict[str, Any] = {}
    feasible, excess = np.isfinite(objective.values), np.zeros(n)
    reasons = np.where(feasible, "", f"{om.key} undefined").astype(object)
    for ev, bound in [(objective, None), *constraints]:
        m = ev.measure
        b = np.array([ev.interval(c, rule.prob, rule.n_draws, rng) for c in range(n)]).reshape(n, 2)
        cols[m.key], cols[f"{m.key} lo"], cols[f"{m.key} hi"] = ev.values, b[:, 0], b[:, 1]
        if bound is None:
            continue
        checked = (b[:, 1] if m.minimize else b[:, 0]) if rule.check == "bound" else ev.values  # the worse end
        over = badness_direction(m) * (checked - bound)  # > 0: the bound is broken
        ok = np.isfinite(checked) & (over <= 0)
        cols[f"{m.key} checked"], cols[f"{m.key} aggregate"], cols[f"{m.key} ok"] = checked, ev.aggregate, ok
        excess = np.maximum(excess, np.where(np.isfinite(checked), np.maximum(over, 0), np.inf))
        why = np.where(np.isfinite(checked), f"{m.key} breaks its bound {bound:g}", f"{m.key} undefined")
        reasons = np.where(ok, reasons, np.where(reasons == "", why, reasons + "; " + why))
        feasible &= ok
    cols |= {f"{om.key} aggregate": objective.aggregate, "feasible": feasible, "excess": excess, "reason": reasons}
    table = pd.DataFrame(cols, index=pd.RangeIndex(n, name="candidate"))
    table.attrs.update(prob=rule.prob, ideal={m.key: m.ideal for m in [om, *(ev.measure for ev, _ in constraints)]})
    return table


#: What made a selection table's interval, by the measure's aggregate.
_CONSTRUCTIONS = {
    "pooled": "Dirichlet posterior of the pooled counts",
    "sample": "Dirichlet posterior of the counts",
    "mean": "Student t over the folds",
}


def summary_table(table: pd.DataFrame, eps: float | None = None) -> pd.DataFrame:
    """A selection table (``rule.table(...)``, ``choice.table``) as summary rows: one per candidate and measure.

    The columns are :data:`~skfair_measures.uncertainty.SUMMARY_COLUMNS`, indexed by the table's
    candidate; each measure's value, interval (``<key> lo``/``<key> hi`` at the table's ``prob``)
    and construction (its aggregate) become an :class:`~skfair_measures.uncertainty.Estimate`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a, y = rng.choice(["F", "M"], 1000), rng.integers(0, 2, 1000)
    >>> score = 0.4 * y + rng.uniform(0, 0.5, 1000)
    >>> pick = constrained_threshold("classif.acc", {"fairness.eod": 0.1}, y, score, sensitive_features=a,
    ...                              thresholds=[0.3, 0.5])
    >>> summary_table(pick.table)[["measure", "construction"]].drop_duplicates().values.tolist()
    [['classif.acc', 'Dirichlet posterior of the counts'], ['fairness.eod', 'Dirichlet posterior of the counts']]
    """
    keys = [c[: -len(" lo")] for c in table.columns if c.endswith(" lo")]
    rows = [
        Estimate(
            key,
            float(row[key]),
            construction=_CONSTRUCTIONS[row[f"{key} aggregate"]],
            interval=(float(row[f"{key} lo"]), float(row[f"{key} hi"])),
            prob=table.attrs.get("prob", 0.9),
            target="population",
            center=table.attrs.get("ideal", {}).get(key) or 0.0,
            reason=None if np.isfinite(row[key]) else f"{key} is undefined for this candidate",
        ).summary(eps=eps)
        for _, row in table.iterrows()
        for key in keys
    ]
    return summarize(rows).set_index(pd.Index(np.repeat(table.index.to_numpy(), len(keys)), name=table.index.name))


def _choose(rule: ConstrainedRefit, table: pd.DataFrame, what: str) -> int:
    """The best feasible objective (first on ties); else the documented fallback."""
    score = -badness_direction(rule.objective) * table[rule.objective.key].to_numpy(dtype=float)
    feasible = table["feasible"].to_numpy(dtype=bool)
    if feasible.any():
        return int(np.flatnonzero(feasible)[np.argmax(score[feasible])])
    excess = table["excess"].to_numpy(dtype=float)
    usable = np.isfinite(excess) & np.isfinite(score)
    if not usable.any():
        why = f"no {what} has a defined objective and defined constraint values; see the error's table."
        raise NoFeasibleCandidateError(why, table)
    least = excess[usable].min()
    pick = np.flatnonzero(usable & (excess == least))
    best = int(pick[np.argmax(score[pick])])
    row, label = table.iloc[best], table.columns[0]  # the candidates' label: a threshold, a learner or params
    value = row[label]
    name = f"{value:g}" if label == "threshold" else repr(value) if label == "learner" else f"{best} ({value})"
    detail = f"the fairest is {what} {name}: {row['reason']} (by {least:.4g})"
    if rule.if_none == "raise":
        raise NoFeasibleCandidateError(
            f"no {what} meets every bound: {detail}. Relax the bound, widen the search, or pass "
            "if_none='fairest' to take the fairest one with a warning; the error's table holds every candidate.",
            table,
        )
    warnings.warn(f"no {what} meets every bound; chose {detail}.", InfeasibleConstraintWarning, stacklevel=3)
    return best


def _front(table: pd.DataFrame, measures: list[MeasureBase]) -> np.ndarray:
    """Whether each candidate is on the Pareto front (no other at least as good everywhere, better somewhere)."""
    loss = np.stack([badness_direction(m) * table[m.key].to_numpy(dtype=float) for m in measures], axis=1)
    ok = np.isfinite(loss).all(axis=1)
    le = (loss[:, None, :] <= loss[None, :, :]).all(-1)  # le[j, i]: j at least as good as i everywhere
    lt = (loss[:, None, :] < loss[None, :, :]).any(-1)
    dominated = ((le & lt) & ok[:, None]).any(axis=0)
    return ok & ~dominated


def _prob_fairer(ev: _Evidence, chosen: int, others: np.ndarray, n_draws: int, random_state: Any) -> np.ndarray:
    """P(candidate is fairer than the chosen one) on ``ev``'s measure, from independent count posteriors."""
    out = np.full(others.size, np.nan)
    if ev.stats is None:
        return out
    seeds = np.random.SeedSequence(random_state).spawn(ev.values.size)
    bb = badness(ev.measure, ev.draws(chosen, n_draws, np.random.default_rng(seeds[chosen])))
    for i, c in enumerate(others):
        if c == chosen:
            continue
        ba = badness(ev.measure, ev.draws(int(c), n_draws, np.random.default_rng(seeds[c])))
        ok = np.isfinite(ba) & np.isfinite(bb)
        out[i] = float(np.mean((ba[ok] < bb[ok]) + 0.5 * (ba[ok] == bb[ok]))) if ok.any() else np.nan
    return out


# -- cross-validation searches -----------------------------------------------------------
def _search_evidence(cv_results: Mapping[str, Any], m: MeasureBase, aggregate: str) -> _Evidence:
    """One measure's aggregate over the test folds of every candidate of a search."""
    key = m.key
    n_splits = sum(k.startswith("split") and k.endswith(f"_test_{key}") for k in cv_results)
    split_keys = [f"split{i}_test_{key}" for i in range(n_splits)]  # scikit-learn numbers the splits from 0
    if not split_keys:
        have = sorted(k[len("mean_test_") :] for k in cv_results if k.startswith("mean_test_") and "#" not in k)
        raise KeyError(
            f"cv_results_ has no scores of {key}; the search scored {have}. Put {key!r} in "
            "scoring=sfm.make_scorers([...])."
        )
    folds = -badness_direction(m) * np.column_stack([cv_results[k] for k in split_keys]).astype(float)  # negated
    stats = pooled_counts(cv_results, key) if aggregate != "mean" else None
    needs = f"the counts of {key} in cv_results_: score with sfm.make_scorers([...], counts=True)"
    return _evidence_of(m, aggregate, folds, stats, needs)


def _evidence_of(
    m: MeasureBase, aggregate: str, folds: np.ndarray, stats: list[ConfusionStats] | None, needs: str
) -> _Evidence:
    """One measure over the candidates from its fold values ``(n_candidates, n_folds)`` and pooled counts.

    ``stats`` is None where the counts are not there; ``needs`` says how to get them
    (for the error of ``aggregate="pooled"``).
    """
    if stats is None or aggregate == "mean":
        if aggregate == "pooled":
            raise ValueError(f"aggregate='pooled' needs {needs}, or pass aggregate='mean'.")
        return _Evidence(m, "mean", folds.mean(axis=1), folds=folds)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore")  # an undefined pooled value is NaN, and the table says why
        values = np.array([m.evaluate_stats(s).value for s in stats], dtype=float)
    return _Evidence(m, "pooled", values, stats=stats, folds=folds)


def _decide(
    rule: ConstrainedRefit, obj: _Evidence, cons: list[tuple[_Evidence, float]], label: str, labels: Any, what: str
) -> tuple[pd.DataFrame, int, pd.DataFrame]:
    """The rule over given evidence: every candidate's table (``label`` column first), the choice, the front."""
    table = _table(rule, obj, cons)
    table.insert(0, label, labels)
    chosen = _choose(rule, table, what)
    return table, chosen, _front_table(rule, table, cons, chosen)


class ConstrainedRefit:
    """The ``refit=`` rule of :func:`constrained_refit` (see there); also explains its choice.

    Calling it with ``cv_results_`` returns the chosen index. :meth:`table` gives every
    candidate's aggregated values, :meth:`front` the Pareto front with the chosen
    candidate marked. It holds no state: the same ``cv_results_`` give the same answer.
    """

    def __init__(
        self,
        objective: MeasureBase | str,
        subject_to: Mapping[Any, float],
        *,
        aggregate: str = "auto",
        check: str = "value",
        if_none: str = "raise",
        prob: float = 0.9,
        n_draws: int = 2000,
        random_state: Any = 0,
    ) -> None:
        (self.objective,) = as_measures([objective])
        if self.objective.minimize is None:
            raise ValueError(
                f"objective={self.objective.key} is signed (no better direction); choose a measure to maximise or "
                "minimise."
            )
        self.subject_to = _bounded(subject_to)
        self.aggregate = _check_choice(aggregate, _AGGREGATES, "aggregate")
        self.check = _check_choice(check, _CHECKS, "check")
        self.if_none = _check_choice(if_none, _IF_NONE, "if_none")
        self.prob = check_prob(prob, "prob")
        if not isinstance(n_draws, int | np.integer) or n_draws < 100:
            raise ValueError(f"n_draws={n_draws!r}; pass at least 100 posterior draws.")
        self.n_draws, self.random_state = int(n_draws), random_state

    def table(self, cv_results: Mapping[str, Any]) -> pd.DataFrame:
        """Every candidate: ``params``, the aggregated objective and constraints with intervals, feasibility.

        Columns per measure: its value, ``<key> lo`` / ``<key> hi`` (central interval of
        probability ``prob``), ``<key> aggregate``; per constraint also ``<key> checked``
        (the value compared with the bound: the estimate, or its one-sided
        ``confidence`` bound) and ``<key> ok``; then ``feasible``, ``excess`` (largest
        violation) and ``reason``. A halving search's earlier rounds are marked
        ``feasible=False`` (``reason``: not in the last round).
        """
        return self._table(cv_results)[0]

    def _table(self, cv_results: Mapping[str, Any]) -> tuple[pd.DataFrame, list[tuple[_Evidence, float]]]:
        cons = [(_search_evidence(cv_results, m, self.aggregate), b) for m, b in self.subject_to]
        table = _table(self, _search_evidence(cv_results, self.objective, self.aggregate), cons)
        table.insert(0, "params", list(cv_results["params"]))
        if "iter" in cv_results:  # successive halving: only the last round's candidates saw all resources
            it = np.asarray(cv_results["iter"])
            table.loc[it < it.max(), ["feasible", "excess", "reason"]] = [False, np.inf, "not in the last round"]
        return table, cons

    def __call__(self, cv_results: Mapping[str, Any]) -> int:
        """The chosen candidate's index in ``cv_results_`` (scikit-learn's ``best_index_``)."""
        return _choose(self, self.table(cv_results), "candidate")

    def front(self, cv_results: Mapping[str, Any]) -> pd.DataFrame:
        """The Pareto front of :meth:`table`, with ``chosen`` and ``prob_fairer`` columns.

        ``prob_fairer`` is, for each front candidate, the posterior probability that it is
        fairer than the chosen one on the first constraint measure (needs pooled
        counts; NaN otherwise). The chosen candidate is in the table even when it is
        not on the front (a feasible choice can be dominated by an infeasible one).
        """
        table, cons = self._table(cv_results)
        with warnings.catch_warnings():  # the fallback was warned about when the search called the rule
            warnings.simplefilter("ignore", InfeasibleConstraintWarning)
            chosen = _choose(self, table, "candidate")
        return _front_table(self, table, cons, chosen)

    def __repr__(self) -> str:
        bounds = ", ".join(f"{m.key!r}: {b:g}" for m, b in self.subject_to)
        return (
            f"constrained_refit({self.objective.key!r}, subject_to={{{bounds}}}, aggregate={self.aggregate!r}, "
            f"check={self.check!r}, prob={self.prob:g}, if_none={self.if_none!r})"
        )


def _front_table(rule: ConstrainedRefit, table: pd.DataFrame, cons: list[tuple[_Evidence, float]], chosen: int):
    """The candidates on the Pareto front, and the chosen one, with ``chosen``, ``on_front`` and ``prob_fairer``."""
    objective = rule.objective
    front = _front(table, [objective, *(ev.measure for ev, _ in cons)])
    on = front | (np.arange(front.size) == chosen)
    out = table[on].copy()
    out.insert(0, "chosen", out.index == chosen)
    out["on_front"] = front[on]
    out["prob_fairer"] = _prob_fairer(cons[0][0], chosen, out.index.to_numpy(), rule.n_draws, rule.random_state)
    out.attrs.update(objective=objective.key, bounds={ev.measure.key: b for ev, b in cons}, chosen=chosen)
    return out.sort_values(objective.key, ascending=bool(objective.minimize))


def constrained_refit(objective: MeasureBase | str, subject_to: Mapping[Any, float], **rule: Any) -> ConstrainedRefit:
    """A ``refit=`` rule: the best mean objective among candidates whose aggregated constraints meet their bounds.

    For :class:`~sklearn.model_selection.GridSearchCV` and
    :class:`~sklearn.model_selection.RandomizedSearchCV` with
    ``scoring=sfm.make_scorers([...])`` holding the objective and every constraint
    measure (``counts=True`` to aggregate by pooled out-of-fold counts). The halving
    searches of scikit-learn 1.9 rank by one ``mean_test_score``: they stop with a
    ``KeyError`` on a dict scorer and never call a ``refit`` callable, so the rule cannot
    be used with them; on ``cv_results_`` with an ``iter`` column it chooses among the
    last round.

    Parameters
    ----------
    objective : str or Measure
        The measure to optimise, in its own direction (``classif.acc`` is maximised,
        ``classif.fpr`` minimised).
    subject_to : dict of (str or Measure) to float
        Bounds: a minimised measure (a gap such as ``fairness.eod``) must be ``<=`` its
        bound, a maximised one (a ratio) ``>=``. Signed measures are refused.
    aggregate : {"auto", "pooled", "mean"}, default="auto"
        How fold results become one value per candidate (see the module docs):
        ``"pooled"`` computes the measure on the summed out-of-fold counts,
        ``"mean"`` averages the fold values, ``"auto"`` pools where the counts are there.
    check : {"value", "bound"}, default="value"
        What meets each bound: the estimate, or the worse end of its central interval of
        probability ``prob`` (the upper end for a gap: its one-sided ``(1 + prob) / 2`` bound).
    if_none : {"raise", "fairest"}, default="raise"
        When no candidate qualifies: raise :class:`NoFeasibleCandidateError` (the
        search's ``fit`` stops; the error's ``table`` holds every candidate), or take the
        candidate with the smallest violation, warning :class:`InfeasibleConstraintWarning`.
    prob : float, default=0.9
        Probability of the central intervals in :meth:`ConstrainedRefit.table` (and of the
        bound ``check="bound"`` compares).
    n_draws : int, default=2000
        Posterior draws per candidate and measure for pooled intervals.
    random_state : int, default=0
        Seed of those draws (the choice is reproducible).

    Returns
    -------
    ConstrainedRefit
        Pass it as ``refit=``; ``rule.table(search.cv_results_)`` and
        ``rule.front(search.cv_results_)`` explain the choice.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import skfair_measures as sfm
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from sklearn.pipeline import make_pipeline
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"x": rng.normal(size=600), "sex": rng.choice(["F", "M"], 600)})
    >>> y = (X["x"] + 0.5 * (X["sex"] == "M") + rng.normal(size=600) > 0).astype(int)
    >>> rule = sfm.constrained_refit("classif.acc", subject_to={"fairness.eod": 0.1})
    >>> search = GridSearchCV(
    ...     make_pipeline(sfm.DropColumns("sex"), DecisionTreeClassifier(random_state=0)),
    ...     {"decisiontreeclassifier__max_depth": [1, 2, 4, 8]},
    ...     scoring=sfm.make_scorers(["classif.acc", "fairness.eod"], sensitive="sex", counts=True),
    ...     refit=rule, cv=3,
    ... ).fit(X, y)
    >>> row = rule.table(search.cv_results_).loc[search.best_index_]
    >>> bool(row["feasible"]), bool(row["fairness.eod"] <= 0.1), row["fairness.eod aggregate"]
    (True, True, 'pooled')
    """
    return ConstrainedRefit(objective, subject_to, **rule)


def pareto_front(rule: ConstrainedRefit, cv_results: Mapping[str, Any]) -> pd.DataFrame:
    """The Pareto front of a search under ``rule``'s measures (see :meth:`ConstrainedRefit.front`).

    Examples
    --------
    >>> import numpy as np
    >>> rule = constrained_refit("classif.acc", {"fairness.eod": 0.05}, aggregate="mean")
    >>> cv = {"params": [{"d": 1}, {"d": 2}, {"d": 3}],
    ...       "split0_test_classif.acc": np.array([0.80, 0.85, 0.84]),
    ...       "split0_test_fairness.eod": -np.array([0.01, 0.08, 0.09]),
    ...       "split1_test_classif.acc": np.array([0.80, 0.85, 0.84]),
    ...       "split1_test_fairness.eod": -np.array([0.03, 0.06, 0.09])}
    >>> front = pareto_front(rule, cv)
    >>> front.index.tolist(), front["chosen"].tolist()  # candidate 2 is beaten by 1 on both
    ([1, 0], [False, True])
    """
    return rule.front(cv_results)


# -- decision thresholds -----------------------------------------------------------------
@dataclass(frozen=True)
class ThresholdChoice:
    """The decision threshold chosen by :func:`constrained_threshold`.

    Attributes
    ----------
    threshold : float
        The chosen threshold (predict positive when the score is ``>= threshold``).
    index : int
        Its row in ``table``.
    table : pandas.DataFrame
        Every threshold (column ``threshold``) with the objective, each constraint
        (value, interval, checked value, ok), ``feasible``, ``excess`` and ``reason``.
    front : pandas.DataFrame
        The thresholds on the Pareto front, the chosen one marked.
    """

    threshold: float
    index: int
    table: pd.DataFrame
    front: pd.DataFrame


def constrained_threshold(
    objective: MeasureBase | str,
    subject_to: Mapping[Any, float],
    y_true: Any,
    y_score: Any,
    *,
    sensitive_features: Any,
    thresholds: Any = None,
    sample_weight: Any = None,
    **rule: Any,
) -> ThresholdChoice:
    """The decision threshold with the best objective among those meeting every bound.

    The same rule as :func:`constrained_refit`, over thresholds: every measure is
    computed at every threshold from one pass of counts
    (:func:`~skfair_measures.disparity_at_thresholds`). Choose the threshold on data the
    model was not fitted on (a validation split or out-of-fold scores).

    Parameters
    ----------
    objective, subject_to
        As in :func:`constrained_refit`; the objective and the constraints must be
        measures of confusion counts.
    y_true : array-like of shape (n_samples,)
    y_score : array-like of shape (n_samples,)
        Predicted probabilities of the positive class.
    sensitive_features : array-like or DataFrame
    thresholds : array-like, optional
        Default: 101 points from 0 to 1.
    sample_weight : array-like of shape (n_samples,), optional
    **rule
        ``check``, ``if_none``, ``prob``, ``n_draws``, ``random_state``: as in :func:`constrained_refit`.

    Returns
    -------
    ThresholdChoice

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.choice(["F", "M"], 2000)
    >>> y = rng.integers(0, 2, 2000)
    >>> score = 0.4 * y + 0.03 * (a == "M") + rng.uniform(0, 0.5, 2000)
    >>> pick = constrained_threshold("classif.acc", {"fairness.eod": 0.05}, y, score, sensitive_features=a)
    >>> row = pick.table.loc[pick.index]
    >>> round(pick.threshold, 2), round(float(row["classif.acc"]), 3), round(float(row["fairness.eod"]), 3)
    (0.49, 0.905, 0.049)
    """
    rule = ConstrainedRefit(objective, subject_to, **rule)  # checks every argument

    data = dict(y_true=y_true, y_score=y_score, sensitive_features=sensitive_features, thresholds=thresholds)

    def evidence(m: MeasureBase) -> _Evidence:
        c = disparity_at_thresholds(m, **data, sample_weight=sample_weight)
        # weighted counts: the rows per group (every threshold sees every row) scale the posterior
        rows = None if sample_weight is None else disparity_at_thresholds(m, **data).stats.counts[0].sum(axis=(-2, -1))
        stats = [ConfusionStats(counts, c.stats.groups, rows=rows) for counts in c.stats.counts]
        return _Evidence(m, "sample", c.values.to_numpy(dtype=float), stats=stats)

    cons = [(evidence(m), b) for m, b in rule.subject_to]
    grid = _check_thresholds(thresholds)  # the curves' index: sorted and deduplicated
    table, chosen, front = _decide(rule, evidence(rule.objective), cons, "threshold", grid, "threshold")
    return ThresholdChoice(float(grid[chosen]), chosen, table, front)
