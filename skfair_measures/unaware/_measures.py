"""The unawareness estimators as measures: registry keys and scikit-learn scorers.

:class:`ProxyMeasure` measures DP, EOd or EOp through three or more weak proxies of
the sensitive attribute (HOC calibration); :class:`QuantificationMeasure` measures
the demographic disparity of a model on deployment data that lacks the attribute,
from an auxiliary set that has it. Both are :class:`~skfair_measures.measures.MeasureBase`
kinds (``inputs.needs_sensitive`` is False), are in the registry
(``msr("unaware.proxy_dp")``, ``msr("unaware.quantified_dp", X_aux=..., s_aux=...)``),
return :class:`~skfair_measures.results.Result` objects from :meth:`evaluate`, and turn
into scorers for model selection with :func:`skfair_measures.fairness_scorer`, which
builds the scorer of their kind (``ProxyScorer``, ``QuantificationScorer`` in :mod:`skfair_measures.scoring`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..measures import MeasureBase, MeasureInputs, qualified_key
from ._proxy import ProxyDisparityResult, proxy_disparity
from ._quantification import QuantificationResult, quantified_disparity

__all__ = ["ProxyMeasure", "QuantificationMeasure"]

_PROXY_NAMES = {
    "dp": "demographic parity",
    "eod": "equalized odds (mean of the TPR and FPR gaps)",
    "eop": "equal opportunity",
}
_PROXY_BASES = {"dp": "selection rate", "eod": "tpr, fpr", "eop": "tpr"}


class ProxyMeasure(MeasureBase):
    """A disparity measured through weak proxies of the sensitive attribute.

    Parameters
    ----------
    metric : {"dp", "eod", "eop"}, default="dp"
        Demographic parity, equalized odds or equal opportunity (Zhu et al. 2023).
    mode : {"global", "local", "base"}, default="global"
        HOC calibration with one transition matrix, one per prediction cell, or the
        uncalibrated disparity of the first proxy.
    key : str, optional
        Identifier; defaults to ``"unaware.proxy_<metric>"``, naming a non-default
        mode (``"unaware.proxy_dp(mode=local)"``).
    **options
        Passed to :func:`~skfair_measures.unaware.proxy_disparity` (``clip=``,
        ``groups=``, ``pos_label=``, ``random_state=``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 4000)
    >>> proxies = np.where(rng.random((4000, 3)) < 0.8, a[:, None], 1 - a[:, None])
    >>> y_pred = (rng.random(4000) < np.where(a == 1, 0.6, 0.3)).astype(int)
    >>> m = ProxyMeasure("dp")
    >>> round(m(None, y_pred, proxies=proxies), 1)
    0.3
    >>> m.inputs.needs_sensitive, m.minimize, m.ideal
    (False, True, 0.0)
    """

    minimize = True
    ideal = 0.0
    range = (0.0, 1.0)
    operation_label = "mean absdiff over group pairs"

    def __init__(self, metric: str = "dp", mode: str = "global", *, key: str | None = None, **options: Any) -> None:
        if metric not in _PROXY_NAMES:
            raise ValueError(f"metric={metric!r}; pass 'dp', 'eod' or 'eop'.")
        self.metric, self.mode, self.options = metric, mode, options
        self.key = key or qualified_key(f"unaware.proxy_{metric}", mode=None if mode == "global" else mode)
        self.description = f"{_PROXY_NAMES[metric]} estimated through weak proxies ({mode} HOC calibration)"

    @property
    def inputs(self) -> MeasureInputs:
        groups = None if self.options.get("groups") is None else pd.Index(list(self.options["groups"]), dtype=object)
        return MeasureInputs(pos_label=self.options.get("pos_label"), groups=groups, needs_sensitive=False)

    @property
    def base_label(self) -> str:
        return _PROXY_BASES[self.metric]

    def evaluate(self, y_true: Any, y_pred: Any, *, proxies: Any, n_boot: int = 0) -> ProxyDisparityResult:
        """Estimate with per-group rates, reliability and diagnostics (and draws if ``n_boot > 0``)."""
        if self.metric != "dp" and y_true is None:
            raise ValueError(f"{self.key} compares error rates: pass y_true.")
        y_true = None if self.metric == "dp" else y_true
        res = proxy_disparity(y_pred, proxies, self.metric, self.mode, y_true, n_boot=n_boot, **self.options)
        res.key, res.measure = self.key, self
        return res

    def __call__(self, y_true: Any, y_pred: Any, *, proxies: Any) -> float:
        """The estimated disparity (a float; NaN when undefined)."""
        return float(self.evaluate(y_true, y_pred, proxies=proxies).value)

    def bootstrap(self, y_true: Any, y_pred: Any, *, proxies: Any, n_boot: int = 1000) -> ProxyDisparityResult:
        """The estimate with bootstrap draws (``result.interval(prob)``)."""
        return self.evaluate(y_true, y_pred, proxies=proxies, n_boot=n_boot)


class QuantificationMeasure(MeasureBase):
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
        Identifier; defaults to ``"unaware.quantified_dp"``, naming a non-default
        quantifier or sign.
    **options
        Passed to :func:`~skfair_measures.unaware.quantified_disparity`
        (``classifier=``, ``per_class=``, ``reference=``, ``random_state=``, ...).

    Examples
    --------
    >>> m = QuantificationMeasure(quantifier="PACC")
    >>> m.key, m.minimize, m.inputs.needs_sensitive
    ('unaware.quantified_dp(quantifier=PACC)', True, False)
    """

    ideal = 0.0
    base_label = "acceptance rate"

    def __init__(
        self,
        X_aux: Any = None,
        s_aux: Any = None,
        quantifier: str = "SLD",
        *,
        absolute: bool = True,
        key: str | None = None,
        **options: Any,
    ) -> None:
        self.X_aux, self.s_aux, self.quantifier = X_aux, s_aux, quantifier
        self.absolute, self.options = absolute, options
        named = {"quantifier": None if quantifier == "SLD" else quantifier, "absolute": None if absolute else False}
        self.key = key or qualified_key("unaware.quantified_dp", **named)
        self.description = f"demographic disparity estimated by quantification ({quantifier})"
        self.minimize, self.range = True if absolute else None, (0.0, 1.0) if absolute else (-1.0, 1.0)

    @property
    def inputs(self) -> MeasureInputs:
        return MeasureInputs(pos_label=self.options.get("pos_label", 1), needs_sensitive=False)

    @property
    def operation_label(self) -> str:
        return "absdiff" if self.absolute else "difference to reference"

    def set_auxiliary(self, X_aux: Any, s_aux: Any) -> QuantificationMeasure:
        """Set the auxiliary set (features and sensitive attribute)."""
        self.X_aux, self.s_aux = X_aux, s_aux
        return self

    def evaluate(self, model: Any, X_deploy: Any, *, n_boot: int = 0) -> QuantificationResult:
        """Estimate with per-group acceptance rates and diagnostics (``value`` absolute unless ``absolute=False``)."""
        if self.X_aux is None or self.s_aux is None:
            raise ValueError(
                f"{self.key} needs an auxiliary set with the sensitive attribute: pass X_aux= and s_aux= "
                "(msr('unaware.quantified_dp', X_aux=..., s_aux=...)) or call set_auxiliary()."
            )
        res = quantified_disparity(
            model, self.X_aux, self.s_aux, X_deploy, quantifier=self.quantifier, n_boot=n_boot, **self.options
        )
        res.key, res.measure = self.key, self
        return res.absolute() if self.absolute else res

    def __call__(self, model: Any, X_deploy: Any) -> float:
        """The estimated disparity of ``model`` on ``X_deploy`` (a float; absolute unless ``absolute=False``)."""
        return float(self.evaluate(model, X_deploy).value)

    def bootstrap(self, model: Any, X_deploy: Any, *, n_boot: int = 200) -> QuantificationResult:
        """The estimate with bootstrap draws (``result.interval(prob)``)."""
        return self.evaluate(model, X_deploy, n_boot=n_boot)
