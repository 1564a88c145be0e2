"""
A measure and its groupwise table
=================================

A fairness measure is a base metric computed in every group and an operation comparing the groups.
``msr("fairness.tpr")`` is mlr3fairness' absolute difference in true positive rates; ``groupwise`` gives the rate of
every group, which is what the difference is made of.
"""

import matplotlib.pyplot as plt
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier

import skfair_measures as sfm
from skfair_measures import plots

# %%
# A model on UCI Adult (shipped with the package); sex and race are not among its features.
X, y, A = sfm.datasets.load_adult(return_X_y_A=True)
X = pd.get_dummies(X.drop(columns=["sex", "race"]), dtype=float)
X_train, X_test, y_train, y_test, A_train, A_test = train_test_split(X, y, A, random_state=0)
y_pred = DecisionTreeClassifier(max_depth=6, random_state=0).fit(X_train, y_train).predict(X_test)

# %%
# The measure, and the group rates it compares.
tpr_gap = sfm.msr("fairness.tpr")
print(tpr_gap.description)
print(f"fairness.tpr = {tpr_gap(y_test, y_pred, sensitive_features=A_test['sex']):.4f}")
print(tpr_gap.groupwise(y_test, y_pred, sensitive_features=A_test["sex"]))

# %%
# Equalized odds has two definitions: mlr3fairness' ``fairness.eod`` is the mean of the TPR and FPR gaps,
# fairlearn's ``equalized_odds_difference`` the larger one, ``fairness.eod_max``. fairlearn's name works too.
results = sfm.evaluate_measures(
    ["fairness.tpr", "fairness.fpr", "fairness.eod", "equalized_odds_difference"],
    y_test,
    y_pred,
    sensitive_features=A_test["sex"],
)
for key, result in results.items():
    print(f"{key:18s} {result.value:.4f}")

# %%
# Intersectional groups: several sensitive columns. ``groupwise_bars`` draws every group's rates with its size.
results = sfm.evaluate_measures(
    ["fairness.tpr", "fairness.fpr"], y_test, y_pred, sensitive_features=A_test[["sex", "race"]]
)
ax = plots.groupwise_bars(list(results.values()))
plt.show()
