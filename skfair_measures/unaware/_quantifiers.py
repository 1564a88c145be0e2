"""Binary quantifiers (prevalence estimators) behind one small adapter.

A quantifier learns, from labeled data, to estimate the *prevalence* of a class in
an unlabeled sample, rather than the class of each point. The methods here are the
ones compared by Fabris, Esuli, Moreo and Sebastiani (JAIR 2023) for measuring
demographic disparity without the sensitive attribute:

=====  ==================================================================
CC     classify and count: share of points the classifier assigns to 1
PCC    probabilistic CC: mean posterior probability of class 1
ACC    adjusted CC: CC corrected with the classifier's tpr and fpr
PACC   probabilistic ACC: PCC corrected with soft tpr and fpr
SLD    Saerens-Latinne-Decaestecker EM (also called EMQ): re-estimates the
       prior and the posteriors of the sample until they agree
HDy    Hellinger-distance matching of the posterior histograms
MLPE   maximum-likelihood prevalence estimate: the training prevalence
=====  ==================================================================

All of them are run through QuaPy, the quantification library of the paper's
authors, imported only when a quantifier is fitted so that
``import skfair_measures.unaware`` stays light. QuaPy's defaults differ from the
settings the paper states in three places, and we configure it accordingly:

* ACC, PACC and HDy default to 5-fold cross-validation for their correction
  statistics; the paper estimates them on a held-out split. We hold out 40% of the
  training rows (stratified, seeded by ``random_state``), train the classifier on
  the other 60%, and pass the hold-out to QuaPy as its validation set.
* ACC and PACC default to a constrained least-squares solve; the paper solves the
  adjustment equation exactly and then clips the result to [0, 1] and renormalises,
  which is QuaPy's ``solver="exact-cc"`` with ``norm="clip"`` (if tpr equals fpr the
  system is singular and the unadjusted estimate is returned).
* QuaPy's SLD (``EMQ``) and HDy defaults already match the paper: EM stops when the
  prevalence changes by less than 1e-4 (at most 1000 iterations); HDy takes the
  median, over 11 bin counts 10, 20, ..., 110, of the best mixture weight on a grid
  of 100 values in [0, 1].

Every method but MLPE reads the prevalence through a classifier ``k`` of the class.
If ``k`` cannot tell the classes apart (``tpr = fpr``), no method can: ACC and PACC
divide by ``tpr - fpr``, and SLD, HDy, CC and PCC return numbers that depend on noise.
:func:`informativeness` tests this on held-out rows (see there for the criterion).
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_random_state

__all__ = ["QUANTIFIERS", "BinaryQuantifier", "default_classifier", "informativeness", "resolve_quantifier"]

#: Names accepted by ``quantifier=``, in the order of the paper's tables.
QUANTIFIERS: tuple[str, ...] = ("CC", "PCC", "ACC", "PACC", "SLD", "HDy", "MLPE")
_ALIASES = {"EMQ": "SLD"}
#: Quantifiers that need a held-out split of their training rows.
HOLDOUT_QUANTIFIERS = frozenset({"ACC", "PACC", "HDy"})
#: Quantifiers that train no classifier.
NO_CLASSIFIER_QUANTIFIERS = frozenset({"MLPE"})
#: Significance level of the test that a quantifier's classifier carries information.
INFORMATIVE_ALPHA = 0.01

_NO_QUAPY = (
    "quantifier {name!r} needs QuaPy, which is not installed; install it with "
    "pip install 'skfair-measures[unaware]' (or pip install quapy)."
)


def resolve_quantifier(name: Any) -> str:
    """Return the canonical spelling of a quantifier name.

    Parameters
    ----------
    name : str
        A quantification method, case-insensitive: one of ``QUANTIFIERS``, or
        ``"EMQ"`` (another name of SLD).

    Returns
    -------
    str
        The canonical name, e.g. ``"HDy"``.

    Raises
    ------
    ValueError
        If ``name`` is unknown; the message suggests the closest names.

    Examples
    --------
    >>> resolve_quantifier("sld")
    'SLD'
    >>> resolve_quantifier("emq")
    'SLD'
    >>> resolve_quantifier("PAC")
    Traceback (most recent call last):
    ...
    ValueError: unknown quantifier 'PAC'; did you mean 'PACC' or ...
    """
    known = {q.upper(): q for q in QUANTIFIERS}
    known.update(_ALIASES)
    key = str(name).upper() if isinstance(name, str) else None
    if key in known:
        return known[key]
    valid = ", ".join(QUANTIFIERS) + " (EMQ is an alias of SLD)"
    close = difflib.get_close_matches(str(name).upper(), list(known), n=3, cutoff=0.5)
    close = list(dict.fromkeys(known[c] for c in close))
    hint = ""
    if close:
        hint = "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    raise ValueError(f"unknown quantifier {name!r}{hint} Valid names: {valid}.")


def _categorical_columns(X: Any) -> list[Any]:
    """Columns of ``X`` that are not numbers: by dtype for a DataFrame, by value for an object array."""
    if hasattr(X, "dtypes") and hasattr(X, "columns"):
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        return [c for c in X.columns if not is_numeric_dtype(X[c]) or is_bool_dtype(X[c])]
    arr = X if hasattr(X, "dtype") else np.asarray(X)
    if getattr(arr, "dtype", None) is None or arr.dtype != object or arr.ndim != 2:
        return []
    out = []
    for j in range(arr.shape[1]):
        try:
            arr[:, j].astype(float)
        except (TypeError, ValueError):
            out.append(j)
    return out


def default_classifier(X: Any = None) -> BaseEstimator:
    """Return the default classifier ``k`` inside a quantifier, for features like ``X``.

    Standardised numeric features followed by logistic regression, as in the paper
    (which standardises every feature and uses logistic regression for ``k``).
    Non-numeric columns of ``X`` (strings, categories, booleans) are one-hot encoded
    by a ``ColumnTransformer`` (categories unseen in training are ignored).

    Parameters
    ----------
    X : array-like or DataFrame, optional
        Features the classifier will see; only their column types are read.

    Returns
    -------
    sklearn.pipeline.Pipeline
        An unfitted pipeline ending in ``LogisticRegression(max_iter=1000)``.

    Examples
    --------
    >>> default_classifier()
    Pipeline(steps=[('standardscaler', StandardScaler()),
                    ('logisticregression', LogisticRegression(max_iter=1000))])
    >>> import pandas as pd
    >>> X = pd.DataFrame({"age": [30, 40], "job": ["Private", "State-gov"]})
    >>> default_classifier(X).steps[0][1].transformers
    [('categorical', OneHotEncoder(handle_unknown='ignore'), ['job']), ('numeric', StandardScaler(), ['age'])]
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    categorical = [] if X is None else _categorical_columns(X)
    if not categorical:
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    columns = list(X.columns) if hasattr(X, "columns") else list(range(X.shape[1]))
    numeric = [c for c in columns if c not in categorical]
    encode = ColumnTransformer(
        [("categorical", OneHotEncoder(handle_unknown="ignore"), categorical), ("numeric", StandardScaler(), numeric)]
    )
    return make_pipeline(encode, LogisticRegression(max_iter=1000))


def informativeness(scores: Any, y: Any, *, alpha: float = INFORMATIVE_ALPHA) -> dict[str, Any]:
    """Test whether held-out classifier scores separate class 1 from class 0.

    The statistic is the AUC of the scores, ``P(score of a class-1 row > score of a
    class-0 row)`` (ties count one half), which is 0.5 when the features carry no
    information about the class. It equals ``(tpr - fpr + 1) / 2`` averaged over all
    thresholds, so an AUC of 0.5 means ``tpr = fpr`` at every threshold, the
    singularity of ACC and PACC. The test is the one-sided Mann-Whitney U test of
    ``AUC > 0.5`` (exact for small samples without ties, otherwise the normal
    approximation with tie correction): the scores are *informative* when its
    p-value is below ``alpha``. The rows must not have been used to train the
    classifier, or the AUC is biased upwards.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Held-out scores of class 1 (probabilities or decision values).
    y : array-like of shape (n_samples,)
        True classes, 0 and 1.
    alpha : float, default=0.01
        Significance level.

    Returns
    -------
    dict
        ``auc``, ``p_value``, ``n_holdout`` (rows per class, ``[n0, n1]``), ``alpha``
        and ``informative`` (``p_value < alpha``; False when a class has no held-out
        row, with ``auc`` and ``p_value`` NaN).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> informativeness(y + rng.normal(0, 1, 400), y)["informative"]
    True
    >>> informativeness(rng.normal(0, 1, 400), y)["informative"]
    False
    """
    from scipy.stats import mannwhitneyu

    scores = np.asarray(scores, dtype=float).ravel()
    y = np.asarray(y).astype(int, copy=False).ravel()
    n = np.bincount(y, minlength=2)[:2]
    out: dict[str, Any] = {"auc": float("nan"), "p_value": float("nan"), "n_holdout": n.tolist(), "alpha": alpha}
    if (n == 0).any():
        return {**out, "informative": False}
    test = mannwhitneyu(scores[y == 1], scores[y == 0], alternative="greater")
    p_value = float(test.pvalue)
    return {**out, "auc": float(test.statistic / (n[0] * n[1])), "p_value": p_value, "informative": p_value < alpha}


def _scores(k: Any, X: Any) -> np.ndarray:
    """Scores of class 1 by a fitted classifier: probabilities, else decision values, else labels."""
    if hasattr(k, "predict_proba"):
        return np.asarray(k.predict_proba(X))[:, 1]
    if hasattr(k, "decision_function"):
        return np.asarray(k.decision_function(X)).ravel()
    return np.asarray(k.predict(X), dtype=float).ravel()


def _seeded(estimator: BaseEstimator, rng: np.random.RandomState) -> BaseEstimator:
    """Give every ``random_state`` parameter left at None a seed (as scikit-learn's ensembles do)."""
    fixed = {
        name: rng.randint(np.iinfo(np.int32).max)
        for name, value in estimator.get_params(deep=True).items()
        if (name == "random_state" or name.endswith("__random_state")) and value is None
    }
    return estimator.set_params(**fixed) if fixed else estimator


def _import_quapy(name: str) -> Any:
    try:
        import quapy
    except ImportError as exc:  # pragma: no cover - quapy is installed in the test env
        raise ImportError(_NO_QUAPY.format(name=name)) from exc
    return quapy


def _take(X: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of a DataFrame, array or sparse matrix."""
    return X.iloc[idx] if hasattr(X, "iloc") else X[idx]


class BinaryQuantifier(BaseEstimator):
    """Estimate the prevalence of class 1 in a sample: one QuaPy method, configured.

    Parameters
    ----------
    method : {"CC", "PCC", "ACC", "PACC", "SLD", "HDy", "MLPE"}, default="SLD"
        Quantification method (case-insensitive; ``"EMQ"`` means SLD).
    classifier : estimator, default=None
        Unfitted scikit-learn classifier ``k`` wrapped by the method; it is cloned.
        ``None`` uses :func:`default_classifier` (one-hot encoding of non-numeric
        columns, then standardised logistic regression). Methods other than CC and ACC use
        ``predict_proba``; QuaPy calibrates a classifier without it (Platt scaling,
        with a warning). Ignored by MLPE.
    holdout : float, default=0.4
        Fraction of the training rows held out (stratified) to estimate the
        correction statistics of ACC, PACC and HDy; ``k`` is trained on the rest.
    random_state : int, RandomState instance or None, default=0
        Seeds the hold-out split and the classifier's own ``random_state``
        parameters that are None (same data, same answer).
    check_informative : bool, default=True
        Test whether the classifier separates the classes on held-out rows
        (:func:`informativeness`): for ACC, PACC and HDy on their own hold-out; for
        CC, PCC and SLD (trained on every row) on a stratified ``holdout`` share of
        the rows, with a copy of the classifier trained on the rest (one more fit).
        MLPE trains no classifier and is not tested.

    Attributes
    ----------
    method_ : str
        Canonical method name.
    quantifier_ : object
        The fitted QuaPy quantifier.
    train_prevalence_ : float
        Share of class 1 in the training labels.
    informativeness_ : dict or None
        The result of :func:`informativeness` (``None`` for MLPE or without
        ``check_informative``).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 600)
    >>> X = rng.normal(2.0 * y[:, None], 1.0, size=(600, 2))
    >>> q = BinaryQuantifier("PACC", random_state=0).fit(X, y)
    >>> y_new = (rng.random(400) < 0.8).astype(int)    # the prevalence shifts to 0.8
    >>> X_new = rng.normal(2.0 * y_new[:, None], 1.0, size=(400, 2))
    >>> round(q.predict(X_new), 2), round(float(y_new.mean()), 2)
    (0.8, 0.8)
    """

    def __init__(
        self,
        method: str = "SLD",
        classifier: BaseEstimator | None = None,
        holdout: float = 0.4,
        random_state: int | np.random.RandomState | None = 0,
        check_informative: bool = True,
    ) -> None:
        self.method = method
        self.classifier = classifier
        self.holdout = holdout
        self.random_state = random_state
        self.check_informative = check_informative

    def fit(self, X: Any, y: Any) -> BinaryQuantifier:
        """Train the quantifier on labeled rows.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Features, in whatever form ``classifier`` accepts.
        y : array-like of shape (n_samples,)
            Binary labels coded 0 and 1, both present (at least twice each for
            ACC, PACC and HDy, whose hold-out split is stratified).

        Returns
        -------
        self : BinaryQuantifier
            The fitted quantifier.
        """
        method = resolve_quantifier(self.method)
        y = np.asarray(y).astype(int, copy=False)
        counts = np.bincount(y, minlength=2)
        if counts.size != 2 or (counts == 0).any():
            raise ValueError(f"y must hold the labels 0 and 1, both present; got counts {counts.tolist()}.")
        if not 0.0 < self.holdout < 1.0:
            raise ValueError(f"holdout must be in (0, 1); got {self.holdout!r}.")
        if method in HOLDOUT_QUANTIFIERS and counts.min() < 2:
            raise ValueError(
                f"{method} holds out a stratified {self.holdout:.0%} of its training rows "
                f"and needs at least 2 rows of each class; got counts {counts.tolist()}."
            )
        qp = _import_quapy(method)
        rng = check_random_state(self.random_state)
        k = default_classifier(X) if self.classifier is None else clone(self.classifier)
        try:
            q = self._fit_quapy(qp, method, k, X, y, rng)
        except (TypeError, ValueError) as exc:
            categorical = _categorical_columns(X) if self.classifier is not None else []
            if not categorical:
                raise
            raise ValueError(
                f"classifier could not be fitted on X, whose column(s) {categorical[:5]} are not numeric "
                f"({exc}); pass classifier= a pipeline that encodes them (e.g. a ColumnTransformer with a "
                "OneHotEncoder), or leave classifier=None for one that does."
            ) from exc
        self.method_ = method
        self.quantifier_ = q
        self.train_prevalence_ = float(counts[1] / counts.sum())
        self.informativeness_ = self._informativeness(method, k, X, y, rng) if self.check_informative else None
        return self

    def _informativeness(self, method: str, k: BaseEstimator, X: Any, y: np.ndarray, rng: Any) -> dict | None:
        """:func:`informativeness` of the classifier on rows it was not trained on (None for MLPE)."""
        if method in NO_CLASSIFIER_QUANTIFIERS:
            return None
        if method in HOLDOUT_QUANTIFIERS:  # the hold-out the correction statistics came from
            X_val, y_val = self.quantifier_.val_split
            return informativeness(_scores(self.quantifier_.classifier_, X_val), y_val)
        if np.bincount(y, minlength=2).min() < 2:  # no stratified split: nothing held out
            return informativeness(np.zeros(0), np.zeros(0, dtype=int))
        tr, va = train_test_split(np.arange(y.size), test_size=self.holdout, stratify=y, random_state=rng)
        fitted = clone(k).fit(_take(X, tr), y[tr])
        return informativeness(_scores(fitted, _take(X, va)), y[va])

    def _fit_quapy(self, qp: Any, method: str, k: BaseEstimator, X: Any, y: np.ndarray, rng: Any) -> Any:
        """The configured QuaPy quantifier, fitted (hold-out split for ACC, PACC and HDy)."""
        agg = qp.method.aggregative
        if method == "MLPE":
            return qp.method.non_aggregative.MaximumLikelihoodPrevalenceEstimation().fit(X, y)
        if method not in HOLDOUT_QUANTIFIERS:
            return {"CC": agg.CC, "PCC": agg.PCC, "SLD": agg.EMQ}[method](_seeded(k, rng)).fit(X, y)
        tr, va = train_test_split(np.arange(y.size), test_size=self.holdout, stratify=y, random_state=rng)
        k = _seeded(k, rng)  # after the split, so that a seed gives the splits it always gave
        val = (_take(X, va), y[va])
        if method == "HDy":
            q = agg.HDy(k, val_split=val)
        else:
            q = {"ACC": agg.ACC, "PACC": agg.PACC}[method](k, val_split=val, solver="exact-cc", norm="clip")
        return q.fit(_take(X, tr), y[tr])

    def predict(self, X: Any) -> float:
        """Estimate the prevalence of class 1 in the sample ``X``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            One unlabeled sample, with at least one row.

        Returns
        -------
        float
            Estimated share of class 1 in ``X``, in [0, 1].
        """
        if not hasattr(self, "quantifier_"):
            raise AttributeError("this BinaryQuantifier is not fitted yet; call fit(X, y) before predict.")
        prev = np.asarray(self.quantifier_.predict(X), dtype=float)
        return float(np.clip(prev[1], 0.0, 1.0))
