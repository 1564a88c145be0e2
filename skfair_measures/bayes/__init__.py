"""Uncertainty-aware fairness measures: Bayesian posteriors (Ji, Smyth & Steyvers 2020).

``posterior(measure, y_true, y_score, sensitive_features=..., method=...)`` returns a
:class:`MeasurePosterior` with draws of every group's base metric and of the measure:

- ``method="bb"``: Beta-Binomial, conjugate Beta priors per group rate, labeled
  data only, Monte Carlo (no MCMC, milliseconds);
- ``method="bc"``: hierarchical Bayesian beta calibration fitted by MCMC (PyMC model,
  nutpie sampler) on the labeled data, which calibrates the scores of unlabeled
  data draw by draw;
- ``method="ppi"``: prediction-powered inference with PPI++ power tuning, a
  frequentist estimate from few labels plus the model's scores on unlabeled data,
  drawn from its asymptotic normal distribution (sample weights allowed);
- ``method="bcr"``: BC plus a per-group rectifier of the calibration with a
  hierarchical prior (a Bayesian analogue of PPI's rectifier), which widens the
  interval where a group's labels contradict the shared calibration;
- ``method="auto"`` (default): the rule :data:`AUTO_RULES` (``"bb"`` without
  unlabeled scores, ``"ppi"`` with weights, ``"bcr"`` otherwise).

Each method is a class in its own module (:class:`BetaBinomial`,
:class:`BayesianCalibration`, :class:`RectifiedCalibration`, :class:`PredictionPowered`;
:class:`DirichletMultinomial` for ``"bb"`` on K classes) whose fields are its
options, checked when it is built; :data:`METHODS` is the one table of the methods
and what each takes (weights, unlabeled scores, K classes) and guarantees, read by
``posterior``, ``auto``, the scorer, the report and the CLI. :data:`DEFAULT_EPS` is
the one half-width of practical fairness used by ``summary``, ``prob_within``, ``rope`` and the scorer.

:func:`plan_labels` (also ``sfm.plan_labels``) says how many rows to label, in which
groups, for the guaranteed interval to decide ``|Δ| <= eps`` with a given probability.

:class:`BayesianScorer` reduces a posterior to one number for model selection, and
:func:`reliability_posterior` gives Bayesian reliability diagrams and ECE posteriors
per group (seed 002 chapter 2). Importing this package does not import PyMC or
ArviZ; they load when first needed.

Examples
--------
>>> import skfair_measures as sfm
>>> post = sfm.bayes.posterior(sfm.msr("fairness.tpr"),
...     [1, 1, 0, 1, 1, 0], [0.9, 0.4, 0.3, 0.8, 0.7, 0.6],
...     sensitive_features=list("aaabbb"), reference="a", method="bb", random_state=0)
>>> 0.0 < post.prob_greater(0.0) < 1.0
True

With six labels and no unlabeled scores ``auto`` is the labels' Jeffreys posterior (its interval near its level
with few labels), whose probabilities are those of its interval:

>>> auto = sfm.bayes.posterior(sfm.msr("fairness.tpr"),
...     [1, 1, 0, 1, 1, 0], [0.9, 0.4, 0.3, 0.8, 0.7, 0.6],
...     sensitive_features=list("aaabbb"), reference="a", random_state=0)
>>> auto.method, auto.attrs["prior"], 0.0 < auto.prob_greater(0.0) < 1.0
('bb', 'jeffreys', True)
"""

# each public name listed once: "name as name" re-exports it (PEP 484), for type checkers too
from .._verdicts import verdicts as verdicts  # the one verdict rule, shared with the bootstrap
from ._api import posterior as posterior
from ._api import posteriors as posteriors
from ._api import signed_measure as signed_measure
from ._auto import AUTO_RULES as AUTO_RULES
from ._bb import BetaBinomial as BetaBinomial
from ._bc import BayesianCalibration as BayesianCalibration
from ._bcr import RectifiedCalibration as RectifiedCalibration
from ._checks import CalibrationWarning as CalibrationWarning
from ._dirichlet import DirichletMultinomial as DirichletMultinomial
from ._method import EstimationMethod as EstimationMethod
from ._plan import plan_labels as plan_labels
from ._plots import density_curve as density_curve
from ._plots import plot_posterior as plot_posterior
from ._plots import plot_reliability as plot_reliability
from ._posterior import DEFAULT_EPS as DEFAULT_EPS
from ._posterior import MeasurePosterior as MeasurePosterior
from ._posterior import RopeResult as RopeResult
from ._posterior import SamplingWarning as SamplingWarning
from ._ppi import ASYMPTOTIC_ROWS as ASYMPTOTIC_ROWS
from ._ppi import AsymptoticWarning as AsymptoticWarning
from ._ppi import PredictionPowered as PredictionPowered
from ._ppi import tuned_lambda as tuned_lambda
from ._reliability import ReliabilityPosterior as ReliabilityPosterior
from ._reliability import reliability_posterior as reliability_posterior
from ._scorer import BayesianScorer as BayesianScorer
from ._table import METHODS as METHODS
from ._table import MethodSpec as MethodSpec
