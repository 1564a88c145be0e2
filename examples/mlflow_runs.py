"""Two MLflow runs as docs/mlflow.md shows them: an audit of Adult and a fairness monitor over 30 days.

Run ``python examples/mlflow_runs.py`` (a sqlite store ``mlflow.db`` in the current folder; ``--mlflow-uri``
for another one), then ``mlflow ui --backend-store-uri sqlite:///mlflow.db``.

- ``adult-audit``: a logistic regression on UCI Adult; the point values of five measures, a bootstrap of
  ``fairness.tpr`` and its Beta-Binomial posterior, logged by one ``log_fairness`` call.
- ``loan-monitor``: 30 daily batches of 2,000 decisions, whose TPR gap between two groups grows after
  day 15; ``log_monitor`` after every batch logs value, interval, e-value and alarm as step series.
"""

from __future__ import annotations

import argparse
import sys

import mlflow
import numpy as np
import pandas as pd
from skfair_measures_mlflow import log_fairness, log_monitor
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import skfair_measures as sfm
from skfair_measures import bayes
from skfair_measures.monitor import FairnessMonitor


def audit_run() -> None:
    X, y, _ = sfm.datasets.load_adult(return_X_y_A=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    model = make_pipeline(
        sfm.DropColumns(["sex", "race"]),
        make_column_transformer(
            (OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_include="category")),
            (StandardScaler(), make_column_selector(dtype_include="number")),
        ),
        LogisticRegression(max_iter=1000),
    ).fit(X_train, y_train)
    pred, score, sex = model.predict(X_test), model.predict_proba(X_test)[:, 1], X_test["sex"]
    measures = [sfm.msr(k) for k in ("fairness.tpr", "fairness.fpr", "fairness.eod", "fairness.cv", "classif.acc")]
    point = sfm.evaluate_measures(measures, y_test, pred, sensitive_features=sex)
    boot = sfm.bootstrap("fairness.tpr", y_test, pred, sensitive_features=sex, n_boot=500, random_state=0)
    post = bayes.posterior(measures[0], y_test, score, sensitive_features=sex, method="bb", random_state=0)
    mlflow.set_experiment("skfair-adult")
    with mlflow.start_run(run_name="adult-audit"):
        log_fairness([*point.items(), ("fairness.tpr", boot), ("fairness.tpr", post)], measures=measures)


def monitor_run() -> None:
    rng = np.random.default_rng(0)
    mon = FairnessMonitor(["fairness.tpr", "fairness.cv"], eps=0.05)
    mlflow.set_experiment("skfair-monitor")
    with mlflow.start_run(run_name="loan-monitor"):
        for day, time in enumerate(pd.date_range("2026-03-01", periods=30, freq="D")):
            g = rng.choice(["A", "B"], 2000)
            y = rng.binomial(1, 0.4, 2000)
            gap = 0.02 if day < 15 else 0.12  # group B's TPR falls after day 15
            hit = rng.random(2000) < np.where(g == "A", 0.75, 0.75 - gap)
            pred = np.where(y == 1, hit, rng.random(2000) < 0.2).astype(int)
            mon.update(pred, sensitive_features=g, y_true=y, time=time)
            log_monitor(mon)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mlflow-uri", default="sqlite:///mlflow.db")
    mlflow.set_tracking_uri(parser.parse_args(argv).mlflow_uri)
    audit_run()
    monitor_run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
