"""Reproduce Ji, Smyth & Steyvers (NeurIPS 2020), Tables 2 and 3, and the coverage table.

Protocol (seed 000 section 4): for a dataset file of test-set scores, draw ``n_L``
labeled examples at random (redrawn until every group holds at least one, as in the
papers' experiments), treat the rest as unlabeled, and estimate the signed group
difference Delta = theta(unprivileged) - theta(privileged) of accuracy, TPR and FPR
with Freq (labeled frequencies), BB (Beta-Binomial, uniform priors) and BC
(hierarchical beta calibration, 4 chains x (1500 + 200), nutpie). The ground truth is
the metric on the whole file. Attributes with more than two values are binarised:
the privileged group against the union of the others.

Every run (dataset, model, n_L, run index) is appended as one JSON line to a cache
file, so the script resumes where it stopped. ``--report`` writes the tables beside
the paper's numbers into docs/reproduction_ji2020.md.

Usage::

    python benchmarks/reproduce_ji2020.py --draws 2 --cells "adult_sex:MLP:10"   # smoke
    python benchmarks/reproduce_ji2020.py                                          # everything
    python benchmarks/reproduce_ji2020.py --report-only                            # tables

Cells are ``dataset:model:n_L`` patterns (shell wildcards allowed, comma-separated).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

import skfair_measures as sfm
from skfair_measures.bayes import posteriors

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data" / "ji2020_scores"
DEFAULT_CACHE = HERE / "results" / "ji2020_runs.jsonl"
DOC = HERE.parent / "docs" / "reproduction_ji2020.md"

# name: (file, sensitive column, label column, privileged group, table label)
DATASETS = {
    "adult_race": ("adult_race_scores.csv", "race", "income-per-year", "White", "Adult, Race"),
    "adult_sex": ("adult_sex_scores.csv", "sex", "income-per-year", "Male", "Adult, Gender"),
    "bank_age": ("bank_age_scores.csv", "age", "y", "adult", "Bank, Age"),
    "german_age": ("german_age_scores.csv", "age", "credit", "adult", "German, Age"),
    "compas_r_race": ("propublica-recidivism_race_scores.csv", "race", "two_year_recid", "Caucasian", "Compas-R, Race"),
    "compas_r_sex": ("propublica-recidivism_sex_scores.csv", "sex", "two_year_recid", "Male", "Compas-R, Gender"),
    "compas_vr_sex": (
        "propublica-violent-recidivism_sex_scores.csv",
        "sex",
        "two_year_recid",
        "Male",
        "Compas-VR, Gender",
    ),
}
# Diagnostic datasets, not in the paper's tables: German with the label complemented. Every
# model's score is anti-correlated with the file's `credit` label (accuracy 24-29%), which a
# monotone increasing calibration map (a, b > 0) cannot represent; complementing the label
# leaves |Delta accuracy| unchanged and makes the scores predict it.
EXTRA_DATASETS = {
    "german_age_flip": ("german_age_scores.csv", "age", "credit", "adult", "German, Age (label complemented)"),
}
FLIPPED = {"german_age_flip"}

MODELS = {
    "MLP": "score_MultiLayerPerceptron",
    "LR": "score_LR",
    "RF": "score_RandomForest",
    "GNB": "score_GaussianNB",
}
METRICS = ("acc", "tpr", "fpr")
# BC variants (seed 002 section 4.9): the paper's model, LLO, non-hierarchical, looser hyperpriors
VARIANTS = {
    "beta": {},
    "llo": {"calibration": "llo"},
    "nonhier": {"hierarchical": False},
    "scale3": {"prior_scale": 3.0},
    "scale10": {"prior_scale": 10.0},
}

# Published MAE x 100 (seed 000 Table 2 = seed 002 Table 4.2): Freq / BB / BC, n_L = 10, Delta accuracy
PAPER_T2 = {
    "adult_race": {
        "MLP": (16.5, 18.5, 3.9),
        "LR": (16.4, 18.7, 2.9),
        "RF": (16.5, 18.2, 3.2),
        "GNB": (17.6, 18.9, 3.6),
    },
    "adult_sex": {"MLP": (19.7, 17.4, 5.1), "LR": (19.1, 16.1, 2.2), "RF": (17.7, 17.4, 4.8), "GNB": (19.7, 16.2, 5.4)},
    "bank_age": {"MLP": (15.9, 13.9, 2.5), "LR": (13.9, 13.0, 1.4), "RF": (11.8, 11.1, 1.0), "GNB": (15.5, 13.7, 1.7)},
    "german_age": {
        "MLP": (34.6, 19.8, 5.0),
        "LR": (37.1, 21.2, 8.7),
        "RF": (33.6, 18.7, 8.2),
        "GNB": (36.6, 20.4, 11.5),
    },
    "compas_r_race": {
        "MLP": (31.5, 21.0, 4.2),
        "LR": (31.7, 20.4, 4.8),
        "RF": (29.3, 20.3, 2.4),
        "GNB": (33.5, 23.2, 8.4),
    },
    "compas_r_sex": {
        "MLP": (33.7, 21.6, 5.0),
        "LR": (34.3, 21.9, 3.8),
        "RF": (36.3, 23.3, 4.4),
        "GNB": (40.5, 25.5, 13.7),
    },
    "compas_vr_sex": {
        "MLP": (20.6, 16.9, 5.4),
        "LR": (19.9, 16.6, 5.3),
        "RF": (22.3, 19.0, 6.3),
        "GNB": (31.3, 21.5, 9.8),
    },
}
# Table 3 (seed 002 Table 4.3): Delta TPR, n_L = 200; None = "—" (Freq undefined in some runs)
PAPER_T3 = {
    "adult_race": {
        "MLP": (None, 12.5, 5.8),
        "LR": (None, 14.7, 7.0),
        "RF": (None, 14.3, 4.6),
        "GNB": (None, 14.6, 3.0),
    },
    "adult_sex": {
        "MLP": (16.3, 14.3, 4.3),
        "LR": (15.8, 14.0, 4.6),
        "RF": (16.1, 14.2, 7.3),
        "GNB": (15.0, 13.4, 11.5),
    },
    "bank_age": {"MLP": (16.8, 15.0, 4.8), "LR": (17.7, 15.9, 4.2), "RF": (16.6, 14.9, 3.1), "GNB": (17.3, 15.7, 2.3)},
    "german_age": {"MLP": (4.7, 4.7, 3.0), "LR": (5.6, 5.4, 2.6), "RF": (5.1, 5.1, 3.1), "GNB": (6.8, 6.5, 2.8)},
    "compas_r_race": {"MLP": (None, 7.6, 2.5), "LR": (None, 7.9, 2.6), "RF": (None, 9.2, 2.1), "GNB": (None, 4.5, 2.0)},
    "compas_r_sex": {"MLP": (10.0, 9.5, 1.9), "LR": (10.0, 9.4, 1.8), "RF": (11.3, 10.7, 2.6), "GNB": (5.6, 5.5, 0.3)},
    "compas_vr_sex": {
        "MLP": (14.9, 12.2, 2.9),
        "LR": (8.9, 10.7, 2.0),
        "RF": (14.6, 10.5, 7.2),
        "GNB": (12.5, 10.0, 1.3),
    },
}
# Coverage of 95% intervals, MLP (seed 002 Table 4.4): n_L -> (BC, BB), 1000 runs in the paper
PAPER_COV = {
    "adult_race": {10: (99.9, 97.7), 20: (98.6, 93.5), 40: (96.2, 93.2), 100: (92.3, 95.3)},
    "adult_sex": {10: (100.0, 96.4), 20: (99.7, 95.5), 40: (99.2, 94.9), 100: (96.8, 95.5)},
    "bank_age": {10: (99.4, 98.7), 20: (98.8, 98.5), 40: (98.0, 96.4), 100: (93.7, 95.3)},
    "german_age": {10: (99.9, 98.8), 20: (99.6, 98.1), 40: (99.0, 98.3), 100: (96.9, 98.3)},
    "compas_r_race": {10: (99.3, 98.8), 20: (99.4, 97.2), 40: (99.1, 96.7), 100: (99.3, 96.6)},
    "compas_r_sex": {10: (99.3, 97.7), 20: (99.3, 97.0), 40: (98.6, 95.9), 100: (97.6, 96.5)},
    "compas_vr_sex": {10: (96.3, 97.2), 20: (94.3, 96.5), 40: (95.4, 96.1), 100: (95.8, 97.1)},
}


def all_cells() -> list[tuple[str, str, int]]:
    """Every (dataset, model, n_L) cell, most informative first."""
    cells = [(d, "MLP", 10) for d in DATASETS]
    cells += [(d, m, 10) for d in DATASETS for m in MODELS if m != "MLP"]
    cells += [(d, "MLP", n) for n in (20, 40, 100) for d in DATASETS]
    cells += [(d, m, 200) for d in DATASETS for m in MODELS]
    return cells


def select(cells: list[tuple[str, str, int]], patterns: str | None) -> list[tuple[str, str, int]]:
    if not patterns:
        return cells
    pats = [p.strip() for p in patterns.split(",") if p.strip()]
    return [c for c in cells if any(fnmatch.fnmatch(f"{c[0]}:{c[1]}:{c[2]}", p) for p in pats)]


def load(dataset: str, model: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    file, col, label, priv, _ = {**DATASETS, **EXTRA_DATASETS}[dataset]
    df = pd.read_csv(DATA / file)
    groups = np.where(df[col].to_numpy() == priv, priv, "other")
    y = df[label].to_numpy().astype(int)
    if dataset in FLIPPED:
        y = 1 - y
    return y, df[MODELS[model]].to_numpy(dtype=float), groups, priv


def measures(priv: str) -> list[sfm.Measure]:
    return [sfm.msr(f"fairness.{m}", operation="diff_to_reference", reference=priv) for m in METRICS]


def run_one(y, s, g, priv, n_l, seed, variant: str = "beta") -> dict:
    rng = np.random.default_rng(seed)
    n = y.size
    while True:
        lab = rng.choice(n, size=n_l, replace=False)
        if np.unique(g[lab]).size == 2:
            break
    mask = np.zeros(n, dtype=bool)
    mask[lab] = True
    ms = measures(priv)
    pred = (s >= 0.5).astype(int)
    out: dict = {"seed": seed}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["freq"] = {m.base.name: m(y[mask], pred[mask], sensitive_features=g[mask]) for m in ms}
        kw = dict(sensitive_features=g[mask], reference=priv, random_state=seed)
        bb = posteriors(ms, y[mask], s[mask], method="bb", **kw)
        t0 = time.perf_counter()
        bc = posteriors(
            ms,
            y[mask],
            s[mask],
            method="bc",
            unlabeled_scores=s[~mask],
            unlabeled_sensitive=g[~mask],
            warn=False,
            **VARIANTS[variant],
            **kw,
        )
        out["seconds"] = time.perf_counter() - t0
    for name, post in (("bb", bb), ("bc", bc)):
        out[name] = {p.measure.base.name: [p.mean(), *p.interval(0.95)] for p in post.values()}
    diag = next(iter(bc.values())).diagnostics()
    out["divergences"] = int(diag.get("divergences", 0))
    out["max_r_hat"] = float(diag.get("max_r_hat", np.nan))
    out["min_ess_bulk"] = float(diag.get("min_ess_bulk", np.nan))
    # runs without this field (before the cached density became the default) used "nutpie-pymc"
    out["sampler"] = next(iter(bc.values())).attrs.get("sampler")
    return out


def truth(y, s, g, priv) -> dict[str, float]:
    pred = (s >= 0.5).astype(int)
    return {m.base.name: m(y, pred, sensitive_features=g) for m in measures(priv)}


def read_cache(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


def _round(obj):
    if isinstance(obj, float):
        return None if np.isnan(obj) else round(obj, 6)
    if isinstance(obj, dict):
        return {k: _round(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_round(v) for v in obj]
    return obj


def run(cells, n_runs: int, cache: Path, variant: str = "beta") -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    done = {
        (r["dataset"], r["model"], r["n_l"], r["run"]) for r in read_cache(cache) if r.get("variant", "beta") == variant
    }
    for dataset, model, n_l in cells:
        todo = [i for i in range(n_runs) if (dataset, model, n_l, i) not in done]
        if not todo:
            continue
        y, s, g, priv = load(dataset, model)
        true = truth(y, s, g, priv)
        start = time.perf_counter()
        with cache.open("a") as fh:
            for i in todo:
                seed = zlib.crc32(f"{dataset}:{model}:{n_l}:{i}".encode())
                row = {"dataset": dataset, "model": model, "n_l": n_l, "run": i, "truth": true}
                if variant != "beta":
                    row["variant"] = variant
                row.update(run_one(y, s, g, priv, n_l, seed, variant))
                fh.write(json.dumps(_round(row)) + "\n")
                fh.flush()
        took = time.perf_counter() - start
        print(f"{dataset:14s} {model:4s} n_L={n_l:<4d} {variant:8s} {len(todo):3d} runs in {took:7.1f} s", flush=True)


# -- report -------------------------------------------------------------------------------


def summarise(rows: list[dict]) -> pd.DataFrame:
    """One row per (dataset, model, n_L, metric): MAE x 100, coverage %, runs."""
    recs = []
    for r in rows:
        for metric in METRICS:
            t = r["truth"][metric]
            f = r["freq"][metric]
            rec = {
                "dataset": r["dataset"],
                "model": r["model"],
                "n_l": r["n_l"],
                "metric": metric,
                "variant": r.get("variant", "beta"),
                "truth": t,
                "freq_err": None if f is None else abs(f - t),
            }
            for meth in ("bb", "bc"):
                mean, lo, hi = (np.nan if v is None else v for v in r[meth][metric])  # None: NaN posterior
                rec[f"{meth}_err"] = abs(mean - t)
                rec[f"{meth}_cover"] = float(lo <= t <= hi) if not np.isnan(mean) else np.nan
            rec["divergences"] = r["divergences"]
            rec["max_r_hat"] = r["max_r_hat"]
            rec["seconds"] = r["seconds"]
            recs.append(rec)
    df = pd.DataFrame(recs)
    if df.empty:
        return df
    keys = ["variant", "dataset", "model", "n_l", "metric"]
    agg = (
        df.groupby(keys)
        .agg(
            runs=("bb_err", "size"),
            truth=("truth", "first"),
            freq_defined=("freq_err", "count"),
            freq=("freq_err", "mean"),
            bb=("bb_err", "mean"),
            bc=("bc_err", "mean"),
            bb_cover=("bb_cover", "mean"),
            bc_cover=("bc_cover", "mean"),
            divergences=("divergences", "sum"),
            max_r_hat=("max_r_hat", "max"),
            bc_seconds=("seconds", "median"),
        )
        .reset_index()
    )
    for c in ("freq", "bb", "bc", "bb_cover", "bc_cover", "truth"):
        agg[c] = 100 * agg[c]
    return agg


def _fmt(x, digits=1) -> str:
    return "—" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{digits}f}"


def table_mae(agg: pd.DataFrame, metric: str, n_l: int, paper: dict) -> str:
    head = "| Dataset, attribute | Model | true Δ | runs | Freq | BB | BC | paper Freq / BB / BC |"
    lines = [head, "|---|---|---:|---:|---:|---:|---:|---|"]
    for d, (_, _, _, _, label) in DATASETS.items():
        for m in MODELS:
            row = agg[(agg.dataset == d) & (agg.model == m) & (agg.n_l == n_l) & (agg.metric == metric)]
            p = paper[d][m]
            ptxt = " / ".join(_fmt(v) for v in p)
            if row.empty:
                lines.append(f"| {label} | {m} | | 0 | | | | {ptxt} |")
                continue
            r = row.iloc[0]
            if r.freq_defined == r.runs:
                ftxt = _fmt(r.freq)
            else:  # undefined in some runs (a group without positives): MAE over the defined ones
                ftxt = f"— ({int(r.freq_defined)}/{int(r.runs)}: {_fmt(r.freq)})"
            cells = f"{r.truth:+.1f} | {int(r.runs)} | {ftxt} | {_fmt(r.bb)} | **{_fmt(r.bc)}**"
            lines.append(f"| {label} | {m} | {cells} | {ptxt} |")
    return "\n".join(lines)


def table_coverage(agg: pd.DataFrame) -> str:
    ns = (10, 20, 40, 100)
    head = "| Dataset, attribute | " + " | ".join(f"n_L={n} BC / BB (paper)" for n in ns) + " |"
    lines = [head, "|---|" + "---|" * len(ns)]
    for d, (_, _, _, _, label) in DATASETS.items():
        cells = []
        for n in ns:
            row = agg[(agg.dataset == d) & (agg.model == "MLP") & (agg.n_l == n) & (agg.metric == "acc")]
            pbc, pbb = PAPER_COV[d][n]
            if row.empty:
                cells.append(f"— ({pbc:.1f} / {pbb:.1f})")
            else:
                r = row.iloc[0]
                cells.append(f"{r.bc_cover:.0f} / {r.bb_cover:.0f} ({pbc:.1f} / {pbb:.1f}) [{int(r.runs)}]")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def table_variants(base: pd.DataFrame, variants: pd.DataFrame) -> str:
    names = [v for v in VARIANTS if v != "beta" and v in set(variants.variant)]
    head = "| Dataset, attribute | Model | n_L | runs | BB | BC | " + " | ".join(names) + " |"
    lines = [head, "|---|---|---:|---:|---:|---:|" + "---:|" * len(names)]
    cells = variants[variants.metric == "acc"][["dataset", "model", "n_l"]].drop_duplicates()
    for d, m, n in cells.itertuples(index=False):
        sel = (base.dataset == d) & (base.model == m) & (base.n_l == n) & (base.metric == "acc")
        if not sel.any():
            continue
        r = base[sel].iloc[0]
        parts = []
        for v in names:
            vs = variants[
                (variants.variant == v)
                & (variants.dataset == d)
                & (variants.model == m)
                & (variants.n_l == n)
                & (variants.metric == "acc")
            ]
            if vs.empty:
                parts.append("—")
            else:
                x = vs.iloc[0]
                parts.append(f"{x.bc:.1f} ({x.bc_cover:.0f}%, {int(x.runs)})")
        lines.append(
            f"| {DATASETS[d][4]} | {m} | {n} | {int(r.runs)} | {r.bb:.1f} | {r.bc:.1f} ({r.bc_cover:.0f}%) | "
            + " | ".join(parts)
            + " |"
        )
    return "\n".join(lines)


def table_extra(extra: pd.DataFrame) -> str:
    lines = [
        "| Dataset, attribute | Model | n_L | true Δ | runs | Freq | BB | BC | BC coverage |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in extra[extra.metric == "acc"].sort_values(["dataset", "n_l", "model"]).itertuples():
        lines.append(
            f"| {EXTRA_DATASETS[r.dataset][4]} | {r.model} | {r.n_l} | {r.truth:+.1f} | {int(r.runs)} | "
            f"{_fmt(r.freq)} | {_fmt(r.bb)} | **{_fmt(r.bc)}** | {r.bc_cover:.0f}% |"
        )
    return "\n".join(lines)


def report(cache: Path, doc: Path) -> str:
    rows = read_cache(cache)
    agg = summarise(rows)
    if agg.empty:
        return "no runs cached yet"
    summary_csv = HERE / "results" / "ji2020_cells.csv"
    agg.round(4).to_csv(summary_csv, index=False)
    variants = agg[agg.variant != "beta"]
    extra = agg[agg.dataset.isin(list(EXTRA_DATASETS)) & (agg.variant == "beta")]
    agg = agg[(agg.variant == "beta") & ~agg.dataset.isin(list(EXTRA_DATASETS))]
    t2 = table_mae(agg, "acc", 10, PAPER_T2)
    t3 = table_mae(agg, "tpr", 200, PAPER_T3)
    cov = table_coverage(agg)
    acc10 = agg[(agg.metric == "acc") & (agg.n_l == 10)]
    lines = [
        f"Runs cached: {len(rows)}; BC fits with divergences: "
        f"{int(sum(r['divergences'] > 0 for r in rows))}; largest R-hat: {max(r['max_r_hat'] for r in rows):.3f}; "
        f"median BC fit (incl. unlabeled post-processing): {np.median([r['seconds'] for r in rows]):.2f} s.",
    ]
    if not acc10.empty:
        lines.append(
            f"Table 2 cells: mean MAE x 100 Freq {acc10.freq.mean():.1f}, BB {acc10.bb.mean():.1f}, "
            f"BC {acc10.bc.mean():.1f} over {len(acc10)} cells."
        )
    marker_start, marker_end = "<!-- tables:start -->", "<!-- tables:end -->"
    body = "\n\n".join(
        [
            "\n".join(lines),
            "### Table 2: MAE x 100 of Δ accuracy, n_L = 10",
            t2,
            "### Table 3: MAE x 100 of Δ TPR, n_L = 200",
            t3,
            "### Coverage (%) of 95% equal-tailed intervals, Δ accuracy, MLP (seed 002 Table 4.4)",
            "Ours: BC / BB over the runs in brackets; the paper's (BC / BB, 1000 runs) in parentheses.",
            cov,
        ]
        + (
            ["### BC variants: MAE x 100 and coverage (%) of Δ accuracy", table_variants(agg, variants)]
            if not variants.empty
            else []
        )
        + (
            ["### Diagnostic: German with the label complemented (Δ accuracy)", table_extra(extra)]
            if not extra.empty
            else []
        )
    )
    if doc.exists():
        text = doc.read_text()
        if marker_start in text and marker_end in text:
            pre = text[: text.index(marker_start) + len(marker_start)]
            post = text[text.index(marker_end) :]
            doc.write_text(pre + "\n" + body + "\n" + post)
    return body


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=100, help="runs (random labeled draws) per cell")
    ap.add_argument("--cells", default=None, help="comma-separated dataset:model:n_L patterns")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--variant", default="beta", choices=list(VARIANTS), help="BC variant (default: the paper's)")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--doc", type=Path, default=DOC)
    args = ap.parse_args(argv)
    if not DATA.exists():
        print(f"data not found at {DATA}; nothing to do", file=sys.stderr)
        return 1
    if not args.report_only:
        extra = [(d, m, n) for d in EXTRA_DATASETS for m in MODELS for n in (10, 20, 40, 100)]
        cells = select(all_cells() + (extra if args.cells else []), args.cells)
        print(f"{len(cells)} cells x {args.draws} runs -> {args.cache}", flush=True)
        run(cells, args.draws, args.cache, args.variant)
    print(report(args.cache, args.doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
