"""One home for every number that carries its uncertainty.

:class:`Estimate` is the result type of every door that gives an interval (bootstrap,
posteriors, guaranteed intervals, the unaware estimators, the monitor, ...), and
:func:`summarize` puts the one summary row of many estimates (:data:`SUMMARY_COLUMNS`) in a
table. The level is always called ``prob``; its default is :data:`DEFAULT_PROB`.
"""

from ._bands import check_eps, classify, mapped_interval, max_type_band
from ._estimate import DEFAULT_PROB, SUMMARY_COLUMNS, Estimate, ReplicatesResult, summarize

__all__ = [
    "DEFAULT_PROB",
    "SUMMARY_COLUMNS",
    "Estimate",
    "ReplicatesResult",
    "check_eps",
    "classify",
    "mapped_interval",
    "max_type_band",
    "summarize",
]
