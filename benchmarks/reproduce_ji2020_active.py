"""Reproduce the shape of seed 002 chapter 3 (active assessment) on data we have offline.

The chapter's CIFAR-100 / ImageNet / SVHN / 20 Newsgroups / DBpedia outputs are not
available offline. We use classwise accuracy of models trained on scikit-learn's
digits (groups = predicted classes, K = 10) and the Ji et al. score files (groups =
intersections of the sensitive attributes, prediction = score >= 0.5, MLP scores).

Tables (each cached in benchmarks/results/ji2020_active.json, so a rerun resumes):
- rmse: groupwise-accuracy RMSE after N = 2G, 5G, 10G labels (Table 3.2);
- identify: % of the pool labeled before the mean MRR of the worst 1 and worst m
  groups reaches 0.99 (Table 3.5);
- rope: labels until the ROPE verdict on a pair of groups matches the full-data one
  (eta = eta*, |lambda - lambda*| / lambda* < 0.05; Table 3.7);
- gnb: with GaussianNB's near-1 scores on digits, how often ``worst_group(0.95)``
  stops on a wrong class, per prior (the informative prior's strength cap).

Usage: python benchmarks/reproduce_ji2020_active.py [--quick] [--fresh]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

import skfair_measures.active._priors as priors_module
from skfair_measures.active import ActiveAssessment

HERE = Path(__file__).parent
CACHE = HERE / "results" / "ji2020_active.json"
JI = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ji2020_scores"

# method -> (strategy, prior, prior_strength, prior_base)
METHODS = {
    "UPrior": ("random", "uniform", 0.0, 1.0),
    "IPrior": ("random", "informative", 2.0, 1.0),
    "UPrior+TS": ("ts", "uniform", 0.0, 1.0),
    "IPrior+TS": ("ts", "informative", 2.0, 1.0),
}


# -- data ------------------------------------------------------------------------------------
def digits_sets() -> dict[str, dict]:
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    out = {}
    for name, model in (("digits/GNB", GaussianNB()), ("digits/LR", LogisticRegression(max_iter=2000))):
        model.fit(Xtr, ytr)
        proba, pred = model.predict_proba(Xte), model.predict(Xte)
        out[name] = {"y_pred": pred, "scores": proba, "groups": pred, "y_true": yte, "m": 3}
    return out


def ji_sets() -> dict[str, dict]:
    out = {}
    for file, col, label in (
        ("adult_sex_scores.csv", "race-sex", "income-per-year"),
        ("propublica-recidivism_race_scores.csv", "sex-race", "two_year_recid"),
    ):
        path = JI / file
        if not path.exists():
            continue
        df = pd.read_csv(path)
        s = df["score_MultiLayerPerceptron"].to_numpy()
        groups = df[col].astype(str).to_numpy()
        keep = pd.Series(groups).map(pd.Series(groups).value_counts()) >= 20  # groups with at least 20 rows
        out[f"{file.split('_scores')[0]}/{col}/MLP"] = {
            "y_pred": (s[keep] >= 0.5).astype(int),
            "scores": s[keep],
            "groups": groups[keep],
            "y_true": df[label].to_numpy()[keep].astype(int),
            "m": 3,
        }
    return out


def truth(d: dict) -> tuple[np.ndarray, np.ndarray, list]:
    frame = pd.DataFrame({"g": d["groups"], "c": d["y_pred"] == d["y_true"]})
    acc = frame.groupby("g")["c"].mean()
    share = frame["g"].value_counts(normalize=True)[acc.index]
    return acc.to_numpy(), share.to_numpy(), list(acc.index)


def build(d: dict, method: str, seed: int, **kw) -> ActiveAssessment:
    strategy, prior, n0, base = METHODS[method]
    return ActiveAssessment(
        d["y_pred"],
        d["scores"],
        sensitive_features=d["groups"],
        strategy=strategy,
        prior=prior,
        prior_strength=n0,
        prior_base=base,
        random_state=seed,
        keep_trajectory=False,
        **kw,
    )


# -- Table 3.2: RMSE --------------------------------------------------------------------------
def table_rmse(sets: dict, runs: int) -> list[dict]:
    rows = []
    for name, d in sets.items():
        acc, share, _ = truth(d)
        G = acc.size
        checkpoints = [2 * G, 5 * G, 10 * G]
        for method in METHODS:
            err = np.zeros((runs, 3))
            for r in range(runs):
                aa = build(d, method, r)
                for j, n in enumerate(checkpoints):
                    while aa.n_labels < n and (rows_ := aa.ask(1)).size:
                        aa.tell(rows_, d["y_true"][rows_])
                    err[r, j] = np.sqrt(np.sum(share * (aa._means() - acc) ** 2))
            for j, n in enumerate(checkpoints):
                rows.append(
                    {
                        "data": name,
                        "G": G,
                        "N/G": n // G,
                        "N": n,
                        "method": method,
                        "rmse x100": 100 * err[:, j].mean(),
                        "runs": runs,
                    }
                )
    return rows


# -- Table 3.5: identification ----------------------------------------------------------------
def mrr(est: np.ndarray, worst: np.ndarray) -> float:
    order = np.argsort(est, kind="stable")  # predicted ranking, least accurate first
    others = ~np.isin(order, worst)
    ranks = [1 + int(others[: int(np.flatnonzero(order == w)[0])].sum()) for w in worst]
    return float(np.mean(1.0 / np.asarray(ranks)))


def table_identify(sets: dict, runs: int, cap: int) -> list[dict]:
    rows = []
    for name, d in sets.items():
        acc, _, _ = truth(d)
        n = min(d["y_true"].size, cap)
        for m in (1, d["m"]):
            worst = np.argsort(acc)[:m]
            for method in ("UPrior", "IPrior", "IPrior+TS", "UPrior+TS"):
                curve = np.zeros((runs, n + 1))
                for r in range(runs):
                    aa = build(d, method, r, task="identify", m=m)
                    curve[r, 0] = mrr(aa._means(), worst)
                    while aa.n_labels < n and (rows_ := aa.ask(m if method.endswith("TS") else 1)).size:
                        start = aa.n_labels
                        aa.tell(rows_, d["y_true"][rows_])
                        curve[r, start + 1 : min(aa.n_labels, n) + 1] = mrr(aa._means(), worst)
                mean = curve.mean(axis=0)
                below = np.flatnonzero(mean < 0.99)
                needed = 0 if below.size == 0 else int(below[-1]) + 1
                if needed > n - 1 and n < d["y_true"].size:
                    needed = None  # not reached within the cap
                pct = None if needed is None else 100 * needed / d["y_true"].size
                rows.append(
                    {
                        "data": name,
                        "top m": m,
                        "method": method,
                        "labels": needed,
                        "cap": n,
                        "% of pool": pct,
                        "runs": runs,
                    }
                )
    return rows


# -- Table 3.7: ROPE comparison ---------------------------------------------------------------
def table_rope(sets: dict, runs: int, pairs_per_set: int) -> list[dict]:
    rows = []
    rng = np.random.default_rng(0)
    for name, d in sets.items():
        _, _, labels = truth(d)
        pairs = list(itertools.combinations(labels, 2))
        pairs = [pairs[i] for i in rng.choice(len(pairs), min(pairs_per_set, len(pairs)), replace=False)]
        for method in ("UPrior", "IPrior", "IPrior+TS"):
            needed = []
            for pair in pairs:
                full = ActiveAssessment(
                    d["y_pred"], d["scores"], sensitive_features=d["groups"], prior="uniform", y_true=d["y_true"]
                )
                star = full.compare(*pair)
                for r in range(runs):
                    aa = build(d, method, r, task="compare", pair=pair)
                    while True:
                        res = aa.compare()
                        if (
                            res.verdict == star.verdict
                            and abs(res.probability - star.probability) < 0.05 * star.probability
                        ):
                            break
                        rows_ = aa.ask(10)
                        if rows_.size == 0:
                            break
                        aa.tell(rows_, d["y_true"][rows_])
                    needed.append(aa.n_labels)
            rows.append(
                {
                    "data": name,
                    "method": method,
                    "pairs": len(pairs),
                    "runs per pair": runs,
                    "mean labels": float(np.mean(needed)),
                }
            )
    return rows


# -- the strength cap: GaussianNB on digits -----------------------------------------------------
def table_gnb(d: dict, runs: int) -> list[dict]:
    acc, _, _ = truth(d)
    rows = []
    priors_module.MAX_PRIOR_STRENGTH = 1e9  # to show what happens beyond the cap
    try:
        for label, prior, n0, base in (
            ("chapter IPrior, face value: Beta(2s, 2(1-s))", "informative", 2.0, 0.0),
            ("uniform Beta(1, 1)", "uniform", 0.0, 1.0),
            ("ours: Beta(1 + 2s, 1 + 2(1-s)) (default)", "informative", 2.0, 1.0),
            ("ours, n0 = 10 (the cap)", "informative", 10.0, 1.0),
            ("ours, n0 = 20", "informative", 20.0, 1.0),
            ("ours, n0 = 50", "informative", 50.0, 1.0),
        ):
            wrong, used = [], []
            for r in range(runs):
                aa = ActiveAssessment(
                    d["y_pred"],
                    d["scores"],
                    sensitive_features=d["groups"],
                    task="identify",
                    prior=prior,
                    prior_strength=n0,
                    prior_base=base,
                    random_state=r,
                    keep_trajectory=False,
                )
                found = None
                while found is None and (rows_ := aa.ask(5)).size:
                    aa.tell(rows_, d["y_true"][rows_])
                    found = aa.worst_group(0.95)
                wrong.append(found != int(np.argmin(acc)))
                used.append(aa.n_labels)
            rows.append(
                {"prior": label, "wrong stops %": 100 * np.mean(wrong), "mean labels": np.mean(used), "runs": runs}
            )
    finally:
        priors_module.MAX_PRIOR_STRENGTH = 10.0
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="few runs, digits only")
    ap.add_argument("--fresh", action="store_true", help="ignore the cache")
    args = ap.parse_args()
    cache = {} if args.fresh or not CACHE.exists() or args.quick else json.loads(CACHE.read_text())
    sets = digits_sets()
    if not args.quick:
        sets |= ji_sets()
    runs = (
        {"rmse": 10, "identify": 3, "rope": 1, "gnb": 10}
        if args.quick
        else {"rmse": 40, "identify": 5, "rope": 2, "gnb": 30}
    )
    jobs = {
        "rmse": lambda: table_rmse(sets, runs["rmse"]),
        "identify": lambda: table_identify(sets, runs["identify"], 1000),
        "gnb": lambda: table_gnb(sets["digits/GNB"], runs["gnb"]),
        "rope": lambda: table_rope(sets, runs["rope"], 4),
    }
    for key, job in jobs.items():
        if not cache.get(key, {}).get("rows"):
            t = time.time()
            cache[key] = {"rows": job(), "seconds": round(time.time() - t, 1)}
            if not args.quick:
                CACHE.parent.mkdir(exist_ok=True)
                CACHE.write_text(json.dumps(cache, indent=1, default=float))
        print(f"\n## {key} ({cache[key]['seconds']} s)")
        print(pd.DataFrame(cache[key]["rows"]).round(2).to_string(index=False))


if __name__ == "__main__":
    main()
