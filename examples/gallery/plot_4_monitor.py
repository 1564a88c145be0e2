"""
Monitoring a deployed model
===========================

``FairnessMonitor`` reads a model's predictions batch by batch (here one batch a day for 30 days) and raises an alarm
when the disparity exceeds a tolerance. The alarm is anytime-valid: it may be read after every batch without
inflating the false alarm rate. Here the model turns unfair on the 16th day (the monitor's step 16; steps count from
1).
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from skfair_measures.monitor import FairnessMonitor

rng = np.random.default_rng(0)


def day_batch(day: int, n: int = 800) -> pd.DataFrame:
    """One day of predictions; from day 15 (counted from 0) on, group B's TPR drops from 0.80 to 0.55."""
    group = rng.choice(["A", "B"], size=n)
    y = rng.binomial(1, 0.4, size=n)
    tpr = np.where((group == "B") & (day >= 15), 0.55, 0.80)
    y_pred = np.where(y == 1, rng.binomial(1, tpr), rng.binomial(1, 0.1, size=n))
    return pd.DataFrame({"group": group, "y": y, "y_pred": y_pred})


monitor = FairnessMonitor(["fairness.tpr"], eps=0.1)
for day, date in enumerate(pd.date_range("2026-01-01", periods=30, freq="D")):
    batch = day_batch(day)
    monitor.update(batch["y_pred"], sensitive_features=batch["group"], y_true=batch["y"], time=date)

# %%
# Where each measure stands: its value and anytime-valid interval (on the rows since the disparity moved,
# ``since``), whether the alarm is raised and at which step, and ``changed_since``, the step the evidence for it
# started at. ``e_value`` is that evidence against "within eps at every batch": the alarm is raised when it reaches
# ``1 / (1 - prob)`` = 20 (the default ``prob=0.95``), and stays raised.
print(monitor.status().T)

# %%
# The value, its interval and the tolerance over time, with the alarm marked.
ax = monitor.plot("fairness.tpr")
plt.show()
