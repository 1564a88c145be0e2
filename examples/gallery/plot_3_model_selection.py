"""
Model selection under a fairness constraint
===========================================

``GridSearchCV`` picks the most accurate candidate; ``sfm.constrained_refit`` makes it pick the most accurate among
those whose disparity meets a bound. The measures are scikit-learn scorers, and with metadata routing the sensitive
column is split per fold along with the rows (it never reaches the model).
"""

import matplotlib.pyplot as plt
import sklearn
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.tree import DecisionTreeClassifier

import skfair_measures as sfm
from skfair_measures import plots

X, y, A = sfm.datasets.load_adult(return_X_y_A=True)
X = X[["age", "education_num", "capital_gain", "capital_loss", "hours_per_week"]].iloc[:8000]
y, sex = y.iloc[:8000], A["sex"].iloc[:8000]

# %%
# Accuracy subject to equalized odds (``fairness.eod``, mlr3fairness' mean of the TPR and FPR gaps) at most 0.05,
# judged on the out-of-fold counts pooled over the folds (``counts=True``).
scoring = sfm.make_scorers(["classif.acc", "fairness.eod"], counts=True)
rule = sfm.constrained_refit("classif.acc", subject_to={"fairness.eod": 0.05}, if_none="fairest")
with sklearn.config_context(enable_metadata_routing=True):
    search = GridSearchCV(
        DecisionTreeClassifier(random_state=0),
        {"max_depth": [2, 3, 4, 6, 8, 12]},
        scoring=scoring,
        refit=rule,
        cv=StratifiedKFold(3, shuffle=True, random_state=0),
    ).fit(X, y, sensitive_features=sex)

table = rule.table(search.cv_results_)
table["max_depth"] = [p["max_depth"] for p in table["params"]]
print(table[["max_depth", "classif.acc", "fairness.eod", "fairness.eod lo", "fairness.eod hi", "feasible"]])
print("chosen:", search.best_params_)

# %%
# Every candidate with its interval, the Pareto front, the bound and the choice.
ax = plots.pareto_front(table, rule.front(search.cv_results_), labels=[f"depth {d}" for d in table["max_depth"]])
plt.show()
