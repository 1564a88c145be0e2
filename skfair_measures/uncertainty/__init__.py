"""One home for every number that carries its uncertainty.

:class:`Estimate` is the result type of every door that gives an interval (bootstrap,
posteriors, guaranteed intervals, the unaware estimators, the monitor, ...), and
:func:`summarize` puts the one summary row of many estimates (:data:`SUMMARY_COLUMNS`) in a
table. The level is always called ``prob``; its default is :data:`DEFAULT_PROB`.
"""

# each public name listed once: "name as name" re-exports it (PEP 484), for type checkers too
from ._bands import check_eps as check_eps
from ._bands import classify as classify
from ._bands import mapped_interval as mapped_interval
from ._bands import max_type_band as max_type_band
from ._estimate import DEFAULT_PROB as DEFAULT_PROB
from ._estimate import SUMMARY_COLUMNS as SUMMARY_COLUMNS
from ._estimate import Estimate as Estimate
from ._estimate import ReplicatesResult as ReplicatesResult
from ._estimate import summarize as summarize
