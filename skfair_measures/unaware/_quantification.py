"""Demographic disparity without the sensitive attribute, by quantification.

Fabris, Esuli, Moreo and Sebastiani (JAIR 2023, section 4.2) audit a classifier
``h`` on a deployment set ``D3`` where the sensitive attribute ``s`` is unknown,
using a small auxiliary set ``D2`` where it is known:

1. ``h`` splits ``D2`` and ``D3`` by its prediction into the positively and
   negatively predicted parts ``D2+``, ``D2-``, ``D3+``, ``D3-``.
2. One quantifier per predicted class is trained on ``D2+`` (resp. ``D2-``) to
   estimate the prevalence of each group in a sample, and applied to ``D3+``
   (resp. ``D3-``), which gives ``p(s | h=+)`` and ``p(s | h=-)`` on ``D3``.
3. Each estimate is Laplace-smoothed towards the prevalence of ``s`` in the matching
   part of ``D2`` (pseudocount 1/2 per group):
   ``p~(s) = (p^(s) |D3c| + p_D2c(s) K/2) / (|D3c| + K/2)`` for ``K`` groups,
   which for two groups is the paper's ``(p^(s) |D3c| + p_D2c(s)) / (|D3c| + 1)``.
4. Bayes' rule (Eqs. 12, 13 and 15) turns them into acceptance rates
   ``mu(s) = P(h=+ | s) = p~+(s) p(+) / (p~+(s) p(+) + p~-(s) p(-))``, where
   ``p(+)`` is the share of ``D3`` that ``h`` accepts, known exactly.
5. The demographic disparity (Eq. 14) is ``mu(s1) - mu(s0)``.

With more than two groups each quantifier is one-vs-rest and its estimates are
renormalised to sum to one; the disparity is then the largest minus the smallest
acceptance rate (the paper's Remark 5).

A quantifier whose auxiliary rows' features cannot tell the groups apart
(:func:`~._quantifiers.informativeness`: cross-validated AUC not significantly
above 0.5 by a permutation test) makes the estimate unreliable: ``reliable`` is
False, ``reasons`` names the predicted class and group, and a
:class:`ProxyReliabilityWarning` says so.
"""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted, check_random_state

from .._groups import encode_groups, resolve_sensitive
from ..measures import UndefinedGroupWarning
from ..results import check_prob, interval_refusal, percentile_interval, replicate_se
from ._hoc import ProxyReliabilityWarning
from ._plain import UnawareResult, plain
from ._quantifiers import HOLDOUT_QUANTIFIERS, BinaryQuantifier, _take, resolve_quantifier

__all__ = ["QuantificationDisparity", "QuantificationResult", "quantified_disparity"]

#: Row labels of the per-predicted-class tables; index 0 is h's negative class.
PREDICTED = ("negative", "positive")

_LENGTH = (
    "X_aux has {n_x} rows but s_aux has {n_s}; pass the sensitive attribute of every auxiliary row, in the same order."
)
_GROUP_MISSING = (
    "the auxiliary rows that the model predicts as {cls} (h(x) {op} pos_label={pos!r}) hold {counts}; quantifier "
    "{q!r} needs at least {need} row(s) of every group there to learn its prevalence. Pass per_class=False to "
    "train one quantifier on all auxiliary rows (the paper's ablation, usually less accurate), or collect more "
    "auxiliary data for this predicted class."
)
_GROUP_MISSING_ALL = (
    "the auxiliary set holds {counts}; quantifier {q!r} needs at least {need} row(s) of "
    "every group. Collect more auxiliary data or merge groups."
)
#: What makes a bootstrap replicate undefined, named in the interval's warning.
_REPLICATE_CAUSE = (
    "a group without auxiliary rows in a predicted class, or with an estimated share of 0, in the replicate; "
    "more auxiliary data leaves fewer undefined"
)
_UNINFORMATIVE = (
    "the features of the {part} quantifier's auxiliary rows do not tell {target} apart ({n} rows tested, {n1} in "
    "the group; 5-fold cross-validated AUC {auc:.3f}, permutation p = {p:.2g} against no information, needs "
    "p < {alpha:g}), so its group shares follow noise, not the data"
)
_UNRELIABLE = (
    "the quantified disparity is unreliable (result.reliable is False): {reasons}. Use features that predict "
    "the sensitive attribute, or more auxiliary rows; quantifier='MLPE' reports the auxiliary set's disparity"
)
#: Why an unreliable estimate has no interval (measured: see docs/unaware_quantification.md).
_NO_INTERVAL = (
    "no interval: the estimate is unreliable ({reasons}); the bootstrap does not measure that error (with "
    "features independent of the attribute, 0.95 intervals of PCC and CC held the truth in 84 and 91 of 100 "
    "simulations, and those of SLD, ACC, PACC and HDy were 0.7 to 2 wide)"
)
_UNDEFINED = (
    "the acceptance rate of group {group!r} is undefined: the estimated share of that group "
    "in X_deploy is 0; it is NaN. Use alpha > 0 (Laplace smoothing) or more auxiliary data."
)


class QuantificationResult(UnawareResult):
    """Estimated demographic disparity of a classifier on a deployment set.

    Attributes
    ----------
    key : str
        ``"unaware.quantified_dp"`` (or the measure's key).
    value : float
        Estimated demographic disparity. With two groups,
        ``P(h=+ | s=other) - P(h=+ | s=reference)`` (signed; positive means the
        non-reference group is accepted more often). With more groups, the largest
        minus the smallest estimated acceptance rate. NaN when undefined (``reason``).
    by_group : pandas.Series
        Estimated acceptance rate ``P(h=+ | s)`` of each group, indexed by group.
    draws : ndarray or None
        Bootstrap replicates of ``value`` (``n_boot > 0``), NaN where a replicate was
        undefined; ``interval(prob)`` reads them.
    prob : float
        Default probability of ``interval()``.
    reliable : bool
        False when a quantifier's classifier could not tell the groups apart
        (``reasons`` says which) or the value is undefined.
    reasons : list of str
        Why the estimate is unreliable (empty when ``reliable``). An unreliable
        estimate has no interval: ``interval()`` gives NaN bounds and
        ``interval_reason()`` says why.
    diagnostics : dict
        Quantifier name, per-class mode, smoothing, reference group, sizes of the
        auxiliary and deployment parts, the raw, prior and smoothed prevalence of
        each group per predicted class, the estimated group shares in the
        deployment set, the informativeness test of every quantifier, and
        bootstrap details.
    """

    _default_key = "unaware.quantified_dp"
    _signed: np.ndarray | None = None  # an absolute disparity's signed replicates (absolute())

    _no_replicates_hint = "pass n_boot= (e.g. quantified_disparity(..., n_boot=200)) or use the measure's bootstrap()"

    def _mapped(self, prob: float) -> tuple[float, float] | None:
        """An absolute disparity's interval: the signed one's, mapped through ``|.|`` (it reaches 0 when that does)."""
        if self._signed is None:
            return None
        signed = self.diagnostics["signed_value"]
        lo, hi = percentile_interval(self._signed, prob, estimate=signed, key=self.key, warn=False)
        return (0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))

    def _replicate_cause(self) -> str | None:
        return _REPLICATE_CAUSE

    def interval(self, prob: float | None = None) -> tuple[float, float]:
        """Percentile bootstrap interval of ``value``; NaN bounds (with a warning) when not ``reliable``.

        See :meth:`ReplicatesResult.interval` for the rule on undefined replicates.

        Raises
        ------
        NoIntervalError
            Without bootstrap replicates.
        """
        if not self.reasons:
            return super().interval(prob)
        self._replicates()  # no replicates: NoIntervalError
        check_prob(self.prob if prob is None else prob)
        warnings.warn(self.interval_reason(prob), ProxyReliabilityWarning, stacklevel=2)
        return (float("nan"), float("nan"))

    def interval_reason(self, prob: float | None = None) -> str | None:
        """Why ``interval(prob)`` is refused (NaN bounds) although the value is defined, or None."""
        if self.reasons and self.defined:
            return _NO_INTERVAL.format(reasons="; ".join(self.reasons))
        return super().interval_reason(prob)

    def absolute(self) -> QuantificationResult:
        """The same estimate as an absolute disparity (the signed value kept in ``diagnostics``)."""
        out = copy.copy(self)
        out.value, out.diagnostics = abs(self.value), {**self.diagnostics, "signed_value": self.value}
        out._draws, out._signed = None if self._draws is None else np.abs(self._draws), self._draws
        return out


def _as_2d(X: Any, name: str) -> tuple[Any, int]:
    """``X`` (DataFrames and sparse matrices kept, lists turned into arrays) and its rows; refused unless 2-D."""
    X = X if hasattr(X, "shape") else np.asarray(X)
    if len(X.shape) != 2:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features), like the input of model.predict; "
            f"got {type(X).__name__} with shape {X.shape}."
        )
    return X, int(X.shape[0])


def _check_model(model: Any, pos_label: Any) -> None:
    if not hasattr(model, "predict"):
        raise TypeError(f"model must be a fitted classifier with a predict method; got {type(model).__name__}.")
    try:
        check_is_fitted(model)
    except NotFittedError as exc:
        raise NotFittedError(
            f"model ({type(model).__name__}) is not fitted; fit it on its training data before auditing it."
        ) from exc
    except TypeError:  # not a scikit-learn estimator: trust its predict
        pass
    classes = getattr(model, "classes_", None)
    if classes is not None:
        classes = list(np.asarray(classes).tolist())
        if len(classes) > 2:
            raise ValueError(
                f"model predicts {len(classes)} classes {classes}; demographic disparity "
                "needs binary predictions (accepted or not). Binarise the model's output."
            )
        if pos_label not in classes:
            raise ValueError(
                f"pos_label={pos_label!r} is not one of the model's classes {classes}; pass "
                f"pos_label= with the label that means acceptance (e.g. pos_label={classes[-1]!r})."
            )


def _predict_positive(model: Any, X: Any, pos_label: Any, name: str) -> np.ndarray:
    pred = np.asarray(model.predict(X)).ravel()
    labels = pd.unique(pred)
    if len(labels) > 2:
        raise ValueError(
            f"model.predict({name}) returned {len(labels)} distinct labels "
            f"{sorted(labels.tolist(), key=str)}; demographic disparity needs binary predictions."
        )
    if len(labels) == 2 and pos_label not in set(labels.tolist()):
        raise ValueError(
            f"pos_label={pos_label!r} is not among the predictions {labels.tolist()} of "
            f"model on {name}; pass pos_label= with the label that means acceptance."
        )
    return pred == pos_label


def _check_sensitive(s_aux: Any, n: int) -> tuple[np.ndarray, pd.Index]:
    """Integer codes (0..K-1) of the observed groups, and their labels."""
    raw = s_aux if isinstance(s_aux, (pd.Series, pd.DataFrame)) else np.asarray(s_aux, dtype=object)
    missing = np.asarray(pd.isna(raw))
    if missing.any():
        rows = np.flatnonzero(missing.reshape(len(raw), -1).any(axis=1))
        raise ValueError(
            f"s_aux has {rows.size} missing value(s) (NaN/None), first at position {rows[0]}; drop those auxiliary "
            "rows (from X_aux too) or encode them as an explicit group such as 'unknown'."
        )
    codes, groups = encode_groups(s_aux, name="s_aux")  # the groups that occur (categories are not groups)
    if codes.size != n:
        raise ValueError(_LENGTH.format(n_x=n, n_s=codes.size))
    return codes, groups


def _format_counts(groups: pd.Index, counts: np.ndarray) -> str:
    return ", ".join(f"{g!r}: {int(c)}" for g, c in zip(groups, counts, strict=True))


class QuantificationDisparity(BaseEstimator):
    """Estimate a classifier's demographic disparity where the sensitive attribute is unknown.

    The method of Fabris et al. (JAIR 2023): quantifiers trained on a small
    auxiliary set that records the sensitive attribute estimate, on a deployment set
    that does not, the share of each group among the rows the audited model accepts
    and among those it rejects; Bayes' rule turns these shares into per-group
    acceptance rates. See the module docstring for the equations.

    Parameters
    ----------
    quantifier : {"SLD", "CC", "PCC", "ACC", "PACC", "HDy", "MLPE"}, default="SLD"
        Quantification method (case-insensitive; ``"EMQ"`` is SLD). SLD was the most
        accurate in the paper under shifts between auxiliary and deployment data;
        CC and PCC are the "threshold" and "weighted" estimators of earlier work
        and are biased under such shifts; MLPE ignores the deployment data.
    classifier : estimator, default=None
        Unfitted scikit-learn classifier ``k`` inside each quantifier, trained to
        predict the sensitive attribute from the same features the model sees.
        ``None`` means one-hot encoding of the non-numeric columns, standardisation
        of the numeric ones, and logistic regression
        (:func:`~skfair_measures.unaware._quantifiers.default_classifier`).
    per_class : bool, default=True
        Train one quantifier per class predicted by the model (the paper's method).
        ``False`` trains a single quantifier on all auxiliary rows (the paper's
        ablation in section 5.10): it needs fewer auxiliary rows per class but is
        usually less accurate for SLD and PACC.
    reference : object, default=None
        With two groups, the group whose acceptance rate is subtracted: ``value`` is
        ``P(h=+ | other) - P(h=+ | reference)``. ``None`` takes the first group in
        sorted order. Not allowed with more than two groups (the disparity is then
        max minus min).
    pos_label : object, default=1
        The prediction of the model that means acceptance.
    alpha : float, default=0.5
        Laplace pseudocount per group; the prior is the group's prevalence in the
        auxiliary rows of the same predicted class. ``0`` disables smoothing.
    n_boot : int, default=0
        Number of bootstrap replicates (auxiliary and deployment rows resampled,
        quantifiers retrained); ``0`` gives no interval.
    prob : float, default=0.95
        Probability of the percentile bootstrap interval; a number in (0, 1).
    random_state : int, RandomState instance or None, default=0
        Seeds every random step: the hold-out splits of ACC, PACC and HDy, the
        quantifiers' classifiers (their ``random_state`` parameters left at None)
        and the bootstrap, so the same data give the same answer. ``None`` draws
        fresh randomness on every call.

    Attributes
    ----------
    quantifier_ : str
        Canonical name of the quantification method.
    groups_ : pandas.Index
        Groups of the sensitive attribute: with two groups the reference first,
        otherwise in sorted order. ``by_group`` follows this order.
    reference_ : object or None
        Reference group (two groups only).
    quantifiers_ : dict
        Fitted :class:`BinaryQuantifier` objects keyed by ``"negative"`` and
        ``"positive"`` (or ``"all"`` when ``per_class=False``); each entry is a list
        with one quantifier (two groups) or one per group (one-vs-rest).
    aux_prevalence_ : pandas.DataFrame
        Share of each group among the auxiliary rows of each predicted class (the
        smoothing prior); rows ``"negative"``, ``"positive"``.
    n_aux_ : dict
        Number of auxiliary rows per predicted class.

    See Also
    --------
    quantified_disparity : Fit and estimate in one call.

    References
    ----------
    A. Fabris, A. Esuli, A. Moreo, F. Sebastiani. Measuring fairness under
    unawareness of sensitive attributes: a quantification-based approach. Journal of
    Artificial Intelligence Research 76, 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> def sample(n, share_b):
    ...     s = np.where(rng.random(n) < share_b, "b", "a")
    ...     X = rng.normal((s == "b")[:, None] * [1.0, 2.0], 1.0, size=(n, 2))
    ...     y = (X[:, 0] + rng.normal(0, 1, n) > 0.5).astype(int)
    ...     return X, y, s
    >>> X1, y1, _ = sample(2000, 0.5)
    >>> model = LogisticRegression().fit(X1, y1)           # audited model, never sees s
    >>> X_aux, _, s_aux = sample(2000, 0.5)                # small set that records s
    >>> X_dep, _, s_dep = sample(4000, 0.2)                # deployment: group b is rarer
    >>> est = QuantificationDisparity("SLD", random_state=0).fit(model, X_aux, s_aux)
    >>> res = est.estimate(X_dep)
    >>> accepted = model.predict(X_dep) == 1               # the truth, for comparison
    >>> true = accepted[s_dep == "b"].mean() - accepted[s_dep == "a"].mean()
    >>> round(res.value, 2), round(float(true), 2)
    (0.37, 0.4)
    >>> res.by_group.index.tolist()
    ['a', 'b']
    """

    def __init__(
        self,
        quantifier: str = "SLD",
        classifier: BaseEstimator | None = None,
        per_class: bool = True,
        reference: Any = None,
        pos_label: Any = 1,
        alpha: float = 0.5,
        n_boot: int = 0,
        prob: float = 0.95,
        random_state: int | np.random.RandomState | None = 0,
    ) -> None:
        self.quantifier, self.classifier, self.per_class, self.reference = quantifier, classifier, per_class, reference
        self.pos_label, self.alpha, self.n_boot, self.prob = pos_label, alpha, n_boot, prob
        self.random_state = random_state

    # ------------------------------------------------------------------ validation
    def _check_params(self) -> str:
        name = resolve_quantifier(self.quantifier)
        if not (np.isscalar(self.alpha) and np.isfinite(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be a finite number >= 0; got {self.alpha!r}.")
        if isinstance(self.n_boot, bool) or not isinstance(self.n_boot, (int, np.integer)) or (self.n_boot < 0):
            raise ValueError(f"n_boot must be an integer >= 0; got {self.n_boot!r}.")
        check_prob(self.prob)
        if not isinstance(self.per_class, (bool, np.bool_)):
            raise ValueError(f"per_class must be True or False; got {self.per_class!r}.")
        return name

    # ------------------------------------------------------------------ fitting
    def fit(self, model: Any, X_aux: Any, s_aux: Any) -> QuantificationDisparity:
        """Train the quantifiers on the auxiliary set.

        Parameters
        ----------
        model : fitted classifier
            The audited model ``h``; its ``predict`` must return binary labels.
        X_aux : array-like or DataFrame of shape (n_aux, n_features)
            Features of the auxiliary set ``D2``, in the form ``model.predict``
            accepts (the quantifiers' classifier sees the same features).
        s_aux : array-like of shape (n_aux,)
            Sensitive attribute of each auxiliary row (no missing values).

        Returns
        -------
        self : QuantificationDisparity
            The fitted estimator.
        """
        name = self._check_params()
        _check_model(model, self.pos_label)
        X_aux, n = _as_2d(X_aux, "X_aux")
        codes, groups = _check_sensitive(resolve_sensitive(s_aux, argument="s_aux"), n)
        reference = self._resolve_reference(groups)
        if reference is not None and groups[0] != reference:  # reference gets code 0
            order = np.array([groups.get_loc(reference), 1 - groups.get_loc(reference)])
            codes, groups = np.argsort(order)[codes], groups[order]
        pos_aux = _predict_positive(model, X_aux, self.pos_label, "X_aux")
        rng = check_random_state(self.random_state)
        state = self._fit_core(name, X_aux, codes, pos_aux, groups, rng)

        self.quantifier_, self.model_, self.groups_, self.reference_ = name, model, groups, reference
        self._state, self.quantifiers_ = state, state["quantifiers"]
        self.aux_prevalence_ = pd.DataFrame(state["prior"], index=pd.Index(PREDICTED, name="predicted"), columns=groups)
        self.n_aux_ = dict(zip(PREDICTED, state["n_aux"].tolist(), strict=True))
        self._aux = (X_aux, codes, pos_aux)
        return self

    def _resolve_reference(self, groups: pd.Index) -> Any:
        if groups.size > 2:
            if self.reference is not None:
                raise ValueError(
                    f"reference={self.reference!r} applies to two groups only; s_aux has {groups.size} groups "
                    f"{list(groups)}, for which the disparity is the largest minus the smallest acceptance rate. Drop "
                    "reference=, or merge the other groups into one (e.g. 'others')."
                )
            return None
        if self.reference is None:
            return groups[0]
        if self.reference not in groups:
            raise ValueError(f"reference={self.reference!r} is not a group of s_aux {list(groups)}.")
        return groups[groups.get_loc(self.reference)]

    def _fit_core(
        self, name: str, X: Any, codes: np.ndarray, pos: np.ndarray, groups: pd.Index, rng: Any, *, check: bool = True
    ) -> dict[str, Any]:
        """Fit the quantifiers on encoded auxiliary data (reused by the bootstrap, with ``check=False``)."""
        n_groups = groups.size
        counts = np.bincount(pos.astype(np.intp) * n_groups + codes, minlength=2 * n_groups).reshape(2, n_groups)
        n_aux = counts.sum(1)
        need = 2 if name in HOLDOUT_QUANTIFIERS else 1
        short = np.flatnonzero((counts < need).any(axis=1))  # predicted classes missing a group
        if self.per_class and short.size:
            c = int(short[0])
            where = {"cls": PREDICTED[c], "op": "==" if c else "!=", "pos": self.pos_label}
            raise ValueError(
                _GROUP_MISSING.format(**where, counts=_format_counts(groups, counts[c]), q=name, need=need)
            )
        if not self.per_class and (counts.sum(0) < need).any():
            raise ValueError(_GROUP_MISSING_ALL.format(counts=_format_counts(groups, counts.sum(0)), q=name, need=need))
        # a predicted class without auxiliary rows (possible with per_class=False)
        # falls back to the prevalence in the whole auxiliary set
        overall = np.tile(counts.sum(0) / counts.sum(), (2, 1))
        prior = np.divide(counts, n_aux[:, None], out=overall, where=n_aux[:, None] > 0)

        parts = {"negative": ~pos, "positive": pos} if self.per_class else {"all": np.ones(codes.size, bool)}
        quantifiers: dict[str, list[BinaryQuantifier]] = {}
        options, seeds = {"classifier": self.classifier, "check_informative": check}, np.iinfo(np.int32).max
        for key, mask in parts.items():
            idx = np.flatnonzero(mask)
            Xp, sp = _take(X, idx), codes[idx]
            quantifiers[key] = [
                BinaryQuantifier(name, random_state=rng.randint(seeds), **options).fit(Xp, (sp == g).astype(int))
                for g in ([1] if n_groups == 2 else range(n_groups))
            ]
        return {"quantifiers": quantifiers, "prior": prior, "n_aux": n_aux, "counts": counts}

    # ------------------------------------------------------------------ estimating
    def estimate(self, X_deploy: Any) -> QuantificationResult:
        """Estimate the per-group acceptance rates and the disparity on a deployment set.

        Parameters
        ----------
        X_deploy : array-like or DataFrame of shape (n_deploy, n_features)
            Features of the deployment set ``D3`` (no sensitive attribute needed).

        Returns
        -------
        QuantificationResult
            ``value``, ``by_group``, ``diagnostics`` and ``interval``.
        """
        if not hasattr(self, "_state"):
            raise NotFittedError(
                "this QuantificationDisparity is not fitted yet; call "
                "fit(model, X_aux, s_aux) before estimate(X_deploy)."
            )
        X_deploy, n_deploy = _as_2d(X_deploy, "X_deploy")
        if n_deploy == 0:
            raise ValueError("X_deploy has no rows; pass the deployment data to audit.")
        pos = _predict_positive(self.model_, X_deploy, self.pos_label, "X_deploy")
        core = self._estimate_core(self._state, X_deploy, pos)
        mu = core["mu"]
        bad = self.groups_[np.isnan(mu)].tolist()
        for g in bad:
            warnings.warn(_UNDEFINED.format(group=g), UndefinedGroupWarning, stacklevel=2)
        value = self._disparity(mu)

        diagnostics, draws = self._diagnostics(core), None
        if self.n_boot > 0:
            draws, diagnostics["bootstrap"] = self._bootstrap(X_deploy, pos, value, mu)
        by_group = pd.Series(mu, index=self.groups_.copy(), name="acceptance_rate", dtype=float)
        reason = f"the estimated share of group(s) {bad} in X_deploy is 0" if bad else None
        diagnostics["informativeness"], reasons = self._informativeness(pos)
        if reasons:
            warnings.warn(_UNRELIABLE.format(reasons="; ".join(reasons)), ProxyReliabilityWarning, stacklevel=2)
            if draws is not None and not math.isnan(value):  # as the result's interval(): refused
                boot = diagnostics["bootstrap"]
                boot["interval_reason"] = _NO_INTERVAL.format(reasons="; ".join(reasons))
                boot["by_group_interval"] = {g: (float("nan"), float("nan")) for g in boot["by_group_interval"]}
        return QuantificationResult(
            value, by_group, diagnostics, draws=draws, reason=reason, reasons=reasons, prob=float(self.prob)
        )

    def _informativeness(self, pos: np.ndarray) -> tuple[dict[str, dict[Any, Any]], list[str]]:
        """The informativeness test of each quantifier the estimate used, and a reason per failed one.

        A quantifier whose predicted class has no deployment rows has weight 0 in the
        estimate and is not held against it.
        """
        tests: dict[str, dict[Any, Any]] = {}
        reasons: list[str] = []
        used = {"all": bool(pos.size)} if not self.per_class else {"negative": (~pos).any(), "positive": pos.any()}
        targets = self.groups_[1:] if self.groups_.size == 2 else self.groups_
        rest = repr(plain(self.groups_[0])) if self.groups_.size == 2 else "the rest"
        for part, qs in self.quantifiers_.items():
            tests[part] = {g: q.informativeness_ for g, q in zip(targets, qs, strict=True)}
            for g, info in tests[part].items():
                if info is None or info["informative"] or not used[part]:
                    continue
                target, scope = f"group {plain(g)!r} from {rest}", "single" if part == "all" else f"predicted-{part}"
                n, n1, p = sum(info["n_tested"]), info["n_tested"][1], info["p_value"]
                test = {"n": n, "n1": n1, "auc": info["auc"], "p": p, "alpha": info["alpha"]}
                reasons.append(_UNINFORMATIVE.format(part=scope, target=target, **test))
        return tests, reasons

    def _disparity(self, mu: np.ndarray) -> float:
        return float(mu[1] - mu[0]) if mu.shape[-1] == 2 else float(np.max(mu) - np.min(mu))  # NaN propagates

    def _estimate_core(self, state: dict[str, Any], X: Any, pos: np.ndarray) -> dict[str, Any]:
        """Prevalence estimates, smoothing and acceptance rates (Eqs. 12-15)."""
        prior = state["prior"]
        n_groups, n_dep = prior.shape[1], np.array([(~pos).sum(), pos.sum()])
        raw = prior.copy()  # an empty part keeps the prior (its weight p(c) is 0)
        for c, mask in enumerate((~pos, pos)):
            if n_dep[c] == 0:
                continue
            Xc = _take(X, np.flatnonzero(mask))
            qs = state["quantifiers"]["all" if "all" in state["quantifiers"] else PREDICTED[c]]
            est = np.array([q.predict(Xc) for q in qs])
            if n_groups == 2:
                raw[c] = [1.0 - est[0], est[0]]
            else:
                total = est.sum()
                raw[c] = est / total if total > 0 else np.full(n_groups, 1.0 / n_groups)
        pseudo = self.alpha * n_groups
        with np.errstate(invalid="ignore", divide="ignore"):
            denominator = n_dep[:, None] + pseudo
            smoothed = np.where(denominator > 0, (raw * n_dep[:, None] + prior * pseudo) / denominator, raw)
            p_class = n_dep / n_dep.sum()
            joint = smoothed * p_class[:, None]  # estimated P(h=c, s) on D3
            share = joint.sum(0)  # estimated P(s) on D3 (Eq. 13)
            mu = np.where(share > 0, joint[1] / share, np.nan)  # Eq. 15
        return dict(mu=mu, raw=raw, smoothed=smoothed, share=share, n_deploy=n_dep, p_positive=float(p_class[1]))

    def _diagnostics(self, core: dict[str, Any]) -> dict[str, Any]:
        groups = list(self.groups_)

        def per_group(values: np.ndarray) -> dict[Any, float]:
            return {g: float(v) for g, v in zip(groups, values, strict=True)}

        def table(arr: np.ndarray) -> dict[str, dict[Any, float]]:
            return {PREDICTED[c]: per_group(arr[c]) for c in (0, 1)}

        smoothing = {"method": "laplace, known incidence (prior = auxiliary prevalence per class)"}
        smoothing |= {"alpha": float(self.alpha), "pseudocount_total": float(self.alpha * len(groups))}
        out = {"quantifier": self.quantifier_, "per_class": bool(self.per_class), "groups": groups}
        out |= {"reference": self.reference_, "pos_label": self.pos_label, "smoothing": smoothing}
        out |= {"prevalence_raw": table(core["raw"]), "prevalence_prior": table(self._state["prior"])}
        out |= {"prevalence_smoothed": table(core["smoothed"]), "group_share_deploy": per_group(core["share"])}
        n_aux, n_deploy = self._state["n_aux"].tolist(), core["n_deploy"].tolist()
        out |= {"deploy_positive_rate": core["p_positive"], "n_aux": dict(zip(PREDICTED, n_aux, strict=True))}
        return out | {"n_deploy": dict(zip(PREDICTED, n_deploy, strict=True))}

    def _bootstrap(
        self, X_deploy: Any, pos_dep: np.ndarray, value: float, mu: np.ndarray
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Disparity on replicates that resample auxiliary and deployment rows and refit the quantifiers.

        A replicate that leaves a group without auxiliary rows in a predicted class
        is NaN (and counted); the intervals follow
        :func:`~skfair_measures.results.percentile_interval` (the value's warns when
        asked for, through ``interval()``).
        """
        X_aux, codes, pos_aux = self._aux
        rng = check_random_state(self.random_state)
        n2, n3 = codes.size, pos_dep.size
        values, rates = np.full(self.n_boot, np.nan), np.full((self.n_boot, self.groups_.size), np.nan)
        for b in range(self.n_boot):
            i2, i3 = rng.randint(n2, size=n2), rng.randint(n3, size=n3)
            resampled = (_take(X_aux, i2), codes[i2], pos_aux[i2], self.groups_, rng)
            try:
                state = self._fit_core(self.quantifier_, *resampled, check=False)
            except ValueError:  # a replicate lost a group in some predicted class
                continue
            core = self._estimate_core(state, _take(X_deploy, i3), pos_dep[i3])
            values[b], rates[b] = self._disparity(core["mu"]), core["mu"]
        level = float(self.prob)
        by_group = {
            g: percentile_interval(rates[:, j], level, estimate=float(mu[j]), key=str(g), warn=False)
            for j, g in enumerate(self.groups_)
        }
        info = {"n_boot": int(self.n_boot), "n_failed": int((~np.isfinite(values)).sum()), "prob": level}
        info |= {"std": replicate_se(values, estimate=value), "by_group_interval": by_group}
        info["interval_reason"] = None if math.isnan(value) else interval_refusal(values, level)
        return values, info


def quantified_disparity(
    model: Any,
    X_aux: Any,
    s_aux: Any,
    X_deploy: Any,
    quantifier: str = "SLD",
    **options: Any,
) -> QuantificationResult:
    """Estimate a classifier's demographic disparity on data without the sensitive attribute.

    Fits :class:`QuantificationDisparity` on the auxiliary set and applies it to the
    deployment set (Fabris et al., JAIR 2023).

    Parameters
    ----------
    model : fitted classifier
        The audited model ``h``, with binary ``predict``.
    X_aux : array-like or DataFrame of shape (n_aux, n_features)
        Features of the auxiliary set, where the sensitive attribute is known.
    s_aux : array-like of shape (n_aux,)
        Sensitive attribute of the auxiliary rows.
    X_deploy : array-like or DataFrame of shape (n_deploy, n_features)
        Features of the deployment set, where the sensitive attribute is unknown.
    quantifier : {"SLD", "CC", "PCC", "ACC", "PACC", "HDy", "MLPE"}, default="SLD"
        Quantification method (case-insensitive; ``"EMQ"`` is SLD).
    **options
        Keyword arguments of :class:`QuantificationDisparity`:
    classifier : estimator, default=None
        Classifier inside the quantifiers; ``None`` is scaled logistic regression.
    per_class : bool, default=True
        One quantifier per predicted class (``False``: the paper's ablation).
    reference : object, default=None
        With two groups, the group subtracted in ``value``; ``None`` is the first
        group in sorted order.
    pos_label : object, default=1
        The prediction that means acceptance.
    alpha : float, default=0.5
        Laplace pseudocount per group; ``0`` disables smoothing.
    n_boot : int, default=0
        Bootstrap replicates for ``interval``; ``0`` gives none.
    prob : float, default=0.95
        Probability of the bootstrap interval; a number in (0, 1).
    random_state : int, RandomState instance or None, default=0
        Seeds hold-out splits, the quantifiers' classifiers and the bootstrap (same
        data, same answer); ``None`` draws fresh randomness on every call.

    Returns
    -------
    QuantificationResult
        ``value`` (``P(h=+|other) - P(h=+|reference)`` for two groups, max minus min
        otherwise), ``by_group`` (estimated acceptance rates), ``diagnostics``,
        ``interval``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(1)
    >>> s = rng.integers(0, 2, 4000)
    >>> X = rng.normal(s[:, None] * [1.0, 1.0], 1.0, size=(4000, 2))
    >>> y = (X.sum(1) + rng.normal(0, 1, 4000) > 1).astype(int)
    >>> model = LogisticRegression().fit(X[:2000], y[:2000])
    >>> res = quantified_disparity(model, X[2000:3000], s[2000:3000], X[3000:],
    ...                            quantifier="PACC", random_state=0)
    >>> res.by_group.round(1).tolist()
    [0.2, 0.8]
    >>> res.diagnostics["quantifier"], res.diagnostics["n_deploy"]["positive"] > 0
    ('PACC', True)
    """
    return QuantificationDisparity(quantifier, **options).fit(model, X_aux, s_aux).estimate(X_deploy)
