"""The main job: audit, tune and compare models on Adult with fairness measures.

Run with ``make demo`` (or ``python examples/demo.py``). Everything runs offline on
the data shipped with the package.

1. Train two models on UCI Adult and print an mlr3fairness-style audit: several
   ``fairness.*`` measures with bootstrap intervals, and the groupwise TPR.
2. Tune a decision tree with GridSearchCV on the constraint measure
   ``fairness.acc_eod=.05`` (accuracy subject to equalized odds <= 0.05).
3. Print a cross-validated benchmark table, learners x measures (mlr3's
   ``bmr$aggregate``).
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import pandas as pd
import sklearn
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_validate, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier

import skfair_measures as sfm

AUDIT_KEYS = ["fairness.tpr", "fairness.fpr", "fairness.eod", "fairness.cv", "fairness.ppv", "fairness.acc"]
BENCH_KEYS = ["fairness.tpr", "fairness.npv", "fairness.acc", "classif.acc"]


def _encoder() -> object:
    return make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore", min_frequency=20), make_column_selector(dtype_include="category")),
        (StandardScaler(), make_column_selector(dtype_include="number")),
    )


def learners() -> dict[str, object]:
    """The models to audit; the sensitive columns never reach them (DropColumns)."""
    return {
        "logreg": make_pipeline(sfm.DropColumns(["sex", "race"]), _encoder(), LogisticRegression(max_iter=1000)),
        "tree": make_pipeline(
            sfm.DropColumns(["sex", "race"]), _encoder(), DecisionTreeClassifier(max_depth=6, random_state=0)
        ),
    }


def section(title: str) -> None:
    print(f"\n{'=' * len(title)}\n{title}\n{'=' * len(title)}")


def audit(models: dict[str, object], X_test: pd.DataFrame, y_test: pd.Series) -> None:
    section("1. Audit on the Adult test split (sensitive attribute: sex)")
    rows = {}
    for name, model in models.items():
        y_pred = model.predict(X_test)
        results = sfm.evaluate_measures(
            [sfm.msr(k) for k in AUDIT_KEYS + ["classif.acc"]], y_test, y_pred, sensitive_features=X_test["sex"]
        )
        rows[name] = {k: r.value for k, r in results.items()}
        tpr = results["fairness.tpr"]
        print(f"\n{name}: groupwise TPR (mlr3fairness' groupwise_metrics(msr('classif.tpr')))")
        print(pd.DataFrame({"tpr": tpr.by_group, "n": tpr.counts.astype(int)}).to_string(float_format="{:.4f}".format))
        boot = sfm.msr("fairness.tpr").bootstrap(
            y_test, y_pred, sensitive_features=X_test["sex"], n_boot=2000, random_state=0
        )
        lo, hi = boot.interval()
        print(f"fairness.tpr = {boot.estimate:.4f}  (95% bootstrap interval {lo:.4f} to {hi:.4f})")
    print("\nAudit (absolute differences across sex; classif.acc overall):")
    print(pd.DataFrame(rows).T.to_string(float_format="{:.4f}".format))
    inter = sfm.msr("fairness.tpr", undefined="drop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sfm.UndefinedGroupWarning)
        value = inter(y_test, models["logreg"].predict(X_test), sensitive_features=X_test[["sex", "race"]])
    print(f"\nIntersectional (sex x race) fairness.tpr for logreg: {value:.4f}")


def tune(X: pd.DataFrame, y: pd.Series) -> None:
    section("2. GridSearchCV on a fairness constraint: accuracy subject to equalized odds <= 0.05")
    tree = make_pipeline(sfm.DropColumns(["sex", "race"]), _encoder(), DecisionTreeClassifier(random_state=0))
    scoring = {
        "fairness.acc_eod=.05": sfm.msr("fairness.acc_eod=.05").as_scorer(),
        "fairness.eod": sfm.msr("fairness.eod").as_scorer(),
        "accuracy": "accuracy",
    }
    t0 = time.perf_counter()
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            tree,
            {
                "decisiontreeclassifier__max_depth": [2, 4, 6, 8, 12],
                "decisiontreeclassifier__min_samples_leaf": [1, 50],
            },
            scoring=scoring,
            refit="fairness.acc_eod=.05",
            cv=StratifiedKFold(3, shuffle=True, random_state=0),
        )
        search.fit(X, y, sensitive_features=X["sex"])
    res = pd.DataFrame(search.cv_results_)
    table = pd.DataFrame(
        {
            "max_depth": res["param_decisiontreeclassifier__max_depth"],
            "min_samples_leaf": res["param_decisiontreeclassifier__min_samples_leaf"],
            "accuracy": res["mean_test_accuracy"],
            "fairness.eod": -res["mean_test_fairness.eod"],
            "acc_eod=.05": res["mean_test_fairness.acc_eod=.05"],
        }
    )
    print(table.to_string(index=False, float_format="{:.4f}".format))
    print(
        f"\nbest: {search.best_params_}  (constraint score {search.best_score_:.4f}; "
        f"{time.perf_counter() - t0:.1f} s for {len(res)} candidates x 3 folds)"
    )
    print("A negative constraint score means the bound was violated on average (score = -eod).")


def benchmark_table(X: pd.DataFrame, y: pd.Series) -> None:
    section("3. Benchmark: 3-fold CV, learners x measures (mlr3's bmr$aggregate)")
    scorer = sfm.make_scorers(BENCH_KEYS, sensitive="sex")
    rows = {}
    for name, model in learners().items():
        cv = cross_validate(model, X, y, cv=StratifiedKFold(3, shuffle=True, random_state=1), scoring=scorer)
        rows[name] = {k: (1 if sfm.msr(k).greater_is_better else -1) * np.mean(cv[f"test_{k}"]) for k in BENCH_KEYS}
    tab = pd.DataFrame(rows).T
    tab.insert(0, "iters", 3)
    tab.index.name = "learner_id"
    print(tab.to_string(float_format="{:.4f}".format))


def main() -> int:
    t0 = time.perf_counter()
    X, y, _ = sfm.datasets.load_adult(return_X_y_A=True)
    print(
        f"UCI Adult: {len(X):,} rows, {X.shape[1]} columns; positive class: income > 50K "
        f"({y.mean():.1%}); sensitive: sex, race"
    )
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    models = {name: model.fit(X_train, y_train) for name, model in learners().items()}
    audit(models, X_test, y_test)
    tune(X_train, y_train)
    benchmark_table(X, y)
    print(f"\nDone in {time.perf_counter() - t0:.1f} s.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
