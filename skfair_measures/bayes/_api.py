"""``posterior()``: the Bayesian (and prediction-powered) door out of the measure pipeline.

The entry points check the inputs once into a :class:`~._method.FitData`, build
the chosen method's checked options record from the one table
:data:`~._table.METHODS`, and dispatch; every method returns draws of the base
metrics per group, and the measure's draws come from ``measure.from_group_values``,
the very operations of the point estimate. A new method is a new class in one file
plus one row in the table.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._arrays import _check_weight, check_scores
from .._groups import encode_groups
from .._labels import binarize_labels
from .._protocol import _ONE_GROUP
from .._stats import check_inputs
from .._undefined import name_groups
from ..base import BaseMetric, ratio_roles
from ..measures import MeasureBase
from ._auto import auto_candidates, auto_estimate, auto_interval, auto_method, checked_method
from ._bb import BetaBinomial
from ._checks import CalibrationWarning
from ._dirichlet import holds_multiclass_labels, multiclass_counts, multiclass_draws, multiclass_error
from ._frames import FRAME_METHODS, frame_fit_data, frame_rows, refuse_no_unlabeled
from ._guaranteed import Guaranteed, audit_target, labels_box
from ._method import Bases, Call, EstimationMethod, FitData, GroupDraws, Rng, Rows
from ._posterior import MeasurePosterior, external_stacklevel, group_labels, warn_undefined
from ._ppi import PredictionPowered
from ._small_groups import restrict_fit_data
from ._table import AUTO, METHODS, check_method, method_options, refuse_unknown, refuse_unread_unlabeled

__all__ = ["posterior", "posteriors", "signed_measure"]


def _rng(random_state: Any) -> np.random.Generator:
    legacy = isinstance(random_state, np.random.RandomState)
    return np.random.default_rng(random_state.randint(0, 2**31 - 1) if legacy else random_state)


def signed_measure(measure: MeasureBase, reference: Any) -> MeasureBase:
    """The measure comparing every group with ``reference``, keeping the sign.

    The operation decides (as data, :meth:`~skfair_measures.operations.Operation.against`):
    a difference becomes ``diff_to_reference`` (other group minus the reference;
    with more than two groups the difference of largest magnitude), a ratio
    ``ratio_to_reference``. A measure made of other measures (composite,
    constraint) is returned unchanged, with a warning: its definition fixes how the
    groups compare.

    Examples
    --------
    >>> from skfair_measures import msr
    >>> signed_measure(msr("fairness.acc"), "M").signed
    True
    """
    if reference is None:
        return measure
    if measure.children:
        message = (
            f"reference={reference!r} does not change {measure.key}: it is made of other measures and is "
            f"evaluated as defined ({measure.description})."
        )
        warnings.warn(message, UserWarning, stacklevel=external_stacklevel())
        return measure
    return measure.against(reference)


def posterior(
    measure: MeasureBase, y_true: Any, y_score: Any, *, sensitive_features: Any, **arguments: Any
) -> MeasurePosterior:
    """Posterior distribution of a fairness measure from scores and (few) labels.

    Four methods, and a default that chooses among them (the table
    :data:`skfair_measures.bayes.METHODS` states what each takes and guarantees):

    - ``"bb"`` (Beta-Binomial, Ji, Smyth & Steyvers 2020): a conjugate Beta prior on
      every group rate, updated with the labeled data; independent Monte Carlo
      draws, no MCMC. On K > 2 classes (``y_score`` holding predicted labels), the
      Dirichlet posterior of every group's K x K confusion cells.
    - ``"bc"`` (Bayesian calibration, same paper): a hierarchical beta-calibration
      model of ``P(y = 1 | score, group)`` fitted by MCMC to the labeled data;
      every posterior draw calibrates the scores of the unlabeled data, whose
      expected confusion cells are added to the labeled counts (the paper's eq. 1).
    - ``"ppi"`` (prediction-powered inference with PPI++ power tuning, Angelopoulos
      et al. 2023): per-group rates from the labeled rows plus the model's scores
      on the unlabeled rows, a frequentist estimate whose interval covers by
      construction; draws from its asymptotic normal distribution. Takes sample
      weights.
    - ``"bcr"`` (rectified Bayesian calibration): ``"bc"`` plus, in every group and
      prediction stratum, a rectifier of the calibrated probability (the mean
      residual of the labeled rows, a Bayesian analogue of PPI's) with a
      hierarchical prior that shrinks it toward BC.
    - ``"auto"`` (default): ``"bb"`` without unlabeled scores, ``"ppi"`` with
      sample weights, ``"bcr"`` otherwise, and ``"bb"`` (with a
      :class:`CalibrationWarning`) when the calibration model cannot describe the
      data (``skfair_measures.bayes.AUTO_RULES``, docs/reproduction_ji2020.md).
      ``post.method`` names the method used.

    A group rate whose denominator holds no labeled row (TPR in a group without
    positives) has no data behind it: its draws are NaN, not its prior's, and the
    posterior of a measure that needs it is undefined (``reason`` says why, no
    verdict), as the point estimate is.

    Parameters
    ----------
    measure : Measure
        A measure whose base metrics are rates of confusion counts: acc, tpr, fpr,
        tnr, fnr, ppv, npv, fdr, fomr, selection_rate, balanced_accuracy, or
        composites and constraints of them. Its ``inputs`` give the threshold,
        the positive label and the declared groups.
    y_true : array-like of shape (n_labeled,)
        True labels of the labeled samples.
    y_score : array-like of shape (n_labeled,)
        Predicted probability of the positive class; the prediction is
        ``y_score >= threshold``.
    sensitive_features : array-like of shape (n_labeled,) or DataFrame
        Group of each labeled sample.
    method : {"auto", "bb", "bc", "bcr", "ppi"}, default="auto"
    unlabeled_scores : array-like of shape (n_unlabeled,), optional
        Scores of the unlabeled samples; required for ``"bc"``, ``"bcr"`` and
        ``"ppi"``, and what makes ``"auto"`` choose a score-based method.
        ``"bb"`` uses them only for ``prior="scores"`` and refuses them otherwise.
    unlabeled_sensitive : array-like of shape (n_unlabeled,) or DataFrame, optional
        Groups of the unlabeled samples (the same groups as the labeled data).
    sample_weight, unlabeled_sample_weight : array-like, optional
        Weights of the labeled and unlabeled rows (``"ppi"`` only: the Bayesian
        models count labeled samples).
    reference : object, optional
        Reference group. A difference measure then becomes the signed difference
        *other group minus reference*; with more than two groups, the signed
        difference of largest magnitude. A ratio becomes the ratio to the
        reference. Without it, the measure as defined (``fairness.acc`` is an
        absolute difference).
    threshold : float, optional
        Decision threshold. Defaults to the measure's own (``measure.inputs``),
        else 0.5; a value that differs from the measure's is used, with a warning.
    pos_label : object, optional
        Positive label of ``y_true``. Defaults to the measure's own, else 1 for
        0/1 or -1/1 labels; a value that differs from the measure's is used, with a
        warning.
    n_draws : int, optional
        Draws per chain: default 1000 for ``"bb"`` and ``"ppi"``, 200 (after
        ``tune`` warm-up draws) for ``"bc"`` and ``"bcr"``, as in the paper.
    chains : int, default=4
        Number of chains (for ``"bb"`` and ``"ppi"``, independent draws are split
        into chains only to share the layout).
    random_state : int, numpy Generator or None
        Seed; the same seed gives the same draws.
    data : DataFrame of any supported engine, optional
        pandas, polars, pyarrow, DuckDB, Dask or PySpark, as in
        :func:`skfair_measures.evaluate_measures`: ``y_true``, ``y_score``,
        ``sensitive_features`` and ``sample_weight`` then name its columns, and the rows
        whose ``y_true`` is missing are the unlabeled ones. One engine pass computes the
        labeled confusion counts and per-group score moments; ``method="bb"`` and
        ``"ppi"`` run on them and equal the same rows in memory (``bb`` exactly with the
        same seed, ``ppi`` up to summation order). Other methods read the labeled rows
        themselves and are refused here.
    target : {"audited rows", "population"}, optional
        What the guaranteed interval (``method="guaranteed"``, or ``"auto"`` with weights below
        its row count) is about, stated as ``attrs["target"]``: ``"audited rows"``, the rows given
        (labeled and unlabeled), of which the labeled ones are a sample without replacement,
        so the interval shrinks to the exact value as the labels cover them (with every row
        labeled, each rate is known); ``"population"``, a population the labeled rows were
        drawn from. Default: ``"audited rows"`` when unlabeled rows are given, else
        ``"population"``. The other methods' posteriors are about a population.
    **options
        The chosen method's options, checked once by its options record. An option
        the method does not take is refused, naming the methods that take it; with
        ``"auto"``, the options of any method it may use are accepted, and those
        the chosen one does not take are listed in ``attrs["options_unused"]``.

        ``"bb"`` (:class:`BetaBinomial`):

        - ``prior`` : {"uniform", "jeffreys", "scores"} or (alpha, beta), default="uniform".
          Beta prior of each group rate: Beta(1, 1), Beta(1/2, 1/2), the model's
          self-assessment from its scores, or explicit parameters. On K classes:
          "uniform" or "jeffreys" (Dirichlet(1) or Dirichlet(1/2) per cell).
        - ``prior_strength`` : float, default=2.0. Pseudo-count of ``prior="scores"``.

        ``"bc"`` and ``"bcr"`` (:class:`BayesianCalibration`, :class:`RectifiedCalibration`):

        - ``calibration`` : {"beta", "llo", "temperature"}, default="beta". Beta
          calibration ``(a, b, c)``, linear in log-odds (``a = b``) or temperature
          scaling (``a = b``, ``c = 0``).
        - ``hierarchical`` : bool, default=True. Share one prior across the groups'
          calibration parameters.
        - ``prior_scale`` : float, default=1.0. Multiplies the standard deviations
          of the calibration hyperpriors.
        - ``tune`` : int, default=1500. Warm-up draws per chain.
        - ``target_accept`` : float in (0, 1), default=0.95. NUTS target acceptance rate.
        - ``sampler`` : {"nutpie", "nutpie-pymc", "pymc", "numpyro", "blackjax"},
          default="nutpie". MCMC engine; all sample the same model.
        - ``cores`` : int, optional. Chains run in parallel on this many cores.
        - ``warn`` : bool, default=True. Warn (:class:`SamplingWarning`) on
          divergences, R-hat above 1.05 or bulk ESS below 100.
        - ``sampler_kwargs`` : dict, optional. More arguments of the sampler.
        - ``retry_divergent`` : bool, default=True. Sample once more with
          ``target_accept=0.99`` if the chains diverge.
        - ``rectifier_scale`` : float > 0, default=0.25 (``"bcr"`` only). Scale of
          the HalfNormal prior on each group's spread of rectifiers, in logit units.

        ``"ppi"`` (:class:`PredictionPowered`):

        - ``lam`` : float in [0, 1], optional. PPI++'s power-tuning factor; None
          tunes it per group and rate, 0 gives the classical estimate from the
          labels only, 1 plain PPI.

        ``"guaranteed"`` (labels only; confidence intervals valid at every sample size):

        - ``alpha_bet`` : float in (0, 1), default=0.05. The level the betting
          confidence sequences are tuned for; ``interval(prob)`` is valid at every level.

    Returns
    -------
    MeasurePosterior

    Raises
    ------
    TypeError
        An option no method takes.
    ValueError
        An option the chosen method does not take, or a bad value of one (the
        message names the option and its valid values).

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> from skfair_measures import bayes
    >>> y = [1, 0, 1, 1, 0, 1, 0, 0]
    >>> s = [0.9, 0.2, 0.7, 0.4, 0.6, 0.8, 0.1, 0.3]
    >>> sex = ["F", "F", "F", "F", "M", "M", "M", "M"]
    >>> post = bayes.posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=sex,
    ...                        reference="M", random_state=0)
    >>> round(post.mean(), 2), post.key
    (0.0, 'fairness.acc(operation=diff_to_reference, reference=M)')
    >>> lo, hi = post.interval(0.95)
    >>> lo < 0 < hi
    True
    >>> bayes.posterior(sfm.msr("fairness.acc"), y, s, sensitive_features=sex, method="bb", sampler="pymc")
    Traceback (most recent call last):
    ...
    ValueError: sampler= is an option of method 'bc', 'bcr', not of method='bb'; drop it or choose one of those methods.
    """
    (post,) = posteriors([measure], y_true, y_score, sensitive_features=sensitive_features, **arguments).values()
    return post


def posteriors(
    measures: Sequence[MeasureBase], y_true: Any, y_score: Any, *, sensitive_features: Any, **arguments: Any
) -> dict[str, MeasurePosterior]:
    """Posteriors of several measures from one fit (one set of draws).

    The same arguments as :func:`posterior` (``method=``, ``unlabeled_scores=``, ..., and the
    method's options); with ``method="bc"`` the calibration
    model is sampled once for all measures, which is what makes a report of
    accuracy, TPR and FPR differences cost one MCMC run.

    Returns
    -------
    dict of str to MeasurePosterior
        Keyed by measure key (after ``reference=``), in the order given.

    Examples
    --------
    >>> import skfair_measures as sfm
    >>> res = posteriors([sfm.msr("fairness.tpr"), sfm.msr("fairness.fpr")],
    ...                  [1, 0, 1, 0], [0.8, 0.3, 0.4, 0.6], sensitive_features=list("aabb"),
    ...                  random_state=0)
    >>> list(res)
    ['fairness.tpr', 'fairness.fpr']
    """
    call = Call(y_true, y_score, sensitive_features, **{k: arguments.pop(k) for k in Call.names() if k in arguments})
    measures, options, method = _check_measures(measures), arguments, call.method
    check_method(method)
    if isinstance(call.chains, bool) or not isinstance(call.chains, int | np.integer) or call.chains < 1:
        raise ValueError(f"chains={call.chains!r}; pass an integer >= 1.")
    refuse_unknown(options)
    if call.unlabeled_scores is not None:
        refuse_unread_unlabeled(method, options, "unlabeled_scores")
    name = auto_method(vars(call))[0] if method == AUTO else method
    rng, groups = _rng(call.random_state), _declared_groups(measures)
    if call.data is None and holds_multiclass_labels(y_true, call.pos_label, call.threshold, measures):
        return _multiclass(measures, call, name, options, groups, rng)
    thr = float(_agreed([m.inputs.threshold for m in measures], "threshold", call.threshold, 0.5))
    pos = _agreed([m.inputs.pos_label for m in measures], "pos_label", call.pos_label, None)
    estimator, unused = _options(method, name, options)
    bases = _bases(measures, rates=True)
    if call.data is not None and method in FRAME_METHODS:  # counts and score moments from one engine pass
        _refuse_weights(estimator.name, call.sample_weight)
        data = frame_fit_data(call, measures, estimator, thr, pos, groups)
    elif call.data is not None:  # labeled rows collected, unlabeled rows a score histogram in the engine
        rows = frame_rows(call, thr)
        if method == AUTO:  # the same rules, read off the frame: its rows without a label are the unlabeled
            unl = rows.histogram if rows.n_unlabeled else None
            name, _ = auto_method({"unlabeled_scores": unl, "sample_weight": call.sample_weight})
            estimator, unused = _options(method, name, options)
        refuse_no_unlabeled(estimator.name, call, rows.n_unlabeled)
        columns = ("y_true", "y_score", "sensitive_features", "sample_weight")
        given = dataclasses.replace(call, **{k: rows.column(v) for k, v in vars(call).items() if k in columns})
        data = _fit_data(given, measures, estimator.name, thr, pos, groups, rows.unlabeled)
        # auto's PPI: its variance reads the engine's moments, not the histogram's bins
        if isinstance(estimator, PredictionPowered):
            engine = frame_fit_data(call, measures, estimator, thr, pos, groups)
            if not engine.groups.equals(data.groups):
                raise AssertionError(
                    f"groups differ between the engine's passes: {list(engine.groups)} and {list(data.groups)}"
                )  # pragma: no cover - one encoding serves both
            data = dataclasses.replace(data, moments=engine.moments)
    else:
        data = _fit_data(call, measures, estimator.name, thr, pos, groups)
    data = dataclasses.replace(data, target=audit_target(call.target, data.has_unlabeled, method))
    _check_reference(call.reference, data.groups)
    why, plan = None, None
    if method == AUTO:
        interval, interval_reason = auto_interval(data, bases)
        estimate = auto_estimate(estimator.name, interval)
        plan = _AutoPlan(estimator, interval, interval_reason, *estimate, data, bases, call)
        estimator, why, unused = _auto_checked(estimator, data, options, unused, plan)
        if plan.interval == "jeffreys" and (plan.estimate == "calibration" or "prior" not in options):
            estimator = BetaBinomial(prior="jeffreys")  # the draws: the labels' posterior (bb's prior= when given)
    seed, start = int(rng.integers(2**31 - 1)), time.perf_counter()
    fit = _group_draws(estimator, data, bases, call, rng, seed)
    chosen = {}  # auto's estimate and interval (the estimate first: the interval holds it)
    if plan is not None:
        chosen = plan.estimate_attrs(estimator, fit, rng, seed) | plan.interval_attrs(estimator, fit, seed)
    attrs = {"threshold": float(data.threshold)} | _attrs(data.y_true.size, data.unlabeled.size, seed, call, fit, start)
    attrs |= chosen
    if why is not None:
        attrs["method_reason"] = why
    if unused:
        attrs["options_unused"] = unused
    return _posteriors_of(measures, call, estimator.name, data, fit, attrs)


def _multiclass(
    measures: list[MeasureBase], call: Call, name: str, options: Mapping[str, Any], groups: Any, rng: Rng
) -> dict[str, MeasurePosterior]:
    """K classes: the Dirichlet posterior of every group's K x K confusion cells (:mod:`._dirichlet`)."""
    if METHODS[name].multiclass is None:
        raise multiclass_error(call.y_true, name)
    if call.sample_weight is not None or call.unlabeled_scores is not None:
        raise ValueError(
            "method='bb' on K classes counts labeled samples: it takes no sample_weight and no "
            "unlabeled_scores (there is no binary score to calibrate)."
        )
    record, _ = _options(call.method, name, options, multiclass=True)
    stats = multiclass_counts(measures, call.y_true, call.y_score, call.sensitive_features, groups)
    _check_reference(call.reference, stats.groups)
    draws = METHODS["bb"].default_draws if call.n_draws is None else int(call.n_draws)
    seed, start = int(rng.integers(2**31 - 1)), time.perf_counter()
    fit = multiclass_draws(_bases(measures), stats, record, int(call.chains), draws, rng)
    attrs = _attrs(int(stats.counts.sum()), 0, seed, call, fit, start)
    return _posteriors_of(measures, call, "bb", stats, fit, attrs)


# -- named steps ---------------------------------------------------------------------
def _check_measures(measures: Sequence[MeasureBase]) -> list[MeasureBase]:
    measures = list(measures)
    if not measures:
        raise ValueError("measures is empty; pass at least one measure.")
    keys = [m.key for m in measures]
    if len(set(keys)) != len(keys):
        raise ValueError(f"measures have duplicate keys {keys}; give them distinct key= values.")
    return measures


def _check_reference(reference: Any, groups: pd.Index) -> None:
    if reference is not None and reference not in groups:
        raise ValueError(f"reference={reference!r} is not one of the groups {list(groups)}; pass one of them.")


def _refuse_weights(method: str, *weights: Any) -> None:
    if not METHODS[method].weights and any(w is not None for w in weights):
        takers = " or ".join(repr(m) for m, spec in METHODS.items() if spec.weights and spec.options)
        raise ValueError(
            f"method={method!r} counts labeled samples and takes no sample_weight or unlabeled_sample_weight; "
            f"use method= {takers} for weighted data."
        )


def _options(
    requested: str, name: str, options: Mapping[str, Any], *, multiclass: bool = False
) -> tuple[Any, list[str]]:
    """The checked options record of method ``name``, and the options it leaves unused (``"auto"`` only).

    A named method refuses the options it does not take. ``"auto"`` takes the
    options of every method it may use: each is checked by a method that takes it,
    and those the chosen method does not take are returned as unused.
    """
    if requested != AUTO:
        return method_options(name, options, multiclass=multiclass), []
    candidates = auto_candidates()
    for candidate in candidates:  # check every value, whichever method is chosen
        takes = METHODS[candidate].options.__dataclass_fields__
        method_options(candidate, {k: v for k, v in options.items() if k in takes})
    taken = {k for c in candidates for k in METHODS[c].option_names()}
    foreign = sorted(set(options) - taken)
    if foreign:
        method_options(name, {foreign[0]: options[foreign[0]]})  # raises, naming the methods that take it
    spec = METHODS[name]
    record = spec.multiclass if multiclass else spec.options
    own = {k: v for k, v in options.items() if k in record.__dataclass_fields__}
    return method_options(name, own, multiclass=multiclass), sorted(set(options) - set(own))


@dataclass(frozen=True)
class _AutoPlan:
    """``auto``'s decisions made before fitting (:mod:`._auto`): the rules' method, the interval, the estimate."""

    calibrator: EstimationMethod  # the method of rules 1-3 (its options record)
    interval: str  # "own", "jeffreys", "guaranteed" or "exact"
    interval_reason: str
    estimate: str  # "calibration", "exact" or "own"
    estimate_reason: str
    data: FitData  # what the fits read: the data, the bases, the call's chains and draws
    bases: Bases
    call: Call

    def estimate_attrs(self, method: EstimationMethod, fit: GroupDraws, rng: Rng, seed: int) -> dict[str, Any]:
        """``auto``'s estimate (:func:`~._auto.auto_estimate`): the calibration model's, put on ``fit`` as its point.

        When the checks sent the draws to ``"bb"``, the rules' method is fitted for the estimate
        alone (same seed); otherwise its fit is ``fit``.
        """
        own = f"{method.name}'s " + ("point estimate" if fit.point is not None else "posterior mean")
        if self.estimate == "exact":
            return {"estimate_reason": self.estimate_reason}  # interval_attrs puts the exact rates on fit
        if self.estimate == "own":
            return {"estimate": own, "estimate_reason": self.estimate_reason}
        source = fit
        if fit.calibration_point is None:
            with warnings.catch_warnings():  # the checks' failure is already said, by _auto_checked
                warnings.simplefilter("ignore", CalibrationWarning)
                source = _group_draws(self.calibrator, self.data, self.bases, self.call, rng, seed)
        fit.point, fit.point_overall = source.calibration_point
        made = "its fit" if source is fit else f"a {self.calibrator.name} fit made for the estimate"
        estimate = f"bc's posterior means of the group rates ({made}, without the rectifier), through the "
        out = {"estimate": estimate + "measure's operation", "estimate_reason": self.estimate_reason}
        return out if source is fit else out | {"estimate_diagnostics": source.attrs.get("diagnostics", {})}

    def interval_attrs(self, method: EstimationMethod, fit: GroupDraws, seed: int) -> dict[str, Any]:
        """``auto``'s interval (:func:`~._auto.auto_interval`): its draws' own, or a confidence box put on ``fit``.

        With the calibration model's estimate, the posterior reads its interval from the box,
        widened to hold the estimate; a confidence interval gives no probabilities:
        ``prob_within`` and ``rope`` are NaN with the reason (one construction for the
        interval, the probability and the verdict), and ``attrs`` says so.
        """
        out = {"interval_reason": self.interval_reason}
        if self.interval == "own":
            return out | {"interval": f"{method.name}'s own"}
        if self.interval == "jeffreys" and self.estimate != "calibration":
            return out | {"interval": f"{method.name}'s own (prior={method.prior!r})"}
        none = "none: a confidence interval (the draws' would not agree with it)"
        if self.interval == "jeffreys":
            fit.interval_box = labels_box(self.data, self.bases, fit, seed)
            jeffreys = "the labels' Jeffreys posterior, widened to hold the estimate"
            return out | {"interval": jeffreys, "probabilities": none}
        rng = np.random.default_rng(seed)
        box = Guaranteed().group_draws(self.data, self.bases, chains=1, draws=1, rng=rng, seed=seed)
        fit.interval_box = box.confidence
        if self.estimate == "exact":  # every audited row labeled: the rates are known exactly
            fit.point, fit.point_overall = box.point, box.point_overall
            out["estimate"] = "the exact rates of the audited rows (every row labeled)"
        return out | {
            "interval": "guaranteed (" + box.attrs["sampler"].split(", ", 1)[-1] + "), widened to hold the estimate",
            "target": box.attrs["target"],
            "construction": box.attrs["construction"],
            "probabilities": none,
            "prediction_powered": box.attrs["prediction_powered"],
            "sequences": box.attrs["sequences"],
        }


def _auto_checked(
    estimator: EstimationMethod, data: FitData, options: Mapping[str, Any], unused: list[str], plan: _AutoPlan
) -> tuple[EstimationMethod, str | None, list[str]]:
    """``auto``'s last rule: a calibration method gives way to ``"bb"`` when its checks fail (with a warning)."""
    name, why = checked_method(estimator.name, data)
    if why is None:
        return estimator, None, unused
    kept = "; its estimate stays the calibration model's (fitted for it) and its interval is the labels'"
    kept = kept if plan.estimate == "calibration" else ""
    message = f"method='auto' uses {name!r} instead of {estimator.name!r}: {why}{kept}."
    warnings.warn(message, CalibrationWarning, stacklevel=external_stacklevel())
    record, left = _options(AUTO, name, options)
    if plan.estimate == "calibration":  # the calibration fit of the estimate reads the options of the rules' method
        left = [k for k in left if k not in METHODS[estimator.name].option_names()]
    return record, why, left


def _group_draws(
    estimator: EstimationMethod, data: FitData, bases: Bases, call: Call, rng: Rng, seed: int
) -> GroupDraws:
    """The method's draws with the call's chains and draws per chain (the method's default when not given)."""
    draws = METHODS[estimator.name].default_draws if call.n_draws is None else int(call.n_draws)
    return estimator.group_draws(data, bases, chains=int(call.chains), draws=draws, rng=rng, seed=seed)


def _bases(measures: list[MeasureBase], rates: bool = False) -> Bases:
    """The distinct base metrics of all measures; with ``rates``, each must be a rate of confusion counts."""
    by_name: dict[str, BaseMetric] = {}
    for b in (b for m in measures for b in m.bases):
        by_name.setdefault(b.name, b)
    for b in by_name.values() if rates else ():
        ratio_roles(b)  # raises a TypeError naming the base if it is not a rate of counts
    return tuple(by_name.values())


def _declared_groups(measures: Sequence[MeasureBase]) -> pd.Index | None:
    """The groups the measures declare (one set for one fit), or None."""
    declared = {repr(m.inputs.groups): m.inputs.groups for m in measures if m.inputs.groups is not None}
    if len(declared) > 1:
        raise ValueError(f"the measures declare different groups {sorted(declared)}; declare the same groups.")
    return next(iter(declared.values()), None)


def _agreed(own: list[Any], name: str, given: Any, default: Any) -> Any:
    """The value of input ``name``: the measures' own values ``own``, overridden (with a warning) by the argument."""
    distinct = {repr(v): v for v in own if v is not None}
    if given is None:
        if len(distinct) > 1:
            raise ValueError(f"the measures have different {name}s {sorted(distinct)}; pass {name}= to choose one.")
        return next(iter(distinct.values()), default)
    if distinct and set(distinct) != {repr(given)}:
        message = (
            f"{name}={given!r} overrides the {name} of the measure(s) ({', '.join(sorted(distinct))}); "
            f"the posterior uses {name}={given!r}. Build the measure with .with_inputs({name}=...) to agree."
        )
        warnings.warn(message, UserWarning, stacklevel=external_stacklevel())
    return given


def _fit_data(
    call: Call, measures: list, method: str, thr: float, pos: Any, groups: Any, unlabeled: Any = None
) -> FitData:
    """Validate every input once: labeled rows, unlabeled rows, labels, groups.

    ``unlabeled``, given, builds the unlabeled :class:`Rows` from the labeled rows' groups
    and the threshold (an engine's score histogram, :class:`~._frames.FrameRows`) in place
    of ``call.unlabeled_scores``; ``method`` is the method's name, ``thr``, ``pos`` and ``groups``
    the measures' threshold, positive label and declared groups.
    """
    _refuse_weights(method, call.sample_weight, call.unlabeled_sample_weight)
    compare = any(m.inputs.needs_sensitive for m in measures)  # a performance measure takes one group or none
    sensitive = call.sensitive_features
    if sensitive is None and not compare:
        sensitive, groups = np.zeros(len(call.y_true), dtype=np.intp), _ONE_GROUP
    rows = (call.y_true, call.y_score, sensitive, call.sample_weight)
    sample = check_inputs(*rows, groups=groups, y_pred_name="y_score", compare_groups=compare)
    scores = check_scores(sample.y_pred, "y_score")
    t, _, _ = binarize_labels(sample.y_true, sample.y_true, pos)
    labeled = Rows(scores, (scores >= thr).astype(np.intp), sample.group_codes, sample.sample_weight)
    unlabeled = (unlabeled or functools.partial(_unlabeled_rows, call))(sample.groups, thr)
    if METHODS[method].unlabeled == "required" and unlabeled.size == 0:
        raise ValueError(
            f"method={method!r} needs unlabeled data: pass unlabeled_scores= (the model's scores "
            "on samples without labels) and unlabeled_sensitive= (their groups). Without them use method='bb'."
        )
    data = FitData(np.asarray(t, dtype=np.intp), labeled, unlabeled, sample.groups, thr)
    return restrict_fit_data(data, measures)  # min_group_size on labeled rows (_small_groups)


def _unlabeled_rows(call: Call, groups: pd.Index, threshold: float) -> Rows:
    scores, sensitive, weight = call.unlabeled_scores, call.unlabeled_sensitive, call.unlabeled_sample_weight
    if scores is None:
        if sensitive is not None or weight is not None:
            raise ValueError("unlabeled_sensitive or unlabeled_sample_weight is given without unlabeled_scores=.")
        return Rows.empty()
    u_scores = check_scores(scores, "unlabeled_scores")
    if sensitive is None:
        raise ValueError("unlabeled_scores is given without unlabeled_sensitive= (the group of each).")
    for arg, values in (("unlabeled_sensitive", sensitive), ("unlabeled_sample_weight", weight)):
        if values is not None and len(values) != u_scores.size:
            raise ValueError(
                f"{arg} has {len(values)} rows but unlabeled_scores has {u_scores.size}; "
                f"pass one {'group' if arg == 'unlabeled_sensitive' else 'weight'} per unlabeled score."
            )
    codes, _ = encode_groups(sensitive, u_scores.size, groups=groups, name="unlabeled_sensitive")
    w = None if weight is None else _check_weight(weight, u_scores.size)
    return Rows(u_scores, (u_scores >= threshold).astype(np.intp), codes, w)


def _attrs(n_labeled: int, n_unlabeled: int, seed: int, call: Call, fit: GroupDraws, start: float) -> dict[str, Any]:
    reference = "" if call.reference is None else str(call.reference)
    rows = {"seed": seed, "n_labeled": int(n_labeled), "n_unlabeled": int(n_unlabeled), "reference": reference}
    # a model's posterior is about a population; the guaranteed interval states its own target (in fit.attrs)
    fitted = {"target": "population", **fit.attrs, "seconds": time.perf_counter() - start}
    return rows | fitted | {"method_requested": call.method}


def _posteriors_of(
    measures: list[MeasureBase], call: Call, method: str, data: Any, fit: GroupDraws, attrs: dict
) -> dict[str, MeasurePosterior]:
    """Run the group draws through every measure's own operations (signed against ``call.reference``).

    ``data`` holds the ``groups`` and the labeled ``counts`` (a :class:`FitData`, or K-class counts).
    """
    out, groups = {}, data.groups
    for measure in (signed_measure(m, call.reference) for m in measures):
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = np.asarray(measure.from_group_values(fit.values, groups=groups, overall=fit.overall), dtype=float)
            point = None
            if fit.point is not None:
                point = float(measure.from_group_values(fit.point, groups=groups, overall=fit.point_overall))
        own = {b.name: fit.values[b.name] for b in measure.bases}
        reason = _reason(own, groups, draws, fit.reasons)
        if reason is not None:
            warn_undefined(measure.key, reason)
        box = fit.confidence if fit.interval_box is None else fit.interval_box
        out[measure.key] = MeasurePosterior(
            measure, draws, own, groups, method, data.counts, dict(attrs), fit.trace, fit.extra, point, reason, box
        )
    return out


def _reason(values: dict[str, np.ndarray], groups: pd.Index, draws: np.ndarray, notes: list[str]) -> str | None:
    """Why draws of the measure are NaN (None when none is): the method's notes on its own rates, else where."""
    if not np.isnan(draws).any():
        return None
    count = f"{int(np.isnan(draws).sum())} of {draws.size} draws are undefined"
    own = [n for n in notes if n.split(" ", 1)[0] in values]
    if own:
        return f"{count}: {'; '.join(own)}"
    labels = group_labels(groups)
    bad = {name: np.flatnonzero(np.isnan(v).any(axis=(0, 1))) for name, v in values.items()}
    parts = [f"{name} in group(s) {name_groups(labels[j] for j in js)}" for name, js in sorted(bad.items()) if js.size]
    where = "; ".join(parts) or "the pooled rate"
    return f"{count} ({where}: the group has no samples in the cells the rate divides by)"
