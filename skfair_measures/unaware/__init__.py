"""Fairness measures when the sensitive attribute is missing from the audited data.

The estimators here need no sensitive attribute in the data being audited; they
learn what they need from a small auxiliary set (or from proxies) and estimate the
groupwise rates from it. They are imported explicitly, ``from skfair_measures import
unaware``, so that ``import skfair_measures`` stays light; heavy dependencies (such
as QuaPy) load only when an estimator is fitted.

Quantification (Fabris et al., JAIR 2023): :func:`quantified_disparity` and
:class:`QuantificationDisparity` estimate demographic disparity on a deployment set
from quantifiers trained on an auxiliary set that records the sensitive attribute.

Weak proxies (Zhu et al., 2023): :func:`proxy_disparity` calibrates DP, EOd and EOp
measured through three or more proxy guesses of the sensitive attribute, with the
noise transition matrix that :class:`HOCEstimator` estimates from the proxies'
agreement patterns; every estimate checks HOC's assumptions and says whether it is
``reliable`` (:class:`ProxyReliabilityWarning` when not).
:func:`labeled_proxy_disparity` needs no such assumption but a small sample with the
true attribute. :class:`RandomizedResponse` weakens proxies on purpose and reports the
resulting differential-privacy level.

Both as measures: :class:`ProxyMeasure` and :class:`QuantificationMeasure`, also in the
registry as ``msr("unaware.proxy_dp")`` (``_eod``, ``_eop``) and
``msr("unaware.quantified_dp", X_aux=..., s_aux=...)``, with scorers for model selection.
"""

from ._estimator import HOCEstimator as HOCEstimator
from ._hoc import ProxyCalibrationWarning as ProxyCalibrationWarning
from ._hoc import ProxyReliabilityWarning as ProxyReliabilityWarning
from ._labeled import labeled_proxy_disparity as labeled_proxy_disparity
from ._measures import ProxyMeasure as ProxyMeasure
from ._measures import QuantificationMeasure as QuantificationMeasure
from ._proxy import ProxyDisparityResult as ProxyDisparityResult
from ._proxy import proxy_disparity as proxy_disparity
from ._quantification import QuantificationDisparity as QuantificationDisparity
from ._quantification import QuantificationResult as QuantificationResult
from ._quantification import quantified_disparity as quantified_disparity
from ._quantifiers import QUANTIFIERS as QUANTIFIERS
from ._randomized_response import RandomizedResponse as RandomizedResponse
