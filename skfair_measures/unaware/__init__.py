"""Fairness measures when the sensitive attribute is missing from the audited data.

The estimators here need no sensitive attribute in the data being audited; they
learn what they need from a small auxiliary set (or from proxies) and estimate the
groupwise rates from it. They are imported explicitly, ``from skfair_measures import
unaware``, so that ``import skfair_measures`` stays light; heavy dependencies (such
as QuaPy) load only when an estimator is fitted.

Quantification (Fabris et al., JAIR 2023): :func:`quantified_disparity` and
:class:`QuantificationDisparity` estimate demographic disparity on a deployment set
from quantifiers trained on an auxiliary set that records the sensitive attribute.
"""

from ._quantification import QuantificationDisparity as QuantificationDisparity
from ._quantification import QuantificationResult as QuantificationResult
from ._quantification import quantified_disparity as quantified_disparity
from ._quantifiers import QUANTIFIERS as QUANTIFIERS
