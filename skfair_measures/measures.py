"""Measures: a base metric and an operation, plus composites and constraints.

A :class:`FairnessMeasure` computes its base metric in every group and reduces the
group values with its operation (mlr3fairness' ``MeasureFairness``). A
:class:`CompositeMeasure` aggregates several measures computed on the same counts,
a :class:`ConstraintMeasure` is a performance measure subject to a fairness bound,
and a :class:`PerformanceMeasure` is a plain (overall) metric such as accuracy.

One concept per module; this one gathers the public names:

- ``_inputs``: :class:`MeasureInputs`, the one resolved inputs record of a measure tree;
- ``_protocol``: :class:`MeasureBase` and :class:`Measure`, the protocol every measure kind
  follows (``unaware``'s too), and the one evaluation path (rows or statistics);
- ``_undefined``: :class:`UndefinedGroupWarning`, reasons and the ``undefined=`` policy;
- ``_leaves``: :class:`FairnessMeasure`, :class:`PerformanceMeasure`;
- ``_trees``: :class:`CompositeMeasure`, :class:`ConstraintMeasure`;
- ``_together``: several measures on one sample, validated once per need.

Other modules read measures through the protocol only; they never inspect a
measure's attributes to learn what kind it is. The measure core imports nothing
above it: scorers, bootstrap intervals and posteriors take a measure as an argument
(``sfm.make_scorers``, ``sfm.bootstrap(m, ...)``, ``bayes.posterior(m, ...)``), and the
registry (``msr``) turns keys into measures.
"""

from ._inputs import MeasureInputs
from ._leaves import FairnessMeasure, PerformanceMeasure
from ._protocol import Measure, MeasureBase, qualified_key
from ._trees import CompositeMeasure, ConstraintMeasure
from ._undefined import UndefinedGroupWarning
from .results import MeasureResult

__all__ = [
    "CompositeMeasure",
    "ConstraintMeasure",
    "FairnessMeasure",
    "Measure",
    "MeasureBase",
    "MeasureInputs",
    "MeasureResult",
    "PerformanceMeasure",
    "UndefinedGroupWarning",
    "qualified_key",
]
