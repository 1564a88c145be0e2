"""The main job: audit, tune and compare models with fairness measures, logged to MLflow.

Run with ``make demo`` (or ``python examples/demo.py``). Everything runs offline on
the data shipped with the package, and is logged to a local MLflow store (an sqlite
file ``mlflow.db`` in the current folder; ``--mlflow-uri`` for another one).

1. Train two models on UCI Adult and print an mlr3fairness-style audit: several
   ``fairness.*`` measures with bootstrap intervals, and the groupwise TPR.
2. Choose a decision tree with GridSearchCV under a fairness bound: the best accuracy
   among the depths whose equalized-odds gap (``fairness.eod``: the mean of the TPR and FPR
   gaps), on the pooled out-of-fold counts, is <= 0.05 (``sfm.constrained_refit``), with its Pareto front and plot.
3. Benchmark the learners on Adult (sex) and COMPAS (race) with 3-fold CV, learners x
   measures (mlr3's ``bmr$aggregate``), with the posterior probability that one model
   is fairer than the other; every fold is logged to MLflow.
4. A Bayesian posterior of the accuracy gap from only 200 labels: Beta-Binomial
   versus hierarchical Bayesian calibration with the unlabeled rest, against the truth.
5. An HTML audit report, also logged to MLflow; the command to open the MLflow UI.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier

import skfair_measures as sfm
from skfair_measures import bayes
from skfair_measures.benchmark import benchmark

AUDIT_KEYS = ["fairness.tpr", "fairness.fpr", "fairness.eod", "fairness.cv", "fairness.ppv", "fairness.acc"]
BENCH_KEYS = ["fairness.tpr", "fairness.npv", "fairness.acc", "classif.acc"]


def _encoder() -> object:
    return make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore", min_frequency=20), make_column_selector(dtype_include="category")),
        (StandardScaler(), make_column_selector(dtype_include="number")),
    )


def learners(drop: list[str] | None = None) -> dict[str, object]:
    """The models to audit; the sensitive columns never reach them (DropColumns)."""
    drop = ["sex", "race"] if drop is None else drop
    return {
        "logreg": make_pipeline(sfm.DropColumns(drop), _encoder(), LogisticRegression(max_iter=1000)),
        "tree": make_pipeline(sfm.DropColumns(drop), _encoder(), DecisionTreeClassifier(max_depth=6, random_state=0)),
    }


def section(title: str) -> None:
    print(f"\n{'=' * len(title)}\n{title}\n{'=' * len(title)}")


def audit(models: dict[str, object], X_test: pd.DataFrame, y_test: pd.Series) -> dict[str, dict]:
    section("1. Audit on the Adult test split (sensitive attribute: sex)")
    rows, all_results = {}, {}
    for name, model in models.items():
        y_pred = model.predict(X_test)
        results = sfm.evaluate_measures(
            [sfm.msr(k) for k in AUDIT_KEYS + ["classif.acc"]], y_test, y_pred, sensitive_features=X_test["sex"]
        )
        rows[name] = {k: r.value for k, r in results.items()}
        all_results[name] = results
        tpr = results["fairness.tpr"]
        print(f"\n{name}: groupwise TPR (mlr3fairness' groupwise_metrics(msr('classif.tpr')))")
        print(pd.DataFrame({"tpr": tpr.by_group, "n": tpr.counts.astype(int)}).to_string(float_format="{:.4f}".format))
        boot = sfm.bootstrap(
            sfm.msr("fairness.tpr"), y_test, y_pred, sensitive_features=X_test["sex"], n_boot=2000, random_state=0
        )
        lo, hi = boot.interval()
        print(f"fairness.tpr = {boot.estimate:.4f}  (95% bootstrap interval {lo:.4f} to {hi:.4f})")
    print("\nAudit (absolute differences across sex; classif.acc overall):")
    print(pd.DataFrame(rows).T.to_string(float_format="{:.4f}".format))
    print(
        "(fairness.eod is equalized odds as mlr3fairness defines it, the mean of the TPR and FPR gaps; fairlearn's "
        "equalized_odds_difference, the larger of the two, is fairness.eod_max)"
    )
    inter = sfm.msr("fairness.tpr", undefined="drop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sfm.UndefinedGroupWarning)
        value = inter(y_test, models["logreg"].predict(X_test), sensitive_features=X_test[["sex", "race"]])
    print(f"\nIntersectional (sex x race) fairness.tpr for logreg: {value:.4f}")
    return all_results


def tune(X: pd.DataFrame, y: pd.Series, out: Path | None = None) -> object:
    section(
        "2. GridSearchCV under a fairness bound: accuracy subject to equalized odds <= 0.05 "
        "(fairness.eod, mlr3fairness' mean of the TPR and FPR gaps; fairlearn's larger gap is fairness.eod_max)"
    )
    tree = make_pipeline(sfm.DropColumns(["sex", "race"]), _encoder(), DecisionTreeClassifier(random_state=0))
    # counts=True: every fold also returns its counts per group, so the rule can pool them over the folds
    scoring = sfm.make_scorers(["classif.acc", "fairness.eod"], counts=True)
    rule = sfm.constrained_refit("classif.acc", subject_to={"fairness.eod": 0.05}, if_none="fairest")
    t0 = time.perf_counter()
    with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", sfm.InfeasibleConstraintWarning)
        search = GridSearchCV(
            tree,
            {
                "decisiontreeclassifier__max_depth": [2, 4, 6, 8, 12],
                "decisiontreeclassifier__min_samples_leaf": [1, 50],
            },
            scoring=scoring,
            refit=rule,
            cv=StratifiedKFold(3, shuffle=True, random_state=0),
        )
        search.fit(X, y, sensitive_features=X["sex"])
    table = rule.table(search.cv_results_)
    front = rule.front(search.cv_results_)
    shown = table.assign(
        max_depth=[p["decisiontreeclassifier__max_depth"] for p in table["params"]],
        min_samples_leaf=[p["decisiontreeclassifier__min_samples_leaf"] for p in table["params"]],
    )
    cols = [
        "max_depth",
        "min_samples_leaf",
        "classif.acc",
        "fairness.eod",
        "fairness.eod lo",
        "fairness.eod hi",
        "feasible",
    ]
    print(shown[cols].to_string(index=False, float_format="{:.4f}".format))
    print(
        f"({time.perf_counter() - t0:.1f} s for {len(table)} candidates x 3 folds; EOD on the pooled out-of-fold "
        "counts, 90% interval)"
    )
    row = table.loc[search.best_index_]
    holds = "holds" if row["feasible"] else "does NOT hold for any candidate; this is the fairest one"
    print(
        f"\nselected {search.best_params_}: mean accuracy {row['classif.acc']:.4f}, "
        f"fairness.eod {row['fairness.eod']:.4f} (90% interval {row['fairness.eod lo']:.4f} to "
        f"{row['fairness.eod hi']:.4f}); the bound 0.05 {holds}."
    )
    for w in caught:
        print(f"warning: {w.message}")
    others = front[~front["chosen"]]
    if len(others):
        print("Pareto front, and P(this candidate is fairer than the selected one):")
        print(
            others.assign(params=[str(p) for p in others["params"]])[
                ["params", "classif.acc", "fairness.eod", "prob_fairer"]
            ].to_string(float_format="{:.4f}".format)
        )
    if out is not None:
        from skfair_measures import plots

        ax = plots.pareto_front(
            table, front, labels=shown["max_depth"].astype(str) + "/" + shown["min_samples_leaf"].astype(str)
        )
        ax.figure.savefig(out / "pareto_front.png", dpi=120)
        print(f"Pareto plot written to {out / 'pareto_front.png'}")
    return search


def compare(adult: tuple, compas: tuple, mlflow_uri: str) -> None:
    section("3. Benchmark: 3-fold CV, learners x measures (mlr3's bmr$aggregate), logged to MLflow")
    import mlflow
    from skfair_measures_mlflow import cross_validate_fairness, log_fairness

    for name, (X, y, sensitive) in (("adult", adult), ("compas", compas)):
        models = learners(drop=[c for c in ("sex", "race") if c in X.columns])
        bench = benchmark(
            models, X, y, measures=BENCH_KEYS, sensitive=sensitive, cv=3, random_state=1, drop_sensitive=False
        )
        print(f"\n{name} (sensitive: {sensitive}; {len(X):,} rows)")
        print(bench.aggregate().to_string(index=False, float_format="{:.4f}".format))
        p = bench.prob_fairer("fairness.tpr", "logreg", "tree", random_state=0)
        print(f"P(logreg has a smaller TPR gap than tree | pooled out-of-fold predictions) = {p:.3f}")
        experiment_id = mlflow.set_experiment(f"skfair-demo-{name}").experiment_id
        for learner, model in models.items():
            with mlflow.start_run(run_name=f"{name}-{learner}-cv", experiment_id=experiment_id):
                mlflow.log_params({"dataset": name, "learner": learner, "sensitive": sensitive})
                cross_validate_fairness(
                    model,
                    X,
                    y,
                    measures=BENCH_KEYS,
                    sensitive=sensitive,
                    cv=StratifiedKFold(3, shuffle=True, random_state=1),
                    fold_runs=True,
                )
            with mlflow.start_run(run_name=f"{name}-{learner}-posterior", experiment_id=experiment_id):
                post = bench.posterior("fairness.tpr", learner, random_state=0)
                log_fairness([("fairness.tpr", post)])
    print(f"\nlogged to {mlflow_uri}: per-fold child runs, their mean and sd, and posteriors")


def posterior_with_few_labels(models: dict, X_test: pd.DataFrame, y_test: pd.Series) -> object:
    section("4. How sure can we be? The accuracy gap from 200 labels (Ji, Smyth & Steyvers 2020)")
    scores = models["logreg"].predict_proba(X_test)[:, 1]
    sex = X_test["sex"].to_numpy()
    y = y_test.to_numpy()
    truth = sfm.msr("fairness.acc", operation="diff_to_reference", reference="Male")(
        y, (scores >= 0.5).astype(int), sensitive_features=sex
    )
    rng = np.random.default_rng(3)
    labeled = rng.choice(len(y), 200, replace=False)
    rest = np.setdiff1d(np.arange(len(y)), labeled)
    m = sfm.msr("fairness.acc")
    rows = {}
    unlabeled = {"unlabeled_scores": scores[rest], "unlabeled_sensitive": sex[rest]}
    for method in ("bb", "bc", "auto"):  # auto, the default: bcr here (BC with a rectifier)
        t0 = time.perf_counter()
        post = bayes.posterior(
            m,
            y[labeled],
            scores[labeled],
            sensitive_features=sex[labeled],
            method=method,
            reference="Male",
            random_state=0,
            **({} if method == "bb" else unlabeled),  # bb reads the labels alone
        )
        lo, hi = post.interval(0.95)
        rows[method if method != "auto" else f"auto ({post.method})"] = {
            "mean": post.mean(),
            "2.5%": lo,
            "97.5%": hi,
            "P(gap > 0)": post.prob_greater(0.0),
            "P(|gap| < 0.02)": post.prob_within(0.02),
            "seconds": time.perf_counter() - t0,
        }
        if method == "bc":
            bc = post
    print(f"true accuracy gap (Female - Male) on all {len(y):,} test rows: {truth:+.4f}")
    print(pd.DataFrame(rows).T.to_string(float_format="{:+.4f}".format))
    print(
        "BB uses the 200 labels only; BC also calibrates the scores of the other "
        f"{len(rest):,} rows (MCMC: {bc.diagnostics()}); auto, the default, adds a rectifier of each "
        "group's calibration from the labels' residuals, whose prior widens the interval"
    )
    return bc


def report(models: dict, X_test: pd.DataFrame, y_test: pd.Series, out: Path) -> Path:
    section("5. HTML audit report")
    from skfair_measures.report import audit, write_html

    scores = models["logreg"].predict_proba(X_test)[:, 1]
    df = pd.DataFrame({"label": y_test.to_numpy().astype(float), "score": scores, "sex": X_test["sex"].to_numpy()})
    df.loc[np.random.default_rng(0).choice(len(df), len(df) - 1000, replace=False), "label"] = np.nan
    rep = audit(
        df,
        sensitive="sex",
        score="score",
        posterior="bb",
        title="Adult, logistic regression",
        source="UCI Adult test split (1,000 labeled rows)",
        progress=False,
    )
    path = write_html(rep, out)
    print(rep.to_text())
    print(f"\nreport written to {path}")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mlflow-uri", default="sqlite:///mlflow.db")
    parser.add_argument("--out", default="reports")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=FutureWarning)
    t0 = time.perf_counter()
    import mlflow
    from skfair_measures_mlflow import log_fairness

    logging.getLogger("mlflow").setLevel(logging.WARNING)

    mlflow.set_tracking_uri(args.mlflow_uri)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    X, y, _ = sfm.datasets.load_adult(return_X_y_A=True)
    print(
        f"UCI Adult: {len(X):,} rows, {X.shape[1]} columns; positive class: income > 50K "
        f"({y.mean():.1%}); sensitive: sex, race"
    )
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
    models = {name: model.fit(X_train, y_train) for name, model in learners().items()}
    audit_results = audit(models, X_test, y_test)
    adult_id = mlflow.set_experiment("skfair-demo-adult").experiment_id  # compare() logs into its own ones
    for name, results in audit_results.items():
        with mlflow.start_run(run_name=f"adult-{name}-audit", experiment_id=adult_id):
            log_fairness(results, measures=[r.measure for r in results.values()])
    tune(X_train, y_train, out)
    Xc, yc, _ = sfm.datasets.load_compas(return_X_y_A=True)
    # ProPublica's comparison: African-American vs Caucasian defendants (the other groups
    # have 11 to 509 rows, too few for per-fold TPRs in every group)
    keep = Xc["race"].isin(["African-American", "Caucasian"]).to_numpy()
    Xc, yc = Xc[keep].reset_index(drop=True), yc[keep].reset_index(drop=True)
    Xc["race"] = Xc["race"].cat.remove_unused_categories()
    compas_cols = [
        "sex",
        "age",
        "race",
        "juv_fel_count",
        "juv_misd_count",
        "juv_other_count",
        "priors_count",
        "c_charge_degree",
    ]
    compare((X, y, "sex"), (Xc[compas_cols], yc, "race"), args.mlflow_uri)
    bc = posterior_with_few_labels(models, X_test, y_test)
    with mlflow.start_run(run_name="adult-logreg-posterior-200-labels", experiment_id=adult_id):
        log_fairness([("fairness.acc", bc)])
    path = report(models, X_test, y_test, out / "adult_audit.html")
    with mlflow.start_run(run_name="adult-logreg-report", experiment_id=adult_id):
        mlflow.log_artifact(str(path))
    print(f"\nDone in {time.perf_counter() - t0:.1f} s.")
    if args.mlflow_uri.startswith("sqlite:///"):
        print(f"Open the runs with:  .venv/bin/mlflow ui --backend-store-uri {args.mlflow_uri}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
