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
"""

from __future__ import annotations

import argparse
import platform
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
from sklearn.metrics import accuracy_score, confusion_matrix, mean_squared_error, precision_score

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
    args = parser.parse_args()
    n = 100_000 if args.quick else args.rows
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
            ("categorical", pd.Categorical(labels[codes])),
        ):
            t_floor, _ = best_of(lambda: np.bincount((codes * 2 + y_true) * 2 + y_pred, minlength=4 * n_groups), 5)
            t_all, ours = best_of(lambda: sfm.evaluate_measures(measures, y_true, y_pred, sensitive_features=groups), 5)
            t_each, _ = best_of(lambda: [m(y_true, y_pred, sensitive_features=groups) for m in measures], 3)
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


if __name__ == "__main__":
    main()
