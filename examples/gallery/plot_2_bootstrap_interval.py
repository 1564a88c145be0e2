"""
How sure is the number? A bootstrap interval
============================================

A disparity measured on a test set is an estimate. ``sfm.bootstrap`` resamples the confusion counts of every group
(not the rows, so a thousand replicates take milliseconds) and gives an interval, and a verdict against a tolerance
``eps`` read off that interval: *within*, *exceeds* or *inconclusive*.
"""

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier

import skfair_measures as sfm
from skfair_measures import plots

X, y, A = sfm.datasets.load_adult(return_X_y_A=True)
X = pd.get_dummies(X.drop(columns=["sex", "race"]), dtype=float)
X_train, X_test, y_train, y_test, A_train, A_test = train_test_split(X, y, A, random_state=0)
y_pred = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X_train, y_train).predict(X_test)

# %%
# The interval of the TPR gap between women and men, and what it says about a tolerance of 0.05.
boot = sfm.bootstrap(sfm.msr("fairness.tpr"), y_test, y_pred, sensitive_features=A_test["sex"], random_state=0)
low, high = boot.interval()
print(f"fairness.tpr = {boot.value:.4f}, 95% bootstrap interval {low:.4f} to {high:.4f}")
print(boot.pair_verdicts(eps=0.05).to_string())

# %%
# On a small audit the same model gives a wide interval: 300 rows cannot tell a gap of 0.05 from none.
small = sfm.bootstrap(
    sfm.msr("fairness.tpr"), y_test[:300], y_pred[:300], sensitive_features=A_test["sex"][:300], random_state=0
)
print("300 rows: 95% interval {:.4f} to {:.4f}".format(*small.interval()))

# %%
# The replicates' distribution with its interval and the band of +-eps around 0. The gap is an absolute difference,
# so it cannot be negative: the density is reflected at 0 rather than spilling below it.
fig, ax = plt.subplots(figsize=(7, 4.5), layout="constrained")
plots.posterior_density({"all test rows": boot, "300 rows": small}, eps=0.05, ax=ax)
plt.show()
