"""Reproduce Fabris, Esuli, Moreo, Sebastiani (JAIR 2023), Tables 4 and 5 (LR rows).

Protocols sample-prev-D3 (section 5.3) and sample-prev-D2 (section 5.4) on Adult
(S = sex, S=1 Male) and COMPAS (S = race restricted to African-American and
Caucasian, S=1 Caucasian; Y=+ is "no recidivism"), with

* h = LogisticRegression(class_weight="balanced") trained on D1,
* k = LogisticRegression inside every quantifier,
* features: the paper's non-sensitive attributes (no sex, no race), dummy-encoded
  and standardised; Adult also drops education-num, relationship and fnlwgt,

through the public API ``skfair_measures.unaware.QuantificationDisparity``.

Each split cuts the data into three parts with the same joint distribution of
(S, Y); the six role permutations make each part D1, D2 and D3 in turn.

* sample-prev-D3: quantifiers are trained once on D2; D3 is resampled to 500 rows
  predicted negative plus 500 predicted positive, one of the two parts at
  P(S=1) = p for p in {0, 0.1, ..., 1} (the text's eleven values), the other
  uniformly. The truth is the disparity of h on that sample with the true S.
* sample-prev-D2: D2 is resampled to 500 + 500 rows in the same way with
  p in {0.1, ..., 0.9}; the quantifiers are retrained on it and applied to the
  whole of D3; the truth is the disparity of h on D3.

The paper uses 5 splits x 6 permutations x 10 samplings per value of p and
sub-protocol. To stay within about ten minutes on two shared cores the defaults
use (splits x samplings): Adult sample-prev-D3 5 x 2, Adult sample-prev-D2 2 x 1,
COMPAS sample-prev-D3 5 x 1, COMPAS sample-prev-D2 2 x 2; ``--quick`` uses 1 x 1.
The repetitions and run time of each block are printed and saved, and so is the share
of estimates flagged unreliable (``flagged``; the features carry some information here,
so a flag says it is too weak to trust, not that there is none).

The paper's pseudocode draws p from {0.1, ..., 0.9} for sample-prev-D3, while its
text and figures use eleven values {0, ..., 1}; we follow the text. Samples are
drawn without replacement unless the pool is smaller than requested (e.g. on COMPAS).

Usage::

    python benchmarks/reproduce_fabris2023.py            # defaults, ~10 min
    python benchmarks/reproduce_fabris2023.py --quick    # smoke run: 1 split, 1 sampling
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from skfair_measures import datasets
from skfair_measures.unaware import QUANTIFIERS, ProxyReliabilityWarning, QuantificationDisparity

SIZE = 500

# The paper's Tables 4 and 5, LR rows: (MAE, MSE, P(AE<0.1), P(AE<0.2)).
PAPER = {
    ("adult", "sample-prev-D3"): {
        "CC": (0.382, 0.239, 0.207, 0.386),
        "PCC": (0.299, 0.146, 0.235, 0.427),
        "ACC": (0.103, 0.020, 0.595, 0.870),
        "PACC": (0.061, 0.007, 0.813, 0.970),
        "SLD": (0.055, 0.006, 0.846, 0.980),
        "HDy": (0.110, 0.018, 0.500, 0.893),
        "MLPE": (0.397, 0.246, 0.162, 0.294),
    },
    ("compas", "sample-prev-D3"): {
        "CC": (0.541, 0.429, 0.118, 0.237),
        "PCC": (0.337, 0.172, 0.181, 0.344),
        "ACC": (0.495, 0.377, 0.143, 0.252),
        "PACC": (0.252, 0.109, 0.287, 0.492),
        "SLD": (0.169, 0.048, 0.385, 0.669),
        "HDy": (0.267, 0.116, 0.250, 0.472),
        "MLPE": (0.349, 0.184, 0.175, 0.332),
    },
    ("adult", "sample-prev-D2"): {
        "CC": (0.230, 0.084, 0.274, 0.523),
        "PCC": (0.213, 0.074, 0.323, 0.551),
        "ACC": (0.159, 0.057, 0.439, 0.789),
        "PACC": (0.112, 0.026, 0.559, 0.889),
        "SLD": (0.081, 0.011, 0.705, 0.929),
        "HDy": (0.219, 0.084, 0.345, 0.573),
        "MLPE": (0.295, 0.134, 0.239, 0.410),
    },
    ("compas", "sample-prev-D2"): {
        "CC": (0.498, 0.312, 0.044, 0.128),
        "PCC": (0.264, 0.104, 0.227, 0.431),
        "ACC": (0.469, 0.296, 0.080, 0.184),
        "PACC": (0.338, 0.179, 0.185, 0.356),
        "SLD": (0.160, 0.041, 0.386, 0.678),
        "HDy": (0.255, 0.101, 0.246, 0.463),
        "MLPE": (0.275, 0.112, 0.219, 0.417),
    },
}


def load(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features (standardised dummies), Y (1 = the paper's +) and S (1 = the paper's S=1)."""
    if name == "adult":
        X, y, A = datasets.load_adult(return_X_y_A=True)
        X = X.drop(columns=["education_num", "relationship", "fnlwgt", "sex", "race"])
        s = (A["sex"] == "Male").to_numpy(int)
        y = y.to_numpy(int)  # + is income > 50K
    elif name == "compas":
        X, y, A = datasets.load_compas(return_X_y_A=True)
        keep = A["race"].isin(["African-American", "Caucasian"]).to_numpy()
        X = X.loc[
            keep, ["age", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count", "c_charge_degree"]
        ]
        s = (A.loc[keep, "race"] == "Caucasian").to_numpy(int)
        y = 1 - y.to_numpy(int)[keep]  # + is "no recidivism"
    else:
        raise ValueError(name)
    X = pd.get_dummies(X, drop_first=True, dtype=float).to_numpy(float)
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    return X, y, s


def disparity(accepted: np.ndarray, s: np.ndarray) -> float:
    """The paper's delta = mu(1) - mu(0) with the true attribute, unsmoothed."""
    return float(accepted[s == 1].mean() - accepted[s == 0].mean())


def draw(rng, part: np.ndarray, s: np.ndarray, p: float | None) -> np.ndarray:
    """SIZE indices from ``part`` with P(S=1) = p (or uniformly if p is None).

    Without replacement when the pool is large enough, as QuaPy's sampling does.
    """
    if p is None:
        return rng.choice(part, SIZE, replace=part.size < SIZE)
    n1 = int(round(SIZE * p))
    out = []
    for grp, n in ((1, n1), (0, SIZE - n1)):
        pool = part[s[part] == grp]
        if n:
            out.append(rng.choice(pool, n, replace=pool.size < n))
    return np.concatenate(out)


def fit_all(h, X, s, seed):
    ests = {}
    for q in QUANTIFIERS:
        ests[q] = QuantificationDisparity(
            q, classifier=LogisticRegression(max_iter=1000), reference=0, random_state=seed
        ).fit(h, X, s)
    return ests


def run(name: str, protocols: list[str], n_splits: dict, reps: dict, seed: int = 0) -> list:
    X, y, s = load(name)
    strata = 2 * s + y
    rows = []
    for split in range(max(n_splits[p] for p in protocols)):
        folds = [te for _, te in StratifiedKFold(3, shuffle=True, random_state=seed + split).split(X, strata)]
        for perm, (i1, i2, i3) in enumerate(itertools.permutations(folds)):
            rng = np.random.default_rng([seed, split, perm])
            h = LogisticRegression(class_weight="balanced", max_iter=1000).fit(X[i1], y[i1])
            acc2, acc3 = h.predict(X[i2]) == 1, h.predict(X[i3]) == 1
            parts3 = (i3[~acc3], i3[acc3])
            parts2 = (i2[~acc2], i2[acc2])

            if "sample-prev-D3" in protocols and split < n_splits["sample-prev-D3"]:
                ests = fit_all(h, X[i2], s[i2], seed)
                for c, r, p in itertools.product((0, 1), range(reps["sample-prev-D3"]), np.linspace(0, 1, 11)):
                    idx = np.concatenate([draw(rng, parts3[c], s, p), draw(rng, parts3[1 - c], s, None)])
                    truth = disparity(h.predict(X[idx]) == 1, s[idx])
                    for q, est in ests.items():
                        res = est.estimate(X[idx])
                        rows.append((name, "sample-prev-D3", q, split, perm, c, r, p, truth, res.value, res.reliable))

            if "sample-prev-D2" in protocols and split < n_splits["sample-prev-D2"]:
                truth = disparity(acc3, s[i3])
                for c, r, p in itertools.product((0, 1), range(reps["sample-prev-D2"]), np.linspace(0.1, 0.9, 9)):
                    idx = np.concatenate([draw(rng, parts2[c], s, p), draw(rng, parts2[1 - c], s, None)])
                    ests = fit_all(h, X[idx], s[idx], seed)
                    for q, est in ests.items():
                        res = est.estimate(X[i3])
                        rows.append((name, "sample-prev-D2", q, split, perm, c, r, p, truth, res.value, res.reliable))
    return rows


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    err = df["estimate"] - df["truth"]
    df = df.assign(ae=err.abs(), se=err**2)
    g = df.groupby(["dataset", "protocol", "quantifier"], sort=False)
    out = pd.DataFrame(
        {
            "MAE": g["ae"].mean(),
            "MAE_sd": g["ae"].std(),
            "MSE": g["se"].mean(),
            "P(AE<0.1)": g["ae"].apply(lambda a: (a < 0.1).mean()),
            "P(AE<0.2)": g["ae"].apply(lambda a: (a < 0.2).mean()),
            "n": g["ae"].size(),
            # share with result.reliable False (the features do carry some information here)
            "flagged": 1.0 - g["reliable"].mean(),
        }
    )
    paper = {k + (q,): v for k, d in PAPER.items() for q, v in d.items()}
    out["paper MAE"] = [paper[i][0] for i in out.index]
    out["paper MSE"] = [paper[i][1] for i in out.index]
    out["paper P(AE<0.1)"] = [paper[i][2] for i in out.index]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["adult", "compas"])
    ap.add_argument("--protocols", nargs="+", default=["sample-prev-D3", "sample-prev-D2"])
    ap.add_argument("--quick", action="store_true", help="1 split, 1 sampling: a smoke run")
    ap.add_argument("--out", default="reports/fabris2023")
    args = ap.parse_args()

    # repetitions: (splits, samplings per permutation and p); the paper uses (5, 10)
    plan = {
        "adult": ({"sample-prev-D3": 5, "sample-prev-D2": 2}, {"sample-prev-D3": 2, "sample-prev-D2": 1}),
        "compas": ({"sample-prev-D3": 5, "sample-prev-D2": 2}, {"sample-prev-D3": 1, "sample-prev-D2": 2}),
    }
    if args.quick:
        plan = {k: ({p: 1 for p in v[0]}, {p: 1 for p in v[1]}) for k, v in plan.items()}

    # One BLAS thread: the fits are small, and on a shared 2-core machine threaded BLAS
    # made each logistic regression about 9x slower (measured).
    threadpool_limits(limits=1)
    warnings.filterwarnings("ignore", message="the method has reached the maximum")
    warnings.filterwarnings("ignore", category=ProxyReliabilityWarning)  # counted in the "flagged" column
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, timing = [], {}
    for name in args.datasets:
        n_splits, reps = plan[name]
        for protocol in args.protocols:
            t0 = time.perf_counter()
            rows += run(name, [protocol], n_splits, reps)
            timing[f"{name} {protocol}"] = {
                "seconds": round(time.perf_counter() - t0, 1),
                "splits": n_splits[protocol],
                "permutations": 6,
                "samplings": reps[protocol],
            }
            print(f"{name} {protocol}: {timing[f'{name} {protocol}']}", flush=True)
    cols = [
        "dataset",
        "protocol",
        "quantifier",
        "split",
        "perm",
        "shifted_class",
        "rep",
        "p",
        "truth",
        "estimate",
        "reliable",
    ]
    df = pd.DataFrame(rows, columns=cols)
    df.to_csv(out / "errors.csv.gz", index=False)
    table = summarise(df)
    (out / "timing.json").write_text(json.dumps(timing, indent=2))
    table.to_csv(out / "summary.csv")
    with pd.option_context("display.width", 160, "display.max_rows", 100):
        print(table.round(3))
    print("\nMarkdown (ours / paper):")
    for (ds, prot), sub in table.groupby(level=[0, 1], sort=False):
        print(
            f"\n{ds}, {prot}\n\n| method | MAE ours | MAE paper | MSE ours | MSE paper "
            "| P(AE<0.1) ours | P(AE<0.1) paper | flagged | n |\n|---|---|---|---|---|---|---|---|---|"
        )
        for (_, _, q), r in sub.iterrows():
            print(
                f"| {q} | {r['MAE']:.3f} | {r['paper MAE']:.3f} | {r['MSE']:.3f} | "
                f"{r['paper MSE']:.3f} | {r['P(AE<0.1)']:.3f} | {r['paper P(AE<0.1)']:.3f} "
                f"| {r['flagged']:.3f} | {int(r['n'])} |"
            )


if __name__ == "__main__":
    main()
