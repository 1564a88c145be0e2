"""``posterior()``: the Bayesian door out of the measure pipeline.

Inputs are validated once (``_stats.check_inputs``); from there on only integer
codes travel. Both methods produce draws of the confusion cells of every group,
shape ``(chain, draw, group, 2, 2)``, and every base metric is read off those cells
with its own ``from_counts``; the measure's draws come from
``measure.from_group_values``, the very operations of the point estimate.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._stats import binarize_labels, check_inputs, check_scores, encode_groups
from ..measures import FairnessMeasure, Measure
from ._bb import bb_cell_draws, cell_concentration, expected_cells, ratio_roles
from ._posterior import MeasurePosterior, external_stacklevel

__all__ = ["posterior", "posteriors", "signed_measure"]

_NEEDS_UNLABELED = (
    "method='bc' needs unlabelled data: pass unlabeled_scores= (the model's scores on "
    "samples without labels) and unlabeled_sensitive= (their groups). Without them the "
    "calibration model adds nothing; use method='bb'."
)


def _rng(random_state: Any) -> np.random.Generator:
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    return np.random.default_rng(random_state)


def signed_measure(measure: Measure, reference: Any) -> Measure:
    """The measure comparing every group to ``reference``, keeping the sign.

    Differences (``absdiff``, ``diff``) become ``diff_to_reference`` (other group
    minus reference; with more than two groups the difference of largest
    magnitude); ratios become ``ratio_to_reference``. Composite and constraint
    measures are returned unchanged (their definition fixes how groups compare).

    Examples
    --------
    >>> from skfair_measures import msr
    >>> signed_measure(msr("fairness.acc"), "M").operation.name
    'diff_to_reference'
    """
    if reference is None or not isinstance(measure, FairnessMeasure):
        if reference is not None:
            warnings.warn(
                f"reference={reference!r} does not change {measure.key}: a "
                f"{type(measure).__name__} is evaluated as defined ({measure.description}).",
                UserWarning,
                stacklevel=external_stacklevel(),
            )
        return measure
    name = measure.operation.name
    if name in ("absdiff", "diff", "diff_to_reference"):
        return measure.clone(operation="diff_to_reference", reference=reference)
    if name in ("ratio", "ratio_to_reference"):
        return measure.clone(operation="ratio_to_reference", reference=reference)
    raise ValueError(
        f"reference={reference!r} does not apply to the operation {name!r} of {measure.key}; "
        "omit reference= or use a difference or ratio measure."
    )


def posterior(
    measure: Measure,
    y_true: Any,
    y_score: Any,
    *,
    sensitive_features: Any,
    method: Literal["bb", "bc"] = "bb",
    unlabeled_scores: Any = None,
    unlabeled_sensitive: Any = None,
    reference: Any = None,
    threshold: float | None = None,
    pos_label: Any = None,
    prior: str | tuple[float, float] = "uniform",
    prior_strength: float = 2.0,
    n_draws: int | None = None,
    chains: int = 4,
    tune: int = 1500,
    calibration: Literal["beta", "llo", "temperature"] = "beta",
    hierarchical: bool = True,
    prior_scale: float = 1.0,
    target_accept: float = 0.95,
    sampler: str = "nutpie",
    cores: int | None = None,
    random_state: Any = None,
    warn: bool = True,
    sampler_kwargs: dict[str, Any] | None = None,
    retry_divergent: bool = True,
) -> MeasurePosterior:
    """Posterior distribution of a fairness measure from scores and (few) labels.

    Two methods of Ji, Smyth & Steyvers (NeurIPS 2020):

    - ``"bb"`` (Beta-Binomial): a conjugate Beta prior on every group rate, updated
      with the labelled data; independent Monte Carlo draws, no MCMC.
    - ``"bc"`` (Bayesian calibration): a hierarchical beta-calibration model of
      ``P(y = 1 | score, group)`` fitted by MCMC to the labelled data; every
      posterior draw calibrates the scores of the unlabelled data, whose expected
      confusion cells are added to the labelled counts (the paper's eq. 1).

    Parameters
    ----------
    measure : Measure
        A measure whose base metrics are rates of confusion counts: acc, tpr, fpr,
        tnr, fnr, ppv, npv, fdr, fomr, selection_rate, or composites of them.
    y_true : array-like of shape (n_labeled,)
        True labels of the labelled samples.
    y_score : array-like of shape (n_labeled,)
        Predicted probability of the positive class; the prediction is
        ``y_score >= threshold``.
    sensitive_features : array-like of shape (n_labeled,) or DataFrame
        Group of each labelled sample.
    method : {"bb", "bc"}, default="bb"
    unlabeled_scores : array-like of shape (n_unlabeled,), optional
        Scores of the unlabelled samples; required for ``"bc"``. ``"bb"`` uses
        them only for ``prior="scores"``.
    unlabeled_sensitive : array-like of shape (n_unlabeled,) or DataFrame, optional
        Groups of the unlabelled samples (the same groups as the labelled data).
    reference : object, optional
        Reference group. A difference measure then becomes the signed difference
        *other group minus reference* (seed 000's ``Delta = theta_1 - theta_0``
        with ``reference`` as group 0); with more than two groups, the signed
        difference of largest magnitude. Without it, the measure as defined
        (``fairness.acc`` is an absolute difference).
    threshold : float, optional
        Decision threshold; defaults to the measure's own threshold, else 0.5.
    pos_label : object, optional
        Positive label of ``y_true`` (default 1 for 0/1 or -1/1 labels).
    prior : {"uniform", "jeffreys", "scores"} or (alpha, beta), default="uniform"
        Beta-Binomial prior of each group rate: Beta(1, 1) (the paper's choice),
        Beta(1/2, 1/2), the model's self-assessment from its scores (seed 002
        section 2.4.2), or explicit Beta parameters.
    prior_strength : float, default=2.0
        Pseudo-count ``N0`` of ``prior="scores"``.
    n_draws : int, optional
        Posterior draws per chain: default 1000 for ``"bb"`` and 200 (after
        ``tune`` warm-up draws) for ``"bc"``, as in the paper.
    chains : int, default=4
        Number of chains (for ``"bb"``, independent draws are split into chains
        only to share the layout).
    tune : int, default=1500
        Warm-up draws per chain for ``"bc"``.
    calibration : {"beta", "llo", "temperature"}, default="beta"
        Calibration map of ``"bc"``: beta calibration ``(a, b, c)``, linear in
        log-odds (``a = b``) or temperature scaling (``a = b``, ``c = 0``).
    hierarchical : bool, default=True
        Share one prior across the groups' calibration parameters (``False``
        gives the non-hierarchical variant of seed 002 section 4.9.3).
    prior_scale : float, default=1.0
        Multiplies the standard deviations of the calibration hyperpriors (seed 002
        section 4.9.4's sensitivity factor alpha); larger values let the groups'
        calibrations differ more.
    target_accept : float, default=0.95
        NUTS target acceptance rate.
    sampler : {"nutpie", "nutpie-pymc", "pymc", "numpyro", "blackjax"}, default="nutpie"
        MCMC engine for ``"bc"``: nutpie on the model's log density as C code that
        is cached on disk (starts in under a second, also in a new process); nutpie
        on the PyMC model (``"nutpie-pymc"``, compiled once per process and model
        structure); or ``pymc.sample(nuts_sampler=...)``. All sample the same model.
    cores : int, optional
        Chains run in parallel on this many cores (default: all, up to ``chains``).
    random_state : int, numpy Generator or None
        Seed; the same seed gives the same draws.
    warn : bool, default=True
        Warn (:class:`SamplingWarning`) when the calibration model has divergent
        transitions, an R-hat above 1.05 or a bulk ESS below 100 (diagnostics of
        ``a``, ``b``, ``c``; always stored in ``attrs["diagnostics"]``).
    sampler_kwargs : dict, optional
        More arguments for the sampler (``nutpie.sample`` or ``pymc.sample``), e.g.
        ``{"low_rank_modified_mass_matrix": True}`` or ``{"maxdepth": 8}``.
    retry_divergent : bool, default=True
        If the chains of ``"bc"`` have divergent transitions, sample once more with
        ``target_accept=0.99`` (smaller steps). On the reproduction's real data this
        happened in a few percent of fits with 100 labels, always a single
        divergence; the retry took them to zero. ``diagnostics()`` reports
        ``divergences_first_try`` and the ``target_accept`` finally used.

    Returns
    -------
    MeasurePosterior

    Examples
    --------
    >>> import numpy as np
    >>> import skfair_measures as sfm
    >>> y = [1, 0, 1, 1, 0, 1, 0, 0]
    >>> s = [0.9, 0.2, 0.7, 0.4, 0.6, 0.8, 0.1, 0.3]
    >>> sex = ["F", "F", "F", "F", "M", "M", "M", "M"]
    >>> post = sfm.msr("fairness.acc").posterior(y, s, sensitive_features=sex,
    ...                                           reference="M", random_state=0)
    >>> round(post.mean(), 2), post.key
    (0.0, 'fairness.acc')
    >>> lo, hi = post.interval(0.95)
    >>> lo < 0 < hi
    True
    """
    return posteriors(
        [measure],
        y_true,
        y_score,
        sensitive_features=sensitive_features,
        method=method,
        unlabeled_scores=unlabeled_scores,
        unlabeled_sensitive=unlabeled_sensitive,
        reference=reference,
        threshold=threshold,
        pos_label=pos_label,
        prior=prior,
        prior_strength=prior_strength,
        n_draws=n_draws,
        chains=chains,
        tune=tune,
        calibration=calibration,
        hierarchical=hierarchical,
        prior_scale=prior_scale,
        target_accept=target_accept,
        sampler=sampler,
        cores=cores,
        random_state=random_state,
        warn=warn,
        sampler_kwargs=sampler_kwargs,
        retry_divergent=retry_divergent,
    )[measure.key]


def posteriors(
    measures: Sequence[Measure],
    y_true: Any,
    y_score: Any,
    *,
    sensitive_features: Any,
    method: Literal["bb", "bc"] = "bb",
    unlabeled_scores: Any = None,
    unlabeled_sensitive: Any = None,
    reference: Any = None,
    threshold: float | None = None,
    pos_label: Any = None,
    prior: str | tuple[float, float] = "uniform",
    prior_strength: float = 2.0,
    n_draws: int | None = None,
    chains: int = 4,
    tune: int = 1500,
    calibration: Literal["beta", "llo", "temperature"] = "beta",
    hierarchical: bool = True,
    prior_scale: float = 1.0,
    target_accept: float = 0.95,
    sampler: str = "nutpie",
    cores: int | None = None,
    random_state: Any = None,
    warn: bool = True,
    sampler_kwargs: dict[str, Any] | None = None,
    retry_divergent: bool = True,
) -> dict[str, MeasurePosterior]:
    """Posteriors of several measures from one fit (one set of cell draws).

    The same arguments as :func:`posterior`; with ``method="bc"`` the calibration
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
    measures = list(measures)
    if not measures:
        raise ValueError("measures is empty; pass at least one measure.")
    keys = [m.key for m in measures]
    if len(set(keys)) != len(keys):
        raise ValueError(f"measures have duplicate keys {keys}; give them distinct key= values.")
    thresholds = {m.threshold for m in measures if m.threshold is not None}
    if threshold is None and len(thresholds) > 1:
        raise ValueError(f"the measures have different thresholds {sorted(thresholds)}; pass threshold=.")
    measure = measures[0]
    if method not in ("bb", "bc"):
        raise ValueError(f"method={method!r}; pass 'bb' (Beta-Binomial) or 'bc' (Bayesian calibration).")
    if chains < 1:
        raise ValueError(f"chains={chains!r} must be >= 1.")
    bases_by_name: dict[str, Any] = {}
    for m in measures:
        for b in m.bases:
            bases_by_name.setdefault(b.name, b)
    bases = tuple(bases_by_name.values())
    for b in bases:
        ratio_roles(b)  # raises a TypeError naming the base if it is not a rate of counts
    sample = check_inputs(
        y_true, y_score, sensitive_features, groups=getattr(measure, "groups", None), y_pred_name="y_score"
    )
    scores = check_scores(sample.y_pred, "y_score")
    thr = threshold if threshold is not None else (thresholds.pop() if thresholds else 0.5)
    t, _, _ = binarize_labels(sample.y_true, sample.y_true, pos_label)
    y_pred = (scores >= thr).astype(np.intp)
    groups, codes = sample.groups, sample.group_codes
    n_groups = len(groups)
    counts = np.bincount((codes * 2 + t) * 2 + y_pred, minlength=4 * n_groups).reshape(n_groups, 2, 2)
    counts = counts.astype(float)
    if reference is not None and reference not in groups:
        raise ValueError(f"reference={reference!r} is not one of the groups {list(groups)}; pass one of them.")
    targets = [signed_measure(m, reference) for m in measures]

    u_scores = u_codes = None
    if unlabeled_scores is not None:
        u_scores = check_scores(unlabeled_scores, "unlabeled_scores")
        if unlabeled_sensitive is None:
            raise ValueError("unlabeled_scores is given without unlabeled_sensitive= (the group of each).")
        u_codes, _ = encode_groups(
            unlabeled_sensitive, u_scores.size, groups=groups, name="unlabeled_sensitive"
        )
    elif unlabeled_sensitive is not None:
        raise ValueError("unlabeled_sensitive is given without unlabeled_scores=.")
    rng = _rng(random_state)
    seed = int(rng.integers(2**31 - 1))
    attrs: dict[str, Any] = {
        "threshold": float(thr),
        "seed": seed,
        "n_labeled": int(t.size),
        "n_unlabeled": 0 if u_scores is None else int(u_scores.size),
        "reference": "" if reference is None else str(reference),
    }
    start = time.perf_counter()
    extra: dict[str, np.ndarray] = {}
    trace = None
    if method == "bb":
        draws = 1000 if n_draws is None else int(n_draws)
        expected = None
        if isinstance(prior, str) and prior == "scores":
            all_s = scores if u_scores is None else np.concatenate([scores, u_scores])
            all_p = y_pred if u_scores is None else np.concatenate([y_pred, (u_scores >= thr).astype(np.intp)])
            all_c = codes if u_codes is None else np.concatenate([codes, u_codes])
            expected = expected_cells(all_s, all_p, all_c, n_groups)
        alpha, kind = cell_concentration(bases, n_groups, prior, prior_strength, expected)
        cells = bb_cell_draws(counts, alpha, chains, draws, rng)
        weights = counts.sum((-2, -1))
        overall_cells = np.einsum("cdgtp,g->cdtp", cells, weights)
        attrs.update(prior=str(prior), prior_cells=kind, sampler="monte carlo")
    else:
        if u_scores is None:
            raise ValueError(_NEEDS_UNLABELED)
        from ._bc import calibrated_cells, fit_calibration

        draws = 200 if n_draws is None else int(n_draws)
        fit = fit_calibration(
            scores,
            t,
            codes,
            groups,
            calibration=calibration,
            hierarchical=hierarchical,
            chains=chains,
            tune=tune,
            draws=draws,
            target_accept=target_accept,
            sampler=sampler,
            cores=cores,
            seed=seed,
            warn=warn,
            prior_scale=prior_scale,
            sampler_kwargs=sampler_kwargs,
            retry_divergent=retry_divergent,
        )
        u_pred = (u_scores >= thr).astype(np.intp)
        cells = counts + calibrated_cells(fit.params, u_scores, u_pred, u_codes, n_groups)
        overall_cells = cells.sum(axis=-3)
        extra = {k: v for k, v in fit.params.items()}
        trace = fit.trace
        attrs.update(
            calibration=calibration,
            hierarchical=bool(hierarchical),
            prior_scale=float(prior_scale),
            sampler=fit.sampler,
            tune=int(tune),
            target_accept=float(target_accept),
            diagnostics=fit.diagnostics,
            compile_seconds=float(fit.compile_seconds),
        )
    values = {b.name: b.from_counts(cells) for b in bases}
    overall = {b.name: b.from_counts(overall_cells) for b in bases}
    attrs["seconds"] = time.perf_counter() - start
    out: dict[str, MeasurePosterior] = {}
    for target in targets:
        with np.errstate(invalid="ignore", divide="ignore"):
            draws_m = np.asarray(target.from_group_values(values, groups=groups, overall=overall), dtype=float)
        own = {b.name: values[b.name] for b in target.bases}
        _warn_nan(target, own, groups, draws_m)
        out[target.key] = MeasurePosterior(
            measure=target,
            draws=draws_m,
            group_draws=own,
            groups=groups,
            method=method,
            counts=counts,
            attrs=dict(attrs),
            trace=trace,
            extra_draws=extra,
        )
    return out


def _warn_nan(measure: Measure, values: dict[str, np.ndarray], groups: pd.Index, draws: np.ndarray) -> None:
    if not np.isnan(draws).any():
        return
    bad = sorted(
        {(name, str(groups[j])) for name, v in values.items() for j in np.flatnonzero(np.isnan(v).any(axis=(0, 1)))}
    )
    from ..measures import UndefinedGroupWarning

    warnings.warn(
        f"{measure.key}: {int(np.isnan(draws).sum())} of {draws.size} posterior draws are NaN "
        f"(undefined {bad}: the group has no samples in the cells the rate divides by); "
        "summaries are NaN. Merge small groups or add data.",
        UndefinedGroupWarning,
        stacklevel=external_stacklevel(),
    )
