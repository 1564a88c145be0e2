"""Fairness over time: a deployed model's disparities, batch by batch, with anytime-valid alarms.

- :class:`FairnessMonitor`: counts per group and betting confidence sequences, updated
  per batch (arrays or a frame of any engine), saved atomically, merged across workers.
- :func:`plot_monitor`: each disparity over the steps with its sequence, the tolerance
  and the alarm (needs matplotlib).

Import it explicitly: ``from skfair_measures.monitor import FairnessMonitor``.
"""

# each public name listed once: "name as name" re-exports it (PEP 484), for type checkers too
from ._monitor import FairnessMonitor as FairnessMonitor
from ._plot import plot_monitor as plot_monitor
