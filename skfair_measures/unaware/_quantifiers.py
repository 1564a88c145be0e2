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
:func:`informativeness` tests whether the features carry information about the
class at all (see there for the criterion).
"""

from __future__ import annotations

import difflib
import numbers
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_random_state

from .._optional import require

__all__ = ["QUANTIFIERS", "BinaryQuantifier", "default_classifier", "informativeness", "resolve_quantifier"]

#: Names accepted by ``quantifier=``, in the order of the paper's tables.
QUANTIFIERS: tuple[str, ...] = ("CC", "PCC", "ACC", "PACC", "SLD", "HDy", "MLPE")
_ALIASES = {"EMQ": "SLD"}
#: Quantifiers that need a held-out split of their training rows.
HOLDOUT_QUANTIFIERS = frozenset({"ACC", "PACC", "HDy"})
#: Quantifiers that train no classifier.
NO_CLASSIFIER_QUANTIFIERS = frozenset({"MLPE"})
#: Significance level of the test that the features carry information about the group.
INFORMATIVE_ALPHA = 0.01
#: Folds, permutations and row cap of that test (see :func:`informativeness`).
INFORMATIVE_FOLDS = 5
INFORMATIVE_PERMUTATIONS = 999
INFORMATIVE_MAX_ROWS = 2000

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
    hint = "; did you mean " + " or ".join(repr(c) for c in close) + "?" if close else ""
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
    encode = [("categorical", OneHotEncoder(handle_unknown="ignore"), categorical)]
    encode.append(("numeric", StandardScaler(), numeric))
    return make_pipeline(ColumnTransformer(encode), LogisticRegression(max_iter=1000))


def informativeness(
    X: Any,
    y: Any,
    *,
    alpha: float = INFORMATIVE_ALPHA,
    n_splits: int = INFORMATIVE_FOLDS,
    n_permutations: int = INFORMATIVE_PERMUTATIONS,
    max_rows: int = INFORMATIVE_MAX_ROWS,
    random_state: int | np.random.RandomState | None = 0,
) -> dict[str, Any]:
    """Test whether the features ``X`` carry information about the class ``y``.

    The statistic is the cross-validated AUC of a linear score: the rows are cut
    into ``n_splits`` folds (shuffled, not stratified: the folds do not depend on
    ``y``), a ridge regression of ``y`` on the encoded features (the preprocessing
    of :func:`default_classifier`: one-hot non-numeric columns, standardise numeric
    ones) is fitted on the other folds, and every row is scored by the model that
    did not see it. The AUC, ``P(score of a class-1 row > score of a class-0 row)``
    (ties count one half), is 0.5 on average when the features carry no
    information; it averages ``(tpr - fpr + 1) / 2`` over all thresholds, so an AUC
    of 0.5 means ``tpr = fpr`` everywhere, the singularity of ACC and PACC.

    The p-value is that of a permutation test: the whole procedure (the fits and
    the AUC) is repeated with ``y`` permuted, ``p = (1 + #{permuted AUC >= AUC}) /
    (1 + n_permutations)``. If the features are independent of the class, ``y`` is
    exchangeable given ``X``, so ``P(p <= a) <= a`` for every ``a``: the test keeps
    its level exactly, at any sample size and number of features. (A Mann-Whitney
    test on the pooled out-of-fold scores does not: the label of a row moves the
    models that score the other rows, and in 1,000 simulations with features
    independent of the class it rejected at the 0.01 level in 1.6% to 4.5% of
    them.) The ridge fits are linear in ``y``, so every permutation costs a matrix
    product and no refit. The scores are *informative* when ``p < alpha``.

    Above ``max_rows`` rows, a random subset is tested (drawn from ``y`` alone,
    which keeps the guarantee): every row of the smaller class up to half the
    cap, and rows of the other class up to the rest.

    Parameters
    ----------
    X : array-like, sparse matrix or DataFrame of shape (n_samples, n_features)
        Features.
    y : array-like of shape (n_samples,)
        True classes, 0 and 1.
    alpha : float, default=0.01
        Significance level.
    n_splits : int, default=5
        Folds of the cross-validation (fewer when there are fewer rows).
    n_permutations : int, default=999
        Permutations of ``y``; the smallest possible p-value is ``1 / (1 +
        n_permutations)``.
    max_rows : int, default=2000
        At most this many rows are tested.
    random_state : int, RandomState instance or None, default=0
        Seeds the folds, the subset and the permutations.

    Returns
    -------
    dict
        ``auc`` (cross-validated), ``p_value``, ``n_tested`` (rows per class,
        ``[n0, n1]``), ``n_rows`` (rows per class before the cap), ``alpha`` and
        ``informative`` (``p_value < alpha``; False when a class has fewer than two
        rows, with ``auc`` and ``p_value`` NaN).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)
    >>> X = np.c_[y + rng.normal(0, 2, 400), rng.normal(0, 1, 400)]
    >>> informativeness(X, y)["informative"]
    True
    >>> informativeness(rng.normal(0, 1, (400, 2)), y)["informative"]
    False
    """
    from scipy.stats import rankdata

    rng, y = check_random_state(random_state), np.asarray(y).astype(int, copy=False).ravel()
    n = np.bincount(y, minlength=2)[:2]
    out: dict[str, Any] = {"auc": float("nan"), "p_value": float("nan"), "alpha": alpha}
    out.update(n_tested=n.tolist(), n_rows=n.tolist())
    if (n < 2).any():
        return {**out, "informative": False}
    keep = _capped_rows(y, n, max_rows, rng)
    y = y[keep]
    out["n_tested"] = np.bincount(y, minlength=2).tolist()
    Z = _encoded(_take(X, keep))
    k, fold = int(min(n_splits, y.size)), np.empty(y.size, dtype=np.intp)
    fold[rng.permutation(y.size)] = np.arange(y.size) % k
    Y = np.column_stack([y, *(y[rng.permutation(y.size)] for _ in range(n_permutations))]).astype(float)
    S = np.empty_like(Y)
    for j in range(k):
        te, tr = fold == j, fold != j
        S[te] = _ridge_scores(Z[tr], Y[tr], Z[te])
    ranks = rankdata(S, axis=0)
    n1, n0 = int(y.sum()), int(y.size - y.sum())
    auc = ((ranks * Y).sum(0) - n1 * (n1 + 1) / 2) / (n0 * n1)
    p_value = float((1 + np.sum(auc[1:] >= auc[0] - 1e-12)) / Y.shape[1])
    return {**out, "auc": float(auc[0]), "p_value": p_value, "informative": p_value < alpha}


def _capped_rows(y: np.ndarray, n: np.ndarray, max_rows: int, rng: np.random.RandomState) -> np.ndarray:
    """Indices of at most ``max_rows`` rows: the smaller class up to half, the other class the rest."""
    if y.size <= max_rows:
        return np.arange(y.size)
    small = int(np.argmin(n))
    n_small = min(int(n[small]), max_rows // 2)
    take = {small: n_small, 1 - small: max_rows - n_small}
    idx = [rng.choice(np.flatnonzero(y == c), take[c], replace=False) for c in (0, 1)]
    return np.sort(np.concatenate(idx))


def _encoded(X: Any) -> np.ndarray:
    """Features as a dense float matrix: the preprocessing of :func:`default_classifier`, fitted without labels."""
    if hasattr(X, "toarray") and not hasattr(X, "columns"):
        X = X.toarray()
    Z = default_classifier(X)[:-1].fit_transform(X)
    return Z.toarray() if hasattr(Z, "toarray") else np.asarray(Z, dtype=float)


def _ridge_scores(Z_tr: np.ndarray, Y_tr: np.ndarray, Z_te: np.ndarray, ridge: float = 1.0) -> np.ndarray:
    """Ridge predictions on ``Z_te`` for every column of ``Y_tr`` at once (with an intercept, not penalised)."""
    mean = Z_tr.mean(0)
    Zc = Z_tr - mean
    beta = np.linalg.solve(Zc.T @ Zc + ridge * np.eye(Zc.shape[1]), Zc.T @ Y_tr)
    return Y_tr.mean(0) + (Z_te - mean) @ beta


def _seeded(estimator: BaseEstimator, rng: np.random.RandomState) -> BaseEstimator:
    """Give every ``random_state`` parameter left at None a seed (as scikit-learn's ensembles do)."""
    fixed = {
        name: rng.randint(np.iinfo(np.int32).max)
        for name, value in estimator.get_params(deep=True).items()
        if (name == "random_state" or name.endswith("__random_state")) and value is None
    }
    return estimator.set_params(**fixed) if fixed else estimator


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
        Test whether the features tell the classes apart on every training row
        (:func:`informativeness`: the 5-fold cross-validated AUC of a linear score
        and its permutation p-value). The test reads the features, not
        ``classifier``, and leaves the quantifier unchanged. MLPE reads no features
        and is not tested.

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
        self.method, self.classifier, self.holdout, self.random_state = method, classifier, holdout, random_state
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
        method, y = resolve_quantifier(self.method), np.asarray(y).astype(int, copy=False)
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
        qp, rng = require("quapy", _NO_QUAPY.format(name=method)), check_random_state(self.random_state)
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
        self.method_, self.quantifier_, self.train_prevalence_ = method, q, float(counts[1] / counts.sum())
        self.informativeness_ = self._informativeness(method, X, y, rng) if self.check_informative else None
        return self

    def _informativeness(self, method: str, X: Any, y: np.ndarray, rng: Any) -> dict | None:
        """:func:`informativeness` of the features for the training rows (None for MLPE).

        Seeded by ``random_state`` itself when it is an integer, so that the six
        methods on the same rows reach the same verdict; the quantifier's own
        seeds are drawn before and do not change.
        """
        if method in NO_CLASSIFIER_QUANTIFIERS:
            return None
        seed = self.random_state if isinstance(self.random_state, numbers.Integral) else rng.randint(2**31 - 1)
        return informativeness(X, y, random_state=seed)

    def _fit_quapy(self, qp: Any, method: str, k: BaseEstimator, X: Any, y: np.ndarray, rng: Any) -> Any:
        """The configured QuaPy quantifier, fitted (hold-out split for ACC, PACC and HDy)."""
        quantifier = getattr(qp.method.aggregative, {"SLD": "EMQ"}.get(method, method), None)  # QuaPy's class
        if method == "MLPE":
            return qp.method.non_aggregative.MaximumLikelihoodPrevalenceEstimation().fit(X, y)
        if method not in HOLDOUT_QUANTIFIERS:
            return quantifier(_seeded(k, rng)).fit(X, y)
        tr, va = train_test_split(np.arange(y.size), test_size=self.holdout, stratify=y, random_state=rng)
        k = _seeded(k, rng)  # after the split, so that a seed gives the splits it always gave
        exact = {} if method == "HDy" else {"solver": "exact-cc", "norm": "clip"}  # ACC, PACC: the paper's solve
        return quantifier(k, val_split=(_take(X, va), y[va]), **exact).fit(_take(X, tr), y[tr])

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
