"""Reproduce the COMPAS tables of Zhu et al. (2023), "Weak proxies are sufficient ...".

Evaluates ``skfair_measures.unaware.proxy_disparity`` on the authors' model outputs
(``shared/data/zhu2023_compas_proxies/*.csv``, rows with ``split == "train"``: 5,555
people, three name-based race proxies) and writes ``docs/reproduction_zhu2023.md``:

* True and Base DP / EOd / EOp against the paper's Table 6 (must agree to 4 decimals),
* normalised error ``|estimate - true| / true`` (%) of Base, Global and Local against
  Table 7 (Soft, which we do not implement, is shown from the paper), with a 95%
  bootstrap interval for Global,
* the transition matrices behind the numbers, and the HOC run time,
* the reliability checks of ``proxy_disparity`` on these proxies, and on a realistic
  case built from Adult (three logistic-regression proxies of sex, each on its own
  feature group), where they fire; there, ``labeled_proxy_disparity`` with a small
  labeled sample.

Run: ``python benchmarks/reproduce_zhu2023.py [--n-boot 200]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from skfair_measures import datasets
from skfair_measures.unaware import HOCEstimator, labeled_proxy_disparity, proxy_disparity

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "zhu2023_compas_proxies"
DOC = ROOT / "docs" / "reproduction_zhu2023.md"
MODELS = ["tree", "forest", "boosting", "SVM", "logit"]
METRICS = ["dp", "eod", "eop"]
NAMES = {"dp": "DP", "eod": "EOd", "eop": "EOp"}
PROXIES = ["proxy1", "proxy2", "proxy3"]

# Table 6: true and uncalibrated (first proxy) disparities: DP, EOd, EOp
PAPER_TRUE = {
    "tree": (0.2424, 0.2013, 0.2541),
    "forest": (0.2389, 0.1947, 0.2425),
    "boosting": (0.2424, 0.2013, 0.2541),
    "SVM": (0.2535, 0.2135, 0.2577),
    "logit": (0.2000, 0.1675, 0.2278),
}
PAPER_BASE = {
    "tree": (0.1362, 0.1090, 0.1160),
    "forest": (0.1346, 0.1059, 0.1120),
    "boosting": (0.1362, 0.1090, 0.1160),
    "SVM": (0.1252, 0.0988, 0.1038),
    "logit": (0.1169, 0.0950, 0.1120),
}
# Table 7: normalised error (%), Base / Soft / Global / Local, for DP, EOd, EOp
PAPER_NE = {
    "tree": {
        "dp": (43.82, 61.26, 22.29, 39.81),
        "eod": (45.86, 63.96, 23.09, 42.81),
        "eop": (54.36, 70.15, 13.27, 49.49),
    },
    "forest": {
        "dp": (43.68, 60.30, 19.65, 44.14),
        "eod": (45.60, 62.85, 18.56, 44.04),
        "eop": (53.83, 69.39, 17.51, 63.62),
    },
    "boosting": {
        "dp": (43.82, 61.26, 22.29, 44.64),
        "eod": (45.86, 63.96, 23.25, 49.08),
        "eop": (54.36, 70.15, 13.11, 54.67),
    },
    "SVM": {
        "dp": (50.61, 66.50, 30.95, 42.00),
        "eod": (53.72, 69.69, 32.46, 47.39),
        "eop": (59.70, 71.12, 29.29, 51.31),
    },
    "logit": {
        "dp": (41.54, 60.78, 16.98, 35.69),
        "eod": (43.26, 63.15, 21.42, 31.91),
        "eop": (50.86, 65.04, 14.90, 26.27),
    },
}
# Table 7: Global DP raw disparity, used to solve for the (T, p) the paper's run found
PAPER_GLOBAL_DP_RAW = {"tree": 0.1884, "forest": 0.1919, "boosting": 0.1884, "SVM": 0.1750, "logit": 0.1660}


def load(model: str) -> pd.DataFrame:
    df = pd.read_csv(DATA / f"{model}.csv")
    return df[df["split"] == "train"].reset_index(drop=True)


def cpu_name() -> str:
    info = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if ":" in line:
                key, value = (s.strip() for s in line.split(":", 1))
                info.setdefault(key, value)
    except OSError:
        return platform.processor() or platform.machine()
    name = info.get("model name", platform.machine())
    fam, mod = info.get("cpu family"), info.get("model")
    n_cpu = sum(1 for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("processor"))
    return f"{name} (family {fam}, model {mod}), {n_cpu} vCPU, {platform.machine()}, Linux VM"


def pooled_joint(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """P(f = k, A~ = a) pooled over the three proxies, and the per-proxy-averaged prior."""
    n = np.zeros((2, 2))
    for c in PROXIES:
        n += pd.crosstab(df["pred"], df[c]).reindex(index=[0, 1], columns=[0, 1], fill_value=0).to_numpy()
    joint = n / n.sum()
    return joint, joint.sum(axis=0)


def calibrated_dp(joint: np.ndarray, T: np.ndarray, p: np.ndarray) -> float:
    q = np.linalg.solve(T.T, joint.T)  # q[a, k] = P(A = a, f = k)
    h = q / p[:, None]
    return float(np.abs(h[0] - h[1]).mean())


def true_pooled_T(df: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """P(A~ = a~ | A = a) pooled over the proxies, and P(A), from the true race."""
    counts = sum(
        pd.crosstab(df["race"], df[c]).reindex(index=[0, 1], columns=[0, 1], fill_value=0).to_numpy() for c in PROXIES
    )
    return counts / counts.sum(axis=1, keepdims=True), counts.sum(axis=1) / counts.sum()


def authors_prior_eo(df: pd.DataFrame, T: np.ndarray, seed: int) -> tuple[float, float]:
    """EOd, EOp with the global T and the authors' p_y: per-(label, prediction) HOC priors averaged.

    Rates are P(f = k | Y = y, A = a) = [(T^T)^-1 P(A~, f = k | y)][a] / p_y[a], the noisy joint
    pooled over the three proxies, p_y = sum_k P(f = k | y) p_(y,k).
    """
    h = np.zeros((2, 2, 2))  # (a, y, k)
    for y in (0, 1):
        rows_y = df[df["label"] == y]
        joint = np.zeros((2, 2))  # (k, a~)
        p_y = np.zeros(2)
        for k in (0, 1):
            cell = rows_y[rows_y["pred"] == k]
            for c in PROXIES:
                joint[k] += np.bincount(cell[c], minlength=2)
            p_y += len(cell) / len(rows_y) * HOCEstimator(random_state=seed).fit(cell[PROXIES]).p_
        joint /= joint.sum()
        for k in (0, 1):
            h[:, y, k] = np.linalg.solve(T.T, joint[k]) / p_y
    eod = float(np.abs(h[0] - h[1]).mean())
    eop = float(abs(h[0, 1, 1] - h[1, 1, 1]))
    return eod, eop


def t_from(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    e1, e2, p0 = x
    return np.array([[1 - e1, e1], [e2, 1 - e2]]), np.array([p0, 1 - p0])


def fmt(x: float, nd: int = 2) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{nd}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-boot", type=int, default=200, help="bootstrap replicates for the Global interval")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help="print only; do not write the markdown file")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"shared data not found ({DATA.name}); nothing to reproduce.")
        return

    rows = {}
    frames = {m: load(m) for m in MODELS}
    for model, df in frames.items():
        proxies = df[PROXIES]
        out = {}
        for i, metric in enumerate(METRICS):
            true = proxy_disparity(df["pred"], df[["race"]], metric, "base", df["label"]).value
            base = proxy_disparity(df["pred"], proxies, metric, "base", df["label"]).value
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the checks' verdicts are tabled below
                glob = proxy_disparity(
                    df["pred"], proxies, metric, "global", df["label"], n_boot=args.n_boot, random_state=args.seed
                )
            local = proxy_disparity(df["pred"], proxies, metric, "local", df["label"], random_state=args.seed)
            implied = authors = None
            if metric != "dp":
                authors = authors_prior_eo(df, glob.diagnostics["T"], args.seed)[METRICS.index(metric) - 1]
                implied = proxy_disparity(
                    df["pred"], proxies, metric, "global", df["label"], prior="implied", random_state=args.seed
                ).value
            ne = {
                name: abs(v - true) / true * 100
                for name, v in (
                    ("base", base),
                    ("global", glob.value),
                    ("local", local.value),
                    ("implied", implied),
                    ("authors", authors),
                )
                if v is not None
            }
            boot = np.abs(glob.diagnostics["bootstrap"]["values"] - true) / true * 100 if args.n_boot else None
            ci = tuple(np.nanpercentile(boot, [2.5, 97.5])) if boot is not None else (np.nan, np.nan)
            out[metric] = {
                "reliable": glob.reliable,
                "reasons": glob.reasons,
                "checks": glob.diagnostics["reliability"],
                "true": true,
                "base": base,
                "global": glob.value,
                "local": local.value,
                "ne": ne,
                "ci": ci,
                "paper_true": PAPER_TRUE[model][i],
                "paper_base": PAPER_BASE[model][i],
                "paper_ne": PAPER_NE[model][metric],
            }
        rows[model] = out
        print(
            model,
            " | ".join(
                f"{NAMES[m]} true {out[m]['true']:.4f} base {out[m]['base']:.4f} "
                f"NE base/global/local {out[m]['ne']['base']:.2f}/{out[m]['ne']['global']:.2f}/"
                f"{out[m]['ne']['local']:.2f} (paper global {out[m]['paper_ne'][2]:.2f})"
                for m in METRICS
            ),
        )

    # transition matrices: HOC estimate, truth (from race), and the one the paper's run found
    tree = frames["tree"]
    hoc = HOCEstimator(random_state=args.seed).fit(tree[PROXIES])
    T_true, p_true = true_pooled_T(tree)
    joints = {m: pooled_joint(frames[m])[0] for m in MODELS}

    def resid(x: np.ndarray) -> list[float]:
        T, p = t_from(x)
        return [calibrated_dp(joints[m], T, p) - PAPER_GLOBAL_DP_RAW[m] for m in MODELS]

    fits = [
        least_squares(resid, x0, bounds=([0, 0, 0.05], [0.6, 0.6, 0.95]))
        for x0 in ([0.3, 0.15, 0.5], [0.2, 0.2, 0.4], [0.35, 0.1, 0.6], [0.25, 0.15, 0.45])
    ]
    paper_fit = min(fits, key=lambda r: r.cost)
    T_paper, p_paper = t_from(paper_fit.x)
    oracle = {m: calibrated_dp(joints[m], T_true, p_true) for m in MODELS}
    cond_corr = {
        r: frames["tree"].loc[frames["tree"]["race"] == r, PROXIES].corr().to_numpy()[np.triu_indices(3, 1)]
        for r in (0, 1)
    }

    # run time: HOC on 5,555 rows x 3 proxies, and one full calibrated DP
    proxies = tree[PROXIES].to_numpy()
    HOCEstimator().fit(proxies)  # warm-up (imports)
    hoc_times, dp_times = [], []
    for _ in range(7):
        t0 = time.perf_counter()
        HOCEstimator().fit(proxies)
        hoc_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        proxy_disparity(tree["pred"], proxies, "dp", "global", n_check=0)
        dp_times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    proxy_disparity(tree["pred"], proxies, "dp", "global")
    check_time = time.perf_counter() - t0
    t0 = time.perf_counter()
    proxy_disparity(tree["pred"], proxies, "eod", "global", tree["label"], n_boot=200, random_state=0)
    boot_time = time.perf_counter() - t0
    timing = {
        "hoc": float(np.median(hoc_times)),
        "hoc_max": float(np.max(hoc_times)),
        "dp": float(np.median(dp_times)),
        "boot": boot_time,
        "checks": check_time,
        "load": os.getloadavg()[0],
        "cpu": cpu_name(),
    }
    print(f"HOC fit on 5,555 x 3: median {timing['hoc'] * 1000:.0f} ms (max {timing['hoc_max'] * 1000:.0f} ms)")
    print(
        f"paper-implied T {np.round(T_paper, 3).tolist()} p {np.round(p_paper, 3).tolist()} (cost {paper_fit.cost:.2e})"
    )

    t0 = time.perf_counter()
    adult = adult_case(args.seed, args.n_boot)
    timing["adult"] = time.perf_counter() - t0
    text = render(rows, hoc, T_true, p_true, T_paper, p_paper, paper_fit, oracle, cond_corr, timing, args)
    text += render_reliability(rows, adult, timing)
    if not args.no_write:
        DOC.parent.mkdir(exist_ok=True)
        DOC.write_text(text)
        print(f"wrote {DOC.relative_to(ROOT)}")


def render(rows, hoc, T_true, p_true, T_paper, p_paper, paper_fit, oracle, cond_corr, timing, args) -> str:
    lines = [
        "# Reproduction: Zhu et al. (2023), weak proxies on COMPAS",
        "",
        "Generated by `benchmarks/reproduce_zhu2023.py` from the authors' model outputs "
        '(`zhu2023_compas_proxies/*.csv`, `split == "train"`, 5,555 rows, three name-based race proxies; '
        "race 1 = black). Estimates come from `skfair_measures.unaware.proxy_disparity` with its defaults "
        f'(`prior="hoc"`, no clipping, `random_state={args.seed}`). The paper\'s figures are from its '
        "Tables 6 and 7. `boosting` holds the same predictions as `tree`.",
        "",
        "## True and Base disparities (Table 6)",
        "",
        "True: the metric with the true race. Base: the first proxy used as if it were race. Ours / paper.",
        "",
        "| model | true DP | true EOd | true EOp | base DP | base EOd | base EOp |",
        "|---|---|---|---|---|---|---|",
    ]
    mismatches = []
    for model, out in rows.items():
        cells = []
        for kind in ("true", "base"):
            for m in METRICS:
                ours, paper = out[m][kind], out[m][f"paper_{kind}"]
                mark = "" if round(ours, 4) == paper else " ¹"
                if mark:
                    mismatches.append((model, kind, m, ours, paper))
                cells.append(f"{ours:.4f} / {paper:.4f}{mark}")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "¹ Table 6 and the paper's own Table 7 (or the authors' result file) disagree in the last digit: "
        "forest Base DP is 0.1345 in Table 7 (0.13454 unrounded), SVM true DP is 0.25344 in the authors' result "
        "file. Every other cell, including all of `tree`, matches to 4 decimals."
        if mismatches
        else "All cells match to 4 decimals.",
        "",
        "## Normalised error (%) of the estimates (Table 7)",
        "",
        "`|estimate - true| / true x 100`; lower is better. Global 95% CI: percentile bootstrap over "
        f"{args.n_boot} multinomial resamples of the rows (the truth held fixed). Δ = ours − paper for Global. "
        "Soft (Chen et al. 2019) is not implemented here; the paper's figure is shown.",
        "",
    ]
    outside = []
    for m in METRICS:
        lines += [
            f"### {NAMES[m]}",
            "",
            "| model | Base ours | Base paper | Soft paper | Global ours [95% CI] | Global paper | Δ | "
            "Local ours | Local paper |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for model, out in rows.items():
            r = out[m]
            pb, ps, pg, pl = r["paper_ne"]
            delta = r["ne"]["global"] - pg
            flag = "" if abs(delta) <= 5 else " ²"
            if flag:
                outside.append((model, m, r["ne"]["global"], pg))
            lines.append(
                f"| {model} | {fmt(r['ne']['base'])} | {fmt(pb)} | {fmt(ps)} | "
                f"{fmt(r['ne']['global'])} [{fmt(r['ci'][0])}, {fmt(r['ci'][1])}] | {fmt(pg)} | "
                f"{delta:+.2f}{flag} | {fmt(r['ne']['local'])} | {fmt(pl)} |"
            )
        lines.append("")
    n_cells = len(rows) * len(METRICS)
    lines += [
        f"² Global differs from the paper by more than 5 points in {len(outside)} of {n_cells} cells: "
        + ", ".join(f"{model} {NAMES[m]} ({ours:.2f} vs {paper:.2f})" for model, m, ours, paper in outside)
        + ". See *Why Global differs* below."
        if outside
        else f"Global is within 5 points of the paper in all {n_cells} cells.",
        "",
        "Equalised odds under other choices of the prior `p_y = P(A | Y = y)`, Global normalised error %: "
        "ours (HOC on the rows of each label, the default), the authors' (priors of the per-(label, "
        'prediction) HOC fits averaged with weights P(f = k | y)), and `prior="implied"` (the prior that '
        "the global T implies):",
        "",
        "| model | EOd ours | EOd authors' p_y | EOd implied | EOp ours | EOp authors' p_y | EOp implied | "
        "EOd / EOp paper |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for model, out in rows.items():
        d, o = out["eod"], out["eop"]
        lines.append(
            f"| {model} | {fmt(d['ne']['global'])} | {fmt(d['ne']['authors'])} | {fmt(d['ne']['implied'])} | "
            f"{fmt(o['ne']['global'])} | {fmt(o['ne']['authors'])} | {fmt(o['ne']['implied'])} | "
            f"{fmt(d['paper_ne'][2])} / {fmt(o['paper_ne'][2])} |"
        )
    gap = [abs(out[m]["ne"]["global"] - out[m]["ne"]["authors"]) for out in rows.values() for m in ("eod", "eop")]
    dp_gap = [rows[m]["dp"]["ne"]["global"] - rows[m]["dp"]["paper_ne"][2] for m in rows]
    n_inside = sum(
        out[m]["ci"][0] <= out[m]["paper_ne"][2] <= out[m]["ci"][1] for out in rows.values() for m in METRICS
    )
    lines += [
        "",
        "## Why Global differs from the paper",
        "",
        "With two groups HOC is a method of moments: the first-, second- and third-order agreement "
        "frequencies of the three proxies (symmetrised over their order) hold exactly three free numbers "
        "for the three unknowns `T[0,1]`, `T[1,0]` and `p`. Our solver reaches the exact root (residual "
        f"loss {hoc.loss_:.1e}). The transition matrices involved (rows: true race 0 = not black, "
        "1 = black; columns: proxy guess):",
        "",
        "| source | T[0,1] | T[1,0] | p[0] | DP Global NE %, tree |",
        "|---|---|---|---|---|",
        f"| HOC, this package | {hoc.T_[0, 1]:.3f} | {hoc.T_[1, 0]:.3f} | {hoc.p_[0]:.3f} | "
        f"{rows['tree']['dp']['ne']['global']:.2f} |",
        f"| one (T, p) that reproduces the paper's Global DP raw values (not unique) | {T_paper[0, 1]:.3f} | "
        f"{T_paper[1, 0]:.3f} | {p_paper[0]:.3f} | {rows['tree']['dp']['paper_ne'][2]:.2f} |",
        f"| true (from race, pooled over the proxies) | {T_true[0, 1]:.3f} | {T_true[1, 0]:.3f} | "
        f"{p_true[0]:.3f} | "
        f"{abs(oracle['tree'] - rows['tree']['dp']['true']) / rows['tree']['dp']['true'] * 100:.2f} |",
        "",
        "Global DP raw disparity, ours / paper (Table 7): "
        + ", ".join(f"{m} {rows[m]['dp']['global']:.4f} / {PAPER_GLOBAL_DP_RAW[m]:.4f}" for m in rows)
        + ".",
        "",
        "* All five published Global DP values are reproduced to their 4 decimals by a single global (T, p) "
        f"(least squares, residual cost {paper_fit.cost:.1e}; the fit is not unique, since the five models' "
        "noisy rates are nearly collinear). So the paper's DP column is consistent with one HOC estimate that "
        "differs from the exact moment root our solver reaches. Our Global DP error is "
        f"{min(dp_gap):.1f} to {max(dp_gap):.1f} points above the paper's for every model, one-sided as a "
        "single different T would make it. The authors' code fits with Adam (learning rate "
        "0.1, 1500 steps) on pattern counts averaged over 50 random 90% subsamples and random orderings of the "
        "proxies; its end point need not be the root.",
        f"* Every published Global figure lies inside our 95% bootstrap interval ({n_inside} of {n_cells} cells): "
        "with 5,555 rows the HOC estimate itself is uncertain by several points of normalised error, more than "
        "the gaps to the paper.",
        "* Neither estimate equals the true T: the proxies are correlated given race (pairwise correlations "
        f"{np.round(cond_corr[0], 2).tolist()} among non-black and {np.round(cond_corr[1], 2).tolist()} "
        "among black defendants), which violates Requirement 4.3. HOC reads their agreement as accuracy and "
        "under-corrects. Even the true global T leaves an error (the 'true' row above: Global assumes the proxy "
        "noise does not depend on the prediction).",
        "* The paper's own run-to-run noise is of the same size: `tree` and `boosting` hold identical "
        "predictions, yet the paper reports Local DP 39.81 vs 44.64, Local EOd 42.81 vs 49.08 and Local EOp "
        "49.49 vs 54.67 for them.",
        "* EOd/EOp also depend on `p_y = P(A | Y = y)`. We fit it by HOC on the rows of each label; the "
        f"authors' averaging of per-cell priors gives EOd/EOp within {max(gap):.2f} points of ours (table "
        "above), so the choice does not explain the gaps. The EO estimates are sensitive to how T and `p_y` "
        'pair up: `prior="implied"` is far off on this data, although it is the more accurate choice on '
        "simulated data where the proxies are conditionally independent (see `tests/test_unaware_proxy.py`).",
        "",
        "## Run time",
        "",
        f"HOC (`HOCEstimator().fit`) on 5,555 rows x 3 proxies: median {timing['hoc'] * 1000:.0f} ms over 7 runs "
        f"(max {timing['hoc_max'] * 1000:.0f} ms), 4 solver starts. A full calibrated DP "
        f"(`proxy_disparity(..., 'dp', 'global', n_check=0)`): median {timing['dp'] * 1000:.0f} ms; with the "
        f"reliability checks (`n_check=100`, the default): {timing['checks'] * 1000:.0f} ms. Global EOd with "
        f"200 bootstrap replicates: {timing['boot']:.1f} s. Machine: {timing['cpu']}, shared with other jobs "
        f"(1-minute load average {timing['load']:.1f} at the end of the timing). "
        "Single-threaded BLAS inside the solver (the problem has 6 parameters).",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- reliability
ADULT_PROXY_GROUPS = {
    "household": ["relationship", "marital_status"],
    "work": ["occupation", "workclass", "hours_per_week"],
    "background": ["age", "education", "race", "native_country", "capital_gain"],
}
N_LABELED = 500
N_LABELED_DRAWS = 100


def _logistic(X: pd.DataFrame, columns: list[str]):
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    cat = [c for c in columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    num = [c for c in columns if c not in cat]
    encode = make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cat), (StandardScaler(), num))
    return make_pipeline(encode, LogisticRegression(max_iter=2000))


def adult_case(seed: int, n_boot: int) -> dict:
    """Three logistic-regression proxies of sex on Adult, each on its own feature group.

    Half of Adult trains the audited income model (every feature but sex) and the
    proxies; the other half is audited.
    """
    X, y, A = datasets.load_adult(return_X_y_A=True)
    female = (A["sex"] == "Female").to_numpy().astype(int)
    order = np.random.default_rng(seed).permutation(len(X))
    train, audit = order[: len(X) // 2], order[len(X) // 2 :]
    features = [c for c in X.columns if c != "sex"]
    y_pred = _logistic(X, features).fit(X.iloc[train], y.iloc[train]).predict(X.iloc[audit])
    a = female[audit]
    proxies = np.column_stack(
        [
            _logistic(X, cols).fit(X.iloc[train], female[train]).predict(X.iloc[audit])
            for cols in ADULT_PROXY_GROUPS.values()
        ]
    )
    errors = proxies != a[:, None]
    corr = {g: np.corrcoef(errors[a == g].T.astype(float))[np.triu_indices(3, 1)] for g in (0, 1)}
    true = abs(y_pred[a == 1].mean() - y_pred[a == 0].mean())
    base = proxy_disparity(y_pred, proxies, "dp", "base").value
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        glob = proxy_disparity(y_pred, proxies, "dp", "global", n_boot=n_boot, random_state=seed)
    rng = np.random.default_rng(seed + 1)
    draws = []
    for i in range(N_LABELED_DRAWS):
        known = rng.choice(a.size, N_LABELED, replace=False)
        sensitive = np.full(a.size, None, dtype=object)
        sensitive[known] = a[known]
        res = labeled_proxy_disparity(y_pred, proxies, sensitive, n_boot=n_boot, random_state=seed + i)
        lo, hi = res.interval()
        draws.append((res.value, lo, hi, res.reliable))
    draws = np.array(draws, dtype=float)
    # the labeled rows alone (no proxies): the same estimator with every cell pooled
    alone = []
    for _ in range(N_LABELED_DRAWS):
        known = rng.choice(a.size, N_LABELED, replace=False)
        alone.append(abs(y_pred[known][a[known] == 1].mean() - y_pred[known][a[known] == 0].mean()))
    return {
        "n": int(a.size),
        "share_women": float(a.mean()),
        "accuracy": (proxies == a[:, None]).mean(axis=0),
        "corr": corr,
        "true": true,
        "base": base,
        "glob": glob,
        "warned": [str(w.message) for w in caught if w.category.__name__ == "ProxyReliabilityWarning"],
        "labeled": draws,
        "labeled_alone_mae": float(np.mean(np.abs(np.array(alone) - true))),
    }


def render_reliability(rows: dict, adult: dict, timing: dict) -> str:
    lines = [
        "## Reliability checks",
        "",
        "`proxy_disparity` checks every HOC fit its estimate depends on (`skfair_measures/unaware/_reliability.py`): "
        "the moment test (the solver's residual against 100 refits on tables simulated from the fitted model; "
        "with two groups and three proxies the fit is exact whenever a valid solution exists), a diagonally "
        "dominant T, the estimated prior against the proxies' guess shares (`p[a] / P(A~ = a)` outside [1/2, 2] "
        "means the proxies would be worse than a coin flip for group `a`), the condition number (> 25) and "
        "Requirement 4.2. A failure sets `reliable=False`, lists the `reasons` and warns "
        "(`ProxyReliabilityWarning`).",
        "",
        "### COMPAS, the paper's stored proxies (Global)",
        "",
        "| model | metric | reliable | residual | moment test p | T diagonal | p / P(A~) | condition number |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for model, out in rows.items():
        for m in METRICS:
            g = out[m]["checks"]["global"]
            ratio = np.array(g["prior"]["p"]) / np.array(g["prior"]["p_noisy"])
            lines.append(
                f"| {model} | {NAMES[m]} | {'yes' if out[m]['reliable'] else 'no'} | {g['moments']['residual']:.1e} "
                f"| {g['moments']['p_value']:.2f} | {np.round(g['diagonal']['diagonal'], 3).tolist()} "
                f"| {np.round(ratio, 2).tolist()} | {g['conditioning']['condition_number']:.1f} |"
            )
    failing = sorted({r for out in rows.values() for m in METRICS for r in out[m]["reasons"]})
    global_ne = [out[m]["ne"]["global"] for out in rows.values() for m in METRICS]
    lo_ne, hi_ne = min(global_ne), max(global_ne)
    verdict = (
        "No check fires on the stored proxies: HOC's fit is exact there (residual at solver precision), T is "
        "diagonally dominant, and the prior stays within a factor 2 of the proxies' guess shares. "
        if not failing
        else "Reasons given on the stored proxies: " + "; ".join(failing) + ". "
    )
    lines += [
        "",
        verdict + "Passing is not a certificate: the proxies are correlated given race (above), and with three proxies "
        "of two groups that dependence cannot be tested from the proxies alone; it is why Global is "
        f"{lo_ne:.0f}-{hi_ne:.0f}% off here (normalised error, all models and metrics). A labeled sample is the "
        "remedy (below, on Adult).",
        "",
        "### Adult: three realistic proxies of sex",
        "",
        f"Half of Adult (`skfair_measures.datasets.load_adult`, random half) trains an income model on every "
        f"feature but sex and three logistic-regression proxies of sex, each on its own feature group "
        f"({', '.join(f'{k}: ' + ', '.join(v) for k, v in ADULT_PROXY_GROUPS.items())}); the other "
        f"{adult['n']:,} rows are audited. Proxy accuracy "
        f"{', '.join(f'{x:.1%}' for x in adult['accuracy'])}; error correlations given sex "
        f"{np.round(adult['corr'][0], 2).tolist()} (men), {np.round(adult['corr'][1], 2).tolist()} (women): "
        "nearly independent, but of very different strength, which HOC's identical-proxy model cannot express.",
        "",
    ]
    glob = adult["glob"]
    g = glob.diagnostics["reliability"]["global"]
    lo, hi = glob.interval()
    lab = adult["labeled"]
    truth = adult["true"]
    cover = np.mean((lab[:, 1] <= truth) & (truth <= lab[:, 2]))
    lines += [
        "| estimate | DP | 95% interval | reliable |",
        "|---|---|---|---|",
        f"| true (with sex) | {truth:.3f} | | |",
        f"| Base (first proxy as sex) | {adult['base']:.3f} | | |",
        f"| Global HOC | {glob.value:.3f} | ({lo:.3f}, {hi:.3f}) | {'yes' if glob.reliable else 'no'} |",
        f"| labeled, {N_LABELED} labeled rows (median of {N_LABELED_DRAWS} draws) | {np.median(lab[:, 0]):.3f} "
        f"| median width {np.median(lab[:, 2] - lab[:, 1]):.3f} | {int(lab[:, 3].sum())} of {N_LABELED_DRAWS} |",
        "",
        f"Global HOC: T = {np.round(glob.diagnostics['T'], 3).tolist()}, p = "
        f"{np.round(glob.diagnostics['p'], 3).tolist()} (groups [men, women]; true share of women "
        f"{adult['share_women']:.3f}), "
        f"residual {g['moments']['residual']:.4f} (simulated 95% quantile {g['moments']['residual_null_q95']:.4f}, "
        f"p = {g['moments']['p_value']:.3f}), condition number {g['conditioning']['condition_number']:.1f}. "
        "The estimate is confidently wrong, and the checks say so:",
        "",
    ]
    lines += [f"* {r}" for r in glob.reasons]
    lines += [
        "",
        f"`labeled_proxy_disparity` with {N_LABELED} randomly labeled rows ({N_LABELED / adult['n']:.1%} of the "
        f"audit set), over {N_LABELED_DRAWS} draws of the labeled rows: MAE "
        f"{np.mean(np.abs(lab[:, 0] - truth)):.4f}, 95% interval coverage {cover:.0%}; the {N_LABELED} labeled rows "
        f"alone (no proxies) give MAE {adult['labeled_alone_mae']:.4f}: the proxies buy precision, the "
        "labels keep it unbiased.",
        "",
        f"Run time of the reliability section: {timing['adult']:.0f} s (model and proxy fits, Global with "
        f"bootstrap, {N_LABELED_DRAWS} labeled estimates with bootstrap).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
