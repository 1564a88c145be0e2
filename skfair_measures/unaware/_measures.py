"""The unawareness estimators as measures: registry keys and scikit-learn scorers.

:class:`ProxyMeasure` measures DP, EOd or EOp through three or more weak proxies of
the sensitive attribute (HOC calibration); :class:`QuantificationMeasure` measures
the demographic disparity of a model on deployment data that lacks the attribute,
from an auxiliary set that has it. Both are in the registry (``msr("unaware.proxy_dp")``,
``msr("unaware.quantified_dp", X_aux=..., s_aux=...)``), return the estimators' result
objects from :meth:`evaluate` (value, per-group estimates, diagnostics, and a bootstrap
interval with ``n_boot=``), and turn into scorers for model selection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._proxy import ProxyDisparityResult, proxy_disparity
from ._quantification import QuantificationResult, quantified_disparity

__all__ = ["ProxyMeasure", "QuantificationMeasure"]

_PROXY_NAMES = {
    "dp": "demographic parity",
    "eod": "equalized odds",
    "eop": "equal opportunity",
}


class ProxyMeasure:
    """A disparity measured through weak proxies of the sensitive attribute.

    Parameters
    ----------
    metric : {"dp", "eod", "eop"}, default="dp"
        Demographic parity, equalized odds or equal opportunity (Zhu et al. 2023).
    mode : {"global", "local", "base"}, default="global"
        HOC calibration with one transition matrix, one per prediction cell, or the
        uncalibrated disparity of the first proxy.
    key : str, optional
        Identifier; defaults to ``"unaware.proxy_<metric>"``.
    **options
        Passed to :func:`~skfair_measures.unaware.proxy_disparity` (``clip=``,
        ``knn_augment=``, ``features=``, ``random_state=``, ...).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 4000)
    >>> proxies = np.where(rng.random((4000, 3)) < 0.8, a[:, None], 1 - a[:, None])
    >>> y_pred = (rng.random(4000) < np.where(a == 1, 0.6, 0.3)).astype(int)
    >>> m = ProxyMeasure("dp")
    >>> round(m(None, y_pred, proxies=proxies), 1)
    0.3
    """

    minimize = True
    greater_is_better = False
    range = (0.0, 1.0)

    def __init__(self, metric: str = "dp", mode: str = "global", *, key: str | None = None, **options: Any):
        if metric not in _PROXY_NAMES:
            raise ValueError(f"metric={metric!r}; pass 'dp', 'eod' or 'eop'.")
        self.metric = metric
        self.mode = mode
        self.options = options
        self.key = key or f"unaware.proxy_{metric}"
        self.description = f"{_PROXY_NAMES[metric]} estimated through weak proxies ({mode} HOC calibration)"

    @property
    def response_method(self) -> str:
        return "predict"

    def evaluate(self, y_true: Any, y_pred: Any, *, proxies: Any, n_boot: int = 0) -> ProxyDisparityResult:
        """Estimate with per-group rates and diagnostics (and an interval if ``n_boot > 0``)."""
        if self.metric != "dp" and y_true is None:
            raise ValueError(f"{self.key} compares error rates: pass y_true.")
        return proxy_disparity(
            y_pred,
            proxies,
            metric=self.metric,
            mode=self.mode,
            y_true=None if self.metric == "dp" else y_true,
            n_boot=n_boot,
            **self.options,
        )

    def __call__(self, y_true: Any, y_pred: Any, *, proxies: Any) -> float:
        """The estimated disparity (a float)."""
        return float(self.evaluate(y_true, y_pred, proxies=proxies).value)

    def bootstrap(self, y_true: Any, y_pred: Any, *, proxies: Any, n_boot: int = 1000) -> ProxyDisparityResult:
        """The estimate with a percentile bootstrap interval (``result.interval``)."""
        return self.evaluate(y_true, y_pred, proxies=proxies, n_boot=n_boot)

    def as_scorer(self, proxies: Sequence[str]) -> _ProxyScorer:
        """A scorer reading the proxy columns from ``X`` (drop them from the model's features).

        The estimated disparity is negated, like scikit-learn's ``neg_*`` scorers.
        """
        return _ProxyScorer(self, list(proxies))

    def __repr__(self) -> str:
        return f"<ProxyMeasure {self.key}: {self.description}>"


class _ProxyScorer:
    def __init__(self, measure: ProxyMeasure, columns: list[str]):
        self.measure = measure
        self.columns = columns

    def __call__(self, estimator: Any, X: pd.DataFrame, y_true: Any, **kwargs: Any) -> float:
        if not isinstance(X, pd.DataFrame):
            raise TypeError(f"the scorer reads proxy columns {self.columns} from X; pass X as a pandas DataFrame.")
        missing = [c for c in self.columns if c not in X.columns]
        if missing:
            raise KeyError(f"proxy column(s) {missing} not in X's columns {list(X.columns)}.")
        y_pred = np.asarray(estimator.predict(X))
        return -self.measure(y_true, y_pred, proxies=X[self.columns].to_numpy())


class QuantificationMeasure:
    """Demographic disparity of a model on deployment data without the sensitive attribute.

    Quantifiers trained on an auxiliary set (features and sensitive attribute)
    estimate the group shares among the model's accepted and rejected deployment
    samples (Fabris et al. 2023). Called with a fitted model and deployment
    features, or used as a scorer so that model selection can weigh fairness on
    data where the attribute is not recorded.

    Parameters
    ----------
    X_aux, s_aux : array-like, optional
        The auxiliary set: features and sensitive attribute. Needed before use; may
        be given later with :meth:`set_auxiliary`.
    quantifier : str, default="SLD"
        ``"CC"``, ``"PCC"``, ``"ACC"``, ``"PACC"``, ``"SLD"``, ``"HDy"`` or ``"MLPE"``.
    absolute : bool, default=True
        Report the absolute disparity (a minimised measure); ``False`` keeps the
        sign (other group minus ``reference``).
    key : str, optional
        Identifier; defaults to ``"unaware.quantified_dp"``.
    **options
        Passed to :func:`~skfair_measures.unaware.quantified_disparity`
        (``classifier=``, ``per_class=``, ``reference=``, ``random_state=``, ...).

    Examples
    --------
    >>> m = QuantificationMeasure(quantifier="PACC")
    >>> m.key, m.minimize
    ('unaware.quantified_dp', True)
    """

    range = (0.0, 1.0)

    def __init__(
        self,
        X_aux: Any = None,
        s_aux: Any = None,
        quantifier: str = "SLD",
        *,
        absolute: bool = True,
        key: str | None = None,
        **options: Any,
    ):
        self.X_aux = X_aux
        self.s_aux = s_aux
        self.quantifier = quantifier
        self.absolute = absolute
        self.options = options
        self.key = key or "unaware.quantified_dp"
        self.description = f"demographic disparity estimated by quantification ({quantifier})"
        self.minimize = True if absolute else None

    @property
    def greater_is_better(self) -> bool:
        return not self.absolute

    def set_auxiliary(self, X_aux: Any, s_aux: Any) -> QuantificationMeasure:
        """Set the auxiliary set (features and sensitive attribute)."""
        self.X_aux, self.s_aux = X_aux, s_aux
        return self

    def evaluate(self, model: Any, X_deploy: Any, *, n_boot: int = 0) -> QuantificationResult:
        """Estimate with per-group acceptance rates and diagnostics."""
        if self.X_aux is None or self.s_aux is None:
            raise ValueError(
                f"{self.key} needs an auxiliary set with the sensitive attribute: pass X_aux= and s_aux= "
                "(msr('unaware.quantified_dp', X_aux=..., s_aux=...)) or call set_auxiliary()."
            )
        return quantified_disparity(
            model, self.X_aux, self.s_aux, X_deploy, quantifier=self.quantifier, n_boot=n_boot, **self.options
        )

    def __call__(self, model: Any, X_deploy: Any) -> float:
        """The estimated disparity of ``model`` on ``X_deploy`` (a float)."""
        value = float(self.evaluate(model, X_deploy).value)
        return abs(value) if self.absolute else value

    def bootstrap(self, model: Any, X_deploy: Any, *, n_boot: int = 200) -> QuantificationResult:
        """The estimate with a percentile bootstrap interval (``result.interval``)."""
        return self.evaluate(model, X_deploy, n_boot=n_boot)

    def as_scorer(self) -> _QuantificationScorer:
        """A scorer ``scorer(estimator, X, y)`` estimating the disparity on ``X`` (labels unused).

        The absolute disparity is negated, like scikit-learn's ``neg_*`` scorers.
        """
        return _QuantificationScorer(self)

    def __repr__(self) -> str:
        return f"<QuantificationMeasure {self.key}: {self.description}>"


class _QuantificationScorer:
    def __init__(self, measure: QuantificationMeasure):
        self.measure = measure

    def __call__(self, estimator: Any, X: Any, y_true: Any = None, **kwargs: Any) -> float:
        value = self.measure(estimator, X)
        return -value if self.measure.absolute else value
