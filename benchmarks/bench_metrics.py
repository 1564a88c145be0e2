"""Time all mlr3fairness registry measures against fairlearn on the same predictions.

For 1,000,000 rows and 2, 5 and 20 groups, in one run:

- ``ours_all``: every registry measure of the mlr3fairness table (18 keys) from one
  validated sample (``evaluate_measures``: one pass of counts);
- ``ours_each``: the same 18 measures called one by one, as a user would in a loop;
- ``fairlearn``: one ``MetricFrame`` with the 14 base metrics behind those keys,
  then ``difference()`` (and the overall accuracy for the constraints), i.e. the
  same quantities;
- ``bincount``: a single ``np.bincount`` over the (group, y_true, y_pred) codes, the
  floor for any implementation.

Prints the times and the ratios; ``--quick`` uses 100,000 rows and one fairlearn run.
``--speed`` runs the input-type, repeated-call, scorer and bootstrap sections instead
(``--baseline COMMIT`` adds the same timings with an older core, in one run).
``--multiclass`` times a first call on K classes (after clearing the input cache, in a
process that has run it before; also the first call of a fresh process and the count
without numba) against one bincount and fairlearn; ``--thresholds`` a grid of thresholds
against one sort.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import subprocess
import sys
import time

import numpy as np
import pandas as pd
from fairlearn.metrics import (
    MetricFrame,
    false_negative_rate,
    false_positive_rate,
    selection_rate,
    true_negative_rate,
    true_positive_rate,
)
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    confusion_matrix,
    mean_squared_error,
    precision_score,
    recall_score,
)

import skfair_measures as sfm
from skfair_measures.registry import MLR3_KEYS


def _cm(y_true, y_pred):
    return confusion_matrix(y_true, y_pred, labels=[0, 1]).ravel()


def _npv(y_true, y_pred):
    tn, fp, fn, tp = _cm(y_true, y_pred)
    return tn / (tn + fn)


def _fomr(y_true, y_pred):
    tn, fp, fn, tp = _cm(y_true, y_pred)
    return fn / (tn + fn)


FAIRLEARN_METRICS = {
    "acc": accuracy_score,
    "mse": mean_squared_error,
    "fnr": false_negative_rate,
    "fpr": false_positive_rate,
    "tnr": true_negative_rate,
    "tpr": true_positive_rate,
    "npv": _npv,
    "ppv": precision_score,
    "fomr": _fomr,
    "fp": lambda t, p: _cm(t, p)[1],
    "tp": lambda t, p: _cm(t, p)[3],
    "tn": lambda t, p: _cm(t, p)[0],
    "fn": lambda t, p: _cm(t, p)[2],
    "sel": selection_rate,
}


def fairlearn_all(y_true, y_pred, groups) -> dict[str, float]:
    """The 18 registry quantities with fairlearn (one MetricFrame)."""
    mf = MetricFrame(metrics=FAIRLEARN_METRICS, y_true=y_true, y_pred=y_pred, sensitive_features=groups)
    d = mf.difference()
    out = {f"fairness.{k}": float(d[k]) for k in FAIRLEARN_METRICS if k != "sel"}
    out["fairness.cv"] = float(d["sel"])
    out["fairness.eod"] = float((d["tpr"] + d["fpr"]) / 2)
    out["fairness.pp"] = float((d["ppv"] + d["npv"]) / 2)
    acc = float(mf.overall["acc"])
    out["fairness.acc_eod=.05"] = acc if out["fairness.eod"] <= 0.05 else -out["fairness.eod"]
    out["fairness.acc_ppv=.05"] = acc if out["fairness.ppv"] <= 0.05 else -out["fairness.ppv"]
    return out


def best_of(func, repeat: int) -> tuple[float, object]:
    best, result = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - t)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, nargs="+", default=[2, 5, 20])
    parser.add_argument("--quick", action="store_true", help="100,000 rows")
    parser.add_argument("--fairlearn-repeat", type=int, default=1)
    parser.add_argument("--speed", action="store_true", help="only the speed sections (inputs, scorers, bootstrap)")
    parser.add_argument(
        "--speed-sections",
        nargs="*",
        default=["inputs", "scorers", "bootstrap", "distributions"],
        choices=["inputs", "scorers", "bootstrap", "distributions"],
        help="which speed sections to run",
    )
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates for --speed")
    parser.add_argument("--baseline", metavar="COMMIT", help="with --speed: also time the core of COMMIT")
    parser.add_argument("--multiclass", action="store_true", help="only the multiclass section (K classes, 5 groups)")
    parser.add_argument("--classes", type=int, default=10, help="K for --multiclass")
    parser.add_argument("--thresholds", action="store_true", help="only the thresholds section (5 groups)")
    parser.add_argument("--n-thresholds", type=int, default=100, help="grid size for --thresholds")
    args = parser.parse_args()
    n = 100_000 if args.quick else args.rows
    if args.speed:
        main_speed(args, n)
        return
    if args.multiclass or args.thresholds:
        main_parts(args, n)
        return
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} | python {platform.python_version()} | "
        f"numpy {np.__version__} | pandas {pd.__version__}"
    )
    measures = [sfm.msr(k) for k in MLR3_KEYS]
    rng = np.random.default_rng(0)
    rows = []
    for n_groups in args.groups:
        y_true = rng.integers(0, 2, n)
        y_pred = np.where(rng.random(n) < 0.8, y_true, 1 - y_true)
        codes = rng.integers(0, n_groups, n)
        labels = np.array([f"group_{i}" for i in range(n_groups)], dtype=object)
        for kind, groups in (
            ("int codes", codes),
            ("strings", labels[codes]),
            ("pandas str", pd.Series(labels[codes], dtype="str")),
            ("categorical", pd.Categorical(labels[codes])),
        ):
            t_floor, _ = best_of(lambda: np.bincount((codes * 2 + y_true) * 2 + y_pred, minlength=4 * n_groups), 5)
            t_all, ours = _cold_best(
                lambda: sfm.evaluate_measures(measures, y_true, y_pred, sensitive_features=groups), 5
            )
            t_each, _ = _cold_best(lambda: [m(y_true, y_pred, sensitive_features=groups) for m in measures], 3)
            if kind == "int codes":
                t_fl, theirs = best_of(lambda: fairlearn_all(y_true, y_pred, groups), args.fairlearn_repeat)
                for key in MLR3_KEYS:  # same numbers, or the timing means nothing
                    np.testing.assert_allclose(ours[key].value, theirs[key], rtol=1e-9, err_msg=key)
            rows.append(
                {
                    "groups": n_groups,
                    "sensitive as": kind,
                    "bincount [ms]": 1e3 * t_floor,
                    "ours, all 18 [ms]": 1e3 * t_all,
                    "ours, 18 calls [ms]": 1e3 * t_each,
                    "fairlearn [s]": t_fl,
                    "speed-up (all)": t_fl / t_all,
                    "speed-up (calls)": t_fl / t_each,
                    "ours / bincount": t_all / t_floor,
                }
            )
            print(
                pd.DataFrame(rows[-1:]).to_string(index=False, float_format=lambda v: f"{v:.2f}", header=len(rows) == 1)
            )
    table = pd.DataFrame(rows)
    print(f"\n{n:,} rows; fairlearn timed once per group count on integer codes (same predictions)")
    print(table.to_markdown(index=False, floatfmt=".2f") if _has_tabulate() else table.to_string(index=False))


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


# --- multiclass and thresholds (python benchmarks/bench_metrics.py --multiclass / --thresholds) -----------------


def _cold() -> None:
    """Forget validated inputs kept between calls, so that every timed call validates and counts anew."""
    reuse = getattr(sfm, "_reuse", None)
    if reuse is not None:
        reuse.clear()


def _fairlearn_multiclass(y_true, y_pred, groups) -> dict[str, float]:
    metrics = {
        "fairness.acc": accuracy_score,
        "fairness.balanced_accuracy": balanced_accuracy_score,
        "fairness.tpr(average=macro)": functools.partial(recall_score, average="macro", zero_division=np.nan),
        "fairness.ppv(average=macro)": functools.partial(precision_score, average="macro", zero_division=np.nan),
    }
    frame = MetricFrame(metrics=metrics, y_true=y_true, y_pred=y_pred, sensitive_features=groups)
    return frame.difference().to_dict()


def _multiclass_data(n: int, n_classes: int, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """int64 labels (70% predicted right) and group codes, the same for the same arguments."""
    rng = np.random.default_rng(0)
    y_true = rng.integers(0, n_classes, n)
    y_pred = np.where(rng.random(n) < 0.7, y_true, rng.integers(0, n_classes, n))
    return y_true, y_pred, rng.integers(0, n_groups, n)


def _multiclass_measures() -> list:
    return [
        sfm.msr("fairness.acc"),
        sfm.msr("fairness", base="balanced_accuracy"),
        sfm.msr("fairness.tpr", average="macro"),
        sfm.msr("fairness.ppv", average="macro"),
    ]


def first_multiclass_call(n: int, n_classes: int, n_groups: int) -> float:
    """Seconds of the first call in this process (run in a fresh interpreter by :func:`_fresh_first_call`)."""
    y_true, y_pred, codes = _multiclass_data(n, n_classes, n_groups)
    measures = _multiclass_measures()
    start = time.perf_counter()
    sfm.evaluate_measures(measures, y_true, y_pred, sensitive_features=codes)
    return time.perf_counter() - start


def _fresh_first_call(n: int, n_classes: int, n_groups: int) -> float:
    """The first call of a new Python process (its imports done; numba imported and its kernel loaded in the call)."""
    code = (
        f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); import bench_metrics as b; "
        f"print(b.first_multiclass_call({n}, {n_classes}, {n_groups}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def _compiled_kernel_used() -> bool:
    """Whether large integer inputs are counted by the compiled (numba) kernel in this installation."""
    stats = getattr(sfm, "_stats", None)
    return stats is not None and getattr(stats, "_compiled_kernel", lambda: None)() is not None


def bench_multiclass(n: int, n_classes: int, n_groups: int, fairlearn_repeat: int) -> dict[str, float]:
    """Accuracy, balanced accuracy, macro recall and macro precision differences on K classes.

    ``ours``: a call after :func:`_cold` (no validated input kept) in a process that has
    already run it, so numba is imported and its compiled kernel loaded; ``fresh process``
    is the first call of a new interpreter, which also imports numba and loads the kernel
    from numba's disk cache; ``no numba`` counts with the NumPy fallback.
    """
    y_true, y_pred, codes = _multiclass_data(n, n_classes, n_groups)
    measures = _multiclass_measures()

    def ours():
        _cold()
        return sfm.evaluate_measures(measures, y_true, y_pred, sensitive_features=codes)

    t_fresh = _fresh_first_call(n, n_classes, n_groups)
    cell = (codes * n_classes + y_true) * n_classes + y_pred
    t_floor, _ = best_of(lambda: np.bincount(cell, minlength=n_groups * n_classes**2), 30)
    t_ours, got = best_of(ours, 30)  # best of many: a few ms each, on a machine that may be busy
    t_numpy, _ = _numpy_counting(lambda: best_of(ours, 30))
    t_fl, want = best_of(lambda: _fairlearn_multiclass(y_true, y_pred, codes), fairlearn_repeat)
    for key, value in want.items():  # same numbers, or the timing means nothing
        np.testing.assert_allclose(got[key].value, value, rtol=1e-9, err_msg=key)
    print(
        f"compiled kernel (numba) used: {_compiled_kernel_used()}; 'ours' is a call after clearing the input cache "
        "in a process that has run it before; load average " + " ".join(f"{v:.1f}" for v in os.getloadavg())
    )
    return {
        "rows": n,
        "classes": n_classes,
        "groups": n_groups,
        "bincount [ms]": 1e3 * t_floor,
        "ours, 4 measures [ms]": 1e3 * t_ours,
        "fairlearn [s]": t_fl,
        "speed-up": t_fl / t_ours,
        "ours / bincount": t_ours / t_floor,
        "no numba [ms]": 1e3 * t_numpy,
        "no numba / bincount": t_numpy / t_floor,
        "fresh process [ms]": 1e3 * t_fresh,
    }


def _numpy_counting(func):
    """``func()`` with the compiled kernel switched off (as without numba); as is on an older core."""
    stats = getattr(sfm, "_stats", None)
    if stats is None or not hasattr(stats, "_COMPILED_ROWS"):
        return func()
    saved, stats._COMPILED_ROWS = stats._COMPILED_ROWS, np.iinfo(np.int64).max
    try:
        return func()
    finally:
        stats._COMPILED_ROWS = saved


def bench_thresholds(n: int, n_thresholds: int, n_groups: int) -> dict[str, float]:
    """fairness.eod at many thresholds at once, against one sort of the scores."""
    from skfair_measures.thresholds import disparity_at_thresholds

    rng = np.random.default_rng(1)
    y_true = rng.integers(0, 2, n)
    scores = np.clip(0.3 * y_true + 0.7 * rng.random(n), 0, 1)
    codes = rng.integers(0, n_groups, n)
    grid = np.linspace(0, 1, n_thresholds)

    def ours():
        _cold()
        return disparity_at_thresholds("fairness.eod", y_true, scores, sensitive_features=codes, thresholds=grid)

    t_sort, _ = best_of(lambda: np.sort(scores), 7)
    t_ours, curve = best_of(ours, 7)
    t_loop, _ = best_of(
        lambda: [
            sfm.msr("fairness.eod", threshold=float(t))(y_true, scores, sensitive_features=codes) for t in grid[:10]
        ],
        1,
    )
    check = sfm.msr("fairness.eod", threshold=float(grid[37]))(y_true, scores, sensitive_features=codes)
    np.testing.assert_allclose(curve.values.iloc[37], check, rtol=1e-12)
    return {
        "rows": n,
        "thresholds": n_thresholds,
        "groups": n_groups,
        "one np.sort [ms]": 1e3 * t_sort,
        "ours, all thresholds [ms]": 1e3 * t_ours,
        "ours / sort": t_ours / t_sort,
        "one call per threshold [ms, extrapolated]": 1e3 * t_loop * n_thresholds / 10,
    }


def main_parts(args: argparse.Namespace, n: int) -> None:
    """The multiclass and thresholds sections, run alone when their flags are given."""
    rows = []
    if args.multiclass:
        rows.append(bench_multiclass(n, args.classes, 5, args.fairlearn_repeat))
        print(pd.DataFrame(rows[-1:]).to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    if args.thresholds:
        rows.append(bench_thresholds(n, args.n_thresholds, 5))
        print(pd.DataFrame(rows[-1:]).to_string(index=False, float_format=lambda v: f"{v:.2f}"))


# --- speed with real inputs (python benchmarks/bench_metrics.py --speed) ----------------------------------------
#
# Sections: sensitive features and labels given as the types people pass (NumPy codes, NumPy
# strings, pandas' default str dtype, which is Arrow-backed in pandas 3, and categoricals);
# 18 separate calls against one all-at-once call; scorers in a GridSearchCV; the weighted
# bootstrap; and, with --baseline COMMIT, the same timings of an older core in one run.


def _fresh() -> None:
    """Forget validated inputs kept between calls (so that a timed call validates anew)."""
    from skfair_measures import _reuse

    _reuse.clear()


def _cold_best(func, repeat: int) -> tuple[float, object]:
    def run():
        _fresh()
        return func()

    return best_of(run, repeat)


def _kinds(values: np.ndarray) -> dict[str, object]:
    """The same labels as NumPy objects, pandas' default str dtype and a categorical."""
    return {
        "numpy strings": values,
        "pandas str": pd.Series(values, dtype="str"),
        "categorical": pd.Series(values, dtype="category"),
    }


def bench_inputs(n: int, n_groups: int) -> list[dict[str, object]]:
    """All 18 at once and 18 separate calls, against factorising the input plus one bincount."""
    rng = np.random.default_rng(0)
    y_true = rng.integers(0, 2, n)
    y_pred = np.where(rng.random(n) < 0.8, y_true, 1 - y_true)
    codes = rng.integers(0, n_groups, n)
    names = np.array([f"group_{i}" for i in range(n_groups)], dtype=object)
    yes_no = np.array(["no", "yes"], dtype=object)
    plain = [sfm.msr(k) for k in MLR3_KEYS]
    labeled = [sfm.msr(k, pos_label="yes") for k in MLR3_KEYS if k != "fairness.mse"]
    t_count, _ = best_of(lambda: np.bincount((codes * 2 + y_true) * 2 + y_pred, minlength=4 * n_groups), 7)
    cases = [("sensitive", "int codes", plain, y_true, y_pred, codes)]
    cases += [("sensitive", k, plain, y_true, y_pred, g) for k, g in _kinds(names[codes]).items()]
    cases += [
        ("labels", k, labeled, t, p, codes)
        for (k, t), p in zip(_kinds(yes_no[y_true]).items(), _kinds(yes_no[y_pred]).values(), strict=True)
    ]
    rows = []
    for what, kind, measures, t, p, g in cases:
        encoded = (g,) if what == "sensitive" else (t, p)  # what this call has to factorise
        t_fact, _ = best_of(lambda: [pd.factorize(x) for x in encoded], 5)
        t_all, _ = _cold_best(lambda: sfm.evaluate_measures(measures, t, p, sensitive_features=g), 5)
        t_each, _ = _cold_best(lambda: [m(t, p, sensitive_features=g) for m in measures], 3)
        floor = t_fact + t_count
        rows.append(
            {
                "strings in": what,
                "given as": kind,
                "factorise + bincount [ms]": 1e3 * floor,
                "all at once [ms]": 1e3 * t_all,
                "all / floor": t_all / floor,
                "measures": len(measures),
                "separate calls [ms]": 1e3 * t_each,
                "calls / all": t_each / t_all,
            }
        )
        _print_row(rows)
    return rows


def bench_scorers(n: int) -> list[dict[str, object]]:
    """Scoring one fitted model: accuracy alone, a dict of five fairness_scorer() scorers, make_scorers.

    Only the scoring step is timed (what a search adds per fold and candidate on top of
    fitting): on a shared machine the fits' noise would hide it.
    """
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import check_scoring
    from sklearn.pipeline import make_pipeline

    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(n, 6)), columns=[f"x{i}" for i in range(6)])
    X["sex"] = rng.integers(0, 2, n)
    y = (X["x0"] + 0.5 * X["sex"] + rng.normal(size=n) > 0).astype(int)
    keys = ["fairness.tpr", "fairness.fpr", "fairness.eod", "fairness.ppv", "classif.acc"]
    # a forest: predicting costs as much as in real searches (a linear model predicts for free)
    forest = RandomForestClassifier(n_estimators=30, max_depth=8, n_jobs=1, random_state=0)
    model = make_pipeline(sfm.DropColumns("sex"), forest).fit(X, y)
    scorings = {
        "accuracy alone": "accuracy",
        "dict of 5 fairness_scorer()": {k: sfm.fairness_scorer(sfm.msr(k), sensitive="sex") for k in keys},
        "make_scorers (5 measures)": sfm.make_scorers(keys, sensitive="sex"),
    }
    rows = []
    for name, scoring in scorings.items():
        scorer = check_scoring(model, scoring=scoring)
        t, _ = best_of(lambda s=scorer: s(model, X, y), 5)
        rows.append({"scoring": name, "scoring one fitted model [ms]": 1e3 * t})
    for row in rows:
        row["x accuracy alone"] = row["scoring one fitted model [ms]"] / rows[0]["scoring one fitted model [ms]"]
    return rows


def _weights(kind: str, y_true: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    n = y_true.size
    return {
        "unweighted": None,
        "class weights (2 values)": np.where(y_true == 1, 2.0, 0.5),
        "10 weight levels": rng.integers(1, 11, n).astype(float),
        "continuous weights": rng.random(n) + 0.5,
    }[kind]


def bench_bootstrap(n: int, n_boot: int) -> list[dict[str, object]]:
    """fairness.eod bootstrap, 5 groups: unweighted against three kinds of weights."""
    rng = np.random.default_rng(3)
    y_true = rng.integers(0, 2, n)
    y_pred = np.where(rng.random(n) < 0.8, y_true, 1 - y_true)
    codes = rng.integers(0, 5, n)
    m = sfm.msr("fairness.eod")
    rows = []
    # every kind times all n_boot replicates (continuous weights take per-cell compound draws, no longer
    # resampled rows, so nothing is extrapolated)
    for kind in ("unweighted", "class weights (2 values)", "10 weight levels", "continuous weights"):
        w = _weights(kind, y_true, rng)

        def run(w=w):
            return sfm.bootstrap(
                m, y_true, y_pred, sensitive_features=codes, sample_weight=w, n_boot=n_boot, random_state=0
            )

        t, _ = _cold_best(run, 7)  # milliseconds each on a shared machine: the best of 7 steadies the ratios
        rows.append({"weights": kind, "replicates timed": n_boot, f"{n_boot} replicates [s]": t})
    for row in rows:
        row["x unweighted"] = row[f"{n_boot} replicates [s]"] / rows[0][f"{n_boot} replicates [s]"]
    return rows


def bench_distributions(n: int = 20_000, n_groups: int = 1_000) -> list[dict[str, object]]:
    """dp_ks and dp_wasserstein on many small groups (continuous predictions), against sorting the predictions.

    The floor is one ``np.argsort`` of the predictions (any distribution distance sorts them).
    """
    rng = np.random.default_rng(5)
    pred = rng.random(n)
    codes = rng.integers(0, n_groups, n)
    t_sort, _ = best_of(lambda: np.argsort(pred, kind="stable"), 5)
    rows = []
    for key in ("fairness.dp_ks", "fairness.dp_wasserstein"):
        m = sfm.msr(key)
        t, _ = _cold_best(lambda m=m: m(np.zeros(n), pred, sensitive_features=codes), 3)
        rows.append({"measure": key, "rows": n, "groups": n_groups, "seconds": t, "x one argsort": t / t_sort})
    return rows


_BASELINE_CHILD = r"""
import json, sys, time
import numpy as np, pandas as pd
import skfair_measures as sfm
from skfair_measures.registry import MLR3_KEYS
n, n_groups, n_boot, weighted_reps = (int(a) for a in sys.argv[1:5])
reuse = getattr(sfm, "_reuse", None)
def best(f, r):
    b = float("inf")
    for _ in range(r):
        if reuse is not None:
            reuse.clear()
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b
rng = np.random.default_rng(0)
y = rng.integers(0, 2, n); p = np.where(rng.random(n) < 0.8, y, 1 - y); codes = rng.integers(0, n_groups, n)
names = np.array([f"group_{i}" for i in range(n_groups)], dtype=object)
ms = [sfm.msr(k) for k in MLR3_KEYS]
out = {}
kinds = {"int codes": codes, "numpy strings": names[codes], "pandas str": pd.Series(names[codes], dtype="str"),
         "categorical": pd.Categorical(names[codes])}
for kind, g in kinds.items():
    out[f"{kind}: all 18 [ms]"] = 1e3 * best(lambda: sfm.evaluate_measures(ms, y, p, sensitive_features=g), 5)
    out[f"{kind}: 18 calls [ms]"] = 1e3 * best(lambda: [m(y, p, sensitive_features=g) for m in ms], 3)
m = sfm.msr("fairness.eod")
def boot(m, *args, **kwargs):  # older cores bootstrap through a measure method (sfm.bootstrap is their module)
    if callable(getattr(sfm, "bootstrap", None)):
        return sfm.bootstrap(m, *args, **kwargs)
    return m.bootstrap(*args, **kwargs)
weights = {"unweighted": (None, n_boot), "class weights": (np.where(y == 1, 2.0, 0.5), weighted_reps)}
for kind, (w, reps) in weights.items():
    t = best(lambda: boot(m, y, p, sensitive_features=codes, sample_weight=w, n_boot=reps, random_state=0), 1)
    out[f"bootstrap {kind}, {n_boot} [s]"] = t * n_boot / reps
out["package"] = 0.0 if "/core/" in sfm.__file__ else 1.0  # which tree was imported (a check)
print(json.dumps(out))
"""


def bench_baseline(commit: str, n: int, n_groups: int, n_boot: int) -> pd.DataFrame:
    """The same timings with the core of ``commit`` and with this tree, one after the other."""
    import json
    import os
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as work:
        old = Path(work) / "core"  # the old package lives here; the children run from `work`, which holds none
        old.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", commit, "skfair_measures"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        figures: dict[str, list[dict[str, float]]] = {commit: [], "this tree": []}
        # alternate old and new twice and keep the best of each: the machine is shared.
        # Both trees time the same number of weighted replicates: extrapolating the older one from a tenth
        # of them multiplied its fixed cost by ten (it read 10x slower where the two take the same time)
        for _ in range(2):
            for label, path, reps in ((commit, str(old), n_boot), ("this tree", str(repo), n_boot)):
                env = {**os.environ, "PYTHONPATH": path}
                argv = [str(n), str(n_groups), str(n_boot), str(reps)]
                res = subprocess.run(
                    [sys.executable, "-c", _BASELINE_CHILD, *argv],
                    env=env,
                    cwd=work,
                    check=True,
                    capture_output=True,
                    text=True,
                )
                figures[label].append(json.loads(res.stdout.strip().splitlines()[-1]))
    table = pd.DataFrame({label: pd.DataFrame(runs).min() for label, runs in figures.items()})
    table["now / before"] = table["this tree"] / table[commit]
    return table


def _print_row(rows: list[dict[str, object]]) -> None:
    print(pd.DataFrame(rows[-1:]).to_string(index=False, float_format=lambda v: f"{v:.2f}"))


def main_speed(args: argparse.Namespace, n: int) -> None:
    """The speed sections, run alone with --speed (and --baseline COMMIT)."""
    print(
        f"machine: {platform.machine()} | {os.cpu_count()} cores | python {platform.python_version()} | "
        f"numpy {np.__version__} | pandas {pd.__version__} | load average {os.getloadavg()[0]:.1f}"
    )
    sections = set(args.speed_sections)
    if "inputs" in sections:
        print(f"\n## inputs: {n:,} rows, 5 groups (sensitive) / 5 groups and labels 'no'/'yes' (labels)")
        _print_table(bench_inputs(n, 5))
    if "scorers" in sections:
        print(f"\n## scorers: scoring a fitted random forest on {n // 10:,} rows")
        _print_table(bench_scorers(n // 10))
    if "bootstrap" in sections:
        print(f"\n## bootstrap: fairness.eod, {n:,} rows, 5 groups")
        _print_table(bench_bootstrap(n, args.n_boot))
    if "distributions" in sections:
        print("\n## distribution parity: 1,000 groups x 20,000 rows (goal: under 1 s)")
        _print_table(bench_distributions())
    if args.baseline:
        print(f"\n## before ({args.baseline}) and now, {n:,} rows, 5 groups, one process each")
        table = bench_baseline(args.baseline, n, 5, args.n_boot)
        print(table.to_markdown(floatfmt=".2f") if _has_tabulate() else table.to_string(float_format="%.2f"))


def _print_table(rows: list[dict[str, object]]) -> None:
    table = pd.DataFrame(rows)
    print(table.to_markdown(index=False, floatfmt=".2f") if _has_tabulate() else table.to_string(index=False))


if __name__ == "__main__":
    main()
