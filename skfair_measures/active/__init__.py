"""Active assessment: which rows to label next (seed 002, chapter 3).

Labels are the expensive part of an audit. :class:`ActiveAssessment` keeps a Beta
posterior of a rate per group (accuracy, TPR, FPR, ..., or accuracy per score bin
for the ECE) and, by Thompson sampling over those posteriors, chooses the next rows
to label for the task at hand: estimate every group's rate (low RMSE), identify the
worst group or the m worst groups (TS, top-two TS, multiple-play TS), or decide
whether two groups differ (ROPE). Priors are uniform or informed by the model's own
scores with a capped strength; random sampling is the baseline.

Examples
--------
>>> import numpy as np
>>> from skfair_measures.active import ActiveAssessment
>>> rng = np.random.default_rng(1)
>>> group = rng.choice(["a", "b", "c"], 3000)
>>> y_pred = rng.integers(0, 2, 3000)
>>> wrong = rng.random(3000) < np.select([group == "a", group == "b"], [0.1, 0.4], 0.2)
>>> y_true = np.where(wrong, 1 - y_pred, y_pred)
>>> aa = ActiveAssessment(y_pred, np.full(3000, 0.5), sensitive_features=group,
...                       task="identify", random_state=0)
>>> while aa.worst_group(0.95) is None:
...     rows = aa.ask(10)
...     aa.tell(rows, y_true[rows])
>>> aa.worst_group(0.95)
'b'
"""

# each public name listed once: "name as name" re-exports it (PEP 484), for type checkers too
from ._assessment import STRATEGIES as STRATEGIES
from ._assessment import TASKS as TASKS
from ._assessment import ActiveAssessment as ActiveAssessment
from ._metrics import METRICS as METRICS
from ._metrics import ActiveMetric as ActiveMetric
from ._plot import plot_trajectory as plot_trajectory
from ._priors import MAX_PRIOR_STRENGTH as MAX_PRIOR_STRENGTH
from ._priors import beta_prior as beta_prior
